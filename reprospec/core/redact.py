"""Secrets never leave the engine: what a run writes or prints has them masked as `***`.

A spec from a ticket reads the engine's environment through `${{ env.X }}` (a
token to download a dataset, a password for a service), and its child inherits
that environment. Every output of a run (results.json, the store, report.md,
JUnit, the GitHub summary, the console, `plan`, isolate, bisect, a materialize
bundle) is made from values that pass through one `Redactor`, which masks:

- by name: the value of a variable whose name looks secret (`SECRET_NAME`: token,
  key, secret, password, passphrase, auth, credential; any case, anywhere in the
  name; or `names_password`: pass or pwd as the last word after another, a suffix such as
  PROD allowed, `DB_PASS`, `REDIS_PASS_PROD`, `MYSQL_PWD`; not `TEST_PASS_RATE`, `LLVM_PASS`),
  wherever a mapping shows it under that name, but a release number (a
  package table's `keyring: 25.6.0`) or a count (`MAX_TOKENS: 2048`, `_counts`);
- by value: every occurrence, in any text, of
  - the value of each engine variable the spec reads through `${{ env.X }}`,
    unless the spec lists X in `environment.public_env`,
  - the value of each engine variable whose name looks secret, or whose value is
    shaped as a credential (`looks_like_credential`: `DATABASE_URL=postgres://me:pw@db`,
    a `Bearer ...` header, an `hf_...` token),
  - the value the spec itself gives a secret in `environment.env` (`sets_secret`, the
    rule every output and capture judge a written `NAME=value` by).

A secret-looking name is masked even when `public_env` lists it: a stranger's spec
must not be able to publish the reader's `GITHUB_TOKEN` by declaring it public.
Values shorter than MIN_MASKED_CHARS and the words YAML reads as booleans or null are
masked by name only (`maskable`): masking every "1" or "true" of a report would hide the
report, not the secret. A number is masked by value as any other value (`DB_PASSWORD=48213`,
a PIN): a setting's number (`TEST_PASS_RATE=0.95`) is kept out by the name rule, and one the
spec reads from the environment is shown once `public_env` lists it. The attempt's own
files (its logs, cell.json) hold what the child was given and printed; they are evidence,
kept as they are on this machine, and pass through the same masking when a bundle packs
them (export/bundle.py).

The spec a report or a bundle embeds is meant to be run again, so it is masked with
`Redactor.spec_text`: a secret becomes `${{ env.NAME }}` (the variable it came from,
read again from the rerunning engine's environment) instead of `***`, which YAML reads
as an alias and refuses, and a closing comment names the variables to set.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path, PosixPath
from typing import Literal, TypeVar, Union, cast

from reprospec.core.expr import ExprError, find_expressions, names_used
from reprospec.core.jsontypes import JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import undecodable_byte

SECRET_NAME = Lazy(
    r"TOKEN(?!IZER)|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|AUTH|CREDENTIAL", re.IGNORECASE
)
MASK = "***"
MIN_MASKED_CHARS = 4
# The comment a masked spec ends with (Redactor.spec_text), naming what a rerun must set.
_MASKED_NOTE = "# reprospec: secrets masked; to rerun this spec, set in your environment: "
_MASKED_NAMES = Lazy("^" + re.escape(_MASKED_NOTE) + "(.*)$\n?", re.MULTILINE)
_ENV_NAME = Lazy(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})
# A release number (PEP 440's public part, a local label allowed): `2.13.0+cpu`, `3.0.4`,
# `2026.11.19`, `6.0.12.20261122`. A table of installed packages is keyed by project names,
# and `keyring`, `SecretStorage` or `tokenizers` look secret by name; their versions are not
# secrets, and a Versions block of `keyring==***` only hides the environment. One dot at
# least: a key or token of digits alone is still masked.
_RELEASE = Lazy(r"\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[a-z0-9.]+)?")

T = TypeVar("T")


def looks_secret(name: str) -> bool:
    """Whether a variable named `name` probably holds a secret (its value is never shown):
    a secret's word anywhere in it (`SECRET_NAME`), or a password's short word last after
    another word (`names_password`: `DB_PASS`, `MYSQL_PWD`)."""
    if SECRET_NAME.search(name):
        return True
    lowered = name.lower()  # most names hold neither word: no split for them
    return ("pass" in lowered or "pwd" in lowered) and names_password(name_words(name))


# A name's words: camelCase split, then at every run of other characters than letters and
# digits (`maxNewTokens` -> max new tokens, `db.password`, `cfg/api_key`, `model@key`).
_CAMEL = Lazy(r"([a-z0-9])([A-Z])")
_NOT_WORD = Lazy(r"[^A-Za-z0-9]+")


def name_words(name: str) -> tuple[str, ...]:
    """The words of a variable's or an option's name, lower case: the one split that the
    count rule (`_counts`) and capture's option rule (toggles._secret_option) read a name
    by. They split at different separators: `db/password` was one word to the option
    rule, and `max/tokens` would not have been a count to it."""
    return tuple(w for w in _NOT_WORD.split(_CAMEL.sub(r"\1 \2", name).lower()) if w)


# A password's short words (`pass`, `pwd`): a secret's name only as its last word, after
# another (`DB_PASS`, `MYSQL_PWD`, `dbPass`), or glued to a store's or a service's short name
# (`PGPASS`, `DBPASS`), an environment's or a copy's suffix allowed after it, as after a
# secret's word (`GITHUB_TOKEN_RO`): `REDIS_PASS_PROD`, `DB_PASS_2`, `DB_PASS2`, `DB_PWD_V2`.
# A substring would take `BYPASS_CACHE`, `COMPASS_DIR`, `NUM_PASSES`; first, they name a
# setting (`PASS_AT_K`), and `PWD` is the working folder; any other word after it names a
# setting of a pass (`TEST_PASS_RATE: 0.95`, `MLIR_PASS_PIPELINE`, `PASS_COUNT`); and after an
# ordinal or a compiler's word it is a pass over a program (`FIRST_PASS`, `LLVM_PASS`,
# `INDUCTOR_POST_GRAD_PASS`). As secrets, their values were masked in every text: every
# 0.95 of a report was `***`.
_PASSWORD_WORDS = frozenset({"pass", "pwd"})
_GLUED_PASSWORD = Lazy(
    r"(?:pg|db|sql|mysql|redis|mongo|ldap|smtp|ftp|amqp|rabbit|admin|root|user)(?:pass|pwd)"
)
# What may follow a password's word in a secret's name: a deployment, a copy, a version.
_SUFFIX_WORDS = frozenset(
    {"prod", "production", "prd", "dev", "development", "staging", "stage", "stg", "test",
     "testing", "qa", "uat", "live", "local", "ro", "rw", "old", "new", "primary", "replica",
     "backup"}
)  # fmt: skip
_VERSION_WORD = Lazy(r"\d+|v\d+")
# Words that make `pass` one over a program, not a password, when they come before it.
_PROGRAM_PASS_WORDS = frozenset(
    {"first", "second", "third", "fourth", "last", "final", "next", "previous", "prev", "one",
     "two", "single", "multi", "each", "every", "extra", "llvm", "mlir", "compiler", "compile",
     "inductor", "dynamo", "xla", "tvm", "triton", "codegen", "lowering", "fusion", "optimizer",
     "optimization", "opt", "ir", "graph", "grad", "pre", "post", "forward", "backward", "fwd",
     "bwd"}
)  # fmt: skip


def names_password(words: tuple[str, ...]) -> bool:
    """Whether a name's words (`name_words`) name a password by one of its short words:
    the last word but for suffixes (`_SUFFIX_WORDS`, a number, a version), `pass` or `pwd`
    after another word that is no ordinal or compiler's word (`DB_PASS`, `REDIS_PASS_PROD`,
    not `FIRST_PASS`, `LLVM_PASS`), or glued to a store's name (`PGPASS`, `PGPASS_DEV`);
    not with a setting's word after it (`TEST_PASS_RATE`, `MLIR_PASS_PIPELINE`)."""
    end = len(words)
    while end > 1 and (words[end - 1] in _SUFFIX_WORDS or _VERSION_WORD.fullmatch(words[end - 1])):
        end -= 1
    if not end:
        return False
    bare = words[end - 1].rstrip("0123456789")  # DB_PASS2
    if _GLUED_PASSWORD.fullmatch(bare):
        return True
    return bare in _PASSWORD_WORDS and end > 1 and words[end - 2] not in _PROGRAM_PASS_WORDS


_TOKENS = (
    r"hf_[A-Za-z0-9]{30,}|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{32,}|gh[pousr]_[A-Za-z0-9]{36,}"
    r"|github_pat_\w{40,}|glpat-[\w-]{20,}|xox[abposr]-\d+-[\w-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[\w-]{35}|npm_[A-Za-z0-9]{36}|pypi-[\w-]{50,}|eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}"
)
# A value that is a credential under whatever name it is given (`--auth-header`, curl's
# `-H`, a positional word): an HTTP header that carries one, an auth scheme with its
# token, a URL holding a password (or a token as its user), or a provider's token format
# (Hugging Face, OpenAI and Anthropic, GitHub, GitLab, Slack, AWS access key ids, Google
# API keys, npm, PyPI, a JWT). The name rule (`looks_secret`) missed these, and the value
# was a plain axis or word in the spec. Each kind is narrow on purpose: a false match
# (`basic training`, `docker://python:3.11@sha256:...`) took an ordinary setting out of the
# spec, and the spec no longer reran for anyone else (`_credential_kind` checks more).
_CREDENTIAL = Lazy(
    r"(?P<header>(?i:(?:proxy-)?authorization|(?:x-)?(?:api-key|auth-token|access-token))"
    r"\s*:\s*\S.*)"
    r"|(?P<scheme>Bearer|bearer|Basic|Token|Bot)\s+(?P<credential>[A-Za-z0-9._~+/=-]{8,})"
    r"|[A-Za-z][A-Za-z0-9+.:-]*://(?:(?P<user>[^\s/:@]*):(?P<password>[^\s/@]+)|(?P<alone>[^\s/:@]+))"
    r"@(?!sha\d+:)(?P<host>[A-Za-z0-9.-]*[A-Za-z][A-Za-z0-9.-]*)(?::\d+)?(?:[/?#]\S*)?"
    r"|(?P<token>" + _TOKENS + ")",
    re.ASCII,  # every format is ASCII; Unicode classes doubled the compile (a run pays it)
)


def looks_like_credential(value: str) -> bool:
    """Whether `value` is a credential by its shape alone (`Bearer ...`, `hf_...`,
    `https://user:password@host`), whatever name holds it. A value that refers to a
    variable (`$TOK`, `${DB_PASS}`, `${oc.env:P}`) holds none: it is expanded where it
    runs, and rewriting it changed what the command ran (a shell script's `$TOK` is left
    to the shell by capture itself: a bare `$` in a value already expanded is a character
    of a password)."""
    text = value.strip()
    if not text or "${" in text or len(text) > 4096:
        return False
    found = _CREDENTIAL.fullmatch(text)
    return found is not None and _credential_kind(found)


def _credential_kind(found: re.Match[str]) -> bool:
    """The checks a pattern cannot say well: a token is a random string (digits and letters
    of both cases, not `token classification` or a model called `sk-...`), Basic's is
    base64 of `user:password`, a URL's user alone is a secret only in a provider's format."""
    if found["header"]:
        return True
    if found["scheme"]:
        credential = found["credential"]
        if found["scheme"] == "Basic":
            import base64
            import binascii

            try:
                return b":" in base64.b64decode(credential, validate=True)
            except (binascii.Error, ValueError):
                return False
        return _scheme_credential(credential)
    if found["alone"] is not None:
        return _TOKEN_ONLY.fullmatch(found["alone"]) is not None
    if found["password"] is not None:
        return True
    token = found["token"]
    return not token.startswith("sk-") or looks_generated(token[3:])


# A credential by its shape inside a longer text (`credential_spans`): the URL's password, a
# scheme's credential, a provider's token; a header is found by its scheme (`Bearer ...`),
# not read to the line's end, which in a program is code (`"})`).
_CREDENTIAL_IN_TEXT = Lazy(
    r"(?<![\w-])(?:(?P<scheme>Bearer|bearer|Basic|Token|Bot)\s+(?P<credential>[A-Za-z0-9._~+/=-]{8,})"
    r"|[A-Za-z][A-Za-z0-9+.-]*://(?P<user>[^\s/:@\"'{}$%<>]*):(?P<password>[^\s/@\"'{}$%<>]+)"
    r"@(?!sha\d+:)(?P<host>[A-Za-z0-9.-]*[A-Za-z][A-Za-z0-9.-]*)|(?P<token>"
    + _TOKENS
    + r"))(?![\w-])",
    re.ASCII,
)


def credential_spans(text: str) -> list[tuple[int, int, str]]:
    """The spans of `text` that are a credential by its shape alone (`looks_like_credential`'s
    kinds, a header by its scheme), each with what it is, in words that show none of it: a
    URL's password, a `Bearer`'s token, an `hf_...`. A carried file held them where no key
    named them: `login("hf_...")` in a program, curl's `-H "Authorization: Bearer ..."`."""
    spans = []
    for found in _CREDENTIAL_IN_TEXT.finditer(text):
        if found["password"] is not None:
            spans.append((*found.span("password"), "URL password"))
        elif found["scheme"] is not None:
            if _scheme_credential(found["credential"]):
                spans.append((*found.span("credential"), f"{found['scheme']} credential"))
        elif not found["token"].startswith("sk-") or looks_generated(found["token"][3:]):
            spans.append((*found.span("token"), f"{found['token'][:3]}... token"))
    return spans


def _scheme_credential(credential: str) -> bool:
    """Whether a scheme's word (`Bearer WORD`) is a credential: a generated string, or a
    provider's token, whose prefix's `_` no generated-string rule reads (`Bearer ghp_` and
    36 lowercase letters and digits was kept whole, though `ghp_...` alone was masked)."""
    return looks_generated(credential) or _TOKEN_ONLY.fullmatch(credential) is not None


def looks_generated(text: str) -> bool:
    """Digits among letters of both cases, or 16 characters or more of digits and letters:
    a generated string, not words (`embeddings`, `resnet50-imagenet-finetuned`)."""
    digits = any(c.isdigit() for c in text)
    if digits and any(c.islower() for c in text) and any(c.isupper() for c in text):
        return True
    if _HEX_ID.fullmatch(text):  # a UUID, a hex digest
        return digits and not text.replace("-", "").isdigit()
    return digits and len(text) >= 16 and text.isalnum() and not text.isdigit()


_HEX_ID = Lazy(r"[0-9a-fA-F]{8}(?:-?[0-9a-fA-F]{4,}){2,}")


_TOKEN_ONLY = Lazy(_TOKENS, re.ASCII)


def holds_secret(name: str, value: str) -> bool:
    """Whether the variable `name=value` of a shell or the engine is a secret: by its name
    (`looks_secret`, anywhere in it: `GITHUB_TOKEN_RO`, `SECRET_KEY_BASE`), unless it is a
    count or a limit (`_counts`: `MAX_TOKENS=2048`), or by its value's shape
    (`DATABASE_URL=postgres://me:pw@db/x`)."""
    return (looks_secret(name) and not _counts(name, value)) or looks_like_credential(value)


def sets_secret(name: str, value: str) -> bool:
    """Whether `NAME=value` that a spec's `environment.env`, a command line or a script
    writes itself sets a secret: the one rule the report's and the bundle's masking, the
    standalone repro, a materialize bundle and capture judge such a variable by.
    `holds_secret`, with a value long enough to be masked (`maskable`): a shorter one or a
    yes/no word (`API_TOKEN: tok`, `AUTH_ENABLED=true`) cannot be masked in a text without
    every `tok` or `true` of it, so it is shown, and the repro writes it, not
    `API_TOKEN="$API_TOKEN"`, empty in the reader's shell (review). A number of 4 digits or
    more is a secret's (`DB_PASSWORD: "48213"`)."""
    return holds_secret(name, value) and maskable(value)


# The last word of an option's name that makes it a secret's: `--api-key`, `--hf-token`,
# `db.password`, `--password2`, `--apiKey`, `--auth`; not `--max-tokens`, `--tokenizer`,
# `--key-frames` or `--token-file` (a path), which a substring match of the secret names
# hid from the spec, unrerunnable (capture reads such a value back from the environment).
# An option's name only: a variable's (`GITHUB_TOKEN_RO`) is judged by sets_secret, where
# the secret word may come anywhere.
_SECRET_WORDS = frozenset(
    {"token", "key", "secret", "password", "passwd", "passphrase", "credential", "credentials",
     "auth"}
)  # fmt: skip
# A last word written together (`--apikey`, `--hftoken`): these endings; of words ending
# in `key`, only the keys known to be secrets (not `--hotkey`, `--monkey`).
_SECRET_ENDINGS = ("token", "secret", "password", "passwd", "passphrase")
_SECRET_KEYS = frozenset({"apikey", "secretkey", "accesskey", "privatekey", "authkey", "sshkey"})


def secret_option(name: str) -> bool:
    """Whether an option's name (`--api-key`, a Hydra key `db.password`) says its value is a
    secret, by its last word (the words redact.name_words reads a variable's name by:
    camelCase, then at any other character than a letter or a digit; a trailing number
    dropped): `--password2`, `--aws-access-key-id`, `--db-pass`, `--pgpass`; not
    `--max-tokens`, `--token-file`, `--password-file`, `--num-passes`, `--pass-rate` or
    `--first-pass` (redact.names_password)."""
    words = [w for w in name_words(name) if not w.isdigit()]  # apiKey -> api key
    if not words:
        return False
    last = words[-1].rstrip("0123456789")  # password2
    if len(words) > 1 and last == "id" and words[-2] == "key":  # --aws-access-key-id
        return True
    if names_password(tuple(words)):  # --db-pass, --mysql-pwd, --pgpass; not --first-pass
        return True
    return last in _SECRET_WORDS or last in _SECRET_KEYS or last.endswith(_SECRET_ENDINGS)


# A command's leading `NAME=value` (also after `env`), and a long option with its value in
# one word or the next: `--api-key=x`, `--password x`.
_ASSIGNMENT = Lazy(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)", re.S)
_OPTION = Lazy(r"--(?P<name>[A-Za-z][\w.-]*)(?:=(?P<value>.*))?", re.S)
# A value that reads one: `${{ env.X }}`, the shell's `"$API_KEY"` (a captured spec's),
# `$(cat key)`, Hydra's `${oc.env:X}`. Masked as a value, the spec's report read
# `--api-key ${{ env.API_KEY }}` where its command had `"$API_KEY"`.
_REFERENCE = Lazy(r"\$[({A-Za-z_]")


def command_secrets(command: object) -> list[tuple[str, str]]:
    """(NAME, value) of each secret a spec's `command` writes in itself, by the rules capture
    reads one back from the environment by (so never in a captured spec): a leading
    `API_TOKEN=... python x.py` by `sets_secret`, an option's value by `secret_option`
    (`--api-key=...`, `--password ...`), named as capture names it (`API_KEY`). A
    hand-written spec's were shown in its report, results.json and a bundle's README and
    spec, which are made to be shared; only `environment.env`'s were masked. A value that
    is an expression (`${{ env.X }}`: masked by X's own rule) or a path, or too short to be
    masked (`maskable`), is not one, nor one that reads another (`"$API_KEY"`, a captured
    spec's); nor is a command the shell cannot split."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return []
    elif isinstance(command, list):
        words = [str(w) for w in command]
    else:
        return []
    found: list[tuple[str, str]] = []
    leading = True
    taken: set[int] = set()  # the words read as an option's value
    for index, word in enumerate(words):
        assignment = _ASSIGNMENT.fullmatch(word) if leading else None
        if assignment is not None:
            if sets_secret(assignment["name"], assignment["value"]):
                found.append((assignment["name"], assignment["value"]))
            continue
        leading = leading and word == "env"
        option = _OPTION.fullmatch(word)
        if option is None:
            # A credential by its shape, under no option's name (curl's `-H
            # 'Authorization: Bearer ...'`, a bare `https://me:pw@host/x`), as capture reads
            # one back: it was in every report and bundle of a hand-written spec.
            if index not in taken and looks_like_credential(word):
                found.append((_credential_name(word, "secret", found), word))
            continue
        value = option["value"]
        if value is None and index + 1 < len(words) and not words[index + 1].startswith("-"):
            value = words[index + 1]
            taken.add(index + 1)
        if not value or _REFERENCE.search(value):
            continue
        name = re.sub(r"\W", "_", option["name"]).strip("_")
        if secret_option(option["name"]):
            if maskable(value) and not _PATH_OR_PHRASE.search(value):
                found.append((name.upper(), value))
        elif looks_like_credential(value):  # `--db postgres://me:pw@db/x`, capture's rule
            fallback = name if looks_secret(name) else f"{name}_secret"
            found.append((_credential_name(value, fallback, found), value))
    return found


# An HTTP header as one word (`Authorization: Bearer ...`): its name.
_HEADER_NAME = Lazy(r"^\s*(?P<name>[A-Za-z][\w-]*)\s*:\s")


def _credential_name(value: str, fallback: str, found: list[tuple[str, str]]) -> str:
    """The variable a credential-shaped word of a command is read from again, as capture
    names it: a header's own name (`Authorization: ...` -> AUTHORIZATION), else `fallback`
    (`--db` -> DB_SECRET), numbered where an earlier secret of the command has it."""
    header = _HEADER_NAME.match(value)
    base = header["name"] if header and looks_secret(header["name"]) else fallback
    base = re.sub(r"\W", "_", base).strip("_").upper()
    names = {name for name, _ in found}
    name, number = base, 2
    while name in names:
        name, number = f"{base}_{number}", number + 1
    return name


# A count or a limit (`_counts`): a number, with an optional multiplier (`4096`, `64k`, `1e6`).
_COUNT = Lazy(r"[-+]?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?[kKmMgG]?")


def _counts(name: str, value: str) -> bool:
    """Whether `name=value` is a setting that counts or limits, whose name holds a secret's
    word without naming a secret: a number under the word as a plural count (`MAX_TOKENS`,
    `NUM_TOKENS`, `TOKENS`, `maxNewTokens`) or under a name that starts with MAX, MIN or NUM
    (`MAX_KEY_LENGTH`, `MIN_PASSWORD_LEN`). Only `TOKENS`: `API_KEYS` is a list of keys. The
    value must be a number: `GITHUB_TOKENS=a1b2c3d4e5f6` is secrets."""
    if not _COUNT.fullmatch(value.strip()):
        return False
    words = name_words(name)  # maxNewTokens -> max new tokens
    if words[:1] in (("max",), ("min",), ("num",)):
        return True
    return "tokens" in words and not looks_secret("_".join(w for w in words if w != "tokens"))


def env_names_read(document: Mapping[str, JsonValue]) -> list[str]:
    """The engine variables a spec reads through `${{ env.X }}`, in order."""
    try:
        dotted = names_used(dict(document))
    except (ExprError, RecursionError):  # a spec that got here was validated; be safe anyway
        return []
    return [name.split(".", 2)[1] for name in dotted if name.startswith("env.") and "." in name]


def unset_env(document: Mapping[str, JsonValue], written: Iterable[str] = ()) -> tuple[str, ...]:
    """A warning when the spec reads engine variables that are not set here: they read as
    null, which a text (a value of `environment.env`, the command) gets as the empty
    string, and a bundle rerun elsewhere without `API_TOKEN` said `not-reproduced: pass`
    with no word of why. It said "null where it was read" where the child got
    `DB_PASSWORD=""`: it names the variables the child gets empty.

    `written`: the names a masked spec's closing note gives (`Redactor.masked_names`), whose
    secret the spec it was made from had written in, not read: "export it as the spec's
    author had" sent its reader after a variable the author never exported."""
    names = [
        n
        for n in dict.fromkeys(env_names_read(document))
        if n not in os.environ and _read_bare(document, n)
    ]
    left_out = [n for n in names if n in set(written)]
    warnings = []
    for group in ([n for n in names if n not in left_out], left_out):
        if not group:
            continue
        read = ", ".join(f"${{{{ env.{n} }}}}" for n in group)
        them = "it" if len(group) == 1 else "them"
        empty = _empty_in_child(document, group)
        got = f" ({', '.join(f'{k}={chr(39) * 2}' for k in empty)} in the child)" if empty else ""
        if group is left_out:
            one = len(group) == 1
            where = (
                f"the spec it was made from had {'its value' if one else 'their values'} "
                f"written in, which a bundle or report leaves out: export {them} with "
                f"{'that value' if one else 'those values'}"
            )
        else:
            where = f"export {them} as the spec's author had"
        warnings.append(
            f"the spec reads {read}, not set in this environment: null, which a text gets "
            f"as the empty string{got}; {where}"
        )
    return tuple(warnings)


def _empty_in_child(document: Mapping[str, JsonValue], names: Iterable[str]) -> list[str]:
    """The `environment.env` variables whose value reads one of `names` bare: the child
    gets them as the empty string while those are unset."""
    section = document.get("environment")
    given = section.get("env") if isinstance(section, Mapping) else None
    if not isinstance(given, Mapping):
        return []
    return [str(k) for k, v in given.items() if any(_read_bare(v, n) for n in names)]


def _read_bare(value: object, name: str) -> bool:
    """Whether some `${{ }}` of the spec reads `env.NAME` with no default after it
    (`env.X or 'default'` gives one: an unset X is no null there)."""
    if isinstance(value, str):
        bare = re.compile(rf"\benv\.{re.escape(name)}\b(?!\s+or\b)")
        try:
            found = find_expressions(value)
        except ExprError:
            return False
        return any(bare.search(e.text) for e in found)
    if isinstance(value, Mapping):
        return any(_read_bare(v, name) for v in value.values())
    if isinstance(value, list):
        return any(_read_bare(v, name) for v in value)
    return False


def public_env(document: Mapping[str, JsonValue]) -> frozenset[str]:
    """`environment.public_env`: engine variables whose values the spec lets outputs show."""
    section = document.get("environment")
    names = section.get("public_env") if isinstance(section, Mapping) else None
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


def secret_values(
    secrets: Iterable[tuple[str, str]] = (), environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The secret values a Redactor would mask: of `secrets` (`NAME=value` pairs judged
    secret already: a command's, by `sets_secret`), then of `environ` (this process's by
    default) by `holds_secret`."""
    environ = os.environ if environ is None else environ
    shell = [v for n, v in environ.items() if holds_secret(n, v)]
    return tuple(dict.fromkeys(v for v in [*(v for _, v in secrets), *shell] if maskable(v)))


# The fewest characters of a secret that count as a part of it in a text: shorter runs
# (`hf_`, `key`) are as likely the text's own words.
SECRET_PART_CHARS = 6
# A value whose parts are not looked for: a path (`/home/me/.Xauthority`, `~/key.json`,
# `./creds`) or words (`Ada Lovelace`); an AWS key's inner `/` or a password's `&` is no
# path.
_PATH_OR_PHRASE = Lazy(r"^[/~.]|\s")


def secret_parts(text: str, secrets: Iterable[str]) -> list[tuple[int, int]]:
    """The spans of `text` that are SECRET_PART_CHARS or more characters of one secret (a
    shorter secret: the whole value), in order, none overlapping. A program that prints a
    part of a secret (`token hf_abc`, its first characters) is not masked by the whole-value
    mask (Redactor), where a captured spec writes the text down for anyone to read."""
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        if len(secret) < SECRET_PART_CHARS or _PATH_OR_PHRASE.search(secret):
            # Too short to have parts, or a path or words (XAUTHORITY's `/home/me/.Xauth`,
            # GIT_AUTHOR_NAME's): the whole value only, as the Redactor masks it (six of a
            # path's characters, `/home/`, were in every path of the text).
            if maskable(secret):
                spans += [(m.start(), m.end()) for m in re.finditer(re.escape(secret), text)]
            continue
        starts = {
            secret[i : i + SECRET_PART_CHARS] for i in range(len(secret) - SECRET_PART_CHARS + 1)
        }
        at = 0
        while at <= len(text) - SECRET_PART_CHARS:
            if text[at : at + SECRET_PART_CHARS] not in starts:
                at += 1
                continue
            end = at + SECRET_PART_CHARS
            while end < len(text) and text[at : end + 1] in secret:
                end += 1
            spans.append((at, end))
            at = end
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):  # two secrets' parts may overlap: one span
        if merged and start <= merged[-1][1]:
            previous_start, previous_end = merged.pop()
            start, end = previous_start, max(end, previous_end)
        merged.append((start, end))
    return merged


def mask_parts(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret, whole or a part (`secret_parts`), as MASK."""
    out, at = [], 0
    for start, end in secret_parts(text, secrets):
        out += [text[at:start], MASK]
        at = end
    return "".join([*out, text[at:]])


def maskable(value: str) -> bool:
    """Whether `value` is masked wherever it appears in a text, not only under its name:
    MIN_MASKED_CHARS or more and no yes/no word. Masking every `1` or `true` of a report
    hid the report, not the secret. A number is masked as any other value: a PIN or a
    numeric password is 4 to 6 digits (`DB_PASSWORD=48213`), and exempting numbers shorter
    than SECRET_PART_CHARS showed it in report.md, results.json and the store.
    The `accuracy *** reached` that exemption was made for came from `TEST_PASS_RATE=0.95`,
    which the name rule no longer takes for a password (`names_password`).
    A value that is not UTF-8 (`env X=$'\\x80'`, read by `${{ env.X }}`) is masked at any
    length: no output (results.json, the store) can hold it as it is, where written it
    ended the run with an internal UnicodeEncodeError; masked, a rerun reads it again."""
    if not value.isascii() and undecodable_byte(value) is not None:
        return True
    return len(value) >= MIN_MASKED_CHARS and value.strip().lower() not in _PLAIN_WORDS


# The fewest first characters of a generated secret (a token, a key) that a text is masked
# for: a program that logs `token[:10]` prints a tenth of a key's entropy and the provider's
# prefix, and a reader can tell which key it was. Fewer (`hf_abc`) are as likely a word.
SECRET_BEGINNING_CHARS = 8


def _has_parts(value: str) -> bool:
    """Whether a printed beginning of `value` is masked too: a generated string or a
    provider's token (no path or words, whose first characters are every such text's)
    longer than the beginning."""
    return (
        len(value) > SECRET_BEGINNING_CHARS
        and value.isascii()
        and not _PATH_OR_PHRASE.search(value)
        and (looks_generated(value) or looks_like_credential(value))
    )


def _secret_core(value: str) -> str:
    """The part of `value` whose printed beginning gives the secret away: a credential's
    own secret (a URL's password, or its user where that is a token; a scheme's or a
    header's token), else the whole value. The beginning of a URL holding a password is
    its scheme (`https://`), which every other URL of a log begins with: all of them were
    masked to `***pytorch.org/docs`, hiding the text a reader needed and none of the secret."""
    found = _CREDENTIAL.fullmatch(value.strip())
    if found is None:
        return value
    for group in ("password", "alone", "credential"):
        if found[group]:
            return str(found[group])
    if found["header"]:
        # `Authorization: Bearer TOKEN`: the last word is the token (its name and scheme
        # begin every such header).
        return str(found["header"]).split(":", 1)[1].split()[-1]
    return value


def _beginning(value: str) -> str:
    """The pattern of `value`'s first SECRET_BEGINNING_CHARS characters or more, as far as
    the text goes on with it (`hf_abcde(?:f(?:g)?)?`), ASCII, so its bytes are the same."""
    head, rest = value[:SECRET_BEGINNING_CHARS], value[SECRET_BEGINNING_CHARS:]
    tail = ""
    for char in reversed(rest):
        tail = f"(?:{re.escape(char)}{tail})?"
    return re.escape(head) + tail


class Redactor:
    """Masks a fixed set of secret values (and secret-looking names) in whatever it is given:
    whole, and a generated one's printed beginning (SECRET_BEGINNING_CHARS or more)."""

    def __init__(self, values: Iterable[str] = (), names: Mapping[str, str] | None = None) -> None:
        found = sorted({v for v in values if maskable(v)}, key=lambda v: (-len(v), v))
        self.values: tuple[str, ...] = tuple(found)
        # value -> the environment variable a rerun reads it from (spec_text).
        self.names: dict[str, str] = {
            v: n for v, n in (names or {}).items() if v in found and _ENV_NAME.fullmatch(n)
        }
        # Longest first, so a secret that contains another is masked whole; then the
        # printed beginnings of the generated ones (`_beginnings`).
        cores = (_secret_core(v) for v in found)
        self._beginnings = tuple(dict.fromkeys(_beginning(c) for c in cores if _has_parts(c)))
        alternatives = [*map(re.escape, found), *self._beginnings]
        self._pattern = re.compile("|".join(alternatives)) if found else None
        self._bytes: re.Pattern[bytes] | None = None

    @classmethod
    def for_spec(
        cls, document: Mapping[str, JsonValue], environ: Mapping[str, str] | None = None
    ) -> Redactor:
        """The secrets of a run of this spec document in an engine with `environ`."""
        environ = os.environ if environ is None else environ
        public = public_env(document)
        named: dict[str, str] = {}
        for name in env_names_read(document):
            # One that is not UTF-8 even where public: no output can hold it (maskable).
            if name in environ and (
                name not in public or undecodable_byte(environ[name]) is not None
            ):
                named.setdefault(environ[name], name)
        for name, value in environ.items():
            if holds_secret(name, value):
                named.setdefault(value, name)
                # A value read from a file keeps its newline; what a program prints, not.
                named.setdefault(value.strip(), name)
        section = document.get("environment")
        given = section.get("env") if isinstance(section, Mapping) else None
        if isinstance(given, Mapping):
            for key, item in given.items():
                # An expression is no secret: what it reads is masked by its own name.
                if item is None or "${{" in str(item):
                    continue
                # The spec writes it: the rule the standalone repro and capture judge it by
                # (`MAX_TOKENS: 2048` is a setting; `GITHUB_TOKEN_RO: ...` a secret).
                if sets_secret(str(key), str(item)):
                    named.setdefault(str(item), str(key))
        for key, item in command_secrets(document.get("command")):
            named.setdefault(item, key)
        # A value read from a public name is still a secret when a secret name holds it too.
        return cls(named, names=named)

    def spec_text(self, text: str) -> str:
        """`text` (a spec, or a `--set` override) with each secret written as the
        expression that reads it again, `${{ env.NAME }}`: still valid YAML, and a rerun
        elsewhere takes the secret from its own environment. A secret of no known variable
        is MASK. A text with more than one line (a whole spec) ends with a comment that
        names the variables to set.

        Each scalar that holds a secret is written again as the YAML parser read it
        (`_yaml_rewritten`), double-quoted, with its secrets replaced: whatever its style
        and wherever it stands. `${{ env.NAME }}` in place of a plain scalar's part inside
        a flow collection (`{DB_URL: postgres://u:hunter2@h/db}`) opened a mapping there,
        and the masked spec was invalid YAML; quoting only a whole such scalar left a
        secret inside a longer one so."""
        if self._pattern is None or not text:
            return text
        used: dict[str, None] = {}

        def mask(match: re.Match[str]) -> str:
            name = self.names.get(match.group(0))
            if name is None:
                return MASK
            used[name] = None
            return "${{ env." + name + " }}"

        masked = _yaml_rewritten(text, self._pattern, mask)
        if used and "\n" in text.strip():
            # One note, with the names of a text masked before (a bundle's spec, a run an
            # older reprospec stored): a second one went unread, and the report said to set
            # API_KEY alone where its spec read DB_SECRET too.
            names = dict.fromkeys([*Redactor.masked_names(masked), *used])
            masked = _MASKED_NAMES.sub("", masked).rstrip("\n")
            masked += "\n" + _MASKED_NOTE + " ".join(names) + "\n"
        return masked

    def shell_text(self, text: str) -> tuple[str, tuple[str, ...]]:
        """`text`, a shell line, with each secret of a known variable written as that
        variable's expansion, quoted for where it stands (`"$HF_TOKEN"`, `${HF_TOKEN}`
        inside double quotes, `'"$HF_TOKEN"'` inside single ones), and the variables it
        reads, to export; a secret of no known variable is MASK. A secret the spec read
        through `${{ env.HF_TOKEN }}` in its command was a bare `***`, which the shell
        expanded as a glob: `--token ***` passed the folder's file names."""
        if self._pattern is None or not text:
            return text, ()
        out: list[str] = []
        used: dict[str, None] = {}
        quote = ""
        at = 0
        for match in self._pattern.finditer(text):
            quote = _quote_after(text[at : match.start()], quote)
            out.append(text[at : match.start()])
            name = self.names.get(match.group(0))
            if name is None:
                out.append(MASK)
            else:
                used[name] = None
                out.append({"'": f"'\"${name}\"'", '"': f"${{{name}}}"}.get(quote, f'"${name}"'))
            quote = _quote_after(match.group(0), quote)
            at = match.end()
        out.append(text[at:])
        return "".join(out), tuple(used)

    def reading_assignment(self, name: str, value: str) -> tuple[str, tuple[str, ...]] | None:
        """`NAME=value` as a shell word that reads its secret from the variables it came
        from (`URL=https://me:"$PW"@db`, `MY_TOKEN='Bearer '"$MY_TOKEN"`), and their names;
        None where a secret has no known variable (MASK) or the value is NAME's own whole
        (`NAME="$NAME"`: passed by name). The standalone repro's variables and run.sh's
        `docker run -e` both: each had its own test, and run.sh's lost `Bearer `."""
        import shlex

        word, names = self.shell_text(f"{name}={shlex.quote(value)}")
        if not names or MASK in word or word == f'{name}="${name}"':
            return None
        return word, names

    def command_line(self, text: str) -> str:
        """`text`, a reprospec command line (`reprospec run s.yaml --set PATH=VALUE`), with
        each secret of a `--set` written as `spec_text` writes it, `${{ env.NAME }}`, and
        the word quoted: it still runs, with NAME exported. A `--set
        environment.env.MY_API_TOKEN=***` pasted was `the value is not valid YAML`, exit 2.
        A secret elsewhere, or of no known variable, is MASK."""
        if self._pattern is None or not text or self.text(text) == text:
            return text
        from reprospec.core.logtext import shell_join, shell_split
        from reprospec.core.runoptions import typed_as

        try:
            words = shell_split(text)  # shlex read a `$'b\xfe'` word as another
        except ValueError:
            return self.text(text)
        shown = []
        for index, word in enumerate(words):
            name, equals, value = word.partition("=")
            # `--se` too, argparse's cut of `--set`: its secret was written `***`, which a
            # pasted rerun refused as YAML.
            if equals and typed_as(name, "--set"):
                shown.append(f"{name}={self.override(value)}")
            elif index and typed_as(words[index - 1], "--set"):
                shown.append(self.override(word))
            else:
                shown.append(self.text(word))
        return shell_join(shown)

    def override(self, override: str) -> str:
        """A `--set PATH=VALUE` as `spec_text` writes a spec: its VALUE is the YAML, and
        a secret in it is written so (a whole one quoted), PATH as it is. Also the run's
        options' `overrides` as results.json keeps them, from which a run made with no
        command line (`reprospec.run`) is given one: `***` there was refused as YAML."""
        if self.text(override) == override:
            return override  # no secret in it: not parsed as YAML for nothing
        path, equals, value = override.partition("=")
        return path + equals + self.spec_text(value) if equals else self.spec_text(override)

    @staticmethod
    def masked_names(spec_text: str) -> tuple[str, ...]:
        """The variables a spec masked by `spec_text` names in its closing comment: those a
        rerun reads its secrets from, whose values no report or bundle holds."""
        found = _MASKED_NAMES.compiled.findall(spec_text)  # one masked twice: two notes
        return tuple(dict.fromkeys(name for names in found for name in names.split()))

    def text(self, text: str) -> str:
        """`text` with every secret value replaced by MASK."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def data(self, data: bytes) -> bytes:
        """`data` (a file's bytes, text or not) with every secret's UTF-8 form as MASK."""
        if not self.values or not data:
            return data
        if self._bytes is None:
            encoded = sorted((v.encode("utf-8") for v in self.values), key=lambda b: (-len(b), b))
            beginnings = [beginning.encode() for beginning in self._beginnings]  # ASCII
            self._bytes = re.compile(b"|".join([*map(re.escape, encoded), *beginnings]))
        return self._bytes.sub(MASK.encode(), data)

    def value(self, value: T) -> T:
        """A copy of `value` with secrets masked: strings, mappings (secret-looking keys'
        string values masked whole), lists, tuples and frozen dataclasses, recursively;
        other leaves are kept. Unchanged parts are returned as they are."""
        # _walk gives back what it was given, rebuilt where a secret was in it (a mapping
        # as a dict, a dataclass by `replace`): a recursive walk cannot spell that type.
        return cast("T", self._walk(value))

    def _walk(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        kind = type(value)
        if kind in _ATOMS:
            return value  # most of a result: numbers, flags, paths, None
        if isinstance(value, (dict, Mapping)):  # a dict first: the ABC check is slower
            return {
                key: (
                    MASK
                    if isinstance(key, str)
                    and isinstance(item, str)
                    and item
                    and looks_secret(key)
                    and not _RELEASE.fullmatch(item)
                    and not _counts(key, item)
                    else self._walk(item)
                )
                for key, item in value.items()
            }
        if isinstance(value, tuple):
            return tuple(self._walk(item) for item in value)
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        names = _init_fields(kind)
        if names:
            if self._pattern is None and _no_mapping_in(kind):
                # Without a secret value only a mapping's secret-looking key masks anything,
                # and no field of this class can hold a mapping: an attempt's result, the
                # run's most walked value, is passed as it is.
                return value
            changes: dict[str, object] = {}
            for name in names:
                old = getattr(value, name)
                held = type(old)
                if (
                    held in _ATOMS
                    or (held is tuple and not old)
                    or (held is str and self._pattern is None)
                ):
                    continue  # most fields of a result: no call for what has nothing to mask
                new = self._walk(old)
                if new is not old and new != old:
                    changes[name] = new
            return dataclasses.replace(value, **changes) if changes else value  # type: ignore[type-var]
        return value


def _yaml_rewritten(
    text: str, pattern: re.Pattern[str], replace: typing.Callable[[re.Match[str]], str]
) -> str:
    """`text`, YAML, with `pattern`'s matches replaced, and still YAML that loads to the
    values meant. The parser's marks say where each scalar holding a match begins and
    ends (`_scalars_matching`). Where the replacement in its text as written loads back as
    meant, that is what is written: a block scalar keeps its lines, a command stays as the
    spec's author wrote it. Otherwise, and wherever the whole result does not load to the
    values meant (checked: `${{ env.NAME }}` inside a plain scalar of a flow collection
    opens a mapping there, `***` starting a plain one is an alias, a secret written with
    escapes or folded across lines is not in the text at all), each such scalar is written
    again double-quoted, its value (as the parser read it) with the matches replaced, its
    anchor or tag kept: a form that holds any value anywhere. What is outside every
    scalar (a comment) is replaced as it is, and so is a text the parser refuses, which
    has no values to keep."""
    spans = _scalars_matching(text, pattern)
    if spans is None:
        return pattern.sub(replace, text)
    kept = _spliced(text, pattern, replace, spans, requote=False)
    if _loads_as_meant(kept, text, pattern, replace):
        return kept
    return _spliced(text, pattern, replace, spans, requote=True)


def _spliced(
    text: str,
    pattern: re.Pattern[str],
    replace: typing.Callable[[re.Match[str]], str],
    spans: list[tuple[int, int, bool, str]],
    *,
    requote: bool,
) -> str:
    """`text` with each span's scalar rewritten: replaced as written (a plain one inside a
    flow collection, never: `{` there is the flow's), or, with `requote`, double-quoted."""
    out: list[str] = []
    at = 0
    for start, end, in_flow_plain, value in spans:
        out.append(pattern.sub(replace, text[at:start]))
        written = text[start:end]
        if not requote and not in_flow_plain:
            out.append(pattern.sub(replace, written))
        else:
            properties = _YAML_PROPERTIES.match(written)
            kept = properties.group(0) if properties else ""
            out.append(kept + _double_quoted(pattern.sub(replace, value)))
        at = end
    out.append(pattern.sub(replace, text[at:]))
    return "".join(out)


def _loads_as_meant(
    rewritten: str,
    text: str,
    pattern: re.Pattern[str],
    replace: typing.Callable[[re.Match[str]], str],
) -> bool:
    """Whether `rewritten` loads to what `text` does with every string's matches replaced."""
    import yaml

    def meant(value: object) -> object:
        if isinstance(value, str):
            return pattern.sub(replace, value)
        if isinstance(value, dict):
            return {meant(key): meant(item) for key, item in value.items()}
        if isinstance(value, list):
            return [meant(item) for item in value]
        return value

    try:
        got = list(yaml.load_all(rewritten, Loader=yaml.SafeLoader))
        want = [meant(document) for document in yaml.load_all(text, Loader=yaml.SafeLoader)]
    except (yaml.YAMLError, TypeError, ValueError):
        return False
    return got == want


# An anchor's or tag's words before a scalar, which its marks take in (`&db !!str `).
_YAML_PROPERTIES = Lazy(r"(?:[&!]\S*\s+)*")


def _scalars_matching(
    text: str, pattern: re.Pattern[str]
) -> list[tuple[int, int, bool, str]] | None:
    """(start, end, plain inside a flow collection, value) of each scalar of `text` whose
    value `pattern` matches, in order; None where the text is no YAML the parser reads."""
    import yaml

    found: dict[int, tuple[int, int, bool, str]] = {}
    try:
        roots = [node for node in yaml.compose_all(text, Loader=yaml.SafeLoader) if node]
    except yaml.YAMLError:
        return None
    todo: list[tuple[yaml.Node, bool]] = [(node, False) for node in roots]
    seen: set[int] = set()
    while todo:
        node, in_flow = todo.pop()
        if id(node) in seen:
            continue  # an alias: the node it names is walked once
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if isinstance(node.value, str) and pattern.search(node.value):
                start, end = node.start_mark.index, node.end_mark.index
                found[start] = (start, end, in_flow and node.style is None, node.value)
        elif isinstance(node, yaml.MappingNode):
            flow = in_flow or bool(node.flow_style)
            todo += [(part, flow) for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            flow = in_flow or bool(node.flow_style)
            todo += [(item, flow) for item in node.value]
    return [found[start] for start in sorted(found)]


def _double_quoted(value: str) -> str:
    """`value` as a YAML double-quoted scalar: JSON's escapes, which YAML's include, and
    YAML's own for what it reads as a line break or cannot print (NEL, LS, PS, C1)."""
    import json

    quoted = json.dumps(value, ensure_ascii=False)
    return "".join(
        f"\\u{ord(char):04x}"
        if 0x7F <= ord(char) <= 0x9F
        or char in "\u2028\u2029\ufeff"
        or 0xD800 <= ord(char) <= 0xDFFF
        else char
        for char in quoted
    )


def _quote_after(text: str, quote: str) -> str:
    """The quote a shell line is inside after `text` (`'`, `"`, or "" for none), read from
    `quote`, the one it was inside before; a backslash escapes outside single quotes."""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif char in "'\"" and quote in ("", char):
            quote = "" if quote else char
    return quote


# Leaves that hold no text to mask (a Path is kept as it is, as any other leaf).
_ATOMS = frozenset({int, float, bool, type(None), PosixPath})


_FIELDS: dict[type, tuple[str, ...]] = {}


def _init_fields(kind: type) -> tuple[str, ...]:
    """The init fields of a dataclass type (its fields, as `replace` takes them); () otherwise.

    Looked up once per type: a run's results are walked attempt by attempt.
    """
    names = _FIELDS.get(kind)
    if names is None:
        fields = dataclasses.fields(kind) if dataclasses.is_dataclass(kind) else ()
        names = _FIELDS[kind] = tuple(field.name for field in fields if field.init)
    return names


# What a field may hold for `_no_mapping_in`: leaves with no mapping inside.
_PLAIN_HINTS = frozenset({str, int, float, bool, type(None), Path, PosixPath})
_NO_MAPPING: dict[type, bool] = {}


def _no_mapping_in(kind: type) -> bool:
    """Whether no value of dataclass `kind` can hold a mapping, read from its fields' types.

    Decided once per type. A field whose type is not known to be plain (a mapping, a list,
    `object`, a name that cannot be resolved) says False: the walk goes on as before. The
    types are the project's, checked by mypy, so a value holds what its fields say.
    """
    known = _NO_MAPPING.get(kind)
    if known is None:
        _NO_MAPPING[kind] = False  # a class that holds itself is walked
        try:
            hints = typing.get_type_hints(kind)
            known = all(_plain(hints[name]) for name in _init_fields(kind))
        except (NameError, TypeError, KeyError):
            known = False
        _NO_MAPPING[kind] = known
    return known


def _plain(hint: object) -> bool:
    """Whether a value of type `hint` holds no mapping: a leaf, a Literal, a union or a
    tuple of such, or a dataclass whose fields are."""
    if hint in _PLAIN_HINTS:
        return True
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        return all(type(arg) in _PLAIN_HINTS for arg in args)
    if origin in (Union, types.UnionType, tuple):
        return all(arg is Ellipsis or _plain(arg) for arg in args)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _no_mapping_in(hint)
    return False


__all__ = [
    "MASK",
    "SECRET_NAME",
    "Redactor",
    "env_names_read",
    "looks_secret",
    "mask_parts",
    "maskable",
    "name_words",
    "names_password",
    "public_env",
    "secret_parts",
    "secret_values",
    "sets_secret",
    "unset_env",
]
