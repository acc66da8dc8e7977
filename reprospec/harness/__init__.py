"""The harness folder put on the child's PYTHONPATH; the engine never imports its contents."""

from __future__ import annotations

from pathlib import Path

HARNESS_ROOT = Path(__file__).parent
