/* The attempt starter: what an attempt's leader does between the engine's spawn and
 * the attempt's exec, as a program (starter.py builds it, start.py runs it).
 *
 *     starter ERRFD TAG PARENT CORES CWD CGROUP NPROC PATH ARGV0 [ARG...]
 *
 * 1. CWD (if not empty) becomes the working directory;
 * 2. its tag: the soft RLIMIT_LOCKS becomes TAG (watchdog.py), if the hard limit allows;
 * 3. death with its parent: PR_SET_PDEATHSIG SIGKILL; if the parent is not PARENT any
 *    more (the engine died before that line), exit 125 with nothing run;
 * 4. CGROUP (if not empty): "0" is written to that cgroup.procs, so the root and all it
 *    starts are in the attempt's pids cgroup (pidlimit.py) from the program's first
 *    instruction; a write that fails leaves the attempt unlimited, as the engine's own
 *    join did;
 * 5. CORES "1": the soft RLIMIT_CORE rises to the hard limit (native stacks from cores);
 *    NPROC (if not empty): RLIMIT_NPROC, soft and hard, becomes NPROC (the process limit
 *    where no cgroup is, pidlimit.py): set here, before the root can fork (a /bin/sh -c
 *    root forks its program at once, which a limit set after the start never reached);
 * 6. signals 32 and 33 back at their default: glibc's posix_spawn sets its two internal
 *    signals to "ignore" in the child, which exec would keep (a Popen child has neither
 *    ignored, and a program that is not glibc's may use them);
 * 7. every descriptor above ERRFD is closed (Popen's close_fds: the engine spawns without
 *    closing them), ERRFD is marked close-on-exec and PATH is executed with ARGV0 [ARG...]
 *    and the environment as given. If the chdir or the exec fails, errno and the step
 *    (0: exec, 1: chdir) go to ERRFD (two 4-byte ints, native order) and the starter
 *    exits 127: the engine raises it as Popen would have. A successful exec closes
 *    ERRFD, which the engine reads as "started".
 *    With no arguments at all it exits 0: the engine's check that it can run it.
 *
 * The engine starts it with posix_spawn: ERRFD is descriptor 3, stdin, stdout and stderr
 * are in place, the session is new. Limits, the death signal, the cgroup and
 * close-on-exec all survive exec, so the attempt's root starts exactly as it did when
 * Python's preexec_fn did the same. Why a program: a preexec_fn forces fork instead of
 * vfork and runs Python's after-fork hooks in the child, about 2 ms of copied pages per
 * attempt in a large engine; and what Popen does around its fork in Python (the
 * environment encoded a variable at a time, the cwd, the descriptors) costs the engine
 * more than the child's few system calls here.
 *
 * Where the compiler allows (x86_64, aarch64 with -nostdlib), it makes raw system calls
 * and links no C library: a static glibc's start-up alone costs more than the rest.
 * Elsewhere the same steps go through libc.
 */
#include <sys/syscall.h>

#define RLIMIT_LOCKS_ 10
#define RLIMIT_CORE_ 4
#define RLIMIT_NPROC_ 6
#define PR_SET_PDEATHSIG_ 1
#define SIGKILL_ 9
#define F_SETFD_ 2
#define FD_CLOEXEC_ 1
#define RLIM_INFINITY_ (~0ULL)
#define AT_FDCWD_ (-100)
#define SIGCANCEL_ 32
#define SIGSETXID_ 33
#define O_WRONLY_ 1
#define O_CLOEXEC_ 02000000
#ifndef SYS_close_range
#define SYS_close_range 436 /* the same number on every architecture (Linux 5.9) */
#endif

struct rlimit64_ {
    unsigned long long cur;
    unsigned long long max;
};

#if defined(STARTER_NOLIBC) && defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d) {
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
}
__asm__(".text\n.globl _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n"
        " call starter_main\n hlt\n");
#elif defined(STARTER_NOLIBC) && defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}
__asm__(".text\n.globl _start\n_start:\n mov x0, sp\n bl starter_main\n brk #0\n");
#elif defined(STARTER_NOLIBC)
#error "no raw system calls for this architecture: build without STARTER_NOLIBC"
#else
#include <errno.h>
#include <unistd.h>
static long sys6(long n, long a, long b, long c, long d) {
    long r = syscall(n, a, b, c, d);
    return r == -1 ? -errno : r;
}
#endif

static void leave(int code) {
    sys6(SYS_exit_group, code, 0, 0, 0);
    for (;;) {
    }
}

/* A decimal argument; -1 if it is not one (the engine wrote it: never expected). */
static long long number(const char *text) {
    unsigned long long value = 0;
    if (*text == 0) return -1;
    for (; *text; ++text) {
        if (*text < '0' || *text > '9') return -1;
        value = value * 10 + (unsigned long long)(*text - '0');
    }
    return (long long)value;
}

static void raise_soft_limit(int resource, unsigned long long to_max, unsigned long long value) {
    struct rlimit64_ limit;
    if (sys6(SYS_prlimit64, 0, resource, 0, (long)&limit) != 0) return;
    if (to_max) value = limit.max;
    else if (limit.max != RLIM_INFINITY_ && limit.max < value) return;
    if (limit.cur == value) return;
    limit.cur = value;
    sys6(SYS_prlimit64, 0, resource, (long)&limit, 0);
}

static void set_limit(int resource, unsigned long long value) {
    struct rlimit64_ limit = {value, value};
    sys6(SYS_prlimit64, 0, resource, (long)&limit, 0);
}

/* Tell the engine why: errno and the step that failed. */
static void fail(long errfd, long failed, int step) {
    int report[2] = {(int)-failed, step};
    sys6(SYS_write, errfd, (long)report, sizeof report, 0);
    leave(127);
}

static void join_cgroup(const char *procs) {
    long fd = sys6(SYS_openat, AT_FDCWD_, (long)procs, O_WRONLY_ | O_CLOEXEC_, 0);
    if (fd < 0) return;
    sys6(SYS_write, fd, (long)"0\n", 2, 0);
    sys6(SYS_close, fd, 0, 0, 0);
}

/* SIG_DFL, no flags, an empty mask: all zero in every architecture's struct sigaction. */
static void default_action(int signal) {
    long long action[4] = {0, 0, 0, 0};
    sys6(SYS_rt_sigaction, signal, (long)action, 0, 8);
}

static void start(int argc, char **argv, char **envp) {
    if (argc == 1) leave(0);
    if (argc < 10) leave(126);
    long long errfd = number(argv[1]), tag = number(argv[2]), parent = number(argv[3]);
    if (errfd < 0 || tag < 0 || parent < 0) leave(126);
    if (argv[5][0]) {
        long failed = sys6(SYS_chdir, (long)argv[5], 0, 0, 0);
        if (failed < 0) fail(errfd, failed, 1);
    }
    raise_soft_limit(RLIMIT_LOCKS_, 0, (unsigned long long)tag);
    sys6(SYS_prctl, PR_SET_PDEATHSIG_, SIGKILL_, 0, 0);
    if (sys6(SYS_getppid, 0, 0, 0, 0) != parent) leave(125);
    if (argv[6][0]) join_cgroup(argv[6]);
    if (argv[4][0] == '1') raise_soft_limit(RLIMIT_CORE_, 1, 0);
    if (argv[7][0]) {
        long long nproc = number(argv[7]);
        if (nproc > 0) set_limit(RLIMIT_NPROC_, (unsigned long long)nproc);
    }
    default_action(SIGCANCEL_);
    default_action(SIGSETXID_);
    /* Before Linux 5.9 there is no close_range (ENOSYS): the engine's are close-on-exec. */
    if (errfd > 3) sys6(SYS_close_range, 3, errfd - 1, 0, 0);
    sys6(SYS_close_range, errfd + 1, ~0U, 0, 0);
    sys6(SYS_fcntl, errfd, F_SETFD_, FD_CLOEXEC_, 0);
    fail(errfd, sys6(SYS_execve, (long)argv[8], (long)(argv + 9), (long)envp, 0), 0);
}

#ifdef STARTER_NOLIBC
/* The kernel's initial stack: argc, argv[0..argc-1], NULL, envp..., NULL. */
void starter_main(long *stack) {
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    start(argc, argv, argv + argc + 1);
}
#else
extern char **environ;
int main(int argc, char **argv) {
    start(argc, argv, environ);
    return 127;
}
#endif
