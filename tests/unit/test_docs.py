"""The docs stay true: their example specs are valid, the README's worked example is the spec it
names, the architecture page matches the tree, and every CLI option has help text and is
documented. That the examples run as documented is tests/functional/test_docs.py; that every
link resolves is tests/unit/test_links.py."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import reprospec
from reprospec.api import load_spec, plan_run
from reprospec.cli import build_parser
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import AttemptResult, CellResult, InstanceResult, Outcome
from reprospec.core.runoptions import RunOptions
from reprospec.plan.attempt import describe
from tests.support.docexamples import (
    COMMAND_EXAMPLES,
    DOCS,
    EXAMPLES,
    FENCE,
    WORKLOAD_EXAMPLES,
    Example,
)
from tests.support.paths import ROOT

SCHEMA = ROOT / "schemas" / "reprospec.schema.json"


def test_the_docs_have_examples_of_both_kinds() -> None:
    # A broken fence regex would make every example test below pass vacuously.
    in_spec_format = [e for e in EXAMPLES if e.doc == "spec-format.md"]
    assert len(in_spec_format) >= 10
    assert COMMAND_EXAMPLES
    assert WORKLOAD_EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_doc_example_validates_against_the_json_schema(example: Example) -> None:
    validator = Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    errors = [
        f"{'.'.join(map(str, error.absolute_path)) or '(top level)'}: {error.message}"
        for error in validator.iter_errors(example.data)
    ]
    assert errors == [], f"{example.id}: {errors}"


# ---- the README's worked example --------------------------------------------------------


def test_readme_worked_example_is_the_spec_it_names(tmp_path: Path) -> None:
    """The README shows specs/segfault.yaml abridged: it must plan exactly the same attempts
    (the same cells, commands, workload and expectations), or the table under it is not what
    the abridged spec would print."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (shown,) = [m["body"] for m in FENCE.finditer(readme) if m["info"] == "yaml"]
    assert "[`specs/segfault.yaml`](specs/segfault.yaml)" in readme
    (tmp_path / "segfault.yaml").write_text(shown, encoding="utf-8")

    def attempts(path: Path) -> list[JsonObject]:
        plan = plan_run(load_spec(path), RunOptions())
        # The workdir is the spec's folder, which differs by construction.
        return [{**describe(a), "workdir": None} for a in plan.attempts]

    assert attempts(tmp_path / "segfault.yaml") == attempts(ROOT / "specs" / "segfault.yaml")


# ---- the architecture page -------------------------------------------------------------

LARGE_MODULE_LINES = 400


def _size_table_modules() -> list[str]:
    """The modules the size table of docs/ARCHITECTURE.md names, as paths under reprospec/."""
    page = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = page.split("\n## Module sizes\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([\w/]+\.py)`", row)]


def test_architecture_size_table_names_every_large_module_and_only_real_ones() -> None:
    package = ROOT / "reprospec"
    named = _size_table_modules()
    assert len(named) >= 10  # the table was found and read
    large = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if path.read_bytes().count(b"\n") > LARGE_MODULE_LINES
    )
    assert [module for module in large if module not in named] == [], (
        "docs/ARCHITECTURE.md: give these modules a row (and a reason) in the size table"
    )
    assert [module for module in named if not (package / module).is_file()] == []


def test_architecture_stage_table_lists_every_folder_in_the_layer_order() -> None:
    page = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = page.split("\n## The stages\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| `")]
    listed = [
        name.strip("`").rstrip("/").removesuffix(".py") for row in rows for name in row.split(", ")
    ]
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    assert listed == list(import_graph.STAGE_NAMES)
    folders = sorted(
        p.name for p in (ROOT / "reprospec").iterdir() if (p / "__init__.py").is_file()
    )
    assert [folder for folder in folders if folder not in listed] == []


def test_architecture_page_names_every_module_of_the_stage_folders() -> None:
    """core/requirements.py, spec/presets.py, plan/missing.py, process/pidlimit.py,
    store/digests.py and three harness modules were named nowhere on the page that says
    which folder owns what: every module of a stage folder is named there (`commands/` is
    one module per verb, named as a rule)."""
    page = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    package = ROOT / "reprospec"
    unnamed = [
        path.relative_to(package).as_posix()
        for path in sorted(package.rglob("*.py"))
        if path.name != "__init__.py"
        and len(path.relative_to(package).parts) > 1
        and path.relative_to(package).parts[0] != "commands"
        and f"`{path.name}`" not in page
        and f"/{path.name}`" not in page
    ]
    assert unnamed == []


def test_architecture_sections_bullet_names_every_field_of_its_sections() -> None:
    """The page said `Environment` and `RunPolicy` hold their defaults "in this one place"
    and listed their fields without shared_tmp, debug, perturb, stall, preload, instances."""
    from reprospec.core import sections

    page = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    bullet = page.split("\n- `core/sections.py`:", 1)[1].split("\n- ", 1)[0]
    missing = [
        f"{cls.__name__}.{field.name}"
        for cls in (sections.Environment, sections.RunPolicy)
        for field in dataclasses.fields(cls)
        if field.name.removesuffix("_s") not in bullet
    ]
    assert missing == []


# ---- the command line --------------------------------------------------------------------


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the parser has no subcommands")


def _arguments(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            yield action


def _old_json_spelling(action: argparse.Action) -> bool:
    """`--json`, kept hidden as another spelling of `--format json` (options.text_or_json)."""
    return (
        action.option_strings == ["--json"]
        and action.dest == "format"
        and action.const == "json"
        and action.help == argparse.SUPPRESS
    )


def test_every_command_and_option_has_help_text() -> None:
    parser = build_parser()
    missing = ["/".join(a.option_strings) for a in _arguments(parser) if not (a.help or "").strip()]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing += [c.dest for c in subparsers._choices_actions if not (c.help or "").strip()]
    for name, sub in _commands().items():
        for action in _arguments(sub):
            if _old_json_spelling(action):
                continue  # hidden on purpose, and documented in cli.md
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.metavar}")
    assert missing == []


def test_find_links_help_names_every_runner_that_installs_from_it() -> None:
    """`run --find-links` said "docker runner: a wheelhouse for images built offline" while
    the venv runner installs from it too (runners/__init__.py), as cli.md says: a verb
    whose `--runner` offers venv says so in its `--find-links` help."""
    wrong = []
    for name, sub in _commands().items():
        actions = {flag: a for a in _arguments(sub) for flag in a.option_strings}
        runner, links = actions.get("--runner"), actions.get("--find-links")
        if runner is None or links is None or "venv" not in (runner.choices or ()):
            continue
        if "venv" not in (links.help or ""):
            wrong.append(name)
    assert wrong == []


def _cli_sections() -> dict[str, str]:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^## reprospec (\w+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def test_cli_md_documents_every_command_with_its_usage_and_options() -> None:
    sections = _cli_sections()
    assert sorted(sections) == sorted(_commands())
    for name, sub in _commands().items():
        # A `|` in a table cell is written `\|` (GitHub ends the cell at a bare one).
        section = " ".join(sections[name].replace("\\|", "|").split())
        usage = " ".join(sub.format_usage().split()).removeprefix("usage: ")
        assert usage in section, f"docs/cli.md: the usage of {name} is not `{usage}`"
        for action in _arguments(sub):
            names = action.option_strings or [str(action.metavar)]
            for flag in names:
                assert f"`{flag}" in section, f"docs/cli.md: {name} does not document {flag}"


def test_cli_md_selecting_section_names_every_verb_that_takes_m_and_set() -> None:
    """The section said `plan`, `run` and `materialize` take -m and --set; slurm and the four
    searches take them too, and their rows link to it."""
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    section = page.split("\n## Selecting and overriding\n", 1)[1].split("\n## ", 1)[0]
    opening = section.strip().split("\n\n", 1)[0]  # the paragraph under the heading
    takers = [
        name
        for name, sub in _commands().items()
        if {"-m", "--set"} <= {flag for a in _arguments(sub) for flag in a.option_strings}
    ]
    assert len(takers) >= 3
    assert [name for name in takers if f"`{name}`" not in opening] == []


def test_cli_md_overview_table_links_every_command() -> None:
    """The table under cli.md's title is the list of verbs a reader scans first."""
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    overview = page.split("\n## ", 1)[0]
    linked = re.findall(r"^\| \[`[^`]*`\]\(#reprospec-(\w+)\)", overview, flags=re.M)
    assert sorted(linked) == sorted(_commands())


def test_readmes_verbs_block_shows_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## The verbs\n", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"^    reprospec (\w+)", section, flags=re.M)
    assert sorted(set(shown)) == sorted(_commands())


def test_readmes_documentation_list_links_every_page_of_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"^- \[docs/([\w-]+\.md)\]", section, flags=re.M)
    assert sorted(linked) == sorted(page.name for page in DOCS.glob("*.md"))


_BARE_PIPE = re.compile(r"(?<!\\)\|")


def _table_rows(text: str) -> Iterator[tuple[int, int, int]]:
    """(line, cells of its table's header, its own cells) for each table row outside fenced
    blocks. Cells are counted by the bare `|`: GitHub ends a cell at one even inside
    backticks, so a `|` in a cell is written `\\|`."""
    header = None
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|"):
            header = None
            continue
        cells = len(_BARE_PIPE.findall(line))
        if header is None:
            header = cells
        yield number, header, cells


def test_every_table_row_of_the_docs_has_its_headers_cells() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    wrong = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages
        for number, header, cells in _table_rows(page.read_text(encoding="utf-8"))
        if cells != header
    ]
    assert len(pages) >= 10
    assert wrong == []


# ---- the spec format ------------------------------------------------------------------------


def _schema_words(node: object, skip: object) -> Iterator[str]:
    """Every property name and string enum value of the schema (the signal list left out)."""
    if node is skip:
        return
    if isinstance(node, dict):
        yield from node.get("properties", {})
        for value in node.get("enum", ()):
            if isinstance(value, str):
                yield value
        for value in node.values():
            yield from _schema_words(value, skip)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_words(value, skip)


def test_spec_format_md_names_every_field_and_choice_of_the_schema() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    page = (DOCS / "spec-format.md").read_text(encoding="utf-8")
    words = dict.fromkeys(_schema_words(schema, schema["$defs"]["signal"]))
    missing = [word for word in words if f"`{word}" not in page and f"{word}:" not in page]
    assert missing == []


# ---- the Python API ---------------------------------------------------------------------

_SIGNATURE = re.compile(
    r"\*\*`(?P<name>\w+)\((?P<params>.*?)\)(?: -> (?P<returns>\w+))?`\*\*", re.S
)


def _as_documented(function: Callable[..., object]) -> tuple[str, str]:
    """A function's parameters and return type as python-api.md writes them:
    `run_id, *, out=Path(".reprospec"), jobs=None`, `RunResult`."""
    words = []
    star = False
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and not star:
            words.append("*")
            star = True
        default = parameter.default
        if default is parameter.empty:
            words.append(parameter.name)
        elif isinstance(default, Path):
            words.append(f'{parameter.name}=Path("{default}")')
        elif isinstance(default, str):
            words.append(f'{parameter.name}="{default}"')
        else:
            words.append(f"{parameter.name}={default!r}")
    returns = str(inspect.signature(function).return_annotation).rsplit(".", 1)[-1]
    return ", ".join(words), returns


def test_python_api_md_gives_each_function_its_signature() -> None:
    """Each public function's first bold signature on the page is its own: the parameters
    in order, keyword-only after `*`, their defaults and the return type (one elided with
    `...`, as `minimize_spec(...)`, says only the name)."""
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    shown: dict[str, tuple[str, str]] = {}
    for match in _SIGNATURE.finditer(page):
        params = " ".join(match["params"].split())
        shown.setdefault(match["name"], (params, match["returns"] or ""))
    functions = {
        name: getattr(reprospec, name)
        for name in reprospec.__all__
        if inspect.isfunction(getattr(reprospec, name))
    }
    assert sorted(name for name in functions if name not in shown) == []
    wrong = {
        name: (shown[name], _as_documented(function))
        for name, function in functions.items()
        if shown[name][0] != "..." and shown[name] != _as_documented(function)
    }
    assert wrong == {}


def test_python_api_md_names_every_public_name() -> None:
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    spelled = [(name, f"`{name}", f"`reprospec.{name}") for name in reprospec.__all__]
    assert [
        name for name, plain, dotted in spelled if plain not in page and dotted not in page
    ] == []


_LISTED_FIELD_BY_FIELD = (
    "Spec",
    "RunOptions",
    "RunResult",
    "Validation",
    "IsolateOptions",
    "MinimizeOptions",
    "AmplifyOptions",
    "BisectRequest",
)


def test_python_api_md_names_every_field_of_the_options_and_the_result() -> None:
    """The spec, the options (RunOptions and each search's) and the result down to an
    outcome (and an instance's) are listed field by field on the page: a field added to one
    is named there too (`Spec.locations` was not, nor `InstanceResult.ready_s`, `start_s`,
    `end_s`)."""
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    classes = [getattr(reprospec, name) for name in _LISTED_FIELD_BY_FIELD]
    classes += [CellResult, AttemptResult, Outcome]
    missing = [
        f"{cls.__name__}.{field.name}"
        for cls in classes
        for field in dataclasses.fields(cls)
        if f"`{field.name}`" not in page
    ]
    # An instance's fields in its own list: `instance`, `gpu_slot`, `duration_s` are named
    # elsewhere on the page, of other classes.
    listed = " ".join(page.split()).split("an `InstanceResult` each:", 1)[1].split(")", 1)[0]
    missing += [
        f"InstanceResult.{field.name}"
        for field in dataclasses.fields(InstanceResult)
        if f"`{field.name}`" not in listed
    ]
    assert missing == []


def test_python_api_md_planning_names_every_field_of_the_plan_and_its_attempts() -> None:
    """The Planning section lists `RunPlan` and `AttemptPlan` field by field, and left out
    `RunPlan.options` (the options the attempts were planned with, which `extra_attempt`
    plans a `repeat: auto` cell's added attempts with) and `AttemptPlan.spec_name`: they
    were named elsewhere on the page only, of other classes."""
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    section = page.split("\n## Planning\n", 1)[1].split("\n## ", 1)[0]
    missing = [
        f"{cls.__name__}.{field.name}"
        for cls in (reprospec.RunPlan, AttemptPlan)
        for field in dataclasses.fields(cls)
        if f"`{field.name}`" not in section
    ]
    assert missing == []


def test_minimize_output_row_and_api_name_every_file_minimize_writes_into_dir() -> None:
    """cli.md's `minimize -o` row and python-api.md's `Minimized.output` named
    `minimized.yaml`, `repro.sh` and `minimize.md` but not `minimize.json`, which
    minimize/report.py writes into DIR beside them (write_reports)."""
    report = (ROOT / "reprospec" / "minimize" / "report.py").read_text(encoding="utf-8")
    written = re.findall(r'\(out / "([\w.]+)"\)|\("(minimize\.\w+)", ', report)
    names = {a or b for a, b in written} | {"minimized.yaml"}
    assert {"repro.sh", "minimize.json", "minimize.md"} <= names
    row = next(
        line for line in _cli_sections()["minimize"].splitlines() if line.startswith("| `-o DIR`")
    )
    api = (DOCS / "python-api.md").read_text(encoding="utf-8")
    output = api.split("`Minimized`:", 1)[1].split("`output` (", 1)[1].split(")", 1)[0]
    assert sorted(n for n in names if f"`{n}`" not in row) == []
    assert sorted(n for n in names if f"`{n}`" not in output) == []


def test_cli_md_names_the_variables_of_the_child_protocol_as_architecture_md_does() -> None:
    """cli.md said every attempt gets `REPROSPEC_CELL`, which only a workload's does
    (ARCHITECTURE.md's table: "(workload only)"), and left out `TMPDIR` and
    `XDG_CACHE_HOME`: its sentence names each variable of that table, a workload's own as
    a workload's."""
    architecture = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = architecture.split("Environment variables the runner gives every attempt:", 1)[1]
    rows = re.findall(r"^\| (`[^|]+) \| ([^|]+) \|$", table.split("\n\n", 2)[1], flags=re.M)
    page = " ".join((DOCS / "cli.md").read_text(encoding="utf-8").split())
    sentence = page.split("What every attempt gets from the engine (", 1)[1]
    sentence = sentence.split(") is described in", 1)[0]
    common, _, workload = sentence.partition("a workload's attempt also")
    assert len(rows) >= 6
    wrong = []
    for names, meaning in rows:
        only_workload = meaning.startswith("(workload only)")
        where = workload if only_workload else common
        for name in re.findall(r"`(\w+)`", names):
            # Whole names: `REPROSPEC_ENV` is not found in `REPROSPEC_ENV_JSON`.
            said = rf"`{name}[`=]"
            if not re.search(said, where) or (only_workload and re.search(said, common)):
                wrong.append(name)
    assert wrong == []


def _str_keys(node: ast.Dict) -> list[str]:
    return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def _spread(node: ast.expr) -> Iterator[ast.Dict]:
    """The dict literals a `**` entry may spread: `**({"unsaved": ...} if ... else {})`."""
    if isinstance(node, ast.Dict):
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _spread(node.body)
        yield from _spread(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _spread(value)


def _largest_dict_keys(module: Path, function: str) -> tuple[list[str], list[str]]:
    """The string keys of the largest dict literal in a module-level function (the JSON
    object a search's `to_dict` makes), and the keys it may also have: those of a dict
    it spreads in a `**` entry (`**({"unsaved": ...} if found.unsaved else {})`) and
    those the function sets by subscript (`out["key"] = ...`)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    found: list[str] = []
    largest: ast.Dict | None = None
    assigned: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Dict):
                    keys = _str_keys(sub)
                    if len(keys) > len(found):
                        found, largest = keys, sub
                elif isinstance(sub, ast.Assign):
                    assigned += [
                        t.slice.value
                        for t in sub.targets
                        if isinstance(t, ast.Subscript)
                        and isinstance(t.slice, ast.Constant)
                        and isinstance(t.slice.value, str)
                    ]
    spread = (
        [
            key
            for k, v in zip(largest.keys, largest.values, strict=True)
            if k is None
            for d in _spread(v)
            for key in _str_keys(d)
        ]
        if largest is not None
        else []
    )
    return found, [*spread, *assigned]


@pytest.mark.parametrize(
    ("verb", "module"),
    [("isolate", "isolation"), ("minimize", "minimize"), ("amplify", "amplify")],
)
def test_cli_md_json_object_of_each_search_names_every_key_it_has(verb: str, module: str) -> None:
    """minimize's `--format json prints {...}` left out `kept_output`, which the object
    has (and the -o row names): each search's listing names every key of its to_dict."""
    keys, sometimes = _largest_dict_keys(ROOT / "reprospec" / module / "report.py", "to_dict")
    section = _cli_sections()[verb]
    listed = " ".join(section.split("`--format json` prints `{", 1)[1].split("}`", 1)[0].split())
    assert len(keys) >= 20
    assert [key for key in keys if f'"{key}"' not in listed] == []
    # A key the object has only at times (`unsaved`) is said where the section says when.
    assert [key for key in sometimes if f'"{key}"' not in section] == []


def _dict_keys_of(module: Path, function: str, cls: str | None = None) -> set[str]:
    """The string keys of every dict literal in `function` (a method of `cls`, when given)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    scope = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls), tree)
    (body,) = [n for n in ast.walk(scope) if isinstance(n, ast.FunctionDef) and n.name == function]
    return {
        key.value
        for node in ast.walk(body)
        if isinstance(node, ast.Dict)
        for key in node.keys
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    }


def test_cli_md_bisect_json_example_has_every_key_of_its_output() -> None:
    """bisect's `--format json` example left out `reason`, `rate`, `perturbed`, `id`,
    `spec`, `cell`, `good`, `bad`, `by_date`, `runner` and `changed`, which it prints:
    BisectReport.to_json's own keys and those of the result's to_dict."""
    bisect = ROOT / "reprospec" / "bisect"
    keys = _dict_keys_of(bisect / "state.py", "to_json", "BisectReport")
    keys |= _dict_keys_of(bisect / "search.py", "to_dict", "BisectResult")
    section = _cli_sections()["bisect"]
    example = section.split("`--format json`:\n", 1)[1].split("\n\n", 1)[0]
    assert {"package", "first_bad", "status", "folder", "untestable_between"} <= keys
    assert sorted(key for key in keys if f'"{key}"' not in example) == []
    # investigating.md gives the first keys only, and must say that more follow.
    page = " ".join((DOCS / "investigating.md").read_text(encoding="utf-8").split())
    shown = page.split('`--format json` prints `{"package"', 1)[1].split("}`", 1)[0]
    assert shown.endswith("...") or all(f'"{key}"' in shown for key in keys - {"package"})


_COUNTS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def test_capture_md_counts_the_ticket_fixtures_it_points_to() -> None:
    """capture.md said "Six real-world-shaped tickets" of tests/data/tickets/, which holds
    seven since dataloader-oom-killed.md was added: the count and the list are the folder's."""
    # The tickets alone: a README or a .gitkeep beside them is none.
    tickets = sorted(
        p
        for p in (ROOT / "tests" / "data" / "tickets").iterdir()
        if p.is_file()
        and not p.name.startswith(".")
        and p.suffix in (".md", ".txt")
        and p.stem.upper() != "README"
    )
    page = " ".join((DOCS / "capture.md").read_text(encoding="utf-8").split())
    said = re.search(r"(\w+) real-world-shaped tickets are in", page)
    assert said is not None
    count = len(tickets)
    assert said[1].lower() == (_COUNTS[count - 1] if count <= len(_COUNTS) else str(count))
    listing = page[said.end() :].split(". ", 1)[0]
    assert listing.count(", ") + listing.count(" and ") >= len(tickets) - 1


def test_cli_md_plan_text_row_names_each_field_the_json_row_lists() -> None:
    """`plan --format text` prints every field of a cell `--format json` does (the same
    dict, commands/plan.py), but its row left out the attempt: each json field is named
    in the text row too, in its words (`timeout_s` as timeout, `expect` as expectation)."""
    rows = {
        row.split(" | ")[0]: row
        for row in _cli_sections()["plan"].splitlines()
        if row.startswith("| `--format ")
    }
    listed = rows["| `--format json`"].split("each cell with", 1)[1]
    words = {"timeout_s": "timeout", "stall_s": "stall", "expect": "expectation", "id": ""}
    text = rows["| `--format text`"]
    fields = re.findall(r"`(\w+)`", listed.split("|", 1)[0])
    assert len(fields) >= 10
    # Whole words: `env` was found inside `environment`.
    said = [words.get(f, f) for f in fields]
    assert [w for w in said if w and not re.search(rf"\b{re.escape(w)}\b", text)] == []


@functools.cache
def _defined(module: Path) -> frozenset[str]:
    """The names a module defines or imports at any level (classes, functions, variables)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


_EXTENSIONS = {"py", "md", "json", "jsonl", "yaml", "yml", "txt", "log", "sh", "c", "in"}
_DOTTED = re.compile(r"`(?:reprospec\.)?(?P<module>[a-z_]+(?:\.[a-z_]+)*)\.(?P<name>[A-Za-z_]\w*)")


def test_every_module_dot_name_the_docs_give_is_defined_there() -> None:
    """`outcome.judge.JudgedCells` named a class that had moved to outcome/judgedcells.py:
    a dotted name whose module is a file of the package must be defined in that file."""
    package = ROOT / "reprospec"
    wrong = []
    checked = 0
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in _DOTTED.finditer(text):
            parts = match["module"].split(".")
            modules = [
                base.joinpath(*parts).with_suffix(".py") for base in (package, package / "harness")
            ]
            module = next((m for m in modules if m.is_file()), None)
            if module is None or match["name"] in _EXTENSIONS:
                continue
            checked += 1
            if match["name"] not in _defined(module):
                line = text.count("\n", 0, match.start()) + 1
                wrong.append(f"{page.name}:{line}: {match[0]}")
    assert checked >= 20  # the pattern found the docs' dotted names
    assert wrong == []


def test_every_verbs_j_states_its_default_in_help_and_cli_md() -> None:
    """`isolate`, `minimize`, `amplify` and `bisect`'s `-j` rows of cli.md said no default
    (nor did bisect's and slurm's help), though every one falls back, as `run -j` does, to
    the spec's `run.parallel`, else 1."""
    sections = _cli_sections()
    wrong = []
    for name, sub in _commands().items():
        for action in _arguments(sub):
            if "-j" not in action.option_strings:
                continue
            rows = [
                line
                for line in sections[name].splitlines()
                if line.startswith("| ") and "`-j" in line.split(" | ")[0]
            ]
            if "run.parallel, else 1)" not in " ".join((action.help or "").split()):
                wrong.append(f"{name} -j --help")
            if name != "slurm" and not any("`run.parallel`, else 1" in row for row in rows):
                wrong.append(f"docs/cli.md {name} -j")  # slurm's row: "as run's"
    assert wrong == []
