// Types of @kvhash/wasm. u64 values (hashes, seeds, worker ids) are bigint;
// inputs also accept numbers while they are safe integers.

/** A u64 argument: a bigint, or a number that is a safe integer. */
export type U64 = bigint | number;

/** Options objects accept exactly these keys: any other key throws a TypeError. */
export interface HashOptions {
  /** LoRA adapter name; null, undefined or "" mean none. */
  loraName?: string | null;
  /** Cache namespace (cache_salt); null, undefined or "" mean none. */
  cacheNamespace?: string | null;
  /** EAGLE windows of blockSize + 1 tokens taken every blockSize tokens. */
  isEagle?: boolean | null;
  /** Per block (eagle window): null or the multimodal object hashes; at most one entry per block. */
  mmHashes?: ReadonlyArray<BigUint64Array | ReadonlyArray<U64> | null | undefined> | null;
}

export interface SeedOptions {
  loraName?: string | null;
  cacheNamespace?: string | null;
}

export interface Match {
  workerId: bigint;
  dpRank: number;
  /** Consecutive prefix blocks of the query the worker rank holds. */
  score: number;
  /** Blocks the worker rank holds in all. */
  treeSize: number;
}

export interface OverlapScores {
  /** Score per worker rank, keyed "workerId:dpRank" (workerId in decimal). */
  scores: Map<string, number>;
  /** Tree size per worker rank, same keys. */
  treeSizes: Map<string, number>;
  /** Always empty: the index does not track access frequency. */
  frequencies: number[];
  /** The same results as a list sorted by worker rank. */
  matches: Match[];
}

export type ViolationCounts = Record<
  | 'parent_not_found'
  | 'block_not_found'
  | 'hash_mismatch'
  | 'self_reference'
  | 'duplicate_store'
  | 'name_reused',
  number
>;

export interface IndexStats {
  mode: 'warn' | 'enforce';
  nodes: number;
  violations: ViolationCounts;
  workers: {
    worker_id: bigint;
    dp_rank: number;
    blocks: number;
    unstable: boolean;
    violations: ViolationCounts;
  }[];
}

export interface WorkerRank {
  workerId: bigint;
  dpRank: number;
}

export type Mode = 'env' | 'warn' | 'enforce';

export interface RadixTreeOptions {
  /** 'env' (default): enforce if KVHASH_ENFORCE_ENGINE_HASH_STABILITY or DYN_KV_ENFORCE_ENGINE_HASH_STABILITY is 1/true. */
  mode?: Mode;
  /** The module instance to live in (default: the package's default module). */
  module?: KvHashModule;
}

/** JSON text, or its UTF-8 bytes. */
export type JSONInput = string | Uint8Array | ArrayBuffer;

export class RadixTree {
  constructor(options?: RadixTreeOptions);
  readonly module: KvHashModule;
  findMatches(sequence: BigUint64Array | ReadonlyArray<U64>, earlyExit?: boolean): OverlapScores;
  /** Applies a KvCacheEvent (Dynamo JSON) from a worker. */
  applyEvent(workerId: U64, event: JSONInput): void;
  /** Applies a router event ({"worker_id", "storage_tier", "event"}). */
  applyRouterEvent(event: JSONInput): void;
  clearWorker(workerId: U64, dpRank?: number): void;
  clearAllBlocks(workerId: U64): void;
  removeWorker(workerId: U64): void;
  /** Router events as JSON strings (u64 values as bare integers: parse them bigint-safely). */
  dumpTreeAsEvents(): string[];
  stats(): IndexStats;
  statsJSON(): string;
  workers(): WorkerRank[];
  /** Whether stability violations are errors; setting it switches the mode to 'enforce' or 'warn'. */
  enforce: boolean;
  /** Releases the tree; idempotent. Later calls throw KVHASH_ERR_UNKNOWN_HANDLE. */
  free(): void;
  [Symbol.dispose](): void;
}

/** The result of blockAndSequenceHashes: both arrays have one entry per block. */
export interface BlockAndSequenceHashes {
  blockHashes: BigUint64Array;
  sequenceHashes: BigUint64Array;
}

export interface InstanceOptions {
  /**
   * Bytes of linear memory the instance may use (default 4 GiB, the wasm32
   * maximum); requests that would take its heap past 5/8 of it throw
   * KVHASH_ERR_NO_MEMORY and change nothing.
   */
  memoryLimit?: number;
}

export class KvHashModule {
  constructor(wasmModule: WebAssembly.Module, options?: InstanceOptions);
  /** The raw exports of the instance (the kvhash ABI), for tools and tests. */
  readonly exports: WebAssembly.Exports;
  readonly version: string;
  readonly specVersion: string;
  blockHashes(tokens: Uint32Array | ReadonlyArray<number>, blockSize: number | bigint, options?: HashOptions | null): BigUint64Array;
  /** Local block hashes and their sequence hashes in one module call (faster than the two calls). */
  blockAndSequenceHashes(tokens: Uint32Array | ReadonlyArray<number>, blockSize: number | bigint, options?: HashOptions | null): BlockAndSequenceHashes;
  sequenceHashes(blockHashes: BigUint64Array | ReadonlyArray<U64>): BigUint64Array;
  seed(options?: SeedOptions): bigint;
  chainStep(parent: U64, local: U64): bigint;
  /** XXH3-64 with seed 1337 over raw bytes (for checking a build against the raw-bytes vectors). */
  rawHash(data: Uint8Array): bigint;
  blockCount(numTokens: number, blockSize: number | bigint, isEagle?: boolean): number;
}

export interface LoadOptions extends InstanceOptions {
  /** Path of kvhash.wasm (default: defaultWasmPath()). */
  wasmPath?: string | URL;
  /** The module's bytes, instead of a path. */
  wasmBytes?: Uint8Array | ArrayBuffer;
  /** An already compiled module, instead of bytes or a path. */
  wasmModule?: WebAssembly.Module;
}

export function load(options?: LoadOptions): Promise<KvHashModule>;
export function loadSync(options?: LoadOptions): KvHashModule;
/** $KVHASH_WASM, else kvhash.wasm in the package, else the repository's build/kvhash.wasm. */
export function defaultWasmPath(): string;
/** The default module, loaded synchronously on first use. */
export function defaultModule(): KvHashModule;

export function blockHashes(tokens: Uint32Array | ReadonlyArray<number>, blockSize: number | bigint, options?: HashOptions | null): BigUint64Array;
export function blockAndSequenceHashes(tokens: Uint32Array | ReadonlyArray<number>, blockSize: number | bigint, options?: HashOptions | null): BlockAndSequenceHashes;
export function sequenceHashes(blockHashes: BigUint64Array | ReadonlyArray<U64>): BigUint64Array;
export function seed(options?: SeedOptions): bigint;
export function chainStep(parent: U64, local: U64): bigint;
export function rawHash(data: Uint8Array): bigint;
export function blockCount(numTokens: number, blockSize: number | bigint, isEagle?: boolean): number;
export function workerKey(workerId: U64, dpRank: number): string;

export const Status: Readonly<{
  OK: 0;
  INVALID_ARGUMENT: -1;
  BUFFER_TOO_SMALL: -2;
  UNKNOWN_HANDLE: -3;
  DECODE: -4;
  REJECTED: -5;
  INTERNAL: -6;
  OUT_OF_BOUNDS: -7;
  /** The module's memory budget cannot take the request (too large, or too many live trees). */
  NO_MEMORY: -8;
}>;

export function statusCode(status: number): string;

/** A failed module call other than an invalid argument (those are RangeErrors with the same fields). */
export class KvHashError extends Error {
  readonly status: number;
  /** e.g. "KVHASH_ERR_DECODE". */
  readonly code: string;
  /** The export that failed. */
  readonly op: string;
}
