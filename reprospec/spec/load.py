"""Load a spec: YAML (or a report.md embedding one) -> `--set` overrides -> schema ->
semantic checks -> a frozen `Spec` (defaults are not written in: `sections.py` owns them).

Every problem of a file is collected and raised at once as a SpecError, each
line `FILE:LINE:COL: PATH: MESSAGE` with FILE the path as given. A problem that
comes from a `--set` ends with `(from --set PATH=VALUE)`; when the file has no
line for it (a key only the override brings) it is located at the mapping the key landed
in, as the file has it (`run.timout=5s`: at `run`).

The parts: `files.py` reads files, `overrides.py` applies `--set`,
`checks/` (`document.py`, with `expect.py` and `cells.py`) finds the problems;
`validate.py` checks whole files and folders for `validate`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.inputs import Spec
from reprospec.core.jsontypes import JsonPath, JsonValue
from reprospec.errors import SpecError, UsageError
from reprospec.spec.checks.document import check
from reprospec.spec.files import read_spec_text, report_origin
from reprospec.spec.overrides import annotate, apply_override, override_target
from reprospec.spec.yamlsource import Document, Problem, YamlSourceError, load_yaml


def _refuse_undecodable(path: Path) -> None:
    """SpecError for a spec whose path is not UTF-8 (a folder named `d$'\\xff'ir`): every
    verb that runs it records the path (a run's store, a search's id, materialize's run.sh)
    in UTF-8, which ended in an internal UnicodeEncodeError, a run's after its attempts had
    run. Said by `validate` and `plan` too, so a spec they pass is one `run` takes."""
    from reprospec.core.logtext import not_utf8

    wrong = not_utf8("the spec's path", str(path.resolve()))
    if wrong is not None:
        raise SpecError([wrong])


def load_spec(path: str | Path, overrides: Sequence[str] = (), *, files: bool = True) -> Spec:
    """Read, override, validate and complete one spec; raise SpecError with every problem.

    `files=False`: the spec's `files` need not all be there, for a reader that runs
    nothing of it (`history SPEC` naming its runs, minimize planning its own DIR's spec,
    `bundle` which refuses a run with one gone by name); every other check holds.
    """
    file = str(path)
    yaml_text, offset, hint = read_spec_text(Path(path))
    _refuse_undecodable(Path(path))
    report = Path(path).suffix.lower() == ".md"
    origin = report_origin(hint, Path(path)) if report else None
    # A report without its original spec resolves relative paths against its own folder
    # (Spec.base_dir), so they are checked there too: unchecked, a missing workdir validated
    # and every cell of its run was infra-error, where the same spec as .yaml was refused.
    base_dir = origin.parent if origin else Path(path).parent
    try:
        source = load_yaml(yaml_text, line_offset=offset)
    except YamlSourceError as exc:
        if exc.document is None or overrides:
            raise SpecError([p.format(file) for p in exc.problems]) from None
        # Keys given twice, and nothing else wrong with the YAML: the rest of the file's
        # problems are said with them (every problem at once), but none under those keys,
        # whose value the user has yet to choose, nor one that holds of one of its values
        # only: the file is checked with each key's first value too, and a problem is said
        # where both readings have it (`run.stall` is not below a `timeout` given twice as
        # 5m then 10m, or a marker "does nothing" with its `pattern` given twice, judged the
        # last value alone). (With --set, annotate's reading of which override a problem
        # came from wants a document as given: the YAML's alone.)
        rest = _checked(exc.document, overrides, base_dir, files=files)[2]
        if exc.first is not None:
            both = set(_checked(exc.first, overrides, base_dir, files=files)[2])
            rest = [p for p in rest if p in both]
        twice = exc.duplicated
        rest = [p for p in rest if not any(p.path and p.path[: len(d)] == d for d in twice)]
        found = sorted([*exc.problems, *rest], key=lambda p: (p.line, p.col))
        raise SpecError([p.format(file) for p in found]) from None
    data, targets, problems = _checked(source, overrides, base_dir, files=files)
    if problems or not isinstance(data, dict):  # (a document that is no mapping is a problem)

        def without(index: int) -> set[JsonPath | None] | None:
            """The paths of the problems of the document without the override at `index`."""
            rest = [o for n, o in enumerate(overrides) if n != index]
            try:
                found = _checked(source, rest, base_dir, files=files)[2]
            except UsageError:  # a later override needs what this one wrote
                return None
            return {problem.path for problem in found}

        raise SpecError(annotate(file, problems, overrides, targets, without, source.locations))
    return Spec(
        path=Path(path),
        name=str(data["name"]),
        document=data,
        source_text=yaml_text,
        locations=dict(source.locations),
        origin=origin,
        overrides=tuple(overrides),
    )


def _checked(
    source: Document, overrides: Sequence[str], base_dir: Path | None, *, files: bool = True
) -> tuple[JsonValue, list[JsonPath | None], list[Problem]]:
    """The document with `overrides` applied, the path each wrote, and its problems."""
    # Overrides change the document in place: on a copy, the loaded one stays as read
    # (without overrides nothing changes it, and `validate` or `plan` need not copy it).
    data = copy.deepcopy(source.data) if overrides else source.data
    # Paths an override brings that the file does not have are located at
    # (0, N): "from the Nth --set", so a problem there never points at line 1.
    locations = dict(source.locations)
    targets: list[JsonPath | None] = []
    for index, override in enumerate(overrides):
        data = apply_override(data, override)
        target = override_target(data, override)
        targets.append(target)
        for depth in range(1, len(target or ()) + 1):
            locations.setdefault(tuple(target or ())[:depth], (0, index + 1))
    return (
        data,
        targets,
        check(data, locations, source.key_locations, base_dir=base_dir, files=files),
    )


def plain(value: object) -> JsonValue:
    """Mappings and sequences as plain dicts and lists (for yaml.safe_dump and JSON)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # (a spec document holds nothing else: yamlsource reads JSON's types)


def written_again(text: str) -> str | None:
    """A stored spec text (a `--set` run's: its `# resolved from ...` line, then its
    document as `dump_yaml` wrote it) as `dump_yaml` writes it today, its first line kept
    where it is that header; None where it does not load. Two texts of one document written
    by two versions of `dump_yaml` (a multi-line string double-quoted, now `|`) read equal."""
    from reprospec.core.words import RESOLVED_SPEC
    from reprospec.spec.yamlsource import dump_yaml

    header = text.split("\n", 1)[0] + "\n" if text.startswith(RESOLVED_SPEC) else ""
    try:
        return header + dump_yaml(plain(load_yaml(text).data))
    except YamlSourceError:
        return None


def same_spec_text(stored: str, current: str) -> bool:
    """Whether a run's stored spec text is `current`: equal, or, where either is a `--set`
    run's (its document written out by `dump_yaml`), equal written out again today: a run
    stored before `dump_yaml` wrote multi-line strings as literal blocks is still the spec
    it ran (`--resume`, `bundle`, `merge`)."""
    from reprospec.core.words import RESOLVED_SPEC

    if stored == current:
        return True
    if not (stored.startswith(RESOLVED_SPEC) or current.startswith(RESOLVED_SPEC)):
        return False
    again = written_again(stored)
    return again is not None and again == written_again(current)
