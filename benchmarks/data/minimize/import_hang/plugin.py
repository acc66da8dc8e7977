"""A plugin whose import starts a warm-up thread and joins it; the thread imports this
module again and waits for the import lock the importing thread holds: a real deadlock."""

import threading

REGISTRY: dict[str, object] = {}


def register(config: dict[str, object]) -> None:
    REGISTRY.update(config)


def describe() -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(REGISTRY.items()))


def _warm_up() -> None:
    import plugin  # noqa: F401

    REGISTRY["warm"] = True


_thread = threading.Thread(target=_warm_up, name="plugin-warm-up")
_thread.start()
_thread.join()
