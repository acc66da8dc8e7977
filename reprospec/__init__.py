"""reprospec: turn a machine- and configuration-dependent crash into a rerunnable YAML spec.

Importing this package must stay cheap and must never import torch: the parent
process stays light and CUDA-free whatever the child does.
"""

__version__ = "0.1.0"
