/* The attempt starter: what an attempt's leader does between the engine's fork and
 * the attempt's exec, as a program (starter.py builds it, start.py runs it).
 *
 *     starter ERRFD TAG PARENT CORES PATH ARGV0 [ARG...]
 *
 * 1. its tag: the soft RLIMIT_LOCKS becomes TAG (watchdog.py), if the hard limit allows;
 * 2. death with its parent: PR_SET_PDEATHSIG SIGKILL; if the parent is not PARENT any
 *    more (the engine died before that line), exit 125 with nothing run;
 * 3. CORES "1": the soft RLIMIT_CORE rises to the hard limit (native stacks from cores);
 * 4. ERRFD is marked close-on-exec and PATH is executed with ARGV0 [ARG...] and the
 *    environment as given. If that fails, errno goes to ERRFD (4 bytes, native order)
 *    and the starter exits 127: the engine raises it as Popen would have. A successful
 *    exec closes ERRFD, which the engine reads as "started".
 *    With no arguments at all it exits 0: the engine's check that it can run it.
 *
 * Limits, the death signal and close-on-exec all survive exec, so the attempt's root
 * starts exactly as it did when Python's preexec_fn did the same. Why a program: a
 * preexec_fn forces fork instead of vfork and runs Python's after-fork hooks in the
 * child, about 2 ms of copied pages per attempt in a large engine; this costs the
 * engine a vfork and the machine one tiny exec.
 *
 * Where the compiler allows (x86_64, aarch64 with -nostdlib), it makes raw system calls
 * and links no C library: a static glibc's start-up alone costs more than the rest.
 * Elsewhere the same steps go through libc.
 */
#include <sys/syscall.h>

#define RLIMIT_LOCKS_ 10
#define RLIMIT_CORE_ 4
#define PR_SET_PDEATHSIG_ 1
#define SIGKILL_ 9
#define F_SETFD_ 2
#define FD_CLOEXEC_ 1
#define RLIM_INFINITY_ (~0ULL)

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

static void start(int argc, char **argv, char **envp) {
    if (argc == 1) leave(0);
    if (argc < 7) leave(126);
    long long errfd = number(argv[1]), tag = number(argv[2]), parent = number(argv[3]);
    if (errfd < 0 || tag < 0 || parent < 0) leave(126);
    raise_soft_limit(RLIMIT_LOCKS_, 0, (unsigned long long)tag);
    sys6(SYS_prctl, PR_SET_PDEATHSIG_, SIGKILL_, 0, 0);
    if (sys6(SYS_getppid, 0, 0, 0, 0) != parent) leave(125);
    if (argv[4][0] == '1') raise_soft_limit(RLIMIT_CORE_, 1, 0);
    sys6(SYS_fcntl, errfd, F_SETFD_, FD_CLOEXEC_, 0);
    long failed = sys6(SYS_execve, (long)argv[5], (long)(argv + 6), (long)envp, 0);
    int code = (int)-failed;
    sys6(SYS_write, errfd, (long)&code, sizeof code, 0);
    leave(127);
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
