"""A backend module that fails at import, as one with a missing native library would."""

raise RuntimeError("attn-broken-plugin: this backend module always fails at import")
