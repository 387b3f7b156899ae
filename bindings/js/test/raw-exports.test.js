// Out-of-range pointers and lengths passed straight to the raw exports
// must be error statuses, never traps, and the instance must keep
// working after each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Status } from '../index.js';
import { PUBLIC, freshModule } from './helpers.js';

const kv = freshModule();
const x = kv.exports;

function stillWorks() {
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, PUBLIC.blockSize), BigUint64Array.from(PUBLIC.blocks));
  assert.deepEqual(kv.sequenceHashes(PUBLIC.blocks), BigUint64Array.from(PUBLIC.sequence));
}

/** A live allocation of n bytes for the duration of f. */
function withAlloc(n, f) {
  const p = x.kvhash_alloc(n) >>> 0;
  assert.notEqual(p, 0);
  try {
    return f(p);
  } finally {
    x.kvhash_free(p);
  }
}

function lastError() {
  return withAlloc(512, (p) => {
    const n = x.kvhash_last_error(p, 512);
    return Buffer.from(x.memory.buffer, p, Math.min(n, 511)).toString('utf8');
  });
}

const memEnd = () => x.memory.buffer.byteLength;

// block_hashes(tokens, n, bs, lora, loraLen, ns, nsLen, eagle, mm, counts, mmBlocks, out, cap, outLen)
const blockCases = [
  ['tokens past the end of memory', (a) => [0xfffffff0, 4, 4n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.OUT_OF_BOUNDS],
  ['tokens at the last bytes of memory', (a) => [memEnd() - 4, 4, 4n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.OUT_OF_BOUNDS],
  ['tokens in memory but in no allocation', () => [8, 4, 4n, 0, 0, 0, 0, 0, 0, 0, 0, 16, 4, 24], Status.OUT_OF_BOUNDS],
  ['tokens length past the allocation', (a) => [a.tok, 1000, 4n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.OUT_OF_BOUNDS],
  ['tokens length 2^32-1', (a) => [a.tok, 0xffffffff, 4n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.OUT_OF_BOUNDS],
  ['NULL tokens with a length', (a) => [0, 4, 4n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.INVALID_ARGUMENT],
  ['NULL out_len', (a) => [a.tok, 4, 4n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, 0], Status.INVALID_ARGUMENT],
  ['out past the end of memory', (a) => [a.tok, 4, 4n, 0, 0, 0, 0, 0, 0, 0, 0, 0xfffffff8, 4, a.len], Status.OUT_OF_BOUNDS],
  ['out capacity past the allocation', (a) => [a.tok, 4, 1n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 100000, a.len], Status.OUT_OF_BOUNDS],
  ['lora name pointer bogus', (a) => [a.tok, 4, 4n, 0xfffffff0, 100, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.OUT_OF_BOUNDS],
  ['mm counts pointer bogus', (a) => [a.tok, 4, 4n, 0, 0, 0, 0, 0, 0, 0xfffffff0, 1, a.out, 4, a.len], Status.OUT_OF_BOUNDS],
  ['block size 0', (a) => [a.tok, 4, 0n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.INVALID_ARGUMENT],
  ['block size -1', (a) => [a.tok, 4, -1n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 4, a.len], Status.INVALID_ARGUMENT],
  ['out too small', (a) => [a.tok, 4, 1n, 0, 0, 0, 0, 0, 0, 0, 0, a.out, 1, a.len], Status.BUFFER_TOO_SMALL],
];

for (const [name, args, want] of blockCases) {
  test(`kvhash_block_hashes: ${name}`, () => {
    withAlloc(16, (tok) => withAlloc(32, (out) => withAlloc(8, (len) => {
      new Uint32Array(x.memory.buffer, tok, 4).set([1, 2, 3, 4]);
      const status = x.kvhash_block_hashes(...args({ tok, out, len }));
      assert.equal(status, want, `status ${status}: ${lastError()}`);
      assert.notEqual(lastError(), '');
    })));
    stillWorks();
  });
}

test('kvhash_block_hashes: out too small reports the count needed', () => {
  withAlloc(16, (tok) => withAlloc(8, (out) => withAlloc(8, (len) => {
    new Uint32Array(x.memory.buffer, tok, 4).set([1, 2, 3, 4]);
    assert.equal(x.kvhash_block_hashes(tok, 4, 1n, 0, 0, 0, 0, 0, 0, 0, 0, out, 1, len), Status.BUFFER_TOO_SMALL);
    assert.equal(new Uint32Array(x.memory.buffer, len, 1)[0], 4);
  })));
  stillWorks();
});

const otherCases = [
  ['kvhash_sequence_hashes input bogus', () => x.kvhash_sequence_hashes(0xfffffff0, 2, 0, 0, 8), (r) => r < 0],
  ['kvhash_sequence_hashes NULL out_len', () => withAlloc(16, (p) => x.kvhash_sequence_hashes(p, 2, p, 2, 0)), (r) => r === Status.INVALID_ARGUMENT],
  ['kvhash_block_count bogus out', () => x.kvhash_block_count(12, 4n, 0, 0xfffffff0), (r) => r === Status.OUT_OF_BOUNDS],
  ['kvhash_last_error bogus buffer', () => x.kvhash_last_error(0xfffffff0, 64), (r) => r === Status.OUT_OF_BOUNDS],
  ['kvhash_version bogus buffer', () => x.kvhash_version(8, 64), (r) => r === Status.OUT_OF_BOUNDS],
  ['kvhash_seed bogus name', () => x.kvhash_seed(0xfffffff0, 10, 0, 0), () => true],
  ['kvhash_free of a pointer never allocated', () => x.kvhash_free(0xfffffff0), () => true],
  ['kvhash_free twice', () => { const p = x.kvhash_alloc(8); x.kvhash_free(p); return x.kvhash_free(p); }, () => true],
  ['kvhash_alloc of 4 GiB', () => x.kvhash_alloc(0xffffffff), (r) => r === 0],
  ['kvhash_index_free of an unknown handle', () => x.kvhash_index_free(987654321n), (r) => r === Status.UNKNOWN_HANDLE],
  ['kvhash_index_remove_worker of handle 0', () => x.kvhash_index_remove_worker(0n, 1n), (r) => r === Status.UNKNOWN_HANDLE],
  ['kvhash_index_find_matches of an unknown handle', () => withAlloc(64, (p) => x.kvhash_index_find_matches(424242n, 0, 0, 0, p, p, p, p, 0, p)), (r) => r === Status.UNKNOWN_HANDLE],
  ['kvhash_index_new with a bad mode', () => withAlloc(8, (p) => x.kvhash_index_new(7, p)), (r) => r === Status.INVALID_ARGUMENT],
  ['kvhash_index_new with a bogus out_handle', () => x.kvhash_index_new(0, 0xfffffff0), (r) => r === Status.OUT_OF_BOUNDS],
];

for (const [name, call, ok] of otherCases) {
  test(name, () => {
    const r = call();
    assert.ok(ok(r), `${name}: got ${r}`);
    stillWorks();
  });
}
