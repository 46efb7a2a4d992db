"""SYNC004 one-way-wait shape as a running program: analysed by syncscan, run on a GPU."""
