"""A template attn plugin: one CPU attention backend, ``TEMPLATE_ATTN``."""
