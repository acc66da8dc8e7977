"""Which of the capturing shell's variables the verify leaves out: the session's own, never
the machine's (a rerun elsewhere has its own PATH, terminal and module system)."""

from __future__ import annotations

from reprospec.capture.footprint import shell_only


def test_the_verify_leaves_out_the_shells_own_variables_and_keeps_the_machines() -> None:
    environ = {
        # The program's: another shell would not have them.
        "USE_NATIVE": "1",
        "TORCH_SHOW_CPP_STACKTRACES": "1",
        "MY_FLAG": "on",
        # The machine's and the session's: every shell has its own.
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LC_ALL": "C.UTF-8",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "TMUX": "/tmp/tmux-1000/default,1,0",
        "TMUX_PANE": "%3",
        "MODULEPATH": "/etc/modulefiles",
        "LMOD_CMD": "/usr/share/lmod/lmod/libexec/lmod",
        "__LMOD_REF_COUNT_PATH": "/usr/bin:1",
        "LOADEDMODULES": "cuda/12.4",
        "_LMFILES_": "/etc/modulefiles/cuda/12.4",
        "KITTY_WINDOW_ID": "1",
        "PYTHONHOME": "/opt/python",
        # Not written into a spec, yet what `PYTHONPATH=src python -m pkg` needs: the verify
        # leaves it out, so that it finds it needed and writes it (it said "reproduced" of a
        # spec that failed anywhere else with "No module named pkg").
        "PYTHONPATH": "/src",
    }
    # A variable the spec carries is not the shell's alone.
    assert shell_only(environ, carried=["MY_FLAG"]) == (
        "PYTHONPATH",
        "TORCH_SHOW_CPP_STACKTRACES",
        "USE_NATIVE",
    )
