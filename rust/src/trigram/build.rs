//! The parallel index builder.
//!
//! Files are processed in batches: the rayon pool reads, checks, compresses and extracts the
//! trigrams of one batch while the calling thread appends the previous batch's posting lists
//! and content frames (document ids are assigned in input order, so lists stay sorted).
//! Memory stays bounded by the compressed postings plus two batches of file content.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::format::{self, Header};
use super::postings::{self, put_varint};
use super::{keytable, lz4hc, ngram};
use crate::error::{CoreError, CoreResult};
use crate::walk::SkipReason;

/// One chunk of a file as the indexer defined it: 1-based inclusive lines and its id.
#[derive(Debug, Clone)]
pub struct ChunkSpan {
    pub start_line: u32,
    pub end_line: u32,
    pub id: String,
}

/// A file to index (a path relative to the root) and its chunks.
#[derive(Debug, Clone)]
pub struct BuildInput {
    pub path: String,
    pub chunks: Vec<ChunkSpan>,
}

/// Builder settings.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// 0 (the default) stores content as LZ4 blocks (~0.37x of source code, decompressed at
    /// several GB/s); a zstd level (1..=22) stores zstd frames instead (~0.26x at level 1,
    /// about three times slower to decompress, so every literal query pays for it).
    pub zstd_level: i32,
    /// Files per batch.
    pub batch: usize,
    /// File names of the segment inside `out_dir` (a from-scratch build uses the defaults,
    /// `trigram.idx` and `content.bin`; an incremental update names each new segment).
    pub index_file: String,
    pub content_file: String,
    /// The posting table's kind: `None` decides by the number of files (tests force one).
    pub dense: Option<bool>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            zstd_level: 0,
            batch: 256,
            index_file: format::INDEX_FILE.into(),
            content_file: format::CONTENT_FILE.into(),
            dense: None,
        }
    }
}

/// Files this small are stored as is: compression gains a few bytes and costs a decode.
const STORE_BELOW: usize = 64;

/// What a build did; every refused file is listed with its reason.
#[derive(Debug, Default, Clone)]
pub struct BuildReport {
    /// Written into both files' headers: a segment list names it to tie its files together.
    pub build_id: u64,
    pub docs: u32,
    pub trigrams: u32,
    pub chunks: u32,
    pub content_bytes: u64,
    pub stored_bytes: u64,
    pub index_bytes: u64,
    pub skipped: Vec<(String, SkipReason)>,
}

struct Prepared {
    compressed: Vec<u8>,
    codec: u8,
    crc: u32,
    raw_len: u32,
    trigrams: Vec<u32>,
    /// Block filters (documents of at least `format::BLOCK_MIN_DOC` bytes).
    blocks: Vec<u8>,
}

/// Per-thread scratch: the zstd compressor (when used, with its level: a later build of
/// another level in the same process must not reuse it) and the trigram dedup bitmap.
struct Scratch {
    zstd: Option<(i32, zstd::bulk::Compressor<'static>)>,
    seen: ngram::TrigramSet,
    lz4: lz4hc::Tables,
}

impl Scratch {
    fn new() -> Self {
        Self {
            zstd: None,
            seen: ngram::TrigramSet::new(),
            lz4: lz4hc::Tables::default(),
        }
    }
}

thread_local! {
    // One per worker thread for the whole build: `map_init` would make one per rayon job,
    // and the 16 MiB table is costly to fault in.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new());
}

fn compress(bytes: &[u8], level: i32, scratch: &mut Scratch) -> Result<(Vec<u8>, u8), SkipReason> {
    if bytes.len() < STORE_BELOW {
        return Ok((bytes.to_vec(), format::CODEC_STORED));
    }
    let (out, codec) = if level <= 0 {
        (lz4hc::compress(bytes, &mut scratch.lz4), format::CODEC_LZ4)
    } else {
        if scratch.zstd.as_ref().is_none_or(|(l, _)| *l != level) {
            let c = zstd::bulk::Compressor::new(level).map_err(|_| SkipReason::Unreadable)?;
            scratch.zstd = Some((level, c));
        }
        let (_, comp) = scratch.zstd.as_mut().ok_or(SkipReason::Unreadable)?;
        let out = comp.compress(bytes).map_err(|_| SkipReason::Unreadable)?;
        (out, format::CODEC_ZSTD)
    };
    if out.len() >= bytes.len() {
        return Ok((bytes.to_vec(), format::CODEC_STORED));
    }
    Ok((out, codec))
}

fn prepare(
    root: &Path,
    input: &BuildInput,
    scratch: &mut Scratch,
    level: i32,
) -> Result<Prepared, SkipReason> {
    let path = root.join(&input.path);
    // the walker selected it inside the root; a file swapped for a link out since is refused
    crate::walk::confine_real(root, &path)?;
    let bytes = crate::walk::read_regular(&path, true)?;
    if memchr::memchr(0, &bytes).is_some() {
        return Err(SkipReason::Binary);
    }
    let raw_len = u32::try_from(bytes.len()).map_err(|_| SkipReason::TooLarge)?;
    let (compressed, codec) = compress(&bytes, level, scratch)?;
    let mut trigrams = Vec::new();
    scratch.seen.distinct(&bytes, &mut trigrams);
    let mut blocks = Vec::new();
    if raw_len >= format::BLOCK_MIN_DOC {
        blocks.reserve(format::filter_blocks(raw_len) * format::BLOCK_FILTER_BYTES);
        ngram::block_filters(&bytes, &mut blocks);
    }
    // The stored block's checksum (format 4): checked before any decoding.
    let crc = crc32fast::hash(&compressed);
    Ok(Prepared {
        compressed,
        codec,
        crc,
        raw_len,
        trigrams,
        blocks,
    })
}

/// Posting lists under construction, addressed by trigram through a slot table: a direct
/// 2^24-entry table for a large build (no hashing in the hot loop), a hash map for a small
/// one (an incremental update of a few files must not fill and scan 64 MiB).
struct Postings {
    slot_of: SlotOf,
    slots: Vec<Slot>,
}

enum SlotOf {
    Dense(Vec<u32>),
    Sparse(rustc_hash::FxHashMap<u32, u32>),
}

/// Builds of fewer files than this use the hash map.
const SPARSE_BELOW: usize = 1024;

/// One list: per document a 4-bit follow mask byte then the delta varint, in one stream (one
/// buffer per list keeps the single-threaded merge to fewer cache misses); split into the
/// on-disk layout when written.
struct Slot {
    last: u32,
    count: u32,
    stream: Vec<u8>,
}

impl Postings {
    fn new(n_inputs: usize, dense: Option<bool>) -> Self {
        let slot_of = if !dense.unwrap_or(n_inputs >= SPARSE_BELOW) {
            SlotOf::Sparse(rustc_hash::FxHashMap::default())
        } else {
            SlotOf::Dense(vec![u32::MAX; 1 << 24])
        };
        Self {
            slot_of,
            slots: Vec::new(),
        }
    }

    /// Add document `doc` for `packed` trigrams (`trigram << 8 | follow mask`).
    fn add(&mut self, doc: u32, packed: &[u32]) {
        for &x in packed {
            let (t, mask) = (x >> 8, ngram::fold_mask(x as u8));
            let next = self.slots.len() as u32;
            let idx = match &mut self.slot_of {
                SlotOf::Dense(table) => &mut table[t as usize],
                SlotOf::Sparse(map) => map.entry(t).or_insert(u32::MAX),
            };
            if *idx == u32::MAX {
                *idx = next;
                let mut stream = Vec::with_capacity(8);
                stream.push(mask);
                put_varint(&mut stream, doc);
                self.slots.push(Slot {
                    last: doc,
                    count: 1,
                    stream,
                });
            } else {
                let slot = &mut self.slots[*idx as usize];
                slot.stream.push(mask);
                put_varint(&mut slot.stream, doc - slot.last);
                slot.last = doc;
                slot.count += 1;
            }
        }
    }

    /// `(trigram, slot)` in trigram order.
    fn sorted(&self) -> Vec<(u32, u32)> {
        match &self.slot_of {
            SlotOf::Dense(table) => table
                .iter()
                .enumerate()
                .filter(|(_, &s)| s != u32::MAX)
                .map(|(t, &s)| (t as u32, s))
                .collect(),
            SlotOf::Sparse(map) => {
                let mut v: Vec<(u32, u32)> = map.iter().map(|(&t, &s)| (t, s)).collect();
                v.sort_unstable();
                v
            }
        }
    }
}

impl Slot {
    /// Append the on-disk form to `blob`: packed masks, then the bit-packed ids (see
    /// `postings::encode`).
    fn write(&self, blob: &mut Vec<u8>, gaps: &mut Vec<u32>) {
        let masks_at = blob.len();
        blob.resize(masks_at + (self.count as usize).div_ceil(2), 0);
        gaps.clear();
        let mut i = 0usize;
        let mut pos = 0usize;
        while pos < self.stream.len() {
            blob[masks_at + i / 2] |= self.stream[pos] << (4 * (i % 2));
            pos += 1;
            // The stream was written by `Postings::add`: a varint follows every mask.
            let delta = postings::get_varint(&self.stream, &mut pos).unwrap_or(0);
            gaps.push(if i == 0 { delta } else { delta - 1 });
            i += 1;
        }
        postings::encode_gaps(gaps, blob);
    }
}

/// Format 7's chunk id section for the ids `text` ends at `ends`: the bytes their hex
/// digits spell when every id is lower-case hex of one even length, else offsets and text.
fn encode_chunk_ids(text: &[u8], ends: &[u32]) -> Vec<u8> {
    let digits = ends.first().map_or(0, |&e| e as usize);
    let hex = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let same = digits > 0
        && digits.is_multiple_of(2)
        && digits <= 2 * format::MAX_ID_WIDTH
        && text.len() == digits * ends.len()
        && ends
            .iter()
            .enumerate()
            .all(|(i, &e)| e as usize == (i + 1) * digits)
        && text.iter().all(|&b| hex(b).is_some());
    let mut out = Vec::new();
    if same {
        out.extend_from_slice(&(digits as u32 / 2).to_le_bytes());
        out.extend(
            text.chunks_exact(2)
                .map(|p| hex(p[0]).unwrap_or(0) << 4 | hex(p[1]).unwrap_or(0)),
        );
        return out;
    }
    out.extend_from_slice(&0u32.to_le_bytes());
    for e in std::iter::once(0).chain(ends.iter().copied()) {
        out.extend_from_slice(&e.to_le_bytes());
    }
    out.extend_from_slice(text);
    out
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CoreError + '_ {
    move |source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn build_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// Build the index of `inputs` (files under `root`) into `out_dir` (created if needed).
pub fn build(
    root: &Path,
    inputs: &[BuildInput],
    out_dir: &Path,
    opts: &BuildOptions,
) -> CoreResult<BuildReport> {
    build_cancellable(root, inputs, out_dir, opts, &mut || false)
        .map(|report| report.unwrap_or_default())
}

/// As `build`, but `cancelled` is asked once per batch of files, on the calling thread;
/// when it answers true the build stops there and returns `Ok(None)` (the partial files in
/// `out_dir` are the caller's to discard). The Python binding uses it to honour Ctrl-C.
pub fn build_cancellable(
    root: &Path,
    inputs: &[BuildInput],
    out_dir: &Path,
    opts: &BuildOptions,
    cancelled: &mut dyn FnMut() -> bool,
) -> CoreResult<Option<BuildReport>> {
    std::fs::create_dir_all(out_dir).map_err(io_err(out_dir))?;
    let real_root = root.canonicalize().map_err(io_err(root))?;
    let root = real_root.as_path();
    let content_path: PathBuf = out_dir.join(&opts.content_file);
    let index_path: PathBuf = out_dir.join(&opts.index_file);
    let id = build_id();
    let mut content = BufWriter::with_capacity(
        1 << 20,
        File::create(&content_path).map_err(io_err(&content_path))?,
    );
    content
        .write_all(&format::encode_content_header(id))
        .map_err(io_err(&content_path))?;
    let mut content_off = format::CONTENT_HEADER_LEN as u64;

    let mut report = BuildReport {
        build_id: id,
        ..BuildReport::default()
    };
    let mut postings = Postings::new(inputs.len(), opts.dense);
    let mut docs: Vec<u8> = Vec::new();
    let mut paths: Vec<u8> = Vec::new();
    let mut chunks: Vec<u8> = Vec::new();
    let (mut chunk_ids, mut id_ends): (Vec<u8>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut blocks: Vec<u8> = Vec::new();

    let level = opts.zstd_level;
    let run_batch = |batch: &[BuildInput]| -> Vec<Result<Prepared, SkipReason>> {
        batch
            .par_iter()
            .map(|input| SCRATCH.with(|cell| prepare(root, input, &mut cell.borrow_mut(), level)))
            .collect()
    };
    let batches: Vec<&[BuildInput]> = inputs.chunks(opts.batch.max(1)).collect();
    let mut pending: Option<(usize, Vec<Result<Prepared, SkipReason>>)> = None;
    let mut next = 0usize;
    loop {
        if cancelled() {
            return Ok(None);
        }
        let todo = batches.get(next).copied();
        let (computed, merged) = rayon::join(
            || todo.map(run_batch),
            || -> CoreResult<()> {
                let Some((bi, results)) = pending.take() else {
                    return Ok(());
                };
                for (input, res) in batches[bi].iter().zip(results) {
                    let prep = match res {
                        Ok(p) => p,
                        Err(reason) => {
                            report.skipped.push((input.path.clone(), reason));
                            continue;
                        }
                    };
                    let doc = report.docs;
                    postings.add(doc, &prep.trigrams);
                    blocks.extend_from_slice(&prep.blocks);
                    content
                        .write_all(&prep.compressed)
                        .map_err(io_err(&content_path))?;
                    let first_chunk = report.chunks;
                    for c in &input.chunks {
                        chunks.extend_from_slice(&c.start_line.to_le_bytes());
                        chunks.extend_from_slice(&c.end_line.to_le_bytes());
                        chunk_ids.extend_from_slice(c.id.as_bytes());
                        id_ends.push(chunk_ids.len() as u32);
                    }
                    report.chunks += input.chunks.len() as u32;
                    docs.extend_from_slice(&(paths.len() as u32).to_le_bytes());
                    docs.extend_from_slice(&(input.path.len() as u32).to_le_bytes());
                    docs.extend_from_slice(&content_off.to_le_bytes());
                    docs.extend_from_slice(&(prep.compressed.len() as u32).to_le_bytes());
                    docs.extend_from_slice(&prep.raw_len.to_le_bytes());
                    docs.extend_from_slice(&first_chunk.to_le_bytes());
                    docs.extend_from_slice(&(input.chunks.len() as u32).to_le_bytes());
                    docs.extend_from_slice(&prep.crc.to_le_bytes());
                    docs.extend_from_slice(&[prep.codec, 0, 0, 0]);
                    paths.extend_from_slice(input.path.as_bytes());
                    content_off += prep.compressed.len() as u64;
                    report.content_bytes += u64::from(prep.raw_len);
                    report.docs += 1;
                }
                Ok(())
            },
        );
        merged?;
        match computed {
            Some(results) => {
                pending = Some((next, results));
                next += 1;
            }
            None => break,
        }
    }
    content.flush().map_err(io_err(&content_path))?;
    content
        .into_inner()
        .map_err(|e| io_err(&content_path)(e.into_error()))?
        .sync_all()
        .map_err(io_err(&content_path))?;
    report.stored_bytes = content_off;
    if cancelled() {
        return Ok(None);
    }

    // Trigram table and postings, in trigram order.
    let mut entries: Vec<(u32, u64)> = Vec::new();
    let mut blob: Vec<u8> = Vec::new();
    let mut gaps = Vec::new();
    for (t, slot) in postings.sorted() {
        let s = &postings.slots[slot as usize];
        // the count at the head of the postings
        entries.push((t, blob.len() as u64));
        postings::put_varint(&mut blob, s.count);
        s.write(&mut blob, &mut gaps);
        report.trigrams += 1;
    }
    drop(postings);
    let table = keytable::encode(&entries).ok_or_else(|| CoreError::CorruptIndex {
        path: index_path.clone(),
        reason: "postings past 2^40 bytes: the trigram table cannot address them".into(),
    })?;
    drop(entries);
    let chunk_ids = encode_chunk_ids(&chunk_ids, &id_ends);

    let sections_data: [&[u8]; format::SECTIONS] =
        [&paths, &docs, &table, &blob, &chunks, &chunk_ids, &blocks];
    let mut sections = [(0u64, 0u64, 0u32); format::SECTIONS];
    let mut off = format::HEADER_LEN as u64;
    for (i, data) in sections_data.iter().enumerate() {
        sections[i] = (off, data.len() as u64, crc32fast::hash(data));
        off += data.len() as u64;
    }
    let header = Header {
        version: format::VERSION,
        n_docs: report.docs,
        n_trigrams: report.trigrams,
        n_chunks: report.chunks,
        build_id: id,
        total_content_bytes: report.content_bytes,
        sections,
    };
    let mut out = BufWriter::with_capacity(
        1 << 20,
        File::create(&index_path).map_err(io_err(&index_path))?,
    );
    let written = format::write_file(&format::LAYOUT, &mut out, header.encode(), &sections_data)
        .map_err(io_err(&index_path))?;
    out.flush().map_err(io_err(&index_path))?;
    out.into_inner()
        .map_err(|e| io_err(&index_path)(e.into_error()))?
        .sync_all()
        .map_err(io_err(&index_path))?;
    report.index_bytes = written;
    Ok(Some(report))
}

#[cfg(test)]
mod cancel_tests {
    use super::*;

    fn inputs(root: &Path, n: usize) -> Vec<BuildInput> {
        write_files(
            root,
            n,
            |i| format!("f{i:04}.txt"),
            |i| format!("fn item_{i}() {{}}\n"),
        )
    }

    /// Writes file `i` of `n` as `name(i)` holding `body(i)` under `root`; lists them as inputs.
    pub(super) fn write_files(
        root: &Path,
        n: usize,
        name: impl Fn(usize) -> String,
        body: impl Fn(usize) -> String,
    ) -> Vec<BuildInput> {
        std::fs::create_dir_all(root).expect("root");
        (0..n)
            .map(|i| {
                let path = name(i);
                std::fs::write(root.join(&path), body(i)).expect("write");
                BuildInput {
                    path,
                    chunks: Vec::new(),
                }
            })
            .collect()
    }

    /// Cancelled after the first batch: no index file, and the flag was polled once per batch
    /// until then; never cancelled: the same build as `build`.
    #[test]
    fn cancellation_is_polled_between_batches() {
        let base = std::env::temp_dir().join(format!("maguyva-cancel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let files = inputs(&base.join("root"), 40);
        let opts = BuildOptions {
            batch: 8,
            ..BuildOptions::default()
        };
        let mut asked = 0;
        let out = base.join("cancelled");
        let got = build_cancellable(&base.join("root"), &files, &out, &opts, &mut || {
            asked += 1;
            asked > 1
        })
        .expect("build");
        assert!(got.is_none());
        assert_eq!(asked, 2);
        assert!(!out.join(format::INDEX_FILE).exists());

        let full = build(&base.join("root"), &files, &base.join("full"), &opts).expect("build");
        assert_eq!(full.docs, 40);
        let _ = std::fs::remove_dir_all(&base);
    }

    /// A listed file swapped for a link out of the root, or for a FIFO, since the walk is
    /// skipped (never read, never blocking); the rest is built.
    #[test]
    fn swapped_files_are_refused_not_read() {
        let base = std::env::temp_dir().join(format!("maguyva-swapped-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        let files = inputs(&root, 3);
        std::fs::write(base.join("outside.txt"), b"OUTSIDE\n").expect("write");
        std::fs::remove_file(root.join("f0000.txt")).expect("rm");
        std::os::unix::fs::symlink(base.join("outside.txt"), root.join("f0000.txt")).expect("ln");
        std::fs::remove_file(root.join("f0001.txt")).expect("rm");
        let fifo = std::ffi::CString::new(root.join("f0001.txt").to_str().expect("utf-8"))
            .expect("cstring");
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let got = build(&root, &files, &base.join("out"), &BuildOptions::default()).expect("build");
        assert_eq!(got.docs, 1);
        let mut skipped = got.skipped.clone();
        skipped.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            skipped,
            [
                ("f0000.txt".to_string(), SkipReason::OutsideRoot),
                ("f0001.txt".to_string(), SkipReason::NotRegular)
            ]
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    /// The hash-map posting table (small builds) writes exactly what the direct table does.
    #[test]
    fn sparse_and_dense_tables_write_the_same_index() {
        let base = std::env::temp_dir().join(format!("maguyva-dense-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        let files = write_files(
            &root,
            30,
            |i| format!("f{i:03}.rs"),
            |i| {
                (0..i * 7)
                    .map(|j| format!("fn item_{}_{j}() {{ Zq{i} }}\n", j % 5))
                    .collect()
            },
        );
        let mut out = Vec::new();
        for dense in [false, true] {
            let dir = base.join(format!("d{dense}"));
            let opts = BuildOptions {
                dense: Some(dense),
                ..BuildOptions::default()
            };
            build(&root, &files, &dir, &opts).expect("build");
            let bytes = std::fs::read(dir.join(format::INDEX_FILE)).expect("read");
            out.push(bytes[format::HEADER_LEN..].to_vec());
        }
        assert_eq!(out[0], out[1]);
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[cfg(test)]
mod version_tests {
    use super::cancel_tests::write_files;
    use super::*;
    use crate::trigram::index::TextIndex;

    /// `file` with its sections replaced by `data`, written as `version`.
    fn rewrite(h: &Header, data: &[Vec<u8>], version: u32) -> Vec<u8> {
        let mut sections = [(0u64, 0u64, 0u32); format::SECTIONS];
        let mut off = format::HEADER_LEN as u64;
        for (i, d) in data.iter().enumerate() {
            sections[i] = (off, d.len() as u64, crc32fast::hash(d));
            off += d.len() as u64;
        }
        let mut out = Header { sections, ..*h }.encode();
        out[8..12].copy_from_slice(&version.to_le_bytes());
        let crc = crc32fast::hash(&out[..format::HEADER_LEN - 4]);
        let at = format::HEADER_LEN - 4;
        out[at..].copy_from_slice(&crc.to_le_bytes());
        for d in data {
            out.extend_from_slice(d);
        }
        out
    }

    fn sections_of(file: &[u8]) -> (Header, Vec<Vec<u8>>) {
        let h = Header::decode(Path::new("idx"), file).expect("header");
        let data = (0..format::SECTIONS)
            .map(|i| {
                let (off, len, _) = h.sections[i];
                file[off as usize..(off + len) as usize].to_vec()
            })
            .collect();
        (h, data)
    }

    /// A version 6 file (8-byte trigram entries, 16-byte chunk entries pointing into the
    /// ids as text) made from a version 7 one.
    fn as_version_6(v7: &[u8]) -> Vec<u8> {
        let (h, mut data) = sections_of(v7);
        let n = h.n_chunks as usize;
        let entries = keytable::entries(&data[format::SEC_TRIGRAMS], h.n_trigrams as usize);
        data[format::SEC_TRIGRAMS] = entries
            .expect("entries")
            .iter()
            .flat_map(|&(t, off)| (off << 24 | u64::from(t)).to_le_bytes())
            .collect();
        let ids = &data[format::SEC_CHUNKIDS];
        let width = u32::from_le_bytes(ids[..4].try_into().expect("width")) as usize;
        assert!(width > 0, "the builder stores hex ids as bytes");
        let text: Vec<u8> = ids[4..]
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect();
        let mut chunks = Vec::new();
        for (c, e) in data[format::SEC_CHUNKS].chunks_exact(8).enumerate() {
            chunks.extend_from_slice(e);
            chunks.extend_from_slice(&((c * 2 * width) as u32).to_le_bytes());
            chunks.extend_from_slice(&((2 * width) as u32).to_le_bytes());
        }
        assert_eq!(chunks.len(), n * 16);
        data[format::SEC_CHUNKS] = chunks;
        data[format::SEC_CHUNKIDS] = text;
        rewrite(&h, &data, 6)
    }

    /// A version 5 file (16-byte trigram entries, no count in the postings) made from a
    /// version 6 one: the layout an index built before version 6 holds.
    fn as_version_5(v6: &[u8]) -> Vec<u8> {
        let (h, mut data) = sections_of(v6);
        let (table, blob) = (&data[format::SEC_TRIGRAMS], &data[format::SEC_POSTINGS]);
        let (mut table5, mut blob5) = (Vec::new(), Vec::new());
        for (i, e) in table.chunks_exact(format::TRI_LEN).enumerate() {
            let v = u64::from_le_bytes(e.try_into().expect("entry"));
            let mut pos = (v >> 24) as usize;
            let count = postings::get_varint(blob, &mut pos).expect("count");
            table5.extend_from_slice(&((v & 0xFF_FFFF) as u32).to_le_bytes());
            table5.extend_from_slice(&count.to_le_bytes());
            table5.extend_from_slice(&(blob5.len() as u64).to_le_bytes());
            let next = table.get((i + 1) * 8..(i + 2) * 8).map_or(blob.len(), |n| {
                (u64::from_le_bytes(n.try_into().expect("next")) >> 24) as usize
            });
            blob5.extend_from_slice(&blob[pos..next]);
        }
        data[format::SEC_TRIGRAMS] = table5;
        data[format::SEC_POSTINGS] = blob5;
        rewrite(&h, &data, 5)
    }

    /// Two builds in one process at two zstd levels each store their own level's frames
    /// (the per-thread compressor was once made for the first level and kept).
    #[test]
    fn each_build_compresses_at_its_own_level() {
        let base = std::env::temp_dir().join(format!("maguyva-lvl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        // enough files that every worker thread compresses some in each build
        let files = write_files(
            &root,
            64,
            |i| format!("f{i:02}.py"),
            |i| {
                (0..400)
                    .map(|j| format!("value_{} = compute({j}, {i})\n", j % 97))
                    .collect()
            },
        );
        let mut sizes = Vec::new();
        for level in [1, 19, 1] {
            let dir = base.join(format!("z{level}-{}", sizes.len()));
            let opts = BuildOptions {
                zstd_level: level,
                ..BuildOptions::default()
            };
            build(&root, &files, &dir, &opts).expect("build");
            sizes.push(
                std::fs::metadata(dir.join(format::CONTENT_FILE))
                    .expect("size")
                    .len(),
            );
        }
        assert!(sizes[1] < sizes[0], "{sizes:?}");
        assert_eq!(sizes[0], sizes[2]);
        let _ = std::fs::remove_dir_all(&base);
    }

    /// Indexes written as versions 5 and 6, and version 8 not packed, open and give the same
    /// postings, counts and chunks as a packed version 8 file.
    #[test]
    fn versions_5_and_6_read_as_version_7() {
        let base = std::env::temp_dir().join(format!("maguyva-v5-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        let mut files = write_files(
            &root,
            40,
            |i| format!("f{i:03}.py"),
            |i| {
                (0..i * 5)
                    .map(|j| format!("def item_{}_{j}(): return Zq{i}\n", j % 7))
                    .collect()
            },
        );
        for (i, f) in files.iter_mut().enumerate() {
            f.chunks = (0..i as u32 % 4)
                .map(|c| ChunkSpan {
                    start_line: c * 2 + 1,
                    end_line: c * 2 + 2,
                    id: format!("{:020x}", i * 977 + c as usize * 0x00ab_cdef_0123),
                })
                .collect();
        }
        let new = base.join("v7");
        build(&root, &files, &new, &BuildOptions::default()).expect("build");
        let packed = std::fs::read(new.join(format::INDEX_FILE)).expect("read");
        let v7 = format::LAYOUT
            .unpack(Path::new("idx"), &packed)
            .expect("unpack")
            .expect("a small index is packed");
        assert!(packed.len() * 2 < v7.len(), "{} {}", packed.len(), v7.len());
        let v6 = as_version_6(&v7);
        let a = TextIndex::open(&new).expect("open v7");
        // the same sections not packed (as a file over `PACK_MAX` is written)
        let (h, data) = sections_of(&v7);
        let plain = rewrite(&h, &data, format::VERSION);
        assert_eq!(plain[format::HEADER_LEN..], v7[format::HEADER_LEN..]);
        for (name, file) in [
            ("v8 not packed", plain),
            ("v6", v6.clone()),
            ("v5", as_version_5(&v6)),
        ] {
            let old = base.join(name);
            std::fs::create_dir_all(&old).expect("dir");
            std::fs::write(old.join(format::INDEX_FILE), file).expect("write");
            std::fs::copy(
                new.join(format::CONTENT_FILE),
                old.join(format::CONTENT_FILE),
            )
            .expect("content");
            let b = TextIndex::open(&old).expect(name);
            let (sa, sb) = (&a.segments()[0], &b.segments()[0]);
            assert!(sb.index_bytes() >= sa.index_bytes(), "{name}");
            let mut seen = 0;
            for t in ngram::literal_trigrams(b"def item_3_1(): return Zq12 absent") {
                assert_eq!(sa.doc_count(t), sb.doc_count(t));
                assert_eq!(sa.postings(t).expect("v7"), sb.postings(t).expect(name));
                seen += usize::from(sa.doc_count(t) > 0);
            }
            assert!(seen > 5);
            let mut n_chunks = 0;
            for d in 0..a.n_docs() {
                assert_eq!(a.chunks(d), b.chunks(d), "{name} doc {d}");
                n_chunks += a.chunks(d).len();
            }
            assert_eq!(n_chunks, 60);
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    /// Any byte of a packed file changed: refused at open (the frame does not decompress, or
    /// a section's CRC, or the header's, does not match), or the same sections read.
    #[test]
    fn damaged_packed_files_are_refused() {
        let base = std::env::temp_dir().join(format!("maguyva-pk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let files = write_files(
            &base.join("root"),
            12,
            |i| format!("f{i}.py"),
            |i| format!("def f_{i}(x):\n    return x * {i}\n").repeat(i + 2),
        );
        let dir = base.join("idx");
        build(&base.join("root"), &files, &dir, &BuildOptions::default()).expect("build");
        let path = dir.join(format::INDEX_FILE);
        let good = std::fs::read(&path).expect("read");
        let image = format::LAYOUT.unpack(&path, &good).expect("unpack");
        assert!(image.is_some());
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            std::fs::write(&path, &bad).expect("write");
            if TextIndex::open(&dir).is_ok() {
                // a bit the frame's decoder ignores (its header's unused bit)
                let got = format::LAYOUT.unpack(&path, &bad).expect("unpack");
                assert_eq!(got, image, "byte {i} of {}", good.len());
            }
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    /// Ids that are not all lower-case hex of one length are kept as text, as given.
    #[test]
    fn other_chunk_ids_are_stored_as_text() {
        let ids = ["abc", "ABCDEF", "é-1", "00ff"];
        let mut text = Vec::new();
        let mut ends = Vec::new();
        for id in ids {
            text.extend_from_slice(id.as_bytes());
            ends.push(text.len() as u32);
        }
        let enc = encode_chunk_ids(&text, &ends);
        assert_eq!(&enc[..4], &0u32.to_le_bytes());
        let hexed = encode_chunk_ids(b"00ff12ab", &[4, 8]);
        assert_eq!(hexed, [2, 0, 0, 0, 0x00, 0xff, 0x12, 0xab]);
        assert_eq!(encode_chunk_ids(b"00ff12a", &[4, 7])[..4], [0, 0, 0, 0]);
        // and they read back as given
        let base = std::env::temp_dir().join(format!("maguyva-ids-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        let mut files = write_files(&root, 4, |i| format!("f{i}.py"), |_| "a\nb\n".into());
        for (f, id) in files.iter_mut().zip(ids) {
            f.chunks = vec![ChunkSpan {
                start_line: 1,
                end_line: 2,
                id: id.into(),
            }];
        }
        build(&root, &files, &base.join("idx"), &BuildOptions::default()).expect("build");
        let index = TextIndex::open(&base.join("idx")).expect("open");
        let got: Vec<&str> = (0..4).flat_map(|d| index.chunks(d)).map(|c| c.2).collect();
        assert_eq!(got, ids);
        let _ = std::fs::remove_dir_all(&base);
    }
}
