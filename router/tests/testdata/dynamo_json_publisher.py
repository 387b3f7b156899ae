"""A publisher that hashes for itself: Dynamo-JSON KV events over HTTP.

It computes each block's local hash with Dynamo's own function
(``dynamo.llm.compute_block_hash_for_seq``, from Dynamo's wheel), builds
Dynamo's ``KvCacheEvent`` JSON, and posts the events to kvrouter's
``POST /v1/events?worker_id=N``, as a custom engine would. No adapter code:
only Dynamo's API and kvrouter's HTTP endpoint.

Usage: dynamo_json_publisher.py URL WORKER_ID BLOCK_SIZE FIRST_TOKEN NUM_TOKENS [LORA_NAME]
Prints kvrouter's answer (JSON) on stdout. Sends KVROUTER_ADMIN_TOKEN, when
set, as its bearer token (events change kvrouter's state).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any

from dynamo.llm import compute_block_hash_for_seq


def events(tokens: list[int], block_size: int, lora_name: str | None) -> list[dict[str, Any]]:
    if lora_name is None:
        local = compute_block_hash_for_seq(tokens, block_size)
    else:
        local = compute_block_hash_for_seq(tokens, block_size, lora_name=lora_name)
    # The engine's own block ids: any stable names; here 5000 + i.
    blocks = [{"block_hash": 5000 + i, "tokens_hash": h} for i, h in enumerate(local)]
    half = len(blocks) // 2
    return [
        {"event_id": 1, "data": {"stored": {"parent_hash": None, "blocks": blocks[:half]}}, "dp_rank": 0},
        {
            "event_id": 2,
            "data": {"stored": {"parent_hash": blocks[half - 1]["block_hash"], "blocks": blocks[half:]}},
            "dp_rank": 0,
        },
    ]


def main(argv: list[str]) -> int:
    url, worker, block_size, first, n = argv[1], int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5])
    lora = argv[6] if len(argv) > 6 else None
    body = json.dumps(events(list(range(first, first + n)), block_size, lora)).encode()
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("KVROUTER_ADMIN_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"{url}/v1/events?worker_id={worker}", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        sys.stdout.write(resp.read().decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
