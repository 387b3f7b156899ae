//! Replays a kvhash index stream (core/internal/indexbench/stream.go) through
//! one of Dynamo 1.6.1's own indexes and prints the same JSON figures as
//! `indexstream replay`, so `indexstream compare` can set them side by side.
//!
//!     kvhash-dynamo-bench replay --tree radix|crtc [--mem] STREAM.kvs
//!
//! radix: `RadixTree`, applied and matched by direct calls on this thread.
//! crtc:  `ConcurrentRadixTreeCompressed`. Its events can only be applied by
//!        its own writer loop (`SyncIndexer::worker`, fed from a channel), as
//!        Dynamo runs it, so it is timed in two passes: apply throughput with
//!        every event queued to one writer thread and a single flush at the end
//!        (the queueing overlaps the applying, which favours Dynamo), and the
//!        queries in a second replay that flushes the writer before each query
//!        (the flush is not timed).
//! --mem: count live heap bytes (a counting allocator) instead of timing.

mod alloc;
mod stream;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use dynamo_kv_router::ConcurrentRadixTreeCompressed;
use dynamo_kv_router::RadixTree;
use dynamo_kv_router::indexer::{SyncIndexer, WorkerTask};
use dynamo_kv_router::protocols::{
    ExternalSequenceBlockHash, KvCacheEvent, KvCacheEventData, KvCacheRemoveData, KvCacheStoreData,
    KvCacheStoredBlockData, LocalBlockHash, OverlapScores, RouterEvent,
};

use stream::{Record, Stream};

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

/// FNV-1a over 64-bit words, as `indexbench.Digest`.
struct Digest(u64);

impl Digest {
    fn word(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(1099511628211);
    }
    /// One query's result: count, then (id, dp rank, score) by worker.
    fn scores(&mut self, s: &OverlapScores) {
        let mut v: Vec<(u64, u32, u32)> =
            s.scores.iter().map(|(w, &sc)| (w.worker_id, w.dp_rank, sc)).collect();
        v.sort_unstable();
        self.word(v.len() as u64);
        for (id, rank, score) in v {
            self.word(id);
            self.word(rank as u64);
            self.word(score as u64);
        }
    }
}

#[derive(Default)]
struct Result_ {
    block_ops: u64,
    index_nanos: u64,
    apply_blocks: u64,
    apply_nanos: u64,
    route: Vec<u64>,
    probe: Vec<u64>,
    errors: u64,
    digest: u64,
    pairs: i64,
    bytes: i64,
}

fn percentile(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[(p / 100.0 * (v.len() - 1) as f64) as usize]
}

/// The stream's events as Dynamo's types, built before the timed replay
/// (kvhash's side builds its block slices before its replay too).
fn events(s: &Stream) -> Vec<Option<RouterEvent>> {
    s.records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (worker, data) = match r {
                Record::Stored { worker, parent, blocks } => (
                    *worker,
                    KvCacheEventData::Stored(KvCacheStoreData {
                        parent_hash: parent.map(ExternalSequenceBlockHash),
                        start_position: None,
                        blocks: blocks
                            .iter()
                            .map(|&(b, t)| KvCacheStoredBlockData {
                                block_hash: ExternalSequenceBlockHash(b),
                                tokens_hash: LocalBlockHash(t),
                                mm_extra_info: None,
                            })
                            .collect(),
                    }),
                ),
                Record::Removed { worker, hashes } => (
                    *worker,
                    KvCacheEventData::Removed(KvCacheRemoveData {
                        block_hashes: hashes.iter().map(|&h| ExternalSequenceBlockHash(h)).collect(),
                    }),
                ),
                _ => return None,
            };
            Some(RouterEvent::new(
                worker as u64,
                KvCacheEvent { event_id: i as u64, data, dp_rank: 0 },
            ))
        })
        .collect()
}

fn queries(s: &Stream) -> Vec<Vec<LocalBlockHash>> {
    s.records
        .iter()
        .map(|r| match r {
            Record::Match(q) | Record::Probe(q) => q.iter().map(|&h| LocalBlockHash(h)).collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn event_blocks(r: &Record) -> u64 {
    match r {
        Record::Stored { blocks, .. } => blocks.len() as u64,
        Record::Removed { hashes, .. } => hashes.len() as u64,
        _ => 0,
    }
}

fn pairs(s: &Stream) -> i64 {
    s.records
        .iter()
        .map(|r| match r {
            Record::Stored { blocks, .. } => blocks.len() as i64,
            Record::Removed { hashes, .. } => -(hashes.len() as i64),
            _ => 0,
        })
        .sum()
}

fn replay_radix(s: &Stream, mem: bool) -> Result_ {
    let qs = queries(s);
    let mut res = Result_ { pairs: pairs(s), ..Default::default() };
    let live0 = alloc::live();
    let evs = events(s);
    let mut tree = RadixTree::new();
    let mut d = Digest(14695981039346656037);
    let mut probes = Vec::new();
    for (i, (r, ev)) in s.records.iter().zip(evs).enumerate() {
        match r {
            Record::Match(_) => {
                let q = qs[i].clone();
                let n = q.len() as u64;
                let t0 = Instant::now();
                let sc = tree.find_matches(q, false);
                let dt = t0.elapsed().as_nanos() as u64;
                res.index_nanos += dt;
                res.route.push(dt);
                res.block_ops += n;
                d.scores(&sc);
            }
            Record::Probe(_) => probes.push(i),
            _ => {
                let n = event_blocks(r);
                let ev = ev.expect("event record");
                let t0 = Instant::now();
                let ok = tree.apply_event(ev).is_ok();
                let dt = t0.elapsed().as_nanos() as u64;
                res.errors += u64::from(!ok);
                res.index_nanos += dt;
                res.apply_nanos += dt;
                res.block_ops += n;
                res.apply_blocks += n;
            }
        }
    }
    if mem {
        res.bytes = alloc::live() - live0;
    }
    for pass in 0..s.probe_passes.max(1) {
        for &i in &probes {
            let q = qs[i].clone();
            let t0 = Instant::now();
            let sc = tree.find_matches(q, false);
            res.probe.push(t0.elapsed().as_nanos() as u64);
            if pass == 0 {
                d.scores(&sc);
            }
        }
    }
    res.digest = d.0;
    res
}

/// One writer thread running Dynamo's own writer loop over the tree.
struct Writer {
    tx: flume::Sender<WorkerTask>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn start(tree: &Arc<ConcurrentRadixTreeCompressed>) -> Writer {
        let (tx, rx) = flume::unbounded();
        let t = tree.clone();
        let thread = std::thread::spawn(move || {
            t.worker(rx, None).expect("crtc writer loop");
        });
        Writer { tx, thread: Some(thread) }
    }
    fn send(&self, ev: RouterEvent) {
        self.tx.send(WorkerTask::Event(ev)).expect("writer alive");
    }
    /// Returns once every event sent before has been applied.
    fn flush(&self) {
        let (otx, orx) = tokio::sync::oneshot::channel();
        self.tx.send(WorkerTask::Flush(otx)).expect("writer alive");
        orx.blocking_recv().expect("flush answered");
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.tx.send(WorkerTask::Terminate);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn replay_crtc(s: &Stream, mem: bool) -> Result_ {
    let qs = queries(s);
    let mut res = Result_ { pairs: pairs(s), ..Default::default() };
    // Pass 1: apply throughput, pipelined into the writer.
    if !mem {
        let evs = events(s);
        let tree = Arc::new(ConcurrentRadixTreeCompressed::new());
        let w = Writer::start(&tree);
        let t0 = Instant::now();
        for (r, ev) in s.records.iter().zip(evs) {
            if let Some(ev) = ev {
                res.apply_blocks += event_blocks(r);
                w.send(ev);
            }
        }
        w.flush();
        res.apply_nanos = t0.elapsed().as_nanos() as u64;
        res.block_ops += res.apply_blocks;
        res.index_nanos += res.apply_nanos;
    }
    // Pass 2: the queries, each after the events before it are applied.
    let live0 = alloc::live();
    let evs = events(s);
    let tree = Arc::new(ConcurrentRadixTreeCompressed::new());
    let w = Writer::start(&tree);
    let mut d = Digest(14695981039346656037);
    let mut probes = Vec::new();
    let mut pending = false;
    for (i, (r, ev)) in s.records.iter().zip(evs).enumerate() {
        match r {
            Record::Match(_) | Record::Probe(_) if pending => {
                w.flush();
                pending = false;
            }
            _ => {}
        }
        match r {
            Record::Match(_) => {
                let q = &qs[i];
                let t0 = Instant::now();
                let sc = tree.find_matches(q, false);
                let dt = t0.elapsed().as_nanos() as u64;
                res.index_nanos += dt;
                res.route.push(dt);
                res.block_ops += q.len() as u64;
                d.scores(&sc);
            }
            Record::Probe(_) => probes.push(i),
            _ => {
                w.send(ev.expect("event record"));
                pending = true;
            }
        }
    }
    w.flush();
    if mem {
        res.bytes = alloc::live() - live0;
    }
    for pass in 0..s.probe_passes.max(1) {
        for &i in &probes {
            let t0 = Instant::now();
            let sc = tree.find_matches(&qs[i], false);
            res.probe.push(t0.elapsed().as_nanos() as u64);
            if pass == 0 {
                d.scores(&sc);
            }
        }
    }
    res.digest = d.0;
    res
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: kvhash-dynamo-bench replay --tree radix|crtc [--mem] STREAM.kvs";
    if args.first().map(String::as_str) != Some("replay") {
        eprintln!("{usage}");
        return ExitCode::from(2);
    }
    let (mut tree, mut mem, mut path) = (None, false, None);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--tree" => tree = it.next().cloned(),
            "--mem" => mem = true,
            p => path = Some(p.to_string()),
        }
    }
    let (Some(tree), Some(path)) = (tree, path) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    if mem {
        alloc::ON.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let buf = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("kvhash-dynamo-bench: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let s = match stream::parse(&buf) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kvhash-dynamo-bench: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    drop(buf);
    let mut res = match tree.as_str() {
        "radix" => replay_radix(&s, mem),
        "crtc" => replay_crtc(&s, mem),
        other => {
            eprintln!("kvhash-dynamo-bench: unknown tree {other:?} (radix or crtc)");
            return ExitCode::from(2);
        }
    };
    let per_s = |n: u64, ns: u64| if ns == 0 { 0.0 } else { n as f64 / (ns as f64 / 1e9) };
    let bpp = if mem && res.pairs > 0 { res.bytes as f64 / res.pairs as f64 } else { 0.0 };
    let name = std::path::Path::new(&path).file_name().map(|f| f.to_string_lossy().into_owned());
    println!(
        "{{\"impl\":\"{}\",\"stream\":\"{}\",\"block_ops_per_s\":{:.0},\"apply_blocks_per_s\":{:.0},\
\"probe_p50_ns\":{},\"probe_p99_ns\":{},\"route_p50_ns\":{},\"route_p99_ns\":{},\
\"digest\":\"{:016x}\",\"pairs\":{},\"bytes_per_pair\":{:.1},\"errors\":{},\"capacity\":{},\"workers\":{},\"block_size\":{}}}",
        tree,
        name.unwrap_or_default(),
        per_s(res.block_ops, res.index_nanos),
        per_s(res.apply_blocks, res.apply_nanos),
        percentile(&mut res.probe, 50.0),
        percentile(&mut res.probe, 99.0),
        percentile(&mut res.route, 50.0),
        percentile(&mut res.route, 99.0),
        res.digest,
        res.pairs,
        bpp,
        res.errors,
        s.capacity,
        s.workers,
        s.block_size,
    );
    ExitCode::SUCCESS
}
