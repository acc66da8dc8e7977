"""A training script that hangs at import time when its warm-up plugin is on."""

import argparse
import json
import os
import sys


def load_config(path: str | None) -> dict[str, object]:
    if path and os.path.exists(path):
        with open(path) as fh:
            return dict(json.load(fh))
    return {"lr": 0.1, "epochs": 2}


def schedule(lr: float, epochs: int) -> list[float]:
    return [lr * (0.5**epoch) for epoch in range(epochs)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", default="false")
    parser.add_argument("--config", default=None)
    args = parser.parse_args()
    config = load_config(args.config)
    if args.plugin == "true":
        import plugin

        plugin.register(config)
    for epoch, lr in enumerate(schedule(float(config["lr"]), int(config["epochs"]))):
        print(f"epoch {epoch} lr={lr:.4f}", flush=True)
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
