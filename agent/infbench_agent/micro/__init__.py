"""The micro phase and the collective command: GEMMs, all-reduce and launch overhead on the GPUs (PyTorch imported
inside the functions that need it)."""
