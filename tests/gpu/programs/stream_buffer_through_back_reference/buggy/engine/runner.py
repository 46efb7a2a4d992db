"""A staging helper writes the runner's input buffer through its back reference.

Shape (buggy): `Stager` holds the runner that owns it (`self.runner`) and
copies the next batch into `runner.tokens` on its own copy stream. The step
then launches the forward, which reads `self.tokens`, on the current stream.
Both names, `self.stager.runner.tokens` and `self.tokens`, are one buffer;
nothing orders the current stream after the copy stream, so the forward may
read the tokens before the copy lands (read-after-write).
"""

import torch


class Stager:
    def __init__(self, runner: "Runner"):
        self.runner = runner
        self.copy_stream = torch.cuda.Stream()

    def stage(self, host_tokens):
        with torch.cuda.stream(self.copy_stream):
            self.runner.tokens.copy_(host_tokens, non_blocking=True)


class Runner:
    def __init__(self, max_tokens):
        self.tokens = torch.zeros(max_tokens, dtype=torch.int64, device="cuda")
        self.stager = Stager(self)

    def execute_model(self, batch):
        self.stager.stage(batch.host_tokens)
        return torch.ops.aten.clone(self.tokens)
