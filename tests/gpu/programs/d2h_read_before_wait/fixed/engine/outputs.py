"""Step results handed back to the engine."""


class StepOutput:
    """Built on the host; resolving it waits for nothing."""

    def __init__(self, req_ids, prev_tokens):
        self.req_ids = list(req_ids)
        self.prev_tokens = prev_tokens
