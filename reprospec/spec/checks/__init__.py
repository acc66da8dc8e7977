"""The checks a JSON Schema cannot say: the document (document.py), every cell's values (cells.py),
`expect` against the rest of the spec (expect.py).
"""
