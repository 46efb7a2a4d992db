"""Block table staged through the pinned slot pool."""

import engine.pool as pool_mod


class StagedTable:
    def __init__(self, max_reqs, max_blocks, depth):
        self.max_blocks = max_blocks
        self.pool = pool_mod.SlotPool(max_reqs * max_blocks, depth)

    def apply(self, rows):
        """Flatten and pad the rows, then stage them in the next pool slot."""
        flat = []
        for row in rows:
            row = list(row[: self.max_blocks])
            flat.extend(row + [0] * (self.max_blocks - len(row)))
        return self.pool.write(flat)
