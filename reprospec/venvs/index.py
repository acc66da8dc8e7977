"""Where packages come from: the user's own configuration, never a hard-coded index.

uv's (UV_* variables, uv.toml) when there is any, else pip's (`pip config list`:
pip.conf and PIP_* variables) translated to uv options with pip's "best match over
all indexes" strategy. It is part of an environment's content hash.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject

# uv's own index configuration: when any is set, uv is left to read it.
UV_INDEX_VARIABLES = (
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
)
# Everything else of uv's environment that changes what gets installed: part of the hash.
UV_RESOLUTION_VARIABLES = (
    "UV_INDEX_STRATEGY",
    "UV_EXCLUDE_NEWER",
    "UV_PRERELEASE",
    "UV_OVERRIDE",
    "UV_CONSTRAINT",
    "UV_RESOLUTION",
    "UV_NO_BINARY",
    "UV_NO_BUILD",
    "UV_TORCH_BACKEND",
)


@frozen
class IndexConfig:
    """Where packages come from, as the user configured it (`source` says whose config)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    # "uv": uv reads its own configuration, nothing of it is passed to uv;
    # "pip": pip's configuration, translated into uv options.
    source: str = "uv"
    # reprospec's own --find-links: passed to uv and pip alike.
    extra_find_links: tuple[str, ...] = ()
    # Other uv settings in the environment that change resolution (hashed, not passed).
    uv_settings: tuple[tuple[str, str], ...] = ()

    def uv_args(self) -> tuple[str, ...]:
        """Options for `uv pip install` (pip's settings only: uv reads its own itself)."""
        args: list[str] = []
        links = list(self.extra_find_links)
        if self.source == "pip":
            if self.index_url:
                args += ["--index-url", self.index_url]
            for url in self.extra_index_urls:
                args += ["--extra-index-url", url]
            if self.extra_index_urls:
                # pip takes the best version over all indexes; uv's default stops at the
                # first index that has the name. Same configuration, same answer.
                args += ["--index-strategy", "unsafe-best-match"]
            links = [*self.find_links, *links]
        for link in links:
            args += ["--find-links", link]
        return tuple(args)

    def pip_args(self) -> tuple[str, ...]:
        """Options for pip (`pip index versions`): uv's settings translated when uv's are used."""
        args: list[str] = []
        links = list(self.extra_find_links)
        if self.source == "uv":
            if self.index_url:
                args += ["--index-url", self.index_url]
            for url in self.extra_index_urls:
                args += ["--extra-index-url", url]
            links = [*self.find_links, *links]
        for link in links:
            args += ["--find-links", link]
        return tuple(args)

    def to_dict(self) -> JsonObject:
        return {
            "source": self.source,
            "index_url": self.index_url,
            "extra_index_urls": list(self.extra_index_urls),
            "find_links": list(self.find_links),
            "extra_find_links": list(self.extra_find_links),
            "uv_settings": dict(self.uv_settings),
        }


def _split(value: str) -> tuple[str, ...]:
    return tuple(part for part in value.split() if part)


def _pip_config() -> dict[str, str]:
    """`pip config list` as {name: value}, later sources (env) winning over files. A value
    that is not UTF-8 (a latin-1 path in pip.conf, read replaced) is left out, and said: a
    find-links `/srv/wh\ufffdeels` passed to uv was a folder that does not exist, a silent
    wrong index and a misleading install failure."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            # A value of a config file's that is not UTF-8: replaced, not a traceback (the
            # settings reach results.json, which holds UTF-8 only), then left out below.
            errors="replace",
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    ranked: dict[str, tuple[int, str, str]] = {}
    rank = {"global": 0, "install": 1, "download": 1, "index": 1, ":env:": 2}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep or "." not in key:
            continue
        section, name = key.rsplit(".", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        level = rank.get(section, 0)
        if name not in ranked or level >= ranked[name][0]:
            ranked[name] = (level, value, key)
    for name, (_, value, key) in list(ranked.items()):
        if "\ufffd" in value:
            del ranked[name]
            print(
                f"reprospec: warning: pip's {key} (pip config list) holds bytes that are not "
                "UTF-8; not used, as if it were not set",
                file=sys.stderr,
            )
    return {name: value for name, (_, value, _) in ranked.items()}


def _uv_config_files() -> list[Path]:
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    dirs = [config_home / "uv", Path("/etc/uv")]
    dirs += [Path(d) / "uv" for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")]
    return [d / "uv.toml" for d in dirs if (d / "uv.toml").is_file()]


def user_index_config(find_links: Sequence[Path | str] = ()) -> IndexConfig:
    """The index configuration the user has: uv's if any, else pip's; plus reprospec's --find-links.

    pip's configuration is read through `pip config list` (pip.conf files and
    PIP_* variables, as pip itself would apply them).
    """
    extra = tuple(str(Path(link).resolve()) for link in find_links)
    settings = tuple((k, os.environ[k]) for k in UV_RESOLUTION_VARIABLES if os.environ.get(k))
    if any(os.environ.get(k) for k in UV_INDEX_VARIABLES) or _uv_config_files():
        env = os.environ
        index = env.get("UV_DEFAULT_INDEX") or env.get("UV_INDEX_URL") or None
        extras = _split(env.get("UV_INDEX", "")) + _split(env.get("UV_EXTRA_INDEX_URL", ""))
        links = _split(env.get("UV_FIND_LINKS", "").replace(",", " "))
        return IndexConfig(index, extras, links, "uv", extra, settings)
    pip = pip_config_cached()
    return IndexConfig(
        index_url=pip.get("index-url") or None,
        extra_index_urls=_split(pip.get("extra-index-url", "")),
        find_links=_split(pip.get("find-links", "")),
        source="pip",
        extra_find_links=extra,
        uv_settings=settings,
    )


@lru_cache(maxsize=1)
def pip_config_cached() -> dict[str, str]:
    return _pip_config()
