"""`reprospec bisect`: which release of a package broke a spec, in isolation/'s names: driver.py
runs the probes, search.py is the pure search, state.py its files; releases.py lists versions.
"""
