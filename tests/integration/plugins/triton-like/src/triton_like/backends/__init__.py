"""Backends of the stand-in, found through the group ``triton.backends``."""
