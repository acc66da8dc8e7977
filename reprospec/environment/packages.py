"""Whether an interpreter's installed distributions satisfy a cell's `packages`.

The rule (issue 9): an attempt runs in an environment that satisfies its cell's
`environment.packages`, or it is an infra error naming what is missing or
mismatched; never a verdict on the wrong environment. The facts come from the
target interpreter itself: a tiny stdlib-only probe (`PROBE_CODE`) prints what
importlib.metadata sees there and the PEP 508 marker values of that
interpreter. The comparison is done here with `packaging` (full PEP 440), so
the probe runs on any Python 3 without extra packages, in a venv, a container
or over ssh alike: a runner that cannot run `python -c` the local way runs
`PROBE_CODE` its own way and hands the JSON to `parse_probe` + `mismatches`. `doctor` and a
run's Environment mismatch compare a captured environment by the same `mismatches` (envinfo
captures the marker values too), so the three never disagree on a marker or a version.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path

from reprospec.core import requirements as req_words
from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.requirements import normalize as normalize  # the one rule, re-exported
from reprospec.environment.interpreter import run_python
from reprospec.errors import InfraError

# Runs in the target interpreter: stdlib only, Python 3.6+ (pkg_resources when
# importlib.metadata is missing, else the metadata files on sys.path). argv[1] is a JSON
# list of normalized names; argv[2], when given and "extras", asks for every distribution's
# version and Requires-Dist lines too (`requires`, `everything`): what an extra
# (`torch[opt-einsum]`) requires is only known from them, and the extra's requirements may
# name extras in turn, so the whole closure is judged from one probe (`mismatches`).
PROBE_CODE = r"""
import json, os, platform, re, sys
# `python -c` puts "" (the current directory, a cell's workdir) first: what its metadata says
# was named as the environment's own, or as a PYTHONPATH folder's that holds another version.
# Left out, as is not PYTHONPATH's own empty entry (an absolute cwd, or a second "").
if sys.path and sys.path[0] == "":
    del sys.path[0]
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
def egg_requires(text):
    # requires.txt of an egg-info: `[extra:marker]` sections, as importlib.metadata reads them.
    out, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        extra, _, marker = section.partition(":")
        conditions = []
        if marker:
            conditions.append("(" + marker + ")")
        if extra:
            conditions.append('extra == "' + extra + '"')
        out.append(line + ("; " + " and ".join(conditions) if conditions else ""))
    return out
def file_requires(folder, entry):
    # Requires-Dist of a .dist-info/METADATA, or an egg-info's requires.txt.
    path = os.path.join(folder, entry)
    try:
        if entry.endswith(".dist-info"):
            out = []
            with open(os.path.join(path, "METADATA"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    if key.strip().lower() == "requires-dist":
                        out.append(value.strip())
            return out
        if os.path.isdir(path):
            with open(os.path.join(path, "requires.txt"), encoding="utf-8", errors="replace") as f:
                return egg_requires(f.read())
    except OSError:
        pass
    return []
def meta_head(folder, entry, wanted):
    # The header fields `wanted` (lower case) of a .dist-info's METADATA or an egg-info's
    # PKG-INFO (an egg-info may be that file itself), read up to the first blank line or
    # until each is found; {} for another entry, or one that cannot be read.
    if entry.endswith(".dist-info"):
        meta = os.path.join(folder, entry, "METADATA")
    elif entry.endswith(".egg-info"):
        meta = os.path.join(folder, entry)
        if os.path.isdir(meta):
            meta = os.path.join(meta, "PKG-INFO")
    else:
        return {}
    head = {}
    try:
        with open(meta, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in wanted:
                    head.setdefault(key, value.strip())
                    if len(head) == len(wanted):
                        break
    except OSError:
        return {}
    return head
found = {}
requires = {}
try:
    try:
        import importlib.metadata as md
    except ImportError:
        import importlib_metadata as md
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(norm(name), dist.version)
            requires.setdefault(norm(name), list(dist.requires or []))
except ImportError:
    try:
        import pkg_resources
        for dist in pkg_resources.working_set:
            found.setdefault(norm(dist.project_name), dist.version)
            info = getattr(dist, "egg_info", None) or ""
            requires.setdefault(
                norm(dist.project_name),
                file_requires(os.path.dirname(info), os.path.basename(info)) if info else [],
            )
    except ImportError:
        # Python < 3.8 in a venv uv made: no importlib.metadata, no setuptools. The
        # metadata files on sys.path say the same, in path order as importlib's.
        for folder in sys.path:
            try:
                entries = sorted(os.listdir(folder or "."))
            except OSError:
                continue
            for entry in entries:
                head = meta_head(folder, entry, ("name", "version"))
                if head.get("name") and head.get("version"):
                    found.setdefault(norm(head["name"]), head["version"])
                    requires.setdefault(norm(head["name"]), file_requires(folder, entry))
def full(info):
    text = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        text += info.releaselevel[0] + str(info.serial)
    return text
impl = sys.implementation
markers = {
    "implementation_name": impl.name,
    "implementation_version": full(impl.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
names = json.loads(sys.argv[1])
out = {"python": sys.executable, "prefix": sys.prefix,
       "installed": dict((n, found.get(n)) for n in names), "markers": markers}
# Which of them a PYTHONPATH folder holds: Python puts those before the environment's own.
# An empty entry (`:/x`, `/x:`) is the current directory, as Python reads it; an empty
# PYTHONPATH is none. The folder named is the first of sys.path that holds the name, the
# one whose version was read, and only where it is PYTHONPATH's. A metadata folder is
# the distribution its Name says, as importlib.metadata reads it: by its folder's name, a
# checkout's `legacy.egg-info` of packaging was named for no one. Past the last of
# PYTHONPATH's folders nothing more can be named: the loop ends there, not in
# site-packages, where it opened every distribution's metadata file up to the names'.
pythonpath = os.environ.get("PYTHONPATH", "")
paths = set(os.path.realpath(p or os.getcwd()) for p in pythonpath.split(os.pathsep) if pythonpath)
if paths:
    shadowed = {}
    left = set(n for n in names if found.get(n) is not None)
    passed = set()
    for folder in sys.path:
        if not left or not (paths - passed):
            break
        folder = os.path.realpath(folder or os.getcwd())
        passed.add(folder)
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            if entry.endswith((".dist-info", ".egg-info")):
                name = norm(meta_head(folder, entry, ("name",)).get("name", ""))
                if name in left:
                    left.discard(name)
                    if folder in paths:
                        shadowed[name] = folder
    out["pythonpath"] = shadowed
if sys.argv[2:] == ["extras"]:
    out["everything"] = found
    out["requires"] = requires
print(json.dumps(out))
"""

PROBE_TIMEOUT_S = 60.0
# A probe prints one JSON line; more is an interpreter printing on its own.
OUTPUT_BYTES = 4 << 20
# Variables that change which distributions an interpreter sees.
_SITE_VARIABLES = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "VIRTUAL_ENV",
)
_WHEEL_NAME = Lazy(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


@frozen
class Installed:
    """What the target interpreter saw: versions by normalized name (None: not installed)."""

    python: str
    versions: Mapping[str, str | None]
    markers: Mapping[str, str] = field(default_factory=dict)
    prefix: str = ""
    # Only from a probe asked for extras (`probe_args`): every distribution's version, and
    # its Requires-Dist lines (normalized name -> lines); empty where it was not asked.
    everything: Mapping[str, str] = field(default_factory=dict)
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Normalized name -> the PYTHONPATH folder that holds it (the first), which Python puts
    # before the environment's own: the mismatch line names it, since a venv built for the
    # cell's version otherwise read as holding another.
    pythonpath: Mapping[str, str] = field(default_factory=dict)

    def version(self, name: str) -> str | None:
        """The installed version of normalized `name` (None: not installed, or not seen)."""
        have = self.versions.get(name)
        return have if have is not None else self.everything.get(name)


@frozen
class _Wanted:
    text: str  # the requirement as the spec wrote it
    name: str | None  # normalized; None when it names no distribution we can check
    specifier: str = ""
    marker: object | None = None  # packaging.markers.Marker
    extras: tuple[str, ...] = ()  # normalized: `torch[opt_einsum]` -> ("opt-einsum",)


def _parse(requirement: str) -> _Wanted:
    from packaging.requirements import InvalidRequirement, Requirement

    text = requirement.strip()
    try:
        req = Requirement(text)
    except InvalidRequirement:
        # A wheel file (`./wheels/foo-1.0-py3-none-any.whl`): its name says what it holds.
        match = _WHEEL_NAME.match(Path(text).name)
        if match:
            return _Wanted(text, normalize(match["name"]), f"=={match['version']}")
        return _Wanted(text, None)
    extras = tuple(sorted(normalize(extra) for extra in req.extras))
    return _Wanted(text, normalize(req.name), str(req.specifier), req.marker, extras)


def requirement_name(requirement: str) -> str | None:
    """The normalized distribution name a requirement names: `Torch_X>=1` -> `torch-x`, a
    wheel file by its file name (`./wheels/torch-2.3.0-cp311-...whl` -> `torch`); None for
    one that names none checkable (`-e ./src`, a bare URL). The one reader of that name:
    the package check's, and the docker image's when a cell's own pin replaces the runner's."""
    return _parse(requirement).name


def pins(requirements: Sequence[str], versions: Mapping[str, str]) -> tuple[str, ...]:
    """`six==1.16.0`, `requests[socks]==2.32.3`: each requirement that names a distribution,
    at the version `versions` (normalized name -> what `pip freeze` says) holds, extras
    kept; one installed from a wheel or a URL (its freeze line holds no version) is left
    out, since the spec's own entry names what to install. What a venv's range resolved to,
    for the standalone repro."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    out = []
    for text in requirements:
        try:
            wanted = Requirement(text)
            version = versions.get(normalize(wanted.name))
            Version(version or "")
        except (InvalidRequirement, InvalidVersion):
            continue
        extras = f"[{','.join(sorted(wanted.extras))}]" if wanted.extras else ""
        out.append(f"{wanted.name}{extras}=={version}")
    return tuple(out)


def requirement_names(requirements: Sequence[str]) -> tuple[str, ...]:
    """The normalized distribution names the requirements name (unparsable ones left out)."""
    names = (requirement_name(r) for r in requirements)
    return tuple(dict.fromkeys(n for n in names if n))


def requirements_naming(requirements: Iterable[str], name: str) -> tuple[str, ...]:
    """The requirements that name distribution `name`, by `requirement_name`: for torch,
    `Torch==2.1`, `torch[cuda]`, `./wheels/torch-2.3.0-...whl`, never `torchvision`."""
    return tuple(r for r in requirements if requirement_name(r) == normalize(name))


def wants_extras(requirements: Iterable[str]) -> bool:
    """Whether a requirement names an extra (`torch[opt-einsum]`): the probe is then asked
    what each distribution requires too (`probe_args`)."""
    return any(_parse(r).extras for r in requirements)


def probe_args(requirements: Sequence[str]) -> list[str]:
    """The arguments `PROBE_CODE` takes for `requirements`: their names, and `extras` when
    one names an extra (`wants_extras`), so that the probe also says what each
    distribution requires (every runner's probe is asked the same way)."""
    args = [json.dumps(list(requirement_names(requirements)))]
    if wants_extras(requirements):
        args.append("extras")
    return args


def _satisfied(specifier: str, have: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    if not specifier:
        return True
    try:
        return SpecifierSet(specifier).contains(Version(have), prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        # Not PEP 440 on one side: only an exact textual pin can still be judged.
        return specifier.lstrip("=") == have


def mismatches(requirements: Sequence[str], installed: Installed) -> tuple[str, ...]:
    """One line per requirement the interpreter does not satisfy, naming both sides.

    A requirement with extras (`torch[opt-einsum]`) also needs what the extra requires
    (torch's `opt-einsum>=3.3; extra == "opt-einsum"`): each such requirement missing or
    at another version is a line naming the extra, and so on through extras those name.
    pip installs them with the distribution, but an interpreter given (the local runner)
    or an image may hold the distribution without them. Judged only where the probe was
    asked for extras (`probe_args`); a captured environment has no Requires-Dist to judge by.
    """
    out: list[str] = []
    for requirement in requirements:
        wanted = _parse(requirement)
        if wanted.name is None:
            continue
        marker = wanted.marker
        if marker is not None and not marker.evaluate(dict(installed.markers)):  # type: ignore[attr-defined]
            continue  # `; python_version < "3.10"` and this is 3.11: not required here
        have = installed.version(wanted.name)
        if have is None:
            out.append(f"{wanted.name} is not installed (the cell needs {wanted.text})")
            continue
        if not _satisfied(wanted.specifier, have):
            folder = installed.pythonpath.get(wanted.name)
            where = f", from {folder} on PYTHONPATH, which comes first" if folder else ""
            out.append(f"{wanted.name} {have} is installed (the cell needs {wanted.text}){where}")
            continue
        if wanted.extras and installed.requires:
            out.extend(_extra_problems(wanted.name, wanted.extras, wanted.text, installed, set()))
    return tuple(dict.fromkeys(out))


def _extra_problems(
    name: str,
    extras: Sequence[str],
    needed_by: str,
    installed: Installed,
    seen: set[tuple[str, str]],
    *,
    nested: bool = False,
) -> list[str]:
    """What the `extras` of installed distribution `name` require and the interpreter lacks
    (`nested`: an extra a requirement of the spec's extra names, not the spec's own)."""
    from packaging.markers import InvalidMarker, UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    out: list[str] = []
    markers = dict(installed.markers)
    for extra in (normalize(e) for e in extras):
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        for line in installed.requires.get(name, ()):
            try:
                dependency = Requirement(line)
                marker = dependency.marker
                # Only what the extra adds: a line true without it is a plain dependency,
                # which the check leaves to the installer, as for a requirement without extras.
                if marker is None or marker.evaluate({**markers, "extra": ""}):
                    continue
                if not marker.evaluate({**markers, "extra": extra}):
                    continue
            except (InvalidRequirement, InvalidMarker, UndefinedEnvironmentName):
                continue  # a line this interpreter's metadata holds that PEP 508 cannot read
            wanted = normalize(dependency.name)
            # `opt-einsum is not installed (torch[opt-einsum] requires opt-einsum>=3.3)`, and
            # through a nested extra, which of the spec's requirements led there.
            why = f"{name}[{extra}] requires {dependency.name}{dependency.specifier}"
            if nested:
                why += f"; the cell needs {needed_by}"
            have = installed.version(wanted)
            if have is None:
                out.append(f"{wanted} is not installed ({why})")
            elif not _satisfied(str(dependency.specifier), have):
                out.append(f"{wanted} {have} is installed ({why})")
            elif dependency.extras:
                out.extend(
                    _extra_problems(
                        wanted, sorted(dependency.extras), needed_by, installed, seen, nested=True
                    )
                )
    return out


def lists_mismatches(
    python: str,
    lists: Sequence[Sequence[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """`mismatches` of each list, by the list, asked of `python` itself in one probe, in
    `env` and `cwd` as the run's check asks it (`doctor`, on the local runner: a cell's
    `environment.env` may set PYTHONPATH, and a capture holds no Requires-Dist); {} where
    no list names a distribution, and the reason for each where the probe failed."""
    named = {tuple(each): tuple(each) for each in lists if requirement_names(each)}
    if not named:
        return {}
    wanted = list(dict.fromkeys(r for each in named for r in each))
    try:
        installed = probe_installed(python, wanted, env=env, cwd=cwd)
    except InfraError as exc:
        said = (f"cannot check the cell's packages: {exc}",)
        return dict.fromkeys(named, said)
    return {key: mismatches(key, installed) for key in named}


def site_variables(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables of `env` that change which distributions an interpreter sees
    (PYTHONPATH, PYTHONUSERBASE, ...): what keys a package check besides its folder."""
    return tuple((name, env[name]) for name in _SITE_VARIABLES if name in env)


def parse_probe(stdout: str, python: str) -> Installed:
    """The probe's JSON line as an `Installed`; InfraError when it printed something else."""
    try:
        data = json.loads(stdout.strip().splitlines()[-1])
        versions = {str(k): (None if v is None else str(v)) for k, v in data["installed"].items()}
        markers = {str(k): str(v) for k, v in data["markers"].items()}
        everything = {str(k): str(v) for k, v in (data.get("everything") or {}).items() if v}
        requires = {
            str(k): tuple(str(line) for line in v) for k, v in (data.get("requires") or {}).items()
        }
        pythonpath = {str(k): str(v) for k, v in (data.get("pythonpath") or {}).items()}
    except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
        raise InfraError(f"package check with {python} printed no usable JSON ({exc})") from exc
    return Installed(
        str(data.get("python") or python),
        versions,
        markers,
        str(data.get("prefix") or ""),
        everything,
        requires,
        pythonpath,
    )


def probe_installed(
    python: str,
    requirements: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    site: bool = True,
) -> Installed:
    """Run `PROBE_CODE` with `python` (in `env`, `cwd`: what the attempt will see) for what
    `requirements` name (a bare name is one), asked as `probe_args` asks: where one names
    an extra, also every distribution's version and requirements. `site=False` (`-S`):
    only what `PYTHONPATH` and `cwd` bring, the first folder holding a name winning, as
    they come before any environment's site-packages (doctor's check of what a venv
    runner's attempts inherit)."""
    argv = [python, *(() if site else ("-S",)), "-c", PROBE_CODE, *probe_args(requirements)]
    # The interpreter is the spec's: what it prints is kept within a bound (capped.py).
    done = run_python(
        argv, what="package check", limit=OUTPUT_BYTES, timeout_s=timeout_s, env=env, cwd=cwd
    )
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        last = (stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise InfraError(f"package check with {python} failed: {last}")
    return parse_probe(stdout, python)


def unchecked(requirements: Sequence[str]) -> str | None:
    """The infra-error reason of entries no distribution can be compared for (None: none).

    The local runner installs nothing: it compares what each entry names with what the
    interpreter has. An entry that names nothing (`six=1.2`, a folder, a URL) cannot be
    compared, and left out it made the cell run as if the spec asked for nothing: judged
    `reproduced` without six. Validation refuses the typos; this holds for a
    spec that reached the runner another way (the Python API, a stored plan).
    """
    reasons = []
    for requirement in requirements:
        if _parse(requirement).name is not None:
            continue
        if _is_location(requirement):  # installable, but nothing here says what it holds
            reasons.append(
                f"{requirement.strip()!r} names no distribution this interpreter can be "
                "checked for (name @ url names one)"
            )
        else:
            reasons.append(req_words.problem(requirement) or requirement.strip())
    if not reasons:
        return None
    return "cannot check the cell's packages: " + "; ".join(reasons)


def local_path(requirement: str) -> str | None:
    """The path of this machine an entry installs from (`./mypkg`, `/src/pkg`, a wheel's
    path, `file:///src/pkg`, `pkg @ file:...`), else None: a requirement, or a URL of the
    network (`https://`, `git+https://`)."""
    named = _NAMED_URL.match(requirement)
    target = (named["url"] if named else requirement.split(";", 1)[0]).strip()
    if target.startswith("file:"):
        return urllib.parse.unquote(urllib.parse.urlsplit(target).path)
    if "://" in target:
        return None
    # `pkg @ ./pkg`, `pkg @ /src/pkg`: a name and a path, which the build cannot see either.
    if named:
        return target if target.startswith((".", "/", "~")) else None
    target = _EXTRAS.sub("", target)  # `./pkg[dev]` installs the folder ./pkg
    if target.startswith((".", "/", "~")) or target.endswith((".whl", ".tar.gz", ".zip")):
        return target
    return None


_EXTRAS = re.compile(r"\s*\[[^\]]*\]$")


# `name @ url` (PEP 508), extras allowed: the URL is what the installer fetches.
_NAMED_URL = re.compile(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*@\s*(?P<url>\S+)")


def _is_location(requirement: str) -> bool:
    """An entry that names only where to install from (`./mypkg`, a bare URL): valid, but
    no name says what to check; `unchecked` refuses it (with a typo's words for the rest),
    `PackageCheck.named` leaves it out."""
    return _parse(requirement).name is None and req_words.problem(requirement) is None


def describe(python: str, problems: Sequence[str]) -> str:
    """The infra-error reason of an attempt whose environment does not satisfy its packages."""
    return f"environment does not satisfy the cell's packages ({python}): " + "; ".join(problems)


class PackageCheck:
    """Checks per run, cached per distinct (interpreter, packages, what it sees): thread-safe.

    A runner keeps one for its run and asks `reason(...)` before every attempt;
    the probe runs once per distinct key, so a 100-attempt cell costs one probe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (the reason, the mismatch lines it is made of) per key.
        self._cache: dict[tuple[object, ...], tuple[str | None, tuple[str, ...]]] = {}
        self._key_locks: dict[tuple[object, ...], threading.Lock] = {}

    def reason(
        self,
        python: str,
        requirements: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> str | None:
        """None when `python` satisfies every requirement, else the infra-error reason."""
        return self.checked(python, requirements, env=env, cwd=cwd)[0]

    @staticmethod
    def named(requirements: Sequence[str]) -> tuple[str, ...]:
        """The entries but those that name only where to install from (`_is_location`):
        what a runner that installed them itself (the venv runner's uv) checks. A method, so
        that the local runner, which imports this module only when a spec asks for
        packages, needs no import of its own per attempt."""
        return tuple(r for r in requirements if not _is_location(r))

    def checked(
        self,
        python: str,
        requirements: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> tuple[str | None, tuple[str, ...] | None]:
        """(`reason`, the lines it is made of: `mismatches`' words, as `lists_mismatches`
        gives them, or the probe's failure; None where no probe was asked, an entry it
        cannot check refused first). The run's environment capture reads the lines of its
        cell (runners/local.py's `package_lines`) instead of asking the interpreter again."""
        requirements = tuple(str(r) for r in requirements)
        refused = unchecked(requirements)
        if refused:
            return refused, None
        if not requirement_names(requirements):
            return None, ()
        seen = env if env is not None else os.environ
        key = (
            python,
            requirements,
            str(cwd or ""),
            tuple(seen.get(name, "") for name in _SITE_VARIABLES),
        )
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one probe per key even when -j N attempts ask at once
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
            try:
                installed = probe_installed(python, requirements, env=env, cwd=cwd)
                problems = mismatches(requirements, installed)
                reason = describe(python, problems) if problems else None
            except InfraError as exc:
                reason = f"cannot check the cell's packages: {exc}"
                problems = (reason,)
            with self._lock:
                self._cache[key] = (reason, problems)
            return reason, problems
