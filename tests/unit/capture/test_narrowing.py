"""capture's narrowing of the shell's variables to those a failure needs (narrowing.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from reprospec.capture.footprint import needed_lines
from reprospec.capture.narrowing import RERUNS, Needed, most_reruns, narrow
from reprospec.capture.verify import _not_shown_needed, named_in, narrowing_line, rerun_line

# The 17 variables of a user's shell, sorted as shell_only hands them: the two the failure
# needs sort into different halves.
SHELL = (
    "ALPHA_B", "AWS_CA_BUNDLE", "BAR_X", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
    "CLOUD_SDK_VERSION", "CONTAINER_NAME", "FOO_UNRELATED", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "NODE_EXTRA_CA_CERTS", "PIP_CERT", "REQUESTS_CA_BUNDLE", "RUST_BACKTRACE",
    "SSL_CERT_FILE", "TF_CLI_CONFIG_FILE", "UV_NATIVE_TLS", "WORKSPACE", "ZETA_A",
)  # fmt: skip


def needing(*needed: str) -> tuple[Callable[[Sequence[str]], bool], list[frozenset[str]]]:
    """A failure that comes back where every one of `needed` is set; the sets it was run with."""
    ran: list[frozenset[str]] = []

    def comes_back(kept: Sequence[str]) -> bool:
        ran.append(frozenset(kept))
        return set(needed) <= set(kept)

    return comes_back, ran


def test_two_variables_in_different_halves_are_narrowed_to_the_pair() -> None:
    # The halves search kept all 17 ("the failure needs it" on each, 15 times falsely).
    comes_back, ran = needing("ZETA_A", "ALPHA_B")
    found = narrow(SHELL, comes_back)
    assert (set(found.names), found.minimal) == ({"ALPHA_B", "ZETA_A"}, True)
    assert found.reruns == len(ran) == len(set(ran)) <= 15  # no set run twice


def test_one_variable_costs_no_more_than_halves_did() -> None:
    for needed in SHELL:
        comes_back, _ = needing(needed)
        found = narrow(SHELL, comes_back)
        assert (found.names, found.minimal) == ((needed,), True)
        assert found.reruns <= 10


def test_three_needed_are_all_kept_and_nothing_else() -> None:
    comes_back, _ = needing("BAR_X", "PIP_CERT", "WORKSPACE")
    found = narrow(SHELL, comes_back)
    assert (found.names, found.minimal) == (("BAR_X", "PIP_CERT", "WORKSPACE"), True)


def test_a_search_out_of_reruns_keeps_what_came_back_and_says_it_is_not_minimal() -> None:
    comes_back, ran = needing("ZETA_A", "ALPHA_B")
    found = narrow(SHELL, comes_back, budget=3)
    assert found.reruns == len(ran) == 3
    assert not found.minimal
    assert {"ALPHA_B", "ZETA_A"} <= set(found.names) < set(SHELL)
    # What it kept is a set the failure came back with (or all it started from).
    assert comes_back(found.names)
    assert RERUNS >= 15  # any pair among 17 fits in the default


def test_a_rerun_that_missed_keeps_a_variable_never_drops_a_needed_one() -> None:
    # A flaky failure: one rerun that leaves out a variable the failure does not need
    # happens to miss. The set this test made flaky before (all but
    # CONTAINER_NAME) is one the search never tries, so nothing flaky was tested. Here it is
    # the set a clean search last came back with: the pair, after leaving out one variable
    # alone from the three it kept then.
    pair = {"ALPHA_B", "ZETA_A"}
    clean, tried = needing(*pair)
    narrow(SHELL, clean)
    came_back = [frozenset(SHELL), *(kept for kept in tried if pair <= kept)]
    before, flaky = came_back[-2:]
    assert flaky == pair
    (left_out,) = before - flaky
    missed: list[frozenset[str]] = []

    def comes_back(kept: Sequence[str]) -> bool:
        if frozenset(kept) == flaky and not missed:
            missed.append(flaky)  # misses the first time only, as a flaky failure does
            return False
        return pair <= set(kept)

    found = narrow(SHELL, comes_back)
    assert missed == [flaky]  # the flaky rerun was reached
    # The miss is believed (no set is rerun): the variable it left out is kept, and no
    # needed one is dropped.
    assert set(found.names) == pair | {left_out}


def test_a_set_that_held_the_answer_and_missed_contradicts_it() -> None:
    """A crash that needs FOO_UNRELATED and misses one rerun by chance, the one that kept
    the half holding it: the search still ends on FOO_UNRELATED, and says a set holding it
    missed (`contradicted`), which capture takes for a failure that comes and goes rather
    than write a cause."""
    calls: list[frozenset[str]] = []

    def comes_back(kept: Sequence[str]) -> bool:
        calls.append(frozenset(kept))
        return "FOO_UNRELATED" in kept and len(calls) != 2

    found = narrow(SHELL, comes_back)
    assert "FOO_UNRELATED" in calls[1]  # the miss was a set holding it
    assert "FOO_UNRELATED" in found.names
    assert found.contradicted
    clean, _ = needing("FOO_UNRELATED")
    assert not narrow(SHELL, clean).contradicted


def test_one_variable_alone_needs_no_rerun() -> None:
    comes_back, ran = needing("USE_NATIVE")
    found = narrow(("USE_NATIVE",), comes_back)
    assert ran == []
    assert (found.names, found.minimal, found.reruns) == (("USE_NATIVE",), True, 0)


def test_the_lines_of_a_set_not_narrowed_say_one_or_more_is_needed() -> None:
    environ = {"ALPHA_B": "2", "CONTAINER_NAME": "dirty-target", "ZETA_A": "1"}
    narrowed = needed_lines(environ, ("ALPHA_B", "ZETA_A"))
    assert [(line.name, line.comment) for line in narrowed] == [
        ("ALPHA_B", "your shell set it: the failure needs it"),
        ("ZETA_A", "your shell set it: the failure needs it"),
    ]
    not_narrowed = needed_lines(environ, sorted(environ), minimal=False)
    assert {line.comment for line in not_narrowed} == {
        "your shell set it: one or more of these 3 is needed; not narrowed further"
    }


def test_the_reruns_said_before_the_narrowing_bound_those_it_makes() -> None:
    """13 variables at --repeat 6 took 9 minutes, nothing said of why; the
    line said first names the variables, the reruns at most and each rerun's attempts."""
    for count in range(1, len(SHELL) + 1):
        names = SHELL[:count]
        for needed in ((), names[:1], names[-1:], (names[0], names[-1]), names):
            if not needed:
                continue
            comes_back, ran = needing(*needed)
            found = narrow(names, comes_back)
            assert found.reruns == len(ran) <= most_reruns(count), (count, needed)
    assert most_reruns(1) == 0  # without the one variable is the empty set: known
    assert most_reruns(2) == 2
    assert most_reruns(13) == 3 + 5 + 13
    assert most_reruns(17) == RERUNS  # 3 + 5 + 9 + 17, bounded by the search's own
    assert narrowing_line(13, 6) == (
        "reprospec: the failure came back with your shell's 13 variables set and not without "
        "them: finding which it needs, by at most 21 reruns of the spec with some left "
        "out, each of 6 attempts, then at most 2 with those it ends on"
    )
    # A pass is made once more without them first (verify.py's `lost`): one more rerun.
    assert narrowing_line(13, 6, passed=True).endswith("then at most 3 with those it ends on")
    # One variable: nothing to narrow, no "at most 0 reruns".
    assert narrowing_line(1, 6) == (
        "reprospec: the failure came back with your shell's variable set and not without it: "
        "checking that it needs it, by at most 2 reruns of the spec, each of 6 attempts"
    )


def test_a_variable_the_programs_files_name_is_tried_alone_first(tmp_path: Path) -> None:
    """The failure needed TINYQ_FAST, which tinyq/core.py reads by name, and the
    narrowing over the shell's 17 variables made 16 reruns of 10 attempts (6 minutes) to
    find it; the rerun with only the named ones first shows it in one."""
    names = tuple(sorted((*SHELL[:16], "TINYQ_FAST")))
    core = tmp_path / "core.py"
    core.write_text('import os\nFAST = os.environ.get("TINYQ_FAST") == "1"  # not TINYQ_FASTER\n')
    (tmp_path / "notes.txt").write_text("CONTAINER_NAMES ALPHA_BX")  # no whole word of SHELL
    named = named_in(names, [core, tmp_path / "notes.txt", tmp_path / "missing.py"])
    assert named == ("TINYQ_FAST",)
    comes_back, ran = needing("TINYQ_FAST")
    found = narrow(names, comes_back, named=named)
    assert (found.names, found.minimal, found.reruns) == (("TINYQ_FAST",), True, 1)
    assert ran == [frozenset({"TINYQ_FAST"})]
    # Named but not enough: the search goes on over all of them, one rerun dearer at most.
    for needed in (("ALPHA_B",), ("TINYQ_FAST", "WORKSPACE")):
        comes_back, ran = needing(*needed)
        found = narrow(names, comes_back, named=named)
        assert (set(found.names), found.minimal) == (set(needed), True)
        assert found.reruns == len(ran) <= most_reruns(len(names), named=1)
    assert most_reruns(13, named=2) == 3 + 5 + 13 + 1
    assert most_reruns(13, named=13) == most_reruns(13)  # all of them: no rerun of its own
    assert narrowing_line(13, 6, named=("TINYQ_FAST",)) == (
        "reprospec: the failure came back with your shell's 13 variables set and not without "
        "them: finding which it needs, by at most 22 reruns of the spec with some left "
        "out, the first with only TINYQ_FAST, which the program's files name, each of 6 "
        "attempts, then at most 2 with those it ends on"
    )


def test_each_rerun_of_the_narrowing_says_what_it_keeps() -> None:
    """16 reruns read `verifying flaky.yaml (10 attempts)` alike, 6 minutes."""
    assert rerun_line(3, 24, ("A", "B", "C", "D", "E", "F"), 17) == (
        "reprospec: narrowing, rerun 3 of at most 24: with 6 of your shell's 17 variables "
        "(A, B, C, D and 2 more)"
    )
    assert rerun_line(1, 2, (), 2) == (
        "reprospec: narrowing, rerun 1 of at most 2: with 0 of your shell's 2 variables"
    )


def test_a_set_narrowed_to_by_chance_is_not_shown_needed() -> None:
    """The checks capture makes once more of the set narrowing ended on (verify.py): a 50%
    crash that needs only FLAKY_ON, narrowed by one-attempt reruns to FLAKY_ON and
    AWS_CA_BUNDLE, comes back without AWS_CA_BUNDLE when asked again: not shown needed, and
    capture writes no cause. A deterministic need passes every check."""
    own = ("AWS_CA_BUNDLE", "CONTAINER_NAME", "FLAKY_ON")
    found = Needed(("AWS_CA_BUNDLE", "FLAKY_ON"), True, 3)
    asked: list[tuple[str, ...]] = []

    def truly_needs_flaky_on(kept: Sequence[str]) -> bool:
        asked.append(tuple(kept))
        return "FLAKY_ON" in kept

    why = _not_shown_needed(found, own, "crash:SIGSEGV:main", truly_needs_flaky_on)
    assert why == "a rerun without AWS_CA_BUNDLE alone, made once more, brought it back"
    assert asked == [("CONTAINER_NAME",), ("FLAKY_ON",)]
    # Needed both, deterministically: every check misses, so the set stands.
    both = _not_shown_needed(
        found,
        own,
        "crash:SIGSEGV:main",
        lambda kept: len(kept) == 2 and "CONTAINER_NAME" not in kept,
    )
    assert both == ""
    # A rerun the narrowing made that kept them all missed: no rerun more is needed to say so.
    contradicted = Needed(found.names, True, 3, contradicted=True)
    assert _not_shown_needed(contradicted, own, "crash", truly_needs_flaky_on).startswith(
        "a rerun that kept them all did not bring it back"
    )
