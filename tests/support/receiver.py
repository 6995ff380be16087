"""The tests' webhook receiver: the development package's (kassa_dev.receiver), which the
benchmarks and the chaos harness use too."""

from kassa_dev.receiver import Hit, Receiver, Server

__all__ = ["Hit", "Receiver", "Server"]
