"""A hang's `thread apply all bt` names the thread the hang sits in, not the first printed.

gdb prints the newest thread first: attached to a C program whose main thread joins `work`
(on a mutex its main thread holds) beside a daemon `beat` that sleeps in a loop, the ticket
reader took `beat`'s `nanosleep` as the hang's native stack. The text is gdb 13's own
(`gdb -p PID -batch -ex "thread apply all bt"`), its arguments and addresses left out.
"""

from __future__ import annotations

from reprospec.capture.ticket import read_ticket

GDB = """\
$ ./hang
It hangs forever. gdb -p:
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
__futex_abstimed_wait_common64 (private=128, cancel=true) at ./nptl/futex-internal.c:57
57\t./nptl/futex-internal.c: No such file or directory.

Thread 3 (Thread 0x7fc254ecf6c0 (LWP 30738) "hang"):
#0  __GI___clock_nanosleep (clock_id=0) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48
#1  __GI___nanosleep (req=0x7fc254ecee80) at ../sysdeps/unix/sysv/linux/nanosleep.c:25
#2  __sleep (seconds=0) at ../sysdeps/posix/sleep.c:55
#3  beat (a=0x0) at hang.c:4
#4  start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#5  clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 2 (Thread 0x7fc2556d06c0 (LWP 30732) "hang"):
#0  futex_wait (private=0, expected=2) at ../sysdeps/nptl/futex-internal.h:146
#1  __GI___lll_lock_wait (futex=0x56318aa98060 <m>, private=0) at ./nptl/lowlevellock.c:49
#2  lll_mutex_lock_optimized (mutex=0x56318aa98060 <m>) at ./nptl/pthread_mutex_lock.c:48
#3  ___pthread_mutex_lock (mutex=0x56318aa98060 <m>) at ./nptl/pthread_mutex_lock.c:93
#4  work (a=0x0) at hang.c:5
#5  start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#6  clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 1 (Thread 0x7fc2556d1740 (LWP 30731) "hang"):
#0  __futex_abstimed_wait_common64 (private=128, cancel=true) at ./nptl/futex-internal.c:57
#1  __futex_abstimed_wait_common (futex_word=0x7fc2556d0990) at ./nptl/futex-internal.c:87
#2  __GI___futex_abstimed_wait_cancelable64 (futex_word=0x7fc2) at ./nptl/futex-internal.c:139
#3  __pthread_clockjoin_ex (threadid=140472633591488) at ./nptl/pthread_join_common.c:102
#4  main () at hang.c:11
"""


def test_a_hangs_native_stack_is_the_thread_on_the_mutex_not_the_sleeper() -> None:
    ticket = read_ticket(GDB)
    assert ticket.failure.outcome == "hang"
    assert "work@hang.c" in ticket.native_frames, ticket.native_frames
    assert ticket.native_frames[0] == "futex_wait@futex-internal.h"


def test_the_main_threads_join_is_never_where_the_hang_sits() -> None:
    # Only the joiner and the sleeper: the sleeper it waits for, not the join.
    joined = GDB.split("Thread 2 (", 1)[0] + "Thread 1 (" + GDB.split("Thread 1 (", 1)[1]
    assert "beat@hang.c" in read_ticket(joined).native_frames
