"""syncscan.rules: one module per rule code, plus the data packs."""
