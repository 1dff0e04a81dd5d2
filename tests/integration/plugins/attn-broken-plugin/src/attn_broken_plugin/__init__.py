"""attn test plugin whose backend module fails at import."""
