"""`environment.perturb`: apply perturbations to an attempt (apply.py) and run the
competitors beside it (load.py). The spec's side, parsed and typed, is sections.Perturb."""
