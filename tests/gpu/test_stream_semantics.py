"""The torch pack's stream-ordering rows, observed on a CUDA device.

`wait_stream` / `Event.wait` order streams on the device and never block the
host; `s2.wait_stream(s1)` orders s2's later work after s1's earlier work only,
not the other way round. Counts over TRIALS are printed (`pytest -m gpu -s`).
"""

from __future__ import annotations

from gpu_trials import ALL, ON_DEVICE, SLEEP_CYCLES, SOME, TRIALS, N, observe, torch

pytestmark = ON_DEVICE


def test_device_waits_never_block_the_host() -> None:
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    event = torch.cuda.Event()
    busy_after_wait_event = busy_after_wait_stream = 0
    for _ in range(TRIALS):
        torch.cuda.synchronize()
        with torch.cuda.stream(s1):
            torch.cuda._sleep(SLEEP_CYCLES)
            event.record()
        event.wait(s2)
        busy_after_wait_event += not s1.query()  # the host came back while s1 runs
        s2.wait_stream(s1)
        busy_after_wait_stream += not s1.query()
        torch.cuda.synchronize()
    assert observe("Event.wait returned with s1 busy", busy_after_wait_event, ALL)
    assert observe("wait_stream returned with s1 busy", busy_after_wait_stream, ALL)


def test_wait_stream_orders_one_direction_only() -> None:
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    a = torch.zeros(N, device="cuda")
    b = torch.zeros(N, device="cuda")
    ordered = unordered_saw_old = 0
    for trial in range(1, TRIALS + 1):
        torch.cuda.synchronize()
        with torch.cuda.stream(s1):
            torch.cuda._sleep(SLEEP_CYCLES)
            a.fill_(float(trial))  # s1 writes a late
        s2.wait_stream(s1)
        with torch.cuda.stream(s2):
            seen = a.clone()  # ordered after s1's write
        with torch.cuda.stream(s2):
            torch.cuda._sleep(SLEEP_CYCLES)
            b.fill_(float(trial))  # s2 writes b late
        with torch.cuda.stream(s1):
            back = b.clone()  # s1 never waited for s2: may run before the write
        torch.cuda.synchronize()
        ordered += seen[0].item() == float(trial)
        unordered_saw_old += back[0].item() != float(trial)
    assert observe("s2 after s2.wait_stream(s1) saw s1's write", ordered, ALL)
    assert observe("s1 (no wait) read b before s2 wrote it", unordered_saw_old, SOME)
