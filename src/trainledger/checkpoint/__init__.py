"""Checkpoints: safetensors container, atomic writes, retention, async writer, crypto, load."""
