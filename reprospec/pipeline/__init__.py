"""A run from a loaded spec to a RunResult: the stages in order (stages.py), one attempt end to end
(attempt.py), the scheduler, GPU slots (gpus.py) and resume.
"""
