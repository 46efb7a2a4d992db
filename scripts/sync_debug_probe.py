"""Which host syncs PyTorch's sync debug mode reports (needs a CUDA device).

vLLM's runtime checker (`VLLM_GPU_SYNC_CHECK`, vllm/utils/gpu_sync_debug.py)
arms `torch.cuda.set_sync_debug_mode("warn")` and treats its warning as a
violation: a host sync it does not report is one vLLM's checker cannot see.
The SYNC005 triage (tests/triage/vllm.toml) cites this table. Run:
`python scripts/sync_debug_probe.py` on a machine with PyTorch and a GPU.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch


def probes() -> dict[str, Callable[[], object]]:
    dev = torch.ones(1 << 20, device="cuda")
    mask = dev > 0
    event = torch.cuda.Event()
    event.record()
    stream = torch.cuda.current_stream()
    pageable = torch.ones(1 << 20)
    pinned = torch.ones(1 << 20, pin_memory=True)
    return {
        "torch.cuda.synchronize()": torch.cuda.synchronize,
        "torch.accelerator.synchronize()": torch.accelerator.synchronize,
        "event.synchronize()": event.synchronize,
        "stream.synchronize()": stream.synchronize,
        ".item()": lambda: dev.sum().item(),
        ".tolist()": lambda: dev[:4].tolist(),
        ".cpu()": lambda: dev.cpu(),
        ".to('cpu', non_blocking=True)": lambda: dev.to("cpu", non_blocking=True),
        "bool(tensor)": lambda: bool(dev[0]),
        "torch.nonzero": lambda: torch.nonzero(dev),
        "boolean-mask indexing": lambda: dev[mask],
        "pageable.copy_ H2D non_blocking": lambda: dev.copy_(pageable, non_blocking=True),
        "pinned.copy_ H2D non_blocking": lambda: dev.copy_(pinned, non_blocking=True),
        "pageable.copy_ H2D blocking": lambda: dev.copy_(pageable),
        "pageable.copy_ D2H blocking": lambda: pageable.copy_(dev),
        "pageable.to(cuda, non_blocking=True)": lambda: pageable.to("cuda", non_blocking=True),
    }


def main() -> None:
    torch.cuda.init()
    calls = probes()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        hit = any("synchronizing CUDA operation" in str(w.message) for w in caught)
        print(f"{name:40s} {'reported' if hit else 'silent'}")
    torch.cuda.set_sync_debug_mode(0)
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()
