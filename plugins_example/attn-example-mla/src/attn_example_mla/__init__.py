"""Example attn plugin adding and replacing MLA prefill backends.

attn finds the backends through the entry points in ``pyproject.toml``; it
imports :mod:`attn_example_mla.backends` only when a backend's class is asked
for, so keep this package's import cheap.
"""
