"""SYNC001 deep-write shape as a running program: analysed by syncscan, run on a GPU."""
