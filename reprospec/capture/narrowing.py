"""Which of the shell's variables a captured failure needs: a smallest set, by reruns.

The verify found the failure comes back with all of the shell's own variables set and
not with none of them. Which it needs is a set: one variable most often, but a failure
can need two together (`ZETA_A=1` and `ALPHA_B=2`). The search before this split the set
in halves and kept a half that brought the failure back; two needed variables in
different halves stopped it at the first split, and the spec got every one of the
shell's 17 variables (a container's name, CA paths), each commented "the failure needs
it", 15 of them falsely.

This is ddmin's complement step (Zeller and Hildebrandt, TSE 2002) with a chunk that
halves: a chunk of the kept variables is left out, and where the failure still comes back
without it, the chunk is dropped; chunks of half the size follow, down to one variable.
Once every single variable has been left out alone and the failure did not come back
without it, the set is 1-minimal: each variable in it is needed, as far as a rerun can
tell. A pair among 17 takes at most 15 reruns; one needed variable about as many as
the halves did (at most 9). Only reruns where the failure came back shrink the set, so
a flaky rerun that missed keeps a variable that was not needed, never drops one that was.

Why not isolate's search (isolation/search.py): it measures the failure's rate first and
spends attempts by a posterior over sets, which pays for a flaky failure isolated on its
own. Here each step is one whole rerun of the spec (its `--repeat` attempts, in a run of
its own) judged by the verdict, and a handful of them is what capture can spend before it
writes a spec.

The reruns are bounded (`RERUNS`); a search stopped before the set is 1-minimal says so,
and the spec's comments then say one or more of the kept variables is needed, not that
each is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reprospec.core.frozen import frozen

# Reruns the search may make: among 17 variables, one needed takes at most 9, a pair at
# most 15, three at most 19 (every placement tried).
RERUNS = 24


def most_reruns(count: int, budget: int = RERUNS, *, named: int = 0) -> int:
    """The reruns `narrow` makes at most over `count` variables: at each chunk size (half,
    a quarter, ... one), a rerun either drops a chunk or steps past it, so at most as many
    as there are chunks; one variable costs none (without it is the empty set, known).
    `named` of them the program's files name: one rerun more, with those alone, first."""
    if count <= 1:
        return 0
    total, chunk = (1 if 0 < named < count else 0), max(1, count // 2)
    while True:
        total += -(-count // chunk)
        if chunk == 1:
            return min(budget, total)
        chunk = max(1, chunk // 2)


@frozen
class Needed:
    """The variables kept, and whether each was shown to be needed."""

    names: tuple[str, ...]
    # Every one of `names` was left out alone and the failure did not come back without
    # it. False: the reruns ran out first; one or more of them is needed.
    minimal: bool
    reruns: int
    # A rerun that kept every one of `names` (and more) did not bring the failure back:
    # a failure they bring back deterministically would have come back, so the reruns
    # that "showed" them needed came back or missed by chance.
    contradicted: bool = False


def narrow(
    names: Sequence[str],
    comes_back: Callable[[Sequence[str]], bool],
    budget: int = RERUNS,
    *,
    named: Sequence[str] = (),
) -> Needed:
    """Of `names` (the failure comes back with all of them and not with none), a smallest
    set it comes back with: `comes_back(kept)` reruns the spec with only `kept` of them
    set. At most `budget` reruns; none is repeated for a set already tried.

    `named`: those of `names` the program's own files name (`os.environ.get("TINYQ_FAST")`).
    The first rerun keeps them alone; where the failure comes back, the search goes on
    among them, as after any rerun it came back in. One such variable among 17 cost 16
    reruns of 10 attempts each, 6 minutes of a capture, where one rerun shows it."""
    kept = list(names)
    # The empty set is known: the failure did not come back without the shell's own.
    tried: dict[frozenset[str], bool] = {frozenset(): False, frozenset(kept): True}
    reruns = 0
    first = [name for name in kept if name in set(named)]
    if first and len(first) < len(kept) and budget > 0:
        reruns += 1
        tried[frozenset(first)] = comes_back(first)
        if tried[frozenset(first)]:
            kept = first
    chunk = max(1, len(kept) // 2)
    while True:
        start = 0
        while start < len(kept):
            trial = kept[:start] + kept[start + chunk :]
            key = frozenset(trial)
            back = tried.get(key)
            if back is None:
                if reruns >= budget:
                    return Needed(tuple(kept), False, reruns, _contradicted(tried, kept))
                back = comes_back(trial)
                reruns += 1
                tried[key] = back
            if back:
                kept = trial  # not needed: the next chunk now starts here
            else:
                start += chunk
        if chunk == 1:
            return Needed(tuple(kept), True, reruns, _contradicted(tried, kept))
        chunk = max(1, min(chunk // 2, len(kept) // 2))


def _contradicted(tried: dict[frozenset[str], bool], kept: Sequence[str]) -> bool:
    """Whether a set tried that holds all of `kept` did not bring the failure back."""
    ended = frozenset(kept)
    return any(not back and ended <= key for key, back in tried.items())
