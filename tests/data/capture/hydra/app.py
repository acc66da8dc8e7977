"""A Hydra app that fails at validation step 7 with Lightning-style progress bars.

It draws its bars the way Lightning's tqdm bars are drawn (`\r` redraws on
stderr) and raises at validation step 7 when the data loads in workers.
"""

import sys
import time

import hydra
from omegaconf import DictConfig


def bar(title: str, step: int, total: int) -> None:
    done = int(10 * step / total)
    sys.stderr.write(
        f"\r{title}: {100 * step // total:3d}%|{'#' * done}{' ' * (10 - done)}| {step}/{total} "
        f"[00:00<00:00, 50.0it/s]"
    )
    sys.stderr.flush()


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    for step in range(1, 5):
        bar("Epoch 0", step, 4)
        time.sleep(0.01)
    sys.stderr.write("\n")
    for step in range(1, 11):
        bar("Validation DataLoader 0", step, 10)
        time.sleep(0.01)
        if step == 7 and cfg.data.num_workers > 0:
            raise RuntimeError(
                f"stack expects each tensor to be equal size (workers={cfg.data.num_workers})"
            )
    sys.stderr.write("\n")
    print(f"done with precision {cfg.trainer.precision}")


if __name__ == "__main__":
    main()
