"""What a spec's files may carry to someone else: the one rule `bundle` and `materialize` share.

Both are made to be shared, so both carry the same files the same way:

- which files: those the cells name (`plan/workfiles.py`: the command's words, the local
  modules they import, the spec's `files`), never the rest of the workdir. A copy of the
  whole workdir (what `materialize` made) shipped `.env`, `secrets/creds.json` and every
  unrelated spec of the project to whoever the folder was sent to;
- never a hidden file: a dot-file or anything under a dot-folder (`.env`, `.git/`,
  `.ssh/`), even when the spec names it: it is where a project keeps what is its own
  (tokens, a checkout's history), as capture already leaves dot-files out of `files`.
  It is named as left out, for the reader to supply their own;
- no secret in what is carried: a value the run's `Redactor` knows (a variable the spec
  reads, a secret-looking variable of the engine) is written as `***` wherever a carried
  file holds it, and so is the literal value of a secret-looking key in a carried text
  file (`wandb_api_key: 3f9c...` in a `config.yaml` the spec lists). Each such file is
  named in a warning, with its keys, so the reader knows what to put back.

Masking rather than refusing: the file is needed for the rerun (the spec names it), the
sender has no other way to share it than editing their own config, and a value written
as `***` is what every other output of the engine already does with a secret; the
warning (and materialize's README) says which file needs the reader's value.

The key rule is narrower than the Redactor's name rule (`looks_secret`) on purpose: a
config's `tokenizer: bert-base-uncased`, `max_tokens: 2048` or `eos_token: "</s>"` look
secret by that rule, and masking them would break the very rerun the file is carried
for. A strong word (`password`, `secret`, `api_key`, `access_token`) masks any literal;
a weak one (`token`, `auth`, `key` alone) masks only a value shaped like a generated
secret (letters and digits, 12 characters or more); a credential's shape (`ghp_...`,
`Bearer ...`) masks under any key.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.lazyre import Lazy
from reprospec.core.redact import (
    MASK,
    MIN_MASKED_CHARS,
    Redactor,
    credential_spans,
    holds_secret,
    looks_generated,
    looks_like_credential,
)
from reprospec.export.dockerignore import read_dockerignore
from reprospec.plan.workfiles import carried_files

# A text file over this is carried masked by value only (a dataset, not a config).
MAX_SCANNED_BYTES = 8 << 20

# `key: value`, `key = value`, `"key": "value"`, `export KEY=value`, `f(api_key="...")`:
# the key, then a quoted literal or a bare word (bare words only outside Python source,
# where `token = settings.token` is code, not a value).
_KEYED = Lazy(
    r"""(?:^|(?<=[\s{,;(]))(?P<q>["']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)(?P=q)[ \t]*[:=][ \t]*"""
    r"""(?P<value>"[^"\n]*"|'[^'\n]*'|[^\s"'#,;{}()\[\]<>$]+)""",
    re.MULTILINE,
)
_CAMEL = Lazy(r"([a-z0-9])([A-Z])")
_WORD_SPLIT = Lazy(r"[^a-z0-9]+")
# Words that make a key a secret whatever its value looks like.
_STRONG = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "apikey",
        "accesskey",
        "secretkey",
        "privatekey",
        "authtoken",
        "accesstoken",
        "refreshtoken",
    }
)
# `api_key`, `access_token`: the second word is weak alone (`sort_key`), strong after these.
_STRONG_BEFORE = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "auth",
        "client",
        "bearer",
        "refresh",
        "session",
        "hf",
        "github",
        "gh",
        "gitlab",
        "openai",
        "anthropic",
        "slack",
        "npm",
        "pypi",
        "wandb",
    }
)
_WEAK = frozenset({"token", "auth", "key"})
# A key that names where a secret is, not the secret: `password_file`, `token_env`.
_NOT_THE_VALUE = frozenset(
    {"file", "path", "dir", "env", "var", "name", "type", "len", "length", "size", "url", "id"}
)
_PLAIN = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "changeme"})
_GENERATED = Lazy(r"(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_+/=.:-]{12,}")
_RELEASE = Lazy(r"v?\d+(?:\.\d+)+\S*")
_CODE_SUFFIXES = frozenset({".py", ".pyi"})
# A netrc entry (`machine HOST login ME password X`, one line or several): its tokens are
# separated by whitespace, with no `:` or `=` for `_KEYED`, so a carried `netrc`, `authinfo`
# or `creds.txt` kept its password verbatim where a `password: X` was masked. Read only
# from a line's `machine HOST` or `default`, netrc's own start of an entry, and where the
# entry has a `login`: "the password is" in prose, or a program's `password = ...`, is none.
_NETRC_ENTRY = Lazy(
    r"^[ \t]*(?:machine[ \t\r\n]+\S+|default)"
    r"(?:[ \t\r\n]+(?:login|password|passwd|account|port)[ \t\r\n]+\S+)+",
    re.MULTILINE,
)
_NETRC_LOGIN = Lazy(r"(?<!\S)login[ \t\r\n]")
# Inside an entry: the tokens whose value is a secret (`account` is netrc's second password).
_NETRC_SECRET = Lazy(r"(?<!\S)(?P<key>password|passwd|account)[ \t\r\n]+(?P<value>\S+)")


@frozen
class KeyedSecret:
    """A secret-looking key with a literal value in a carried file, masked there."""

    line: int
    key: str


@frozen
class CarriedFile:
    """A file as it is carried: its bytes with every secret as `***`, and what was masked."""

    data: bytes
    # It held a value the run's Redactor knows (a variable the spec reads, a secret one).
    masked_values: bool = False
    keys: tuple[KeyedSecret, ...] = ()

    def warning(self, place: str) -> str | None:
        """What the reader of a bundle must be told about this file at `place`, if anything."""
        what = []
        if self.masked_values:
            what.append("a secret value of this run")
        if self.keys:
            shown = ", ".join(f"{k.key} (line {k.line})" for k in self.keys[:5])
            more = f" and {len(self.keys) - 5} more" if len(self.keys) > 5 else ""
            what.append(f"a literal secret under {shown}{more}")
        if not what:
            return None
        return (
            f"{place} held {' and '.join(what)}, written as {MASK} in the copy: whoever "
            "reruns it puts their own value back"
        )


def is_hidden(relative: str | PurePosixPath) -> bool:
    """Whether a path relative to its workdir is a dot-file or lies under a dot-folder
    (`.env`, `.git/config`, `conf/.secrets/x`); `..` steps out of the workdir and counts not."""
    return any(
        part.startswith(".") and part not in (".", "..") for part in PurePosixPath(relative).parts
    )


def carried_bytes(path: Path, redactor: Redactor) -> CarriedFile:
    """The bytes of `path` as a bundle carries them (see the module's rule)."""
    raw = path.read_bytes()
    # Literals first: a run's secret of their shape (a URL's user:pass@) masked only their
    # beginning (`index-url = ***XYZ77@h`), which the key rule took as masked already.
    keys: tuple[KeyedSecret, ...] = ()
    text = None
    if len(raw) <= MAX_SCANNED_BYTES and b"\0" not in raw[:8192]:
        with contextlib.suppress(UnicodeDecodeError):  # UTF-8 text only
            text = raw.decode("utf-8")
    if text is not None:
        masked, keys = mask_keyed_secrets(text, code=path.suffix in _CODE_SUFFIXES)
        raw = masked.encode("utf-8") if keys else raw
    data = in_files(redactor).data(raw)
    return CarriedFile(data, data != raw, keys)


@functools.lru_cache(maxsize=4)  # one per bundle, not one per file it carries
def in_files(redactor: Redactor) -> Redactor:
    """The run's Redactor less the plain values it masks only because the spec reads them
    (`${{ env.STEPS }}` = 1000: a number, a yes/no word, a release, a path), where the name
    says no secret: in a report that is hiding a setting, in a carried file it is breaking
    the code (`range(***)`, a SyntaxError the rerun died of; review)."""
    kept = [
        value
        for value in redactor.values
        if (name := redactor.names.get(value)) is None
        or holds_secret(name, value)
        or not _plain_value(value)
    ]
    if len(kept) == len(redactor.values):
        return redactor
    return Redactor(kept, {v: redactor.names[v] for v in kept if v in redactor.names})


def _plain_value(value: str) -> bool:
    text = value.strip()
    return (
        text.lower() in _PLAIN
        or bool(_NUMBER.fullmatch(text))
        or bool(_RELEASE.fullmatch(text))
        or text[:1] in "/~."
    )


_NUMBER = Lazy(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def mask_keyed_secrets(text: str, *, code: bool = False) -> tuple[str, tuple[KeyedSecret, ...]]:
    """`text` with the literal value of each secret-looking key as MASK (quotes kept), and
    those keys; in Python source (`code`) only quoted values are literals."""
    text, keyed = _masked(text, _keyed_spans(text, code))
    text, netrc = _masked(text, _netrc_spans(text))
    # A credential by its shape under no key (`login("hf_...")`, curl's `-H "Authorization:
    # Bearer ..."`, a URL's password), named by its kind.
    text, shaped = _masked(text, credential_spans(text))
    return text, tuple(sorted([*keyed, *netrc, *shaped], key=lambda k: k.line))


def _masked(text: str, spans: Iterable[tuple[int, int, str]]) -> tuple[str, list[KeyedSecret]]:
    """`text` with each span (start, end, what it is; in order, apart) as MASK, and each
    span's line and name. Each pass masks the text the one before it left."""
    out: list[str] = []
    found: list[KeyedSecret] = []
    at = 0
    for start, end, name in spans:
        out += [text[at:start], MASK]
        at = end
        found.append(KeyedSecret(text.count("\n", 0, start) + 1, name))
    return "".join([*out, text[at:]]), found


def _keyed_spans(text: str, code: bool) -> Iterator[tuple[int, int, str]]:
    """The literal value of each secret-looking key (`password = "..."`), its quotes left
    out; in Python source (`code`) only quoted values are literals."""
    for match in _KEYED.finditer(text):
        value = match["value"]
        quoted = value[:1] in "\"'" and len(value) >= 2
        if code and not quoted:
            continue
        literal = value[1:-1] if quoted else value
        if not _secret(match["key"], literal):
            continue
        start, end = match.span("value")
        if quoted:
            start, end = start + 1, end - 1
        yield start, end, match["key"]


def _netrc_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """The password and account of each netrc entry that has a login (`machine H login ME
    password X`), not one masked already (by the run's own value)."""
    for entry in _NETRC_ENTRY.finditer(text):
        if _NETRC_LOGIN.search(entry[0]) is None:
            continue
        for token in _NETRC_SECRET.finditer(entry[0]):
            if token["value"] == MASK:
                continue
            start = entry.start() + token.start("value")
            yield start, start + len(token["value"]), f"netrc {token['key']}"


def _secret(key: str, value: str) -> bool:
    if looks_like_credential(value):
        return True
    value = value.strip()
    if (
        len(value) < MIN_MASKED_CHARS
        or value.lower() in _PLAIN
        or MASK in value
        or value[:1] in "/~.<"  # a path, or a placeholder such as <your-key>
        or "${" in value
        or _RELEASE.fullmatch(value)
        or value.isdigit()
    ):
        return False
    words = [w for w in _WORD_SPLIT.split(_CAMEL.sub(r"\1_\2", key).lower()) if w]
    # The secret's word last, as capture's option rule: `access_token_ttl: 3600s` is a
    # duration, `__key__: sample000123` a sample's name (review).
    if not words or words[-1] not in _STRONG | _WEAK:
        return False
    strong = words[-1] in _STRONG or (
        len(words) > 1 and words[-2] in _STRONG_BEFORE and words[-1] in ("key", "token")
    )
    if strong:
        return True
    # A weak word's value only where it is generated: digits among letters of both cases,
    # or 16 characters and more (not `layer4.1.conv2`, `sample000123`).
    return bool(_GENERATED.fullmatch(value)) and looks_generated(value)


@frozen
class WorkdirFiles:
    """The files of one cell's workdir that a bundle carries, and what it leaves out."""

    workdir: Path
    # Carried: resolved paths inside the workdir, in order.
    files: tuple[Path, ...]
    # Named by the cell (its command, the spec's `files`) and left out as hidden.
    hidden: tuple[str, ...] = ()
    # Names in the spec's `files` that are not there.
    missing: tuple[str, ...] = ()
    # Named from outside the workdir by a relative path (`../raises.py`), and hidden ones
    # among those left out.
    outside: tuple[Path, ...] = ()
    # Named by an absolute path outside the workdir: this machine's, no reader's.
    absolute: tuple[Path, ...] = ()


def workdir_files(attempt: AttemptPlan, others: Sequence[AttemptPlan] = ()) -> WorkdirFiles:
    """What of `attempt`'s workdir a bundle carries: the named files less the hidden ones,
    of `attempt` and of `others`, the other attempts of that workdir."""
    workdir = attempt.workdir.resolve()
    named = carried_files(attempt, others)
    files: list[Path] = []
    hidden: list[str] = []
    for rel in named.inside:
        if is_hidden(rel):
            hidden.append(rel)
        else:
            files.append((attempt.workdir / rel).resolve())
    outside: list[Path] = []
    for path in named.outside:
        rel = os.path.relpath(path, workdir)
        if is_hidden(rel):
            hidden.append(rel)
        else:
            outside.append(path)
    # A name of the spec's `files` that is not there (a typo: `data.cvs`) was left out
    # without a word, and the recipient's rerun failed on the missing file.
    listed = dict.fromkeys(n for each in (attempt, *others) for n in each.files)
    missing = [n for n in listed if not (attempt.workdir / n).expanduser().exists()]
    return WorkdirFiles(
        workdir, tuple(files), tuple(hidden), tuple(missing), tuple(outside), named.absolute
    )


def hidden_entries(workdir: Path, limit: int = 10) -> tuple[str, ...]:
    """The dot-files and dot-folders at the top of `workdir` (folders with a `/`), sorted:
    what a bundle never carries, named so its reader knows a `.env` was there to supply."""
    try:
        entries = sorted(e for e in workdir.iterdir() if e.name.startswith("."))
    except OSError:
        return ()
    shown = [e.name + ("/" if e.is_dir() else "") for e in entries if e.name != ".reprospec"]
    return tuple(shown[:limit])


@frozen
class DockerContext:
    """What a spec's Dockerfile builds from: itself and the files its COPY and ADD take."""

    folder: Path  # the build context: the Dockerfile's folder
    files: tuple[Path, ...]  # the Dockerfile first (when it could be read), then those
    missing: tuple[str, ...]
    hidden: tuple[str, ...]


def dockerfile_context(spec_dir: Path, dockerfile: str) -> DockerContext:
    """The spec's `environment.dockerfile` (relative to the spec's folder, as the docker
    runner builds it) and the files of its build context (its folder) that its COPY and
    ADD lines name: what `bundle` and `materialize` carry of it. A bundle without them had
    its every docker cell an infra-error (`environment.dockerfile not found`) wherever it
    was rerun, and materialize copied the whole context, its `.env` included. A URL, a
    `--from` stage's file and a `$VAR` are not the context's; a folder is carried whole
    but for its hidden files, which this module's rule never carries, and for what the
    context's `.dockerignore` excludes (dockerignore.py), which docker never sends."""
    path = Path(dockerfile).expanduser()
    path = Path(os.path.abspath(path if path.is_absolute() else spec_dir / path))  # noqa: PTH100
    where = f"(environment.dockerfile, in {path.parent})"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return DockerContext(path.parent, (), (f"{path.name} {where}",), ())
    found: dict[Path, None] = {path: None}
    missing: dict[str, None] = {}
    hidden: dict[str, None] = {}
    context = path.parent
    # What the build never sees (dockerignore.py): never carried, as docker never sends it.
    ignored = read_dockerignore(context)
    for source in _copied(text):
        if "://" in source or source.startswith("git@") or "$" in source:
            continue
        matches = sorted(context.glob(source)) if any(c in source for c in "*?[") else []
        if not matches and (context / source).exists():
            matches = [context / source]
        if not matches:
            missing.setdefault(f"{source} {where}", None)
        for match in matches:
            named = Path(os.path.normpath(match))
            if not named.is_relative_to(context):
                continue  # docker refuses a source outside its context too
            for file in [named] if named.is_file() else sorted(named.rglob("*")):
                rel = file.relative_to(context)
                skip = "__pycache__" in rel.parts or ignored.excludes(rel.as_posix())
                if not file.is_file() or skip:
                    continue  # (the docker runner's own context leaves caches out too)
                if any(part.startswith(".") for part in rel.parts):
                    hidden.setdefault(f"{rel.as_posix()} {where}", None)
                else:
                    found.setdefault(file, None)
    return DockerContext(context, tuple(found), tuple(missing), tuple(hidden))


def _copied(text: str) -> list[str]:
    """The sources of a Dockerfile's COPY and ADD lines (continued lines joined, comments
    and `--from=` copies left out), in the shell form and the JSON one."""
    sources: list[str] = []
    for line in text.replace("\\\n", " ").splitlines():
        words = line.strip().split(None, 1)
        if len(words) < 2 or words[0].upper() not in ("COPY", "ADD"):
            continue
        rest, flags = words[1].strip(), []
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            flags.append(flag)
            rest = rest.strip()
        if any(flag.startswith("--from") for flag in flags):
            continue
        try:  # the JSON form, ["a", "b", "/dest/"]; else words
            parsed = json.loads(rest) if rest.startswith("[") else rest.split()
        except ValueError:
            parsed = []
        sources += [str(word) for word in parsed[:-1]] if isinstance(parsed, list) else []
    return sources
