"""Writes argv[1] MiB to stdout as fast as it can, between a HEAD and a TAIL line."""

import sys

out = sys.stdout.buffer
out.write(b"HEAD-START\n")
block = (b"x" * 1023 + b"\n") * 1024
for _ in range(int(sys.argv[1])):
    out.write(block)
out.write(b"TAIL-END\n")
out.flush()
