"""Variable names that hold a secret's word somewhere but last (rv16), and settings whose
names hold one: the cases every output's rule for a written `NAME=value` is checked on
(redact.sets_secret), by the Redactor's, capture's, the standalone repro's and the
bundles' tests alike.

Judged by their last word alone, the secrets' values were written in clear in report.md,
results.json, the results store, a bundle and a captured spec.
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


def suffixed(length: str) -> dict[str, str]:
    """The secrets above with their "short" or "long" values."""
    return {name: values[length == "long"] for name, values in SUFFIXED_SECRETS.items()}


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
}
