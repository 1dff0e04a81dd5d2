"""The stand-in's amd backend module; attn must never import it."""

raise RuntimeError("attn imported a triton.backends module")
