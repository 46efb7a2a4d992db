"""SYNC001 slot-pool shape as a running program: analysed by syncscan, run on a GPU."""
