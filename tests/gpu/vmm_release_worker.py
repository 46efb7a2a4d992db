"""One process of the sleep_releases_before_barrier program's trials (run by the driver).

Usage: vmm_release_worker.py PROGRAM_ROOT TRIALS. Each trial builds the Worker (a
64 MB pool of CUDA virtual memory, filled with ones), queues a step-loop kernel
that reads the whole pool behind a ~10 ms sleep, then calls `Worker.sleep()`,
which unmaps and releases the pool's pages. Prints one line per trial: `intact`
(the kernel summed the pool), `corrupted` (it summed something else) or `fault`
(the device faulted: the kernel read unmapped pages). A fault leaves the CUDA
context unusable, so the process stops there and the driver starts another.
"""

import sys

import torch

sys.path.insert(0, sys.argv[1])
from engine.worker import Worker  # noqa: E402

# Launch the reduction once first: without this line the first trial of each
# process came out intact on the H200 (10 of 20), probably because loading the
# kernel at its first launch (CUDA's lazy loading) held the host until the queued
# sleep ended; with it every buggy trial faulted (20 of 20).
torch.ones(1 << 20, device="cuda").sum().item()
for _ in range(int(sys.argv[2])):
    try:
        worker = Worker()
        pool = worker.allocator.pool
        pool.fill_(1.0)
        torch.cuda.synchronize()
        torch.cuda._sleep(20_000_000)  # the step loop's last kernels, still queued
        total = pool.sum()  # a step kernel reading the pool
        worker.sleep()
        torch.cuda.synchronize()
        print("intact" if total.item() == pool.numel() else "corrupted", flush=True)
    except RuntimeError as error:  # CUDA error: an illegal memory access
        print("fault", str(error).splitlines()[0], flush=True)
        break
