"""Model runner: one execute_model call per engine step.

Shape (fixed, the fixture's reference remedy): a reuse event, synchronized
before the pool write and recorded before the encoder-only return, keeps the
host from rewriting a slot whose copy has not run.
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
        self.encoder_only_reuse_event = torch.cuda.Event() if self.encoder_only else None

    def execute_model(self, batch):
        n = len(batch.token_ids)
        if self.encoder_only_reuse_event is not None:
            self.encoder_only_reuse_event.synchronize()
        slot = self.pool.write(batch.token_ids)
        self.ids[:n].copy_(slot, non_blocking=True)
        torch.ops.aten.index_select.out(self.embed_table, 0, self.ids[:n], out=self.hidden[:n])
        if self.encoder_only:
            if self.encoder_only_reuse_event is not None:
                self.encoder_only_reuse_event.record()
            return EmptyOutput(batch.req_ids)
        # Generation: the engine calls sample_tokens to finish the step.
        self._pending = (batch.req_ids, n)
        return None

    def sample_tokens(self):
        req_ids, n = self._pending
        self._pending = None
        sampled = self.hidden[:n].argmax(dim=-1)
        return AsyncOutput(req_ids, sampled)
