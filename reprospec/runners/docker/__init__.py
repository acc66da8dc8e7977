"""The docker runner: images (image.py), the SDK typed (sdk.py), an attempt inside a container
(container.py, runner.py, engine.py), its native stacks, instances and probes.
"""
