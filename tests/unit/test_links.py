"""The README and docs/ hold together: every link reaches a file of the repository (and a
heading of it, for a `#anchor`), nothing points outside it, every page of docs/ can be
reached from the README, and the README stays short enough to read in five minutes.

A newcomer reads the README first and follows its links; a link that 404s, or a page nobody
links to, is documentation that does not exist for them. The README also ships as the
package's long description, shown on the package index's page, where a relative link has no
repository to resolve against: the README links to the repository's files by their absolute
URL (`REPOSITORY/blob/main/PATH`), which this test maps back to PATH in the checkout, so a
renamed file still fails it. A link to any other place would be the only one that leaves the
project."""

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


def _repository_url(root: Path = ROOT) -> str:
    """The project's home as pyproject.toml's [project.urls] names it (`Repository = "..."`)."""
    found = re.search(
        r'^Repository\s*=\s*"(?P<url>[^"]+)"', (root / "pyproject.toml").read_text(), re.M
    )
    assert found, "pyproject.toml's [project.urls] has no Repository"
    return found["url"].rstrip("/")


REPOSITORY = _repository_url()

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


def _in_repository(target: str, repository: str = REPOSITORY) -> str | None:
    """The repository path an absolute link to one of its files names
    (`REPOSITORY/blob/main/docs/cli.md` -> `docs/cli.md`), or None for any other link."""
    for kind in ("blob", "tree"):
        prefix = f"{repository}/{kind}/main/"
        if target.startswith(prefix) and len(target) > len(prefix):
            return target[len(prefix) :]
    return None


def link_problems(
    page: Path, root: Path = ROOT, repository: str = REPOSITORY, *, absolute: bool = False
) -> list[str]:
    """What is wrong with the links of one page of the repository at `root`, one line each.

    `absolute`: the page is shown away from the repository (the README, on the package
    index), so a link to a file must be its absolute URL under `repository`."""
    problems = []
    name = _name(page, root)
    for target in _targets(page):
        path_part, _, fragment = target.partition("#")
        in_repository = _in_repository(path_part, repository)
        if in_repository is not None:
            path_part, base = in_repository, root
        elif _SCHEME.match(path_part) or path_part.startswith("//"):
            problems.append(f"{name}: {target} points outside the repository")
            continue
        elif path_part.startswith("/"):
            problems.append(f"{name}: {target} is absolute; links are relative")
            continue
        elif path_part and absolute:
            problems.append(
                f"{name}: {target} is relative, which a package index page cannot resolve;"
                f" link {repository}/blob/main/PATH"
            )
            continue
        else:
            base = page.parent
        resolved = (base / path_part).resolve() if path_part else page
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
    assert link_problems(page, absolute=page == README) == []


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
            in_repository = _in_repository(path_part)
            if in_repository is not None:
                linked = (ROOT / in_repository).resolve()
            elif not path_part or _SCHEME.match(path_part):
                continue
            else:
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
        f"{name}: ../../outside.md points outside the repository",
    ]


def test_the_link_check_maps_the_readmes_absolute_links_back_to_files(tmp_path: Path) -> None:
    # The README as the package index shows it: links to the repository's files by URL,
    # checked against the checkout as relative ones are; a relative link is the mistake.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "cli.md").write_text("# CLI\n\n## Exit codes\n", encoding="utf-8")
    page = tmp_path / "README.md"
    home = "https://github.com/someone/project"
    page.write_text(
        f"# Project\n\n[fine]({home}/blob/main/docs/cli.md#exit-codes)"
        f" [folder]({home}/tree/main/docs)\n"
        f"[gone]({home}/blob/main/docs/gone.md) [anchor]({home}/blob/main/docs/cli.md#nope)\n"
        f"[other branch]({home}/blob/dev/docs/cli.md) [relative](docs/cli.md) [self](#project)\n",
        encoding="utf-8",
    )
    problems = link_problems(page, root=tmp_path, repository=home, absolute=True)
    assert problems == [
        f"README.md: {home}/blob/main/docs/gone.md does not exist",
        f"README.md: {home}/blob/main/docs/cli.md#nope names no heading of docs/cli.md",
        f"README.md: {home}/blob/dev/docs/cli.md points outside the repository",
        "README.md: docs/cli.md is relative, which a package index page cannot resolve;"
        f" link {home}/blob/main/PATH",
    ]


def test_the_readme_links_to_the_repository_named_in_pyproject() -> None:
    # The URLs are checked against this checkout only when they start with pyproject's
    # Repository: a README written for another home would be checked against nothing.
    assert sum(_in_repository(t) is not None for t in _targets(README)) >= 10


def test_anchors_follow_githubs_rules() -> None:
    assert _slug("Finding the cause: `reprospec isolate`") == "finding-the-cause-reprospec-isolate"
    assert _slug("The engine's own costs") == "the-engines-own-costs"
    assert "exit-codes" in anchors(DOCS / "cli.md")
