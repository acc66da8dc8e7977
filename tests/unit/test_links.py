"""The README and docs/ hold together: every link reaches a file of the repository (and a
heading of it, for a `#anchor`), nothing points outside it, every page of docs/ can be
reached from the README, and the README stays short enough to read in five minutes.

A newcomer reads the README first and follows its links, often in a clone with no network
(a cluster's login node); a link that 404s, or a page nobody links to, is documentation that
does not exist for them. So every link, the README's included, is a path relative to the page
that reads the same in a checkout, a clone's file browser and the repository's web page, and a
URL (even one to this project's own repository) is a link that leaves it."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest


def _repository_root() -> Path:
    """The folder holding pyproject.toml, however deep this file sits under tests/."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file():
            return folder
    raise AssertionError("no pyproject.toml above the tests")


ROOT = _repository_root()
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 250


# Fenced blocks (``` or ~~~) and inline code spans hold text, not links.
_FENCE = re.compile(r"^(?P<fence>```|~~~).*?^(?P=fence)[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<target>[^)\s]+)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(?P<target>\S+)", re.M)
_HEADING = re.compile(r"^#{1,6}[ \t]+(?P<text>.+?)[ \t#]*$", re.M)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _name(page: Path, root: Path = ROOT) -> str:
    return page.relative_to(root).as_posix()


def _prose(page: Path) -> str:
    """The page without its code: fenced blocks, indented blocks and inline code spans."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    # An indented code block: a run of lines indented 4 spaces (or a tab) after a blank line.
    text = re.sub(r"(?:(?<=\n\n)|^)(?:(?: {4}|\t).*\n?)+", "", text)
    return _CODE_SPAN.sub("", text)


def _targets(page: Path) -> list[str]:
    prose = _prose(page)
    found = [m["target"] for m in _LINK.finditer(prose)]
    found += [m["target"] for m in _IMAGE.finditer(prose)]
    found += [m["target"] for m in _REFERENCE.finditer(prose)]
    return [t[1:-1] if t.startswith("<") else t for t in found]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, code marks and punctuation dropped,
    spaces made hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def anchors(page: Path) -> set[str]:
    """Every `#anchor` a link into `page` may name (a repeated heading gets `-1`, `-2`, ...)."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for match in _HEADING.finditer(text):
        slug = _slug(match["text"])
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with the links of one page of the repository at `root`, one line each."""
    problems = []
    name = _name(page, root)
    for target in _targets(page):
        path_part, _, fragment = target.partition("#")
        if _SCHEME.match(path_part) or path_part.startswith("//"):
            problems.append(f"{name}: {target} points outside the repository")
            continue
        if path_part.startswith("/"):
            problems.append(f"{name}: {target} is absolute; links are relative")
            continue
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(root):
            problems.append(f"{name}: {target} points outside the repository")
        elif not resolved.exists():
            problems.append(f"{name}: {target} does not exist")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{name}: {target} names no heading of {_name(resolved, root)}")
    if "../shared" in page.read_text(encoding="utf-8"):
        problems.append(f"{name}: mentions ../shared, which a clone does not have")
    return problems


def test_the_pages_have_links_to_check() -> None:
    # A broken link pattern would make every test below pass without looking at anything.
    assert len(_targets(README)) >= 10
    assert any("#" in t for page in PAGES for t in _targets(page))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_link_resolves_inside_the_repository(page: Path) -> None:
    assert link_problems(page) == []


def test_every_page_of_docs_can_be_reached_from_the_readme() -> None:
    reached: set[Path] = set()
    todo = [README]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for target in _targets(page):
            path_part = target.partition("#")[0]
            if not path_part or _SCHEME.match(path_part):
                continue
            linked = (page.parent / path_part).resolve()
            if linked.suffix == ".md" and linked.is_file() and linked.is_relative_to(ROOT):
                todo.append(linked)
    assert [_name(p) for p in PAGES if p not in reached] == []


def test_the_readme_reads_in_five_minutes() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move details into docs/"
    )


def test_the_link_check_finds_what_is_wrong(tmp_path: Path) -> None:
    # The checker itself, on a repository of two pages, one made to fail it in every way.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "cli.md").write_text("# CLI\n\n## Exit codes\n", encoding="utf-8")
    page = tmp_path / "docs" / "broken.md"
    page.write_text(
        "# A page\n\n"
        "[gone](no-such-page.md) [away](https://example.com/) [anchor](cli.md#no-such-heading)\n"
        "[home](https://github.com/someone/project/blob/main/docs/cli.md)\n"
        "[up](../../outside.md) [fine](cli.md#exit-codes) [self](#a-page)\n\n"
        "```\n[in a fence](also-gone.md)\n```\n\n"
        "`[in code](gone-too.md)`\n\n"
        "    [in an indented block](gone-as-well.md)\n",
        encoding="utf-8",
    )
    name = "docs/broken.md"
    assert link_problems(page, root=tmp_path) == [
        f"{name}: no-such-page.md does not exist",
        f"{name}: https://example.com/ points outside the repository",
        f"{name}: cli.md#no-such-heading names no heading of docs/cli.md",
        f"{name}: https://github.com/someone/project/blob/main/docs/cli.md points outside the"
        " repository",
        f"{name}: ../../outside.md points outside the repository",
    ]


def test_the_readme_links_by_relative_paths() -> None:
    # The README above all: it is read in clones with no network, where a URL to the
    # project's own web page is a dead link however right its path.
    targets = _targets(README)
    assert len(targets) >= 10
    assert [t for t in targets if _SCHEME.match(t) or t.startswith(("/", "//"))] == []


def test_anchors_follow_githubs_rules() -> None:
    assert _slug("Finding the cause: `reprospec isolate`") == "finding-the-cause-reprospec-isolate"
    assert _slug("The engine's own costs") == "the-engines-own-costs"
    assert "exit-codes" in anchors(DOCS / "cli.md")
