"""A self-contained `repro.py` for one workload cell: the harness's loop, the cell's values inlined.

The script is what a PyTorch issue asks for: one file, plain `python repro.py`,
torch and the standard library only. It does what the harness does in the
main process (reprospec/harness/reprospec_harness: seed, dataset, model, loss,
optimizer, DataLoader, the phases step by step) with every value of the cell
written in, and nothing of the engine: no events, no stack dumps, and none of
the spec's `faults` (an outcome they cause is the spec's doing, not torch's).

The built-in dataset and models are copied from the harness's own source (read
with `ast`, so the script cannot drift from what ran). A user's entry point
module that is one small file of the workdir is pasted in; otherwise it is
imported and named in `needs` (files to put next to the script). Every value
from the spec reaches the script as a Python literal (`repr` of JSON data),
never as code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.lazyre import Lazy
from reprospec.core.pysource import UNREADABLE
from reprospec.core.redact import sets_secret
from reprospec.core.sections import JsonObject, JsonValue, Workload
from reprospec.harness import HARNESS_ROOT
from reprospec.plan.workfiles import local_imports, module_files

HARNESS_PACKAGE = HARNESS_ROOT / "reprospec_harness"
# A user module pasted into the script stays readable; bigger ones are imported.
MAX_INLINE_BYTES = 24 << 10


# Variables the interpreter or the dynamic loader read at start: set on the command line.
_START_VARS = Lazy(r"^(LD_|PYTHON|MALLOC_|GLIBC_TUNABLES$|OMP_PROC_BIND$)")
# The harness's debug switches that are environment variables (run.DEBUG_ENV).
DEBUG_ENV = {
    "cuda_launch_blocking": ("CUDA_LAUNCH_BLOCKING", "1"),
    "device_side_assertions": ("TORCH_USE_CUDA_DSA", "1"),
    "deterministic": ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
}
BUILTIN_MODELS = {"mlp": "MLP", "cnn": "CNN", "transformer-decoder": "TransformerDecoder"}
BUILTIN_LOSSES = {
    "cross-entropy": "F.cross_entropy(output, target)",
    "mse": "F.mse_loss(output, as_target(output, target))",
    "bce": "F.binary_cross_entropy_with_logits(output, as_target(output, target))",
}
AMP_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16"}
# Top-level names the script defines; a pasted module must not redefine them.
SCRIPT_NAMES = frozenset(
    {
        "main",
        "SEED",
        "DEVICE",
        "PHASES",
        "DTYPES",
        "SyntheticDataset",
        "MLP",
        "CNN",
        "TransformerDecoder",
        "split_batch",
        "to_device",
        "as_target",
        "loss_fn",
        "describe",
        "probe_item",
        "contextlib",
        "math",
        "multiprocessing",
        "os",
        "random",
        "sys",
        "torch",
        "F",
        "nn",
        "tud",
    }
)


class Unsupported(Exception):
    """The cell cannot be written as a standalone script; the message says why."""


@frozen
class Script:
    """A generated repro.py: its text, the workdir files it imports, and what to tell the reader."""

    text: str
    needs: tuple[str, ...]
    start_env: Mapping[str, str]
    notes: tuple[str, ...]


def generate(
    plan: AttemptPlan,
    *,
    expected: str = "",
    spec_name: str = "",
    reads: Mapping[str, str] | None = None,
) -> Script:
    """The repro.py of one workload cell; `Unsupported` when the cell needs the harness.
    `reads`: the variables the spec sets to one of the engine's (standalone.env_reads),
    read from the reader's environment the same way (their values are masked)."""
    workload = plan.workload
    if workload is None:
        raise Unsupported("the cell runs a command, not a workload")
    if workload.get("distributed"):
        raise Unsupported(
            "workload.distributed runs its ranks under the harness's supervisor "
            "(rendezvous, step agreement); there is no standalone script for it"
        )
    return _Writer(
        plan, workload, expected=expected, spec_name=spec_name, reads=reads or {}
    ).script()


def _literal(value: JsonValue | Sequence[int]) -> str:
    """A spec value as a Python literal (JSON data only: never code)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(str(k))}: {_literal(v)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return repr(str(value))


def _kwargs(params: Mapping[str, JsonValue]) -> str:
    parts = []
    for key, value in params.items():
        if not str(key).isidentifier():
            return f"**{_literal(dict(params))}"
        parts.append(f"{key}={_literal(value)}")
    return ", ".join(parts)


def _comment(text: str) -> str:
    """One line, no control characters: safe inside a `#` comment or a docstring."""
    flat = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", text)
    return flat.replace('"""', "'''").replace("\\", "/")


def _section(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def harness_source(module: str, *names: str) -> str:
    """The source of top-level definitions `names` of a harness module, in file order."""
    path = HARNESS_PACKAGE / f"{module}.py"
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    chunks = []
    for node in tree.body:
        defined = _defined_names(node)
        if defined & set(names):
            segment = ast.get_source_segment(source, node, padded=False)
            if segment is not None:
                chunks.append(segment)
    return "\n\n\n".join(chunks)


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


@frozen
class _Pasted:
    """A user module pasted into the script: its body and its `from __future__` imports."""

    body: str
    futures: tuple[str, ...]


def paste_module(path: Path) -> _Pasted | None:
    """The module's source fit to paste at the top level of the script, or None when it is not.

    Refused: too big, unparsable, relative imports, top-level names the script uses.
    Its `if __name__ == "__main__":` blocks are dropped (they would run on import).
    """
    try:
        if path.stat().st_size > MAX_INLINE_BYTES:
            return None
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, *UNREADABLE):
        return None
    lines = source.splitlines()
    drop: set[int] = set()
    futures: list[str] = []
    for node in tree.body:
        span = range(node.lineno - 1, node.end_lineno or node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            futures.extend(alias.name for alias in node.names)
            drop.update(span)
        elif _is_main_guard(node):
            drop.update(span)
        elif _clashes(node):
            return None
    body = "\n".join(line for i, line in enumerate(lines) if i not in drop).strip("\n")
    return _Pasted(body, tuple(dict.fromkeys(futures)))


# What the script binds these names to: a pasted import binding one the same way is harmless.
_SCRIPT_IMPORTS = {
    "torch": "torch",
    "nn": "torch.nn",
    "F": "torch.nn.functional",
    "tud": "torch.utils.data",
    "os": "os",
    "sys": "sys",
    "math": "math",
    "random": "random",
    "contextlib": "contextlib",
    "multiprocessing": "multiprocessing",
}


def _clashes(node: ast.stmt) -> bool:
    """A relative import (needs its package), or a name the script defines differently."""
    if isinstance(node, ast.ImportFrom) and node.level:
        return True
    return bool((_defined_names(node) | _bound_by_import(node)) & SCRIPT_NAMES)


def _bound_by_import(node: ast.stmt) -> set[str]:
    """Names an import binds to something else than the script binds them to."""
    bound: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            if _SCRIPT_IMPORTS.get(name) != target:
                bound.add(name)
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            name = alias.asname or alias.name
            if _SCRIPT_IMPORTS.get(name) != f"{node.module}.{alias.name}":
                bound.add(name)
    return bound


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = ast.unparse(node.test).replace("'", '"')
    return test in ('__name__ == "__main__"', '"__main__" == __name__')


class _Writer:
    """Builds the script piece by piece: header, imports, definitions, main()."""

    def __init__(
        self,
        plan: AttemptPlan,
        workload: JsonObject,
        *,
        expected: str,
        spec_name: str,
        reads: Mapping[str, str],
    ) -> None:
        self.reads = reads
        self.plan = plan
        self.workload = workload
        self.expected = expected
        self.spec_name = spec_name
        self.definitions: list[str] = []
        self.imports: list[str] = []  # user modules imported (not pasted), in order
        self.pasted: dict[str, str] = {}  # module -> pasted body
        self.futures: list[str] = ["annotations"]
        self.needs: dict[str, None] = {}
        self.notes: list[str] = []
        imports = workload.get("imports")
        self.spec_imports = [str(m) for m in imports] if isinstance(imports, list) else []
        workdir = plan.workdir.resolve()
        for module in self.spec_imports:  # a local module the spec imports is a file it needs
            files = module_files(module, workdir) if workdir.is_dir() else []
            for path in local_imports(files, workdir):
                self.needs[path.relative_to(workdir).as_posix()] = None

    # -- entry points ------------------------------------------------------------------

    def entry(self, reference: str) -> str:
        """The expression naming `module:attr.path` in the script (pasted or imported)."""
        module, _, attribute = reference.partition(":")
        workdir = self.plan.workdir.resolve()
        files = module_files(module, workdir)
        if module not in self.pasted and module not in self.imports:
            pasted = None
            # A module the spec imports runs before torch, as in the harness: not pasted.
            single = files == [(workdir / f"{module}.py").resolve()]
            if "." not in module and single and module not in self.spec_imports:
                pasted = paste_module(files[0])
            if pasted is not None:
                self.pasted[module] = pasted.body
                self.futures.extend(pasted.futures)
            else:
                self.imports.append(module)
            # What it imports from the workdir (and, imported, the module itself) is needed.
            for path in local_imports(files, workdir):
                if pasted is None or path not in files:
                    self.needs[path.relative_to(workdir).as_posix()] = None
        if module in self.pasted:
            return attribute
        return f"{_alias(module)}.{attribute}"

    # -- sections ----------------------------------------------------------------------

    def dataset(self) -> tuple[str, str]:
        """(the line building the dataset, the line sizing the model: `shape, classes = ...`)."""
        section = _section(_section(self.workload.get("data")).get("dataset")) or {
            "builtin": "synthetic"
        }
        seed = "SEED"
        if section.get("entrypoint"):
            params = _kwargs(_section(section.get("params")))
            call = f"{self.entry(str(section['entrypoint']))}({params})"
            build = f"dataset = {call}"
            shape = section.get("shape")
            classes = section.get("classes")
            if shape is not None:
                size = f"shape, classes = {_literal(shape)}, {_literal(classes)}"
                if classes is None:
                    size += " or plain_classes(dataset) or 10"
                    self._define_plain_classes()
            else:
                self._define_probe(call)
                size = "shape, classes = describe(dataset)"
                if classes is not None:
                    size = f"shape, classes = describe(dataset)[0], {_literal(classes)}"
            return build, size
        self.definitions.append(harness_source("data", "DTYPES", "SyntheticDataset"))
        options = {k: section[k] for k in ("size", "shape", "classes", "dtype") if k in section}
        args = ", ".join([*(f"{k}={_literal(v)}" for k, v in options.items()), f"seed={seed}"])
        return (
            f"dataset = SyntheticDataset({args})",
            "shape, classes = list(dataset.shape), dataset.classes",
        )

    def _define_plain_classes(self) -> None:
        self.definitions.append(_PLAIN_CLASSES)

    def _define_probe(self, call: str) -> None:
        self._define_plain_classes()
        self.definitions.append(_PROBE.replace("__CALL__", call))

    def model(self) -> str:
        section = _section(self.workload.get("model")) or {"builtin": "mlp"}
        if section.get("entrypoint"):
            call = self.entry(str(section["entrypoint"]))
            return f"model = {call}({_kwargs(_section(section.get('params')))})"
        name = str(section.get("builtin") or "mlp")
        cls = BUILTIN_MODELS.get(name)
        if cls is None:
            raise Unsupported(f"unknown built-in model {name!r}")
        self.definitions.append(harness_source("models", cls))
        params = _kwargs(_section(section.get("params")))
        return f"model = {cls}(shape, classes{', ' + params if params else ''})"

    def loss(self) -> str:
        name = _section(self.workload.get("model")).get("loss")
        if name is None or name in BUILTIN_LOSSES:
            expression = BUILTIN_LOSSES[str(name or "cross-entropy")]
            if "as_target" in expression:
                self.definitions.append(
                    harness_source("training", "_as_target").replace(
                        "def _as_target", "def as_target"
                    )
                )
            return f"def loss_fn(output, target):\n    return {expression}"
        entry = self.entry(str(name))
        return f"loss_fn = {entry}() if isinstance({entry}, type) else {entry}"

    def optimizer(self) -> str:
        section = self.workload.get("optimizer")
        options = dict(section) if isinstance(section, dict) else {"name": section or "sgd"}
        name = str(options.get("name") or "sgd")
        lr = options.get("lr", 0.01 if name == "sgd" else 1e-3)
        args = [f"lr={_literal(lr)}"]
        if options.get("weight_decay"):
            args.append(f"weight_decay={_literal(options['weight_decay'])}")
        if name == "sgd":
            args.insert(1, f"momentum={_literal(options.get('momentum') or 0)}")
            cls = "torch.optim.SGD"
        elif name == "adam":
            cls = "torch.optim.Adam"
        else:
            raise Unsupported(f"unknown optimizer {name!r}")
        return (
            "parameters = [p for p in model.parameters() if p.requires_grad]\n"
            f"optimizer = {cls}(parameters, {', '.join(args)}) if parameters else None"
        )

    def loader(self) -> list[str]:
        options = _section(_section(self.workload.get("data")).get("loader"))
        workers = int(str(_given(options, "num_workers", 0)))
        lines = (
            [
                "generator = torch.Generator().manual_seed(SEED)",
                "sampler = tud.RandomSampler(dataset, generator=generator)",
            ]
            if options.get("shuffle")
            else ["sampler = tud.SequentialSampler(dataset)"]
        )
        args = [
            "dataset",
            f"batch_size={_literal(_given(options, 'batch_size', 1))}",
            "sampler=sampler",
            f"drop_last={_literal(bool(options.get('drop_last')))}",
            f"num_workers={workers}",
            f"pin_memory={_literal(bool(options.get('pin_memory')))}",
            f"timeout={_literal(_given(options, 'timeout', 0))}",
        ]
        if workers > 0:
            if options.get("prefetch_factor") is not None:
                args.append(f"prefetch_factor={_literal(options['prefetch_factor'])}")
            if options.get("persistent_workers") is not None:
                args.append(f"persistent_workers={_literal(bool(options['persistent_workers']))}")
            context = options.get("multiprocessing_context")
            if context:
                lines.append(f"context = multiprocessing.get_context({_literal(str(context))})")
                if context == "forkserver":
                    lines.append('context.set_forkserver_preload(["torch"])')
                args.append("multiprocessing_context=context")
        lines.append("loader = tud.DataLoader(\n" + "".join(f"    {a},\n" for a in args) + ")")
        return lines

    # -- the whole script --------------------------------------------------------------

    def script(self) -> Script:
        workload = self.workload
        faults = workload.get("faults") or []
        if faults:
            self.notes.append(
                f"the spec's workload.faults ({len(faults) if isinstance(faults, list) else 1}) "
                "are left out: an outcome they cause does not happen with this script"
            )
        debug = _section(workload.get("debug"))
        env: dict[str, str] = dict(self.plan.env)
        for switch, (name, value) in DEBUG_ENV.items():
            if debug.get(switch):
                env.setdefault(name, value)
        start_env = {k: v for k, v in env.items() if _START_VARS.match(k)}
        seed = int(str(workload.get("seed") or 0))
        requested = str(workload.get("device") or self.plan.environment.device or "cpu")
        dataset_line, size_line = self.dataset()
        model_line = self.model()
        loss_line = self.loss()
        optimizer_lines = self.optimizer()
        loader_lines = self.loader()
        phases = []
        for phase in self.plan.job.phases if isinstance(self.plan.job, Workload) else ():
            name = str(phase.get("name"))
            mode = str(phase.get("mode") or ("train" if name == "train" else "eval"))
            steps = phase.get("steps")
            phases.append((name, mode == "train", None if steps is None else int(str(steps))))
        amp = workload.get("amp")
        compile_options = workload.get("compile")
        body = [
            "random.seed(SEED)",
            "torch.manual_seed(SEED)",
            'numpy = sys.modules.get("numpy")  # seeded when something imported it',
            "if numpy is not None:",
            "    numpy.random.seed(SEED)",
        ]
        if debug.get("anomaly_detection"):
            body.append("torch.autograd.set_detect_anomaly(True)")
        if debug.get("deterministic"):
            body.append("torch.use_deterministic_algorithms(True)")
        body += [
            _device_line(requested),
            dataset_line,
            size_line,
            f"{model_line}.to(device)",
            loss_line,
            optimizer_lines,
        ]
        if compile_options:
            options = compile_options if isinstance(compile_options, dict) else {}
            body.append(f"model = torch.compile(model{', ' + _kwargs(options) if options else ''})")
        body += loader_lines
        autocast = (
            f"torch.autocast(device.type, dtype=torch.{AMP_DTYPES[str(amp)]})"
            if amp in AMP_DTYPES
            else "contextlib.nullcontext()"
        )
        if amp and amp not in AMP_DTYPES:
            raise Unsupported(f"unknown amp dtype {amp!r}")
        scaler = (
            'torch.amp.GradScaler(device.type) if device.type == "cuda" else None'
            if AMP_DTYPES.get(str(amp)) == "float16"
            else "None"
        )
        non_blocking = (
            'device.type == "cuda"'
            if _section(_section(workload.get("data")).get("loader")).get("pin_memory")
            else "False"
        )
        body += _LOOP.format(autocast=autocast, scaler=scaler, non_blocking=non_blocking).split(
            "\n"
        )
        text = self._assemble(env, start_env, seed, phases, body)
        compile(text, "repro.py", "exec")  # a generator bug must not reach a report
        return Script(text, tuple(self.needs), start_env, tuple(self.notes))

    def _assemble(
        self,
        env: Mapping[str, str],
        start_env: Mapping[str, str],
        seed: int,
        phases: list[tuple[str, bool, int | None]],
        body: list[str],
    ) -> str:
        prefix = " ".join(shell_assignment(k, v) for k, v in start_env.items())
        run_line = f"{prefix + ' ' if prefix else ''}python repro.py"
        where = (
            f" in a folder that holds {', '.join(self.needs)} (from the spec's workdir)"
            if self.needs
            else ""
        )
        doc = [
            f"Standalone reproduction of {_comment(self.spec_name)}, cell "
            f"{_comment(self.plan.cell.id or '(the only cell)')}.",
            "",
            "Generated by reprospec from the spec: its training loop with this cell's values",
            "written in; it needs only torch (and the standard library).",
        ]
        if self.expected:
            doc.append(f"What the run saw: {_comment(self.expected)}")
        doc += _wrapped(f"Run: {_comment(run_line)}{_comment(where)}")
        for note in self.notes:
            doc += _wrapped(f"Note: {_comment(note)}")
        lines = ['"""' + doc[0], *doc[1:], '"""', ""]
        lines.append(f"from __future__ import {', '.join(dict.fromkeys(self.futures))}")
        lines.append("")
        code = "\n".join(body) + "".join(self.definitions) + "".join(self.pasted.values())
        modules = ["contextlib", "random", "sys"]
        modules += [m for m in ("math", "multiprocessing") if f"{m}." in code]
        if env or self.needs:
            modules.append("os")
        lines += [f"import {m}" for m in sorted(modules)]
        if "Sequence[" in code:  # in the harness's annotations
            lines.append("from collections.abc import Sequence")
        lines.append("")
        if env:
            lines.append("# The cell's environment variables, set before torch is imported.")
            if start_env:
                lines.append(
                    f"# {', '.join(start_env)} must be set before Python starts: see Run above."
                )
            for name, value in env.items():
                if name in self.reads:
                    source = self.reads[name]
                    # Unset, the spec reads null, which the cell's environment held as
                    # '': os.environ[...] raised KeyError where the run had ''.
                    lines.append(
                        f"os.environ[{_literal(name)}] = os.environ.get({_literal(source)}, '')"
                        f"  # as the spec reads it: export {_comment(source)}"
                    )
                elif sets_secret(name, value):  # as the report masks it: never written
                    lines.append(f"# {_comment(name)}: set it yourself (its value is not written)")
                else:
                    lines.append(f"os.environ[{_literal(name)}] = {_literal(value)}")
            lines.append("")
        if self.needs:
            lines += ["sys.path.insert(0, os.getcwd())  # run it where the files above are", ""]
        spec_imports = [m for m in self.spec_imports if m != "torch"]
        if spec_imports:
            lines.append("# The spec's `imports`, in order, before torch.")
            lines += [f"import {m}" for m in spec_imports]
            lines.append("")
        lines += [
            "import torch",
            "import torch.nn.functional as F",
            "from torch import nn",
            "from torch.utils import data as tud",
            "",
        ]
        if self.imports:
            lines += [f"import {m} as {_alias(m)}" for m in self.imports]
            lines.append("")
        lines += [
            f"SEED = {seed}",
            "# (name, train, steps: None = one pass over the data)",
            f"PHASES = {phases!r}",
            "",
        ]
        for module, pasted in self.pasted.items():
            banner = f"# ---- {module}.py, from the spec's workdir " + "-" * 20
            lines += ["", banner, "", pasted, ""]
        if self.definitions:
            lines += ["", "# ---- from reprospec's harness (what the run used) " + "-" * 20, ""]
            lines.append("\n\n\n".join(dict.fromkeys(self.definitions)))
            lines.append("")
        lines += ["", _HELPERS, "", "", "def main() -> None:"]
        for statement in body:
            lines += ["    " + line if line else "" for line in statement.split("\n")]
        lines += ["", "", 'if __name__ == "__main__":', "    main()", ""]
        return "\n".join(lines)


def _wrapped(text: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, 88, subsequent_indent="  ", break_on_hyphens=False) or [""]


def _alias(module: str) -> str:
    return module.replace(".", "_") + "_module"


def _given(options: Mapping[str, JsonValue], key: str, default: JsonValue) -> JsonValue:
    value = options.get(key)
    return default if value is None else value


def shell_assignment(name: str, value: str) -> str:
    """`NAME=value` for a command line; a secret (redact.sets_secret, the report's rule:
    `GITHUB_TOKEN_RO`, not `MAX_TOKENS=2048` or `API_TOKEN=tok`, which the report shows and
    `NAME="$NAME"` would leave empty) is taken from the reader's own environment."""
    import shlex

    return f'{name}="${name}"' if sets_secret(name, value) else f"{name}={shlex.quote(value)}"


def _device_line(requested: str) -> str:
    if requested == "auto":
        return 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
    return f"device = torch.device({_literal(requested)})"


_HELPERS = '''\
def to_device(value, device, non_blocking):
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=non_blocking)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device, non_blocking) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device, non_blocking) for k, v in value.items()}
    return value


def split_batch(batch):
    """(input, target) from a `(x, y)` pair or an `{"input", "target"}` mapping."""
    if isinstance(batch, dict):
        return batch["input"], batch.get("target")
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        return batch[0], batch[1]
    return batch, None'''

_LOOP = """\
scaler = {scaler}
non_blocking = {non_blocking}
for name, train, steps in PHASES:
    model.train(train)
    iterator = None  # each phase starts its own pass over the data
    steps = max(1, len(loader)) if steps is None else steps
    with contextlib.nullcontext() if train else torch.no_grad():
        for step in range(1, steps + 1):
            print(f"{{name}} step {{step}}", flush=True)
            if iterator is None:
                iterator = iter(loader)
            try:
                batch = next(iterator)
            except StopIteration:  # more steps than one pass: the next epoch
                iterator = iter(loader)
                batch = next(iterator)
            x, y = split_batch(to_device(batch, device, non_blocking))
            with {autocast}:
                output = model(x)
                if y is None:
                    continue
                loss = loss_fn(output, y)
            if not train or optimizer is None:
                continue
            optimizer.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
print("done", flush=True)"""

_PLAIN_CLASSES = '''\
def plain_classes(dataset):
    """`dataset.classes` when it is a plain int attribute (no property runs)."""
    import inspect

    value = inspect.getattr_static(dataset, "classes", None)
    valid = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if valid else None'''

_PROBE = '''\
def probe_item(send):
    """In a spawned process: build the dataset, read item 0, send its input's shape."""
    dataset = __CALL__
    item = dataset[0]
    x = item[0] if isinstance(item, (tuple, list)) else item
    classes = getattr(dataset, "classes", None)
    valid = isinstance(classes, int) and not isinstance(classes, bool) and classes > 0
    send.send((list(x.shape) if isinstance(x, torch.Tensor) else [1], classes if valid else None))


def describe(dataset):
    """(input shape, classes) as reprospec sizes a built-in model: item 0 is read in a spawned
    process, so nothing it initialises reaches this one (or the workers forked from it)."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=probe_item, args=(send,))
    process.start()
    send.close()
    shape, probed = receive.recv()
    process.join()
    return shape, plain_classes(dataset) or probed or 10'''
