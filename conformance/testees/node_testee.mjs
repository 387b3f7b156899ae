// Conformance testee of the Node.js package (bindings/js, the WASM module in
// Node): it answers the testee protocol of conformance/README.md by calling
// the package. u64 values travel as decimal strings and become bigints here;
// event and stats JSON texts are passed through untouched (a JSON.parse
// would round their u64 numbers to doubles).
import { createInterface } from 'node:readline';

import { KvHashError, RadixTree, Status, loadSync } from '../../bindings/js/index.js';

const kv = loadSync(); // $KVHASH_WASM, else the package's default module
const OPS = ['hello', 'block_hashes', 'sequence_hashes', 'seed', 'chain_step', 'raw_hash', 'index'];

const u64s = (values) => Array.from(values, (v) => v.toString());
const bigints = (values) => values.map((v) => BigInt(v));

// The package's errors, as the protocol's error kinds.
function kind(err) {
  if (err instanceof KvHashError && err.status === Status.DECODE) return 'decode';
  if (err instanceof KvHashError && err.status === Status.REJECTED) return 'rejected';
  if (err?.status === Status.INVALID_ARGUMENT) return 'invalid_argument';
  return 'internal';
}

// One step's result as JSON text (stats are spliced in as the module wrote them).
function runStep(tree, step) {
  try {
    if (step.apply) {
      tree.applyEvent(BigInt(step.apply.worker_id), step.apply.event);
      return '{"ok":true}';
    }
    if (step.find_matches) {
      const r = tree.findMatches(bigints(step.find_matches.hashes), step.find_matches.early_exit);
      const scores = r.matches.map((m) => ({
        worker_id: m.workerId.toString(), dp_rank: m.dpRank, score: m.score, tree_size: String(m.treeSize),
      }));
      return JSON.stringify({ scores });
    }
    if (step.remove_worker) {
      tree.removeWorker(BigInt(step.remove_worker.worker_id));
      return '{"ok":true}';
    }
    if (step.clear_all_blocks) {
      tree.clearAllBlocks(BigInt(step.clear_all_blocks.worker_id));
      return '{"ok":true}';
    }
    if (step.stats) return `{"stats":${tree.statsJSON()}}`;
    if (step.dump) return JSON.stringify({ events: tree.dumpTreeAsEvents() });
  } catch (err) {
    return JSON.stringify({ error: kind(err), message: String(err?.message ?? err) });
  }
  return '{"error":"invalid_argument","message":"step has no known operation"}';
}

function runIndex(req) {
  if (req.mode !== 'warn' && req.mode !== 'enforce') throw new Error('mode must be warn or enforce');
  const tree = new RadixTree({ mode: req.mode, module: kv });
  try {
    return `"results":[${req.steps.map((s) => runStep(tree, s)).join(',')}]`;
  } finally {
    tree.free();
  }
}

// The answer's fields as JSON text, without the braces and the id.
function handle(req) {
  switch (req.op) {
    case 'hello':
      return JSON.stringify({ binding: 'node', library_version: kv.version, spec_version: kv.specVersion, ops: OPS }).slice(1, -1);
    case 'block_hashes': {
      const o = req.options;
      const hashes = kv.blockHashes(req.tokens, req.block_size, {
        loraName: o.lora_name,
        cacheNamespace: o.cache_namespace,
        isEagle: o.eagle,
        mmHashes: o.mm_hashes === null ? null : o.mm_hashes.map((e) => (e === null ? null : bigints(e))),
      });
      return `"block_hashes":${JSON.stringify(u64s(hashes))}`;
    }
    case 'sequence_hashes':
      return `"sequence_hashes":${JSON.stringify(u64s(kv.sequenceHashes(bigints(req.block_hashes))))}`;
    case 'seed':
      return `"seed":"${kv.seed({ loraName: req.lora_name, cacheNamespace: req.cache_namespace })}"`;
    case 'chain_step':
      return `"hash":"${kv.chainStep(BigInt(req.parent), BigInt(req.local))}"`;
    case 'raw_hash':
      return `"hash":"${kv.rawHash(Buffer.from(req.bytes_hex, 'hex'))}"`;
    case 'index':
      return runIndex(req);
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  const req = JSON.parse(line);
  let body;
  try {
    body = handle(req);
  } catch (err) {
    body = `"error":${JSON.stringify(String(err?.message ?? err))}`;
  }
  // Pipes are synchronous in Node on POSIX, so answers stay in order.
  process.stdout.write(`{"id":${JSON.stringify(req.id)},${body}}\n`);
}
