// Node benchmark of the module: start time (read + compile + instantiate +
// _initialize) and block + sequence hashing of an 8k-token prompt in
// blocks of 16, with the fused call (one module call for both, as native
// Go's fused core.AppendBlockAndSequenceHashes it is set against). Prints
// "name value unit" lines for `make bench-wasm`, which sets them against
// native Go measured in the same run.
//
//   node bindings/js/bench/bench.js [seconds]   (default 3, split in 3 rounds; the best counts)
import { performance } from 'node:perf_hooks';
import { load } from '../index.js';

const seconds = Number(process.argv[2] ?? 3);
const TOKENS = 8192;
const BLOCK_SIZE = 16;

let t0 = performance.now();
const kv = await load();
const startMs = performance.now() - t0;

// Deterministic prompt (an LCG): ids below 200k like a real vocabulary.
const tokens = new Uint32Array(TOKENS);
let x = 12345;
for (let i = 0; i < TOKENS; i++) {
  x = (Math.imul(x, 1103515245) + 12345) >>> 0;
  tokens[i] = x % 200_000;
}

function once() {
  return kv.blockAndSequenceHashes(tokens, BLOCK_SIZE);
}

// Warm up long enough for V8 to tier the module up from its baseline
// compiler to the optimizing one.
t0 = performance.now();
while (performance.now() - t0 < 500) once();

// Best of several rounds: on a shared machine the fastest round is the
// one least disturbed by other processes.
const rounds = 3;
let best = Infinity;
for (let r = 0; r < rounds; r++) {
  let n = 0;
  let elapsed = 0;
  t0 = performance.now();
  do {
    for (let i = 0; i < 100; i++) once();
    n += 100;
    elapsed = performance.now() - t0;
  } while (elapsed < (seconds * 1000) / rounds);
  best = Math.min(best, (elapsed * 1e6) / n);
}

console.log(`node-start ${startMs.toFixed(1)} ms`);
console.log(`node-hash8k ${best.toFixed(0)} ns/op`);
