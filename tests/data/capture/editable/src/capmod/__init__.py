"""The project's package, which its own scripts import as an installed distribution."""

from capmod.tokens import count_tokens

__all__ = ["count_tokens"]
