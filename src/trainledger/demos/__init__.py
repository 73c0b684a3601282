"""Runnable demonstrations of trainledger, called by ``trainledger demo`` and ``examples/``."""
