"""Model runner whose every prepare path waits on the input event.

Shape (fixed, wait skipped on one path): the same runner, with the decode path
calling _wait_for_inputs_consumed() before its write, like the prefill path.
"""

import torch

from engine.outputs import StepOutput


class Runner:
    def __init__(self, config):
        self.input_ids = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        self.input_ids_np = self.input_ids.numpy()
        self.input_ids_gpu = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.embed_table = torch.arange(config.vocab_size, dtype=torch.int64, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.inputs_event = torch.cuda.Event()

    def _wait_for_inputs_consumed(self):
        # Host wait: the previous step's copy of input_ids has completed.
        self.inputs_event.synchronize()

    def _prepare_prefill(self, batch):
        self._wait_for_inputs_consumed()
        start = 0
        for tokens in batch.prompt_token_ids:
            self.input_ids_np[start : start + len(tokens)] = tokens
            start += len(tokens)
        return start

    def _prepare_decode(self, batch):
        self._wait_for_inputs_consumed()
        n = len(batch.last_token_ids)
        self.input_ids_np[:n] = batch.last_token_ids
        return n

    def execute_model(self, batch):
        if batch.is_prefill:  # noqa: SIM108 (the fixture's two paths, as statements)
            n = self._prepare_prefill(batch)
        else:
            n = self._prepare_decode(batch)
        self.input_ids_gpu[:n].copy_(self.input_ids[:n], non_blocking=True)
        self.inputs_event.record()
        torch.ops.aten.index_select.out(
            self.embed_table, 0, self.input_ids_gpu[:n], out=self.hidden[:n]
        )
        return StepOutput(batch.req_ids)
