"""Step results handed back to the engine."""


class StepOutput:
    """Built on the host from request ids alone; resolving it waits for nothing."""

    def __init__(self, req_ids):
        self.req_ids = list(req_ids)
