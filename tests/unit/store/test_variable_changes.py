"""compare's environment variables: a secret by set/unset/changed only, never a value;
its digests keyed by the store, comparable only under one key."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import RunResult
from reprospec.store.compare import (
    _change,
    _changed_secrets,
    environment_change,
    inherited_changes,
    inherited_unknown,
)
from reprospec.store.digests import (
    FIELD,
    INHERITED_FIELD,
    RunKey,
    inherited_names,
    recorded,
    store_key,
    variable_digests,
)


def test_a_variable_says_its_values_and_a_secret_only_its_change() -> None:
    assert _change("OMP_NUM_THREADS", "1", "8") == ("OMP_NUM_THREADS", "1", "8", "changed")
    assert _change("OMP_NUM_THREADS", None, "8")[3] == "unset -> set"  # type: ignore[index]
    assert _change("HF_TOKEN", None, "***") == ("HF_TOKEN", None, None, "unset -> set")
    assert _change("HF_TOKEN", "***", "") == ("HF_TOKEN", None, None, "set -> unset")
    assert _change("HF_TOKEN", "***", "***") is None  # alike masked: the digests tell
    assert _change("OMP_NUM_THREADS", "1", "1") is None
    # A secret by its value's shape alone (HF_ENDPOINT=https://u:pw@h) is `***` too.
    assert _change("HF_ENDPOINT", None, "***") == ("HF_ENDPOINT", None, "***", "unset -> set")
    assert _change("HF_ENDPOINT", "***", "***") is None


def test_digests_compare_under_one_stores_key_only(tmp_path: Path) -> None:
    key = store_key(tmp_path / "a")
    assert store_key(tmp_path / "a") == key  # made once, then read
    assert stat.S_IMODE((tmp_path / "a" / "digest.key").stat().st_mode) == 0o600
    other = store_key(tmp_path / "b")
    old = {
        FIELD: variable_digests(key, {"HF_TOKEN": "hf_one", "X_KEY": "k"}, ["HF_TOKEN", "X_KEY"])
    }
    new = {
        FIELD: variable_digests(key, {"HF_TOKEN": "hf_two", "X_KEY": "k"}, ["HF_TOKEN", "X_KEY"])
    }
    assert _changed_secrets(old, new) == [("HF_TOKEN", "changed")]
    assert "hf_one" not in str(old)
    elsewhere = {FIELD: variable_digests(other, {"HF_TOKEN": "hf_two"}, ["HF_TOKEN"])}
    # Another key: not comparable, and said so (review: it was silent, read as the same).
    assert _changed_secrets(old, elsewhere) == [
        ("HF_TOKEN", "set in both; runs of two stores, whether it changed is unknown")
    ]
    assert _changed_secrets(old, {}) == []


def test_a_key_file_that_holds_no_key_gives_no_digests(tmp_path: Path) -> None:
    # Read half written (empty), it was the empty key: every secret digested alike.
    (tmp_path / "digest.key").write_text("")
    with pytest.raises(OSError, match="not a key"):
        store_key(tmp_path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".digest")]


def test_a_runs_key_is_read_at_its_first_use_and_kept(tmp_path: Path) -> None:
    # The program's files, the spec's secrets and the capture's variables each read
    # the key's file; a run reads it once (RunKey), and makes none before something asks.
    store = tmp_path / "a"
    key = RunKey(store)
    assert not (store / "digest.key").exists()
    first = key.get()
    assert first == store_key(store)
    (store / "digest.key").write_text("ab" * 32)  # read again, the run would get this one
    assert key.get() == first
    assert RunKey(store).get() == bytes.fromhex("ab" * 32)  # the next run's read
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # a store that cannot keep a key: each use fails alike
    cannot = RunKey(blocked)
    for _ in range(2):
        with pytest.raises(NotADirectoryError):
            cannot.get()


def test_inherited_variables_leave_out_the_shown_and_a_shells_bookkeeping() -> None:
    environ = {
        "MYAPP_MODE": "fast",
        "OMP_NUM_THREADS": "4",  # the capture's table shows it by value
        "MODE": "x",  # the spec's environment.env sets it
        "PWD": "/tmp",
        "SHLVL": "3",
        "XDG_RUNTIME_DIR": "/run/user/1",
        "GITHUB_RUN_ID": "42",
        "CI_JOB_ID": "7",
        "SSH_ORIGINAL_COMMAND": "x",
        "DATABASE_URL": "postgres://u:pw@h/db",
    }
    assert inherited_names(environ, ["OMP_NUM_THREADS", "MODE"]) == ["DATABASE_URL", "MYAPP_MODE"]


def test_inherited_variables_leave_out_pytests_bookkeeping() -> None:
    """The pytest plugin's runs (one per cell) inherit pytest's name of the running test and
    xdist's worker and session id: compare of two cells' runs said `PYTEST_CURRENT_TEST:
    changed`, and their merge "shards ran in different environments". PYTEST_ADDOPTS is the
    user's, and compared."""
    environ = {
        "PYTEST_CURRENT_TEST": "s.yaml::mode=ok (call)",
        "PYTEST_XDIST_WORKER": "gw0",
        "PYTEST_XDIST_WORKER_COUNT": "2",
        "PYTEST_XDIST_TESTRUNUID": "5c2a",
        "PYTEST_ADDOPTS": "-v",
    }
    assert inherited_names(environ, []) == ["PYTEST_ADDOPTS"]
    # The GPUs a scheduler handed the job (Slurm's GRES, ROCm's, oneAPI's) are recorded:
    # compare says `HIP_VISIBLE_DEVICES: changed` between a failing and a passing ROCm run
    # (merge alone passes over them, one per shard).
    gpus = {
        "GPU_DEVICE_ORDINAL": "1",
        "ROCR_VISIBLE_DEVICES": "1",
        "HIP_VISIBLE_DEVICES": "1",
        "ZE_AFFINITY_MASK": "1",
        "MYAPP_MODE": "1",
    }
    assert inherited_names(gpus, []) == sorted(gpus)


def test_inherited_changes_by_digest_set_unset_and_changed(tmp_path: Path) -> None:
    key = store_key(tmp_path / "a")

    def run(**values: str) -> dict[str, JsonValue]:
        return {INHERITED_FIELD: variable_digests(key, values, values)}

    assert inherited_changes(run(A="1", B="x"), run(B="y", C="z")) == [
        ("A", "set -> unset"),
        ("B", "changed"),
        ("C", "unset -> set"),
    ]
    assert inherited_changes(run(A="1"), run(A="1")) == []
    # Another store's key: set and unset still told, a change not (the digests differ anyway).
    other = {INHERITED_FIELD: variable_digests(store_key(tmp_path / "b"), {"A": "1"}, ["A"])}
    assert inherited_changes(run(A="1", B="2"), other) == [("B", "set -> unset")]
    # A run recorded without them (older, or the docker runner's) tells nothing.
    assert inherited_changes(run(A="1"), {}) == []


def test_a_value_of_bytes_that_are_no_utf8_is_digested(tmp_path: Path) -> None:
    """`env $'WEIRD=\\xff' reprospec run`: os.environ holds it as surrogates, and .encode()
    raised, which lost the run's whole environment capture (review)."""
    key = store_key(tmp_path)
    weird = b"\xff\xfe".decode("utf-8", "surrogateescape")
    digests = variable_digests(key, {"WEIRD": weird}, ["WEIRD"])
    assert recorded(digests)[1].keys() == {"WEIRD"}


def test_variables_no_record_could_tell_are_said_not_compared(tmp_path: Path) -> None:
    """A run kept no record of its inherited variables (older, or its store could not keep
    a key): compare was silent and then said "same environment" (note65)."""
    key = store_key(tmp_path / "a")

    def run(name: str, runner: str = "local", **values: str) -> RunResult:
        record = variable_digests(key, values, values) if values else {"store": None, "of": []}
        environment: dict[str, JsonValue] = {INHERITED_FIELD: record}
        return RunResult(name, "s", "s.yaml", "", runner, "", "", environment, ())

    assert inherited_unknown(run("r1", A="1"), run("r2")) == ""  # none inherited: a record
    assert inherited_changes(run("r1", A="1").environment, run("r2").environment) == [
        ("A", "set -> unset")
    ]
    older = RunResult("r0", "s", "s.yaml", "", "local", "", "", {}, ())
    assert inherited_unknown(older, run("r2", A="1")) == (
        "not compared (r0 kept no record of them: a run made before runs kept one, or "
        "whose store could not keep its digest key)"
    )
    assert inherited_unknown(run("r1", "docker"), run("r2", A="1")).startswith(
        "not compared (r1 ran under the docker runner"
    )
    assert inherited_unknown(run("r1", "docker"), run("r2", "docker")) == ""
    other = RunResult(
        "r3", "s", "s.yaml", "", "local", "", "", {
            INHERITED_FIELD: variable_digests(store_key(tmp_path / "b"), {"A": "2"}, ["A"])
        }, (),
    )  # fmt: skip
    assert "two stores" in inherited_unknown(run("r1", A="1"), other)
    assert inherited_unknown(run("r1", B="1"), other) == ""  # no name in both: all told


def test_a_run_whose_environment_was_not_captured_is_said_so_not_diffed() -> None:
    """A capture that failed (`{"error": ...}`) or is missing was diffed field by field: a
    row with an empty key, `torch: missing -> not captured` and 40 `None -> value` rows. One
    line says why instead, and "same environment" is not said."""
    captured: dict[str, JsonValue] = {
        "python": {"version": "3.11.7"},
        "os": {"system": "Linux"},
        "env": {"OMP_NUM_THREADS": "4"},
    }
    failed: dict[str, JsonValue] = {"error": "environment capture did not finish"}

    def run(name: str, environment: dict[str, JsonValue]) -> RunResult:
        return RunResult(name, "s", "s.yaml", "", "local", "", "", environment, ())

    change = environment_change(run("r1", failed), run("r2", captured))
    assert change["environment"] == []
    assert change["variables"] == []
    assert change["not_captured"] == "r1's was not captured (environment capture did not finish)"
    assert change["inherited"] == ""
    both = environment_change(run("r1", {}), run("r2", {}))
    assert both["not_captured"] == (
        "r1's was not captured (the run recorded none); r2's was not captured (the run "
        "recorded none)"
    )
    assert environment_change(run("r1", captured), run("r2", captured))["not_captured"] == ""
