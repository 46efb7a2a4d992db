"""One rank of the gloo-barrier check (run as a script by test_cpu_barrier.py).

Each trial: launch a long kernel on this rank's stream, pass a gloo barrier and
a gloo all_reduce of a CPU tensor with the other rank, then note whether the
stream is still busy. The counts go to a JSON file the test reads.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import torch
import torch.distributed as dist


def main(rank: int, world: int, init_file: str, out: str, trials: int, cycles: int) -> None:
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=120),
    )
    torch.cuda.synchronize()
    dist.barrier()  # both ranks are up (CUDA initialised) before the first trial
    after_barrier = after_all_reduce = 0
    flag = torch.ones(1)
    for _ in range(trials):
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda._sleep(cycles)
        dist.barrier()
        after_barrier += not torch.cuda.current_stream().query()
        dist.all_reduce(flag)
        after_all_reduce += not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"barrier": after_barrier, "all_reduce": after_all_reduce}, handle)


if __name__ == "__main__":
    rank, world, init_file, out, trials, cycles = sys.argv[1:7]
    main(int(rank), int(world), init_file, out, int(trials), int(cycles))
