"""Dynamo KvCacheEvent JSON builders shared by the tree tests."""

from __future__ import annotations

import json
from typing import Iterable, List, Optional, Tuple


def stored(event_id: int, blocks: Iterable[Tuple[int, int]], parent: Optional[int] = None, dp_rank: int = 0) -> bytes:
    """A stored event of (block_hash, tokens_hash) pairs under parent."""
    return json.dumps(
        {
            "event_id": event_id,
            "data": {
                "stored": {
                    "parent_hash": parent,
                    "blocks": [{"block_hash": b, "tokens_hash": t} for b, t in blocks],
                }
            },
            "dp_rank": dp_rank,
        }
    ).encode()


def removed(event_id: int, hashes: List[int], dp_rank: int = 0) -> bytes:
    """A removed event of block hashes."""
    return json.dumps({"event_id": event_id, "data": {"removed": {"block_hashes": hashes}}, "dp_rank": dp_rank}).encode()
