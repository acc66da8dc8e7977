"""Make a rare failure frequent: search perturbations for the one that raises its rate.

- `search.py`: the search, a pure state machine over arms (the base, each
  perturbation alone, the best ones combined); no processes.
- `driver.py`: `reprospec amplify` as a library: each probe a normal run of the spec
  with `environment.perturb` set, judged by the spec's own expectation.
- `state.py`: the amplify folder, so an interrupted amplification resumes.
- `report.py`: the sentence, amplify.md, the JSON, the amplified spec.
"""
