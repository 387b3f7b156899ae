// One instance of the kvhash WebAssembly module and the marshaling of
// every export: JS values in, linear-memory buffers, status out. No hash
// or index logic lives here; the module computes everything.
import { Status, KvHashError, statusError } from './errors.js';
import { wasiClass } from './wasi.js';
import { SEED_OPTIONS, checkOptions, toBool, toI64, toName, toOptions, toTokens, toU64, toU64Array } from './validate.js';

// Typed-array views of linear memory (always little-endian) are only
// correct on little-endian hosts; elsewhere values go through a DataView.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

const REQUIRED_EXPORTS = [
  '_initialize', 'memory', 'kvhash_alloc', 'kvhash_free', 'kvhash_last_error',
  'kvhash_version', 'kvhash_spec_version', 'kvhash_seed', 'kvhash_chain_step', 'kvhash_raw_hash',
  'kvhash_block_count', 'kvhash_block_hashes', 'kvhash_block_and_sequence_hashes', 'kvhash_sequence_hashes',
  'kvhash_index_new', 'kvhash_index_free', 'kvhash_index_set_mode',
  'kvhash_index_apply_json', 'kvhash_index_apply_router_event_json',
  'kvhash_index_clear_worker', 'kvhash_index_clear_all_blocks', 'kvhash_index_remove_worker',
  'kvhash_index_find_matches', 'kvhash_index_dump_jsonl', 'kvhash_index_stats_json',
  'kvhash_index_workers',
];

// The index's 'env' mode reads these variables inside the module; it sees
// only what the host passes, so pass exactly these from the process.
const STABILITY_VARS = ['KVHASH_ENFORCE_ENGINE_HASH_STABILITY', 'DYN_KV_ENFORCE_ENGINE_HASH_STABILITY'];

// The module sizes its memory budget by this variable (wasm/budget.go).
const MEMORY_LIMIT_VAR = 'KVHASH_WASM_MEMORY_LIMIT';

function moduleEnv(memoryLimit) {
  const env = {};
  for (const name of STABILITY_VARS) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  if (memoryLimit !== undefined) env[MEMORY_LIMIT_VAR] = String(memoryLimit);
  return env;
}

// A module's buffers may hold 1 GiB in all: the scratch buffer doubles
// only below that.
const MAX_BUFFERS = 2 ** 30;

/** Lays buffers out in the scratch allocation, each 8-byte aligned (typed-array views need it). */
export class Layout {
  size = 0;
  add(bytes) {
    const off = this.size;
    // Not `& ~7`: bitwise operators cut numbers to 32 signed bits.
    this.size = Math.ceil((off + bytes) / 8) * 8;
    return off;
  }
}

// Internal access for RadixTree (not part of the public API).
export const kInternal = Symbol('kvhash.internal');

export class KvHashModule {
  #exports;
  #memory;
  #scratch = 0;
  #scratchCap = 0;
  #errBuf = 0;
  #errCap = 0;
  #failed = null;
  #encoder = new TextEncoder();
  #decoder = new TextDecoder();

  /**
   * Instantiates a compiled module: WASI preview1 imports, then
   * _initialize (the module is a Go reactor: it must start its runtime
   * before any export is called). memoryLimit (bytes, optional) tells the
   * module to keep its heap within that much linear memory instead of
   * 4 GiB; requests past its budget fail with KVHASH_ERR_NO_MEMORY.
   */
  constructor(wasmModule, { memoryLimit } = {}) {
    if (!(wasmModule instanceof WebAssembly.Module)) {
      throw new TypeError('KvHashModule needs a compiled WebAssembly.Module; use load() or loadSync()');
    }
    const names = new Set(WebAssembly.Module.exports(wasmModule).map((e) => e.name));
    const missing = REQUIRED_EXPORTS.filter((n) => !names.has(n));
    if (missing.length > 0) {
      throw new Error(`kvhash: the module lacks exports ${missing.join(', ')} (is it build/kvhash.wasm of this version?)`);
    }
    const WASI = wasiClass();
    const wasi = new WASI({ version: 'preview1', args: ['kvhash'], env: moduleEnv(memoryLimit), returnOnExit: true });
    const instance = new WebAssembly.Instance(wasmModule, { wasi_snapshot_preview1: wasi.wasiImport });
    wasi.initialize(instance);
    this.#exports = instance.exports;
    this.#memory = instance.exports.memory;
    const internal = {
      call: (name, ...args) => this.#call(name, ...args),
      callStatus: (name, ...args) => this.#callStatus(name, ...args),
      callSized: (name, ...args) => this.#callSized(name, ...args),
      reserve: (size) => this.#reserve(size),
      writeBytes: (ptr, bytes) => this.#writeBytes(ptr, bytes),
      writeU64s: (ptr, values) => this.#writeU64s(ptr, values),
      readU32: (ptr) => this.#readU32(ptr),
      readU32s: (ptr, n) => this.#readU32s(ptr, n),
      readU64: (ptr) => this.#readU64(ptr),
      readU64s: (ptr, n) => this.#readU64s(ptr, n),
      readText: (ptr, n) => this.#decoder.decode(new Uint8Array(this.#memory.buffer, ptr, n)),
      encoder: this.#encoder,
    };
    Object.defineProperty(this, kInternal, { value: internal });
  }

  /** The raw exports, for tools and tests that speak the ABI directly. */
  get exports() {
    return this.#exports;
  }

  /** The module's implementation version. */
  get version() {
    return this.#text('kvhash_version');
  }

  /** The hashing spec version the module implements ("v1"). */
  get specVersion() {
    return this.#text('kvhash_spec_version');
  }

  /**
   * The local hash of every full block of tokens.
   * @returns {BigUint64Array}
   */
  blockHashes(tokens, blockSize, options) {
    const { outs, n } = this.#hashPrompt('kvhash_block_hashes', 1, tokens, blockSize, options);
    return this.#readU64s(outs[0], n);
  }

  /**
   * The local hash of every full block of tokens and their sequence
   * hashes, in one call of the module (which computes both in one pass):
   * faster than blockHashes followed by sequenceHashes.
   * @returns {{ blockHashes: BigUint64Array, sequenceHashes: BigUint64Array }}
   */
  blockAndSequenceHashes(tokens, blockSize, options) {
    const { outs, n } = this.#hashPrompt('kvhash_block_and_sequence_hashes', 2, tokens, blockSize, options);
    return { blockHashes: this.#readU64s(outs[0], n), sequenceHashes: this.#readU64s(outs[1], n) };
  }

  // Calls a block-hashing export: the prompt and its options, then
  // `outputs` output pointers (one for kvhash_block_hashes, two for
  // kvhash_block_and_sequence_hashes), their common capacity and out_len.
  // Returns the outputs' addresses and the hash count, to be read before
  // the next call reuses the scratch allocation.
  #hashPrompt(name, outputs, tokens, blockSize, options) {
    const toks = toTokens(tokens);
    const bs = toI64(blockSize, 'blockSize');
    const opts = toOptions(options);
    const lora = this.#encoder.encode(opts.loraName);
    const ns = this.#encoder.encode(opts.cacheNamespace);
    const mm = opts.mmHashes ?? [];
    let mmTotal = 0;
    for (const entry of mm) mmTotal += entry?.length ?? 0;
    // tokens / blockSize bounds the block count (with or without Eagle),
    // so no extra call sizes the output; the module reports the exact
    // count and rejects a bad block size.
    const outCap = bs > 0n ? Number(BigInt(toks.length) / bs) : 0;
    const l = new Layout();
    const outLenOff = l.add(8);
    const tokOff = l.add(4 * toks.length);
    const loraOff = l.add(lora.length);
    const nsOff = l.add(ns.length);
    const countsOff = l.add(4 * mm.length);
    const mmOff = l.add(8 * mmTotal);
    const outOffs = [];
    for (let i = 0; i < outputs; i++) outOffs.push(l.add(8 * outCap));
    const base = this.#reserve(l.size);
    const at = (off, n) => (n === 0 ? 0 : base + off);
    this.#writeU32s(base + tokOff, toks);
    this.#writeBytes(base + loraOff, lora);
    this.#writeBytes(base + nsOff, ns);
    if (mm.length > 0) {
      const counts = new Uint32Array(mm.length);
      let p = base + mmOff;
      mm.forEach((entry, i) => {
        counts[i] = entry?.length ?? 0;
        if (entry) {
          this.#writeU64s(p, entry);
          p += 8 * entry.length;
        }
      });
      this.#writeU32s(base + countsOff, counts);
    }
    this.#callStatus(
      name,
      at(tokOff, toks.length), toks.length, bs,
      at(loraOff, lora.length), lora.length,
      at(nsOff, ns.length), ns.length,
      opts.isEagle ? 1 : 0,
      at(mmOff, mmTotal), at(countsOff, mm.length), mm.length,
      ...outOffs.map((off) => at(off, outCap)), outCap, base + outLenOff,
    );
    const n = this.#readU32(base + outLenOff);
    if (n > outCap) throw new KvHashError(`${name}: module reported ${n} hashes for a buffer of ${outCap}`, Status.INTERNAL, name);
    return { outs: outOffs.map((off) => base + off), n };
  }

  /**
   * The sequence hash chain over local block hashes.
   * @returns {BigUint64Array}
   */
  sequenceHashes(blockHashes) {
    const hashes = toU64Array(blockHashes, 'blockHashes');
    const n = hashes.length;
    const l = new Layout();
    const outLenOff = l.add(8);
    const inOff = l.add(8 * n);
    const outOff = l.add(8 * n);
    const base = this.#reserve(l.size);
    this.#writeU64s(base + inOff, hashes);
    this.#callStatus('kvhash_sequence_hashes', n === 0 ? 0 : base + inOff, n, n === 0 ? 0 : base + outOff, n, base + outLenOff);
    const got = this.#readU32(base + outLenOff);
    if (got > n) throw new KvHashError(`kvhash_sequence_hashes: module reported ${got} hashes for ${n} inputs`, Status.INTERNAL, 'kvhash_sequence_hashes');
    return this.#readU64s(base + outOff, got);
  }

  /** The seed of local block hashes for a LoRA name and a cache namespace. */
  seed(options) {
    const { loraName, cacheNamespace } = checkOptions(options, 'seed options', SEED_OPTIONS);
    const lora = this.#encoder.encode(toName(loraName, 'loraName'));
    const ns = this.#encoder.encode(toName(cacheNamespace, 'cacheNamespace'));
    const l = new Layout();
    const loraOff = l.add(lora.length);
    const nsOff = l.add(ns.length);
    const base = this.#reserve(l.size);
    this.#writeBytes(base + loraOff, lora);
    this.#writeBytes(base + nsOff, ns);
    const r = this.#call('kvhash_seed', lora.length ? base + loraOff : 0, lora.length, ns.length ? base + nsOff : 0, ns.length);
    return BigInt.asUintN(64, r);
  }

  /** The sequence hash of a block from its parent's sequence hash and its local hash. */
  chainStep(parent, local) {
    const r = this.#call('kvhash_chain_step', toU64(parent, 'parent'), toU64(local, 'local'));
    return BigInt.asUintN(64, r);
  }

  /** XXH3-64 with the spec's seed over raw bytes, to check a build against the raw-bytes vectors. */
  rawHash(data) {
    if (!(data instanceof Uint8Array)) throw new TypeError(`data must be a Uint8Array, got ${typeof data}`);
    const l = new Layout();
    const outOff = l.add(8);
    const dataOff = l.add(data.length);
    const base = this.#reserve(l.size);
    this.#writeBytes(base + dataOff, data);
    this.#callStatus('kvhash_raw_hash', data.length ? base + dataOff : 0, data.length, base + outOff);
    return this.#readU64(base + outOff);
  }

  /** How many local hashes numTokens tokens give (only full blocks count). */
  blockCount(numTokens, blockSize, isEagle = false) {
    if (typeof numTokens !== 'number' || !Number.isInteger(numTokens)) {
      throw new TypeError(`numTokens must be an integer number, got ${typeof numTokens}`);
    }
    if (numTokens < 0 || numTokens > 0xffff_ffff) throw new RangeError(`numTokens is ${numTokens}: must lie in [0, 2^32-1]`);
    const bs = toI64(blockSize, 'blockSize');
    const base = this.#reserve(8);
    this.#callStatus('kvhash_block_count', numTokens, bs, toBool(isEagle, 'isEagle') ? 1 : 0, base);
    return this.#readU32(base);
  }

  // --- calls ---------------------------------------------------------

  #call(name, ...args) {
    if (this.#failed) throw this.#failed;
    try {
      return this.#exports[name](...args);
    } catch (err) {
      // A TypeError is JS failing to convert an argument: nothing ran.
      if (err instanceof TypeError) throw err;
      // A trap (or the Go runtime exiting) leaves the instance in an
      // undefined state: refuse further calls rather than return garbage.
      this.#failed = new KvHashError(`kvhash: module instance failed in ${name}: ${err?.message ?? err}`, Status.INTERNAL, name);
      this.#failed.cause = err;
      throw this.#failed;
    }
  }

  #callStatus(name, ...args) {
    const status = this.#call(name, ...args);
    if (status < 0) throw statusError(name, status, this.#lastError());
    return status;
  }

  // For exports that size their output: BUFFER_TOO_SMALL is returned
  // (with the needed count in *out_len), any other failure throws.
  #callSized(name, ...args) {
    const status = this.#call(name, ...args);
    if (status < 0 && status !== Status.BUFFER_TOO_SMALL) throw statusError(name, status, this.#lastError());
    return status;
  }

  // The message of the last failed call, read into its own allocation:
  // the scratch one may hold outputs of the failed call that the caller
  // still reads (out_len of a too-small buffer). Best effort: the status
  // alone still makes a useful error.
  #lastError() {
    try {
      let size = Math.max(this.#errCap, 256);
      for (let attempt = 0; attempt < 2; attempt++) {
        if (this.#errCap < size) {
          if (this.#errBuf !== 0) this.#call('kvhash_free', this.#errBuf);
          this.#errBuf = 0;
          this.#errCap = 0;
          const p = this.#call('kvhash_alloc', size) >>> 0;
          if (p === 0) return '';
          this.#errBuf = p;
          this.#errCap = size;
        }
        const n = this.#call('kvhash_last_error', this.#errBuf, size);
        if (n < 0) return '';
        // The copy is NUL-terminated: it is whole only if n < size.
        if (n < size) return this.#decoder.decode(new Uint8Array(this.#memory.buffer, this.#errBuf, n));
        size = n + 1;
      }
    } catch {
      // The instance failed; the caller reports the status.
    }
    return '';
  }

  #text(name) {
    let size = 64;
    for (let attempt = 0; attempt < 2; attempt++) {
      const base = this.#reserve(size);
      const n = this.#call(name, base, size);
      if (n < 0) throw statusError(name, n, this.#lastError());
      // The copy is NUL-terminated: it is whole only if n < size.
      if (n < size) return this.#decoder.decode(new Uint8Array(this.#memory.buffer, base, n));
      size = n + 1;
    }
    throw new KvHashError(`${name}: text kept growing`, Status.INTERNAL, name);
  }

  // --- memory ----------------------------------------------------------

  /**
   * One live allocation reused for every call's buffers (it only grows):
   * it saves an alloc and a free per buffer per call. Views of memory
   * must be taken after it, since allocating may grow memory.
   */
  #reserve(size) {
    if (size <= this.#scratchCap) return this.#scratch;
    if (size > 0xffff_fff0) {
      throw new KvHashError(`kvhash: the call needs ${size} bytes of arguments and results, more than a 32-bit module holds`,
        Status.NO_MEMORY, 'kvhash_alloc');
    }
    // Doubling amortizes growth, but not past 1 GiB, all a module's
    // buffers may hold; and if the module refuses the doubled size, the
    // exact one may still fit.
    let grown = Math.max(size, 4096);
    if (2 * this.#scratchCap > grown && 2 * this.#scratchCap <= MAX_BUFFERS) grown = 2 * this.#scratchCap;
    grown = Math.ceil(grown / 8) * 8;
    if (this.#scratch !== 0) {
      this.#call('kvhash_free', this.#scratch);
      this.#scratch = 0;
      this.#scratchCap = 0;
    }
    let ptr = this.#call('kvhash_alloc', grown) >>> 0;
    const exact = Math.ceil(size / 8) * 8;
    if (ptr === 0 && exact < grown) {
      grown = exact;
      ptr = this.#call('kvhash_alloc', grown) >>> 0;
    }
    if (ptr === 0) {
      // kvhash_alloc fails only for a request the module's memory cannot
      // take; its message says how much it holds.
      const why = this.#lastError();
      throw statusError('kvhash_alloc', Status.NO_MEMORY,
        `the call needs ${size} bytes of arguments and results, too large for the module${why ? `: ${why}` : ''}`);
    }
    this.#scratch = ptr;
    this.#scratchCap = grown;
    return ptr;
  }

  #writeBytes(ptr, bytes) {
    if (bytes.length > 0) new Uint8Array(this.#memory.buffer, ptr, bytes.length).set(bytes);
  }

  #writeU32s(ptr, values) {
    if (values.length === 0) return;
    if (LITTLE_ENDIAN) {
      new Uint32Array(this.#memory.buffer, ptr, values.length).set(values);
      return;
    }
    const dv = new DataView(this.#memory.buffer);
    for (let i = 0; i < values.length; i++) dv.setUint32(ptr + 4 * i, values[i], true);
  }

  #writeU64s(ptr, values) {
    if (values.length === 0) return;
    if (LITTLE_ENDIAN) {
      new BigUint64Array(this.#memory.buffer, ptr, values.length).set(values);
      return;
    }
    const dv = new DataView(this.#memory.buffer);
    for (let i = 0; i < values.length; i++) dv.setBigUint64(ptr + 8 * i, values[i], true);
  }

  #readU32(ptr) {
    return new DataView(this.#memory.buffer).getUint32(ptr, true);
  }

  #readU64(ptr) {
    return new DataView(this.#memory.buffer).getBigUint64(ptr, true);
  }

  #readU32s(ptr, n) {
    if (LITTLE_ENDIAN) return new Uint32Array(this.#memory.buffer, ptr, n).slice();
    const dv = new DataView(this.#memory.buffer);
    return Uint32Array.from({ length: n }, (_, i) => dv.getUint32(ptr + 4 * i, true));
  }

  #readU64s(ptr, n) {
    if (LITTLE_ENDIAN) return new BigUint64Array(this.#memory.buffer, ptr, n).slice();
    const dv = new DataView(this.#memory.buffer);
    const out = new BigUint64Array(n);
    for (let i = 0; i < n; i++) out[i] = dv.getBigUint64(ptr + 8 * i, true);
    return out;
  }
}

