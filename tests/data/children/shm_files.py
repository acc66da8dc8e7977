"""Leaves plain files in /dev/shm under the names given (argv[1:]), as a process killed
before its cleanup does: multiprocessing.shared_memory's `psm_*`, Intel OpenMP's
`__KMP_REGISTERED_LIB_*`, or an application's own segment name."""

import os
import sys

for name in sys.argv[1:]:
    fd = os.open(f"/dev/shm/{name}", os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, b"x" * 4096)
    os.close(fd)
