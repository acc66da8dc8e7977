"""The machine a ticket describes: `collect_env` output, `pip freeze`, `conda list`.

PyTorch's issue template asks for `python -m torch.utils.collect_env`, whose
output is `Key: value` lines (`PyTorch version: 2.1.0+cu121`, `CUDA used to
build PyTorch: 12.1`, `GPU models and configuration:` followed by `GPU 0: ...`
lines, `cuDNN version:` followed by library paths) and, under "Versions of
relevant libraries", `[pip3] numpy==1.26.2` and `[conda] numpy 1.26.2 ...`
lines. People also paste a bare `pip freeze` or a `conda list` table, or an issue
template's `- Python version: 3.10.12` list. All of it is read line by line and
loosely: a pasted ticket is reflowed, indented, quoted (`> `), made a list (`- `).
"""

from __future__ import annotations

import re

from reprospec.core.frozen import frozen
from reprospec.core.pythonargs import DRIVE
from reprospec.core.requirements import normalize

_KEY_VALUE = re.compile(r"^\s*(?P<key>[A-Za-z][\w ./()?-]*?):[ \t]*(?P<value>.*?)\s*$")
# What Markdown puts before a line of a pasted block: a quote (`> `, GitHub's "Quote reply")
# and a list item (`- Python version: 3.10.12`, as `transformers-cli env` and most issue
# templates write their environment), any number of them; and the emphasis around a key
# (`**OS**: Ubuntu`, ``- `transformers` version: 4.36.2``).
_MARKDOWN_LEAD = re.compile(r"^\s*(?:>\s?|[-*+]\s+)+")
_MARKDOWN_EMPHASIS = re.compile(r"\*\*|`")
_GPU_LINE = re.compile(r"^\s*GPU (?P<index>\d+): (?P<model>.+?)\s*$")
_CUDNN_LIB = re.compile(r"libcudnn\.so\.(?P<version>\d+\.\d+\.\d+)")
_PIP_TAGGED = re.compile(
    r"^\s*\[(?:pip\d?)\]\s+(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>\S+)\s*$"
)
_CONDA_TAGGED = re.compile(
    r"^\s*\[conda\]\s+(?P<name>[A-Za-z0-9_][A-Za-z0-9._-]*)\s+(?P<version>\d\S*)"
    r"(?:\s+(?P<build>\S+))?(?:\s+\S+)*\s*$"
)
_FREEZE = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[\w.+!-]+)\s*$")
# pip freeze's line for a wheel installed from a URL (PyTorch's own index pages, a CI's
# artifact): `torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp311-...whl`.
# The version is the wheel's file name's; a URL to anything else (git+, a tarball) says none.
_DIRECT_WHEEL = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*@\s*\S*/(?P<file>[^/\s]+\.whl)(?:#\S*)?\s*$"
)
# pip freeze's line of an editable install: `-e git+https://github.com/bob/proj.git@abc#egg=proj`,
# `-e /home/bob/proj` (no index has either).
_FREEZE_EDITABLE = re.compile(r"^\s*-e\s+(?P<url>[^#\s]+)(?:#egg=(?P<name>[\w.-]+))?\S*\s*$")
# `pip list`'s table: `Package  Version` (then `-v`'s `Location  Installer`, an editable
# install's `Editable project location`), a rule of dashes, a row per distribution.
_PIP_LIST_HEADER = re.compile(r"^\s*Package\s+Version(?:\s+\S.*?)?\s*$")
_PIP_LIST_RULE = re.compile(r"^\s*-{3,}(?:\s+-{3,})+\s*$")
_PIP_LIST_ROW = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s+(?P<version>\d[\w.+!-]*)(?:\s+(?P<more>\S.*?))?\s*$"
)
_CONDA_HEADER = re.compile(r"^\s*# packages in environment at ")
# A row's name may start with `_` (`_libgcc_mutex`, `_openmp_mutex`: the first rows of most
# Linux environments), which ended the table before any package was read.
_CONDA_ROW = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9_][A-Za-z0-9._-]*)\s+(?P<version>\d[\w.+!-]*)\s+(?P<build>\S+)"
    r"(?:\s+\S+)?\s*$"
)
# conda's names of distributions pip knows by another (the pytorch channel's packages).
_CONDA_NAMES = {"pytorch": "torch", "torchtriton": "triton"}
_PYTHON_VERSION = re.compile(r"(?P<version>3\.\d+)(?:\.\d+)?")
# Versions said in prose ("torch 2.3.0+cpu, Python 3.10.12") or by pytest's header
# ("platform linux -- Python 3.12.3"), when no collect_env block says them.
_PROSE_TORCH = re.compile(
    r"(?<![\w/.-])(?:torch|pytorch|PyTorch)[ =v:]+(?P<version>\d+\.\d+(?:\.\d+)?(?:\+\w+)?)\b"
)
# Other distributions said in prose ("transformers 4.36.2, numpy 1.26.2"): a name and a
# version, pinned where it is the one version the ticket says of that name and no list has
# it. The names are those tickets of this tool's incidents name (torch's own is above).
_PROSE_LIBRARIES = (
    "accelerate",
    "bitsandbytes",
    "datasets",
    "deepspeed",
    "diffusers",
    "einops",
    "flash-attn",
    "huggingface-hub",
    "lightning",
    "numpy",
    "onnxruntime",
    "opencv-python",
    "pandas",
    "peft",
    "pillow",
    "protobuf",
    "pytorch-lightning",
    "safetensors",
    "scikit-learn",
    "scipy",
    "sentencepiece",
    "timm",
    "tokenizers",
    "torchaudio",
    "torchvision",
    "transformers",
    "triton",
    "vllm",
    # Its `import wandb` that hangs (its service process never ready) is a ticket of its own.
    "wandb",
    "xformers",
)
_PROSE_LIBRARY = re.compile(
    r"(?<![\w/.-])(?P<name>"
    + "|".join(n.replace("-", "[-_]") for n in _PROSE_LIBRARIES)
    + r")[ =v:]+(?P<version>\d+\.\d+(?:\.\d+)?(?:\+\w+)?)\b(?![.-]\d)",
    re.IGNORECASE,
)
# A version said after a library's, in the same sentence, with no name of its own: "worked
# with numpy 1.26, fails with 2.0", "Fails with numpy 2.0.1 but works with 1.26.4", "numpy
# 1.26 -> 2.0". It is the same library's other version, so the ticket says two of it: read as
# one, the pin was the version that worked. A version after a name ("numpy 1.26 and torch
# 2.1", "with Python 3.10") is that name's: the word before it here is a joining one.
_LATER_VERSION = re.compile(
    r"(?:\b(?:with|to|on|in|and|or|but|vs\.?|versus|from|after|before|than|under|until)\s+v?"
    r"|(?:->|=>|→|/)\s*v?)(?P<version>\d+\.\d+(?:\.\d+)?(?:\+\w+)?)\b(?![.-]\d)",
    re.IGNORECASE,
)
# Where a sentence ends: a line's end, or `.`, `!`, `?`, `;` before a space (not a version's dot).
_SENTENCE_END = re.compile(r"\n|[.!?;](?=\s|$)")
# A GPU model said in prose ("one RTX 4090", "8x A100 80GB": 8 of them), where no collect_env
# names one.
_PROSE_GPU = re.compile(
    r"(?:(?<![\w.])(?P<count>[1-9]\d?) ?[x×] ?)?(?<![\w/.-])(?P<model>(?:(?:NVIDIA )?(?:GeForce )?"
    r"(?:RTX ?A?\d{4}(?: ?Ti)?|GTX ?\d{3,4}(?: ?Ti)?"
    r"|A100|A800|H100|H200|H800|B200|GB200|V100|P100|L40S?)"
    # Names short enough to be anything else ("layer L4") only after NVIDIA or Tesla.
    r"|(?:NVIDIA|Tesla) (?:T4|L4|A10G?|A30|A40))"
    r"(?: \d+ ?GB)?)(?![\w/.-])"
)
# The driver said in prose: "driver 535.104.05", "NVIDIA driver version: 535.104".
_PROSE_DRIVER = re.compile(r"\b[Dd]river(?: version)?[ :=v]+(?P<version>\d{3}\.\d+(?:\.\d+)?)\b")
# The OS said in prose: "On Windows 11", "Ubuntu 22.04", "macOS 14.2", where no
# collect_env's `OS:` line says it.
_PROSE_OS = re.compile(
    r"\b(?P<os>(?:Ubuntu|Debian|CentOS|Rocky Linux|RHEL|Fedora|Amazon Linux) \d+(?:\.\d+)*"
    r"(?: LTS)?|Windows (?:10|11|Server \d{4})|macOS \d+(?:\.\d+)*)\b"
)
# torch's local version label names the CUDA it was built with: `2.1.0+cu121` is 12.1.
_TORCH_CUDA_LABEL = re.compile(r"\+cu(?P<major>\d+)(?P<minor>\d)$")
# py-spy's dump says `Python v3.10.13 (/usr/bin/python3.10)`.
_PROSE_PYTHON = re.compile(r"(?<![\w/.-])[Pp]ython v?(?P<version>3\.\d+)(?:\.\d+)?\b")
# GitHub Actions' env dump under a step's `Run` header, as actions/setup-python sets it:
# `pythonLocation: /opt/hostedtoolcache/Python/3.10.14/x64` (`Python_ROOT_DIR` the same).
_GHA_PYTHON = re.compile(
    r"^\s*(?:pythonLocation|Python_ROOT_DIR|Python3_ROOT_DIR): \S*/Python/"
    r"(?P<full>3\.\d+\.\d+)/",
    re.MULTILINE,
)
# A traceback's paths name the interpreter's version: `/lib/python3.11/site-packages/`,
# and the standard library's own frames, `/usr/lib/python3.11/ctypes/__init__.py`; a
# free-threaded build's `lib/python3.13t/` (pythonargs.INTERPRETER_LIB's rule) says 3.13
# too, the build left unsaid: a spec's environment.python is a version alone. PyPy's
# `lib/pypy3.10/` is left out: the version is its language's, and 3.10 is a CPython's.
_PATH_PYTHON = re.compile(r"/lib(?:64)?/python(?P<version>3\.\d+)t?/")
# pytest's header: `platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0` (then, with
# -v, ` -- /usr/bin/python3`) and `plugins: xdist-3.6.1, anyio-4.3.0`, each a distribution
# and its version, a plugin's without the `pytest-` its name starts with.
_PYTEST_PLATFORM = re.compile(r"^\s*platform \S+ -- Python \d\S*, (?P<list>.+?)(?: -- \S+)?\s*$")
_PYTEST_PLUGINS = re.compile(r"^\s*plugins: (?P<list>.+?)\s*$")
_NAME_VERSION = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*?)-(?P<version>\d[\w.+!]*)$")
# Which distribution a plugin of the header is: pytest cuts the `pytest-` of its name
# (`xdist-3.6.1` is pytest-xdist's), so `foo-1.0` is pytest-foo's or foo's; read for the
# plugins known to be one or the other, and a plugin of neither list is left out (a pin of
# the wrong one would fail every attempt as an infra-error, or install another package).
_PREFIXED_PLUGINS = frozenset(
    {
        "asyncio",
        "bdd",
        "benchmark",
        "cov",
        "django",
        "env",
        "forked",
        "html",
        "httpserver",
        "httpx",
        "instafail",
        "metadata",
        "mock",
        "order",
        "randomly",
        "repeat",
        "rerunfailures",
        "socket",
        "split",
        "subtests",
        "sugar",
        "timeout",
        "xdist",
        "xprocess",
    }
)
_UNPREFIXED_PLUGINS = frozenset(
    {
        "anyio",
        "faker",
        "flaky",
        "hypothesis",
        "pyfakefs",
        "requests-mock",
        "syrupy",
        "time-machine",
        "typeguard",
    }
)
# The libraries `transformers-cli env` (and `diffusers-cli env`) list as `- NAME version:
# 4.36.2`: pinned as a list's are. Its other keys (`Python version`, `Platform`) are the
# machine's, as are collect_env's (`GCC version`): only the names here are distributions.
_ENV_KEY = re.compile(r"^(?P<name>[A-Za-z][\w.-]*) version(?: \([^)]*\))?$")
_ENV_LIBRARIES = frozenset(
    {
        "accelerate",
        "bitsandbytes",
        "datasets",
        "deepspeed",
        "diffusers",
        "flax",
        "huggingface-hub",
        "jax",
        "jaxlib",
        "peft",
        "safetensors",
        "tensorflow",
        "tokenizers",
        "transformers",
        "xformers",
    }
)
# Values collect_env prints when it could not tell.
_UNKNOWN = ("", "n/a", "could not collect", "none", "no cuda", "not available")


@frozen
class Package:
    """One installed distribution as a ticket lists it, and which list said so."""

    name: str
    version: str
    # "pip" (collect_env's [pip3] or a freeze), "conda", "pytest" (its header), "env"
    # (`transformers-cli env`'s `- Accelerate version: 0.25.0`), "prose" ("numpy 1.26.2")
    source: str

    @property
    def requirement(self) -> str:
        """`torch==2.1.0+cu121`, the build as listed (the spec's writer keeps its local
        label in a comment: the pin matches every build of the release)."""
        return f"{self.name}=={self.version}"


@frozen
class Machine:
    """What a ticket says about the machine the failure happened on (None: not said)."""

    torch: str | None = None
    torch_cuda: str | None = None  # "CUDA used to build PyTorch"
    cuda_runtime: str | None = None
    cudnn: str | None = None
    driver: str | None = None
    python: str | None = None  # "3.10", as a spec's environment.python is written
    python_full: str | None = None
    os: str | None = None
    gpus: tuple[str, ...] = ()
    cuda_available: bool | None = None
    packages: tuple[Package, ...] = ()
    # What the lists name that no index serves, each with why (`myop: a wheel from the
    # sender's disk (myop-0.1-...whl)`): not pinned, but the reader has to get them.
    not_pinned: tuple[str, ...] = ()
    # The packaging tools (PACKAGING_TOOLS) the log's failure itself names, as modules
    # (`No module named 'pkg_resources'`, a frame in site-packages/setuptools/): pinned
    # after all, the failure being theirs.
    tools_in_failure: tuple[str, ...] = ()

    @property
    def said_anything(self) -> bool:
        return any(
            (self.torch, self.torch_cuda, self.cuda_runtime, self.python, self.os, self.gpus)
        ) or bool(self.packages)

    @property
    def requirements(self) -> tuple[str, ...]:
        """One `name==version` per distribution (pip's listing over conda's); torch's
        version said in prose or by collect_env (`torch 2.3.0+cpu`) when no list has it:
        the version the ticket is about, which the spec left unpinned."""
        seen: dict[str, str] = {}
        for package in sorted(self.packages, key=lambda p: p.source != "pip"):
            name = normalize(package.name)
            if name in PACKAGING_TOOLS and name not in self.tools_in_failure:
                continue
            seen.setdefault(name, package.requirement)
        if self.torch and not seen.keys() & {"torch", "pytorch"}:  # conda calls it pytorch
            seen["torch"] = f"torch=={self.torch}"
        return tuple(sorted(seen.values(), key=str.lower))

    def package(self, name: str) -> Package | None:
        """The listed distribution called `name` (pip's listing first), by normalized name."""
        wanted = normalize(name)
        found = [p for p in self.packages if normalize(p.name) == wanted]
        found.sort(key=lambda p: p.source != "pip")
        return found[0] if found else None


# The tools every environment is built with, which a `pip freeze` or `pip list` lists beside
# the program's own packages: pinned from a pasted list they were noise (`pip==24.0`,
# `setuptools==69.5.1`, `wheel==0.43.0` in the skeleton's environment.packages, and in the
# comparison's DIFFERS rows), where the venv and docker runners build each environment with
# their own; a pinned old pip or setuptools could even fail to install on a newer Python.
PACKAGING_TOOLS = frozenset({"pip", "setuptools", "wheel"})
# A traceback's or an import error's words that make the failure a packaging tool's: then
# its version is the ticket's question, and it is pinned (`pkg_resources` is setuptools').
# An import counts as Python's statement alone, on a line of its own (a traceback's source
# line, pytest's `>` marking it): prose's "installed everything from pip" or "numpy built
# from wheel" named no module, and pinned the tool again.
_TOOL_MODULES = r"(pip|setuptools|wheel|pkg_resources|_distutils_hack)"
_TOOL_IN_FAILURE = re.compile(
    rf"(?:site-packages[/\\]|No module named '){_TOOL_MODULES}\b"
    rf"|^[ \t>]*from {_TOOL_MODULES}(?:\.\w+)* import\b"
    rf"|^[ \t>]*import {_TOOL_MODULES}(?:\.\w+)*(?: as \w+)?[ \t]*(?:[,;#\r]|$)",
    re.MULTILINE,
)
_TOOL_OF_MODULE = {"pkg_resources": "setuptools", "_distutils_hack": "setuptools"}


def _tools_in_failure(text: str) -> tuple[str, ...]:
    """The PACKAGING_TOOLS whose modules `text` names as a failure would: a frame in their
    folder, an import of them, `No module named` them."""
    modules = (next(g for g in m.groups() if g) for m in _TOOL_IN_FAILURE.finditer(text))
    named = {_TOOL_OF_MODULE.get(module, module) for module in modules}
    return tuple(sorted(named))


def _known(value: str) -> str | None:
    return None if value.strip().lower() in _UNKNOWN else value.strip()


def parse_machine(text: str) -> Machine:
    """Everything `collect_env`, `pip freeze`, `pip list` and `conda list` blocks in `text`
    say."""
    fields: dict[str, str] = {}
    gpus: list[str] = []
    cudnn: str | None = None
    packages: dict[tuple[str, str], Package] = {}
    not_pinned: list[str] = []
    lines = text.splitlines()
    in_conda_table = False
    pip_list: str | None = None  # the header of the `pip list` table being read
    # Python's own row of a `conda list` (`python  3.10.14  h955ad1f_1`): no distribution
    # to pin, but the environment's Python, which the spec said the log did not say.
    conda_python: str | None = None
    under: str | None = None  # the collect_env key whose value continues on the next lines
    for line in lines:
        line = _unmarked(line)
        stripped = line.strip()
        pytest_packages = _pytest_header(line)
        if pytest_packages:
            for package in pytest_packages:
                _add(packages, package)
            continue
        if _PIP_LIST_HEADER.match(line):
            pip_list = stripped
            continue
        if pip_list is not None:
            row = _PIP_LIST_ROW.match(line)
            if _PIP_LIST_RULE.match(line):
                continue
            if row:
                if _editable_row(pip_list, row["more"]):
                    location = (row["more"] or "").split()[0]
                    not_pinned.append(f"{row['name']}: installed from the folder {location}")
                else:
                    _add(packages, Package(row["name"], row["version"], "pip"))
                continue
            pip_list = None
        if _CONDA_HEADER.match(line):
            in_conda_table = True
            continue
        pip_tagged = _PIP_TAGGED.match(line)
        conda_tagged = None if pip_tagged else _CONDA_TAGGED.match(line)
        if pip_tagged:
            _add(packages, Package(pip_tagged["name"], pip_tagged["version"], "pip"))
        elif conda_tagged:
            _add_conda(
                packages, conda_tagged["name"], conda_tagged["version"], conda_tagged["build"]
            )
            if normalize(conda_tagged["name"]) == "python":
                conda_python = conda_python or conda_tagged["version"]
        else:
            editable = _FREEZE_EDITABLE.match(line)
            if editable:
                name = editable["name"] or editable["url"]
                not_pinned.append(f"{name}: installed editable from {editable['url']}")
                continue
            frozen = _FREEZE.match(line)
            if frozen:
                _add(packages, Package(frozen["name"], frozen["version"], "pip"))
                continue
            direct = _DIRECT_WHEEL.match(line)
            # A wheel from the sender's disk (`some_pkg @ file:///home/bob/...whl`): no index
            # has it, and a pin of it fails every rerun, as a live capture leaves such a
            # local install out (footprint.py); a URL's wheel an index serves is pinned.
            local = direct is not None and "file:" in line.split("@", 1)[1]
            version = (
                _wheel_version(direct["name"], direct["file"]) if direct and not local else None
            )
            if direct and version:
                _add(packages, Package(direct["name"], version, "pip"))
                continue
            if direct and local:
                not_pinned.append(
                    f"{direct['name']}: a wheel from the sender's disk ({direct['file']})"
                )
                continue
            if in_conda_table and not stripped.startswith("#"):
                row = _CONDA_ROW.match(line)
                if row:
                    _add_conda(packages, row["name"], row["version"], row["build"])
                    if normalize(row["name"]) == "python":
                        conda_python = conda_python or row["version"]
                    continue
                if stripped:
                    in_conda_table = False
            gpu = _GPU_LINE.match(line)
            if gpu:
                gpus.append(gpu["model"])
                continue
            if under == "cudnn" and _CUDNN_LIB.search(line):
                cudnn = cudnn or _CUDNN_LIB.search(line)["version"]  # type: ignore[index]
                continue
            match = _KEY_VALUE.match(line)
            if match:
                key, value = match["key"].strip(), match["value"]
                fields.setdefault(key, value)
                under = "cudnn" if key == "cuDNN version" else None
                if key == "GPU models and configuration" and value:
                    gpus.extend(_gpus_inline(value))
                continue
            if stripped:
                under = under if under == "cudnn" else None
    gha_python = _GHA_PYTHON.search(text)
    python_full = (
        _known(_field(fields, "Python version"))
        or conda_python
        or (gha_python["full"] if gha_python else None)
    )
    python = None
    if python_full:
        found = _PYTHON_VERSION.match(python_full)
        python = found["version"] if found else None
    cudnn_field = _known(fields.get("cuDNN version", ""))
    if cudnn is None and cudnn_field and cudnn_field[:1].isdigit():
        cudnn = cudnn_field
    available = fields.get("Is CUDA available", "").strip().lower()
    torch = _version(_field(fields, "PyTorch version"))
    for key, value in fields.items():
        library = _ENV_KEY.match(key)
        name = normalize(library["name"]) if library else ""
        version = _version(value)
        if name in _ENV_LIBRARIES and version and version[0].isdigit():
            _add(packages, Package(name, version, "env"))
    _add_prose_libraries(packages, text)
    listed = sorted(packages.values(), key=lambda p: (normalize(p.name), p.source))
    if torch is None:
        pinned = next((p for p in listed if normalize(p.name) == "torch"), None)
        # One version said in prose is the one; "worked with 2.0.1, after upgrading to 2.1.0
        # it segfaults" says two, and the first was the one that worked (review): so does
        # "torch 2.0.1 works, fails with 2.1.0", its second with no name (`_versions_said`).
        said = {v for m in _PROSE_TORCH.finditer(text) for v in _versions_said(m, text)}
        torch = pinned.version if pinned else _one_version(said)
    if python is None:
        prose = _PROSE_PYTHON.search(text) or _PATH_PYTHON.search(text)
        python = prose["version"] if prose else None
    torch_cuda = _known(fields.get("CUDA used to build PyTorch", ""))
    label = _TORCH_CUDA_LABEL.search(torch or "")
    if torch_cuda is None and label is not None:
        torch_cuda = f"{label['major']}.{label['minor']}"
    driver = _known(fields.get("Nvidia driver version", "")) or _said_once(
        _PROSE_DRIVER, "version", text
    )
    if not gpus:
        gpus = _prose_gpus(text)
    return Machine(
        torch=torch,
        torch_cuda=torch_cuda,
        cuda_runtime=_known(fields.get("CUDA runtime version", "")),
        cudnn=cudnn,
        driver=driver,
        python=python,
        python_full=python_full,
        os=_known(fields.get("OS", "")) or _said_once(_PROSE_OS, "os", text),
        gpus=tuple(gpus),
        cuda_available={"true": True, "false": False}.get(available),
        packages=tuple(listed),
        not_pinned=tuple(dict.fromkeys(not_pinned)),
        tools_in_failure=_tools_in_failure(text),
    )


def _said_once(pattern: re.Pattern[str], group: str, text: str) -> str | None:
    """What `pattern` finds in `text` where it finds one thing ("Ubuntu 22.04 here, the same
    on Ubuntu 20.04" says two: which failed is the reader's call)."""
    found = {m[group] for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None


def _prose_gpus(text: str) -> list[str]:
    """The GPUs prose says: each model once, as many times as a count before it says (`8x
    A100 80GB`). A model said again without its memory (`on A100`, then `8x A100 80GB`) or
    without `NVIDIA` is the same one, by its fullest name and the larger count: the machine
    was read as nine GPUs of two models (`A100, 8x A100 80GB`). Two memories of one model
    (`A100 40GB`, `A100 80GB`) are two."""
    said: dict[tuple[str, str | None], tuple[str, int]] = {}
    for m in _PROSE_GPU.finditer(text):
        model, count = m["model"], int(m["count"] or 1)
        memory = re.search(r" ?(\d+) ?GB$", model)
        base = re.sub(
            r"^(?:NVIDIA )?(?:GeForce )?|\s+", "", model[: memory.start()] if memory else model
        )
        key = (base.upper(), memory[1] if memory else None)
        if memory is None:
            # Said without its memory: the same as one said with it, where there is one.
            key = next((k for k in said if k[0] == key[0]), key)
        elif (key[0], None) in said:
            # Said with it after being said without: the same one, now named fully.
            name, seen = said.pop((key[0], None))
            said[key] = (name, seen)
        name, seen = said.get(key, (model, 0))
        said[key] = (model if len(model) > len(name) else name, max(seen, count))
    return [name for name, count in said.values() for _ in range(count)]


def _add_prose_libraries(packages: dict[tuple[str, str], Package], text: str) -> None:
    """The distributions of _PROSE_LIBRARIES `text` says one version of, where no list
    (pip's, conda's, pytest's, transformers-cli env's) has them: "worked with numpy 1.26,
    fails with numpy 2.0" says two, and which failed is the reader's call."""
    said: dict[str, set[str]] = {}
    for match in _PROSE_LIBRARY.finditer(text):
        said.setdefault(normalize(match["name"]), set()).update(_versions_said(match, text))
    listed = {name for name, _ in packages}
    for name, versions in said.items():
        one = _one_version(versions)
        if name not in listed and one is not None:
            _add(packages, Package(name, one, "prose"))


def _one_version(said: set[str]) -> str | None:
    """The one release `said` names, or None where it names two. A ticket says its torch
    twice as often as once, once bare and once with its build's label ("since upgrading to
    torch 2.4.0 ...", then "Env: torch 2.4.0+cu121"): one release, which read as two pinned
    neither, and the comparison lost torch and its CUDA. The labelled spelling is kept, as it
    says more (the CUDA it was built with); two labels (`+cu121`, `+cpu`) are two builds."""
    releases = {version.partition("+")[0] for version in said}
    labelled = {version for version in said if "+" in version}
    if len(releases) != 1 or len(labelled) > 1:
        return None
    return labelled.pop() if labelled else said.pop()


def _versions_said(match: re.Match[str], text: str) -> set[str]:
    """The version `match` (a name and its version in prose) says, and the versions its
    sentence goes on to say without a name (`_LATER_VERSION`): "worked with numpy 1.26,
    fails with 2.0" says 1.26 and 2.0 of numpy, and pinned 1.26, the one that worked."""
    rest = text[match.end() :]
    end = _SENTENCE_END.search(rest)
    sentence = rest[: end.start()] if end else rest
    # The words up to the next name of a library, torch or Python are this name's.
    other = _PROSE_LIBRARY.search(sentence) or _PROSE_TORCH.search(sentence)
    other = other or _PROSE_PYTHON.search(sentence)
    sentence = sentence[: other.start()] if other else sentence
    return {match["version"], *(m["version"] for m in _LATER_VERSION.finditer(sentence))}


def _pytest_header(line: str) -> tuple[Package, ...]:
    """The distributions a line of pytest's header names with their versions: `pytest-8.2.0,
    pluggy-1.5.0` after the platform's Python, and those of its `plugins:` known to be a
    distribution's (`xdist-3.6.1` is pytest-xdist's); none for another line."""
    platform = _PYTEST_PLATFORM.match(line)
    listed = platform or _PYTEST_PLUGINS.match(line)
    if listed is None:
        return ()
    found = []
    for item in listed["list"].split(","):
        pair = _NAME_VERSION.match(item.strip())
        if pair is None:
            # Not pytest's list (`plugins: see below`): nothing of it read.
            return ()
        name = pair["name"]
        if normalize(name) == "reprospec":
            # Our own plugin: every rerun loads the engine's, and a pin of the sender's
            # version made any other reprospec's rerun an infra-error.
            continue
        if platform is None and not normalize(name).startswith("pytest"):
            if normalize(name) in _PREFIXED_PLUGINS:
                name = f"pytest-{name}"
            elif normalize(name) not in _UNPREFIXED_PLUGINS:
                continue
        found.append(Package(name, pair["version"], "pytest"))
    return tuple(found)


def _unmarked(line: str) -> str:
    """`line` without the Markdown a ticket wraps a pasted block in (`> - **OS**: x` is
    `OS: x`), so a quoted or listed collect_env, `pip freeze` or `key: value` list reads as
    the bare one does."""
    bare = _MARKDOWN_LEAD.sub("", line)
    return _MARKDOWN_EMPHASIS.sub("", bare) if bare is not line else line


def _field(fields: dict[str, str], key: str) -> str:
    """The value of `key`, or of the first key that is `key` and a remark in parentheses
    (`PyTorch version (GPU?)`, `transformers-cli env`'s)."""
    if key in fields:
        return fields[key]
    remarked = next((k for k in fields if k.startswith(f"{key} (") and k.endswith(")")), None)
    return fields[remarked] if remarked else ""


def _version(value: str) -> str | None:
    """A known value's first word (`2.1.2+cu121 (True)` is `2.1.2+cu121`)."""
    known = _known(value)
    return known.split()[0] if known else None


def _wheel_version(name: str, file: str) -> str | None:
    """The version in a wheel's file name (`torch-2.1.0%2Bcu121-cp311-...whl`: 2.1.0+cu121)
    when it is `name`'s wheel; None otherwise."""
    from urllib.parse import unquote

    parts = unquote(file).split("-")
    if len(parts) < 5 or normalize(parts[0]) != normalize(name):
        return None
    return parts[1] or None


def _gpus_inline(value: str) -> list[str]:
    """`GPU 0: A100` on the key's own line, or a bare model (`NVIDIA GeForce RTX 3090`)."""
    found = [m["model"] for m in _GPU_LINE.finditer(value)]
    if found:
        return found
    known = _known(value)
    return [known] if known else []


def _add(packages: dict[tuple[str, str], Package], package: Package) -> None:
    packages.setdefault((normalize(package.name), package.source), package)


def _editable_row(header: str, more: str | None) -> bool:
    """Whether a `pip list` row is an editable install (its `Editable project location`,
    a folder of the sender's machine that no index has): not pinned, as a freeze's `-e`."""
    if not more:
        return False
    if "Editable" not in header:
        # An older pip's `pip list` gave an editable install's folder after its version,
        # under a header of two columns (`myproj  0.1.0  /home/alice/proj`).
        return "Location" not in header and re.match(rf"(?:/|~|{DRIVE}\\)", more) is not None
    return not re.search(r"[/\\](?:site|dist)-packages\b", more.split()[0])


def _add_conda(
    packages: dict[tuple[str, str], Package], name: str, version: str, build: str | None
) -> None:
    """A row of `conda list` (or collect_env's `[conda]`), when it is a Python distribution:
    pip's (`pypi_0`) or a conda build for a Python (`py311h64a7726_0`, `pyhd8ed1ab_0`,
    `py3.10_cuda12.1_cudnn8.9.2_0`), under pip's name (`pytorch` is `torch`). Python itself
    and conda's other packages (`mkl`, `blas`, `pytorch-cuda`, `_libgcc_mutex`) are no
    index's distributions: a pin of one failed every cell as an infra-error."""
    if normalize(name) == "python" or (build is not None and not build.startswith("py")):
        return
    _add(packages, Package(_CONDA_NAMES.get(normalize(name), name), version, "conda"))
