/* A native test binary that dies of a real SIGSEGV (compiled by tests/test_children.py). */
#include <stdio.h>

int main(int argc, char **argv) {
    volatile int *nowhere = 0;
    printf("[ RUN      ] %s\n", argc > 1 ? argv[1] : "Suite.Case");
    fflush(stdout);
    return *nowhere;
}
