"""run.sh's text where it composes a cell's PYTHONPATH, stops on Ctrl-C, and states what it
cannot judge; tests/functional/export/test_materialize_report.py runs its
`report` on real results, tests/real/docker/test_materialize.py whole bundles."""

from __future__ import annotations

import shlex
from pathlib import Path

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.runners.docker.image import IMAGE_HARNESS, IMAGE_STACKDUMP
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: pp
{body}
environment:
{environment}
run: {{timeout: 60s}}
expect: {{outcome: crash, signal: SIGSEGV}}
"""
WORKLOAD = """\
workload:
  model: {builtin: mlp}
  data:
    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}
    loader: {batch_size: 8}
  phases: [{name: train, steps: 2}]"""


def _script(tmp_path: Path, environment: str, body: str = "command: python app.py") -> str:
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "pp.yaml").write_text(SPEC.format(body=body, environment=environment))
    spec = load_spec(tmp_path / "pp.yaml")
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    write_bundle(spec, plans, tmp_path / "bundle")
    return (tmp_path / "bundle" / "run.sh").read_text()


def _pythonpath(script: str) -> list[str]:
    """The `-e PYTHONPATH=...` words of the cell's `docker run`, as bash splits them."""
    start = script.index("    run_container 1 ")
    end = script.index("\n    local status=$?", start)
    words = shlex.split(script[start:end].replace("\\\n", " "))
    return [w for i, w in enumerate(words) if words[i - 1] == "-e" and w.startswith("PYTHONPATH")]


def test_a_cells_pythonpath_goes_before_the_images_and_keeps_its_sitecustomize(
    tmp_path: Path,
) -> None:
    # `-e PYTHONPATH=src` replaced the image's, so its sitecustomize (switch_interval,
    # gc, torch.*, the stack dumper) never ran. The stack dumper comes first, as the docker
    # runner puts it, then the cell's, then whatever the image sets, read from the image.
    script = _script(
        tmp_path, "  env: {PYTHONPATH: src}\n  perturb: {switch_interval: 0.0001, gc: aggressive}"
    )
    assert _pythonpath(script) == [f"PYTHONPATH={IMAGE_STACKDUMP}:src${{pythonpath:+:$pythonpath}}"]
    assert "    local pythonpath; pythonpath=$(image_pythonpath reprospec-bundle/pp:1)\n" in script
    assert "image_pythonpath() {" in script
    assert "-e 'REPROSPEC_PERTURB=switch_interval=0.0001;gc=1,1,1'" in script


def test_a_workload_cells_pythonpath_keeps_the_harness_too(tmp_path: Path) -> None:
    script = _script(tmp_path, "  env: {PYTHONPATH: src}", body=WORKLOAD)
    assert _pythonpath(script) == [
        f"PYTHONPATH={IMAGE_STACKDUMP}:{IMAGE_HARNESS}:src${{pythonpath:+:$pythonpath}}"
    ]


def test_a_cell_without_a_pythonpath_keeps_the_images_as_it_is(tmp_path: Path) -> None:
    script = _script(tmp_path, "  perturb: {switch_interval: 0.0001}")
    assert _pythonpath(script) == []
    assert "local pythonpath" not in script


def test_the_images_carry_the_harness_where_run_sh_names_it(tmp_path: Path) -> None:
    _script(tmp_path, "  env: {PYTHONPATH: src}")
    dockerfile = (tmp_path / "bundle" / "images" / "1" / "Dockerfile").read_text()
    assert f"COPY stackdump/ {IMAGE_STACKDUMP}/\n" in dockerfile
    assert f"ENV PYTHONPATH={IMAGE_HARNESS}:{IMAGE_STACKDUMP}\n" in dockerfile


def test_ctrl_c_stops_the_cell_and_run_sh_exits_130_judging_nothing(tmp_path: Path) -> None:
    # `timeout` runs the cell in its own process group, which a terminal's Ctrl-C
    # never reaches: the cell ran on, and its `tee`'s SIGPIPE was judged "NOT reproduced".
    script = _script(tmp_path, "  network: false")
    assert "trap 'stop_cell 130' INT\ntrap 'stop_cell 143' TERM\n" in script
    assert '    RUNNING="reprospec-bundle-1-$$"\n' in script
    assert (
        '2>&1; echo $? >"$OUT/$number/.status"; } | tee -i "$OUT/$number/output.log" &\n'
        '        cell_wait $! "$OUT/$number/.status"\n'
    ) in script
    assert '    run_container 1 "reprospec-bundle-1-$$" 60 \\\n' in script
    assert "    local status=$? record=$RECORD\n" in script
    cell = script[script.index("cell_1() {") :]
    # The interrupted cell says so and returns before `report`: no verdict of it.
    assert cell.index("== cell 1 [default]: interrupted") < cell.index("    report 1 ")
    assert 'exit "$INTERRUPTED"' in script


def test_a_cell_removes_its_records_once_report_has_read_them(tmp_path: Path) -> None:
    # The engine's records of each Python process (stack-*, ended-*, raised-*) were left in
    # results/N beside the user's output: ended-* go with stack-*, raised-* once `report`
    # read the program's, the interrupted cell's too. Run whole only under a real docker
    # (tests/real/docker/test_materialize.py).
    script = _script(tmp_path, "  network: false")
    cell = script[script.index("cell_1() {") :]
    cell = cell[: cell.index("\n}\n") + 3]
    clean = '    rm -f "$OUT/1"/stack-*.txt "$OUT/1"/ended-*.txt\n'
    raised = '    rm -f "$OUT/1"/raised-*.txt\n'
    assert cell.index("    local status=$? record=$RECORD\n") < cell.index(clean)
    assert cell.index(clean) < cell.index("    report 1 ")
    # Interrupted: the raised records go before the cell returns, judging nothing.
    start = cell.index('    if [ "$INTERRUPTED" != 0 ]; then')
    interrupted = cell[start : cell.index("    report 1 ")]
    assert "    " + raised in interrupted
    assert interrupted.index("    " + raised) < interrupted.index("        return 0\n")
    # Judged: after `report` read them, and the cell returns report's verdict.
    judged = cell[cell.index("    report 1 ") :]
    assert "\n    local verdict=$?\n" + raised + '    return "$verdict"\n}\n' in judged


def test_the_load_container_is_stopped_with_the_cell(tmp_path: Path) -> None:
    script = _script(tmp_path, "  perturb: {cpu_load: 1}")
    assert '    RUNNING="reprospec-bundle-1-$$ reprospec-bundle-load-1-$$"\n' in script


def test_what_run_sh_cannot_tell_is_not_judged_and_exits_4(tmp_path: Path) -> None:
    # A 128+N status run.sh read as a death whatever the output said, and an
    # exit 1 after a child's death as the program's own error.
    script = _script(tmp_path, "  network: false")
    assert '[ "$NOT_RUN" = 0 ] || exit 3\n[ "$MISSED" = 0 ] || exit 1\n' in script
    assert '[ "$NOT_JUDGED" = 0 ] || exit 4\n' in script
    assert 'verdict="not judged here: reprospec run tells them apart"; NOT_JUDGED=1' in script
    assert "        SIGSEGV) echo 'Segmentation fault' ;;\n" in script
    assert "        SIGTRAP) echo 'Trace/breakpoint trap' ;;\n" in script
    assert "        SIGSTOP) echo 'Stopped \\(signal\\)' ;;\n" in script
    # A child's crash signals: not SIGINT, SIGPIPE or SIGTERM, how pipelines and pools end.
    names = script[script.index("CRASH_NAMES='") :].split("'")[1].split("|")
    assert {"SIGSEGV", "SIGKILL"} <= set(names)
    assert not {"SIGINT", "SIGPIPE", "SIGTERM"} & set(names)
    readme = " ".join((tmp_path / "bundle" / "README.md").read_text().split())
    assert "it says `not judged here` and counts the cell neither reproduced nor missed" in readme
    assert "4 when one was `not judged here` (the others reproduced)" in readme
    assert "Ctrl-C stops the cell that runs (its containers are removed)" in readme
