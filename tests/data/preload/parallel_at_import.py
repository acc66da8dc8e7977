"""Runs a parallel op at import: torch's OpenMP pool starts in the server (the hazard)."""

import torch

torch.ones(256, 256) @ torch.ones(256, 256)
