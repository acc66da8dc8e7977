"""From cells to what runs: one attempt's AttemptPlan (attempt.py), a run's RunPlan (run.py), and
what a cell needs to run elsewhere (workfiles, standalone, reproscript).
"""
