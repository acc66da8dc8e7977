"""Variable names that hold a secret's word somewhere but last or a password's short
word (`DB_PASS`, `PGPASS`, `MYSQL_PWD`), and settings whose names hold one: the cases every
output's rule for a written `NAME=value` is checked on (redact.sets_secret), by the
Redactor's, capture's, the standalone repro's and the bundles' tests alike.

Judged by their last word alone, the first secrets' values were written in clear in
report.md, results.json, the results store, a bundle and a captured spec; `DB_PASS`'s by
every rule, which knew `PASSWORD` and `PASSWD` only.
"""

from __future__ import annotations

# name -> (a short value: 4 characters, the least the Redactor masks; a long one).
SUFFIXED_SECRETS = {
    "GITHUB_TOKEN_RO": ("Qz7W", "abcd1234efgh5678"),
    "SECRET_KEY_BASE": ("Kb9x", "0123456789abcdef0123456789abcdef"),
    "OPENAI_KEY_V2": ("Oq2v", "zyxw9876vuts5432"),
    "STRIPE_SECRET_KEY_LIVE": ("Sk4L", "rk_live_51abcdefghijklmnopq"),
    "DB_PASSWORD_PROD": ("Pw8d", "hunter2-hunter2-prod"),
}


# A password's short word after another, or glued to a store's name: the names database
# clients and services read (`PGPASS`, `MYSQL_PWD`) and people write (`DB_PASS`).
PASSWORD_SECRETS = {
    "DB_PASS": ("Db4p", "correct-horse-db-9"),
    "PGPASS": ("Pg7s", "pg-s3cret-passphrase"),
    "MYSQL_PWD": ("My3w", "mysql-r00t-pw-1234"),
    "REDIS_PASS": ("Rd5s", "redis-auth-5678-xyz"),
    "REDIS_PASS_PROD": ("Rp6d", "redis-prod-9012-abc"),
    "dbPass": ("Dp2c", "camel-db-pass-3456"),
    "DBPASS": ("Dg8l", "glued-db-pass-7890"),
}
NAMED_SECRETS = {**SUFFIXED_SECRETS, **PASSWORD_SECRETS}


def named_secrets(length: str) -> dict[str, str]:
    """The secrets above with their "short" or "long" values."""
    return {name: values[length == "long"] for name, values in NAMED_SECRETS.items()}


# Settings whose name holds a secret's word: a count or a limit, with a number.
COUNTS = {
    "MAX_TOKENS": "2048",
    "NUM_TOKENS": "16384",
    "TOKENS": "4096",
    "max_new_tokens": "1024",
    "maxNewTokens": "1e6",
    "MAX_KEY_LENGTH": "64k",
    "MIN_PASSWORD_LENGTH": "1200",
    "NUM_KEYS": "-1000",
    "NUM_PASSES": "3",
    "PASSES": "2",
}
# Settings whose names hold `pass` or `pwd` inside a word, first, before a setting's word or
# after an ordinal or a compiler's word: no password's (as secrets, every 0.95 of a
# report was `***`).
LOOKALIKES = {
    "BYPASS_CACHE": "always",
    "COMPASS_DIR": "/data/compass",
    "PASS_RATE": "0.95",
    "PGPASSFILE": "/home/me/.pgpass",
    "TEST_PASS_RATE": "0.95",
    "MLIR_PASS_PIPELINE": "builtin.module(canonicalize,cse)",
    "LLVM_PASS": "instcombine",
    "FIRST_PASS": "warmup-run",
    "SECOND_PASS": "full-model",
    "INDUCTOR_POST_GRAD_PASS": "custom_fusion",
    "PASS_COUNT": "12345678",
    "PASS_NAME": "loop-unroll",
}
