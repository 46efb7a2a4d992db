"""Model runner: one execute_model call per engine step.

Shape (buggy): in encoder-only mode the step writes a pinned pool slot, queues a
non_blocking copy that reads it when the stream gets there, and returns a
host-built EmptyOutput with no host wait. The host runs ahead and rewrites the
slot `depth` steps later while that copy may not have read it yet.
"""

import torch

from engine.outputs import AsyncOutput, EmptyOutput
from engine.pool import SlotPool


class Runner:
    def __init__(self, config):
        self.encoder_only = config.encoder_only
        self.pool = SlotPool(config.max_tokens, config.async_depth)
        self.ids = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.embed_table = torch.eye(config.vocab_size, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, config.vocab_size, device="cuda")
        self._pending = None

    def execute_model(self, batch):
        n = len(batch.token_ids)
        slot = self.pool.write(batch.token_ids)
        self.ids[:n].copy_(slot, non_blocking=True)
        torch.ops.aten.index_select.out(self.embed_table, 0, self.ids[:n], out=self.hidden[:n])
        if self.encoder_only:
            # BUG: nothing waits for the copy before this slot is reused.
            return EmptyOutput(batch.req_ids)
        # Generation: the engine calls sample_tokens to finish the step.
        self._pending = (batch.req_ids, n)
        return None

    def sample_tokens(self):
        req_ids, n = self._pending
        self._pending = None
        sampled = self.hidden[:n].argmax(dim=-1)
        return AsyncOutput(req_ids, sampled)
