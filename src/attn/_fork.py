"""The lock a fork waits for, so that a child never inherits half of attn's work.

Discovery, refresh and registration hold `LOCK`; an import attn starts outside it runs in
`importing()`. A fork takes `LOCK` and waits for those imports (a lock another thread holds
stays held in the child), as `logging` does.
"""

from __future__ import annotations

import contextlib
import logging  # noqa: F401 - first: its fork hooks must run after attn's, as attn may log
import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

FORK_WAIT = 60.0  # how long a fork waits for the imports of other threads (seconds)
LOCK = threading.RLock()
_IMPORTS: list[int] = []  # a thread, once per import attn started that it is inside
_DONE = threading.Condition(LOCK)


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Around an import attn starts outside `LOCK`: a fork waits until it is over."""
    me = threading.get_ident()
    try:  # a Ctrl-C on the way in leaves no entry behind for forks to wait on
        with LOCK:
            _IMPORTS.append(me)
        yield
    finally:
        with contextlib.suppress(ValueError):  # interrupted before the append
            _IMPORTS.remove(me)  # atomic, without LOCK: a Ctrl-C while waiting would skip it
        with LOCK:
            _DONE.notify_all()


def _before_fork() -> None:
    LOCK.acquire()
    # wait() lets the importing threads take LOCK meanwhile; it returns with LOCK held.
    _DONE.wait_for(lambda: set(_IMPORTS) <= {threading.get_ident()}, FORK_WAIT)


def _after_fork_in_child() -> None:
    global LOCK, _DONE, _IMPORTS  # noqa: PLW0603 - the child's only thread starts with a free lock
    LOCK = threading.RLock()
    _DONE, _IMPORTS = threading.Condition(LOCK), [t for t in _IMPORTS if t == threading.get_ident()]


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=lambda: LOCK.release(),  # noqa: PLW0108 - a child rebinds LOCK
        after_in_child=_after_fork_in_child,
    )
