"""Model runner that reads last step's sequence lengths back on the host.

Shape (buggy): the forward stream writes `seq_lens`; the next step copies them
to the host with `.cpu()`, which runs on the current stream and makes the host
wait for that stream only. The forward stream waits for the current one before
it starts, never the reverse, so the copy may read the lengths before the last
step's write lands (read-after-write across streams).
"""

import torch


class Runner:
    def __init__(self, max_reqs: int):
        self.seq_lens = torch.zeros(max_reqs, dtype=torch.int64, device="cuda")
        self.forward_stream = torch.cuda.Stream()

    def execute_model(self, batch):
        lens = self.seq_lens.cpu()
        self.forward_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.forward_stream):
            new_lens = torch.ops.aten.add(batch.input_ids, 1)
            self.seq_lens[batch.indices] = new_lens
        return lens
