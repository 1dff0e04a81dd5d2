"""Example attn plugin adding and replacing attention backends.

attn finds the backends through the entry points in ``pyproject.toml``; it
imports :mod:`attn_example_plugin.backends` only when a backend's class is
asked for, so keep this package's import cheap.
"""
