"""A build context's `.dockerignore` read as docker reads it (export/dockerignore.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.export.dockerignore import read_dockerignore


def _ignore(tmp_path: Path, text: str, name: str = ".dockerignore") -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path


def test_patterns_match_as_docker_matches_them(tmp_path: Path) -> None:
    rules = "\n".join(
        [
            "# a comment",
            "",
            "*.log",  # the context's top only: `*` stays in one folder
            "**/*.ckpt",  # any folder, the top too
            "!keep/**/*.ckpt",
            "/data/raw",  # a folder: all under it
            "./build//out/",  # cleaned as a path
            "secret?.env",
            "conf/[a-c]*.yaml",
        ]
    )
    ignore = read_dockerignore(_ignore(tmp_path, rules))
    assert ignore.source == ".dockerignore"
    excluded = [
        "run.log",
        "model.ckpt",
        "a/b/model.ckpt",
        "data/raw/x.csv",
        "data/raw/deep/y.csv",
        "build/out/z",
        "secret1.env",
        "conf/base.yaml",
    ]
    kept = [
        "sub/run.log",
        "keep/model.ckpt",
        "keep/a/model.ckpt",
        "data/rawer.csv",
        "data/x.csv",
        "build/other",
        "secret12.env",
        "conf/dev.yaml",
        "Dockerfile",
    ]
    assert [p for p in excluded if not ignore.excludes(p)] == []
    assert [p for p in kept if ignore.excludes(p)] == []
    # As the docker runner's builds (docker-py's matcher) leave them out of the context.
    build = pytest.importorskip("docker.utils.build")
    matcher = build.PatternMatcher([r for r in rules.splitlines() if r and r[0] != "#"])
    assert {p: matcher.matches(p) for p in excluded + kept} == {
        p: p in excluded for p in excluded + kept
    }


def test_the_last_matching_pattern_decides_and_an_exception_can_be_undone(tmp_path: Path) -> None:
    ignore = read_dockerignore(_ignore(tmp_path, "docs\n!docs/README.md\ndocs/README*\n"))
    assert ignore.excludes("docs/README.md")
    ignore = read_dockerignore(_ignore(tmp_path, "docs\n!docs/README.md\n"))
    assert not ignore.excludes("docs/README.md")
    assert ignore.excludes("docs/other.md")


def test_only_the_contexts_dockerignore_is_read_as_the_runners_builds_read_it(
    tmp_path: Path,
) -> None:
    assert not read_dockerignore(tmp_path).excludes("anything")
    _ignore(tmp_path, "*.csv\n", "Dockerfile.dockerignore")  # BuildKit's; docker-py's not
    assert not read_dockerignore(tmp_path).excludes("a.csv")
    _ignore(tmp_path, "*.txt\n")
    assert read_dockerignore(tmp_path).excludes("a.txt")
