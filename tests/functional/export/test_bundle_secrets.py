"""Secrets in bundles and in the spec a report embeds: `reprospec bundle` masks what it
packs (cell.json, the logs a child wrote), and a masked spec stays valid YAML that a
rerun reads the secret into again from its own environment. Real runs, real children."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.cli import Cli
from tests.support.secretnames import named_secrets

TOKEN = "hf_Zq8secretvalue4711"
KEY = "sk-literal-9f3e2d1c"
SET_KEY = "sk-fromset-77aa66bb"

READS_TOKEN = """\
reprospec: 1
name: reads-token
environment:
  env: {HF_TOKEN: "${{ env.HF_TOKEN }}", MIRROR: "https://hub.example/${{ env.HF_TOKEN }}"}
command: python -c "import os; print('token', os.environ['HF_TOKEN'], os.environ['MIRROR'])"
expect: {outcome: pass}
"""

LITERAL_KEY = """\
reprospec: 1
name: literal-key
environment:
  env:
    API_KEY: %s
command: python -c "import os, sys; sys.exit(0 if os.environ['API_KEY'] else 1)"
expect: {outcome: pass}
"""


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        out: dict[str, bytes] = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None:
                out[member.name] = handle.read()
        return out


def test_bundle_masks_what_the_child_was_given_and_printed(tmp_path: Path, cli: Cli) -> None:
    spec = tmp_path / "reads.yaml"
    spec.write_text(READS_TOKEN)
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store), env={"HF_TOKEN": TOKEN})
    assert ran.code == 0, ran.stderr
    log = next((store / "runs").glob("*/cells/*/1/stdout.log"))
    assert TOKEN in log.read_text()  # the evidence on this machine holds it
    archive = tmp_path / "share.tar.gz"
    run_id = ran.latest_run().name
    # Packed where the token is unknown: its value cannot be masked, so nothing is packed.
    blind = cli("bundle", run_id, "-o", str(archive), "--out", str(store), env={"HF_TOKEN": ""})
    assert blind.code == 2, blind.stderr
    assert (
        "the run read HF_TOKEN from its environment, which this one does not hold: the bundle "
        "cannot mask its value in the logs; set it as the run had it and bundle again"
    ) in blind.stderr
    assert not archive.exists()
    packed = cli("bundle", run_id, "-o", str(archive), "--out", str(store), env={"HF_TOKEN": TOKEN})
    assert packed.code == 0, packed.stderr
    members = _members(archive)
    leaked = [name for name, data in members.items() if TOKEN.encode() in data]
    assert leaked == []
    logs = [data for name, data in members.items() if name.endswith("stdout.log")]
    assert logs
    assert b"token *** https://hub.example/***" in logs[0]


def test_a_reports_masked_spec_reruns_with_the_secret_read_again(tmp_path: Path, cli: Cli) -> None:
    spec = tmp_path / "key.yaml"
    spec.write_text(LITERAL_KEY % KEY)
    first = cli("run", str(spec), "--out", str(tmp_path / "a"))
    assert first.code == 0, first.stderr
    report = first.latest_run() / "report.md"
    text = report.read_text()
    assert KEY not in text
    assert "API_KEY: ${{ env.API_KEY }}" in text
    assert "set in your environment: API_KEY" in text
    again = cli(
        "run",
        str(report),
        "--yes",
        "--out",
        str(tmp_path / "b"),
        env={"API_KEY": "the-rerunners-own"},
    )
    assert again.code == 0, again.stderr  # was exit 2: `API_KEY: ***` is a YAML alias


def test_a_spec_that_writes_a_secret_is_not_said_to_have_changed_since_its_run(
    tmp_path: Path, cli: Cli
) -> None:
    # The store keeps the spec masked (`API_KEY: ${{ env.API_KEY }}`): compared with today's
    # text unmasked, `bundle` warned "changed since the run" of every such spec.
    spec = tmp_path / "key.yaml"
    spec.write_text(LITERAL_KEY % KEY)
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stderr
    run_id = ran.latest_run().name
    packed = cli("bundle", run_id, "-o", str(tmp_path / "a.tar.gz"), "--out", str(store))
    assert packed.code == 0, packed.stderr
    assert "changed since the run" not in packed.stderr
    spec.write_text((LITERAL_KEY % KEY).replace("name: literal-key", "name: edited"))
    edited = cli("bundle", run_id, "-o", str(tmp_path / "b.tar.gz"), "--out", str(store))
    assert f"{spec} changed since the run" in edited.stderr


def test_a_secret_given_with_set_bundles_and_reruns(tmp_path: Path, cli: Cli) -> None:
    spec = tmp_path / "key.yaml"
    # The rerun must get the rerunner's key, not the mask: `***` fails the command.
    spec.write_text(
        (LITERAL_KEY % "placeholder").replace(
            "else 1", "and '*' not in os.environ['API_KEY'] else 1"
        )
    )
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--set", f"environment.env.API_KEY={SET_KEY}", "--out", str(store))
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "set.tar.gz"
    packed = cli("bundle", ran.latest_run().name, "-o", str(archive), "--out", str(store))
    assert packed.code == 0, packed.stderr  # was: the masked --set did not load
    assert not [n for n, d in _members(archive).items() if SET_KEY.encode() in d]
    rerun = cli(
        "run", str(archive), "--yes", "--out", str(tmp_path / "elsewhere"), env={"API_KEY": "mine"}
    )
    assert rerun.code == 0, rerun.stderr


def test_a_variable_the_spec_reads_is_named_in_the_bundle_and_warned_of_when_unset(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rerun elsewhere without HF_TOKEN, `${{ env.HF_TOKEN }}` read as null: the run said
    # `not-reproduced` with no word of why, and the bundle's README did not name it.
    monkeypatch.delenv("HF_TOKEN", raising=False)
    spec = tmp_path / "reads.yaml"
    spec.write_text(READS_TOKEN)
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store), env={"HF_TOKEN": TOKEN})
    assert ran.code == 0, ran.stderr
    assert "not set in this environment" not in ran.stderr
    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", ran.latest_run().name, "-o", str(archive), "--out", str(store),
                 env={"HF_TOKEN": TOKEN})  # fmt: skip
    assert packed.code == 0, packed.stderr
    (readme,) = [data for name, data in _members(archive).items() if name.endswith("README.md")]
    assert (
        b"here as the run had them: `HF_TOKEN` (a secret, set in the run: export your own); "
        b"export them first."
    ) in readme
    assert TOKEN.encode() not in readme
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rerun = cli("run", str(archive), "--yes", "--out", str(elsewhere / "out"), cwd=elsewhere)
    assert rerun.code == 0, rerun.stdout + rerun.stderr  # it printed an empty token
    assert (
        "reprospec: warning: the spec reads ${{ env.HF_TOKEN }}, not set in this environment"
    ) in rerun.stderr


def test_a_secret_the_run_read_unset_is_no_reason_to_refuse_its_bundle(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HF_TOKEN unset in the run and unset now: "set them as the run had them"
    # asked for a value the run's child never had, and no bundle could be made.
    monkeypatch.delenv("HF_TOKEN", raising=False)
    spec = tmp_path / "reads.yaml"
    spec.write_text(READS_TOKEN.replace("os.environ['HF_TOKEN']", "os.environ.get('HF_TOKEN')"))
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", ran.latest_run().name, "-o", str(archive), "--out", str(store))
    assert packed.code == 0, packed.stderr
    (readme,) = [data for name, data in _members(archive).items() if name.endswith("README.md")]
    assert b"`HF_TOKEN` (unset in the run: leave it unset)" in readme


READS_PUBLIC = """\
reprospec: 1
name: reads-code
environment:
  public_env: [CODE, MODE, NOT_SET]
  env:
    HF_TOKEN: "${{ env.HF_TOKEN }}"
    MODE: "${{ env.MODE }}"
    NOT_SET: "${{ env.NOT_SET or 'x' }}"
command: exit ${{ env.CODE }}
expect: {outcome: error, exit_code: 3}
"""


def test_a_bundles_readme_gives_a_public_variables_value_as_the_run_read_it(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README said "`CODE`; export them first", and a recipient who exported
    # CODE=0 reran `exit 0` (a pass) where the run ran `exit 3`. A secret is still only set.
    monkeypatch.delenv("NOT_SET", raising=False)
    spec = tmp_path / "reads.yaml"
    spec.write_text(READS_PUBLIC)
    store = tmp_path / "store"
    env = {"CODE": "3", "MODE": "a b", "HF_TOKEN": TOKEN}
    ran = cli("run", str(spec), "--out", str(store), env=env)
    assert ran.code == 0, ran.stdout + ran.stderr
    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", ran.latest_run().name, "-o", str(archive), "--out", str(store), env=env)
    assert packed.code == 0, packed.stderr
    (readme,) = [data for name, data in _members(archive).items() if name.endswith("README.md")]
    text = readme.decode()
    assert (
        "here as the run had them: `HF_TOKEN` (a secret, set in the run: export your own), "
        "`MODE='a b'`, `NOT_SET` (unset in the run: leave it unset), `CODE=3`; "
        "export the others first."
    ) in " ".join(text.split()), text
    assert TOKEN not in text


@pytest.mark.parametrize("length", ["short", "long"])
def test_a_secret_the_spec_writes_under_any_name_is_in_no_output_and_no_bundle(
    tmp_path: Path, cli: Cli, length: str
) -> None:
    # Judged by their last word (`ro`, `base`, `v2`, `live`, `prod`), these values were
    # in clear in report.md (the spec, the standalone command, the exception), results.json,
    # the store, the run folder's spec.yaml and every file of the bundle; and the bundle
    # warned that the spec had changed since the run (it compared the masked spec to today's).
    secrets = named_secrets(length)
    settings = {"MAX_TOKENS": "2048", "API_TOKEN": "tok", "NUM_PASSES": "3", "BYPASS_CACHE": "1"}
    lines = "".join(f"    {n}: {json.dumps(v)}\n" for n, v in {**secrets, **settings}.items())
    names = sorted(secrets)
    (tmp_path / "leak.py").write_text(
        "import os\n"
        f"for name in {[*names, *settings]!r}:\n"
        "    print(name, os.environ[name])\n"
        f"raise RuntimeError('boom ' + ' '.join(os.environ[n] for n in {names!r}))\n"
    )
    spec = tmp_path / "leak.yaml"
    spec.write_text(
        "reprospec: 1\nname: leak\ncommand: python leak.py\n"
        f"environment:\n  env:\n{lines}expect: {{outcome: error}}\n"
    )
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stdout + ran.stderr
    folder = ran.latest_run()
    report = (folder / "report.md").read_text()
    outputs = {
        "report.md": report,
        "results.json": (folder / "results.json").read_text(),
        "spec.yaml": (folder / "spec.yaml").read_text(),
        "results.db": (store / "results.db").read_bytes().decode("utf-8", "replace"),
        "the console": ran.stdout + ran.stderr,
    }
    for where, text in outputs.items():
        for value in secrets.values():
            assert value not in text, f"{value} in {where}"
    assert f"boom {' '.join(['***'] * len(names))}" in report
    # The report's spec reads each secret again; its standalone command takes each from the
    # reader's shell, and writes what the spec shows (the one rule: redact.sets_secret).
    for name in names:
        assert f'{name}: "${{{{ env.{name} }}}}"' in report
        assert f'{name}="${name}"' in report
    assert 'MAX_TOKENS: "2048"' in report
    assert 'API_TOKEN: "tok"' in report
    assert "MAX_TOKENS=2048 API_TOKEN=tok NUM_PASSES=3 BYPASS_CACHE=1 " in report
    assert 'NUM_PASSES: "3"' in report  # a count, no password's (`pass` in a word)
    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", folder.name, "-o", str(archive), "--out", str(store))
    assert packed.code == 0, packed.stderr
    assert "changed since the run" not in packed.stderr
    members = _members(archive)
    assert any(name.endswith("stdout.log") for name in members)
    for value in secrets.values():
        leaked = [name for name, data in members.items() if value.encode() in data]
        assert leaked == [], value


# A secret written in the spec, in a flow mapping, and a program that fails only
# with it: the bundle reads it from the environment instead.
WRITTEN_IN_FLOW = """\
reprospec: 1
name: db-auth
environment: {env: {DB_PASSWORD: hunter2-literal-pw}}
command: >-
  python -c "import os; assert not os.environ['DB_PASSWORD'].endswith('-pw'), 'auth'"
expect: {outcome: error, exception: AssertionError}
"""


def test_a_secret_the_spec_wrote_in_is_named_to_export_and_verified_with_its_value(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bundle wrote `{DB_PASSWORD: ${{ env.DB_PASSWORD }}}`, invalid YAML in a flow
    # mapping; neither its README nor the report's standalone repro named DB_PASSWORD to
    # export; --verify reran it empty, `not as in the run` with no cause; and the rerun
    # said "export it as the spec's author had" of a value the author never exported.
    monkeypatch.delenv("DB_PASSWORD", raising=False)
    spec = tmp_path / "db.yaml"
    spec.write_text(WRITTEN_IN_FLOW)
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stdout + ran.stderr
    report = (ran.latest_run() / "report.md").read_text()
    assert (
        "> export DB_PASSWORD first (the spec has its value written in, a secret that no "
        "report or bundle holds)"
    ) in report
    archive = tmp_path / "db.tgz"
    temp = tmp_path / "temp"
    temp.mkdir()
    packed = cli(
        "bundle", "latest", "-o", str(archive), "--out", str(store), "--verify",
        env={"TMPDIR": str(temp)},
    )  # fmt: skip
    assert packed.code == 0, packed.stdout + packed.stderr
    assert "the rerun has DB_PASSWORD as the run's spec wrote it" in packed.stderr
    assert "verify: default: as in the run: reproduced" in packed.stdout
    members = _members(archive)
    assert not [name for name, data in members.items() if b"hunter2-literal-pw" in data]
    (tree_spec,) = [data for name, data in members.items() if name.endswith("tree/db.yaml")]
    assert b'environment: {env: {DB_PASSWORD: "${{ env.DB_PASSWORD }}"}}' in tree_spec
    (readme,) = [data for name, data in members.items() if name.endswith("README.md")]
    assert (
        b"Export `DB_PASSWORD` first (the spec had it written in; the bundle leaves it out): "
        b"the bundle's spec reads it from the environment reprospec runs in."
    ) in readme
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rerun = cli("run", str(archive), "--yes", "--out", str(elsewhere / "out"), cwd=elsewhere)
    assert rerun.code == 1, rerun.stdout + rerun.stderr  # the child had it empty: it passed
    assert (
        "reprospec: warning: the spec reads ${{ env.DB_PASSWORD }}, not set in this "
        "environment: null, which a text gets as the empty string (DB_PASSWORD='' in the "
        "child); the spec it was made from had its value written in, which a bundle or "
        "report leaves out: export it with that value"
    ) in rerun.stderr
    mine = cli(
        "run", str(archive), "--yes", "--out", str(elsewhere / "again"), cwd=elsewhere,
        env={"DB_PASSWORD": "hunter2-literal-pw"},
    )  # fmt: skip
    assert mine.code == 0, mine.stdout + mine.stderr


# The secret inside a longer plain value of a flow mapping, where `${{ env.X }}`
# in its place opened a mapping inside the flow (invalid YAML), and a program that fails
# only with the whole value: the bundle's spec must load to it again, the secret read back.
# (A whole URL with a password in it is a secret of its own name, DB_URL, written whole.)
INSIDE_FLOW = """\
reprospec: 1
name: db-url
environment: {env: {DB_TARGET: u:hunter2-literal-pw@h/db, DB_PASSWORD: hunter2-literal-pw}}
command: >-
  python -c "import os; assert os.environ['DB_TARGET'] != 'u:hunter2-literal-pw@h/db', 'auth'"
expect: {outcome: error, exception: AssertionError}
"""


def test_a_secret_inside_a_longer_flow_value_bundles_to_valid_yaml_and_verifies(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DB_PASSWORD", raising=False)
    spec = tmp_path / "db.yaml"
    spec.write_text(INSIDE_FLOW)
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stdout + ran.stderr
    archive = tmp_path / "db.tgz"
    temp = tmp_path / "temp"
    temp.mkdir()
    packed = cli(
        "bundle", "latest", "-o", str(archive), "--out", str(store), "--verify",
        env={"TMPDIR": str(temp)},
    )  # fmt: skip
    assert packed.code == 0, packed.stdout + packed.stderr
    assert "verify: default: as in the run: reproduced" in packed.stdout
    members = _members(archive)
    assert not [name for name, data in members.items() if b"hunter2-literal-pw" in data]
    (tree_spec,) = [data for name, data in members.items() if name.endswith("tree/db.yaml")]
    loaded = yaml.safe_load(tree_spec)
    assert loaded["environment"]["env"] == {
        "DB_TARGET": "u:${{ env.DB_PASSWORD }}@h/db",
        "DB_PASSWORD": "${{ env.DB_PASSWORD }}",
    }


def test_a_secret_the_command_writes_in_is_in_no_report_and_no_bundle(
    tmp_path: Path, cli: Cli
) -> None:
    # `--api-key=...` and a leading `API_TOKEN=...` of a hand-written command were shown in
    # report.md (its spec and standalone repro), results.json and the bundle's README and
    # spec, where only environment.env's secrets were masked; its rerun reads them again.
    spec = tmp_path / "cmd.yaml"
    spec.write_text(
        "reprospec: 1\nname: cmd\n"
        'command: >-\n  API_TOKEN=abcd1234xyzq python -c "import sys; print(sys.argv);'
        ' sys.exit(3)" --api-key=s3cr3tlit77\n'
        "expect: {outcome: error}\n"
    )
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stdout + ran.stderr
    report = (ran.latest_run() / "report.md").read_text()
    assert "API_TOKEN=${{ env.API_TOKEN }} python" in report
    assert "--api-key=${{ env.API_KEY }}" in report
    archive = tmp_path / "cmd.tgz"
    packed = cli("bundle", "latest", "-o", str(archive), "--out", str(store))
    assert packed.code == 0, packed.stdout + packed.stderr
    members = _members(archive)
    leaked = [n for n, data in members.items() if b"s3cr3tlit77" in data or b"abcd1234xyzq" in data]
    assert not leaked
    (readme,) = [data for name, data in members.items() if name.endswith("README.md")]
    assert (
        b"Export `API_TOKEN`, `API_KEY` first (the spec had them written in; the bundle leaves "
        b"them out): the bundle's spec reads them from the environment reprospec runs in."
    ) in readme
