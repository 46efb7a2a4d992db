"""SYNC002 release-point shape as a running program: analysed by syncscan, run on a GPU."""
