"""An asyncio process's stack dump ends with its tasks, which the engine waits for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from reprospec.process.stacks import (
    STACKDUMP_DIR,
    TASKS_END,
    TASKS_FOLLOW,
    read_stack_dump,
    wait_for_stack_files,
)

_DEADLOCK = (
    "import asyncio\n"
    "async def waiter():\n    await asyncio.Event().wait()\n"
    "async def main():\n    await asyncio.create_task(waiter())\n"
    "print('up', flush=True)\n"
    "asyncio.run(main())\n"
)


def test_the_tasks_follow_the_threads_and_are_read(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(STACKDUMP_DIR), "REPROSPEC_STACK_DIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-c", _DEADLOCK], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "up\n"
        time.sleep(0.2)  # in the loop's select
        os.kill(child.pid, signal.SIGURG)
        wait_for_stack_files(tmp_path, [child.pid])
        path = tmp_path / f"stack-{child.pid}.txt"
        raw = path.read_text()
        assert raw.startswith(TASKS_FOLLOW), raw
        assert raw.endswith(TASKS_END), raw
        text = read_stack_dump(path)
        assert "Task Task-2 (most recent call first):\n" in text, text
        # main awaits the waiter's task: the dump says so, in asyncio's order (the engine ranks).
        assert "Task Task-1 (most recent call first): [awaits a task]\n" in text, text
        assert "# tasks" not in text, text
    finally:
        child.kill()
        child.wait()
