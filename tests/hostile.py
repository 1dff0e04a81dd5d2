"""Plugin module source shared by the tests: objects that cannot describe themselves.

``Loud``'s repr raises, ``Liar``'s ``__class__`` raises and ``Meta`` makes
classes whose ``__qualname__`` raises: what attn must report, not crash on,
when an entry point names one of them (the loading tests and the fault catalogue).
"""

from __future__ import annotations

SELF_HIDING = """
class Loud:
    def __repr__(self):
        raise RuntimeError("repr")


class Liar:
    @property
    def __class__(self):
        raise RuntimeError("class")


class Meta(type):
    def __getattribute__(cls, name):
        if name == "__qualname__":
            raise RuntimeError("qualname")
        return super().__getattribute__(name)
"""
