"""Model runner whose pinned write happens three calls away.

Shape (buggy): execute_model -> RequestStates.add -> StagedTable.apply ->
SlotPool.write writes a pinned pool slot; the kernel reads it through UVA. In
encoder-only mode the step returns a host-built EmptyOutput with no wait.
"""

import torch

from engine.states import RequestStates

from .outputs import AsyncOutput, EmptyOutput


class Runner:
    def __init__(self, config):
        self.encoder_only = config.encoder_only
        self.max_blocks = config.max_blocks_per_req
        self.states: RequestStates = RequestStates(
            config.max_reqs, self.max_blocks, config.async_depth
        )
        self.first_blocks = torch.zeros(config.max_reqs, dtype=torch.int32, device="cuda")
        self.row_starts = torch.arange(config.max_reqs, device="cuda") * self.max_blocks
        self.logits = torch.zeros(config.max_reqs, config.vocab_size, device="cuda")
        self._pending = None

    def execute_model(self, batch):
        n = len(batch.req_ids)
        table_view = self.states.add(batch.req_ids, batch.block_ids)
        # The first-block kernel: each row's first block, read in place through UVA.
        starts = self.row_starts[:n]
        torch.ops.aten.index_select.out(table_view, 0, starts, out=self.first_blocks[:n])
        # (model forward elided)
        if self.encoder_only:
            # BUG: the slot written in SlotPool.write is reused with no wait.
            return EmptyOutput(batch.req_ids)
        self._pending = (batch.req_ids, n)
        return None

    def sample_tokens(self):
        req_ids, n = self._pending
        self._pending = None
        sampled = self.logits[:n].argmax(dim=-1)
        return AsyncOutput(req_ids, sampled)
