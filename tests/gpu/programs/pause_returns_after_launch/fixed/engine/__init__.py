"""SYNC002 pause shape as a running program: analysed by syncscan, run on a GPU."""
