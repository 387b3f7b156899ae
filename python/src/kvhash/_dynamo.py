"""Dynamo's hashing functions (``dynamo.llm``'s names, arguments and
errors) over kvhash's own hashing functions.

Dynamo's functions take Python objects the way its Rust bindings convert
them; this layer accepts what they accept and refuses what they refuse, with
compatible exception types (each one a subclass of what Dynamo raises, see
docs/api/python.md, "Differences from Dynamo"), then calls kvhash's own
functions:

- ``kv_block_size`` is an unsigned integer: a ``bool`` is an int (``True`` is
  1), a negative size is ``OverflowError``, ``0`` is
  ``ValueError("kv_block_size cannot be 0")``;
- ``tokens`` may be any integer buffer (a numpy int64 array from a
  tokenizer, ``bytes``): Dynamo reads it item by item;
- ``block_mm_infos`` is read whole and checked whole (``mm_objects``, and in
  each object ``mm_hash`` and ``offsets``, are required), then only its
  first entries, one per block, are used: Dynamo's request helpers pass one
  entry per started block, ``ceil(len(tokens) / block_size)``, and Dynamo
  ignores what is beyond the full blocks.
"""

from __future__ import annotations

import operator
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ._blake3 import blake3
from ._convert import check_ordered, to_name, u32_view
from ._hashing import Hashing
from ._ints import range_error, u64_list

_U64_LIMIT = 1 << 64
# Block sizes the library takes (int64). Anything larger holds no full block
# of any prompt that fits in memory, which is what Dynamo answers.
_I64_MAX = (1 << 63) - 1
# Integer formats a buffer of tokens may have (struct module codes).
_INT_CODES = frozenset("bBhHiIlLqQnN")
_NATIVE_PREFIXES = frozenset("@=<>!")


def _u64_item(value: Any, what: str) -> int:
    """An unsigned 64-bit integer read as Dynamo reads one: an int (a bool
    included) or an object with ``__index__``."""
    if isinstance(value, int):
        v = int.__index__(value)  # the value, whatever a subclass overrides
    elif hasattr(type(value), "__index__"):
        v = operator.index(value)
    else:
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not 0 <= v < _U64_LIMIT:
        raise range_error(what, v, 64)
    return v


def _sequence(value: Any, what: str) -> List[Any]:
    """An ordered collection as a list (TypeError for anything else)."""
    check_ordered(value, what)
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError("%s must be a list, not %s" % (what, type(value).__name__))
    return list(value)


def _required(info: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in info:
        raise ValueError("%s has no %r (Dynamo requires it)" % (what, key))
    return info[key]


def _offsets(value: Any, what: str) -> None:
    """Checks Dynamo's ``offsets``: a list of ``[start, end]`` pairs of
    unsigned ints. kvhash's hash does not use them (the media hash does)."""
    for k, pair in enumerate(_sequence(value, what)):
        items = _sequence(pair, "%s[%d]" % (what, k))
        if len(items) != 2:
            raise ValueError("%s[%d] must be a [start, end] pair, got %d items" % (what, k, len(items)))
        for item in items:
            _u64_item(item, "%s[%d]" % (what, k))


def mm_from_block_infos(block_mm_infos: Any) -> Optional[List[Optional[List[int]]]]:
    """Dynamo's ``block_mm_infos`` (one entry a block: None or
    ``{"mm_objects": [{"mm_hash": int, "offsets": [[start, end], ...]}, ...]}``)
    -> per-block hash lists, every entry checked."""
    if block_mm_infos is None:
        return None
    result: List[Optional[List[int]]] = []
    for i, info in enumerate(_sequence(block_mm_infos, "block_mm_infos")):
        if info is None:
            result.append(None)
            continue
        what = "block_mm_infos[%d]" % i
        if not isinstance(info, Mapping):
            raise TypeError("%s must be None or a dict, not %s" % (what, type(info).__name__))
        objects = _sequence(_required(info, "mm_objects", what), what + "['mm_objects']")
        hashes = []
        for j, obj in enumerate(objects):
            where = "%s['mm_objects'][%d]" % (what, j)
            if not isinstance(obj, Mapping):
                raise TypeError("%s must be a dict, not %s" % (where, type(obj).__name__))
            hashes.append(_u64_item(_required(obj, "mm_hash", where), where + "['mm_hash']"))
            _offsets(_required(obj, "offsets", where), where + "['offsets']")
        result.append(hashes)
    return result


def dynamo_block_size(value: Any) -> int:
    """``kv_block_size`` as Dynamo reads it (an unsigned int), as the int64
    the library takes."""
    if not hasattr(type(value), "__index__"):
        raise TypeError("kv_block_size must be an int, not %s" % type(value).__name__)
    size = operator.index(value)
    if size < 0:
        raise OverflowError("kv_block_size must not be negative, got %d" % size)
    if size >= _U64_LIMIT:
        raise OverflowError("kv_block_size must be below 2**64, got an int of %d bits" % size.bit_length())
    if size == 0:
        raise ValueError("kv_block_size cannot be 0")
    return min(size, _I64_MAX)


def dynamo_tokens(tokens: Any) -> Any:
    """Tokens as kvhash's functions take them: an integer buffer that is not
    u32 (numpy int64, ``bytes``) becomes a list of its values (range-checked
    when packed), as Dynamo reads such buffers item by item."""
    if type(tokens) is list or type(tokens) is tuple:
        return tokens
    try:
        mv = memoryview(tokens)
    except TypeError:
        return tokens  # an iterable: kvhash's conversion checks it
    with mv:
        code = mv.format[1:] if mv.format[:1] in _NATIVE_PREFIXES else mv.format
        if mv.ndim == 1 and code in _INT_CODES and not (mv.itemsize == 4 and code in "IL"):
            return mv.tolist()
    return tokens


def dynamo_is_eagle(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise TypeError("is_eagle must be a bool or None, not %s" % type(value).__name__)
    return value


def lora_name_to_id(lora_name: str) -> int:
    """Dynamo's ``lora_name_to_id``: a LoRA adapter's integer id, from the
    BLAKE3 hash of its UTF-8 name: the hash's first 8 bytes read big-endian,
    their low 31 bits, 1 instead of 0. Always in ``[1, 2**31 - 1]``."""
    if not isinstance(lora_name, str):
        raise TypeError("lora_name must be a str, not %s" % type(lora_name).__name__)
    digest = blake3(lora_name.encode("utf-8"))
    return (int.from_bytes(digest[:8], "big") & 0x7FFFFFFF) or 1


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
        # Checked in Dynamo's argument order, so the first bad one is reported.
        with u32_view(dynamo_tokens(tokens), "tokens") as tok:
            size = dynamo_block_size(kv_block_size)
            mm = mm_from_block_infos(block_mm_infos)
            to_name(lora_name, "lora_name")
            eagle = dynamo_is_eagle(is_eagle)
            to_name(cache_namespace, "cache_namespace")
            if mm is not None:
                # Entries past the last full block describe tokens that are
                # not hashed: Dynamo ignores them.
                del mm[self.hashing.block_count(len(tok), size, is_eagle=eagle) :]
            out = self.hashing.block_hashes(
                tok, size, lora_name=lora_name, cache_namespace=cache_namespace, is_eagle=eagle, mm_hashes=mm
            )
        return u64_list(out)

    def compute_seq_hash_for_block(self, block_hashes: List[int]) -> List[int]:
        """Dynamo's ``compute_seq_hash_for_block``: the sequence hashes as a list."""
        return u64_list(self.hashing.sequence_hashes(block_hashes))
