"""Host-side state of the requests in the running batch."""

from .block_table import BlockTable


class RequestState:
    def __init__(self, max_reqs, max_blocks):
        self.rows = {}
        self.block_table = BlockTable(max_reqs, max_blocks)

    def stage(self, batch):
        for row, (req_id, blocks) in enumerate(zip(batch.req_ids, batch.block_ids, strict=True)):
            self.rows[req_id] = row
            self.block_table.add_row(row, blocks)
        self.block_table.copy_to_device(len(batch.req_ids))

    def finish_step(self, batch):
        # Requests whose next token starts a new block get it reserved now.
        for req_id, block in batch.new_blocks.items():
            self.block_table.append_block(self.rows[req_id], block)
