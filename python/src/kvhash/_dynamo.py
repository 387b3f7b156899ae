"""Dynamo's hashing functions (``dynamo.llm``'s names, arguments and
errors) over kvhash's own hashing functions.

Dynamo passes multimodal hashes as ``block_mm_infos`` and returns lists;
this layer translates both and keeps Dynamo's wording for a zero block size.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

from ._convert import to_int
from ._errors import InvalidArgumentError
from ._hashing import Hashing
from ._ints import u64_list


def mm_from_block_infos(block_mm_infos: Any) -> Optional[List[Optional[List[int]]]]:
    """Dynamo's ``block_mm_infos`` (one entry a block: None or
    ``{"mm_objects": [{"mm_hash": int, ...}, ...]}``) -> per-block hash lists."""
    if block_mm_infos is None:
        return None
    if isinstance(block_mm_infos, (str, bytes, Mapping)) or not isinstance(block_mm_infos, Iterable):
        raise TypeError("block_mm_infos must be a list, not %s" % type(block_mm_infos).__name__)
    result: List[Optional[List[int]]] = []
    for i, info in enumerate(block_mm_infos):
        if info is None:
            result.append(None)
            continue
        if not isinstance(info, Mapping):
            raise TypeError("block_mm_infos[%d] must be None or a dict, not %s" % (i, type(info).__name__))
        if "mm_objects" not in info:
            raise ValueError("block_mm_infos[%d] has no 'mm_objects'" % i)
        objects = info["mm_objects"]
        if objects is None:
            result.append(None)
            continue
        hashes = []
        for j, obj in enumerate(objects):
            if not isinstance(obj, Mapping):
                raise TypeError(
                    "block_mm_infos[%d]['mm_objects'][%d] must be a dict, not %s" % (i, j, type(obj).__name__)
                )
            if "mm_hash" not in obj:
                raise ValueError("block_mm_infos[%d]['mm_objects'][%d] has no 'mm_hash'" % (i, j))
            hashes.append(obj["mm_hash"])
        result.append(hashes)
    return result


class DynamoFunctions:
    """``compute_block_hash_for_seq`` and ``compute_seq_hash_for_block`` over
    one backend's hashing functions."""

    def __init__(self, hashing: Hashing) -> None:
        self.hashing = hashing

    def compute_block_hash_for_seq(
        self,
        tokens: List[int],
        kv_block_size: int,
        block_mm_infos: Optional[List[Optional[Dict[str, Any]]]] = None,
        lora_name: Optional[str] = None,
        is_eagle: Optional[bool] = None,
        cache_namespace: Optional[str] = None,
    ) -> List[int]:
        """Dynamo's ``compute_block_hash_for_seq``: the local block hashes as a list."""
        mm = mm_from_block_infos(block_mm_infos)
        try:
            out = self.hashing.block_hashes(
                tokens,
                kv_block_size,
                lora_name=lora_name,
                cache_namespace=cache_namespace,
                is_eagle=False if is_eagle is None else is_eagle,
                mm_hashes=mm,
            )
        except InvalidArgumentError as e:
            # The library rejects the zero size; Dynamo's callers expect its wording.
            if to_int(kv_block_size, "kv_block_size") == 0:
                raise ValueError("kv_block_size cannot be 0") from e
            raise
        return u64_list(out)

    def compute_seq_hash_for_block(self, block_hashes: List[int]) -> List[int]:
        """Dynamo's ``compute_seq_hash_for_block``: the sequence hashes as a list."""
        return u64_list(self.hashing.sequence_hashes(block_hashes))
