"""The project's script: its package comes from the editable install, not its folder."""

import capmod

print(capmod.count_tokens("a 3 4b c"))
