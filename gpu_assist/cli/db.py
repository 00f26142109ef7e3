"""`gpu-assist db upgrade|current`: the request store's schema."""

from __future__ import annotations

import argparse

from ..store import Store, schema


def answer(args: argparse.Namespace) -> int:
    """`db upgrade`: what every server does at start, for a deploy step; `db current`: where the store is."""
    store = Store(upgrade=False)
    if args.db_command == "upgrade":
        print(f"{store!r}: schema at {store.upgrade()} (newest)")
    else:
        print(f"{store!r}: schema at {store.revision() or 'none'}, newest {schema.head()}")
    return 0
