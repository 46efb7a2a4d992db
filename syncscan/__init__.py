"""syncscan: static analysis of host/device synchronization in GPU step loops."""

__version__ = "0.1.0"
