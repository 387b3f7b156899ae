//! Reads the stream files `indexstream gen` writes (format documented in
//! core/internal/indexbench/stream.go): a header, then records until EOF.

use std::fmt;

pub enum Record {
    /// A routing query (timed, counted in block-ops).
    Match(Vec<u64>),
    Stored { worker: u32, parent: Option<u64>, blocks: Vec<(u64, u64)> },
    Removed { worker: u32, hashes: Vec<u64> },
    /// A 64-block query against the final index.
    Probe(Vec<u64>),
}

pub struct Stream {
    pub workers: u32,
    pub block_size: u32,
    pub capacity: u32,
    pub probe_passes: u32,
    pub records: Vec<Record>,
}

#[derive(Debug)]
pub struct StreamError(String);

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StreamError {}

const MAGIC: &[u8] = b"KVSTRM1\n";
/// Bounds one record's length so a corrupt file is an error, not a huge allocation.
const MAX_COUNT: u32 = 1 << 24;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], StreamError> {
        if self.buf.len() - self.pos < n {
            return Err(StreamError(format!("truncated at byte {}", self.pos)));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, StreamError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, StreamError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, StreamError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn count(&mut self) -> Result<usize, StreamError> {
        let n = self.u32()?;
        if n > MAX_COUNT {
            return Err(StreamError(format!("count {n} at byte {} is over {MAX_COUNT}", self.pos)));
        }
        Ok(n as usize)
    }
    fn hashes(&mut self) -> Result<Vec<u64>, StreamError> {
        let n = self.count()?;
        (0..n).map(|_| self.u64()).collect()
    }
}

pub fn parse(buf: &[u8]) -> Result<Stream, StreamError> {
    if !buf.starts_with(MAGIC) {
        return Err(StreamError("not a stream file (no KVSTRM1 header)".into()));
    }
    let mut r = Reader { buf, pos: MAGIC.len() };
    let mut s = Stream {
        workers: r.u32()?,
        block_size: r.u32()?,
        capacity: r.u32()?,
        probe_passes: r.u32()?,
        records: Vec::new(),
    };
    while r.pos < buf.len() {
        let kind = r.u8()?;
        let rec = match kind {
            b'M' => Record::Match(r.hashes()?),
            b'P' => Record::Probe(r.hashes()?),
            b'S' => {
                let worker = r.u32()?;
                let has_parent = r.u8()? == 1;
                let parent = r.u64()?;
                let n = r.count()?;
                let blocks = (0..n)
                    .map(|_| Ok((r.u64()?, r.u64()?)))
                    .collect::<Result<Vec<_>, StreamError>>()?;
                Record::Stored { worker, parent: has_parent.then_some(parent), blocks }
            }
            b'R' => {
                let worker = r.u32()?;
                Record::Removed { worker, hashes: r.hashes()? }
            }
            other => {
                return Err(StreamError(format!(
                    "record {}: unknown kind {:?}",
                    s.records.len(),
                    other as char
                )));
            }
        };
        s.records.push(rec);
    }
    Ok(s)
}
