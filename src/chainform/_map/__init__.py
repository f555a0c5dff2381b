"""The machinery behind `chainform.map`: input readers, the rate gate, the worker pool, the JSONL sink."""
