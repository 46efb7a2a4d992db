"""SYNC003 shape as a running program: analysed by syncscan, run on a GPU."""
