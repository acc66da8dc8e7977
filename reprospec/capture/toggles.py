"""A command line's own settings as matrix axes: what `capture` proposes to vary.

The settings an ML program takes are on its command line: argparse-style flags
(`--workers 2`, `--lr=0.1`, a bare `--fp16`) and Hydra/OmegaConf overrides
(`data.num_workers=2`, `+x=1`, `~y`). Each becomes a matrix axis whose one
value is the observed one, and the command reads it back through
`${{ matrix.X }}`, so the spec runs exactly what was run and widening an axis
(`--set 'matrix.workers=[2, 0]'`) is one edit. For knobs known to split such
incidents (workers, pinned memory, precision, the multiprocessing start method)
the proposal carries the alternative worth trying, which the writer puts in a
comment.

Words that are neither stay literal; the interpreter's own options
(`python -u -X faulthandler`) are not the program's settings.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from reprospec.capture.optionarity import MANY, Arity, ParserOptions
from reprospec.core.expr import literal_text, render
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.core.pythonargs import is_python, python_program
from reprospec.core.redact import (
    looks_like_credential,
    looks_secret,
    maskable,
    secret_option,
    sets_secret,
)
from reprospec.core.shellline import ENV_VALUE_LETTERS, ENV_VALUE_LONG
from reprospec.outcome.pytestreport import is_pytest, takes_value
from reprospec.plan.shellwords import SHELLS, script_operand, shell_script
from reprospec.plan.wrappers import ENV_PROGRAM, unsure_wrapper, wrapped

_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_]\w*)=(?P<value>.*)$", re.S)
_LONG_FLAG = re.compile(r"^--(?P<name>[A-Za-z][\w.-]*)(?:=(?P<value>.*))?$", re.S)
_SHORT_FLAG = re.compile(r"^-(?P<name>[A-Za-z])$")
_HYDRA = re.compile(r"^(?P<prefix>\+\+|\+)?(?P<key>[A-Za-z_][\w.@/-]*)=(?P<value>.*)$", re.S)
_HYDRA_DELETE = re.compile(r"^~(?P<key>[A-Za-z_][\w.@/-]*)(?:=(?P<value>.*))?$", re.S)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
# The `env` program (ENV_PROGRAM): with no option of its own, its assignments are the
# command's leading variables; with options (`-i`, `-u NAME`), it is kept as written
# (`_env_words`), as it is after a wrapper (`timeout 5 env -i`: plan/wrappers.py).
# Text that would need quoting in a shell: such a value is written inside single quotes.
_SHELL_SAFE = re.compile(r"^[\w@%+=:,./-]*$")


@frozen
class Suggestion:
    """An alternative value of a known knob, and why it is worth a cell."""

    value: JsonValue
    why: str
    # Why, for a program that does not import torch, where `why` speaks of torch's
    # (a DataLoader's workers); None: `why` holds for any program.
    why_without_torch: str | None = None
    # What the alternative takes away from an incident of each outcome, where that differs
    # (`_BY_OUTCOME`): 0 workers leave no worker to die for a crash, none to wait on for a
    # hang; "no worker to die" was said of a hang too.
    by_outcome: tuple[tuple[str, str], ...] = ()

    def said(self, uses_torch: bool, outcome: str | None = None) -> str:
        """Why, as true of the program (a DataLoader named only where it imports torch) and
        of its incident's `outcome` (None: not known yet, as a first draft is written)."""
        why = self.why if uses_torch or self.why_without_torch is None else self.why_without_torch
        tail = dict(self.by_outcome).get(outcome or "")
        return f"{why}: {tail}" if tail else why


@frozen
class Toggle:
    """One setting of the command, proposed as a matrix axis.

    `kind`: "flag" (`--name value`, `--name=value`), "values" (`--layers 64 128 256`:
    an option of several numbers, the axis's value their words as one string, which the
    command reads back unquoted for the shell to split again), "switch" (a bare `--name`:
    the axis is whether it is given), "override" (Hydra `key=value`, `+key=value`),
    "delete" (Hydra `~key`: whether it is given). `text` is the words as written.
    """

    axis: str
    value: JsonValue
    kind: str
    text: str
    key: str
    suggestion: Suggestion | None = None


@frozen
class Proposal:
    """The command with its settings read from the matrix, and those settings."""

    command: str
    toggles: tuple[Toggle, ...]
    # The leading `VAR=value` words, in order; then the secret-looking options' values,
    # which the command reads back from these variables (`_secret`).
    env: tuple[tuple[str, str], ...] = ()
    hydra: bool = False  # the command has Hydra-style overrides
    # The names of `env` that hold a secret: every variable a secret-looking option is read
    # back from, and a leading `VAR=value` by `sets_secret` (the rule a script's assignment
    # is judged by): `HF_TOKEN=hf_... python x.py`, not `MAX_TOKENS=2048 python x.py`, whose
    # value the spec writes (it was read back as `${{ env.MAX_TOKENS }}`, a value the
    # reader's shell never had).
    secrets: frozenset[str] = frozenset()
    # An option followed by several bare words alike that are not numbers (`--files a.csv
    # b.csv`), as written: it may take them all or only the first (`_option_values`), so
    # it is no axis, and capture says so.
    kept: tuple[str, ...] = ()
    # What `env` with options of its own takes from the program's environment
    # (`_env_wipes`): all of it (`env -i`, `env -`), or these names (`env -u NAME`). The
    # spec's environment.env does not reach the program past it, but for what the command
    # refers to (`env -i HF_TOKEN="$HF_TOKEN" python x.py`: the shell expands it first).
    env_cleared: bool = False
    env_unset: frozenset[str] = frozenset()
    # The wrapper (`numactl`) a word of which its grammar does not know (plan/wrappers.py):
    # where the program starts is not sure, so the command is kept as written, no axis.
    unsure: str = ""
    # The names of `secrets` no word of the command set (`--token hf_...`: TOKEN, which the
    # command reads as `"$TOKEN"`): a spec that said "the ticket's command set it" of one
    # was wrong, the command only passed its value.
    passed: frozenset[str] = frozenset()

    def reaches(self, name: str) -> bool:
        """Whether the variable `name` of the spec's environment.env reaches the program:
        `env` keeps it, or the command refers to it (`"$NAME"`, `${NAME}`)."""
        if not self.env_cleared and name not in self.env_unset:
            return True
        return re.search(rf"\$\{{?{re.escape(name)}(?![A-Za-z0-9_])", self.command) is not None

    @property
    def secret_env(self) -> tuple[tuple[str, str], ...]:
        """The `env` pairs that hold a secret: read back from the environment, never written."""
        return tuple((name, value) for name, value in self.env if name in self.secrets)


# (axis name pattern, the alternative for it, why): the knobs that split worker,
# precision and start-method incidents, as the issue trackers know them.
_KNOWN: tuple[tuple[re.Pattern[str], JsonValue, str], ...] = (
    (
        re.compile(r"(?:^|_)(?:num_workers|workers|n_workers|num_proc|loader_workers)$"),
        0,
        "for a DataLoader, 0 loads the data in the main process",
    ),
    (re.compile(r"(?:^|_)pin_memory$"), False, "no pinned host memory"),
    (re.compile(r"(?:^|_)persistent_workers$"), False, "workers restarted every epoch"),
    (re.compile(r"^precision$"), 32, "full precision (no autocast)"),
    (re.compile(r"^(?:fp16|bf16|amp|half|mixed_precision|use_amp)$"), False, "full precision"),
    (
        re.compile(r"(?:start_method|multiprocessing_context|mp_context|mp_start_method)$"),
        "spawn",
        "spawn starts each worker fresh instead of forking the parent",
    ),
    (re.compile(r"^(?:compile|torch_compile)$"), False, "eager mode, no torch.compile"),
    (re.compile(r"^(?:devices|gpus|nproc_per_node|num_gpus|world_size)$"), 1, "one process"),
    (re.compile(r"^(?:cudnn_benchmark|benchmark)$"), False, "no cuDNN autotuning"),
)


# The why of a `_KNOWN` knob said for a program that never imports torch: `--workers 2`
# of a ctypes program got "for a DataLoader, ...".
_WITHOUT_TORCH = {
    _KNOWN[0][2]: "0 usually means no worker processes",
}
# What a `_KNOWN` knob's alternative takes away, said by the incident's outcome: with no
# worker, a crash has none to die (the main process's own code is left), a hang none to
# wait on (a deadlocked or stuck worker, a queue never filled), an error none to re-raise
# it from (the traceback is the loading code's own).
_BY_OUTCOME = {
    _KNOWN[0][2]: (
        ("crash", "no worker to die"),
        ("hang", "no worker to wait on"),
        ("error", "no worker to raise it in"),
    ),
}


def typed(text: str) -> JsonValue:
    """A command-line value as the matrix holds it: a number or boolean only when the
    command would read back the same text (`1e-4` stays a string: it renders `0.0001`)."""
    if text in ("true", "false"):
        return text == "true"
    if _NUMBER.match(text):
        number: JsonValue = int(text) if re.match(r"^-?\d+$", text) else float(text)
        if render(number) == text:
            return number
    return text


def axis_name(key: str) -> str:
    """`data.num_workers` -> `num_workers`; `--pin-memory` -> `pin_memory`."""
    last = re.split(r"[./@]", key.strip("-+~"))[-1] or key
    return re.sub(r"[^A-Za-z0-9_]", "_", last).strip("_") or "value"


def _unique_axis(key: str, taken: set[str]) -> str:
    name = axis_name(key)
    if name in taken:
        name = re.sub(r"[^A-Za-z0-9_]", "_", key.strip("-+~")).strip("_")
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def suggestion_for(axis: str, value: JsonValue) -> Suggestion | None:
    """The known alternative to try for this axis, when it is a known knob and differs."""
    for pattern, alternative, why in _KNOWN:
        if not pattern.search(axis.lower()):
            continue
        if isinstance(value, str) and value.lower() in ("true", "false"):
            # Written as text (`--pin-memory True`): propose the other text, same spelling.
            flipped = "false" if value.lower() == "true" else "true"
            alternative = flipped.capitalize() if value[:1].isupper() else flipped
        elif isinstance(value, bool) and isinstance(alternative, bool):
            alternative = not value
        elif isinstance(value, bool) or isinstance(alternative, bool):
            # A switch named like a count (`--crash-if-pinned-workers`), or the reverse:
            # not the knob this alternative is for.
            return None
        elif isinstance(value, str) and not isinstance(alternative, str):
            alternative = render(alternative)
        if alternative == value:
            return None
        return Suggestion(alternative, why, _WITHOUT_TORCH.get(why), _BY_OUTCOME.get(why, ()))
    return None


def propose(argv: list[str], options: ParserOptions | None = None) -> Proposal:
    """The settings of `argv` (a command as its words) as axes, and the command reading them.

    `options`: how many values each option of the program's parser takes, where its
    source says (optionarity.py; a unique prefix of a long option as that option, as
    argparse reads it); an option whose values it does not say is read by its words alone.
    """
    options = options or ParserOptions()
    words = list(argv)
    env: list[tuple[str, str]] = []
    kept: list[str] = []  # `env` with options of its own and its words, kept as written
    while words:
        if ENV_PROGRAM.match(words[0]) and (own := _env_words(words)):
            # `env -i A=1 python x.py`: the program starts from an empty environment (`-u
            # NAME`: without NAME), which the spec's command must do too; as leading
            # variables, its assignments were set into the reader's whole environment, and
            # `-i A=1` was an axis. The program's own words are read past it.
            kept, words = words[:own], words[own:]
            break
        if (
            ENV_PROGRAM.match(words[0])
            and len(words) > 1
            and _ASSIGNMENT.match(words[1])
            and not all(map(_ASSIGNMENT.match, words[1:]))  # a program follows
        ):
            # `env NAME=value python x.py` sets what `NAME=value python x.py` does: its
            # assignments were the program's arguments, a secret among them an axis (its
            # value in the spec, the cells' names, every report).
            words.pop(0)
            continue
        match = _ASSIGNMENT.match(words[0])
        if match is None:
            break
        env.append((match["name"], match["value"]))
        words.pop(0)
    secrets = {name for name, value in env if sets_secret(name, value)}
    # What the command's words set: the leading `VAR=value` words and an `env`'s (below).
    assigned = {name for name, _ in env}
    start = _program_args_start(words)
    # The wrappers' words (`timeout 5 env -i`), kept as written; all of them where
    # the program starts is not sure.
    found = wrapped(words)
    wrappers = words[: len(words) if found is None else found.program]
    # Where each `env` among them starts (`timeout 5 env -i`: 2); every word named env
    # where they are not sure.
    envs = (
        [at for at, word in enumerate(wrappers) if ENV_PROGRAM.match(word)]
        if found is None
        else [begin for begin, _ in found.spans if ENV_PROGRAM.match(words[begin])]
    )
    script = shell_script(words[len(wrappers) :])
    if script is not None:  # `sh -c '... --api-key X'`: the script is one word, kept whole
        words = [_script_secrets(w, env, secrets) if w == script else w for w in words]
    # An `env` among them is kept as the leading one with options is: a secret it assigns
    # read back from the environment (`timeout 5 env -i HF_TOKEN="$HF_TOKEN" python`).
    out = [_kept_env_word(word, env, secrets) for word in (*kept, *wrappers)]
    out += [_word(word) for word in words[len(wrappers) : start]]
    # pytest's one-letter switches take no value: `pytest -q tests/x.py` made `q` an axis
    # holding the test file (a new user's trial).
    pytest = is_pytest(words)
    switches = _PYTEST_SWITCHES if pytest else frozenset()
    toggles: list[Toggle] = []
    taken: set[str] = set()
    kept_words: list[str] = []  # options kept as written (`_option_values`)
    hydra = False
    index = start
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else None
        long_flag = _LONG_FLAG.match(word)
        short_flag = _SHORT_FLAG.match(word)
        delete = _HYDRA_DELETE.match(word)
        override = _HYDRA.match(word) if not word.startswith("-") else None
        flag = long_flag or short_flag
        # 0: a switch the parser says takes no value (`--amp 5`: 5 is the program's own).
        arity = options.arity(word) if flag else None
        if arity is None and pytest and takes_value(word):
            # pytest's own (`-p no:cacheprovider 'tests/t.py::test_x[a b]'`): one value, the
            # node id after it a test path, where the words' shapes could not tell.
            arity = 1
        if pytest and (
            (word in _PYTEST_SETUP and following is not None)
            or (
                long_flag and long_flag["value"] is not None and word.split("=")[0] in _PYTEST_SETUP
            )
        ):
            # pytest's own setup (`-p no:flaky`, `-c ci.ini`, `--rootdir .`, `-o key=value`):
            # part of the command as written, never a setting of the failure to vary.
            taken_here = 1 if "=" in word and word.startswith("--") else 2
            out += [_word(w) for w in words[index : index + taken_here]]
            index += taken_here
            continue
        if flag and "${{" not in word + (following or ""):
            # `--api-key sk-...`, `-H 'Authorization: Bearer ...'`: read from the
            # environment, never an axis (`_secret`).
            inline = long_flag["value"] if long_flag else None
            if inline is not None and (name := _secret_name(flag["name"], inline)):
                out.append(_word(f"--{flag['name']}=") + _secret(name, inline, env, secrets))
                index += 1
                continue
            if (
                inline is None
                and arity != 0
                and following is not None
                and _is_value(following)
                and (name := _secret_name(flag["name"], following))
            ):
                out.append(_word(word) + " " + _secret(name, following, env, secrets))
                index += 2
                continue
        if any("'" in w or "${{" in w for w in (word, following or "")):
            # A value the command could not read back through a quoted expression.
            out.append(_word(word))
            index += 1
            continue
        if long_flag and long_flag["value"] is not None:
            # As the shell reads it back (`'--name=my run'`), where the axis's comment says it.
            toggle = _toggle(long_flag["name"], long_flag["value"], "flag", _typed(word), taken)
            out.append(_with_value(f"--{long_flag['name']}=", toggle, long_flag["value"]))
        elif (
            (long_flag or short_flag)
            and following is not None
            and _is_value(following)
            and not (short_flag and short_flag["name"] in switches)
            and arity != 0
        ):
            name = (long_flag or short_flag)["name"]  # type: ignore[index]
            taken_words = _option_values(words, index + 1, arity)
            if taken_words is None:
                # `--files a.csv b.csv`: several values, or one and the program's own
                # arguments; which, only the program's parser knows. Kept as written, said so.
                alike = _alike_run(words, index + 1)
                kept_words.append(shlex.join([word, *alike]))
                out += [_word(w) for w in (word, *alike)]
                index += 1 + len(alike)
                continue
            if taken_words > 1:
                # `--layers 64 128 256`: one setting of several values, one axis of the
                # words; read back unquoted, so the shell splits them into the words again.
                values = words[index + 1 : index + 1 + taken_words]
                text = " ".join(values)
                axis = _unique_axis(name, taken)
                toggle = Toggle(axis, text, "values", f"{word} {text}", name)
                out.append(_word(word) + f" ${{{{ matrix.{axis} }}}}")
                toggles.append(toggle)
                index += 1 + taken_words
                continue
            toggle = _toggle(name, following, "flag", _typed(word, following), taken)
            out.append(_word(word) + " " + _with_value("", toggle, following))
            index += 1
        elif long_flag:
            toggle = _toggle(long_flag["name"], None, "switch", word, taken)
            out.append(f"${{{{ matrix.{toggle.axis} and {_literal(word)} or '' }}}}")
        elif delete:
            hydra = True
            toggle = _toggle("drop_" + axis_name(delete["key"]), None, "delete", word, taken)
            toggle = Toggle(toggle.axis, True, "delete", word, delete["key"])
            out.append(f"${{{{ matrix.{toggle.axis} and {_literal(word)} or '' }}}}")
        elif (
            override
            and (name := _secret_name(override["key"], override["value"]))
            and not _HYDRA_REFERENCE.fullmatch(override["value"])
        ):
            hydra = True
            read = _secret(name, override["value"], env, secrets)
            out.append(_word((override["prefix"] or "") + override["key"] + "=") + read)
            index += 1
            continue
        elif override:
            hydra = True
            key = override["key"]
            toggle = _toggle(key, override["value"], "override", word, taken)
            prefix = (override["prefix"] or "") + key + "="
            out.append(_with_value(prefix, toggle, override["value"]))
        elif looks_like_credential(word):  # a bare `hf_...` or `https://me:pw@host/x`
            out.append(_secret(_bare_name(word), word, env, secrets))
            index += 1
            continue
        else:
            out.append(_word(word))
            index += 1
            continue
        if toggle.axis:
            toggles.append(toggle)
        index += 1
    cleared, unset = _env_wipes(kept)
    for at in envs:  # `timeout 5 env -i python x.py` empties it as well
        inner = _env_wipes(wrappers[at:])
        cleared, unset = cleared or inner[0], unset | inner[1]
    assigned |= {m["name"] for w in (*kept, *wrappers) if (m := _ASSIGNMENT.match(w))}
    proposal = Proposal(
        " ".join(out),
        tuple(toggles),
        tuple(env),
        hydra,
        frozenset(secrets),
        tuple(kept_words),
        cleared,
        unset,
        unsure_wrapper(words),
        frozenset(secrets - assigned),
    )
    return _without_secret_values(proposal)


def read_from(proposal: Proposal, passed: str, variable: str) -> Proposal:
    """`proposal` with the secret it passes as `"$PASSED"` (`Proposal.passed`) read from
    `variable` instead, a variable the ticket set to that value (PowerShell's
    `$env:HF_TOKEN="hf_..."`, then `--token hf_...`): the command reads the variable the
    reader sets, where `"$TOKEN"` read one nothing set, and the same secret was asked for
    twice. Unchanged where `passed` is no such name or `variable` is taken by another value."""
    held = dict(proposal.env)
    if passed not in proposal.passed or held.get(variable, held.get(passed)) != held.get(passed):
        return proposal
    env = tuple((variable if name == passed else name, value) for name, value in proposal.env)
    return replace(
        proposal,
        command=proposal.command.replace(f'"${passed}"', f'"${variable}"'),
        env=tuple(dict.fromkeys(env)),
        secrets=(proposal.secrets - {passed}) | {variable},
        passed=proposal.passed - {passed},
    )


def kept_note(kept: str) -> str:
    """What capture says of an option it kept as written (`Proposal.kept`), in its output
    and the spec's header: why it is no axis."""
    return (
        f"{kept} kept as written, no axis: an option of several values, or of one and the "
        "program's own arguments after it; only the program's parser knows which"
    )


def unsure_note(wrapper: str) -> str:
    """What capture says of a command whose wrapper has a word it does not know
    (`Proposal.unsure`): why it has no axes."""
    return (
        f"no axes from the command: {wrapper} has an option or operand capture does not "
        "know, so where its program's own words start is not sure (a value read as the "
        "program would make an axis of a wrong word); the command is kept as written"
    )


def _without_secret_values(proposal: Proposal) -> Proposal:
    """An axis whose value is a secret's (`--password X --user X`) is read from the
    secret's variable instead: as an axis, X was in the spec, the cell's name and every
    report, though `--password`'s own was not."""
    # As the mask: a value too short to be one (`AUTH=1` beside `--workers 1`) is left.
    held = {v: name for name, v in proposal.secret_env if maskable(v)}
    command, kept = proposal.command, []
    for toggle in proposal.toggles:
        name = held.get(str(toggle.value)) if isinstance(toggle.value, str) else None
        if name is None:
            kept.append(toggle)
            continue
        axis = f"${{{{ matrix.{toggle.axis} }}}}"
        command = command.replace(f"'{axis}'", f'"${name}"').replace(axis, f'"${name}"')
    return replace(proposal, command=command, toggles=tuple(kept))


def _env_words(words: list[str]) -> int:
    """How many words of `words` (an `env ...` command) are env's own, when it has options
    of its own (`env -i A=1 python x.py`: 3; `env -u HOME -- python x.py`: 4): its options,
    their values and its assignments, the program's words after them; all of them for
    `-S`/`--split-string` (the program is inside that one word). 0 without an option:
    `env A=1 python x.py` sets what `A=1 python x.py` does."""
    index, options = 1, False
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            options = True
            break
        if word == "-" or word.startswith("--"):
            options = True
            name = word.split("=", 1)[0]
            taking = [o for o in ENV_VALUE_LONG if len(name) > 2 and o.startswith(name)]
            if taking == ["--split-string"]:
                return len(words)
            index += 2 if taking and "=" not in word else 1
            continue
        if word.startswith("-") and len(word) > 1:
            options = True
            letters = word[1:]
            at = next((i for i, c in enumerate(letters) if c in ENV_VALUE_LETTERS), None)
            if at is not None and letters[at] == "S":
                return len(words)
            index += 2 if at == len(letters) - 1 else 1  # `-u NAME`, not `-uNAME`
            continue
        break
    if not options:
        return 0
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        index += 1
    return min(index, len(words))


def _env_wipes(words: list[str]) -> tuple[bool, frozenset[str]]:
    """What `env`'s own words (`_env_words`: `env -i A=1`, `env -u HOME --`) take from the
    program's environment: all of it (`-i`, `-`, `--ignore-environment`), and the names
    `-u NAME` unsets; `-S STRING`'s options as its own."""
    cleared, unset = False, set[str]()
    index = 1
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "--" or _ASSIGNMENT.match(word):
            break
        index += 1
        if word == "-":
            cleared = True
        elif word.startswith("--"):
            name, equals, value = word.partition("=")
            cleared |= len(name) > 2 and "--ignore-environment".startswith(name)
            taking = [o for o in ENV_VALUE_LONG if len(name) > 2 and o.startswith(name)]
            value = value if equals else following
            index += 1 if taking and not equals else 0
            if taking == ["--unset"]:
                unset.add(value)
            elif taking == ["--split-string"]:
                return _split_wipes(value, cleared, unset)
        elif word.startswith("-"):
            letters = word[1:]
            for at, letter in enumerate(letters):
                cleared |= letter == "i"
                if letter in ENV_VALUE_LETTERS:
                    value = letters[at + 1 :] or following
                    index += 0 if letters[at + 1 :] else 1
                    if letter == "u":
                        unset.add(value)
                    elif letter == "S":
                        return _split_wipes(value, cleared, unset)
                    break
        else:
            break
    return cleared, frozenset(n for n in unset if n)


def _split_wipes(string: str, cleared: bool, unset: set[str]) -> tuple[bool, frozenset[str]]:
    """`env -S STRING`: STRING's words are env's again (`-S '-i A=1 python'`)."""
    try:
        inner = _env_wipes(["env", *shlex.split(string)])
    except ValueError:  # an unclosed quote: env refuses it, so nothing ran past it
        inner = (False, frozenset())
    return cleared or inner[0], frozenset({*unset, *inner[1]} - {""})


def _kept_env_word(word: str, env: list[tuple[str, str]], secrets: set[str]) -> str:
    """A word of `env` with options of its own, as written, but a secret's assignment
    (`env -i HF_TOKEN=hf_... python x.py`, by `sets_secret`), which reads its value from the
    variable the spec reads back (`HF_TOKEN="$HF_TOKEN"`): the shell expands it before env
    empties the environment."""
    assigned = _ASSIGNMENT.match(word)
    if assigned is None or not sets_secret(*assigned.groups()):
        return _word(word)
    name, value = assigned.groups()
    return _word(f"{name}=") + _secret(name, value, env, secrets)


def _wrappers_end(words: list[str]) -> int | None:
    """How many leading words of `words` are its wrappers' (`timeout 5 env -i nice -n 5`:
    plan/wrappers.py), kept as written; None where a wrapper's word is one its grammar does
    not know, so that where the program starts is not sure."""
    found = wrapped(words)
    return None if found is None else found.program


def _program_args_start(words: list[str]) -> int:
    """Where the program's own arguments start: past any wrapper (`timeout 10`, `nice -n
    5`, `env -i`: plan/wrappers.py) and `python [options] script.py|-m mod|-c code`; all
    of the words where a wrapper's are not sure (an option its grammar does not know, whose
    value read as the program made the program's first option's value an axis): no axis
    is better than a wrong one."""
    end = _wrappers_end(words)
    if end is None:
        return len(words)
    if end:
        return end + _program_args_start(words[end:])
    if not words:
        return 0
    program = words[0].rsplit("/", 1)[-1]
    if program in SHELLS:
        # `sh -c SCRIPT`: one word of shell, not a setting of a program (`-c` made the whole
        # script an axis); `bash -x run.sh --lr 0.1`: the script's own, past its name.
        script = script_operand(words)
        return words.index(script, 1) + 1 if script is not None else len(words)
    if not is_python(program):
        return 1
    # Past the interpreter's own options and its program (`-m pkg`, `-c CODE`, a script).
    return 1 + python_program(words[1:]).end


# pytest's short options that take no value (-q, -v, -x, -s, -l); -k, -m, -p, -n take one.
_PYTEST_SWITCHES = frozenset("qvxslV")
# pytest's options that set up the run itself (a plugin loaded or blocked, the ini file,
# the rootdir, an ini value): kept as written, no axis (`pytest -p no:flaky` made `p` one).
_PYTEST_SETUP = frozenset(
    ["-p", "-c", "--config-file", "--rootdir", "--confcutdir", "-o", "--override-ini"]
)


def _is_value(word: str) -> bool:
    return not word.startswith("-") or bool(_NUMBER.match(word))


def _option_values(words: list[str], first: int, arity: Arity | None = None) -> int | None:
    """How many of the words from `first` on (a value, `_is_value`) the option before them
    takes. The program's parser alone knows (argparse's `nargs='+'` takes `--layers 64 128
    256` whole; `--lr 0.1 data.csv` leaves `data.csv` to the program's positional argument):
    where its source says (`arity`, optionarity.py), an option of one value takes one
    (`--batch-size 32 5`: 1, the 5 the program's own), of N values N, of `nargs='+'` every
    number that follows. Else it is read from the words alone, by a rule that keeps the
    option as written where they cannot tell; it makes an axis of one value where the
    program got several only of a decimal before a whole number (`--lrs 0.1 5` of
    `nargs='+'`, rarer than a rate and an epoch count), and of several where it got one
    and its own arguments only of numbers before another option (`--batch-size 32 5 --lr
    0.1`, the 5 a positional epoch count, which argparse takes between options):

    - numbers after the first number, up to the next other word, are the option's too
      (`--layers 64 128 256 --lr 0.1`: 3, `--bias -1 -0.5`: 2): several numbers are the
      shape of a list of sizes, seeds or ids; but after a decimal a whole number is the
      program's own (`--lr 0.1 5`: 1, the 5 an epoch count left in the command):
      a rate's list is of rates;
    - several numbers that end the command (`--seeds 1 2 100`, `--batch-size 32 5`,
      `--lr 0.1 0.01`): the option's all, or some and the program's positional argument
      last: None, kept as written. Reading the last as the program's labelled
      `--layers 64 128 256` of `nargs='+'` `[64 128]` and `--gpus 0 1` `0`, values the
      program never had, and widened the axis to `--layers 32 256`;
    - a first value followed by a bare word of another shape (a number, a path, a plain
      word: `--lr 0.1 data.csv`, `-a resnet18 /data/imagenet`) is the option's alone (1):
      a list's values are alike;
    - a first value followed by one alike that is no number (`--files a.csv b.csv`,
      `--tags x y`, but also `--config c.yaml data.csv`): either; None, the option kept as
      written (`_alike_run`)."""
    if arity == 1:
        return 1
    if _NUMBER.match(words[first]):
        numbers = 1
        while first + numbers < len(words) and _NUMBER.match(words[first + numbers]):
            numbers += 1
        if arity is not None:
            return numbers if arity == MANY else min(arity, numbers)
        decimal = not _is_whole(words[first])
        count = 1
        while count < numbers and not (decimal and _is_whole(words[first + count])):
            count += 1
        return None if count > 1 and first + count == len(words) else count
    after = words[first + 1] if first + 1 < len(words) else None
    if after is None or not _bare(after) or _shape(after) != _shape(words[first]):
        return 1
    return None


def _is_whole(number: str) -> bool:
    """`64`, `-3`: a number written without a decimal point or an exponent."""
    return number.lstrip("-").isdigit()


def _alike_run(words: list[str], first: int) -> list[str]:
    """The words from `first` on of the first one's shape, bare (`_bare`): those an option
    kept as written may take (`a.csv b.csv c.csv` of `--files a.csv b.csv c.csv --lr 0.1`)."""
    run = [words[first]]
    for word in words[first + 1 :]:
        if not _bare(word) or _shape(word) != _shape(words[first]):
            break
        run.append(word)
    return run


def _bare(word: str) -> bool:
    """A word that may be an option's value or a positional argument: no option, no Hydra
    override (`db.port=5` is a setting of its own), nothing the command kept quoted."""
    return (
        _is_value(word)
        and not _HYDRA.match(word)
        and not _HYDRA_DELETE.match(word)
        and "'" not in word
        and "${{" not in word
    )


# A word that names a file or a folder: a separator, a leading `.` or `~`, or an extension.
_PATH = re.compile(r"/|^[.~]|\.[A-Za-z]\w*$")


def _shape(word: str) -> str:
    """A bare word's kind, by which an option's values look alike: number, path or word."""
    if _NUMBER.match(word):
        return "number"
    return "path" if _PATH.search(word) else "word"


def _typed(*words: str) -> str:
    """`words` as the command typed them, for the axis's `# from ...` comment: `--name my
    run` named three words where the command had two (`--name 'my run'`)."""
    return shlex.join(words)


def _literal(text: str) -> str:
    """`text` as an expression string literal (a quote is written twice)."""
    return "'" + text.replace("'", "''") + "'"


def _toggle(key: str, text: str | None, kind: str, written: str, taken: set[str]) -> Toggle:
    axis = _unique_axis(key, taken)
    value: JsonValue = True if text is None else typed(text)
    return Toggle(axis, value, kind, written, key, suggestion_for(axis, value))


# Hydra's interpolation (`db.password=${oc.env:DB_PASS}`): a reference, no secret.
_HYDRA_REFERENCE = re.compile(r"\$\{[^{}]+\}")


def _secret_name(option: str, value: str) -> str | None:
    """The name `value` is read from the environment under (`_secret`) when it is a secret:
    by the option's name (`--api-key`), or by its own shape (`looks_like_credential`) under
    an option whose name says nothing (`--auth-header`, curl's `-H`, `db.url`). A header
    gives its own name (`Authorization: ...` -> AUTHORIZATION); otherwise the option's,
    made to look secret (`DB_URL_SECRET`), as the writer and the Redactor know secrets by
    their variable's name. None: an ordinary value."""
    if secret_option(option):
        return option
    if not looks_like_credential(value):
        return None
    header = _HEADER.match(value)
    if header and looks_secret(header["name"]):
        return header["name"]
    return option if looks_secret(option) else f"{option}_secret"


def _is_option(word: str) -> bool:
    """Whether `word` is an option without an `=value` of its own (`-H`, `--header`): the
    next word may be its value, which the option's own turn judged already."""
    flag = _LONG_FLAG.match(word) or _SHORT_FLAG.match(word)
    return flag is not None and flag.groupdict().get("value") is None


def _bare_name(token: str) -> str:
    """The variable a bare credential is read from: the name its provider's tools read
    (`hf_...` -> HF_TOKEN), so a reader knows what to set; SECRET for another shape."""
    for prefix, name in _PROVIDER_NAMES:
        if token.startswith(prefix):
            return name
    return "secret"


_PROVIDER_NAMES = (
    ("hf_", "hf_token"),
    ("sk-ant-", "anthropic_api_key"),
    ("sk-", "openai_api_key"),
    ("gh", "github_token"),
    ("github_pat_", "github_token"),
    ("glpat-", "gitlab_token"),
    ("xox", "slack_token"),
    ("AKIA", "aws_access_key_id"),
    ("ASIA", "aws_access_key_id"),
    ("AIza", "google_api_key"),
    ("npm_", "npm_token"),
    ("pypi-", "pypi_token"),
    ("eyJ", "jwt_token"),
)


# An HTTP header as one word (`Authorization: Bearer ...`): its name.
_HEADER = re.compile(r"^\s*(?P<name>[A-Za-z][\w-]*)\s*:\s")


def _script_secrets(script: str, env: list[tuple[str, str]], secrets: set[str]) -> str:
    """A shell script with its secret-looking options' values (`--api-key X`, `--token=X`)
    read from the environment as `_secret` does: `sh -c` kept the script as one word, the
    secret in it whole. Every place the script holds the value as a word of its own (bare
    or quoted) says `"$VAR"` instead: the same value, expanded by the shell."""
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)  # `;`, `|`, `&&` are words of their own, not a value's end
    except ValueError:
        return script
    for index, word in enumerate(words):
        flag = _LONG_FLAG.match(word) or _SHORT_FLAG.match(word)
        if flag:
            following = words[index + 1] if index + 1 < len(words) else None
            inline = flag["value"] if "value" in flag.groupdict() else None
            value = inline if inline is not None else following
            # `$TOK` in a script is the shell's to expand: rewritten, the program got it
            # unexpanded (review).
            if not value or "$" in value or not _is_value(value):
                continue
            if not (name := _secret_name(flag["name"], value)):
                continue
        elif (assigned := _ASSIGNMENT.match(word)) and sets_secret(*assigned.groups()):
            # `HF_TOKEN=hf_... python x.py`, `export DATABASE_URL=...`: the variable is set
            # from the one the spec reads (`HF_TOKEN="$HF_TOKEN"`).
            name, value = assigned["name"], assigned["value"]
            if "$" in value or not value:
                continue
            as_assigned = re.compile(rf"(?<![^\s;|&(]){re.escape(name)}={_as_written(value)}")
            read = _secret(name, value, env, secrets).replace("\\", r"\\")
            script = as_assigned.sub(f"{name}={read}", script)
            continue
        elif (
            "$" not in word
            and looks_like_credential(word)
            and not _is_option(words[index - 1] if index else "")
        ):
            name, value = _bare_name(word), word  # a bare word, not an option's value
        else:
            continue
        as_written = re.compile(r"(?<![^\s=;|&(])" + _as_written(value))
        # A replacement string, escaped: `re` reads a backslash in it (none in `"$VAR"`).
        script = as_written.sub(_secret(name, value, env, secrets).replace("\\", r"\\"), script)
    return script


def _as_written(value: str) -> str:
    """A pattern of `value` as a script may write it (bare, or in either quotes), ending
    where the shell's word ends."""
    forms = dict.fromkeys((shlex.quote(value), f"'{value}'", f'"{value}"', value))
    return "(?:" + "|".join(map(re.escape, forms)) + r")(?=[\s;|&)]|$)"


def _secret(name: str, value: str, env: list[tuple[str, str]], secrets: set[str]) -> str:
    """What the command says for a secret-looking option's value (`--api-key sk-...`): the
    shell's `"$API_KEY"`, a variable added to the command's `env`, which the spec reads
    back from the environment, never writes (footprint.environment_lines), and capture's
    own runs set (its name goes into `secrets`). As an axis the value was written into the
    spec, the run folder's names and every report. The shell expands it whatever it holds
    (a quote, a space)."""
    base = re.sub(r"\W", "_", name).strip("_").upper()
    variable, n = base, 1
    # One variable per value: `--api-key A --api_key B` (or `API_KEY=x ... --api-key y`)
    # gave both options the first one's value under one name.
    while any(known == variable and held != value for known, held in env):
        n += 1
        variable = f"{base}_{n}"
    if (variable, value) not in env:
        env.append((variable, value))
    secrets.add(variable)  # whatever its name or length: the command reads it as a secret
    return f'"${variable}"'


def _word(word: str) -> str:
    """A word of the command as written, quoted for the shell, and each `${{` in it written
    so that the spec's expansion gives it back (`literal_text`): `--msg '${{ oops }}'` was
    copied as an expression of the spec's, which failed validation (`unknown name
    'oops'`) or, `"${{ env.USER }}"`, read the reader's environment."""
    return literal_text(shlex.quote(word))


def _with_value(prefix: str, toggle: Toggle, text: str) -> str:
    """`--lr=` + the axis, quoted for the shell when the observed value needs it."""
    expression = f"${{{{ matrix.{toggle.axis} }}}}"
    if _SHELL_SAFE.match(text):
        return _word(prefix) + expression if prefix else expression
    return _word(prefix) + "'" + expression + "'" if prefix else "'" + expression + "'"
