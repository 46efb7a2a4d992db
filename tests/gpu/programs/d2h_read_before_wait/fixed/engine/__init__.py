"""SYNC003 D2H-read shape as a running program: analysed by syncscan, run on a GPU."""
