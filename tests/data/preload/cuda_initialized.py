"""Stands in for a module that initialised CUDA at import: this machine has no GPU, so the
one thing no real process can show here (torch.cuda.is_initialized() being true) is set."""

import torch

torch.cuda.is_initialized = lambda: True
