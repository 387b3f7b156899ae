// Bad input: JS types are rejected in JS (TypeError / RangeError), values
// the module rejects come back as RangeError with its message; the module
// keeps working afterwards.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KvHashError } from '../index.js';
import { PUBLIC, freshModule } from './helpers.js';

const kv = freshModule();

function stillWorks() {
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, PUBLIC.blockSize), BigUint64Array.from(PUBLIC.blocks));
}

const cases = [
  // [name, call, error class, message pattern]
  ['tokens not an array', () => kv.blockHashes('1,2,3,4', 4), TypeError, /tokens must be/],
  ['tokens of another typed array', () => kv.blockHashes(new Int32Array([1, 2, 3, 4]), 4), TypeError, /Uint32Array/],
  ['fractional token', () => kv.blockHashes([1, 2.5, 3, 4], 4), TypeError, /tokens\[1\] must be an integer/],
  ['string token', () => kv.blockHashes([1, '2', 3, 4], 4), TypeError, /tokens\[1\]/],
  ['bigint token', () => kv.blockHashes([1n, 2, 3, 4], 4), TypeError, /tokens\[0\]/],
  ['NaN token', () => kv.blockHashes([NaN, 2, 3, 4], 4), TypeError, /tokens\[0\]/],
  ['negative token', () => kv.blockHashes([1, -1, 3, 4], 4), RangeError, /tokens\[1\] is -1/],
  ['token above u32', () => kv.blockHashes([1, 2 ** 32, 3, 4], 4), RangeError, /tokens\[1\]/],
  ['block size 0', () => kv.blockHashes(PUBLIC.tokens, 0), RangeError, /KVHASH_ERR_INVALID_ARGUMENT.*block size/],
  ['block size negative', () => kv.blockHashes(PUBLIC.tokens, -4), RangeError, /KVHASH_ERR_INVALID_ARGUMENT/],
  ['block size fractional', () => kv.blockHashes(PUBLIC.tokens, 1.5), TypeError, /blockSize must be an integer/],
  ['block size string', () => kv.blockHashes(PUBLIC.tokens, '4'), TypeError, /blockSize/],
  ['block size beyond i64', () => kv.blockHashes(PUBLIC.tokens, 1n << 63n), RangeError, /blockSize/],
  ['options not an object', () => kv.blockHashes(PUBLIC.tokens, 4, 'lora'), TypeError, /options must be an object/],
  ['loraName not a string', () => kv.blockHashes(PUBLIC.tokens, 4, { loraName: 5 }), TypeError, /loraName/],
  ['isEagle not a boolean', () => kv.blockHashes(PUBLIC.tokens, 4, { isEagle: 1 }), TypeError, /isEagle/],
  ['mmHashes not an array', () => kv.blockHashes(PUBLIC.tokens, 4, { mmHashes: 5n }), TypeError, /mmHashes/],
  ['mm hash out of u64', () => kv.blockHashes(PUBLIC.tokens, 4, { mmHashes: [[1n << 64n]] }), RangeError, /mmHashes\[0\]\[0\]/],
  ['mm hash negative', () => kv.blockHashes(PUBLIC.tokens, 4, { mmHashes: [[-1n]] }), RangeError, /mmHashes\[0\]\[0\]/],
  ['too many mm entries', () => kv.blockHashes(PUBLIC.tokens, 4, { mmHashes: [null, null, null, null] }), RangeError, /KVHASH_ERR_INVALID_ARGUMENT/],
  ['sequence input not an array', () => kv.sequenceHashes(new Uint32Array(3)), TypeError, /BigUint64Array/],
  ['sequence input above u64', () => kv.sequenceHashes([1n, 1n << 64n]), RangeError, /blockHashes\[1\]/],
  ['sequence input negative', () => kv.sequenceHashes([-1n]), RangeError, /blockHashes\[0\]/],
  ['sequence input inexact number', () => kv.sequenceHashes([2 ** 60]), TypeError, /pass a bigint/],
  ['chainStep parent above u64', () => kv.chainStep(1n << 64n, 1n), RangeError, /parent/],
  ['chainStep local a string', () => kv.chainStep(1n, '2'), TypeError, /local/],
  ['seed name not a string', () => kv.seed({ cacheNamespace: 1 }), TypeError, /cacheNamespace/],
  // Unknown keys and wrong shapes throw instead of hashing without the
  // option (issue 10, item 4), naming the key and the accepted ones.
  ['unknown option key', () => kv.blockHashes(PUBLIC.tokens, 4, { lora: 'x' }), TypeError,
    /unknown key 'lora'; the accepted keys are loraName, cacheNamespace, isEagle, mmHashes/],
  ["Python's spelling of an option", () => kv.blockHashes(PUBLIC.tokens, 4, { lora_name: 'x' }), TypeError,
    /unknown key 'lora_name' \(did you mean 'loraName'\?\)/],
  ['options a Map', () => kv.blockHashes(PUBLIC.tokens, 4, new Map([['loraName', 'x']])), TypeError, /options must be an object/],
  ['options an array', () => kv.blockHashes(PUBLIC.tokens, 4, ['x']), TypeError, /options must be an object/],
  ['options true', () => kv.blockHashes(PUBLIC.tokens, 4, true), TypeError, /options must be an object/],
  ['seed given a bare name', () => kv.seed('adapter-a'), TypeError, /seed options must be an object like \{ loraName, cacheNamespace \}/],
  ['seed given null', () => kv.seed(null), TypeError, /seed options must be an object/],
  ['seed unknown key', () => kv.seed({ lora: 'a' }), TypeError, /unknown key 'lora'/],
  ['seed Python spelling', () => kv.seed({ cache_namespace: 'a' }), TypeError, /did you mean 'cacheNamespace'/],
];

for (const [name, call, cls, pattern] of cases) {
  test(name, () => {
    assert.throws(call, (err) => {
      assert.equal(err.constructor, cls, `${name}: ${err}`);
      assert.match(err.message, pattern);
      return true;
    });
    stillWorks();
  });
}

test('an invalid-argument status is a RangeError carrying the status', () => {
  assert.throws(() => kv.blockHashes([], 0), (err) => {
    assert.ok(err instanceof RangeError);
    assert.equal(err.status, -1);
    assert.equal(err.op, 'kvhash_block_hashes');
    assert.match(err.message, /must be at least 1/); // the module's own message
    return true;
  });
  assert.ok(!(new RangeError('x') instanceof KvHashError));
});

test('null and undefined options and names mean absent', () => {
  const plain = kv.blockHashes(PUBLIC.tokens, 4);
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4, null), plain);
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4, { loraName: null, cacheNamespace: undefined, mmHashes: null }), plain);
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4, { mmHashes: [null, undefined, []] }), plain);
  assert.equal(kv.seed(), 1337n);
  assert.equal(kv.seed({ loraName: '' }), 1337n);
});

test('numbers are accepted for u64 while exact, and bigint block sizes work', () => {
  assert.deepEqual(kv.sequenceHashes([1, 2]), kv.sequenceHashes([1n, 2n]));
  assert.equal(kv.chainStep(1, 2), kv.chainStep(1n, 2n));
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4n), BigUint64Array.from(PUBLIC.blocks));
});

test('blockCount comes from the module', () => {
  assert.equal(kv.blockCount(12, 4), 3);
  assert.equal(kv.blockCount(13, 4, true), 3);
  assert.throws(() => kv.blockCount(12, 0), RangeError);
  assert.throws(() => kv.blockCount(-1, 4), RangeError);
  assert.throws(() => kv.blockCount(1.5, 4), TypeError);
});

test('the options check leaves the accepted keys working', () => {
  const withLora = kv.blockHashes(PUBLIC.tokens, 4, { loraName: 'adapter-a' });
  assert.notDeepEqual(withLora, kv.blockHashes(PUBLIC.tokens, 4));
  assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4, Object.assign(Object.create(null), { loraName: 'adapter-a' })), withLora);
  assert.notEqual(kv.seed({ loraName: 'adapter-a' }), 1337n);
});

test('a large prompt grows the scratch buffer and still matches the chain', () => {
  const tokens = Uint32Array.from({ length: 1 << 17 }, (_, i) => (i * 2654435761) >>> 0);
  const blocks = kv.blockHashes(tokens, 16);
  assert.equal(blocks.length, (1 << 17) / 16);
  const seq = kv.sequenceHashes(blocks);
  assert.equal(kv.chainStep(seq[999], blocks[1000]), seq[1000]);
  stillWorks();
});
