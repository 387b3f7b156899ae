"""BLAKE3 (hash mode, 32-byte output) in pure Python, for ``lora_name_to_id``.

Dynamo derives a LoRA adapter's integer id from the BLAKE3 hash of its
name. BLAKE3 is not in ``hashlib`` and the wheel has no dependencies, so the
function is written out here from the BLAKE3 specification. Its inputs are
adapter names (tens of bytes), where a few tens of microseconds do not
matter; this is not meant for bulk data. Tested against the specification's
values and, in the differential tests, against Dynamo's own function.
"""

from __future__ import annotations

from typing import List, Sequence

_MASK = 0xFFFFFFFF
# The initialization vector (SHA-256's), also the key in hash mode.
_IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
_PERMUTATION = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)
_CHUNK_START = 1
_CHUNK_END = 2
_PARENT = 4
_ROOT = 8
_BLOCK_LEN = 64
_CHUNK_LEN = 1024


def _g(s: List[int], a: int, b: int, c: int, d: int, x: int, y: int) -> None:
    s[a] = (s[a] + s[b] + x) & _MASK
    t = s[d] ^ s[a]
    s[d] = ((t >> 16) | (t << 16)) & _MASK
    s[c] = (s[c] + s[d]) & _MASK
    t = s[b] ^ s[c]
    s[b] = ((t >> 12) | (t << 20)) & _MASK
    s[a] = (s[a] + s[b] + y) & _MASK
    t = s[d] ^ s[a]
    s[d] = ((t >> 8) | (t << 24)) & _MASK
    s[c] = (s[c] + s[d]) & _MASK
    t = s[b] ^ s[c]
    s[b] = ((t >> 7) | (t << 25)) & _MASK


def _compress(cv: Sequence[int], m: Sequence[int], counter: int, block_len: int, flags: int) -> List[int]:
    """The compression function: 16 output words (the first 8 chain)."""
    s = list(cv) + list(_IV[:4]) + [counter & _MASK, (counter >> 32) & _MASK, block_len, flags]
    m = list(m)
    for r in range(7):
        _g(s, 0, 4, 8, 12, m[0], m[1])
        _g(s, 1, 5, 9, 13, m[2], m[3])
        _g(s, 2, 6, 10, 14, m[4], m[5])
        _g(s, 3, 7, 11, 15, m[6], m[7])
        _g(s, 0, 5, 10, 15, m[8], m[9])
        _g(s, 1, 6, 11, 12, m[10], m[11])
        _g(s, 2, 7, 8, 13, m[12], m[13])
        _g(s, 3, 4, 9, 14, m[14], m[15])
        if r < 6:
            m = [m[i] for i in _PERMUTATION]
    for i in range(8):
        s[i] ^= s[i + 8]
        s[i + 8] ^= cv[i]
    return s


def _words(block: bytes) -> List[int]:
    """A block of up to 64 bytes as 16 little-endian words, zero-padded."""
    padded = block + bytes(_BLOCK_LEN - len(block))
    return [int.from_bytes(padded[i : i + 4], "little") for i in range(0, _BLOCK_LEN, 4)]


class _Output:
    """A node's last compression, before it is known whether it is the root."""

    __slots__ = ("cv", "words", "counter", "block_len", "flags")

    def __init__(self, cv: Sequence[int], words: List[int], counter: int, block_len: int, flags: int) -> None:
        self.cv, self.words, self.counter, self.block_len, self.flags = cv, words, counter, block_len, flags

    def chaining_value(self) -> List[int]:
        return _compress(self.cv, self.words, self.counter, self.block_len, self.flags)[:8]

    def root_bytes(self) -> bytes:
        out = _compress(self.cv, self.words, 0, self.block_len, self.flags | _ROOT)[:8]
        return b"".join(w.to_bytes(4, "little") for w in out)


def _chunk_output(chunk: bytes, counter: int) -> _Output:
    """Compress all but the last block of one chunk (at most 1024 bytes)."""
    cv: Sequence[int] = _IV
    blocks = [chunk[i : i + _BLOCK_LEN] for i in range(0, len(chunk), _BLOCK_LEN)] or [b""]
    flags = _CHUNK_START
    for block in blocks[:-1]:
        cv = _compress(cv, _words(block), counter, _BLOCK_LEN, flags)[:8]
        flags = 0
    last = blocks[-1]
    return _Output(cv, _words(last), counter, len(last), flags | _CHUNK_END)


def _parent_output(left: List[int], right: List[int]) -> _Output:
    return _Output(_IV, left + right, 0, _BLOCK_LEN, _PARENT)


def blake3(data: bytes) -> bytes:
    """The 32-byte BLAKE3 hash of `data`."""
    chunks = [data[i : i + _CHUNK_LEN] for i in range(0, len(data), _CHUNK_LEN)] or [b""]
    # Every chunk but the last goes onto a stack of subtree chaining values,
    # merged as soon as two subtrees of the same size are complete (the
    # left-full binary tree of the specification).
    stack: List[List[int]] = []
    for counter, chunk in enumerate(chunks[:-1]):
        cv = _chunk_output(chunk, counter).chaining_value()
        total = counter + 1
        while total & 1 == 0:
            cv = _parent_output(stack.pop(), cv).chaining_value()
            total >>= 1
        stack.append(cv)
    output = _chunk_output(chunks[-1], len(chunks) - 1)
    while stack:
        output = _parent_output(stack.pop(), output.chaining_value())
    return output.root_bytes()
