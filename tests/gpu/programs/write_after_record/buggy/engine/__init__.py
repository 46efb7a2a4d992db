"""SYNC003 write-after-record shape as a running program: analysed by syncscan, run on a GPU."""
