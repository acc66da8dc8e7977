"""Start, watch, cap and kill one attempt's process tree, and the files its children write.

launch.py and watchdog.py also run as programs of their own (`python -m
reprospec.process.launch`, `python -I -S watchdog.py`): this package's __init__ stays empty.
"""
