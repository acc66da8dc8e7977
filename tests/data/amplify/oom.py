"""Build an index that holds 256 MiB at once: fine on a machine with room, killed under a limit.

The blocks are filled (not only reserved), so they count against a cgroup's memory.max.
"""

BLOCK = 16 * 2**20
index = [bytes([n % 251 + 1]) * BLOCK for n in range(16)]
print(f"index built: {sum(len(b) for b in index) >> 20} MiB")
