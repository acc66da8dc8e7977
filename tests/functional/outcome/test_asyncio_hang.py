"""A coroutine deadlock names the coroutine that waits, not the event loop's `select`.

A suspended coroutine is on no thread's stack: under `asyncio.run(main())` faulthandler's
dump shows only the main thread in the loop's `select`, and the hang read `hang in
<module>` at the `asyncio.run` line. The stackdump sitecustomize appends the running loop's
tasks (their coroutines, innermost first) to the dump, and the hang is read in them as in
the threads a join waits for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Cli

# An Event no one sets, awaited two coroutines deep, beside a task that sleeps in a loop.
_EVENT = """\
import asyncio

async def waiter(ev):
    await ev.wait()

async def beat():
    while True:
        await asyncio.sleep(0.05)

async def main():
    asyncio.get_running_loop().create_task(beat())
    await waiter(asyncio.Event())

asyncio.run(main())
"""

# Two tasks, each awaiting the future the other would set, gathered by main.
_EACH_OTHER = """\
import asyncio

async def a(mine, theirs):
    await theirs
    mine.set_result(1)

async def main():
    loop = asyncio.get_running_loop()
    fa, fb = loop.create_future(), loop.create_future()
    await asyncio.gather(a(fa, fb), a(fb, fa))

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("program", "place"),
    [(_EVENT, ("waiter", 4)), (_EACH_OTHER, ("a", 4))],
    ids=["event", "each-other"],
)
def test_a_coroutine_deadlock_names_the_awaiting_coroutine(
    cli: Cli, tmp_path: Path, program: str, place: tuple[str, int]
) -> None:
    (tmp_path / "job.py").write_text(program)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: aio-hang\ncommand: python job.py\n"
        "run: {timeout: 2s}\nexpect: {outcome: hang}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    function, line = place
    assert (outcome["hung_in"]["function"], outcome["hung_in"]["line"]) == place, outcome
    assert f"hang in {function} (job.py:{line})" in result.stdout, result.stdout
    report = (result.latest_run() / "report.md").read_text(encoding="utf-8")
    assert f"asyncio tasks were in `job.py:{line} in {function}`" in report, report
    assert "its main thread running the event loop that awaits them" in report, report
