"""The settings a command line carries become matrix axes, and presets fit what programs print."""

from __future__ import annotations

import shlex

import pytest

from reprospec.capture.optionarity import MANY, Arity, ParserOptions
from reprospec.capture.toggles import kept_note, propose, typed
from reprospec.core import expr
from reprospec.core.inputs import Marker
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.presets import PRESETS, UnknownPreset, detect, expand, preset
from tests.support.secretnames import COUNTS, LOOKALIKES, named_secrets


def render(command: str, matrix: dict[str, JsonValue]) -> str:
    """The command as the engine renders it for a cell (the real interpolation)."""
    rendered = expr.interpolate(command, {"matrix": dict(matrix)})
    assert isinstance(rendered, str)
    return " ".join(rendered.split())


def test_argparse_flags_become_axes_and_the_command_reads_them_back() -> None:
    argv = ["python", "-u", "train.py", "--workers", "2", "--pin-memory", "--lr=1e-4", "data/"]
    proposal = propose(argv)
    axes = {t.axis: t.value for t in proposal.toggles}
    assert axes == {"workers": 2, "pin_memory": True, "lr": "1e-4"}
    assert (
        render(proposal.command, axes)
        == "python -u train.py --workers 2 --pin-memory --lr=1e-4 data/"
    )
    widened = {**axes, "workers": 0, "pin_memory": False}
    assert render(proposal.command, widened) == "python -u train.py --workers 0 --lr=1e-4 data/"
    suggested = {t.axis: t.suggestion.value for t in proposal.toggles if t.suggestion}
    assert suggested == {"workers": 0, "pin_memory": False}


def test_hydra_overrides_become_axes_named_by_their_last_key() -> None:
    argv = [
        "CUDA_VISIBLE_DEVICES=0",
        "python",
        "runners/train.py",
        "domain=recognition",
        "data.num_workers=2",
        "+trainer.precision=16-mixed",
        "~logger",
        "model.name=a b",
    ]
    proposal = propose(argv)
    assert proposal.hydra
    assert proposal.env == (("CUDA_VISIBLE_DEVICES", "0"),)
    axes = {t.axis: t.value for t in proposal.toggles}
    assert axes == {
        "domain": "recognition",
        "num_workers": 2,
        "precision": "16-mixed",
        "drop_logger": True,
        "name": "a b",
    }
    assert proposal.command.startswith("python runners/train.py domain=${{ matrix.domain }}")
    rendered = expr.interpolate(proposal.command, {"matrix": axes})
    assert rendered == (
        "python runners/train.py domain=recognition data.num_workers=2 "
        "+trainer.precision=16-mixed ~logger model.name='a b'"
    )
    precision = next(t for t in proposal.toggles if t.axis == "precision")
    assert precision.suggestion is not None
    assert precision.suggestion.value == "32"


def test_a_switch_named_like_a_count_gets_no_count_alternative() -> None:
    proposal = propose(["python", "a.py", "--crash-if-pinned-workers", "--workers", "2"])
    suggested = {t.axis: t.suggestion for t in proposal.toggles}
    assert suggested["crash_if_pinned_workers"] is None
    assert suggested["workers"] is not None


def test_colliding_axis_names_keep_their_whole_key() -> None:
    proposal = propose(["python", "a.py", "model.dropout=0.1", "head.dropout=0.2"])
    assert [t.axis for t in proposal.toggles] == ["dropout", "head_dropout"]


def test_values_keep_their_text() -> None:
    assert typed("2") == 2
    assert typed("0.5") == 0.5
    assert typed("true") is True
    assert typed("1e-4") == "1e-4"
    assert typed("True") == "True"
    assert typed("007") == "007"


def test_a_value_with_a_quote_stays_literal() -> None:
    proposal = propose(["python", "a.py", "--name", "it's", "--n", "3"])
    assert [t.axis for t in proposal.toggles] == ["n"]
    assert "it" in proposal.command
    assert "${{ matrix.n }}" in proposal.command


@pytest.mark.parametrize(
    ("line", "axes", "command"),
    [
        # argparse's nargs='+': the numbers an option is followed by are its one value.
        (
            "python t.py --layers 64 128 256 --lr 0.1",
            {"layers": "64 128 256", "lr": 0.1},
            "python t.py --layers ${{ matrix.layers }} --lr ${{ matrix.lr }}",
        ),
        (
            "python t.py --bias -1 -0.5 data.csv",
            {"bias": "-1 -0.5"},
            "python t.py --bias ${{ matrix.bias }} data.csv",
        ),
        (
            "python t.py -s 0 1 2 +trainer.seed=3",
            {"s": "0 1 2", "seed": 3},
            "python t.py -s ${{ matrix.s }} +trainer.seed=${{ matrix.seed }}",
        ),
        # After a decimal, a whole number is the program's (an epoch count), where
        # it went into the axis (`lr: [0.1 5]`), and widening it ran argparse's usage error.
        (
            "python t.py --lr 0.1 5",
            {"lr": 0.1},
            "python t.py --lr ${{ matrix.lr }} 5",
        ),
        (
            "python t.py --lrs 0.1 0.01 5",
            {"lrs": "0.1 0.01"},
            "python t.py --lrs ${{ matrix.lrs }} 5",
        ),
        # Several numbers that end the command: the option's all (`nargs='+'`), or some
        # and a positional epoch count; kept as written (`--seeds 1 2 100` was
        # `seeds: [1 2]`, `--gpus 0 1` `gpus: 0`, values a nargs='+' program never had;
        # `--batch-size 32 5` was `[32 5]`, where argparse read 32 and epochs 5).
        ("python t.py --batch-size 32 5", {}, "python t.py --batch-size 32 5"),
        ("python t.py --epochs 5 0.1", {}, "python t.py --epochs 5 0.1"),
        ("python t.py --seeds 1 2 100", {}, "python t.py --seeds 1 2 100"),
        ("python t.py --gpus 0 1", {}, "python t.py --gpus 0 1"),
        ("python t.py --lr 0.1 0.01", {}, "python t.py --lr 0.1 0.01"),
        # A word of another shape after the value is the program's own argument.
        (
            "python t.py --lr 0.1 data.csv",
            {"lr": 0.1},
            "python t.py --lr ${{ matrix.lr }} data.csv",
        ),
        (
            "python main.py -a resnet18 /data/imagenet",
            {"a": "resnet18"},
            "python main.py -a ${{ matrix.a }} /data/imagenet",
        ),
        (
            "python t.py --model resnet 5",
            {"model": "resnet"},
            "python t.py --model ${{ matrix.model }} 5",
        ),
        # A Hydra override after it is a setting of its own.
        (
            "python t.py --config-name c.yaml db.port=5",
            {"config_name": "c.yaml", "port": 5},
            "python t.py --config-name ${{ matrix.config_name }} db.port=${{ matrix.port }}",
        ),
        # Words alike that are no numbers: the option's or the program's, kept as written.
        (
            "python t.py --files a.csv b.csv c.csv --lr 0.1",
            {"lr": 0.1},
            "python t.py --files a.csv b.csv c.csv --lr ${{ matrix.lr }}",
        ),
        ("python t.py --tags x y", {}, "python t.py --tags x y"),
        (
            "python t.py --config c.yaml data/train.csv",
            {},
            "python t.py --config c.yaml data/train.csv",
        ),
    ],
)
def test_an_option_followed_by_several_values_is_one_axis_or_kept_as_written(
    line: str, axes: dict[str, JsonValue], command: str
) -> None:
    # `--layers 64 128 256` was `layers: [64]` read back before `128 256`: widened to 32,
    # it ran `--layers 32 128 256`.
    proposal = propose(line.split())
    assert {t.axis: t.value for t in proposal.toggles} == axes
    assert proposal.command == command
    assert render(command, axes) == line


@pytest.mark.parametrize(
    ("line", "arities", "axes", "command"),
    [
        # The script's parser says --batch-size takes one value: the 5 is its own, even
        # where an option follows (by the words alone, `[32 5]`).
        (
            "python t.py --batch-size 32 5 --lr 0.1",
            {"--batch-size": 1},
            {"batch_size": 32, "lr": 0.1},
            "python t.py --batch-size ${{ matrix.batch_size }} 5 --lr ${{ matrix.lr }}",
        ),
        # nargs='+': every number, the last too.
        (
            "python t.py --layers 64 128 256",
            {"--layers": MANY},
            {"layers": "64 128 256"},
            "python t.py --layers ${{ matrix.layers }}",
        ),
        # nargs=2: two of three.
        (
            "python t.py --size 224 224 3",
            {"--size": 2},
            {"size": "224 224"},
            "python t.py --size ${{ matrix.size }} 3",
        ),
        # One value of another kind: the word after it is the program's.
        (
            "python t.py --config c.yaml data.csv",
            {"--config": 1},
            {"config": "c.yaml"},
            "python t.py --config ${{ matrix.config }} data.csv",
        ),
        # Argparse reads a unique prefix as its option (allow_abbrev): --batch is
        # --batch-size, of one value, where the words made it the axis `[32 5]`.
        (
            "python t.py --batch 32 5 --lr 0.1",
            {"--batch-size": 1, "--lr": 1},
            {"batch": 32, "lr": 0.1},
            "python t.py --batch ${{ matrix.batch }} 5 --lr ${{ matrix.lr }}",
        ),
        # A switch (store_true, count, ...) takes no value: the 5 after it is the
        # program's own, where it was the axis `amp: [5]`; a short one is kept as written.
        (
            "python t.py --amp 5",
            {"--amp": 0},
            {"amp": True},
            "python t.py ${{ matrix.amp and '--amp' or '' }} 5",
        ),
        (
            "python t.py -v 5 --lr 0.1",
            {"-v": 0, "--lr": 1},
            {"lr": 0.1},
            "python t.py -v 5 --lr ${{ matrix.lr }}",
        ),
    ],
)
def test_an_option_takes_the_values_its_programs_parser_says(
    line: str, arities: dict[str, Arity], axes: dict[str, JsonValue], command: str
) -> None:
    proposal = propose(line.split(), ParserOptions(arities))
    assert {t.axis: t.value for t in proposal.toggles} == axes
    assert proposal.command == command
    assert render(command, axes) == line


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (ParserOptions({"--batch-size": 1}, abbreviations=False), "allow_abbrev=False"),
        (ParserOptions({"--batch-size": 1, "--batch-norm": 0}), "two options begin so"),
        (ParserOptions({"--batch-size": 1}, frozenset({"--batch-norm"})), "one unknown"),
    ],
)
def test_a_prefix_argparse_would_not_read_as_the_option_is_read_by_the_words(
    options: ParserOptions, why: str
) -> None:
    # Where argparse refuses the prefix (ambiguous, or abbreviations off), the parser's
    # arity is not the prefix's: the words' rule keeps `--batch 32 5` as written.
    proposal = propose(["python", "t.py", "--batch", "32", "5"], options)
    assert proposal.toggles == (), why
    assert proposal.kept == ("--batch 32 5",), why


def test_several_numbers_that_end_the_command_are_kept_as_written_and_said_so() -> None:
    # By the words alone, `--layers 64 128 256` of an imported nargs='+' parser
    # was `layers: [64 128]` with 256 left in the command (widened: `--layers 32 256`).
    proposal = propose(["python", "net.py", "--layers", "64", "128", "256"])
    assert proposal.toggles == ()
    assert proposal.command == "python net.py --layers 64 128 256"
    assert proposal.kept == ("--layers 64 128 256",)


def test_an_option_of_several_numbers_widens_as_its_words() -> None:
    proposal = propose(["python", "t.py", "--layers", "64", "128", "256", "--lr", "0.1"])
    layers = proposal.toggles[0]
    assert (layers.kind, layers.text) == ("values", "--layers 64 128 256")
    rendered = expr.interpolate(proposal.command, {"matrix": {"layers": "32 64", "lr": 0.1}})
    assert isinstance(rendered, str)
    assert shlex.split(rendered) == ["python", "t.py", "--layers", "32", "64", "--lr", "0.1"]
    assert proposal.kept == ()


def test_an_option_kept_as_written_is_said_so_with_the_words_it_may_take() -> None:
    proposal = propose(["python", "t.py", "--files", "a.csv", "b.csv", "--lr", "0.1", "extra.csv"])
    assert proposal.kept == ("--files a.csv b.csv",)
    assert kept_note(proposal.kept[0]).startswith("--files a.csv b.csv kept as written, no axis")


LIGHTNING = (
    "Epoch 0:  50%|#####     | 5/10 [00:01<00:01]\rEpoch 0: 100%|##########| 10/10 [00:02<00:00]\n"
    "Validation DataLoader 0:  60%|######    | 6/10 [00:00<00:00]\r"
    "Validation DataLoader 0:  70%|#######   | 7/10 [00:00<00:00]\n"
)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (LIGHTNING, ("lightning",)),
        ("train:  10%|#  | 1/10\r train:  20%|## | 2/10\n", ("tqdm",)),
        (
            "***** Running training *****\n 10%|#  | 1/10 [00:00<00:01]\n 20%|## | 2/10\n",
            ("hf-trainer",),
        ),
        ("[ RUN      ] Ops.Add\n[       OK ] Ops.Add (0 ms)\n[ RUN      ] Ops.Mul\n", ("gtest",)),
        ("tests/test_a.py::test_x PASSED [ 50%]\ntests/test_a.py::test_y \n", ("pytest",)),
        ("epoch 1\nstep 1 loss 2.3\nstep 2 loss 2.1\n", ("steps",)),
        ("hello\nworld\nstep was taken once\n", ()),
    ],
)
def test_presets_are_detected_from_what_programs_print(
    output: str, expected: tuple[str, ...]
) -> None:
    assert detect(output) == expected


def test_presets_expand_in_order_and_an_unknown_one_is_refused() -> None:
    own = Marker(r"^x (?P<step>\d+)")
    assert expand([own, "gtest"]) == (own, *PRESETS["gtest"].markers)
    with pytest.raises(UnknownPreset):
        preset("lightnin")


def test_a_secret_looking_option_is_read_from_the_environment_never_an_axis() -> None:
    # As an axis the key was written into the spec, the run folder's names, every report.
    proposal = propose(
        ["python", "up.py", "--api-key", "sk-live-AAAA", "--password=it's 2", "--bucket", "prod"]
    )
    assert proposal.command == (
        'python up.py --api-key "$API_KEY" --password="$PASSWORD" --bucket ${{ matrix.bucket }}'
    )
    assert proposal.env == (("API_KEY", "sk-live-AAAA"), ("PASSWORD", "it's 2"))
    assert [t.axis for t in proposal.toggles] == ["bucket"]
    hydra = propose(["python", "t.py", "db.password=s3cr3t", "lr=0.1"])
    assert hydra.command == 'python t.py db.password="$DB_PASSWORD" lr=${{ matrix.lr }}'
    assert hydra.env == (("DB_PASSWORD", "s3cr3t"),)


def test_a_shells_c_script_is_one_word_of_shell_and_a_scripts_own_settings_are_axes() -> None:
    # `-c` made the whole script an axis: `sh -c '${{ matrix.c }}'`.
    script = "cd sub && cat rows.csv | python parse.py --strict"
    proposal = propose(["sh", "-c", script])
    assert proposal.command == f"sh -c '{script}'"
    assert proposal.toggles == ()
    run = propose(["bash", "-o", "pipefail", "run.sh", "--lr", "0.1"])
    assert run.command == "bash -o pipefail run.sh --lr ${{ matrix.lr }}"
    assert [t.axis for t in run.toggles] == ["lr"]


def test_only_an_option_whose_last_word_names_a_secret_is_one() -> None:
    # A substring match hid `--max-tokens 512` from the spec, which then never reran.
    plain = propose(["python", "t.py", "--max-tokens", "512", "--key-frames", "3"])
    assert plain.env == ()
    assert [t.axis for t in plain.toggles] == ["max_tokens", "key_frames"]
    assert propose(["python", "t.py", "--token-file", "t.txt", "--hotkey", "c"]).env == ()
    # A count, a path, a word that holds `pass`: settings (an axis each).
    for name in (
        "token-limit", "password-file", "num-passes", "pass", "bypass", "pgpass-file",
        "first-pass", "llvm-pass", "pass-rate", "mlir-pass-pipeline",
    ):  # fmt: skip
        assert propose(["python", "t.py", f"--{name}", "s3cr3t-value"]).env == (), name
    # Written together, camelCase, numbered, an id of a key, a password's short word after
    # another or glued to a store's name: secrets all.
    for name in (
        "apikey", "apiKey", "api-key-2", "password2", "auth", "hftoken", "aws-key-id",
        "db-pass", "dbPass", "mysql-pwd", "pgpass", "redis.pass", "db-pass-prod", "pgpass-2",
    ):  # fmt: skip
        assert propose(["python", "t.py", f"--{name}", "s3cr3t-value"]).env != (), name
    # A Hydra key's last word past `/` or `@` (its package), split as a variable's name is.
    for key in ("db/password", "model@key", "db@backup.pass"):
        assert propose(["python", "t.py", f"{key}=s3cr3t-value"]).env != (), key
    # A Hydra interpolation is a reference; a password holding `${` is still a secret.
    assert propose(["python", "t.py", "db.password=${oc.env:X}"]).env == ()
    assert propose(["python", "t.py", "--password", "pa${ss}word"]).env == (
        ("PASSWORD", "pa${ss}word"),
    )


def test_a_value_shaped_as_a_credential_is_a_secret_under_any_name() -> None:
    # `--auth-header "Bearer ..."`, curl's `-H 'Authorization: ...'`, a URL holding a
    # password, a bare token: the option's name says nothing, and each was an axis or a
    # word of the spec, in clear.
    bearer = propose(
        ["python", "dl.py", "--auth-header", "Bearer 9f8e7d6c5b4a3f2e1d0c", "--lr", "0.1"]
    )
    assert bearer.command == 'python dl.py --auth-header "$AUTH_HEADER" --lr ${{ matrix.lr }}'
    assert bearer.env == (("AUTH_HEADER", "Bearer 9f8e7d6c5b4a3f2e1d0c"),)
    curl = propose(["curl", "-H", "Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c", "https://h/x"])
    assert curl.command == 'curl -H "$AUTHORIZATION" https://h/x'
    url = propose(["python", "t.py", "--db-url=postgres://me:pw1234@db/x", "db.dsn=https://a:b@c"])
    assert url.command == 'python t.py --db-url="$DB_URL_SECRET" db.dsn="$DB_DSN_SECRET"'
    token = "hf_" + "a1B" * 11
    bare = propose(["python", "dl.py", token])
    assert (bare.command, bare.env) == ('python dl.py "$HF_TOKEN"', (("HF_TOKEN", token),))
    script = propose(
        ["sh", "-c", f"curl -H 'Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c' u; echo {token}"]
    )
    assert script.command == 'sh -c \'curl -H "$AUTHORIZATION" u; echo "$HF_TOKEN"\''
    # A leading variable whose name says nothing: its value read as the others.
    leading = propose(["DATABASE_URL=postgres://me:pw1234@db/x", "python", "t.py", "--lr", "1"])
    assert leading.env == (("DATABASE_URL", "postgres://me:pw1234@db/x"),)
    # Ordinary values stay axes and words.
    plain = ["python", "t.py", "--url", "https://h/x", "--header", "Accept: json", "token"]
    assert propose(plain).env == ()


def test_a_script_keeps_what_its_shell_expands_and_reads_what_it_sets() -> None:
    # (review) `"Authorization: Bearer $TOK"` was taken for a credential before the shell
    # expanded it: the program got `$TOK` unexpanded, another run than the one typed.
    for script in (
        'curl -H "Authorization: Bearer $TOK" https://h/x',
        "python t.py https://u:$TOK@h/x",
    ):
        kept = propose(["sh", "-c", script])
        assert (kept.command, kept.env) == (f"sh -c {shlex.quote(script)}", ())
    token = "hf_" + "a1B" * 11
    sets = propose(
        ["sh", "-c", f"export HF_TOKEN={token}; DB_URL='postgres://me:pw1@db/x' python t.py"]
    )
    assert sets.command == 'sh -c \'export HF_TOKEN="$HF_TOKEN"; DB_URL="$DB_URL" python t.py\''
    assert sets.env == (("HF_TOKEN", token), ("DB_URL", "postgres://me:pw1@db/x"))
    # A bare token is read from the variable its provider's tools read.
    assert propose(["python", "t.py", "ghp_" + "b1C" * 12]).command == 'python t.py "$GITHUB_TOKEN"'
    # A setting whose name merely holds a secret's word is none (review).
    plain = propose(["sh", "-c", "MAX_TOKENS=2048 AUTH_ENABLED=true python gen.py"])
    assert plain.env == ()
    # A run's name in words is a setting, not a credential.
    words = propose(
        ["python", "t.py", "--run-name", "basic training", "--task", "Token embeddings"]
    )
    assert [t.axis for t in words.toggles] == ["run_name", "task"]


def test_two_secrets_under_one_name_keep_their_own_values() -> None:
    # Both options got the first one's value: capture ran a command other than the one typed.
    two = propose(["python", "t.py", "--api-key", "AAA", "--api_key", "BBB"])
    assert two.command == 'python t.py --api-key "$API_KEY" --api_key "$API_KEY_2"'
    assert two.env == (("API_KEY", "AAA"), ("API_KEY_2", "BBB"))
    leading = propose(["API_KEY=x", "python", "t.py", "--api-key", "y"])
    assert leading.command == 'python t.py --api-key "$API_KEY_2"'
    assert leading.env == (("API_KEY", "x"), ("API_KEY_2", "y"))


def test_a_secret_option_inside_a_shells_c_script_is_read_from_the_environment() -> None:
    # The -c script is one word: the key was written whole into the spec.
    proposal = propose(["sh", "-c", "cd sub && python up.py --api-key sk-live-AAAA --lr 0.1"])
    assert proposal.command == "sh -c 'cd sub && python up.py --api-key \"$API_KEY\" --lr 0.1'"
    assert proposal.env == (("API_KEY", "sk-live-AAAA"),)
    quoted = propose(["bash", "-c", "python up.py --token='hf_x y' | tee log"])
    assert quoted.command == "bash -c 'python up.py --token=\"$TOKEN\" | tee log'"
    # A `;` after the value is the shell's, and every copy of the value is read (review).
    again = propose(["sh", "-c", "python up.py --api-key SECRET; echo SECRET"])
    assert again.command == 'sh -c \'python up.py --api-key "$API_KEY"; echo "$API_KEY"\''
    assert again.env == (("API_KEY", "SECRET"),)
    single = propose(["sh", "-c", "python up.py --api-key 'sk-live-A'"])
    assert single.command == "sh -c 'python up.py --api-key \"$API_KEY\"'"


def test_an_axis_holding_a_secrets_value_reads_the_secrets_variable() -> None:
    # `--user hunter22` beside `--password hunter22` was an axis: the value in the spec,
    # the cell's name and every report (review).
    proposal = propose(["python", "t.py", "--password", "hunter22", "--user", "hunter22"])
    assert proposal.command == 'python t.py --password "$PASSWORD" --user "$PASSWORD"'
    assert proposal.toggles == ()
    assert propose(["python", "t.py", "--user", "bob"]).command == (
        "python t.py --user ${{ matrix.user }}"
    )
    # A value too short for the mask is no secret's to replace.
    short = propose(["AUTH=1", "python", "t.py", "--workers", "1"])
    assert short.command == "python t.py --workers ${{ matrix.workers }}"


def test_pytests_one_letter_switches_take_no_value() -> None:
    # `pytest -q tests/test_x.py` made `q` an axis holding the test file (a new user's trial).
    quiet = propose(["pytest", "-q", "tests/test_x.py", "-k", "slow"])
    assert quiet.command == "pytest -q tests/test_x.py -k ${{ matrix.k }}"
    assert [t.axis for t in quiet.toggles] == ["k"]
    # Another program's -q may take one: only pytest's are known.
    assert [t.axis for t in propose(["python", "t.py", "-q", "3"]).toggles] == ["q"]


def test_a_leading_setting_is_written_and_a_leading_secret_is_read_back() -> None:
    # `MAX_TOKENS=2048 python train.py`: the substring rule made the setting a secret, and
    # the spec read `${{ env.MAX_TOKENS }}`, which no reader's shell had. The rule is the
    # one a script's assignment is judged by (its name's last word, or a credential).
    plain = propose(["MAX_TOKENS=2048", "AUTH_ENABLED=true", "python", "train.py"])
    assert plain.env == (("MAX_TOKENS", "2048"), ("AUTH_ENABLED", "true"))
    assert (plain.secrets, plain.secret_env) == (frozenset(), ())
    token = "hf_" + "a1B" * 11
    secret = propose(
        ["HF_TOKEN=" + token, "DATABASE_URL=postgres://me:pw1234@db/x", "python", "t.py"]
    )
    assert secret.secrets == {"HF_TOKEN", "DATABASE_URL"}
    # A variable an option's secret is read from is one whatever its length.
    short = propose(["STEPS=3", "python", "t.py", "--password", "pw"])
    assert short.command == 'python t.py --password "$PASSWORD"'
    assert short.secret_env == (("PASSWORD", "pw"),)


@pytest.mark.parametrize("length", ["short", "long"])
def test_a_leading_variable_whose_name_holds_a_secrets_word_anywhere_is_read_back(
    length: str,
) -> None:
    # `GITHUB_TOKEN_RO=... python x.py` was judged by its last word (`ro`), and the
    # captured spec wrote the token under `# set on the command line`.
    secrets = named_secrets(length)
    settings = {**COUNTS, **LOOKALIKES, "API_TOKEN": "tok", "AUTH_ENABLED": "true"}
    words = [f"{name}={value}" for name, value in {**secrets, **settings}.items()]
    proposal = propose([*words, "python", "x.py"])
    assert proposal.command == "python x.py"
    assert dict(proposal.env) == {**secrets, **settings}
    assert proposal.secrets == set(secrets)
    # The same in a shell script: its assignment is read from the variable the spec reads.
    name, value = "GITHUB_TOKEN_RO", secrets["GITHUB_TOKEN_RO"]
    script = propose(["sh", "-c", f"{name}={value} MAX_TOKENS=2048 python x.py"])
    assert script.command == shlex.join(
        ["sh", "-c", f'{name}="${name}" MAX_TOKENS=2048 python x.py']
    )
    assert script.secret_env == ((name, value),)


def test_the_env_program_sets_its_variables_as_a_leading_assignment_does() -> None:
    # `env GITHUB_TOKEN_RO=... python x.py`: the assignments were the program's arguments,
    # read as Hydra overrides, and the token was an axis (the spec, the cells' names).
    token = "abcd1234efgh5678"
    for env in ("env", "/usr/bin/env"):
        proposal = propose([env, f"GITHUB_TOKEN_RO={token}", "MAX_TOKENS=2048", "python", "x.py"])
        assert (proposal.command, proposal.toggles) == ("python x.py", ())
        assert proposal.env == (("GITHUB_TOKEN_RO", token), ("MAX_TOKENS", "2048"))
        assert proposal.secrets == {"GITHUB_TOKEN_RO"}
    mixed = propose(["A=1", "env", "B=2", "python", "x.py", "--lr", "0.1"])
    assert mixed.env == (("A", "1"), ("B", "2"))
    assert mixed.command == "python x.py --lr ${{ matrix.lr }}"
    # `env` alone prints the environment: no program to give the variables to.
    assert propose(["env", "A=1"]).command.startswith("env ")


def test_env_with_options_of_its_own_is_kept_and_the_program_read_past_it() -> None:
    # `env -i A=1 python x.py`: `-i A=1` was an axis (`env -i ${{ matrix.i }}`), and
    # `env -i python x.py` an axis holding `python`; the program starts from an empty
    # environment, which its spec must do too. Its assignments are no leading variables
    # (the spec's environment.env is what `-i` empties), its options no settings.
    token = "abcd1234efgh5678"
    proposal = propose(
        ["env", "-i", "A=1", f"GITHUB_TOKEN_RO={token}", "MAX_TOKENS=2048",
         "python", "-X", "faulthandler", "x.py", "--lr", "0.1"]
    )  # fmt: skip
    assert proposal.command == (
        'env -i A=1 GITHUB_TOKEN_RO="$GITHUB_TOKEN_RO" MAX_TOKENS=2048 '
        "python -X faulthandler x.py --lr ${{ matrix.lr }}"
    )
    assert [t.axis for t in proposal.toggles] == ["lr"]
    # The secret is read back from the environment the shell expands it in, before `-i`.
    assert proposal.env == (("GITHUB_TOKEN_RO", token),)
    assert proposal.secrets == {"GITHUB_TOKEN_RO"}
    for argv, command in (
        (["env", "-i", "python", "x.py"], "env -i python x.py"),
        (["env", "-", "A=1", "python", "x.py"], "env - A=1 python x.py"),
        (["env", "-u", "HOME", "python", "x.py", "--workers", "2"],
         "env -u HOME python x.py --workers ${{ matrix.workers }}"),
        (["/usr/bin/env", "--unset=HOME", "-C", "/tmp", "B=2", "sh", "-c", "python x.py"],
         "/usr/bin/env --unset=HOME -C /tmp B=2 sh -c 'python x.py'"),
        (["env", "-iu", "HOME", "A=1", "python", "x.py"], "env -iu HOME A=1 python x.py"),
        (["env", "--ignore-environment", "--", "A=1", "python", "x.py"],
         "env --ignore-environment -- A=1 python x.py"),
        # `-S`: the program is inside its one word, kept whole.
        (["env", "-S", "python x.py --lr 1"], "env -S 'python x.py --lr 1'"),
    ):  # fmt: skip
        proposal = propose(argv)
        assert (proposal.command, proposal.env) == (command, ()), argv  # axes: the program's
    # A leading variable before it is one still (`-i` empties it in the spec's run too).
    leading = propose(["B=2", "env", "-i", "PATH=/usr/bin", "python3", "x.py"])
    assert (leading.command, leading.env) == ("env -i PATH=/usr/bin python3 x.py", (("B", "2"),))


def test_env_says_what_it_takes_from_the_programs_environment() -> None:
    # environment.env past `env -i` reaches nothing but what the command reads
    # back (the shell expands `"$NAME"` before env runs), past `-u NAME` all but NAME.
    cases: tuple[tuple[list[str], bool, frozenset[str]], ...] = (
        (["env", "-i", "A=1", "python", "x.py"], True, frozenset()),
        (["env", "-", "python", "x.py"], True, frozenset()),
        (["env", "--ignore-env", "--unset=X", "python", "x.py"], True, frozenset({"X"})),
        (["env", "-iu", "X", "python", "x.py"], True, frozenset({"X"})),
        (["env", "-uX", "-u", "Y", "-C", "/tmp", "python", "x.py"], False, frozenset({"X", "Y"})),
        (["env", "-S", "-i -u Z python x.py"], True, frozenset({"Z"})),
        (["env", "-C", "/tmp", "python", "x.py"], False, frozenset()),
        (["env", "--", "A=1", "python", "x.py"], False, frozenset()),
        (["env", "A=1", "python", "x.py"], False, frozenset()),
        (["python", "x.py"], False, frozenset()),
    )
    for argv, cleared, unset in cases:
        proposal = propose(argv)
        assert (proposal.env_cleared, proposal.env_unset) == (cleared, unset), argv
    token = "abcd1234efgh5678"
    read_back = propose(["env", "-i", f"GITHUB_TOKEN_RO={token}", "python", "x.py"])
    assert read_back.reaches("GITHUB_TOKEN_RO")
    assert not read_back.reaches("GITHUB_TOKEN")  # a name that only begins the same
    assert not read_back.reaches("PYTHONUNBUFFERED")
    home = propose(["env", "-u", "HOME", "python", "x.py"])
    assert home.reaches("PYTHONUNBUFFERED")
    assert not home.reaches("HOME")


def test_a_pytest_option_of_one_value_before_a_node_id_with_spaces_is_an_axis() -> None:
    """pt35: `-k slow 'test_p.py::test_x[a b]'` (the command narrowed to a parametrized
    test) was kept as written, no axis: two words alike, no path by their shape. pytest's
    `-k` takes one value; the node id is a test path."""
    proposal = propose(["pytest", "-k", "slow", "t.py::test_x[a b]", "-v"])
    assert proposal.command == "pytest -k ${{ matrix.k }} 't.py::test_x[a b]' -v"
    assert [(t.axis, t.value) for t in proposal.toggles] == [("k", "slow")]
    assert proposal.kept == ()


@pytest.mark.parametrize(
    "setup",
    [
        ["-p", "no:flaky"],
        ["-p", "no:cacheprovider", "-c", "ci.ini"],
        ["--config-file", "ci.ini", "--rootdir", "."],
        ["--rootdir=.", "--confcutdir", "tests"],
        ["-o", "faulthandler_timeout=5", "--override-ini=xfail_strict=true"],
    ],
)
def test_pytests_own_setup_options_stay_in_the_command(setup: list[str]) -> None:
    """lo38: `pytest -p no:flaky -v t.py` made `p=no:flaky` an axis: a plugin blocked is
    part of the command, not a setting of the failure; so are the ini file, the rootdir and
    an ini value. Kept as written, with the node id after them still a test path."""
    proposal = propose(["pytest", *setup, "t.py::test_x[a b]", "-v"])
    assert proposal.command == " ".join([shlex.join(["pytest", *setup]), "'t.py::test_x[a b]' -v"])
    assert proposal.toggles == ()
    assert proposal.kept == ()
    # Another program's `-p` is its own setting.
    assert [t.axis for t in propose(["python", "x.py", "-p", "3"]).toggles] == ["p"]


@pytest.mark.parametrize(
    ("argv", "axes"),
    [
        (["timeout", "--foreground", "-s", "KILL", "1", "python3", "-c", "import time"], {}),
        (
            ["timeout", "-k", "5", "60", "nice", "-n", "5", "python", "x.py", "--lr", "0.1"],
            {"lr": 0.1},
        ),
        (
            ["stdbuf", "-oL", "taskset", "-c", "0-3", "python", "-m", "m", "--workers", "2"],
            {"workers": 2},
        ),
        (
            ["numactl", "--membind=0", "-N", "0", "ionice", "-c", "3", "app", "--fast"],
            {"fast": True},
        ),
        (
            [
                "chrt",
                "-f",
                "10",
                "xvfb-run",
                "-a",
                "-s",
                "-screen 0",
                "python",
                "-X",
                "dev",
                "t.py",
            ],
            {},
        ),
        (["/usr/bin/time", "-v", "nohup", "python", "-u", "-c", "pass", "--n", "3"], {"n": 3}),
    ],
)
def test_a_wrappers_words_and_the_interpreters_are_no_axes(
    argv: list[str], axes: dict[str, JsonValue]
) -> None:
    # `timeout --foreground -s KILL 1 python3 -c CODE` made `foreground`, `s` and
    # `c` axes; only the program's own options past the wrappers are.
    proposal = propose(argv)
    assert {t.axis: t.value for t in proposal.toggles} == axes
    assert render(proposal.command, axes) == shlex.join(argv)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["python", "-X", "dev", "-m", "pytest", "-q"], ["--module", "pytest"]),
        (["timeout", "5", "/venv/bin/pytest", "-x"], ["--program", "pytest"]),
        (["A=1", "env", "-i", "python3", "-u", "-m", "pkg.sub"], ["--module", "pkg.sub"]),
        (["python", "x.py"], []),
        (["python", "-c", "pass"], []),
    ],
)
def test_the_program_a_command_runs_is_named_for_its_pin(argv: list[str], words: list[str]) -> None:
    # The distribution of the program is always pinned (the harness finds it).
    from reprospec.capture.footprint import _program_words

    assert _program_words(argv) == words


@pytest.mark.parametrize(
    ("argv", "axes"),
    [
        (["timeout", "5", "env", "-i", "python3", "prog.py", "--lr", "0.1"], {"lr": 0.1}),
        (["timeout", "5", "env", "A=1", "python3", "prog.py", "--lr", "0.1"], {"lr": 0.1}),
        (["nice", "-n", "5", "env", "-u", "HOME", "python3", "x.py", "--lr", "0.1"], {"lr": 0.1}),
        (["timeout", "-fsKILL", "5", "python3", "-u", "x.py", "--lr", "0.1"], {"lr": 0.1}),
        (["timeout", "--sig", "KILL", "5", "python3", "x.py", "--lr", "0.1"], {"lr": 0.1}),
        (["nice", "-5", "stdbuf", "-o", "L", "python3", "x.py", "--lr", "0.1"], {"lr": 0.1}),
        (["chrt", "-b", "python3", "x.py", "--lr", "0.1"], {"lr": 0.1}),
        (["numactl", "--cpunode", "0", "python3", "x.py", "--lr", "0.1"], {"lr": 0.1}),
    ],
)
def test_env_and_wrappers_inside_one_another_are_no_axes(
    argv: list[str], axes: dict[str, JsonValue]
) -> None:
    # `timeout 5 env -i python3 prog.py --lr 0.1` made `-i python3` an axis (i:
    # [python3], the interpreter), as the env after the wrapper was read as its program.
    proposal = propose(argv)
    assert {t.axis: t.value for t in proposal.toggles} == axes
    assert render(proposal.command, axes) == shlex.join(argv)
    assert proposal.unsure == ""


def test_an_env_after_a_wrapper_empties_the_programs_environment_and_reads_its_secret() -> None:
    token = "hf_" + "a1b2c3d4e5" * 3
    proposal = propose(["timeout", "5", "env", "-i", f"HF_TOKEN={token}", "python3", "x.py"])
    assert proposal.command == 'timeout 5 env -i HF_TOKEN="$HF_TOKEN" python3 x.py'
    assert proposal.secret_env == (("HF_TOKEN", token),)
    assert proposal.env_cleared
    assert not proposal.reaches("OTHER")
    assert proposal.reaches("HF_TOKEN")
    unset = propose(["nice", "-n", "5", "env", "-u", "HOME", "python3", "x.py"])
    assert (unset.env_cleared, unset.env_unset) == (False, frozenset({"HOME"}))


@pytest.mark.parametrize(
    ("argv", "unsure"),
    [
        # An option the grammar lacks: `--cpuset 0` read as a switch made `0` the program
        # and `-u`'s neighbour `x.py` the axis `u`.
        (["numactl", "--cpuset", "0", "python3", "-u", "x.py", "--lr", "0.1"], "numactl"),
        (["timeout", "-z", "5", "python3", "x.py", "--lr", "0.1"], "timeout"),
        (["timeout", "soon", "python3", "x.py", "--lr", "0.1"], "timeout"),  # no duration
        (["taskset", "-p", "0x3", "1234"], "taskset"),  # a pid mode runs no program
        (["timeout", "5", "env", "-S", "python3 x.py --lr 0.1"], "env"),
        (["env", "-i", "nice", "--bogus", "python3", "x.py", "--lr", "0.1"], "nice"),
    ],
)
def test_a_wrappers_unknown_word_makes_no_axis(argv: list[str], unsure: str) -> None:
    # Where the program starts is not sure: no axis is better than a wrong one.
    proposal = propose(argv)
    assert proposal.toggles == ()
    assert render(proposal.command, {}) == shlex.join(argv)
    assert proposal.unsure == unsure


def test_a_literal_expression_opener_in_the_command_is_written_so_the_spec_runs_its_text() -> None:
    # A new user's trial: `--msg '${{ oops }}'` was copied as is, an expression of the
    # spec's (`unknown name 'oops'`), and `"${{ env.USER }}-run"` silently read the reader's
    # environment where the program got the text.
    argv = ["python", "train.py", "--msg", "${{ oops }}", "--template", "${{ env.USER }}-run"]
    proposal = propose(argv)
    rendered = expr.interpolate(proposal.command, {"matrix": {}, "env": {"USER": "reader"}})
    assert isinstance(rendered, str)
    assert shlex.split(rendered) == argv
    assert expr.names_used(proposal.command) == []


def test_a_secret_the_command_passes_is_told_from_one_its_words_set() -> None:
    # `--token hf_...` sets no TOKEN: the spec said "the ticket's command set it" of it.
    token = "hf_abcdefghijklmnopqrstuvwx"
    passed = propose(["python", "x.py", "--token", token])
    assert passed.passed == {"TOKEN"}
    assert propose([f"HF_TOKEN={token}", "python", "x.py"]).passed == frozenset()
    assert propose(["env", "-i", f"HF_TOKEN={token}", "python", "x.py"]).passed == frozenset()


def test_an_axis_is_said_to_come_from_its_words_as_the_shell_reads_them() -> None:
    # `# from `--name my run`` named three words where the command had two.
    argv = ["python", "t.py", "--name", "my run", "--tag=a b", "--lr", "0.1"]
    said = {t.axis: t.text for t in propose(argv).toggles}
    assert said == {"name": "--name 'my run'", "tag": "'--tag=a b'", "lr": "--lr 0.1"}
