"""Starts a thread at import (as a module starting a thread pool would): unsafe to fork."""

import threading

_stop = threading.Event()
threading.Thread(target=_stop.wait, daemon=True).start()
