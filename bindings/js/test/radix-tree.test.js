// RadixTree through the module: events in, matches / dumps / stats out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KvHashError, RadixTree } from '../index.js';
import { PUBLIC, freshModule } from './helpers.js';

const kv = freshModule();
// Canonical local hashes of tokens 1..12 (block size 4), computed by the module.
const L = Array.from(kv.blockHashes(PUBLIC.tokens, PUBLIC.blockSize));

/** A stored event as Dynamo's JSON (u64 written as bare integers). */
function stored(eventId, parent, blocks, dpRank = 0) {
  const bs = blocks.map(([ext, local]) => `{"block_hash":${ext},"tokens_hash":${local}}`).join(',');
  return `{"event_id":${eventId},"data":{"stored":{"parent_hash":${parent ?? 'null'},"blocks":[${bs}]}},"dp_rank":${dpRank}}`;
}

function removed(eventId, hashes, dpRank = 0) {
  return `{"event_id":${eventId},"data":{"removed":{"block_hashes":[${hashes.join(',')}]}},"dp_rank":${dpRank}}`;
}

function tree(options = {}) {
  return new RadixTree({ module: kv, mode: 'warn', ...options });
}

/** Worker 1 holds all three blocks, worker 2 the first two (under its own external ids). */
function populated() {
  const t = tree();
  t.applyEvent(1, stored(1, null, [[101, L[0]], [102, L[1]], [103, L[2]]]));
  t.applyEvent(2, Buffer.from(stored(1, null, [[201, L[0]], [202, L[1]]])));
  return t;
}

test('findMatches scores each worker rank by its consecutive prefix', () => {
  const t = populated();
  const m = t.findMatches(L);
  assert.deepEqual(m.scores, new Map([['1:0', 3], ['2:0', 2]]));
  assert.deepEqual(m.treeSizes, new Map([['1:0', 3], ['2:0', 2]]));
  assert.deepEqual(m.frequencies, []);
  assert.deepEqual(m.matches, [
    { workerId: 1n, dpRank: 0, score: 3, treeSize: 3 },
    { workerId: 2n, dpRank: 0, score: 2, treeSize: 2 },
  ]);
  assert.deepEqual(t.findMatches([L[1], L[2]]).scores, new Map(), 'a query must start at the root');
  assert.deepEqual(t.findMatches(BigUint64Array.from(L.slice(0, 1))).scores, new Map([['1:0', 1], ['2:0', 1]]));
  assert.deepEqual(t.findMatches([]).scores, new Map());
  const early = t.findMatches(L, true);
  assert.ok(early.scores.get('1:0') >= 2 && early.scores.get('2:0') === 2);
  t.free();
});

test('removed, clearAllBlocks and removeWorker', () => {
  const t = populated();
  t.applyEvent(1, removed(2, [103]));
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:0', 2], ['2:0', 2]]));
  t.removeWorker(2);
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:0', 2]]));
  assert.deepEqual(t.workers(), [{ workerId: 1n, dpRank: 0 }]);
  t.clearAllBlocks(1);
  assert.deepEqual(t.findMatches(L).scores, new Map());
  assert.deepEqual(t.workers(), [{ workerId: 1n, dpRank: 0 }], 'a cleared worker stays known');
  t.free();
});

test('data-parallel ranks and worker ids beyond 2^53 are exact', () => {
  const t = tree();
  const big = (1n << 63n) + 5n;
  t.applyEvent(big, stored(1, null, [[301, L[0]]], 3));
  t.applyEvent(1, stored(1, null, [[101, L[0]]], 1));
  const m = t.findMatches(L);
  assert.deepEqual(m.scores, new Map([['1:1', 1], [`${big}:3`, 1]]));
  assert.deepEqual(t.workers(), [{ workerId: 1n, dpRank: 1 }, { workerId: big, dpRank: 3 }]);
  const s = t.stats();
  assert.deepEqual(s.workers.map((w) => [w.worker_id, w.dp_rank]), [[1n, 1], [big, 3]]);
  t.clearWorker(big, 3);
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:1', 1]]));
  t.free();
});

test('dumpTreeAsEvents replays into an identical tree', () => {
  const t = populated();
  t.applyEvent(3, stored(7, null, [[301, L[0]]], 2));
  const events = t.dumpTreeAsEvents();
  assert.ok(events.length >= 3);
  for (const e of events) assert.equal(typeof JSON.parse(e).worker_id, 'number');
  const copy = tree();
  for (const e of events) copy.applyRouterEvent(e);
  assert.deepEqual(copy.findMatches(L), t.findMatches(L));
  assert.deepEqual(copy.workers(), t.workers());
  assert.deepEqual(copy.dumpTreeAsEvents(), events);
  t.free();
  copy.free();
});

test('a large dump grows the output buffer', () => {
  const t = tree();
  const blocks = Array.from({ length: 400 }, (_, i) => [1000 + i, 5000 + i]);
  t.applyEvent(9, stored(1, null, blocks));
  const events = t.dumpTreeAsEvents();
  assert.ok(events.join('\n').length > 4096);
  const copy = tree();
  for (const e of events) copy.applyRouterEvent(new TextEncoder().encode(e));
  assert.equal(copy.findMatches(blocks.map(([, local]) => local)).scores.get('9:0'), 400);
  t.free();
  copy.free();
});

test('many workers grow the match buffer', () => {
  const t = tree();
  for (let w = 1; w <= 40; w++) t.applyEvent(w, stored(1, null, [[w * 10, L[0]]]));
  const m = t.findMatches(L);
  assert.equal(m.scores.size, 40);
  assert.equal(t.workers().length, 40);
  t.free();
});

test('stability violations: counted in warn mode, rejected stores throw REJECTED', () => {
  const t = populated();
  assert.equal(t.enforce, false);
  assert.throws(() => t.applyEvent(4, stored(1, 999, [[401, L[1]]])), (err) => {
    assert.ok(err instanceof KvHashError);
    assert.equal(err.code, 'KVHASH_ERR_REJECTED');
    assert.match(err.message, /parent/i);
    return true;
  });
  const s = t.stats();
  assert.equal(s.mode, 'warn');
  assert.equal(s.violations.parent_not_found, 1);
  // The tree is unchanged and still answers.
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:0', 3], ['2:0', 2]]));
  t.free();
});

test('enforce mode: setter, getter and constructor option', () => {
  const t = populated();
  t.enforce = true;
  assert.equal(t.enforce, true);
  assert.equal(t.stats().mode, 'enforce');
  assert.throws(() => t.applyEvent(1, removed(5, [12345])), (err) => err.code === 'KVHASH_ERR_REJECTED');
  t.enforce = false;
  assert.equal(t.enforce, false);
  t.free();
  const e = tree({ mode: 'enforce' });
  assert.equal(e.enforce, true);
  e.free();
});

test('malformed events are DECODE errors and change nothing', () => {
  const t = populated();
  for (const bad of ['{', '{"event_id":1}', '[]', stored(1, null, [[1, L[0]]]).replace('"blocks"', '"blockz"'), '']) {
    assert.throws(() => t.applyEvent(5, bad), (err) => err instanceof KvHashError && err.code === 'KVHASH_ERR_DECODE', bad);
  }
  assert.throws(() => t.applyRouterEvent('{"worker_id":1}'), (err) => err.code === 'KVHASH_ERR_DECODE');
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:0', 3], ['2:0', 2]]));
  t.free();
});

test('bad JS input is a TypeError or RangeError before the module is called', () => {
  const t = populated();
  assert.throws(() => t.applyEvent(1, { event_id: 1 }), TypeError);
  assert.throws(() => t.applyEvent(-1, stored(1, null, [])), RangeError);
  assert.throws(() => t.applyEvent(1.5, stored(1, null, [])), TypeError);
  assert.throws(() => t.applyEvent(2 ** 64, stored(1, null, [])), TypeError);
  assert.throws(() => t.findMatches('abc'), TypeError);
  assert.throws(() => t.findMatches([-1n]), RangeError);
  assert.throws(() => t.findMatches(L, 'yes'), TypeError);
  assert.throws(() => t.clearWorker(1, -1), RangeError);
  assert.throws(() => { t.enforce = 1; }, TypeError);
  assert.throws(() => tree({ mode: 'strict' }), RangeError);
  assert.throws(() => tree({ mode: 2 }), TypeError);
  assert.throws(() => new RadixTree({ module: {} }), TypeError);
  assert.throws(() => new RadixTree({ module: kv, enforce: true }), /unknown key 'enforce'; the accepted keys are mode, module/);
  assert.throws(() => new RadixTree(null), TypeError);
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:0', 3], ['2:0', 2]]));
  t.free();
});

test('free is idempotent; a freed tree fails with UNKNOWN_HANDLE; dispose frees', () => {
  const t = populated();
  t.free();
  t.free();
  assert.throws(() => t.findMatches(L), (err) => err.code === 'KVHASH_ERR_UNKNOWN_HANDLE');
  assert.throws(() => t.applyEvent(1, stored(2, null, [])), (err) => err.code === 'KVHASH_ERR_UNKNOWN_HANDLE');
  assert.throws(() => t.stats(), (err) => err.code === 'KVHASH_ERR_UNKNOWN_HANDLE');
  // The message says what happened (issue 10, item 13).
  assert.throws(() => t.findMatches(L), /RadixTree.findMatches: the tree was freed \(free\(\) was called\)/);
  assert.throws(() => t.dumpTreeAsEvents(), /RadixTree.dumpTreeAsEvents: the tree was freed/);
  const d = populated();
  d[Symbol.dispose]();
  assert.throws(() => d.workers(), (err) => err.code === 'KVHASH_ERR_UNKNOWN_HANDLE');
  // Hashing on the same instance is unaffected.
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4), BigUint64Array.from(PUBLIC.blocks));
});

test('the default module serves a RadixTree built without options', () => {
  const t = new RadixTree();
  t.applyEvent(1, stored(1, null, [[101, L[0]]]));
  assert.deepEqual(t.findMatches(L).scores, new Map([['1:0', 1]]));
  assert.notEqual(t.module, kv);
  t.free();
});

test("'env' mode follows the process's enforcement variables, read at load", () => {
  const names = ['KVHASH_ENFORCE_ENGINE_HASH_STABILITY', 'DYN_KV_ENFORCE_ENGINE_HASH_STABILITY'];
  const saved = names.map((n) => process.env[n]);
  try {
    for (const n of names) delete process.env[n];
    const plain = new RadixTree({ module: freshModule() });
    assert.equal(plain.enforce, false);
    plain.free();
    for (const n of names) {
      for (const m of names) delete process.env[m];
      process.env[n] = 'true';
      const t = new RadixTree({ module: freshModule(), mode: 'env' });
      assert.equal(t.enforce, true, n);
      t.free();
    }
  } finally {
    names.forEach((n, i) => {
      if (saved[i] === undefined) delete process.env[n];
      else process.env[n] = saved[i];
    });
  }
});
