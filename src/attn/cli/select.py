"""``attn select [REGISTRY] [--set KEY=VALUE ...] [--backend NAME] [--json]``: choose, say why."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from attn import _version

from ._common import UsageError, plugin_output_to, selected_registries

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO

#: How many lists and objects a ``--set`` value may nest (``capability=[9,0]`` nests 1).
MAX_DEPTH = 100


def _depth(value: object) -> int:
    """How many lists and objects *value* (parsed JSON) nests (``[]`` is 1)."""
    if isinstance(value, dict):
        value = list(value.values())
    return 1 + max(map(_depth, value), default=0) if isinstance(value, list) else 0


def parse_settings(pairs: Sequence[str], prog: str) -> dict[str, object]:
    """``KEY=VALUE`` pairs as settings, VALUE as JSON when it is JSON; a later KEY wins.

    Raises:
        UsageError: a pair has no ``=``, its KEY is not an identifier, or its
            VALUE is JSON nested more than `MAX_DEPTH` deep.
    """
    settings: dict[str, object] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key.isidentifier():
            msg = f"--set expects KEY=VALUE with KEY an identifier, got {pair!r}"
            raise UsageError(msg, prog)
        try:
            value = json.loads(text)
            deep = _depth(value) > MAX_DEPTH
        except RecursionError:  # nested too deeply for the parser, or for _depth
            deep = True
        except ValueError:
            value, deep = text, False
        if deep:
            msg = f"--set {key}: the value is JSON nested more than {MAX_DEPTH} deep"
            raise UsageError(msg, prog)
        settings[key] = value
    return settings


def run_select(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Choose the backend of the registry *args* names; 0 when one is chosen, 1 when none is."""
    from attn.registry.errors import SelectionError  # noqa: PLC0415
    from attn.registry.selection import Candidate  # noqa: PLC0415
    from attn.registry.selection import select as choose  # noqa: PLC0415

    settings = parse_settings(args.settings, args.prog)
    registries = selected_registries(args, args.registry)
    if len(registries) != 1:
        names = ", ".join(f"{r.__name__} ({r.group})" for r in registries)
        raise UsageError(f"select needs one registry; name one of: {names}", args.prog)
    (registry,) = registries
    try:
        with plugin_output_to(err):
            selection = choose(registry, args.backend, **settings)
    except SelectionError as exc:
        tried = tuple(row for row in exc.tried if isinstance(row, Candidate))
        chosen, explicit, text = None, exc.explicit, str(exc)
    else:
        chosen, explicit, tried = selection.name, selection.explicit, selection.tried
        text = str(selection)
    if args.json:
        rows = [
            {
                "name": row.name,
                "origin": row.origin,
                "distribution": row.distribution,
                "distribution_version": row.version,
                "path": row.path,
                "verdict": row.verdict,
                "fallback": row.fallback,
                "reasons": [{"code": r.code, "message": r.message} for r in row.reasons],
            }
            for row in tried
        ]
        payload = {
            "attn_version": _version(),
            "registry": registry.__name__,
            "settings": settings,
            "explicit": explicit,
            "chosen": chosen,
            "tried": rows,
        }
        text = json.dumps(payload, indent=2, default=str)
    out.write(f"{text}\n")
    return 0 if chosen is not None else 1
