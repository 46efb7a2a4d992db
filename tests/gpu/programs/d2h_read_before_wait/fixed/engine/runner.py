"""Model runner that reads pinned sampled tokens after their copy landed.

Shape (fixed, the fixture's remedy): _previous_tokens() synchronizes
`sampled_event`, recorded after the previous step's D2H copy, before it reads
the pinned tokens.
"""

import torch

from engine.outputs import StepOutput


class Runner:
    def __init__(self, config):
        self.embed_table = torch.eye(config.vocab_size, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, config.vocab_size, device="cuda")
        self.sampled_cpu = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        self.sampled_event = torch.cuda.Event()
        self.prev_n = 0

    def _previous_tokens(self):
        self.sampled_event.synchronize()
        tokens = self.sampled_cpu[: self.prev_n].tolist()
        return tokens

    def execute_model(self, batch):
        n = len(batch.req_ids)
        prev_tokens = self._previous_tokens()
        torch.ops.aten.index_select.out(self.embed_table, 0, batch.ids, out=self.hidden[:n])
        sampled = self.hidden[:n].argmax(dim=-1)
        # The DMA writes the pinned tokens when the stream reaches it, not now.
        self.sampled_cpu[:n].copy_(sampled, non_blocking=True)
        self.sampled_event.record()
        self.prev_n = n
        return StepOutput(batch.req_ids, prev_tokens)
