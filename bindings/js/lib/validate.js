// Conversions of JS arguments into the typed values the module takes.
// Only JS *types* and representability are checked here (a token must be
// an integer that fits a u32, a hash a u64); what the values mean (a zero
// block size, too many multimodal entries, ...) is the module's call.

const U32_MAX = 0xffff_ffff;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return v.constructor?.name ?? 'an object';
  return `${typeof v} ${String(v)}`;
}

/** Tokens as a Uint32Array: the array itself when it is one, else a checked copy. */
export function toTokens(tokens) {
  if (tokens instanceof Uint32Array) return tokens;
  if (!Array.isArray(tokens)) {
    throw new TypeError(`tokens must be a Uint32Array or an array of numbers, got ${describe(tokens)}`);
  }
  const out = new Uint32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (typeof t !== 'number' || !Number.isInteger(t)) {
      throw new TypeError(`tokens[${i}] must be an integer number, got ${describe(t)}`);
    }
    if (t < 0 || t > U32_MAX) {
      throw new RangeError(`tokens[${i}] is ${t}: a token id must lie in [0, 2^32-1]`);
    }
    out[i] = t;
  }
  return out;
}

/** An integer argument passed to the module as an i64 (the block size). */
export function toI64(v, what) {
  if (typeof v === 'bigint') {
    if (v < I64_MIN || v > I64_MAX) throw new RangeError(`${what} is ${v}: out of the 64-bit signed range`);
    return v;
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new TypeError(`${what} must be an integer, got ${describe(v)}`);
  }
  if (!Number.isSafeInteger(v)) throw new RangeError(`${what} is ${v}: not a safe integer`);
  return BigInt(v);
}

/**
 * A u64 as a bigint. Numbers are accepted only while they are exact
 * (safe integers): a hash above 2^53 written as a number has already lost
 * bits, so it must be a bigint.
 */
export function toU64(v, what) {
  if (typeof v === 'bigint') {
    if (v < 0n || v > U64_MAX) throw new RangeError(`${what} is ${v}: a u64 must lie in [0, 2^64-1]`);
    return v;
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new TypeError(`${what} must be a bigint (or a safe integer number), got ${describe(v)}`);
  }
  if (v < 0) throw new RangeError(`${what} is ${v}: a u64 must lie in [0, 2^64-1]`);
  if (!Number.isSafeInteger(v)) {
    throw new TypeError(`${what} is ${v}: above 2^53 a number is inexact, pass a bigint`);
  }
  return BigInt(v);
}

/** A u32 number (a data-parallel rank). */
export function toU32(v, what) {
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new TypeError(`${what} must be an integer number, got ${describe(v)}`);
  }
  if (v < 0 || v > U32_MAX) throw new RangeError(`${what} is ${v}: must lie in [0, 2^32-1]`);
  return v;
}

/** u64 values as a BigUint64Array: the array itself when it is one, else a checked copy. */
export function toU64Array(values, what) {
  if (values instanceof BigUint64Array) return values;
  if (!Array.isArray(values)) {
    throw new TypeError(`${what} must be a BigUint64Array or an array of bigint, got ${describe(values)}`);
  }
  const out = new BigUint64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = toU64(values[i], `${what}[${i}]`);
  return out;
}

/** An optional name: null and undefined are absent (""), like the spec's empty name. */
export function toName(v, what) {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new TypeError(`${what} must be a string, null or undefined, got ${describe(v)}`);
  return v;
}

export function toBool(v, what) {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new TypeError(`${what} must be a boolean, got ${describe(v)}`);
  return v;
}

/** options.mmHashes: null, or one entry per block, each null or u64 values. */
export function toMMHashes(mm) {
  if (mm === undefined || mm === null) return null;
  if (!Array.isArray(mm)) {
    throw new TypeError(`options.mmHashes must be an array (one entry per block) or null, got ${describe(mm)}`);
  }
  return mm.map((entry, i) =>
    entry === null || entry === undefined ? null : toU64Array(entry, `options.mmHashes[${i}]`),
  );
}

/**
 * Checks that v is a plain object whose keys are all in `accepted`: a
 * misspelled option (Python's lora_name, a guessed lora) would otherwise
 * be ignored and give a silently different hash. undefined is {}.
 */
export function checkOptions(v, what, accepted) {
  if (v === undefined) return {};
  const proto = v !== null && typeof v === 'object' ? Object.getPrototypeOf(v) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(`${what} must be an object like { ${accepted.join(', ')} }, got ${describe(v)}`);
  }
  for (const key of Object.keys(v)) {
    if (!accepted.includes(key)) {
      const camel = key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
      const hint = camel !== key && accepted.includes(camel) ? ` (did you mean '${camel}'?)` : '';
      throw new TypeError(`${what} has an unknown key '${key}'${hint}; the accepted keys are ${accepted.join(', ')}`);
    }
  }
  return v;
}

export const HASH_OPTIONS = ['loraName', 'cacheNamespace', 'isEagle', 'mmHashes'];
export const SEED_OPTIONS = ['loraName', 'cacheNamespace'];

/** The options object of blockHashes: undefined or null for none. */
export function toOptions(options) {
  if (options === undefined || options === null) {
    return { loraName: '', cacheNamespace: '', isEagle: false, mmHashes: null };
  }
  checkOptions(options, 'options', HASH_OPTIONS);
  return {
    loraName: toName(options.loraName, 'options.loraName'),
    cacheNamespace: toName(options.cacheNamespace, 'options.cacheNamespace'),
    isEagle: toBool(options.isEagle, 'options.isEagle'),
    mmHashes: toMMHashes(options.mmHashes),
  };
}

/** JSON text or its UTF-8 bytes, as bytes. */
export function toJSONBytes(v, what, encoder) {
  if (typeof v === 'string') return encoder.encode(v);
  if (v instanceof Uint8Array) return v; // Buffer is a Uint8Array
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  throw new TypeError(`${what} must be a JSON string, a Uint8Array or an ArrayBuffer, got ${describe(v)}`);
}
