"""Built-in models (`mlp`, `cnn`, `transformer-decoder`): a batch to `[batch, classes]` logits.

(Each `forward` names its result `logits: torch.Tensor` before returning it: torch types a
module's call as returning Any. The classes are pasted into a generated repro.py as written.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from . import config, entrypoints
from .values import JsonValue


class MLP(nn.Module):
    """Flatten, then `layers` hidden ReLU layers."""

    def __init__(
        self, shape: Sequence[int], classes: int, hidden: int = 64, layers: int = 2
    ) -> None:
        super().__init__()
        width = math.prod(shape)
        stack: list[nn.Module] = [nn.Flatten()]
        for _ in range(layers):
            stack += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        stack.append(nn.Linear(width, classes))
        self.net = nn.Sequential(*stack)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.net(x.float())
        return logits


class CNN(nn.Module):
    """Two conv blocks, global average pooling, a linear head; input `[C, H, W]`."""

    def __init__(self, shape: Sequence[int], classes: int, channels: int = 16) -> None:
        super().__init__()
        in_channels = shape[0] if len(shape) == 3 else 1
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.Conv2d(channels, channels * 2, 3, padding=1, stride=2),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(channels * 2, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            x = x.unsqueeze(1)
        logits: torch.Tensor = self.net(x.float())
        return logits


class TransformerDecoder(nn.Module):
    """A causal decoder over token ids (0 = padding, masked with a target key padding mask)."""

    def __init__(
        self,
        shape: Sequence[int],
        classes: int,
        d_model: int = 32,
        nhead: int = 2,
        layers: int = 2,
        vocab: int | None = None,
    ) -> None:
        super().__init__()
        self.length = shape[-1]
        self.embed = nn.Embedding(vocab or max(classes, 2), d_model)
        self.position = nn.Parameter(torch.zeros(self.length, d_model))
        layer = nn.TransformerDecoderLayer(
            d_model, nhead, dim_feedforward=2 * d_model, batch_first=True
        )
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = tokens.long()
        length = tokens.shape[-1]
        x = self.embed(tokens) + self.position[:length]
        padding = tokens == 0
        causal = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
        h = self.decoder(
            x,
            x,
            tgt_mask=causal,
            tgt_is_causal=True,
            tgt_key_padding_mask=padding,
            memory_key_padding_mask=padding,
        )
        keep = (~padding).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1).clamp(min=1)
        logits: torch.Tensor = self.head(pooled)
        return logits


BUILTINS: dict[str, type[nn.Module]] = {
    "mlp": MLP,
    "cnn": CNN,
    "transformer-decoder": TransformerDecoder,
}


# Smallest value of each integer parameter of the built-ins (None allowed where the default is).
MINIMUMS: dict[str, int] = {
    "hidden": 1,
    "layers": 0,
    "channels": 1,
    "d_model": 1,
    "nhead": 1,
    "vocab": 1,
}


def build(section: Mapping[str, JsonValue], shape: Sequence[int], classes: int) -> nn.Module:
    """The model of the spec's `model:` section, sized for the dataset.

    A built-in's bad `params` are a ConfigError; an entrypoint's errors are its own.
    """
    if section.get("entrypoint"):
        return entrypoints.build(section, "workload.model", "model", nn.Module)
    name = config.choice(section.get("builtin", "mlp"), "workload.model.builtin", "model", BUILTINS)
    params = dict(config.mapping(section.get("params"), "workload.model.params"))
    field = "workload.model.params"
    for reserved in ("shape", "classes"):
        if reserved in params:
            raise config.ConfigError(
                f"{field}.{reserved}", f"{name}'s {reserved} comes from the dataset, not params"
            )
    config.bind(BUILTINS[name], name, field, shape, classes, **params)
    for key, value in params.items():
        if key in MINIMUMS and not (value is None and key == "vocab"):
            config.integer(value, f"{field}.{key}", MINIMUMS[key])
    try:
        return BUILTINS[name](shape, classes, **params)
    except (TypeError, ValueError, AssertionError) as exc:
        # e.g. "embed_dim must be divisible by num_heads" (d_model vs nhead)
        raise config.ConfigError(field, f"{name}(): {exc}") from None
