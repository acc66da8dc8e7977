"""Classify and judge an attempt: its evidence read once (evidence.py), what happened (classify.py:
pass, error, crash, hang, and where), and whether that is what the spec expects (judge.py).
"""
