"""The machinery behind `chainform.map`: input readers, the rate gate, the worker pool, the JSONL sink."""

MAX_WAIT = 25 * 3600.0
"""Seconds a batch is polled (`--batch-wait`, `batch_wait=`) before its rows fail: the providers'
completion window is 24 hours. Here, not in `_batch.py`, so that the CLI's options read it without
loading the map (`chainform --help` loads no asyncio)."""
