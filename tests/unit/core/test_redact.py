"""The Redactor's rules, the terminal-safe text, and the report marker, on plain values.

The outputs themselves are checked end to end, with real runs, in test_security.py.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping

import pytest

from reprospec.core.jsontypes import JsonValue
from reprospec.core.logtext import printable
from reprospec.core.redact import (
    MASK,
    Redactor,
    _no_mapping_in,
    command_secrets,
    credential_spans,
    env_names_read,
    holds_secret,
    looks_like_credential,
    looks_secret,
    mask_parts,
    maskable,
    secret_parts,
    secret_values,
    sets_secret,
    unset_env,
)
from reprospec.core.reportspec import MarkerError, find_marked_spec, marker_line
from reprospec.core.results import AttemptResult, CellResult, ChainLink, NotRun, Outcome
from reprospec.report.markup import plain_markdown
from tests.support.secretnames import COUNTS, LOOKALIKES, NAMED_SECRETS, named_secrets


def test_names_that_look_secret() -> None:
    for name in (
        "HF_TOKEN",
        "TORCH_AUTH",
        "PYTORCH_PASSPHRASE",
        "aws_secret_access_key",
        "PGPASSWORD",
        "MYSQL_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "NPM_AUTHTOKEN",
        # A password's short word after another, or glued to a store's name: in clear in
        # every output, where only PASSWORD and PASSWD were known.
        "DB_PASS",
        "PGPASS",
        "MYSQL_PWD",
        "REDIS_PASS",
        "REDIS_PASS_PROD",
        "dbPass",
        "DB_PASS2",
    ):
        assert looks_secret(name), name
    for name in (
        "HOME",
        "PATH",
        "OMP_NUM_THREADS",
        "CUDA_VISIBLE_DEVICES",
        "PWD",
        "OLDPWD",
        "NUM_PASSES",
        "PASSES",
        "BYPASS_CACHE",
        "COMPASS_DIR",
        "PASS_RATE",
        "PGPASSFILE",
    ):
        assert not looks_secret(name), name


def test_what_a_spec_reads_is_masked_unless_public() -> None:
    document: dict[str, JsonValue] = {
        "command": "curl -H 'x: ${{ env.API }}' ${{ env.DATA }} ${{ matrix.x }}",
        "environment": {
            "env": {"TORCH_AUTH": "literal-auth", "SHORT_KEY": "ab", "N": "${{ env.NUM }}"},
            "public_env": ["DATA", "MY_TOKEN"],
        },
        "expect": {"message": "${{ env.MY_TOKEN }}"},
    }
    assert env_names_read(document) == ["API", "DATA", "NUM", "MY_TOKEN"]
    environ = {
        "API": "api-value",
        "DATA": "data-value",
        "NUM": "1",
        "MY_TOKEN": "tok-value",
        "UNREAD_SECRET": "unread-value",
        "HOME": "/home/me",
        "AUTH_ON": "true",
    }
    redactor = Redactor.for_spec(document, environ)
    # Read and not public; secret-looking (public or not, read or not); the spec's own.
    assert set(redactor.values) == {"api-value", "tok-value", "unread-value", "literal-auth"}
    # A credential's shape under a name that says nothing, the engine's or the spec's.
    section = document["environment"]
    assert isinstance(section, dict)
    section["env"] = {"DB": "postgres://me:pw1234@db/x"}
    environ["DATABASE_URL"] = "https://me:hunter22@h/x"
    shaped = Redactor.for_spec(document, environ)
    assert {"postgres://me:pw1234@db/x", "https://me:hunter22@h/x"} < set(shaped.values)
    assert redactor.text("x api-value y data-value z") == f"x {MASK} y data-value z"


@pytest.mark.parametrize("name", sorted(NAMED_SECRETS))
@pytest.mark.parametrize("length", ["short", "long"])
def test_a_variable_whose_name_holds_a_secrets_word_anywhere_is_masked(
    name: str, length: str
) -> None:
    # Judged by the last word alone, these were in clear in every output.
    value = named_secrets(length)[name]
    assert sets_secret(name, value)
    assert holds_secret(name, value)
    document: dict[str, JsonValue] = {"environment": {"env": {name: value, "MAX_TOKENS": "2048"}}}
    redactor = Redactor.for_spec(document, {})
    assert redactor.values == (value,)
    # The report's spec reads it again from the environment; its text and tables mask it.
    spec = f"environment:\n  env:\n    {name}: {value}\n    MAX_TOKENS: '2048'\n"
    masked = redactor.spec_text(spec)
    assert value not in masked
    assert f"{name}: ${{{{ env.{name} }}}}" in masked
    assert "MAX_TOKENS: '2048'" in masked
    link = ChainLink("RuntimeError", f"boom with {value}")
    assert redactor.value(link) == ChainLink("RuntimeError", f"boom with {MASK}")
    table = redactor.value({name: value, "MAX_TOKENS": "2048"})
    assert table == {name: MASK, "MAX_TOKENS": "2048"}


def test_a_count_or_a_limit_is_no_secret_whatever_word_its_name_holds() -> None:
    # `MAX_TOKENS=2048 python train.py`: masked, every report showed `***` for 2048, and its
    # spec read `${{ env.MAX_TOKENS }}`, empty in a reader's shell.
    for name, value in {**COUNTS, **LOOKALIKES}.items():
        assert not sets_secret(name, value), name
        assert not holds_secret(name, value), name
        assert Redactor.for_spec({"environment": {"env": {name: value}}}, {}).values == ()
        assert Redactor.for_spec({}, {name: value}).values == ()  # the engine's own
        assert Redactor().value({name: value}) == {name: value}
    # A count is a number: under a counting name, anything else is still a secret's value.
    for name, value in (
        ("GITHUB_TOKENS", "a1b2c3d4e5f6"),
        ("MAX_TOKENS", "sk-abcdefgh"),
        ("API_KEYS", "1234567890"),  # a list of keys, not a count of them
        ("HF_TOKEN", "123456789"),
        ("TOKENS_API_KEY", "12345678"),
    ):
        assert sets_secret(name, value), name
        assert Redactor().value({name: value}) == {name: MASK}


def test_a_value_too_short_to_be_masked_sets_no_secret_but_a_credential_does() -> None:
    # `API_TOKEN: tok` was kept in the report's spec (too short to mask in a text), while the
    # standalone repro read `API_TOKEN="$API_TOKEN"`, empty in the reader's shell: one rule.
    for name, value in (("API_TOKEN", "tok"), ("AUTH", "1"), ("AUTH_ENABLED", "true")):
        assert not sets_secret(name, value), name
        assert holds_secret(name, value), name  # the engine's own: masked by name
    assert sets_secret("HF_TOKEN", "hf_x1y2")
    assert sets_secret("DB", "postgres://me:pw1234@db/x")  # a credential's shape
    assert not sets_secret("TOKENIZERS_PARALLELISM", "false")
    assert not sets_secret("HF_TOKENIZER", "bert-base-uncased")


def test_a_pass_rate_or_a_compilers_pass_is_no_secret_and_its_number_stays_in_the_report() -> None:
    # `pass` after any word was a password's, so `TEST_PASS_RATE: "0.95"` was a
    # secret, masked by value: every 0.95 of every output read `***`.
    document: dict[str, JsonValue] = {
        "environment": {"env": {"TEST_PASS_RATE": "0.95", "MLIR_PASS_PIPELINE": "cse,dce"}}
    }
    redactor = Redactor.for_spec(document, {"LLVM_PASS": "instcombine", "FIRST_PASS": "warm"})
    line = "accuracy 0.95 reached; pass rate 0.95; ran cse,dce after instcombine (warm)"
    assert redactor.text(line) == line
    assert redactor.value({"TEST_PASS_RATE": "0.95"}) == {"TEST_PASS_RATE": "0.95"}
    # The password's word last, a deployment's or a copy's suffix after it: still secrets.
    for name in ("DB_PASS_PROD", "REDIS_PASS_STAGING", "DB_PASS_2", "DB_PWD_V2", "PGPASS_DEV"):
        assert looks_secret(name), name
    for name in ("DB_PASS_RATE", "PASS_PROD", "LLVM_PASS_PROD", "PGPASS_FILE", "FIRST_PASS_2"):
        assert not looks_secret(name), name


def test_a_secret_names_number_is_masked_wherever_it_appears_a_settings_is_not() -> None:
    # Numbers shorter than 6 characters were masked by their name only, whatever
    # name held them, so a PIN or a numeric password (`DB_PASSWORD=48213`) was in report.md,
    # results.json and the store. A setting's number stays out by its name.
    for value in ("4821", "48213", "0.95", "1e-4", "123456"):
        assert maskable(value), value
        assert sets_secret("DB_PASSWORD", value), value
        given = Redactor.for_spec({"environment": {"env": {"DB_PASS": value}}}, {})
        assert given.text(f"auth failed for {value}.") == f"auth failed for {MASK}.", value
        engine = Redactor.for_spec({}, {"DB_PASSWORD": value})
        assert engine.text(f"password {value} refused") == f"password {MASK} refused", value
        setting = Redactor.for_spec({}, {"TEST_PASS_RATE": value})
        assert setting.text(f"accuracy {value} reached") == f"accuracy {value} reached", value
        assert not sets_secret("TEST_PASS_RATE", value), value
    assert mask_parts("pin 4242, not 424", ("4242",)) == "pin ***, not 424"
    # Too short to be masked in a text (`AUTH=1`): under its name only.
    assert not maskable("424")
    assert Redactor.for_spec({}, {"DB_PASS": "424"}).text("pin 424") == "pin 424"
    assert Redactor().value({"DB_PASS": "424"}) == {"DB_PASS": MASK}


def test_longer_secrets_are_masked_whole() -> None:
    redactor = Redactor(["abcd", "abcdefgh"])
    assert redactor.text("abcdefgh abcd") == f"{MASK} {MASK}"


def test_values_are_masked_inside_frozen_results_and_mappings() -> None:
    redactor = Redactor(["hunter22"])
    link = ChainLink("ValueError", "bad password hunter22")
    assert redactor.value(link) == ChainLink("ValueError", f"bad password {MASK}")
    assert redactor.value(NotRun("ok")) == NotRun("ok")
    env = {"env": {"WANDB_API_KEY": "x", "OMP_NUM_THREADS": "4"}, "cmd": ["a", "hunter22"]}
    assert redactor.value(env) == {
        "env": {"WANDB_API_KEY": MASK, "OMP_NUM_THREADS": "4"},
        "cmd": ["a", MASK],
    }


def test_a_release_number_under_a_secret_looking_name_is_shown() -> None:
    """A package table names `keyring` and `SecretStorage`: their versions are not secrets.
    A value that is not a release number (digits alone, a token) is still masked by name, and
    a known secret's value is masked wherever it is, release-shaped or not."""
    redactor = Redactor(["9.9.9"])
    pip = {"keyring": "25.6.0", "SecretStorage": "3.3.3", "tokenizers": "0.20.1+cu121"}
    assert redactor.value({"pip": pip}) == {"pip": pip}
    env = {"API_KEY": "12345678", "HF_TOKEN": "hf_abc.def", "MY_SECRET": "9.9.9"}
    assert redactor.value(env) == {
        "API_KEY": MASK,
        "HF_TOKEN": MASK,
        "MY_SECRET": MASK,
    }


def test_printable_writes_control_characters_out() -> None:
    assert printable("a\x1b]0;t\x07b\tc\nd") == "a\\x1b]0;t\\x07b\tc\nd"
    assert printable("a\nb\x9bc\u202ed", one_line=True) == "a\\x0ab\\x9bc\\u202ed"
    assert printable("plain [/x] ✅ ü") == "plain [/x] ✅ ü"


def test_a_description_cannot_reach_past_its_end() -> None:
    text = "see:\n```yaml\nreprospec: 1\n```\n<!-- hidden -->\n~~~~\nleft open"
    assert plain_markdown(text) == (
        "see:\n```yaml\nreprospec: 1\n```\n&lt;!-- hidden -->\n~~~~\nleft open\n~~~~"
    )


def test_the_marker_names_one_block() -> None:
    spec = "reprospec: 1\nname: x\n"
    marker = marker_line(spec, 'a "b" <c> & -->.yaml')
    assert "-->" not in marker[:-3]
    assert "<c>" not in marker
    text = f"{marker}\n\n```yaml\nreprospec: 1\nname: other\n```\n\n~~~yaml\n{spec}~~~\n"
    found = find_marked_spec(text)
    assert found is not None
    assert (found.text, found.line_offset, found.path) == (spec, 8, 'a "b" <c> & -->.yaml')
    assert find_marked_spec("```yaml\nreprospec: 1\n```\n") is None
    try:
        find_marked_spec(text.replace("name: x", "name: y"))
    except MarkerError:
        pass
    else:
        raise AssertionError("an edited block must not match its marker")


def test_a_result_walk_skips_only_fields_with_nothing_to_mask() -> None:
    # The walk passes numbers, None, empty tuples (and, with no secret, strings) without
    # a call: what does hold a secret is still masked, and an unchanged result is itself.
    result = AttemptResult(
        attempt=1,
        duration_s=0.5,
        outcome=Outcome("error", exception="ValueError", detail="ValueError: token hunter22"),
        matched=True,
        mismatches=(),
        logs="cells/x/1/",
        started="s",
        finished="f",
        warnings=("saw hunter22",),
    )
    masked = Redactor(["hunter22"]).value(result)
    assert isinstance(masked.outcome, Outcome)
    assert masked.outcome.detail == f"ValueError: token {MASK}"
    assert masked.warnings == (f"saw {MASK}",)
    assert (masked.attempt, masked.duration_s, masked.mismatches) == (1, 0.5, ())
    assert Redactor().value(result) is result
    assert Redactor(["other"]).value(result) is result


@dataclasses.dataclass(frozen=True)
class _Held:
    name: str
    env: Mapping[str, str]


def test_without_a_secret_value_only_a_class_that_can_hold_a_mapping_is_walked() -> None:
    # No secret value: only a mapping's secret-looking key can be masked. An attempt's
    # result holds no mapping anywhere (its fields' types say so): it is passed as it is.
    assert _no_mapping_in(AttemptResult)
    assert not _no_mapping_in(CellResult)
    assert not _no_mapping_in(_Held)
    held = _Held("x", {"API_TOKEN": "abcdefgh", "HOME": "/root"})
    assert Redactor().value(held) == _Held("x", {"API_TOKEN": MASK, "HOME": "/root"})


def test_an_unset_variable_the_spec_reads_is_warned_of_unless_it_gives_a_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RV_UNSET_X", raising=False)
    bare: dict[str, JsonValue] = {"environment": {"env": {"TOKEN": "${{ env.RV_UNSET_X }}"}}}
    (warning,) = unset_env(bare)
    assert "${{ env.RV_UNSET_X }}, not set in this environment" in warning
    # It said "null where it was read" where the child got TOKEN="".
    assert "null, which a text gets as the empty string (TOKEN='' in the child)" in warning
    assert warning.endswith("export it as the spec's author had")
    # A name a masked spec's note gives: its author wrote the value in.
    (written,) = unset_env(bare, ("RV_UNSET_X",))
    assert "the spec it was made from had its value written in" in written
    assert "spec's author had" not in written
    # `or` gives a default: no null was read, and the warning said one was.
    assert unset_env({"command": "echo ${{ env.RV_UNSET_X or 'default' }}"}) == ()
    monkeypatch.setenv("RV_UNSET_X", "1")
    assert unset_env(bare) == ()


def test_a_part_of_a_secret_is_masked_where_text_is_written_down() -> None:
    secrets = ("hf_zzTopSecret999", "TopSecret999-second")
    # A prefix, two secrets' overlapping parts as one, the whole value; five characters alike
    # ("Secre") are the text's own.
    text = "token hf_zzTop; again zzTopSecret999-second; Secre"
    assert secret_parts(text, secrets) == [(6, 14), (22, 43)]
    assert mask_parts(text, secrets) == "token ***; again ***; Secre"
    assert mask_parts("key hf_zzTopSecret999 here", secrets) == "key *** here"
    assert mask_parts("pin 424242, not 4242", ("424242",)) == "pin ***, not 4242"
    # A path or words under a secret-looking name (XAUTHORITY, GIT_AUTHOR_NAME) are masked
    # whole, never by parts: six of a path's characters were in every path of the text.
    assert mask_parts("--data /home/user/data/train.csv", ("/home/user/.Xauthority",)) == (
        "--data /home/user/data/train.csv"
    )
    assert mask_parts("by Ada Lovelace and Ada", ("Ada Lovelace",)) == "by *** and Ada"
    # An AWS secret key's inner `/` is no path: a printed prefix of it is masked (review).
    aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert mask_parts("signing with wJalrXUtnFEMI...", (aws,)) == "signing with ***..."


def test_credentials_are_known_by_their_shape() -> None:
    # Under a name that says nothing (`--auth-header`, curl's -H, DATABASE_URL).
    for value in (
        "Bearer 9f8e7d6c5b4a3f2e1d0c",
        "Basic bWU6cHc=",  # base64 of `me:pw`
        "Authorization: token x",
        "x-api-key: 123",
        "postgres://me:pw1234@db:5432/x",
        "redis://:pw1234@cache:6379/0",
        "mysql://root:123456@localhost/db",  # a password of digits (review)
        "Bearer 550e8400-e29b-41d4-a716-446655440000",
        "jdbc:mysql://me:pw@db/x",
        "https://ghp_" + "b1C" * 12 + "@github.com/me/repo.git",  # a token as the user
        "hf_" + "A1b" * 11,
        "sk-proj-" + "a1B" * 12,
        "ghp_" + "b1C" * 12,
        # A provider's token after a scheme, lowercase and digits only: its `_` is no
        # generated string's, and the scheme's rule kept it whole (review).
        "Bearer ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIA" + "C" * 16,
        "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4fwpM",
    ):
        assert looks_like_credential(value), value
        assert holds_secret("WHATEVER", value), value
    # Settings that look alike, and values that refer to a variable the shell or Hydra
    # expands: each was once taken for a credential, out of the spec (review).
    for value in (
        "basic training",
        "Token embeddings",
        "token classification",
        "bot detection",
        "Basic trainingdata1",
        "docker://python:3.11@sha256:0123456789abcdef",
        "sk-resnet50-imagenet-finetuned-model",
        "${oc.env:U}:${oc.env:P}@db",
        "https://git@github.com/me/repo.git",
        "Bearer x",
        "https://host/db",
        "Accept: json",
        "0.001",
    ):
        assert not looks_like_credential(value), value
    header = 'curl -H "Authorization: Bearer ghp_' + "a1" * 18 + '"'
    assert credential_spans(header) == [(31, 71, "Bearer credential")]
    assert holds_secret("HF_TOKEN", "x")
    assert not holds_secret("LR", "0.1")
    assert secret_values([("DB", "postgres://me:pw1234@db/x")], {}) == (
        "postgres://me:pw1234@db/x",
    )


def test_a_tokenizers_setting_is_no_secret() -> None:
    # TOKENIZERS_PARALLELISM=false is the knob of a worker deadlock: masked, `compare`
    # hid its change (review).
    assert not looks_secret("TOKENIZERS_PARALLELISM")
    assert looks_secret("HF_TOKEN")
    assert looks_secret("TOKENIZER_TOKEN")


def test_a_generated_secrets_printed_beginning_is_masked_a_words_is_not() -> None:
    token, key, password = "hf_QwErTy1234567890AbCdEf", "aB3dE5gH9jK2mN", "correcthorse"
    redactor = Redactor([token, key, password])
    assert redactor.text(f"auth failed for {token[:10]}...") == "auth failed for ***..."
    assert redactor.text(f"key {key[:8]} expired") == "key *** expired"
    # Fewer than SECRET_BEGINNING_CHARS: as likely the text's own word.
    assert redactor.text(f"{token[:7]} and {key[:7]}") == f"{token[:7]} and {key[:7]}"
    # A password of words: its beginning is every such text's, kept.
    assert redactor.text("correcthor is a word here") == "correcthor is a word here"
    assert redactor.text(f"the whole {password}") == "the whole ***"
    # The beginning goes as far as the text agrees with it, then the text's own characters.
    assert redactor.text(f"{token[:12]}XYZ") == "***XYZ"
    # A file's bytes the same.
    assert redactor.data(f"x {token[:9]} y".encode()) == b"x *** y"


def test_a_credentials_beginning_is_its_secrets_not_the_urls_every_url_begins_with() -> None:
    # The beginning of a URL holding a password is `https://`: every other URL of a log was
    # masked to `***pytorch.org/docs` by it, hiding useful text and none of the secret.
    url = "https://me:S3cretPw9xyz@pypi.example.com/simple"
    header = "Authorization: Bearer abcDEF123456789xyz"
    redactor = Redactor([url, header])
    assert redactor.text("see https://pytorch.org/docs") == "see https://pytorch.org/docs"
    assert redactor.text("Authorization: Bearer other") == "Authorization: Bearer other"
    assert redactor.text(f"index {url} failed") == "index *** failed"
    # The secret's own beginning printed alone is still masked.
    assert redactor.text("https://me:S3cretPw9 timed out") == "https://me:*** timed out"
    assert redactor.text("token abcDEF1234 rejected") == "token *** rejected"


def test_a_secret_in_a_shell_line_is_its_variables_expansion_quoted_for_where_it_stands() -> None:
    # A bare `***` in a runnable line is a glob: `--token ***` passed the folder's file
    # names. Each secret of a known variable is read from it, in every quote.
    token = "hf_" + "Ab1" * 12
    redactor = Redactor([token], names={token: "HF_TOKEN"})
    line = f"""run --token {token} 'a {token}' "b {token}c" --other"""
    shown, names = redactor.shell_text(line)
    assert shown == """run --token "$HF_TOKEN" 'a '"$HF_TOKEN"'' "b ${HF_TOKEN}c" --other"""
    assert names == ("HF_TOKEN",)
    assert Redactor([token]).shell_text(f"run {token}") == ("run ***", ())
    # What sh makes of it: the words the line had.
    assert shlex.split(shown.replace("${HF_TOKEN}", token).replace("$HF_TOKEN", token)) == [
        "run", "--token", token, f"a {token}", f"b {token}c", "--other"
    ]  # fmt: skip


def test_a_secret_of_a_set_in_a_command_line_is_the_expression_that_reads_it_again() -> None:
    # `--set environment.env.MY_API_TOKEN=***` pasted was `the value is not valid YAML`,
    # exit 2.
    redactor = Redactor(["zzsecret999"], names={"zzsecret999": "MY_API_TOKEN"})
    line = "reprospec run s.yaml --set environment.env.MY_API_TOKEN=zzsecret999 -m a=zzsecret999"
    assert redactor.command_line(line) == (
        "reprospec run s.yaml --set 'environment.env.MY_API_TOKEN=${{ env.MY_API_TOKEN }}' "
        "-m 'a=***'"
    )
    assert redactor.command_line("reprospec run --set=x.y=zzsecret999 s.yaml") == (
        "reprospec run '--set=x.y=${{ env.MY_API_TOKEN }}' s.yaml"
    )
    assert redactor.command_line("reprospec run s.yaml") == "reprospec run s.yaml"
    # `--se` is `--set` as argparse took it: it was `***`; `--sx` begins no option.
    assert redactor.command_line("reprospec run s.yaml --se x.y=zzsecret999") == (
        "reprospec run s.yaml --se 'x.y=${{ env.MY_API_TOKEN }}'"
    )
    assert redactor.command_line("reprospec run --se=x.y=zzsecret999 s.yaml") == (
        "reprospec run '--se=x.y=${{ env.MY_API_TOKEN }}' s.yaml"
    )
    assert redactor.command_line("reprospec run s.yaml --sx x.y=zzsecret999") == (
        "reprospec run s.yaml --sx 'x.y=***'"
    )


def test_an_assignment_reads_its_secret_from_its_variable_only_where_it_says_more() -> None:
    # One rule for the standalone repro's variables and run.sh's `docker run -e`: run.sh
    # passed `MY_TOKEN: 'Bearer ${{ env.MY_TOKEN }}'` by name, its `Bearer ` lost.
    token = "hf_" + "Zq9" * 12
    redactor = Redactor([token], names={token: "MY_TOKEN"})
    assert redactor.reading_assignment("MY_TOKEN", f"Bearer {token}") == (
        """MY_TOKEN='Bearer '"$MY_TOKEN"''""",
        ("MY_TOKEN",),
    )
    assert redactor.reading_assignment("MY_TOK", token) == ('MY_TOK="$MY_TOKEN"', ("MY_TOKEN",))
    # Its own whole value is passed by name; a secret of no variable is never written.
    assert redactor.reading_assignment("MY_TOKEN", token) is None
    assert Redactor([token]).reading_assignment("MY_TOK", token) is None


def test_a_secret_written_whole_in_a_flow_mapping_is_read_again_quoted() -> None:
    # `{env: {DB_PASSWORD: ${{ env.DB_PASSWORD }}}}` was invalid YAML: the bundle's spec
    # did not load. A block scalar, a quoted one, or one inside a longer plain
    # scalar is written as it was.
    secret = "hunter2-literal-pw"
    redactor = Redactor({secret: "DB_PASSWORD"}, names={secret: "DB_PASSWORD"})
    read = "${{ env.DB_PASSWORD }}"
    assert (
        redactor.spec_text(f"env: {{DB_PASSWORD: {secret}}}") == f'env: {{DB_PASSWORD: "{read}"}}'
    )
    assert redactor.spec_text(f"args: [a, {secret}, b]") == f'args: [a, "{read}", b]'
    assert redactor.spec_text(f"  DB_PASSWORD: {secret}") == f"  DB_PASSWORD: {read}"
    assert redactor.spec_text(f'env: {{P: "{secret}"}}') == f'env: {{P: "{read}"}}'


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        (
            "flow, inside a longer plain value",
            "env: {URL: u:hunter2-pw-x@h/db, PW: hunter2-pw-x}\n",
        ),
        ("flow, quoted", "env: {URL: \"u:hunter2-pw-x@h\", PW: 'hunter2-pw-x'}\n"),
        ("flow sequence", "command: [run, --pw, hunter2-pw-x, --url=u:hunter2-pw-x@h]\n"),
        ("flow, plain on two lines", "a: {b: u:hunter2-pw-x@h and\n     more words, c: 1}\n"),
        ("block, plain, commented", "env:\n  URL: u:hunter2-pw-x@h  # hunter2-pw-x\n"),
        ("block, plain on two lines", "a: one two\n  hunter2-pw-x three\n"),
        ("literal block", "command: |\n  echo start\n  run --pw hunter2-pw-x --x\n"),
        ("folded across lines", "command: >\n  run --pw hunter2-\n  pw-x\n"),
        ("anchor, alias, tag", "a: &pw hunter2-pw-x\nb: *pw\nc: !!str hunter2-pw-x-tail\n"),
        ("escaped in double quotes", 'a: "hunter\\x32-pw-x"\n'),
    ],
)
def test_a_spec_masked_loads_to_its_values_with_the_secret_read_again(
    shape: str, text: str
) -> None:
    """spec_text writes `${{ env.PW }}` for a secret wherever it is: every shape still
    loads, to the values the spec had with the secret's place reading PW. Inside a longer
    plain value of a flow collection it opened a mapping there (invalid YAML), and
    one written escaped or folded across lines was not seen at all."""
    import yaml

    def read_again(value: object) -> object:
        if isinstance(value, str):
            return value.replace("hunter2-pw-x", "${{ env.PW }}")
        if isinstance(value, dict):
            return {key: read_again(item) for key, item in value.items()}
        if isinstance(value, list):
            return [read_again(item) for item in value]
        return value

    masked = Redactor(["hunter2-pw-x"], names={"hunter2-pw-x": "PW"}).spec_text(text)
    assert "hunter2-pw-x" not in masked, shape
    assert yaml.safe_load(masked) == read_again(yaml.safe_load(text)), (shape, masked)


@pytest.mark.parametrize(
    ("command", "found"),
    [
        # A hand-written spec's own: a leading assignment, an option's value in its word or
        # the next, after `env` too; named as capture names the variable it reads one from.
        (
            "API_TOKEN=abcd1234xyzq python x.py --password literalpw77 --api-key=s3cr3tlit",
            [("API_TOKEN", "abcd1234xyzq"), ("PASSWORD", "literalpw77"), ("API_KEY", "s3cr3tlit")],
        ),
        (["env", "DB_PASSWORD=48213", "python", "x.py"], [("DB_PASSWORD", "48213")]),
        # Not a secret's: a count, a path, an expression, a short or yes/no value, a flag
        # with no value, an assignment after the program (its argument, not its variable).
        (
            "MAX_TOKENS=2048 python x.py --max-tokens 4096 --token-file /run/t --api-key tok "
            "--password ${{ env.PW }} --auth none --token --steps 3 python x.py A_TOKEN=abcd9876",
            [],
        ),
        ("python x.py --password 'unclosed", []),
        # A captured spec's command reads its secret from the shell: no value of its own.
        ('python x.py --api-key "$API_KEY" --token=$(cat tok) db.password=${oc.env:PW}', []),
        # A credential by its shape under an option that says nothing, or none, named as
        # capture names it: it was in every report, results.json and bundle of the spec.
        (
            "python x.py --db postgres://alice:hunter2pw@db/x --mirror=https://u:pw12@h/s",
            [
                ("DB_SECRET", "postgres://alice:hunter2pw@db/x"),
                ("MIRROR_SECRET", "https://u:pw12@h/s"),
            ],
        ),
        (
            ["curl", "-H", "Authorization: Bearer abcDEF123456789xyz", "https://u:pw12@h/x"],
            [
                ("AUTHORIZATION", "Authorization: Bearer abcDEF123456789xyz"),
                ("SECRET", "https://u:pw12@h/x"),
            ],
        ),
        ("python x.py --db-url https://h/x --image docker://python:3.11@sha256:abcdef12", []),
    ],
)
def test_the_secrets_a_command_writes_in_itself(
    command: str | list[str], found: list[tuple[str, str]]
) -> None:
    assert command_secrets(command) == found


def test_a_secret_the_command_writes_in_is_masked_and_its_spec_reads_it_again() -> None:
    # Only environment.env's were: `--api-key=...` in a hand-written command was in the
    # report's spec, its standalone repro and results.json, and a bundle's README and tree.
    document: dict[str, JsonValue] = {
        "command": "API_TOKEN=abcd1234xyzq python x.py --api-key=s3cr3tlit --steps 3"
    }
    redactor = Redactor.for_spec(document, environ={})
    assert redactor.text("python x.py --api-key=s3cr3tlit") == "python x.py --api-key=***"
    spec = "reprospec: 1\ncommand: API_TOKEN=abcd1234xyzq python x.py --api-key=s3cr3tlit\n"
    assert redactor.spec_text(spec).splitlines()[1] == (
        "command: API_TOKEN=${{ env.API_TOKEN }} python x.py --api-key=${{ env.API_KEY }}"
    )


def test_a_spec_masked_again_keeps_one_note_with_every_name() -> None:
    # A bundle's spec (or a run an older reprospec stored) already ends with the note; a
    # secret found in it now added a second note, which went unread: the report said to
    # set API_KEY alone where its spec read DB_SECRET too, and bundle --verify left it unset.
    earlier = (
        "reprospec: 1\ncommand: python x.py --api-key=${{ env.API_KEY }} --db postgres://u:pw12@h/x\n"
        "# reprospec: secrets masked; to rerun this spec, set in your environment: API_KEY\n"
    )
    redactor = Redactor.for_spec({"command": "python x.py --db postgres://u:pw12@h/x"}, environ={})
    masked = redactor.spec_text(earlier)
    assert masked.count("# reprospec: secrets masked") == 1
    assert Redactor.masked_names(masked) == ("API_KEY", "DB_SECRET")
    doubled = (
        earlier + "# reprospec: secrets masked; to rerun this spec, set in your environment: B\n"
    )
    assert Redactor.masked_names(doubled) == ("API_KEY", "B")


def test_a_redacted_command_line_keeps_a_word_of_bytes_not_utf8() -> None:
    # shlex.split read `$'/tmp/b\xfe.tar.gz'` (shell_join's) as `$` and a quoted word:
    # the line came back `'$/tmp/b\xfe.tar.gz'`, another file.
    redactor = Redactor(["zzsecret999"], names={"zzsecret999": "MY_API_TOKEN"})
    line = "reprospec run $'/tmp/b\\xfe.tar.gz' --set environment.env.MY_API_TOKEN=zzsecret999"
    assert redactor.command_line(line) == (
        "reprospec run $'/tmp/b\\xfe.tar.gz' "
        "--set 'environment.env.MY_API_TOKEN=${{ env.MY_API_TOKEN }}'"
    )
