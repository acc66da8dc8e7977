"""What an interpreter has: its captured environment (probe.py), that environment read and held
against the spec's (captured.py), as flat fields (facts.py), and whether it satisfies a cell's
`packages` (packages.py).
"""
