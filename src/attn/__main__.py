"""``python -m attn``: the same as the ``attn`` command."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
