// Memory (issue 10, items 1 and 11): trees are cheap, a full module
// answers KVHASH_ERR_NO_MEMORY and stays usable, and hashing sizes its
// output by blocks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RadixTree, loadSync } from '../index.js';
import { PUBLIC, modulePath } from './helpers.js';

const publicBlocks = BigUint64Array.from(PUBLIC.blocks);

test('40,000 trees dropped without free() leave the module hashing', () => {
  // A tree per request, never freed, with no turn of the event loop for
  // the FinalizationRegistry: each used to take a 229 KB node page and
  // the instance died at about 18,000.
  const kv = loadSync({ wasmPath: modulePath() });
  for (let i = 0; i < 40_000; i++) new RadixTree({ module: kv, mode: 'warn' });
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4), publicBlocks);
  const t = new RadixTree({ module: kv, mode: 'warn' });
  assert.deepEqual(t.stats().nodes, 0);
  t.free();
});

function storedEvent(eventId, n) {
  const blocks = Array.from({ length: n }, (_, i) => `{"block_hash":${i + 1},"tokens_hash":${i + 1}}`).join(',');
  return `{"event_id":${eventId},"data":{"stored":{"parent_hash":null,"blocks":[${blocks}]}}}`;
}

test('a full module throws KVHASH_ERR_NO_MEMORY and keeps working', () => {
  const kv = loadSync({ wasmPath: modulePath(), memoryLimit: 64 * 2 ** 20 });
  const event = storedEvent(1, 20_000);
  const t = new RadixTree({ module: kv, mode: 'warn' });
  let workers = 0;
  let full;
  for (let w = 1; w <= 1000 && !full; w++) {
    try {
      t.applyEvent(w, event);
      workers++;
    } catch (err) {
      full = err;
    }
  }
  assert.ok(full, 'a 64 MiB module never filled');
  assert.equal(full.code, 'KVHASH_ERR_NO_MEMORY', String(full));
  assert.match(full.message, /KVHASH_WASM_MEMORY_LIMIT/);
  assert.ok(workers > 0);
  // Still hashing, the tree intact, new trees refused with the same code.
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4), publicBlocks);
  assert.equal(t.workers().length, workers);
  assert.throws(() => kv.blockHashes(new Uint32Array(8 << 20), 1), (err) => err.code === 'KVHASH_ERR_NO_MEMORY');
  // Freeing makes room again.
  t.free();
  const again = new RadixTree({ module: kv, mode: 'warn' });
  again.applyEvent(1, event);
  assert.equal(again.stats().nodes, 20_000);
  again.free();
});

test('a 100M-token prompt is sized by blocks, not tokens', () => {
  // 400 MB of tokens and 50 MB of hashes fit; 800 MB of output sized by
  // tokens did not, and came back as KVHASH_ERR_INTERNAL.
  const kv = loadSync({ wasmPath: modulePath() });
  const blocks = kv.blockHashes(new Uint32Array(100_000_000), 16);
  assert.equal(blocks.length, 100_000_000 / 16);
  assert.equal(blocks[0], blocks[blocks.length - 1]);
});

test('memoryLimit is checked', () => {
  assert.throws(() => loadSync({ wasmPath: modulePath(), memoryLimit: -1 }), /memoryLimit must be a positive integer/);
  assert.throws(() => loadSync({ wasmPath: modulePath(), memoryLimt: 1 }), /unknown key 'memoryLimt'/);
});

test('a large call after a smaller one fits when only the exact size does', () => {
  // 128 MiB: 80 MiB of heap. 10M tokens (40 MB plus 5 MB of hashes), then
  // 12M tokens (48 MB plus twice 6 MB): doubling the first scratch buffer
  // would ask for 90 MB, more than the module may hold; the exact size fits.
  const kv = loadSync({ wasmPath: modulePath(), memoryLimit: 128 * 2 ** 20 });
  assert.equal(kv.blockHashes(new Uint32Array(10_000_000), 16).length, 625_000);
  const both = kv.blockAndSequenceHashes(new Uint32Array(12_000_000), 16);
  assert.equal(both.blockHashes.length, 750_000);
  assert.equal(both.sequenceHashes.length, 750_000);
});
