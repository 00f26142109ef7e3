"""Keep GPU 0 busy for N seconds with bf16 matrix products (PyTorch), printing "ready" once memory is held.

Used by the real-GPU tests and bench/gpu_device_check.sh, on a machine that has PyTorch and a GPU."""

from __future__ import annotations

import sys
import time

import torch


def main(seconds: float) -> None:
    matrix = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)  # 128 MiB held while the load runs
    torch.cuda.synchronize()
    print("ready", flush=True)
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        for _ in range(20):
            matrix @ matrix
        torch.cuda.synchronize()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 20.0)
