"""A process that hangs in a child it waits for, or in its own threads, as MODE says.

Usage: python child_hang.py MODE

    mp-fork, mp-spawn  a multiprocessing.Process blocks on a lock it holds; the main joins it
    pool               a multiprocessing.Pool worker blocks in the task; map() waits for it
    subprocess         a subprocess.run child (MODE forever) sleeps forever; the main waits
                       for its exit
    string             a `python -c` child (its code `<string>`) blocks on an event; the main
                       waits for it in Popen.wait()
    sleep              a subprocess.run child that is no Python program (`sleep 600`)
    threads            two threads deadlock on two locks; the main thread joins them
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time


def stuck(*_: object) -> None:
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()  # never returns: the lock is its own


def deadlock() -> None:
    first, second = threading.Lock(), threading.Lock()
    both = threading.Barrier(2)

    def take(one: threading.Lock, other: threading.Lock) -> None:
        with one:
            both.wait()  # each holds its first lock before it asks for the other
            with other:
                pass

    threads = [
        threading.Thread(target=take, args=(first, second)),
        threading.Thread(target=take, args=(second, first)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def main() -> None:
    mode = sys.argv[1]
    if mode.startswith("mp-"):
        process = multiprocessing.get_context(mode[3:]).Process(target=stuck)
        process.start()
        process.join()
    elif mode == "pool":
        with multiprocessing.get_context("fork").Pool(1) as pool:
            pool.map(stuck, [1])
    elif mode == "subprocess":
        subprocess.run([sys.executable, __file__, "forever"], check=False)
    elif mode == "string":
        code = "import threading\nthreading.Event().wait()\n"
        subprocess.Popen([sys.executable, "-c", code]).wait()
    elif mode == "sleep":
        subprocess.run(["sleep", "600"], check=False)
    elif mode == "forever":
        while True:
            time.sleep(0.1)
    elif mode == "threads":
        deadlock()
    time.sleep(0)


if __name__ == "__main__":
    main()
