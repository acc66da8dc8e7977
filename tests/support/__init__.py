"""Helpers shared by the tests (a package, so any test file imports them the same way)."""
