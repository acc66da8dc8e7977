"""carry.py's rule for a carried file's secrets: which keys' literals are masked, and which
are left as they are because masking them would break the rerun the file is carried for."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.redact import Redactor
from reprospec.export.carry import KeyedSecret, carried_bytes, is_hidden, mask_keyed_secrets


@pytest.mark.parametrize(
    "line",
    [
        "wandb_api_key: 3f9c2a7d81e64b0fa5c3d2e1b0a9f8e7d6c5b4a3",
        "password: hunter22",
        '  db.password: "two words"',
        "clientSecret = abcd-efgh",
        "hf_token: hf_abcdefghijklmnopqrstuvwxyz12",
        '{"github": "ghp_Abcdefghijklmnopqrstuvwxyz0123456789"}',
        "export API_KEY=sk-live-abcdef123456",
    ],
)
def test_a_secret_looking_key_with_a_literal_is_masked(line: str) -> None:
    masked, keys = mask_keyed_secrets(line + "\n")
    assert "***" in masked
    assert len(keys) == 1


@pytest.mark.parametrize(
    "line",
    [
        "tokenizer: bert-base-uncased",
        "max_tokens: 2048",
        'eos_token: "</s>"',
        'bos_token: "<|endoftext|>"',
        "password_file: /run/secrets/pw",
        "token_env: HF_TOKEN",
        "api_key: ${WANDB_KEY}",
        "api_key: <your key here>",
        "sort_key: name",
        "key_dim: 64",
        "author: Ada Lovelace",
        "auth: none",
        "keyring: 25.6.0",
        # (review) a layer's name, a sample's, a duration under a token's key:
        "key: layer4.1.conv2",
        '"__key__": "sample000123"',
        "access_token_ttl: 3600s",
    ],
)
def test_a_config_value_that_is_no_secret_is_carried_as_it_is(line: str) -> None:
    assert mask_keyed_secrets(line + "\n") == (line + "\n", ())


def test_python_source_masks_quoted_literals_only() -> None:
    source = 'login(api_key="abc123xyz")\ntoken = settings.token\n'
    assert mask_keyed_secrets(source, code=True) == (
        'login(api_key="***")\ntoken = settings.token\n',
        (KeyedSecret(1, "api_key"),),
    )


def test_a_carried_file_says_what_was_masked(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("lr: 0.1\nnote: fs_live_9f8e7d6c5b\nwandb_api_key: 3f9c2a7d81e64b0f\n")
    carried = carried_bytes(path, Redactor(["fs_live_9f8e7d6c5b"]))
    assert carried.data == b"lr: 0.1\nnote: ***\nwandb_api_key: ***\n"
    assert carried.warning("tree/config.yaml") == (
        "tree/config.yaml held a secret value of this run and a literal secret under "
        "wandb_api_key (line 3), written as *** in the copy: whoever reruns it puts their own "
        "value back"
    )
    plain = tmp_path / "job.py"
    plain.write_text("print('lr')\n")
    assert carried_bytes(plain, Redactor(["fs_live_9f8e7d6c5b"])).warning("tree/job.py") is None


HIDDEN = [".env", ".git/config", "conf/.ssh/id", "../.x/a.py"]
SHOWN = ["secrets/creds.json", "../raises.py", "a.b/c"]


@pytest.mark.parametrize(
    ("rel", "hidden"), [(rel, True) for rel in HIDDEN] + [(rel, False) for rel in SHOWN]
)
def test_hidden_is_a_dot_file_or_under_a_dot_folder(rel: str, hidden: bool) -> None:
    assert is_hidden(rel) is hidden


def test_a_plain_value_the_spec_reads_is_kept_in_a_carried_file(tmp_path: Path) -> None:
    # `${{ env.STEPS }}` = 1000 is masked in a report, but in a carried program it made
    # `range(***)`, a SyntaxError the rerun died of (review); a secret stays masked.
    program = tmp_path / "app.py"
    program.write_text("for i in range(1000):\n    pass\nKEY = 's3cr3t-value'\n")
    redactor = Redactor(["1000", "s3cr3t-value"], {"1000": "STEPS", "s3cr3t-value": "API_KEY"})
    carried = carried_bytes(program, redactor)
    assert carried.data == b"for i in range(1000):\n    pass\nKEY = '***'\n"


def test_a_run_secret_of_the_same_shape_leaves_no_part_of_the_files_own(tmp_path: Path) -> None:
    # The run's PIP_INDEX_URL holds a URL credential; the carried pip.conf another. Masking
    # the run's first left `index-url = ***XYZ77@pypi.corp/simple` (its printed beginning,
    # `https://bob:pipsecret`, matched), which the key rule took for a value already
    # masked: the rest of the file's own password was carried.
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://bob:pipsecretXYZ77@pypi.corp/simple\n")
    redactor = Redactor(["https://bob:pipsecret99@pypi.corp/simple"])
    carried = carried_bytes(conf, redactor)
    assert carried.data == b"[global]\nindex-url = ***\n"
    assert carried.keys == (KeyedSecret(2, "index-url"),)


@pytest.mark.parametrize(
    ("text", "code", "carried", "kind"),
    [
        # No key names these: a program's positional literal, a script's header and option.
        ('login("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456")\n', True, 'login("***")\n', "hf_... token"),
        (
            'curl -H "Authorization: Bearer abcDEF123456789xyz" https://x\n',
            False,
            'curl -H "Authorization: Bearer ***" https://x\n',
            "Bearer credential",
        ),
        (
            'engine = create_engine("postgres://me:pw12xyz@db/x")\n',
            True,
            'engine = create_engine("postgres://me:***@db/x")\n',
            "URL password",
        ),
    ],
)
def test_a_credential_by_its_shape_under_no_key_is_masked(
    text: str, code: bool, carried: str, kind: str
) -> None:
    assert mask_keyed_secrets(text, code=code) == (carried, (KeyedSecret(1, kind),))


@pytest.mark.parametrize(
    "text",
    [
        'url = f"{scheme}://{user}:{password}@{host}/db"\n',
        'URL = "%s://%s:%s@%s" % parts\n',
        "FROM docker://python:3.11@sha256:0123abcd\n",
        "Token classification with a basic training loop\n",
        'model = "sk-learn-classifier"\n',
    ],
)
def test_a_text_shaped_like_no_credential_is_carried_as_it_is(text: str) -> None:
    assert mask_keyed_secrets(text, code=True) == (text, ())


@pytest.mark.parametrize(
    ("text", "carried", "keys"),
    [
        (
            "machine example.com login me password Hunter2Secret\nother line\n",
            "machine example.com login me password ***\nother line\n",
            (KeyedSecret(1, "netrc password"),),
        ),
        (
            "machine a.b\n  login me\n  password s3cr3t\n  account acct9\n"
            "default login x password y\n",
            "machine a.b\n  login me\n  password ***\n  account ***\n"
            "default login x password ***\n",
            (
                KeyedSecret(3, "netrc password"),
                KeyedSecret(4, "netrc account"),
                KeyedSecret(5, "netrc password"),
            ),
        ),
    ],
)
def test_a_netrc_entrys_password_is_masked(
    text: str, carried: str, keys: tuple[KeyedSecret, ...]
) -> None:
    # Its tokens have no `:` or `=` between them: a carried netrc-style file kept its
    # password verbatim where `password: X` was masked.
    assert mask_keyed_secrets(text) == (carried, keys)


@pytest.mark.parametrize(
    "text",
    [
        "the password is easy\nmachine learning password tips\n",
        "Set the password with --password after login.\n",
    ],
)
def test_prose_about_a_password_is_no_netrc_entry(text: str) -> None:
    assert mask_keyed_secrets(text) == (text, ())
