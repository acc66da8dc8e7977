"""The formats a run's report is rendered in, declared once: what `report.render` (and the
Python API's `reprospec.render`) renders, and what `--format` of `run`, `merge` and `report`
accept. Each verb listed its own, and `report --format github` was refused although the API
rendered it. A module of its own: the parsers are built at every start of the
CLI, which must not import the report's modules to build them.

And the names a bundle goes by (`reprospec bundle -o`), which `run` unpacks and `report`,
`compare` and `merge` refuse as no run: three places spelled them each."""

from __future__ import annotations

# md: the bug report (report.md); html: one self-contained page; junit: JUnit XML; json: the
# run as results.json holds it; github: the job-summary table ($GITHUB_STEP_SUMMARY).
REPORT_FORMATS = ("md", "html", "junit", "json", "github")

# The names of a bundle (`reprospec bundle -o x.tar.gz`): what `run` unpacks, what `bundle -o`
# accepts, what the store refuses to read as a run.
BUNDLE_SUFFIXES = (".tar.gz", ".tgz")
