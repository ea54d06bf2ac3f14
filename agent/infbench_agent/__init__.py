"""Inference Bench remote agent: standard library only at import time."""
