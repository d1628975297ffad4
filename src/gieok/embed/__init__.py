"""Embedding providers. `make_embedder(settings)` picks one by `GIEOK_EMBEDDER`."""
