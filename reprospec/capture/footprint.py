"""What a captured command touched: the variables, local files and distributions it used.

The child records the modules it looks for and the files whose code ran as a module
(the stackdump sitecustomize, asked by REPROSPEC_RECORD_IMPORTS); here the workdir's
files among those that ran become the spec's `files` (the local modules, so the spec
travels with them), the names pinned `packages` (the distributions they came from),
the environment becomes commented variable
lines (secrets read back from the environment, never written), and a hang's
stack names the import it hung in. Kept apart from `command.py` because all
of it is pure reading of what came back, testable without running anything.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from reprospec import native
from reprospec.capture.toggles import Proposal
from reprospec.capture.writer import EnvLine
from reprospec.core.expr import literal_text
from reprospec.core.frozen import frozen
from reprospec.core.logtext import undecodable_byte, unescaped_name, without_escapes
from reprospec.core.pythonargs import (
    ABSOLUTE_PATH,
    DRIVE,
    LIBRARY_CODE,
    LIBRARY_CODE_RE,
    is_python,
    python_program,
)
from reprospec.core.redact import holds_secret
from reprospec.core.results import AttemptResult, bare_type
from reprospec.outcome.children import RANK_PREFIX
from reprospec.outcome.tracebacks import EXCEPTION_LINE, exception_after, traceback_starts
from reprospec.plan.pyimports import parse_imports, read_imports
from reprospec.plan.wrappers import program_words

RECORD_IMPORTS_VAR = "REPROSPEC_RECORD_IMPORTS"
# The editable installs capture's verify hides from the runs of a copy of the spec (the
# stackdump sitecustomize reads it: `{"roots": [...], "modules": [...]}`).
HIDE_INSTALLS_VAR = "REPROSPEC_HIDE_INSTALLS"


# The variables that matter for these incidents, when set (the harness's envinfo list
# and the thread-count knobs of the math libraries).
ENV_PREFIXES = (
    "CUDA_",
    "CUDNN_",
    "CUBLAS_",
    "NCCL_",
    "TORCH_",
    "PYTORCH_",
    "OMP_",
    "MKL_",
    "KMP_",
    "OPENBLAS_",
    "NVIDIA_",
    "TOKENIZERS_",
    "HF_",
    "TRANSFORMERS_",
    "PYTHON",
)
# The interpreter's own knobs (PYTHONUNBUFFERED, PYTHONDONTWRITEBYTECODE, ...): relevant only
# where the command runs Python, or may. A C program's spec carried the shell's
# PYTHONDONTWRITEBYTECODE and PYTHONUNBUFFERED, written "not tested by a rerun without it"
# (the verify does not test these, verify.py `relevant`), where no interpreter read them.
INTERPRETER_PREFIX = "PYTHON"


# The comments of a relevant variable of the shell (ENV_PREFIXES) in the spec: as written
# before the verify tests it (and where it cannot: a pass, a failure that did not come back;
# it read "not shown needed", which a reader took for "shown not needed" of OMP_NUM_THREADS,
# the whole cause of a hang), and as the verify found it.
RELEVANT_UNTESTED = "your shell set it; not tested by a rerun without it"
RELEVANT_NOT_NEEDED = "your shell set it; the failure came back without it"
RELEVANT_UNTOLD = "your shell set it; reruns could not tell if it is needed"

# PYTHON* variables that describe this machine's layout, not the program's behaviour.
ENV_SKIPPED = frozenset(
    {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX"}
)
# Of those, the ones the verify keeps as this machine's own. Not PYTHONPATH: it is not
# written into the spec, so a verify that kept it said `reproduced` of
# `PYTHONPATH=src python -m pkg`, whose spec fails anywhere else with "No module named
# pkg"; left out, the verify finds it needed and writes it (environment.env) as the shell
# set it, as for any other variable.
VERIFY_KEEPS = ENV_SKIPPED - {"PYTHONPATH"}


# Variables that describe this machine and this session, not the program: the verify
# keeps them (a program needs PATH and HOME to start at all). Every other variable set in
# the capturing shell that the spec does not carry is left out of the verify, so that it
# checks the spec as someone else's shell would run it (`shell_only`).
MACHINE_VARIABLES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "TERM",
        "COLORTERM", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP", "TEMP", "HOSTNAME", "HOSTTYPE",
        "OSTYPE", "MACHTYPE", "MAIL", "DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "PS1", "PS2",
        "PS4", "PROMPT_COMMAND", "LS_COLORS", "EDITOR", "VISUAL", "PAGER", "MANPATH",
        "INFOPATH", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "CI", "VIRTUAL_ENV",
        "VIRTUAL_ENV_PROMPT", "LD_LIBRARY_PATH", "LD_PRELOAD", "LIBRARY_PATH", "CPATH",
        "PKG_CONFIG_PATH", "JAVA_HOME", "GOPATH", "CARGO_HOME", "RUSTUP_HOME", "container",
        "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
        "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE", "MOTD_SHOWN", "SYSTEMD_EXEC_PID", "INVOCATION_ID", "JOURNAL_STREAM",
        "HISTFILE", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL", "DEBIAN_FRONTEND", "TMUX",
        "TMUX_PANE", "STY", "WINDOW", "TERMINFO", "GPG_TTY", "KRB5CCNAME", "ZDOTDIR",
        "MODULEPATH", "MODULESHOME", "LOADEDMODULES", "_LMFILES_", "WSLENV", "WSL_DISTRO_NAME",
    }
)  # fmt: skip
MACHINE_PREFIXES = (
    "LC_", "XDG_", "SSH_", "DBUS_", "TERM_", "LESS", "CONDA_", "GITHUB_", "RUNNER_", "SUDO_",
    "KUBERNETES_", "SLURM_", "PIP_", "UV_", "GIT_", "PYENV", "NVM_", "BASH_FUNC_", "VSCODE_",
    "REPROSPEC", "LMOD_", "__LMOD", "MAMBA_", "HOMEBREW_", "P9K_", "STARSHIP_", "ITERM_",
    "KITTY_", "WT_",
)  # fmt: skip


def shell_only(environ: Mapping[str, str], carried: Iterable[str]) -> tuple[str, ...]:
    """The variables set here that the spec does not carry and that are not this machine's
    own (`MACHINE_VARIABLES`): what a rerun elsewhere would not have. Sorted."""
    kept = set(carried)
    return tuple(
        sorted(
            name
            for name in environ
            if name not in kept
            and name not in MACHINE_VARIABLES
            and name not in VERIFY_KEEPS
            and not name.startswith(MACHINE_PREFIXES)
        )
    )


# Distributions the engine itself puts in every Python child: never the program's.


def local_files(
    modules: Iterable[str], workdir: Path, script_dir: Path, searched: Iterable[Path] = ()
) -> tuple[str, ...]:
    """The workdir's Python files behind `modules` (dotted names), as the child resolved them:
    in the folders of its `sys.path` inside the workdir (`searched`, in its order: `src/`
    of PYTHONPATH=src), then the script's folder, then the workdir; relative to the
    workdir, sorted."""
    found: set[str] = set()
    inside = [p for p in searched if p.is_relative_to(workdir)]
    roots = list(dict.fromkeys([*inside, script_dir, workdir]))
    for name in modules:
        parts = name.split(".")
        if not all(part.isidentifier() for part in parts):
            continue
        for root in roots:
            hits = _module_paths(root, parts)
            if hits:
                for hit in hits:
                    if hit.resolve().is_relative_to(workdir):
                        found.add(hit.resolve().relative_to(workdir).as_posix())
                break
    return tuple(sorted(found))


def _module_paths(root: Path, parts: list[str]) -> list[Path]:
    """`a.b` under `root`: `a/__init__.py` and `a/b.py` (or `a/b/__init__.py`)."""
    paths: list[Path] = []
    folder = root
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        module, package = folder / f"{part}.py", folder / part / "__init__.py"
        if last and module.is_file():
            paths.append(module)
            return paths
        if package.is_file():
            paths.append(package)
            folder = folder / part
            continue
        if (folder / part).is_dir() and not last:
            folder = folder / part  # a namespace package
            continue
        return [] if index == 0 else paths
    return paths


@frozen
class LocalInstall:
    """A distribution behind the program's imports that was installed from a folder of this
    machine (PEP 610's direct_url.json), which no index has: `pip install -e .` of the
    user's own project (`editable`), `pip install ./proj`. `roots`: the folders an
    editable one serves the imported modules from (`/src/proj/src`)."""

    name: str
    version: str
    path: str
    editable: bool = False
    roots: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()  # the top-level modules it serves the program

    def carried_roots(self, workdir: Path) -> tuple[str, ...] | None:
        """`roots` relative to `workdir` (`src`, `.`), when this is an editable install
        whose modules all lie in the workdir, which a spec carries; else None."""
        if not self.editable or not self.roots:
            return None
        inside = [Path(r).resolve() for r in self.roots]
        if not all(r.is_relative_to(workdir) for r in inside):
            return None
        return tuple(r.relative_to(workdir).as_posix() or "." for r in inside)


@frozen
class Pins:
    """The interpreter's version (`3.11`) and `name==version` of the distributions behind
    the program's imports; `local`, those installed from this machine (not pinned);
    `error`: why they could not be read (no packages are written then, rather than
    another interpreter's)."""

    python: str
    packages: tuple[str, ...] = ()
    error: str = ""
    local: tuple[LocalInstall, ...] = ()
    # Of `packages`: the pin of the program the command runs (pytest's, always pinned
    # though a plugin requires it), and the plugins it loaded through entry points
    # (pytest-xdist), which capture says as such, not as packages the program imported.
    program: str = ""
    plugins: tuple[str, ...] = ()
    # Of `packages`: those the program's own code imports (`program_imports`), the rest its
    # libraries' and plugins' (hypothesis's `typing_extensions`); None where its sources
    # could not tell (then every one is said as the program's, as before).
    direct: tuple[str, ...] | None = None

    def imported(self) -> tuple[str, ...]:
        """`packages` but the program's and its plugins', and but those only its libraries
        imported: what the program imported."""
        return tuple(p for p in self._others() if self.direct is None or p in self.direct)

    def pulled_in(self) -> tuple[str, ...]:
        """`packages` its libraries and plugins imported, the program's own code not: still
        pinned, as they ran (an optional import of a library's, pandas' pyarrow, which no
        requirement installs with it, is what a rerun needs), but not said as its own."""
        if self.direct is None:
            return ()
        return tuple(p for p in self._others() if p not in self.direct)

    def _others(self) -> tuple[str, ...]:
        return tuple(p for p in self.packages if p != self.program and p not in self.plugins)


def pins(
    modules: Iterable[str],
    python: str,
    argv: Sequence[str] = (),
    direct: Collection[str] | None = None,
) -> Pins:
    """The distributions behind `modules`, read by `reprospec_harness.pins` in `python`,
    the interpreter that ran the program: the engine's own versions were written for a
    command another interpreter ran, and the packages only that one had were left out.
    A child, as every reading of an interpreter (the engine never imports the harness).
    `argv`, the command: the distribution of the program it runs is always pinned.
    `direct`: the top-level modules the program's own code imports (`program_imports`),
    whose distributions are `Pins.direct`; None where not known."""
    from reprospec.core import capped
    from reprospec.harness import HARNESS_ROOT

    env = {**os.environ, "PYTHONPATH": str(HARNESS_ROOT)}
    told = [] if direct is None else ["--direct", ",".join(sorted(direct))]
    argv = [
        python,
        "-m",
        "reprospec_harness.pins",
        *_program_words(argv),
        *told,
        *sorted(set(modules)),
    ]
    try:
        done = capped.run(argv, limit=1 << 20, timeout_s=PINS_TIMEOUT_S, env=env)
        found = json.loads(done.stdout.decode("utf-8", "replace"))
        local = tuple(
            LocalInstall(
                str(item["name"]),
                str(item["version"]),
                str(item["path"]),
                item["editable"] is True,
                tuple(str(r) for r in item["roots"]),
                tuple(str(m) for m in item.get("modules", ())),
            )
            for item in found.get("local", ())
        )
        return Pins(
            str(found["python"]),
            tuple(str(p) for p in found["pins"]),
            local=local,
            program=str(found.get("program", "")),
            plugins=tuple(str(p) for p in found.get("plugins", ())),
            direct=(
                tuple(str(p) for p in found["direct"])
                if isinstance(found.get("direct"), list)
                else None
            ),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"{python} did not run ({exc})" if isinstance(exc, OSError) else ""
        return Pins("", error=why or f"{python} could not read them")


def _program_words(argv: Sequence[str]) -> list[str]:
    """The harness's words naming the program `argv` runs, past its leading variables and
    wrappers (`timeout 60`): `--module pkg` for `python -m pkg`, `--program pytest` for a
    console script (the harness finds whose); none for a script or `-c` code."""
    words = program_words(argv)
    if not words:
        return []
    if not is_python(words[0]):
        return ["--program", Path(words[0]).name]
    found = python_program(words[1:])
    return ["--module", found.target] if found.kind == "module" and found.target else []


# Reading the metadata of an environment takes well under a second.
PINS_TIMEOUT_S = 60.0


def local_note(install: LocalInstall, workdir: Path) -> str:
    """What the spec and capture say of a distribution installed from this machine, which
    is in no `packages` (no index has it: `mypkg==0.1.0` made every venv and docker build
    of the spec fail)."""
    what = f"{install.name} {install.version}"
    path = Path(install.path).resolve()
    shown = path.relative_to(workdir).as_posix() or "." if path.is_relative_to(workdir) else path
    roots = install.carried_roots(workdir)
    if roots is not None:
        return (
            f"{what} is your editable install of {shown} (pip install -e), which no index "
            f"has: not in packages; the spec imports it from its files in the workdir "
            f"(environment.env PYTHONPATH: {os.pathsep.join(roots)}), which `files` lists"
        )
    if install.editable:
        return (
            f"{what} is your editable install of {shown}, outside the workdir, which no "
            "index has and no bundle carries: not in packages; a reader installs their own "
            "checkout of it (pip install -e)"
        )
    return (
        f"{what} was installed from {shown}, a folder of this machine, which no index has: "
        "not in packages; a reader installs it from their own copy"
    )


def with_import_roots(
    lines: tuple[EnvLine, ...], installs: Iterable[LocalInstall], workdir: Path
) -> tuple[EnvLine, ...]:
    """`environment.env` with PYTHONPATH leading with the workdir's folders that editable
    installs of its project serve their modules from (`src`): the spec's runs import the
    project's files where it runs (a copy, a bundle, a reader's checkout), never the
    editable install of the machine it was captured on, which a spec cannot install."""
    roots: dict[str, None] = {}
    names: list[str] = []
    for install in installs:
        carried = install.carried_roots(workdir)
        if carried is not None:
            roots.update(dict.fromkeys(carried))
            names.append(install.name)
    if not roots:
        return lines
    comment = f"{', '.join(names)}: your editable install's modules, from the workdir"
    given = next((line for line in lines if line.name == "PYTHONPATH" and not line.commented), None)
    theirs = str(given.value).split(os.pathsep) if given is not None and given.value else []
    # `theirs` is the line's value as written, a literal `${{` already escaped (`literal_text`).
    value = os.pathsep.join(dict.fromkeys([*map(literal_text, roots), *theirs]))
    line = EnvLine("PYTHONPATH", value, comment + (f"; {given.comment}" if given else ""))
    kept = [other for other in lines if other is not given]
    return (line, *kept)


def environment_lines(
    environ: Mapping[str, str], proposal: Proposal, uses_torch: bool, *, python: bool = True
) -> tuple[EnvLine, ...]:
    """`environment.env`: the command's own `VAR=value` words, then the relevant variables
    set here; a secret-looking one is read back through `${{ env.X }}`, never written.
    `python`: whether the command runs Python, or may; where it does not, the interpreter's
    variables (INTERPRETER_PREFIX) are the shell's like any other, which the verify leaves
    out and narrowing writes only where the failure needs them."""
    lines: dict[str, EnvLine] = {}
    for name, value in proposal.env:
        # The command's own words, judged as it judged them (`Proposal.secrets`): a plain
        # `MAX_TOKENS=2048` is written, not read back from the reader's environment.
        lines[name] = (
            _read_back(name)
            if name in proposal.secrets
            else EnvLine(name, literal_text(value), "set on the command line")
        )
    for name in sorted(environ):
        if name in lines or name in ENV_SKIPPED or name.startswith("REPROSPEC"):
            continue
        if name.startswith(ENV_PREFIXES) and (python or not name.startswith(INTERPRETER_PREFIX)):
            # Said, as a variable the failure needs is: a reader took `OPENBLAS_CORETYPE:
            # Haswell` for a setting the failure was shown to need. The verify tests it where
            # the failure came back (verify.py `_relevant`) and says what it found.
            lines[name] = _env_line(name, environ[name], RELEVANT_UNTESTED)
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        locale = environ.get(name, "")
        if name not in lines and locale and not _UTF8.search(locale):
            # The verify keeps the locale as this machine's own, so a failure that needs a
            # non-UTF-8 one verified here and passed in a reader's UTF-8 shell: written.
            lines[name] = EnvLine(
                name, literal_text(locale), "your shell's locale, not UTF-8: kept"
            )
    if uses_torch and "CUDA_LAUNCH_BLOCKING" not in lines:
        lines["CUDA_LAUNCH_BLOCKING"] = EnvLine(
            "CUDA_LAUNCH_BLOCKING",
            "1",
            "on a GPU: kernels run one at a time, a CUDA error names the op that failed",
            commented=True,
        )
    return tuple(lines.values())


_UTF8 = re.compile(r"utf-?8", re.IGNORECASE)


def reaching(lines: Iterable[EnvLine], proposal: Proposal) -> tuple[EnvLine, ...]:
    """`environment.env`'s lines that reach the program past `env` with options of its own
    (`Proposal.reaches`): under `env -i` only what the command reads back (`"$HF_TOKEN"`),
    under `env -u NAME` all but NAME. A line it wipes set nothing: the spec said the program
    had `PYTHONUNBUFFERED=1` where it had an empty environment."""
    return tuple(line for line in lines if proposal.reaches(line.name))


# The engine's own variables of a child (process/childprotocol.child_env) that `env -u` can
# take, and what goes with each.
_ENGINE_VARIABLES = {
    "PYTHONPATH": "its stack-dump sitecustomize (a crash's or a hang's Python stacks, the "
    "record of what it imported and read)",
    "TMPDIR": "the attempt's private TMPDIR",
    "XDG_CACHE_HOME": "the attempt's private cache folder",
    "CUDA_VISIBLE_DEVICES": "a GPU slot's CUDA_VISIBLE_DEVICES",
}


def wiped_note(proposal: Proposal) -> str | None:
    """What capture says when the command's `env` takes reprospec's own variables from the
    program, in capture's runs and the spec's alike: its forensics are fewer, and where
    they are missing the user should know why."""
    if proposal.env_cleared:
        return (
            "`env -i` empties the program's environment, reprospec's own variables with it, "
            "in capture's runs and the spec's: its stack-dump sitecustomize does not load "
            "(no Python stack of a crash; a hang's only from py-spy, when installed) and "
            "nothing records what it imported or read (environment.packages and files may "
            "lack them: add them by hand); it has no private TMPDIR or cache folder (it "
            "writes in /tmp) and no GPU slot (CUDA_VISIBLE_DEVICES: it sees every GPU); "
            "environment.env holds only what the command reads back"
        )
    lost = [what for name, what in _ENGINE_VARIABLES.items() if name in proposal.env_unset]
    if not lost:
        return None
    names = " ".join(f"-u {n}" for n in _ENGINE_VARIABLES if n in proposal.env_unset)
    return f"`env {names}` takes reprospec's own from the program too: " + "; ".join(lost)


def needed_lines(
    environ: Mapping[str, str],
    names: Iterable[str],
    minimal: bool = True,
    subject: str = "the failure",
) -> tuple[EnvLine, ...]:
    """`environment.env` lines for the variables of this shell the failure needs (the
    verify found it would not come back without any one of them), or, not `minimal`, the
    set it came back with that its reruns did not narrow further: "the failure needs it"
    on each was then false of most (a container's name, CA paths). `subject`: what needs
    them, "the pass" where the command passed and crashed without them."""
    kept = [name for name in names if name in environ]
    comment = needed_comment(minimal, len(kept), subject)
    return tuple(_env_line(name, environ[name], comment) for name in kept)


def needed_comment(minimal: bool, count: int, subject: str = "the failure") -> str:
    """The comment of a variable of the shell the reruns found needed (`minimal`: each one
    left out alone kept the failure away), or one of `count` not narrowed further."""
    if minimal:
        return f"your shell set it: {subject} needs it"
    return f"your shell set it: one or more of these {count} is needed; not narrowed further"


def _env_line(name: str, value: str, comment: str) -> EnvLine:
    """A variable of this shell: a secret-looking one (`holds_secret`) is read back; another
    is written as its value, a `${{` in it escaped (`literal_text`): environment.env's
    values are expanded, and a shell's `PS1='${{ x }}'` failed the spec's validation."""
    if holds_secret(name, value):
        return _read_back(name)
    byte = undecodable_byte(value)
    if byte is not None:
        # A spec is UTF-8 text: written, `\uDC80` made a spec no run could record (an
        # internal UnicodeEncodeError once the capture had run). Read back, it is the same
        # bytes in the reruns, and masked in every output (redact.maskable).
        return EnvLine(
            name,
            f"${{{{ env.{name} }}}}",
            f"your shell's value is not UTF-8 (byte 0x{byte:02x}): read from your environment",
        )
    return EnvLine(name, literal_text(value), comment)


def _read_back(name: str) -> EnvLine:
    return EnvLine(name, f"${{{{ env.{name} }}}}", "read from your environment, never shown")


def hydra_overrides(workdir: Path, since: float) -> tuple[str, ...]:
    """The overrides Hydra wrote to `.hydra/overrides.yaml` during the run (newest), if any."""
    import yaml

    newest: tuple[float, Path] | None = None
    for pattern in (
        "outputs/*/*/.hydra/overrides.yaml",
        "multirun/*/*/*/.hydra/overrides.yaml",
        ".hydra/overrides.yaml",
        "*/.hydra/overrides.yaml",
    ):
        for path in workdir.glob(pattern):
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            if mtime >= since - 1 and (newest is None or mtime > newest[0]):
                newest = (mtime, path)
    if newest is None:
        return ()
    try:
        loaded = yaml.safe_load(newest[1].read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ()
    return tuple(str(item) for item in loaded) if isinstance(loaded, list) else ()


def attempt_output(run_dir: Path, attempt: AttemptResult) -> str:
    folder = run_dir / attempt.logs
    texts = []
    for name in ("stdout.log", "stderr.log"):
        try:
            texts.append((folder / name).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(texts)


def recorded(run_dir: Path, attempts: Iterable[AttemptResult], prefix: str) -> tuple[str, ...]:
    """The lines the attempts' processes wrote to PREFIX-<pid>.txt (the stackdump
    sitecustomize's, one write a line), each once, in the order first written."""
    lines: dict[str, None] = {}
    for attempt in attempts:
        for path in sorted((run_dir / attempt.logs).glob(f"{prefix}-*.txt")):
            try:
                # newline="": universal newlines would make a name's \r a "\n".
                with path.open(encoding="utf-8", errors="replace", newline="") as file:
                    text = file.read()
            except OSError:
                continue
            # Split at "\n" alone: the one separator the writer puts between records, where
            # splitlines() also cut a name at \r, \x0c or U+2028 (valid in a file name).
            lines.update(dict.fromkeys(text.split("\n")))
    lines.pop("", None)
    return tuple(lines)


def opened(run_dir: Path, attempts: Iterable[AttemptResult]) -> tuple[str, ...]:
    """The paths the attempts' processes opened for reading (opened-<pid>.txt), each once.
    The sitecustomize escapes a newline in a name and the backslash: read as two lines,
    `new\\nline.txt` the program had read was not in the spec's `files`, and the verify
    in a copy failed with FileNotFoundError, said as a file capture never saw read."""
    return tuple(
        dict.fromkeys(
            _ESCAPED.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), line)
            for line in recorded(run_dir, attempts, "opened")
        )
    )


_ESCAPED = re.compile(r"\\(.)")


def imported(run_dir: Path, attempts: Iterable[AttemptResult]) -> tuple[str, ...]:
    """The modules the attempts' processes looked for (imports-<pid>.txt), found or not."""
    return recorded(run_dir, attempts, "imports")


def installed_modules(
    run_dir: Path, attempts: Iterable[AttemptResult], workdir: Path
) -> tuple[str, ...]:
    """The modules outside `workdir` whose code the attempts' processes ran (`loaded`),
    named by the folder of their `sys.path` (`searched`) they lie in, the deepest that
    makes a module's name: `imported` misses those importlib.import_module loads, which
    raises no `import` event. pytest loads its entry-point plugins so: hypothesis's
    `_hypothesis_pytestplugin`, which no import recorded, so hypothesis (its plugin's own
    import) was said as a package the program imported, not as a plugin. The
    workdir's own modules are read from its files (datafiles.py), not named here."""
    workdir = workdir.resolve()
    roots = sorted(searched(run_dir, attempts), key=lambda p: len(p.parts), reverse=True)
    names: dict[str, None] = {}
    for file in loaded(run_dir, attempts):
        if file.is_relative_to(workdir):
            continue
        for root in roots:
            if not file.is_relative_to(root):
                continue
            parts = list(file.relative_to(root).with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            if parts and all(part.isidentifier() for part in parts):
                names[".".join(parts)] = None
                break
    return tuple(names)


def loaded(run_dir: Path, attempts: Iterable[AttemptResult]) -> tuple[Path, ...]:
    """The Python files whose code the attempts' processes ran as a module (one
    `loaded-<pid>.txt` each, written by the child as each module's body begins),
    resolved, in the order first run: what they imported, where `imported` is also what
    they looked for and never found.

    Code an in-memory loader made has a name in angle brackets for its file, no file
    (torch's `<_remote_module_non_scriptable>.py`, compiled from a template as `import
    torch` runs): the child wrote it made absolute, in its workdir, and capture listed it
    in the spec's `files`, a spec that failed its own validation."""
    lines = recorded(run_dir, attempts, "loaded")
    files = (Path(line).resolve() for line in lines if not Path(line).name.startswith("<"))
    return tuple(dict.fromkeys(files))


def searched(run_dir: Path, attempts: Iterable[AttemptResult]) -> tuple[Path, ...]:
    """The folders the attempts' processes looked for modules in (their `sys.path`, one
    `syspath-<pid>.txt` each, written by the child as an entry first appears), in order."""
    folders = (Path(line).resolve() for line in recorded(run_dir, attempts, "syspath"))
    return tuple(dict.fromkeys(folders))


# Why `environment.packages` is left out where the program ran another interpreter than
# the one capture reads its versions from (foreign_packages).
ANOTHER_INTERPRETER = (
    "its Python ran with the packages of {folder}, not of the interpreter capture reads "
    "versions from: pass that environment's python as --python"
)


def foreign_packages(searched: Iterable[Path], own: Iterable[Path]) -> Path | None:
    """The first installed-packages folder the attempts' processes searched (`searched`),
    where none of them searched one of `own`, the folders of the interpreter whose
    packages capture pins; else None. A shell script that activated another environment
    (`source .venv/bin/activate; python check.py`) ran its Python there, and the
    engine's own versions were pinned for it (`packaging==26.4` where 26.2 raised) and
    the packages only that one had (numpy) left out. A process with no such folder on
    its path (`python -S`) tells nothing either way."""
    own = {Path(folder).resolve() for folder in own}
    found = [f for f in searched if f.name in ("site-packages", "dist-packages")]
    if not found or any(f.resolve() in own for f in found):
        return None
    return found[0]


def scripts(run_dir: Path, attempts: Iterable[AttemptResult], workdir: Path) -> tuple[str, ...]:
    """The workdir's Python scripts the attempts' processes ran as their main program (one
    `main-<pid>.txt` each, written by the child as it starts importing), relative to the
    workdir, sorted: `sh run.sh` running `python app.py` imports no app.py, yet needs it."""
    found: set[str] = set()
    for attempt in attempts:
        for path in (run_dir / attempt.logs).glob("main-*.txt"):
            try:
                script = Path(path.read_text(encoding="utf-8", errors="replace").strip())
            except OSError:
                continue
            if script.suffix == ".py" and script.resolve().is_relative_to(workdir):
                found.add(script.resolve().relative_to(workdir).as_posix())
    return tuple(sorted(found))


def program_imports(
    run_dir: Path, attempts: Iterable[AttemptResult], workdir: Path, argv: Sequence[str]
) -> frozenset[str] | None:
    """The top-level modules the program's own code imports, read from its sources with
    the one reader of imports (plan.pyimports): the workdir's Python files whose code ran
    (its script, test modules, conftest.py, its own modules; not an installed package's,
    a virtualenv's in the workdir), each process's main script, and the command's `-c`
    code. A module any process looked for counts only where one of them imports it: the
    record of imports holds what a plugin or a library imported too (hypothesis's
    `typing_extensions`, said as the program's). Read from the sources, not from
    which import loaded it first, since a module a plugin loaded first is one the test's
    own `import` finds loaded, and it is still the program's.

    None where its sources cannot tell: one could not be read, or imports by a run-time
    name (`importlib.import_module`), or a process ran Python no file holds (stdin,
    multiprocessing's spawn, pytest-xdist's workers) but the command's own `-c` code."""
    workdir = workdir.resolve()
    sources = [
        file
        for file in loaded(run_dir, attempts)
        if file.suffix == ".py"
        and file.is_relative_to(workdir)
        and not _SITE_FOLDERS.intersection(file.relative_to(workdir).parts)
    ]
    unread = False  # a process whose code is in no file: its `-c` code, or not known
    for attempt in attempts:
        folder = run_dir / attempt.logs
        mains = {path.name.removeprefix("main-") for path in folder.glob("main-*.txt")}
        for path in sorted(folder.glob("imports-*.txt")):
            name = path.name.removeprefix("imports-")
            if name not in mains:
                unread = True
                continue
            try:
                script = Path((folder / f"main-{name}").read_text(errors="replace").strip())
            except OSError:
                return None
            sources.append(script.resolve())
    tops: set[str] = set()
    code = _command_code(argv)
    if unread:
        if code is None:
            return None
        read = parse_imports(code)
        if read is None or read.dynamic:
            return None
        tops |= read.top
    for file in dict.fromkeys(sources):
        read = read_imports(file)
        if read is None or read.dynamic:
            return None
        tops |= read.top
    return frozenset(tops)


# The folders installed packages lie in: a virtualenv inside the workdir is no program.
_SITE_FOLDERS = frozenset({"site-packages", "dist-packages"})


def _command_code(argv: Sequence[str]) -> str | None:
    """The `-c` code of the command, where its program (past its wrappers) is Python run
    with `-c` (`python -u -c CODE`, `python -uc CODE`); None otherwise."""
    words = program_words(argv)
    if not words or not is_python(words[0]):
        return None
    found = python_program(words[1:])
    return found.target if found.kind == "code" else None


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')


def hung_import(stack: str | None, workdir: Path) -> str | None:
    """The module a hung process was importing, from its stack (`plugin.py:9`), or None.

    A module's body runs as a `<module>` frame called by importlib's
    `_call_with_frames_removed`; the innermost such frame is the import that hung.
    """
    frames = [m for m in map(_FRAME.match, (stack or "").split("\n")) if m]
    for inner, outer in itertools.pairwise(frames):
        if inner["function"] == "<module>" and outer["function"] == "_call_with_frames_removed":
            return imported_module(inner["file"], int(inner["line"]), workdir)
    return None


def imported_module(file: str, line: int | None, workdir: Path | None) -> str:
    """How a hang's title names the module it was importing, a live capture's
    (`hung_import`) and a ticket's (capture/fromlog.py) alike: a library's or the
    interpreter's module by its path in its packages' or lib folder (`wandb/__init__.py`,
    `json/__init__.py`: `LIBRARY_CODE`), else one under `workdir` by its path there, else
    an absolute path by its file's name (a ticket's sender's `/home/u/proj/mymod.py` is no
    one else's path), a package's init by its package's too (`mypkg/__init__.py`: a package
    on PYTHONPATH, a ticket's sender's, a Windows interpreter's `Lib/json`), a relative one
    as the stack wrote it; `:LINE` where it is known.
    The ticket's title kept the sender's absolute paths, a live one named a package's module
    by its file's name alone (`__init__.py:40`) (review)."""
    # A Windows path's backslashes (not faulthandler's escapes, `w\udc80x.py`).
    path = file.replace("\\", "/") if re.match(rf"{DRIVE}\\", file) else file
    # After the last library folder: a venv's `lib/python3.10/site-packages/` is two, the
    # second starting at the first's closing slash.
    cut, start = None, 0
    while (found := LIBRARY_CODE_RE.search(path, start)) is not None:
        cut, start = found.end(), found.end() - 1
    if cut is not None:
        shown = path[cut:]
    elif ABSOLUTE_PATH.match(path):
        # A package's init by its package (`mypkg/__init__.py`), not `__init__.py` alone.
        parts = path.rsplit("/", 2)
        package = parts[-1] == "__init__.py" and len(parts) > 2 and parts[-2] != ""
        shown = "/".join(parts[-2:]) if package else parts[-1]
        if workdir is not None and path.startswith("/"):
            with contextlib.suppress(ValueError):
                shown = Path(path).resolve().relative_to(workdir).as_posix()
    else:
        shown = path
    # faulthandler's escapes (`w\udc80x.py`) as the report shows them (`w�x.py`).
    shown = unescaped_name(shown)
    return shown if line is None else f"{shown}:{line}"


# A Python frame as faulthandler (`line 8 in work`), gdb's `py-bt` and a traceback (`line 8,
# in work`) print it.
_ANY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<function>\S+)')
# Where a library's or the interpreter's own code lies: not the frame a title names.
_LIBRARY_PATH = re.compile(LIBRARY_CODE + "|^<")


def faulthandler_stack(output: str) -> str | None:
    """The crashed thread's block of the last faulthandler dump in an attempt's output
    (`Current thread 0x... (most recent call first):` and its frames; a one-thread dump's
    `Stack (most recent call first):`), for `crash_frame`: a main process's crash has no
    `AttemptResult.stack`, and its dump lists the other threads first (pytest enables
    faulthandler: a test's segfault was titled `tests/test_format.py: SIGSEGV`, where it
    died said nowhere in the spec). None without a dump."""
    start = output.rfind("Fatal Python error:")
    if start < 0:
        return None
    return _crashed_thread(output[start:])


# The header faulthandler gives the block of the thread that took the signal, where it
# dumps every thread (the others are `Thread 0x...`, newest first: an idle worker thread
# started after the main one is listed before it).
_CURRENT_THREAD = re.compile(r"^Current thread 0x[0-9a-fA-F]+ .*\(most recent call first\):$", re.M)


def traceback_stack(output: str, exception: str | None = None) -> str | None:
    """The last Python traceback in an attempt's output that ends in `exception` (the
    outcome's, where it names one), from its `Traceback (most recent call last):` on (of
    chained ones, the exception that ended the process), for `crash_frame`: an error's title
    named no frame (`pkg.run: IndexError`) where a crash's named the one it died in. A
    launcher's own traceback after its child's (torchrun's `ChildFailedError` after a
    rank's `ValueError`) is not the outcome's: the title named torchrun's `<module>
    (torchrun:8)` as where the ValueError was raised. The last of all where none ends in it;
    None without one. Its lines without a rank's tag (`[rank1]:`)."""
    # A rank's lines tagged (torch's `[rank1]: `, torchrun's `--tee`'s `[default1]:`) are
    # read, and returned for crash_frame, as the rank printed them.
    output = RANK_PREFIX.sub("", output)
    # Read without its escapes, as the parser reads it (a colour's reset left before a
    # header began no block: the title lost its frame).
    if "\x1b" in output:
        output = without_escapes(output)
    # Each from its header's line, as the traceback parser reads one (an exception group's
    # `  + Exception Group Traceback`, a DataLoader worker's own `Original Traceback`): the
    # header's words anywhere in a line began a block of their own (an exception's message
    # quoting a child's output), where no traceback began.
    lines = output.split("\n")
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    starts = [offsets[index] for index in traceback_starts(lines)]
    if not starts:
        return None
    if exception is not None:
        wanted = bare_type(exception)
        for at, start in reversed(list(enumerate(starts))):
            block = output[start : starts[at + 1] if at + 1 < len(starts) else len(output)]
            # The block's own exception line, past its frames: a line printed after the
            # traceback (a log's `ValueError ...`) is none of it. Where its frames are not
            # read through (another rank's line among them, on torchrun's shared stderr),
            # an exception line of the block's own is (review).
            raised = exception_after(block.split("\n"), 0)
            if raised is None:
                if any(
                    (line := EXCEPTION_LINE.match(text)) and bare_type(line["type"]) == wanted
                    for text in block.split("\n")
                ):
                    return output[start:]
            elif bare_type(raised.type) == wanted:
                return output[start:]
    return output[starts[-1] :]


def _crashed_thread(dump: str) -> str:
    """A faulthandler dump from its crashed thread's block on (all of it where none is
    marked: one thread's `Stack (most recent call first):`, gdb's py-bt)."""
    current = _CURRENT_THREAD.search(dump)
    return dump[current.start() :] if current else dump


def crash_frame(stack: str | None, workdir: Path) -> str | None:
    """`__getitem__ (data.py:12)`: the frame of the program's own code where the crashed
    process died, from its Python stack (a crash's `AttemptResult.stack`: a worker's or a
    child's own, the thread that took the signal first); None when the stack shows none.

    The innermost frame of the crashed thread's block whose file lies in the workdir, else
    the innermost outside any library and the interpreter's own (`ctypes.string_at`, where
    the fault landed, says nothing of what the program was doing). The block is the
    faulthandler dump's `Current thread` one (the first where none is marked: py-bt lists
    the crashed thread first), or a traceback's (`most recent call last`).
    """
    lines = _crashed_thread(stack or "").split("\n")
    start = next((i for i, line in enumerate(lines) if "(most recent call " in line), -1)
    first = start < 0 or "(most recent call first)" in lines[start]
    frames: list[re.Match[str]] = []
    for line in lines[start + 1 :]:
        found = _ANY_FRAME.match(line)
        if found is not None:
            frames.append(found)
        elif frames and (not line.strip() or "(most recent call " in line):
            break  # the next thread's block, or the traceback's end
    ordered = frames if first else frames[::-1]
    own = [f for f in ordered if _own_code(f["file"], workdir)]
    candidates = own or [f for f in ordered if not _LIBRARY_PATH.search(f["file"])]
    if not candidates:
        return None
    chosen = candidates[0]
    return frame_name(chosen["function"], chosen["file"], chosen["line"], workdir)


@frozen
class NativePlace:
    """Where a failure with no Python frame was (`native_frame`): its frame (`main@seg`),
    and where that is another program's than the command's own, that process as its core
    or its live stacks name it (`./seg`): a crash's under `sh -c './seg; exit $?'` (the
    shell's child), a hang's under a launcher (`make`, a C parent reading `./nap`'s
    output); "" where it is the command's own program."""

    frame: str
    process: str = ""


def native_frame(
    run_dir: Path, attempts: Iterable[AttemptResult], argv: Sequence[str]
) -> NativePlace | None:
    """Where a failure with no Python frame to name it was, of the first of `attempts` that
    names one, by the engine's rule: a crash's, the frame its signature gained from the
    crashed process's core (`main@seg`: `native.signature_frame`, read again from its
    native-stacks.json), with that process where it is not the program `argv` runs (a
    shell's child: `sh: SIGSEGV in main@seg` read as if sh crashed); a hang's, where its
    live processes sat, as the run's outcome keeps it (`clock_nanosleep@libc<-main@nap`:
    `Outcome.hung_native`), with its process by the same rule (`native.hung_process`: a
    launcher's child). A C program's were titled `./seg: SIGSEGV` and `./nap: hang`,
    though its signature said `main@seg` and its stacks showed `nanosleep` in `main`."""
    for attempt in attempts:
        ran = attempt.ran
        if ran is not None and ran.kind == "hang" and ran.hung_native is not None:
            # Its process as for a crash: a launcher's child (`make` running `./nap`) was
            # titled `make: hang in clock_nanosleep@libc<-main@nap`, as if make slept.
            stacks = native.read(run_dir / attempt.logs)
            hung = native.hung_process(stacks) if stacks is not None else None
            if stacks is None or native.hung_frame(stacks) != ran.hung_native:
                hung = None  # not the stacks the outcome was placed by
            return NativePlace(ran.hung_native, _other_program(hung, argv))
        if ran is None or ran.kind != "crash":
            continue
        stacks = native.read(run_dir / attempt.logs)
        if stacks is not None and (frame := native.signature_frame(stacks, ran.crashed_pid)):
            process = native.crashed_process(stacks, ran.crashed_pid)
            return NativePlace(frame, _other_program(process, argv))
    return None


def _other_program(process: native.ProcessStacks | None, argv: Sequence[str]) -> str:
    """`process`'s command line where it is another program's than the one `argv` runs (a
    shell's or a launcher's child), else ""."""
    command = process.command.strip() if process is not None else ""
    own = not command or _same_program(command.split()[0], argv)
    return "" if own else command


def _same_program(program: str, argv: Sequence[str]) -> bool:
    """Whether `program` (a core's first word) is the one `argv` runs, past its wrappers:
    by file name (`./seg`, `/w/seg`), any two Pythons alike (`python` ran `python3.11`)."""
    words = program_words(argv) or list(argv)
    if not words:
        return True
    ours, theirs = Path(words[0]).name, Path(program).name
    return ours == theirs or (is_python(ours) and is_python(theirs))


def frame_name(function: str, file: str, line: int | str, workdir: Path) -> str:
    """`__getitem__ (data/set.py:12)`: a frame as a spec names it, by its path from the
    workdir, else by its file's name (the capturer's folders stay out of a spec to send).
    A dump's escapes of what is not ASCII (faulthandler's `w\udc80x.py`, a traceback's
    under backslashreplace) read as the report shows text: `w�x.py`."""
    path = Path(file)
    shown = path.resolve().relative_to(workdir).as_posix() if _inside(file, workdir) else path.name
    return f"{unescaped_name(function)} ({unescaped_name(shown)}:{line})"


def _inside(file: str, workdir: Path) -> bool:
    return file.startswith("/") and Path(file).resolve().is_relative_to(workdir)


def _own_code(file: str, workdir: Path) -> bool:
    """Whether `file` is the workdir's own code: inside it, and not a library installed in
    an environment there (`.venv/lib/python3.11/site-packages/packaging/version.py` named
    the title's frame, `InvalidVersion in __init__`, where app.py's call was the place).
    The path is read from the workdir down: a workdir that itself lies in a `lib/python3.11`
    folder keeps its code; and only where an environment's root lies between (a venv's
    `pyvenv.cfg`, a conda env's `conda-meta`): a project's own `lib/python3.11/myapp/core.py`,
    put on sys.path by hand, is its code."""
    if not _inside(file, workdir):
        return False
    path = Path(file).resolve()
    below = path.relative_to(workdir).as_posix()
    if _LIBRARY_PATH.search("/" + below) is None:
        return True
    folder = path.parent
    while folder != workdir and workdir in folder.parents:
        if (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir():
            return False
        folder = folder.parent
    return True
