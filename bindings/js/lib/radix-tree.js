// RadixTree: the kvhash index (Dynamo's RadixTree API, camelCase) living
// in one module instance. Every decision (what matches, what is a
// stability violation, what is rejected) is the module's; this class
// converts arguments and results.
import { KvHashError, Status } from './errors.js';
import { kInternal, Layout } from './module.js';
import { checkOptions, toJSONBytes, toU32, toU64, toU64Array } from './validate.js';

const MODES = new Map([
  ['env', 0],
  ['warn', 1],
  ['enforce', 2],
]);

// A tree that is garbage-collected without free() still releases its
// handle in the module (its instance outlives it: the held value keeps it).
const registry = new FinalizationRegistry(({ internal, handle }) => {
  try {
    internal.call('kvhash_index_free', handle);
  } catch {
    // The instance failed; nothing left to free.
  }
});

/** The key of a worker rank in OverlapScores maps: "workerId:dpRank". */
export function workerKey(workerId, dpRank) {
  return `${workerId}:${dpRank}`;
}

export class RadixTree {
  #kv;
  #in;
  #handle;

  /**
   * @param {object} [options]
   * @param {'env'|'warn'|'enforce'} [options.mode='env'] stability mode ('env': enforce
   *   when KVHASH_ENFORCE_ENGINE_HASH_STABILITY or DYN_KV_ENFORCE_ENGINE_HASH_STABILITY is
   *   1/true in this process's environment, else warn)
   * @param {import('./module.js').KvHashModule} [options.module] the module instance
   *   (default: the package's lazily loaded module)
   */
  constructor(options = {}) {
    checkOptions(options, 'RadixTree options', ['mode', 'module']);
    const kv = options.module ?? RadixTree.defaultModule();
    if (!kv || !kv[kInternal]) throw new TypeError('options.module must be a module returned by load() or loadSync()');
    const mode = modeNumber(options.mode ?? 'env');
    this.#kv = kv;
    this.#in = kv[kInternal];
    const base = this.#in.reserve(8);
    this.#in.callStatus('kvhash_index_new', mode, base);
    this.#handle = this.#in.readU64(base);
    registry.register(this, { internal: this.#in, handle: this.#handle }, this);
  }

  /** Set by index.js: the lazily loaded default module. */
  static defaultModule = () => {
    throw new Error('no default kvhash module; pass options.module');
  };

  /** The module instance this tree lives in. */
  get module() {
    return this.#kv;
  }

  /**
   * Scores of every worker rank holding a prefix of the sequence of local
   * block hashes.
   * @returns {{scores: Map<string, number>, treeSizes: Map<string, number>, frequencies: number[],
   *   matches: {workerId: bigint, dpRank: number, score: number, treeSize: number}[]}}
   */
  findMatches(sequence, earlyExit = false) {
    const hashes = toU64Array(sequence, 'sequence');
    if (typeof earlyExit !== 'boolean') throw new TypeError('earlyExit must be a boolean');
    const n = hashes.length;
    let cap = 16;
    for (;;) {
      const l = new Layout();
      const outLen = l.add(8);
      const local = l.add(8 * n);
      const ids = l.add(8 * cap);
      const sizes = l.add(8 * cap);
      const ranks = l.add(4 * cap);
      const scores = l.add(4 * cap);
      const base = this.#in.reserve(l.size);
      this.#in.writeU64s(base + local, hashes);
      const st = this.#in.callSized(
        'kvhash_index_find_matches', this.#live('findMatches'), n === 0 ? 0 : base + local, n, earlyExit ? 1 : 0,
        base + ids, base + ranks, base + scores, base + sizes, cap, base + outLen,
      );
      const count = this.#in.readU32(base + outLen);
      if (st === Status.BUFFER_TOO_SMALL) {
        cap = grownCap(cap, count);
        continue;
      }
      const workerIds = this.#in.readU64s(base + ids, count);
      const dpRanks = this.#in.readU32s(base + ranks, count);
      const scoreValues = this.#in.readU32s(base + scores, count);
      const treeSizes = this.#in.readU64s(base + sizes, count);
      // frequencies is always empty, as in the core: the index does not
      // track access frequency (and the ABI carries none).
      const result = { scores: new Map(), treeSizes: new Map(), frequencies: [], matches: [] };
      for (let i = 0; i < count; i++) {
        const key = workerKey(workerIds[i], dpRanks[i]);
        // Tree sizes are block counts: far below 2^53, so numbers.
        const treeSize = Number(treeSizes[i]);
        result.scores.set(key, scoreValues[i]);
        result.treeSizes.set(key, treeSize);
        result.matches.push({ workerId: workerIds[i], dpRank: dpRanks[i], score: scoreValues[i], treeSize });
      }
      return result;
    }
  }

  /** Applies one KV event (Dynamo's KvCacheEvent JSON) from a worker. */
  applyEvent(workerId, event) {
    const handle = this.#live('applyEvent');
    const id = toU64(workerId, 'workerId');
    this.#withBytes(toJSONBytes(event, 'event', this.#in.encoder), (ptr, len) =>
      this.#in.callStatus('kvhash_index_apply_json', handle, id, ptr, len),
    );
  }

  /** Applies one router event (JSON with worker_id, storage tier and event). */
  applyRouterEvent(event) {
    const handle = this.#live('applyRouterEvent');
    this.#withBytes(toJSONBytes(event, 'event', this.#in.encoder), (ptr, len) =>
      this.#in.callStatus('kvhash_index_apply_router_event_json', handle, ptr, len),
    );
  }

  /** Drops one rank's blocks (what a "cleared" event does). */
  clearWorker(workerId, dpRank = 0) {
    this.#in.callStatus('kvhash_index_clear_worker', this.#live('clearWorker'), toU64(workerId, 'workerId'), toU32(dpRank, 'dpRank'));
  }

  /** Drops every rank's blocks of a worker; the worker stays known. */
  clearAllBlocks(workerId) {
    this.#in.callStatus('kvhash_index_clear_all_blocks', this.#live('clearAllBlocks'), toU64(workerId, 'workerId'));
  }

  /** Removes every rank of a worker from the tree. */
  removeWorker(workerId) {
    this.#in.callStatus('kvhash_index_remove_worker', this.#live('removeWorker'), toU64(workerId, 'workerId'));
  }

  /** The tree as router events (JSON strings); replaying them into an empty tree rebuilds it. */
  dumpTreeAsEvents() {
    const text = this.#text('kvhash_index_dump_jsonl', 'dumpTreeAsEvents');
    return text.split('\n').filter((line) => line.length > 0);
  }

  /** The index statistics as the module's stats JSON text. */
  statsJSON() {
    return this.#text('kvhash_index_stats_json', 'statsJSON');
  }

  /**
   * The index statistics: the parsed stats JSON, with each worker's
   * worker_id as a bigint (JSON.parse would round ids above 2^53).
   */
  stats() {
    const text = this.statsJSON().replace(/"worker_id":(\d+)/g, '"worker_id":"$1"');
    const stats = JSON.parse(text);
    for (const w of stats.workers) w.worker_id = BigInt(w.worker_id);
    return stats;
  }

  /** Worker ranks known to the tree, sorted. */
  workers() {
    let cap = 16;
    for (;;) {
      const l = new Layout();
      const outLen = l.add(8);
      const ids = l.add(8 * cap);
      const ranks = l.add(4 * cap);
      const base = this.#in.reserve(l.size);
      const st = this.#in.callSized('kvhash_index_workers', this.#live('workers'), base + ids, base + ranks, cap, base + outLen);
      const count = this.#in.readU32(base + outLen);
      if (st === Status.BUFFER_TOO_SMALL) {
        cap = grownCap(cap, count);
        continue;
      }
      const workerIds = this.#in.readU64s(base + ids, count);
      const dpRanks = this.#in.readU32s(base + ranks, count);
      return Array.from(workerIds, (workerId, i) => ({ workerId, dpRank: dpRanks[i] }));
    }
  }

  /** Whether stability violations are errors (true) or warnings (false). */
  get enforce() {
    return this.stats().mode === 'enforce';
  }

  set enforce(on) {
    if (typeof on !== 'boolean') throw new TypeError('enforce must be a boolean');
    this.#in.callStatus('kvhash_index_set_mode', this.#live('enforce'), MODES.get(on ? 'enforce' : 'warn'));
  }

  /**
   * Releases the tree in the module. Idempotent; later calls throw a
   * KvHashError with code KVHASH_ERR_UNKNOWN_HANDLE saying the tree was freed.
   */
  free() {
    if (this.#handle === 0n) return;
    const handle = this.#handle;
    // 0 marks a freed tree (the module never issues it): later calls
    // fail in #live, and a handle number reused by a newer tree cannot
    // be reached.
    this.#handle = 0n;
    registry.unregister(this);
    this.#in.callStatus('kvhash_index_free', handle);
  }

  [Symbol.dispose ?? Symbol.for('nodejs.dispose')]() {
    this.free();
  }

  // The handle for a call of op, or a clear error once the tree is freed.
  #live(op) {
    if (this.#handle === 0n) {
      throw new KvHashError(`RadixTree.${op}: the tree was freed (free() was called)`, Status.UNKNOWN_HANDLE, op);
    }
    return this.#handle;
  }

  #withBytes(bytes, f) {
    const base = this.#in.reserve(Math.max(bytes.length, 1));
    this.#in.writeBytes(base, bytes);
    return f(bytes.length === 0 ? 0 : base, bytes.length);
  }

  #text(name, op) {
    let cap = 4096;
    for (;;) {
      const l = new Layout();
      const outLen = l.add(8);
      const buf = l.add(cap);
      const base = this.#in.reserve(l.size);
      const st = this.#in.callSized(name, this.#live(op), base + buf, cap, base + outLen);
      const n = this.#in.readU32(base + outLen);
      if (st === Status.BUFFER_TOO_SMALL) {
        cap = grownCap(cap, n);
        continue;
      }
      return this.#in.readText(base + buf, n);
    }
  }
}

// The module asks for `need` after a too-small buffer of `cap`; a need
// that does not grow would loop forever.
function grownCap(cap, need) {
  if (need <= cap) throw new Error(`kvhash: module reported a too-small buffer of ${cap} but needs ${need}`);
  return need;
}

function modeNumber(mode) {
  if (typeof mode !== 'string') throw new TypeError(`mode must be 'env', 'warn' or 'enforce', got ${typeof mode}`);
  const m = MODES.get(mode);
  if (m === undefined) throw new RangeError(`mode must be 'env', 'warn' or 'enforce', got '${mode}'`);
  return m;
}
