"""The formats a run's report is rendered in, declared once: what `report.render` (and the
Python API's `reprospec.render`) renders, and what `--format` of `run`, `merge` and `report`
accept. Each verb listed its own, and `report --format github` was refused although the API
rendered it. A module of its own: the parsers are built at every start of the
CLI, which must not import the report's modules to build them.

And the names a bundle goes by (`reprospec bundle -o`), which `run` unpacks and `report`,
`compare` and `merge` refuse as no run: three places spelled them each.

And the search verbs, which the command line resumes by the same command and the store
refuses the folders of as no run (their answers' VERB.md), and whose runs' purpose each is:
three places listed them each."""

from __future__ import annotations

# md: the bug report (report.md); html: one self-contained page; junit: JUnit XML; json: the
# run as results.json holds it; github: the job-summary table ($GITHUB_STEP_SUMMARY).
REPORT_FORMATS = ("md", "html", "junit", "json", "github")

# The names of a bundle (`reprospec bundle -o x.tar.gz`): what `run` unpacks, what `bundle -o`
# accepts, what the store refuses to read as a run.
BUNDLE_SUFFIXES = (".tar.gz", ".tgz")

# The searches: each keeps its probes as they end, so the same command resumes it (cli.md);
# each answers in a folder of its own (VERB.json and VERB.md), which holds no run; each
# probe is a stored run whose purpose is the verb (`history --searches` shows them).
SEARCH_VERBS = ("isolate", "minimize", "amplify", "bisect")
