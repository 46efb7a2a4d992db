from syncscan.cli import entry

entry()
