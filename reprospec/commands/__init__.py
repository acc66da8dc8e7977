"""One module per CLI verb; each defines `run(args) -> int`."""
