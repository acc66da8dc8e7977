"""A DataLoader whose 6th sample decodes to 2 GiB: its worker runs out of memory."""

import torch
from torch.utils.data import DataLoader, Dataset


class Big(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 5:
            decoded = [bytearray(1 << 20) for _ in range(2048)]
            print(f"decoded {len(decoded)} MiB", flush=True)
        return torch.zeros(4)


for step, _ in enumerate(DataLoader(Big(), batch_size=2, num_workers=2)):
    print(f"step {step}", flush=True)
