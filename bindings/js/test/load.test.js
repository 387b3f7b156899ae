// Loading: paths, bytes, compiled modules, the default module, and errors.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import * as kvhash from '../index.js';
import { PUBLIC, modulePath, repoRoot } from './helpers.js';

const want = BigUint64Array.from(PUBLIC.blocks);

test('load from a path, a URL, bytes and a compiled module', async () => {
  const path = modulePath();
  const bytes = readFileSync(path);
  const sources = [
    { wasmPath: path },
    { wasmPath: pathToFileURL(path) },
    { wasmBytes: bytes },
    { wasmBytes: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) },
    { wasmModule: await WebAssembly.compile(bytes) },
  ];
  for (const source of sources) {
    const kv = await kvhash.load(source);
    assert.deepEqual(kv.blockHashes(PUBLIC.tokens, 4), want);
    assert.deepEqual(kvhash.loadSync(source).blockHashes(PUBLIC.tokens, 4), want);
  }
});

test('instances are independent', async () => {
  const a = await kvhash.load({ wasmPath: modulePath() });
  const b = await kvhash.load({ wasmPath: modulePath() });
  assert.notEqual(a.exports.memory, b.exports.memory);
  assert.throws(() => a.blockHashes([1], 0), RangeError);
  assert.deepEqual(b.blockHashes(PUBLIC.tokens, 4), want);
});

test('versions come from the module', () => {
  const kv = kvhash.loadSync({ wasmPath: modulePath() });
  assert.match(kv.version, /^\d+\.\d+\.\d+/);
  assert.equal(kv.specVersion, 'v1');
});

test('a missing module says how to build it', async () => {
  const missing = join(repoRoot(), 'build', 'no-such-module.wasm');
  await assert.rejects(kvhash.load({ wasmPath: missing }), /cannot read the WASM module.*make build/);
  assert.throws(() => kvhash.loadSync({ wasmPath: missing }), /make build/);
});

test('a module without the kvhash exports is refused', async () => {
  const empty = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
  await assert.rejects(kvhash.load({ wasmBytes: empty }), /lacks exports .*kvhash_block_hashes/);
  await assert.rejects(kvhash.load({ wasmBytes: new Uint8Array([1, 2, 3]) }), WebAssembly.CompileError);
});

test('bad load options are TypeErrors', async () => {
  await assert.rejects(kvhash.load({ wasmPath: 5 }), TypeError);
  await assert.rejects(kvhash.load({ wasmBytes: 'abc' }), TypeError);
  await assert.rejects(kvhash.load({ wasmModule: {} }), TypeError);
  await assert.rejects(kvhash.load(null), TypeError);
  assert.throws(() => new kvhash.KvHashModule({}), TypeError);
});

test('the default module honours KVHASH_WASM and serves the top-level functions', () => {
  const saved = process.env.KVHASH_WASM;
  try {
    process.env.KVHASH_WASM = '/some/where/kvhash.wasm';
    assert.equal(kvhash.defaultWasmPath(), '/some/where/kvhash.wasm');
    delete process.env.KVHASH_WASM;
    assert.equal(kvhash.defaultWasmPath(), join(repoRoot(), 'build', 'kvhash.wasm'));
  } finally {
    if (saved === undefined) delete process.env.KVHASH_WASM;
    else process.env.KVHASH_WASM = saved;
  }
  assert.deepEqual(kvhash.blockHashes(PUBLIC.tokens, 4), want);
  assert.deepEqual(kvhash.sequenceHashes(want), BigUint64Array.from(PUBLIC.sequence));
  assert.deepEqual(kvhash.blockAndSequenceHashes(PUBLIC.tokens, 4), {
    blockHashes: want,
    sequenceHashes: BigUint64Array.from(PUBLIC.sequence),
  });
  assert.equal(kvhash.seed(), 1337n);
  assert.equal(kvhash.chainStep(PUBLIC.sequence[0], PUBLIC.blocks[1]), PUBLIC.sequence[1]);
  assert.equal(kvhash.blockCount(12, 4), 3);
  assert.equal(kvhash.defaultModule(), kvhash.defaultModule(), 'loaded once');
});

test('importing the package emits no WASI experimental warning', async () => {
  const { spawnSync } = await import('node:child_process');
  const script = `import('${pathToFileURL(join(repoRoot(), 'bindings', 'js', 'index.js')).href}').then((m) => m.loadSync({ wasmPath: ${JSON.stringify(modulePath())} }).blockHashes([1,2,3,4], 4))`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /ExperimentalWarning/);
});
