// Every case of every v1 vector file, through the module.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { caseOptions, freshModule, u64s, vectorGroups } from './helpers.js';

const kv = freshModule();
const seen = new Map();

function checkRaw(c) {
  assert.equal(kv.rawHash(Buffer.from(c.bytes_hex, 'hex')), BigInt(c.hash));
}

for (const group of vectorGroups()) {
  describe(group.group, () => {
    for (const c of group.cases) {
      test(c.name, (t) => {
        seen.set(c.kind, (seen.get(c.kind) ?? 0) + 1);
        switch (c.kind) {
          case 'block': {
            const opts = caseOptions(c);
            const blocks = kv.blockHashes(c.tokens, c.block_size, opts);
            assert.ok(blocks instanceof BigUint64Array);
            assert.deepEqual(blocks, u64s(c.block_hashes));
            assert.deepEqual(kv.sequenceHashes(blocks), u64s(c.sequence_hashes));
            // A Uint32Array input gives the same result as an array.
            assert.deepEqual(kv.blockHashes(Uint32Array.from(c.tokens), c.block_size, opts), blocks);
            assert.equal(kv.seed({ loraName: opts.loraName, cacheNamespace: opts.cacheNamespace }), BigInt(c.seed));
            // Both at once, through kvhash_block_and_sequence_hashes.
            const both = kv.blockAndSequenceHashes(c.tokens, c.block_size, opts);
            assert.ok(both.blockHashes instanceof BigUint64Array && both.sequenceHashes instanceof BigUint64Array);
            assert.deepEqual(both.blockHashes, u64s(c.block_hashes));
            assert.deepEqual(both.sequenceHashes, u64s(c.sequence_hashes));
            break;
          }
          case 'error': {
            for (const call of [kv.blockHashes, kv.blockAndSequenceHashes]) {
              assert.throws(() => call.call(kv, c.tokens, c.block_size, caseOptions(c)), (err) => {
                assert.ok(err instanceof RangeError, `${c.error}: got ${err}`);
                assert.equal(err.code, 'KVHASH_ERR_INVALID_ARGUMENT');
                return true;
              });
            }
            break;
          }
          case 'seed':
            assert.equal(kv.seed({ loraName: c.lora_name, cacheNamespace: c.cache_namespace }), BigInt(c.seed));
            break;
          case 'chain': {
            const locals = u64s(c.block_hashes);
            const want = u64s(c.sequence_hashes);
            assert.deepEqual(kv.sequenceHashes(locals), want);
            assert.deepEqual(kv.sequenceHashes(Array.from(locals)), want);
            for (let i = 1; i < locals.length; i++) assert.equal(kv.chainStep(want[i - 1], locals[i]), want[i]);
            break;
          }
          case 'raw':
            checkRaw(c);
            break;
          default:
            assert.fail(`unknown case kind ${c.kind}: the reader must learn it`);
        }
      });
    }
  });
}

test('every case kind ran', () => {
  for (const kind of ['block', 'error', 'seed', 'chain', 'raw']) assert.ok(seen.get(kind) > 0, `no ${kind} case ran`);
});
