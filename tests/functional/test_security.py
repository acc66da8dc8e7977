"""A stranger's spec and a stranger's report are safe to run.

Everything here runs the real CLI with real children: a report whose description
tries to take over its rerun, secrets from the engine's environment, escape
sequences and rich markup from children and specs (on a real pty), and a child
that tries to call its own attempt an infrastructure error.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

from tests.support.cli import ROOT, CliResult

# ---------------------------------------------------------------- helpers


def write_spec(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
) -> CliResult:
    """`python -m reprospec ARGS` with stdin closed (never a terminal), --out under cwd."""
    argv = [sys.executable, "-m", "reprospec", *args]
    out = cwd / "out"
    if args[0] in ("run", "isolate") and "--out" not in args:
        argv += ["--out", str(out)]
    child_env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr, out)


def on_pty(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    answer: str | None = None,
    timeout: float = 180,
) -> tuple[int, bytes]:
    """Run the CLI with stdin, stdout and stderr on a real terminal (250 columns wide).

    With `answer`, it is typed once the CLI asks a question (a line ending in `]: `).
    Returns the exit status and every byte the terminal received.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 250, 0, 0))
    child_env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **(env or {})}
    for name in ("NO_COLOR", "COLUMNS", "LINES", "CI", "GITHUB_STEP_SUMMARY"):
        child_env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "reprospec", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=child_env,
        start_new_session=True,
    )
    os.close(slave)
    received = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            received += chunk
            if answer is not None and received.rstrip().endswith(b"]:"):
                os.write(master, answer.encode() + b"\r")
                answer = None
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    return code, received


def report_of(result: CliResult) -> Path:
    return result.latest_run() / "report.md"


# ---------------------------------------------------------------- 1. a report's rerun

HOSTILE_DESCRIPTION = """\
  Looks like a normal bug report. To reproduce, run this:

  ```yaml
  reprospec: 1
  name: evil
  command: touch {tmp}/HIJACKED
  expect: {{outcome: pass}}
  ```

  <!-- reprospec:spec sha256={fake} path="/etc/passwd" -->
  <!-- reprospec:spec path=/etc/passwd -->
"""


def hostile_spec(tmp_path: Path, description: str) -> Path:
    """project/victim.yaml: writes the folder it ran in to tmp_path/where.txt."""
    (tmp_path / "project").mkdir(exist_ok=True)
    path = tmp_path / "project" / "victim.yaml"
    path.write_text(
        "reprospec: 1\nname: victim\ndescription: |\n"
        + textwrap.indent(description, "  ")
        + f"command: pwd > {tmp_path}/where.txt\nexpect: {{outcome: pass}}\n"
    )
    return path


def test_a_description_cannot_replace_the_spec_a_report_reruns(tmp_path: Path) -> None:
    description = HOSTILE_DESCRIPTION.format(tmp=tmp_path, fake="0" * 64)
    spec = hostile_spec(tmp_path, textwrap.dedent(description))
    first = run_cli("run", spec.name, cwd=tmp_path / "project")
    assert first.code == 0, first.stderr
    report = report_of(first)
    text = report.read_text()
    # The description is shown, its own code block too, but it opens no comment.
    assert "Looks like a normal bug report" in text
    assert "\n&lt;!-- reprospec:spec path=/etc/passwd -->" in text
    assert "\n<!-- reprospec:spec path=/etc/passwd -->" not in text
    (tmp_path / "where.txt").unlink()

    again = run_cli("run", str(report), "--yes", cwd=tmp_path / "project")
    assert again.code == 0, again.stderr + again.stdout
    assert not (tmp_path / "HIJACKED").exists(), "the description's block ran"
    # The real spec ran, in a folder the description did not choose.
    assert again.results()["spec"]["name"] == "victim"
    ran_in = (tmp_path / "where.txt").read_text().strip()
    assert ran_in != "/etc"
    assert not ran_in.startswith("/etc/")


def test_an_unbalanced_fence_in_the_description_keeps_the_report_rerunnable(
    tmp_path: Path,
) -> None:
    spec = hostile_spec(tmp_path, "The tilde fence below is never closed:\n\n~~~~\n")
    first = run_cli("run", spec.name, cwd=tmp_path / "project")
    assert first.code == 0, first.stderr
    # The description's fence ends with the description: the report's sections stay sections.
    text = report_of(first).read_text()
    assert "never closed:\n\n~~~~\n~~~~\n" in text
    (tmp_path / "where.txt").unlink()
    again = run_cli("run", str(report_of(first)), "--yes", cwd=tmp_path / "project")
    assert again.code == 0, again.stderr + again.stdout
    assert (tmp_path / "where.txt").is_file()


def test_a_path_in_a_report_never_moves_the_workdir_out_of_its_folders(tmp_path: Path) -> None:
    """A hand-edited header naming /etc/passwd: the rerun runs in the report's folder."""
    spec = hostile_spec(tmp_path, "Nothing to see.\n")
    first = run_cli("run", spec.name, cwd=tmp_path / "project")
    assert first.code == 0, first.stderr
    report = report_of(first)
    lines = report.read_text().split("\n")
    assert lines[0].startswith("<!-- reprospec:spec sha256=")
    assert 'path="victim.yaml"' in lines[0]
    for forged in ('"/etc/passwd"', '"../../../../etc/passwd"'):
        lines[0] = lines[0].replace('"victim.yaml"', forged)
        report.write_text("\n".join(lines))
        (tmp_path / "where.txt").unlink(missing_ok=True)
        again = run_cli("run", str(report), "--yes", cwd=tmp_path / "project")
        assert again.code == 0, again.stderr + again.stdout
        assert Path((tmp_path / "where.txt").read_text().strip()) == report.parent
        lines[0] = lines[0].replace(forged, '"victim.yaml"')


def test_running_a_report_shows_the_plan_and_needs_a_yes(tmp_path: Path) -> None:
    spec = hostile_spec(tmp_path, "Nothing to see.\n")
    first = run_cli("run", spec.name, cwd=tmp_path / "project")
    assert first.code == 0, first.stderr
    report = report_of(first)
    (tmp_path / "where.txt").unlink()

    # Not a terminal, no --yes: the plan is shown, nothing runs, exit 2.
    refused = run_cli("run", str(report), cwd=tmp_path / "project")
    assert refused.code == 2, refused.stderr
    assert f"pwd > {tmp_path}/where.txt" in refused.stderr
    assert "--yes" in refused.stderr
    assert not (tmp_path / "where.txt").exists()

    # On a terminal: the plan, a question; "n" runs nothing, "y" runs it.
    code, shown = on_pty("run", str(report), cwd=tmp_path / "project", answer="n")
    assert code == 2, shown.decode(errors="replace")
    assert f"pwd > {tmp_path}/where.txt".encode() in shown
    assert not (tmp_path / "where.txt").exists()
    code, shown = on_pty("run", str(report), cwd=tmp_path / "project", answer="y")
    assert code == 0, shown.decode(errors="replace")
    assert (tmp_path / "where.txt").is_file()


# ---------------------------------------------------------------- 2. secrets

SECRET_FROM_ENV = "s3cr3t-from-the-engine-env"  # read through ${{ env.X }}
SECRET_BY_NAME = "passphrase-by-name-only"  # never read by the spec: its name looks secret
SECRET_IN_SPEC = "literal-auth-in-the-spec"  # written in the spec under a secret-looking name
PUBLIC_VALUE = "shown-because-public"
# Never read, under a name that says nothing: a credential by its shape (a URL's password).
SECRET_BY_SHAPE = "postgres://me:shape-pw-1234@db/x"


def secret_spec(tmp_path: Path) -> Path:
    return write_spec(
        tmp_path,
        "leak.yaml",
        """\
        reprospec: 1
        name: leak
        description: Prints what it was given, then fails.
        matrix:
          mode: [fail, pass]
        environment:
          env:
            API: "${{ env.REPROSPEC_TEST_API }}"
            DATA: "${{ env.REPROSPEC_TEST_DATA }}"
            TORCH_AUTH: literal-auth-in-the-spec
          public_env: [REPROSPEC_TEST_DATA]
        command: |
          echo "api=$API auth=$TORCH_AUTH phrase=$PYTORCH_PASSPHRASE data=$DATA db=$DB_URL"
          echo "db $DB_URL" >&2
          echo "token $API $TORCH_AUTH $PYTORCH_PASSPHRASE $DATA" >&2
          python3 -c "import sys; sys.exit('${{ matrix.mode }}' != 'pass' and 'failed with $API')"
        expect:
          outcome: pass
          cases:
            - when: {mode: fail}
              outcome: error
              message: "failed with ${{ env.REPROSPEC_TEST_API }}"
        """,
    )


SECRET_ENV = {
    "REPROSPEC_TEST_API": SECRET_FROM_ENV,
    "PYTORCH_PASSPHRASE": SECRET_BY_NAME,
    "REPROSPEC_TEST_DATA": PUBLIC_VALUE,
    "DB_URL": SECRET_BY_SHAPE,
}


def assert_masked(where: str, text: str) -> None:
    for secret in (SECRET_FROM_ENV, SECRET_BY_NAME, SECRET_IN_SPEC, SECRET_BY_SHAPE):
        assert secret not in text, f"{secret!r} leaked into {where}"


def store_text(db: Path) -> str:
    """Every value of every row of every table of the results store."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            repr(row) for table in tables for row in conn.execute(f"SELECT * FROM {table}")
        )


def test_secrets_are_masked_in_every_output(tmp_path: Path) -> None:
    spec = secret_spec(tmp_path)
    summary = tmp_path / "summary.md"
    done = run_cli(
        "run",
        str(spec),
        "--format",
        "junit",
        cwd=tmp_path,
        env={**SECRET_ENV, "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.code == 0, done.stderr
    folder = done.latest_run()
    results = (folder / "results.json").read_text()
    report = (folder / "report.md").read_text()
    outputs = {
        "results.json": results,
        "results.db": store_text(done.out / "results.db"),
        "report.md": report,
        "the console": done.stdout + done.stderr,  # the JUnit XML is on stdout
        "the GitHub summary": summary.read_text(),
        "report --format json": run_cli(
            "report", str(folder), "--format", "json", cwd=tmp_path
        ).stdout,
    }
    for where, text in outputs.items():
        assert_masked(where, text)
    # What was masked says so, and a value the spec made public is still shown.
    assert "failed with ***" in results
    assert f"token *** *** *** {PUBLIC_VALUE}" in report
    attempt = json.loads(results)["cells"][0]["attempts"][0]
    assert attempt["outcome"]["kind"] == "error"
    # The child itself got the real values: only what the engine writes is masked.
    logs = folder / attempt["logs"]
    assert f"api={SECRET_FROM_ENV} auth={SECRET_IN_SPEC}" in (logs / "stdout.log").read_text()


def test_a_printed_beginning_of_a_token_is_masked_too(tmp_path: Path) -> None:
    # Programs log a key's first characters to say which one failed (`token[:10]`): a
    # tenth of its entropy and its provider's prefix, where the whole-value mask saw none.
    token = "hf_QwErTy1234567890AbCdEfGhIjKlMn"
    spec = write_spec(
        tmp_path,
        "prefix.yaml",
        """\
        reprospec: 1
        name: prefix
        command: |
          echo "auth failed for $(printf %s "$HF_TOKEN" | cut -c1-10)..." >&2; exit 1
        expect: {outcome: error}
        """,
    )
    done = run_cli("run", str(spec), cwd=tmp_path, env={"HF_TOKEN": token})
    assert done.code == 0, done.stderr
    folder = done.latest_run()
    for where, text in {
        "results.json": (folder / "results.json").read_text(),
        "results.db": store_text(done.out / "results.db"),
        "report.md": (folder / "report.md").read_text(),
        "the console": done.stdout + done.stderr,
    }.items():
        assert token[:8] not in text, f"{token[:10]!r} leaked into {where}"
    assert "auth failed for ***..." in (folder / "report.md").read_text()


def test_a_numeric_password_is_masked_and_a_settings_number_is_not(tmp_path: Path) -> None:
    # A number shorter than 6 characters was masked under its name only, so a
    # PIN or a numeric database password the program printed was in every output.
    spec = write_spec(
        tmp_path,
        "pin.yaml",
        """\
        reprospec: 1
        name: pin
        environment:
          env:
            DB_PASSWORD: "${{ env.DB_PASSWORD }}"
        command: |
          echo "pass rate $TEST_PASS_RATE; db pin $DB_PIN_PASS" >&2
          python3 -c "import os; raise PermissionError('auth failed for password ' + os.environ[
            'DB_PASSWORD'])"
        expect: {outcome: error}
        """,
    )
    env = {"DB_PASSWORD": "48213", "DB_PIN_PASS": "7351", "TEST_PASS_RATE": "0.95"}
    done = run_cli("run", str(spec), cwd=tmp_path, env=env)
    assert done.code == 0, done.stderr
    folder = done.latest_run()
    report = (folder / "report.md").read_text()
    outputs = {
        "results.json": (folder / "results.json").read_text(),
        "results.db": store_text(done.out / "results.db"),
        "report.md": report,
        "the console": done.stdout + done.stderr,
    }
    for where, text in outputs.items():
        assert "48213" not in text, f"DB_PASSWORD leaked into {where}"
        assert "7351" not in text, f"DB_PIN_PASS leaked into {where}"
    assert "auth failed for password ***" in report
    # A setting's number (its name is no password's) is the program's output, shown.
    assert "pass rate 0.95; db pin ***" in report
    attempt = json.loads(outputs["results.json"])["cells"][0]["attempts"][0]
    assert attempt["outcome"]["kind"] == "error"
    logs = (folder / attempt["logs"] / "stderr.log").read_text()
    assert "auth failed for password 48213" in logs  # the evidence keeps what was printed


def test_plan_shows_no_secret(tmp_path: Path) -> None:
    spec = secret_spec(tmp_path)
    shown = run_cli("plan", str(spec), cwd=tmp_path, env=SECRET_ENV)
    assert shown.code == 0, shown.stderr
    assert_masked("plan", shown.stdout + shown.stderr)
    as_json = run_cli("plan", str(spec), "--format", "json", cwd=tmp_path, env=SECRET_ENV)
    assert_masked("plan --format json", as_json.stdout)
    assert PUBLIC_VALUE in as_json.stdout


def test_isolate_outputs_mask_secrets(tmp_path: Path) -> None:
    spec = secret_spec(tmp_path)
    done = run_cli("isolate", str(spec), "-j", "2", cwd=tmp_path, env=SECRET_ENV)
    assert done.code == 0, done.stderr + done.stdout
    assert_masked("isolate's console", done.stdout + done.stderr)
    for path in (done.out / "isolate").rglob("*"):
        if path.is_file():
            assert_masked(str(path), path.read_text(errors="replace"))


# ---------------------------------------------------------------- 3. terminal escapes

ESCAPES_CHILD = r"""
import json, os, sys
fd = os.open(os.environ["REPROSPEC_EVENTS"], os.O_WRONLY | os.O_APPEND)
phase = "[/x]\x1b]0;pwned-by-phase\x07\x1b[2J"
os.write(fd, (json.dumps({"event": "step", "phase": phase, "step": 3}) + "\n").encode())
raise RuntimeError("cuda error: device lost \x1b]0;pwned-by-message\x07\x1b[31m[bold]red")
"""


def test_children_and_specs_cannot_write_markup_or_control_codes_to_the_terminal(
    tmp_path: Path,
) -> None:
    (tmp_path / "child.py").write_text(ESCAPES_CHILD)
    spec = write_spec(
        tmp_path,
        "escapes.yaml",
        r"""
        reprospec: 1
        name: escapes
        matrix:
          where: ["[/tmp]", "x\e]0;pwned-by-matrix\a"]
        command: [python3, child.py]
        expect:
          outcome: error
          message: 'cuda error: [a-z ]+'
        """,
    )
    for command in (["run", str(spec)], ["plan", str(spec)]):
        out = ["--out", str(tmp_path / "out")] if command[0] == "run" else []
        code, shown = on_pty(*command, *out, cwd=tmp_path)
        text = shown.decode(errors="replace")
        assert code == 0, text
        for payload in (b"pwned-by-phase", b"pwned-by-message", b"pwned-by-matrix"):
            assert b"\x1b]0;" + payload not in shown, f"{payload!r} reached the terminal raw"
        assert b"\x1b[2J" not in shown
        assert b"\x1b[31m[bold]" not in shown
        if command[0] == "run":
            # Markup in values is text: shown as written, never interpreted.
            assert "cuda error: [a-z ]+" in text
            assert "[/tmp]" in text
            assert "[/x]" in text
            assert "pwned-by-phase" in text  # shown, escaped


def test_markup_in_values_does_not_crash_a_run_without_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text(ESCAPES_CHILD)
    spec = write_spec(
        tmp_path,
        "escapes.yaml",
        """\
        reprospec: 1
        name: escapes
        matrix:
          where: ["[/tmp]", "[bold]"]
        command: [python3, child.py]
        expect: {outcome: error, message: 'cuda error: [a-z ]+'}
        """,
    )
    done = run_cli("run", str(spec), "--format", "md", cwd=tmp_path)
    assert done.code == 0, done.stderr + done.stdout
    assert "cuda error: [a-z ]+" in done.stderr  # the table moves to stderr with --format
    assert "\x1b" not in done.stdout + done.stderr
    assert "\\x1b]0;pwned-by-phase\\x07" in (done.latest_run() / "report.md").read_text()


# ---------------------------------------------------------------- 4. events a child may write

FORGING_CHILD = r"""
import json, os, signal
fd = os.open(os.environ["REPROSPEC_EVENTS"], os.O_WRONLY | os.O_APPEND)
for event in (
    {"event": "step", "phase": "train", "step": 5},
    {"event": "infra_error", "reason": "not my fault: the machine is broken"},
    {"event": "worker_exit", "worker": 0, "pid": 1, "signal": "SIGBUS"},
):
    os.write(fd, (json.dumps(event) + "\n").encode())
os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_command_cannot_call_its_own_crash_an_infra_error(tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text(FORGING_CHILD)
    spec = write_spec(
        tmp_path,
        "forge.yaml",
        """\
        reprospec: 1
        name: forge
        command: [python3, child.py]
        expect: {outcome: pass}
        """,
    )
    done = run_cli("run", str(spec), cwd=tmp_path)
    assert done.code == 1, done.stderr + done.stdout
    attempt = done.results()["cells"][0]["attempts"][0]
    assert attempt["infra_error"] is None
    outcome = attempt["outcome"]
    # Its progress counts; its claims about the machine and about workers do not.
    assert (outcome["kind"], outcome["signal"], outcome["where"]) == ("crash", "SIGSEGV", "main")
    assert (outcome["phase"], outcome["step"]) == ("train", 5)
    assert "not my fault" not in (done.latest_run() / "report.md").read_text()


def test_a_run_whose_spec_holds_a_secret_resumes(tmp_path: Path) -> None:
    """The store keeps the spec text masked; --resume still knows it is the same spec."""
    gate = tmp_path / "gate"
    spec = write_spec(
        tmp_path,
        "resume.yaml",
        f"""\
        reprospec: 1
        name: resume-secret
        environment:
          env:
            N: "${{{{ attempt }}}}"
            TORCH_AUTH: literal-auth-in-the-spec
        command: >-
          touch {tmp_path}/started-$N;
          if [ "$N" = 2 ]; then while [ ! -e {gate} ]; do sleep 0.05; done; fi
        run: {{repeat: 2}}
        expect: {{outcome: pass}}
        """,
    )
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "started-2").exists():
        assert time.monotonic() < deadline, "attempt 2 never started"
        assert engine.poll() is None, "the engine exited before attempt 2 started"
        time.sleep(0.05)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    gate.touch()
    run_id = next((out / "runs").iterdir()).name
    assert SECRET_IN_SPEC not in store_text(out / "results.db")
    resumed = run_cli("run", "--resume", run_id, cwd=tmp_path)
    assert resumed.code == 0, resumed.stderr
    attempts = resumed.results()["cells"][0]["attempts"]
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert_masked("the resumed results.json", (out / "runs" / run_id / "results.json").read_text())
