// Shared by the tests: where the module and the vectors are.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSync } from '../index.js';

/** The repository root: the nearest directory above the tests with a go.mod. */
export function repoRoot() {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'go.mod'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('no go.mod above bindings/js/test');
    dir = parent;
  }
}

/** $KVHASH_WASM, else the repo's build/kvhash.wasm. A missing module fails the tests. */
export function modulePath() {
  const path = process.env.KVHASH_WASM || join(repoRoot(), 'build', 'kvhash.wasm');
  if (!existsSync(path)) {
    throw new Error(`kvhash WASM module not found at ${path}: run \`make build\` (or \`make build/kvhash.wasm\`), or set KVHASH_WASM`);
  }
  return path;
}

/** A fresh module instance (its own memory): tests that abuse raw exports use their own. */
export function freshModule() {
  return loadSync({ wasmPath: modulePath() });
}

/** Every v1 vector group, parsed; u64 decimal strings stay strings (see u64s). */
export function vectorGroups() {
  const dir = join(repoRoot(), 'conformance', 'vectors', 'v1');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  if (files.length === 0) throw new Error(`no vector files in ${dir}`);
  return files.map((f) => {
    const group = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    if (group.spec !== 'v1' || !Array.isArray(group.cases) || group.cases.length === 0) {
      throw new Error(`${f}: spec ${group.spec} with ${group.cases?.length} cases`);
    }
    return group;
  });
}

/** u64 decimal strings as a BigUint64Array (the schema never writes u64 as numbers). */
export function u64s(strings) {
  return BigUint64Array.from(strings, (s) => {
    if (typeof s !== 'string' || !/^(0|[1-9][0-9]*)$/.test(s)) throw new Error(`bad u64 ${JSON.stringify(s)}`);
    return BigInt(s);
  });
}

/** A vector case's options in the package's form. */
export function caseOptions(c) {
  const o = c.options;
  return {
    loraName: o.lora_name,
    cacheNamespace: o.cache_namespace,
    isEagle: o.eagle,
    mmHashes: o.mm_hashes === null ? null : o.mm_hashes.map((e) => (e === null ? null : Array.from(u64s(e)))),
  };
}

/** Dynamo's published vector: tokens 1..12, block size 4. */
export const PUBLIC = {
  tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
  blockSize: 4,
  blocks: [14643705804678351452n, 16777012769546811212n, 483935686894639516n],
  sequence: [14643705804678351452n, 4945711292740353085n, 12583592247330656132n],
};
