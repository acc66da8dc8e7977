"""A run taken elsewhere: a rerunnable archive (bundle.py) and a self-contained docker bundle of a
spec (materialize.py).
"""
