"""Load and validate a spec: YAML with locations, overrides, the JSON Schema, the semantic checks
(checks/) and the matrix expansion.
"""
