"""The stand-in's nvidia backend module; attn must never import it."""

raise RuntimeError("attn imported a triton.backends module")
