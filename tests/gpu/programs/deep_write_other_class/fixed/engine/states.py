"""Host-side bookkeeping of the requests in the running batch."""

from .table import StagedTable


class RequestStates:
    def __init__(self, max_reqs, max_blocks, depth):
        self.block_ids = {}
        self.table = StagedTable(max_reqs, max_blocks, depth)

    def add(self, req_ids, block_ids):
        for req_id, blocks in zip(req_ids, block_ids, strict=True):
            self.block_ids[req_id] = list(blocks)
        return self.table.apply([self.block_ids[r] for r in req_ids])
