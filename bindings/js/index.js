// @kvhash/wasm: canonical KV-cache block hashing (kvhash spec v1) and the
// KV-event radix tree, computed by the kvhash WebAssembly module.
//
//   import { blockHashes, sequenceHashes, RadixTree } from '@kvhash/wasm';
//
// The top-level functions use a default module loaded synchronously on
// first use; load() / loadSync() give explicit instances.
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { KvHashModule } from './lib/module.js';
import { RadixTree, workerKey } from './lib/radix-tree.js';
import { checkOptions } from './lib/validate.js';

export { KvHashModule, RadixTree, workerKey };
export { KvHashError, Status, statusCode } from './lib/errors.js';

/**
 * Where the default module is: $KVHASH_WASM, else kvhash.wasm bundled in
 * the package (a published package), else build/kvhash.wasm of the
 * repository the package sits in (bindings/js/../../build).
 */
export function defaultWasmPath() {
  if (process.env.KVHASH_WASM) return process.env.KVHASH_WASM;
  const bundled = fileURLToPath(new URL('./kvhash.wasm', import.meta.url));
  if (existsSync(bundled)) return bundled;
  return fileURLToPath(new URL('../../build/kvhash.wasm', import.meta.url));
}

const LOAD_OPTIONS = ['wasmPath', 'wasmBytes', 'wasmModule', 'memoryLimit'];

function source(options) {
  const { wasmPath, wasmBytes, wasmModule, memoryLimit } = checkOptions(options, 'load options', LOAD_OPTIONS);
  if (wasmModule !== undefined && !(wasmModule instanceof WebAssembly.Module)) {
    throw new TypeError('wasmModule must be a WebAssembly.Module');
  }
  if (wasmBytes !== undefined && !(wasmBytes instanceof Uint8Array) && !(wasmBytes instanceof ArrayBuffer)) {
    throw new TypeError('wasmBytes must be a Uint8Array or an ArrayBuffer');
  }
  if (wasmPath !== undefined && typeof wasmPath !== 'string' && !(wasmPath instanceof URL)) {
    throw new TypeError('wasmPath must be a string or a URL');
  }
  if (memoryLimit !== undefined && (!Number.isSafeInteger(memoryLimit) || memoryLimit <= 0)) {
    throw new TypeError(`memoryLimit must be a positive integer number of bytes, got ${memoryLimit}`);
  }
  return { wasmPath: wasmPath ?? defaultWasmPath(), wasmBytes, wasmModule, instance: { memoryLimit } };
}

function readError(path, err) {
  return new Error(`kvhash: cannot read the WASM module at ${path} (${err.code ?? err.message}); ` +
    'build it with `make build` in the kvhash repository, or set KVHASH_WASM', { cause: err });
}

/**
 * Loads a module instance: from options.wasmModule (compiled), options.wasmBytes,
 * or the file at options.wasmPath (default: defaultWasmPath()).
 * @returns {Promise<KvHashModule>}
 */
export async function load(options = {}) {
  const { wasmPath, wasmBytes, wasmModule, instance } = source(options);
  if (wasmModule) return new KvHashModule(wasmModule, instance);
  let bytes = wasmBytes;
  if (!bytes) {
    try {
      bytes = await readFile(wasmPath);
    } catch (err) {
      throw readError(wasmPath, err);
    }
  }
  return new KvHashModule(await WebAssembly.compile(bytes), instance);
}

/** load(), synchronously (Node compiles any module size synchronously). */
export function loadSync(options = {}) {
  const { wasmPath, wasmBytes, wasmModule, instance } = source(options);
  if (wasmModule) return new KvHashModule(wasmModule, instance);
  let bytes = wasmBytes;
  if (!bytes) {
    try {
      bytes = readFileSync(wasmPath);
    } catch (err) {
      throw readError(wasmPath, err);
    }
  }
  return new KvHashModule(new WebAssembly.Module(bytes), instance);
}

let defaultInstance;

/** The package's default module, loaded from defaultWasmPath() on first use. */
export function defaultModule() {
  defaultInstance ??= loadSync();
  return defaultInstance;
}

RadixTree.defaultModule = defaultModule;

/** Local block hashes of tokens (default module). @see KvHashModule#blockHashes */
export function blockHashes(tokens, blockSize, options) {
  return defaultModule().blockHashes(tokens, blockSize, options);
}

/**
 * Local block hashes and their sequence hashes in one module call (default
 * module). @see KvHashModule#blockAndSequenceHashes
 */
export function blockAndSequenceHashes(tokens, blockSize, options) {
  return defaultModule().blockAndSequenceHashes(tokens, blockSize, options);
}

/** Sequence hash chain over local block hashes (default module). */
export function sequenceHashes(hashes) {
  return defaultModule().sequenceHashes(hashes);
}

/** Seed of local block hashes (default module). */
export function seed(options) {
  return defaultModule().seed(options);
}

/** One step of the sequence chain (default module). */
export function chainStep(parent, local) {
  return defaultModule().chainStep(parent, local);
}

/** XXH3-64 seed 1337 over raw bytes (default module). */
export function rawHash(data) {
  return defaultModule().rawHash(data);
}

/** Number of full blocks (default module). */
export function blockCount(numTokens, blockSize, isEagle) {
  return defaultModule().blockCount(numTokens, blockSize, isEagle);
}
