//! A loaded text index: memory-mapped, validated once, then read-only and `Sync`.
//!
//! An index is one or more immutable [`Segment`]s, as in Lucene and Zoekt: a base segment
//! built from scratch, then small segments each holding the files an incremental update
//! added or changed, plus per segment the sorted local ids of its deleted documents
//! (tombstones: files deleted or changed since). [`TextIndex`] shows the live documents of
//! all segments as one sequence of *logical* ids in path order, exactly the ids a
//! from-scratch build of the same files would give, so every answer (order, ties, BM25
//! statistics) is the same.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::Mmap;

use super::format::{self, u32_at, u64_at, Header};
use super::{keytable, postings};
use crate::error::{CoreError, CoreResult};

/// One indexed document as stored in the document table.
#[derive(Debug, Clone, Copy)]
pub struct DocEntry {
    pub content_off: u64,
    pub clen: u32,
    pub raw_len: u32,
    pub first_chunk: u32,
    pub n_chunks: u32,
    pub crc: u32,
    pub codec: u8,
}

/// One immutable segment (an index file and its content store). Every accessor checks
/// bounds, so a corrupt file yields an error, never a panic or an out-of-bounds read.
pub struct Segment {
    idx_path: PathBuf,
    idx: format::Bytes,
    content: Mmap,
    header: Header,
    /// Per document, the index of its first block filter in `SEC_BLOCKS`, or `u32::MAX`.
    block_first: Vec<u32>,
    /// Format 7 chunk ids stored as bytes, spelled in hex once, on first use.
    hex_ids: OnceLock<String>,
}

fn map(path: &Path) -> CoreResult<Mmap> {
    let file = File::open(path).map_err(|source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    // SAFETY: index files are written once into a fresh generation directory and never
    // modified in place afterwards (the store switches generations atomically), so the
    // mapping is not mutated underneath us; all reads are bounds-checked slices.
    unsafe { Mmap::map(&file) }.map_err(|source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    })
}

impl Segment {
    /// Open and validate one segment: headers, section bounds and checksums, and the
    /// document table's references into the other sections.
    pub fn open(idx_path: &Path, content_path: &Path) -> CoreResult<Segment> {
        let idx = format::LAYOUT.inflate(idx_path, map(idx_path)?)?;
        let header = Header::decode(idx_path, &idx)?;
        let content = map(content_path)?;
        format::check_content_header(content_path, &content, header.build_id)?;
        let mut seg = Segment {
            idx_path: idx_path.to_path_buf(),
            idx,
            content,
            header,
            block_first: Vec::new(),
            hex_ids: OnceLock::new(),
        };
        seg.block_first = seg.validate()?;
        Ok(seg)
    }

    fn corrupt(&self, reason: impl Into<String>) -> CoreError {
        CoreError::CorruptIndex {
            path: self.idx_path.clone(),
            reason: reason.into(),
        }
    }

    pub fn build_id(&self) -> u64 {
        self.header.build_id
    }

    /// Check every section's checksum and every document's references; returns each
    /// document's first block filter (the filters must fill `SEC_BLOCKS` exactly).
    fn validate(&self) -> CoreResult<Vec<u32>> {
        for i in 0..format::SECTIONS {
            let (_, _, crc) = self.header.sections[i];
            if crc32fast::hash(self.section(i)) != crc {
                return Err(self.corrupt(format!("section {i} checksum mismatch")));
            }
        }
        let paths_len = self.section(format::SEC_PATHS).len() as u64;
        let content_len = self.content.len() as u64;
        let mut block_first = Vec::with_capacity(self.header.n_docs as usize);
        let mut n_blocks = 0u64;
        for d in 0..self.header.n_docs {
            let (po, pl) = self.path_range(d);
            let e = self.doc(d);
            if u64::from(po) + u64::from(pl) > paths_len
                || e.content_off + u64::from(e.clen) > content_len
                || u64::from(e.first_chunk) + u64::from(e.n_chunks)
                    > u64::from(self.header.n_chunks)
                || std::str::from_utf8(self.path_bytes(d)).is_err()
            {
                return Err(self.corrupt(format!("document {d} points outside its sections")));
            }
            let nb = format::filter_blocks(e.raw_len) as u64;
            block_first.push(if nb == 0 {
                u32::MAX
            } else {
                u32::try_from(n_blocks).unwrap_or(u32::MAX - 1)
            });
            n_blocks += nb;
        }
        if !self.chunk_ids_fit() {
            return Err(self.corrupt("the chunk id table does not fit its section"));
        }
        let want = n_blocks * format::BLOCK_FILTER_BYTES as u64;
        if self.section(format::SEC_BLOCKS).len() as u64 != want {
            return Err(self.corrupt(format!(
                "block filters are {} bytes, the documents need {want}",
                self.section(format::SEC_BLOCKS).len()
            )));
        }
        Ok(block_first)
    }

    /// Document `d`'s block filters (`filter_blocks(raw_len)` of `BLOCK_FILTER_BYTES` each),
    /// or `None` for a document too small to have them.
    pub fn block_filters(&self, d: u32) -> Option<&[u8]> {
        let first = *self.block_first.get(d as usize)?;
        if first == u32::MAX {
            return None;
        }
        let nb = format::filter_blocks(self.doc(d).raw_len);
        let at = first as usize * format::BLOCK_FILTER_BYTES;
        self.section(format::SEC_BLOCKS)
            .get(at..at + nb * format::BLOCK_FILTER_BYTES)
    }

    fn section(&self, i: usize) -> &[u8] {
        let (off, len, _) = self.header.sections[i];
        // Bounds were checked against the file length in `Header::decode`.
        &self.idx[off as usize..(off + len) as usize]
    }

    pub fn n_docs(&self) -> u32 {
        self.header.n_docs
    }

    pub fn n_chunks(&self) -> u32 {
        self.header.n_chunks
    }

    pub fn n_trigrams(&self) -> u32 {
        self.header.n_trigrams
    }

    pub fn total_content_bytes(&self) -> u64 {
        self.header.total_content_bytes
    }

    pub fn index_bytes(&self) -> u64 {
        self.idx.len() as u64
    }

    pub fn stored_bytes(&self) -> u64 {
        self.content.len() as u64
    }

    fn path_range(&self, d: u32) -> (u32, u32) {
        let docs = self.section(format::SEC_DOCS);
        let at = d as usize * format::DOC_LEN;
        (
            u32_at(docs, at).unwrap_or(0),
            u32_at(docs, at + 4).unwrap_or(0),
        )
    }

    fn path_bytes(&self, d: u32) -> &[u8] {
        let (off, len) = self.path_range(d);
        self.section(format::SEC_PATHS)
            .get(off as usize..(off as usize).saturating_add(len as usize))
            .unwrap_or(&[])
    }

    /// The relative path of document `d` (validated UTF-8 at open).
    pub fn path(&self, d: u32) -> &str {
        std::str::from_utf8(self.path_bytes(d)).unwrap_or("")
    }

    pub fn doc(&self, d: u32) -> DocEntry {
        let docs = self.section(format::SEC_DOCS);
        let at = d as usize * format::DOC_LEN;
        DocEntry {
            content_off: u64_at(docs, at + 8).unwrap_or(0),
            clen: u32_at(docs, at + 16).unwrap_or(0),
            raw_len: u32_at(docs, at + 20).unwrap_or(0),
            first_chunk: u32_at(docs, at + 24).unwrap_or(0),
            n_chunks: u32_at(docs, at + 28).unwrap_or(0),
            crc: u32_at(docs, at + 32).unwrap_or(0),
            codec: docs.get(at + 36).copied().unwrap_or(u8::MAX),
        }
    }

    /// Document `d`'s table entry and stored block, the block's CRC32 checked (format 4: the
    /// checksum covers the stored bytes, so a damaged block never reaches a decoder).
    pub fn stored(&self, d: u32) -> CoreResult<(DocEntry, &[u8])> {
        let e = self.doc(d);
        let start = usize::try_from(e.content_off).unwrap_or(usize::MAX);
        let block = self
            .content
            .get(start..start.saturating_add(e.clen as usize))
            .ok_or_else(|| self.corrupt(format!("document {d} content out of bounds")))?;
        if crc32fast::hash(block) != e.crc {
            return Err(self.content_error(d, "content checksum mismatch"));
        }
        Ok((e, block))
    }

    /// The error for document `d`'s stored content.
    pub fn content_error(&self, d: u32, what: impl std::fmt::Display) -> CoreError {
        self.corrupt(format!("document {d} ({}): {what}", self.path(d)))
    }

    /// The bytes of document `d`: borrowed from the mapping when stored as is, otherwise
    /// decompressed into `out` (zstd with the caller's per-thread decompressor). The stored
    /// block's CRC32 is checked first and the decoded length after, so a damaged content
    /// file is `CorruptIndex`, never wrong results.
    pub fn read<'a>(
        &'a self,
        d: u32,
        zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
        out: &'a mut Vec<u8>,
    ) -> CoreResult<&'a [u8]> {
        let (e, block) = self.stored(d)?;
        let bad = |what: String| self.content_error(d, what);
        let bytes: &[u8] = match e.codec {
            format::CODEC_STORED => block,
            format::CODEC_LZ4 => {
                // Reuse the buffer without zeroing it again: a successful decode overwrites
                // the first `n` bytes, and `n` must equal `raw_len` (checked below).
                let want = e.raw_len as usize;
                if out.len() < want {
                    out.resize(want, 0);
                }
                let n = lz4_flex::block::decompress_into(block, &mut out[..want])
                    .map_err(|err| bad(err.to_string()))?;
                // Not truncated: a later, longer document would zero-fill the tail again.
                &out[..n]
            }
            format::CODEC_ZSTD => {
                if zstd.is_none() {
                    *zstd =
                        Some(
                            zstd::bulk::Decompressor::new().map_err(|source| CoreError::Io {
                                path: "zstd".into(),
                                source,
                            })?,
                        );
                }
                let Some(dec) = zstd.as_mut() else {
                    return Err(bad("no zstd decompressor".into()));
                };
                out.clear();
                out.reserve(e.raw_len as usize);
                dec.decompress_to_buffer(block, out)
                    .map_err(|err| bad(err.to_string()))?;
                out
            }
            other => return Err(bad(format!("unknown codec {other}"))),
        };
        if bytes.len() != e.raw_len as usize {
            return Err(bad("content length mismatch".into()));
        }
        Ok(bytes)
    }

    /// Chunk spans of document `d`: (start_line, end_line, id).
    pub fn chunks(&self, d: u32) -> Vec<(u32, u32, &str)> {
        let table = self.chunk_table(d);
        (0..table.len())
            .filter_map(|i| Some((table.span(i)?, table.id(i)?)))
            .map(|((s, e), id)| (s, e, id))
            .collect()
    }

    /// Document `d`'s rows of the chunk table, read in place (see [`ChunkTable`]).
    pub fn chunk_table(&self, d: u32) -> ChunkTable<'_> {
        let e = self.doc(d);
        ChunkTable {
            seg: self,
            table: self.section(format::SEC_CHUNKS),
            width: format::chunk_len(self.header.version),
            first: e.first_chunk as usize,
            n: e.n_chunks as usize,
        }
    }

    /// Format 7's chunk id table: (id width in bytes, 0 for text ids; what follows it).
    fn id_table(&self) -> (usize, &[u8]) {
        let ids = self.section(format::SEC_CHUNKIDS);
        let width = u32_at(ids, 0).unwrap_or(0) as usize;
        (width, ids.get(4..).unwrap_or(&[]))
    }

    /// Whether the chunk id table is as long as its ids (format 7; earlier formats point
    /// into it from the chunk table, each id checked when read).
    fn chunk_ids_fit(&self) -> bool {
        if self.header.version < 7 {
            return true;
        }
        let n = self.header.n_chunks as usize;
        let (width, rest) = self.id_table();
        if self.section(format::SEC_CHUNKIDS).len() < 4 || width > format::MAX_ID_WIDTH {
            return false;
        }
        if width > 0 {
            return rest.len() == n * width;
        }
        let end = u32_at(rest, n * 4).map_or(usize::MAX, |v| v as usize);
        rest.len().checked_sub((n + 1) * 4) == Some(end)
    }

    /// Chunk `c`'s id (`None` where the table is damaged).
    fn chunk_id(&self, c: u32) -> Option<&str> {
        let c = c as usize;
        let ids = self.section(format::SEC_CHUNKIDS);
        if self.header.version < 7 {
            let table = self.section(format::SEC_CHUNKS);
            let at = c * 16;
            let (io, il) = (
                u32_at(table, at + 8)? as usize,
                u32_at(table, at + 12)? as usize,
            );
            return std::str::from_utf8(ids.get(io..io.checked_add(il)?)?).ok();
        }
        let (width, rest) = self.id_table();
        if width == 0 {
            let n = self.header.n_chunks as usize;
            let (a, b) = (
                u32_at(rest, c * 4)? as usize,
                u32_at(rest, c * 4 + 4)? as usize,
            );
            let text = rest.get((n + 1) * 4..)?;
            return std::str::from_utf8(text.get(a..b)?).ok();
        }
        let hex = self.hex_ids.get_or_init(|| spell_hex(rest));
        hex.get(c * 2 * width..(c + 1) * 2 * width)
    }

    /// Find a trigram's table entry: (count, offset of its follow masks in the postings).
    fn lookup(&self, t: u32) -> Option<(u32, u64)> {
        let table = self.section(format::SEC_TRIGRAMS);
        let n = self.header.n_trigrams as usize;
        let blob = self.section(format::SEC_POSTINGS);
        // format 6-7: the count is a varint at the head of the postings
        let counted = |off: u64| {
            let mut pos = usize::try_from(off).ok()?;
            let count = postings::get_varint(blob, &mut pos)?;
            Some((count, pos as u64))
        };
        if self.header.version >= 7 {
            return counted(keytable::find(table, n, t)?);
        }
        let v5 = self.header.version < 6;
        let width = format::tri_len(self.header.version);
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let at = mid * width;
            let v = if v5 {
                u32_at(table, at)?
            } else {
                (u64_at(table, at)? & 0x00FF_FFFF) as u32
            };
            match v.cmp(&t) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal if v5 => {
                    return Some((u32_at(table, at + 4)?, u64_at(table, at + 8)?));
                }
                std::cmp::Ordering::Equal => return counted(u64_at(table, at)? >> 24),
            }
        }
        None
    }

    /// How many documents contain trigram `t`.
    pub fn doc_count(&self, t: u32) -> u32 {
        self.lookup(t).map_or(0, |(c, _)| c)
    }

    /// The sorted documents containing trigram `t`.
    pub fn postings(&self, t: u32) -> CoreResult<Vec<u32>> {
        let mut out = Vec::new();
        self.decode(t, &mut out, None)?;
        Ok(out)
    }

    /// The sorted documents containing trigram `t` and, for each, its 4-bit follow mask.
    pub fn postings_masked(
        &self,
        t: u32,
        docs: &mut Vec<u32>,
        masks: &mut Vec<u8>,
    ) -> CoreResult<()> {
        self.decode(t, docs, Some(masks))
    }

    fn decode(&self, t: u32, docs: &mut Vec<u32>, masks: Option<&mut Vec<u8>>) -> CoreResult<()> {
        docs.clear();
        let Some((count, off)) = self.lookup(t) else {
            if let Some(m) = masks {
                m.clear();
            }
            return Ok(());
        };
        let blob = self.section(format::SEC_POSTINGS);
        let truncated = || self.corrupt(format!("posting list of trigram {t:#08x} is truncated"));
        let start = usize::try_from(off).map_err(|_| truncated())?;
        let ids_start = start
            .checked_add((count as usize).div_ceil(2))
            .ok_or_else(truncated)?;
        let mask_bytes = blob.get(start..ids_start).ok_or_else(truncated)?;
        let bytes = blob.get(ids_start..).ok_or_else(truncated)?;
        postings::decode(bytes, count as usize, docs).ok_or_else(truncated)?;
        if docs.last().is_some_and(|&d| d >= self.header.n_docs) {
            return Err(self.corrupt(format!("posting list of trigram {t:#08x} is out of range")));
        }
        if let Some(m) = masks {
            m.clear();
            m.reserve(count as usize + 1);
            for &b in mask_bytes {
                m.push(b & 0x0F);
                m.push(b >> 4);
            }
            m.truncate(count as usize);
        }
        Ok(())
    }
}

/// `bytes` spelled as lower-case hex digits.
fn spell_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// A segment as the text modality's segment list describes it.
#[derive(Debug, Clone)]
pub struct SegmentSpec {
    /// File names inside the index directory.
    pub index_file: String,
    pub content_file: String,
    /// What the segment's header must say (the list and the files belong together).
    pub build_id: u64,
    pub n_docs: u32,
    /// Sorted, distinct local ids of the segment's deleted documents.
    pub deleted: Vec<u32>,
}

/// Marks a deleted document in [`TextIndex`]'s local-to-logical tables.
const DEAD: u32 = u32::MAX;

/// The loaded index: its segments and the live documents as one path-ordered sequence.
pub struct TextIndex {
    segs: Vec<Segment>,
    /// Logical id -> (segment, local id).
    docs: Vec<(u32, u32)>,
    /// Per segment: local id -> logical id, or `DEAD`.
    logical: Vec<Vec<u32>>,
    n_chunks: u32,
    content_bytes: u64,
}

impl TextIndex {
    /// Open the single-segment index in `dir` (`trigram.idx` and `content.bin`).
    pub fn open(dir: &Path) -> CoreResult<TextIndex> {
        let seg = Segment::open(
            &dir.join(format::INDEX_FILE),
            &dir.join(format::CONTENT_FILE),
        )?;
        let n = seg.n_docs();
        let spec = SegmentSpec {
            index_file: format::INDEX_FILE.into(),
            content_file: format::CONTENT_FILE.into(),
            build_id: seg.build_id(),
            n_docs: n,
            deleted: Vec::new(),
        };
        Self::assemble(dir, vec![seg], &[spec])
    }

    /// Open the segments listed in `specs` (the first is the base), check each against its
    /// entry, and merge their live documents in path order. A duplicate live path, unsorted
    /// paths or a tombstone out of range is `CorruptIndex`.
    pub fn open_segments(dir: &Path, specs: &[SegmentSpec]) -> CoreResult<TextIndex> {
        if specs.is_empty() {
            return Err(CoreError::CorruptIndex {
                path: dir.to_path_buf(),
                reason: "the segment list is empty".into(),
            });
        }
        let mut segs = Vec::with_capacity(specs.len());
        for spec in specs {
            let safe = |name: &str| {
                !name.is_empty() && !name.contains('/') && !name.contains('\\') && name != ".."
            };
            if !safe(&spec.index_file) || !safe(&spec.content_file) {
                return Err(CoreError::CorruptIndex {
                    path: dir.to_path_buf(),
                    reason: format!("bad segment file name {:?}", spec.index_file),
                });
            }
            let seg = Segment::open(&dir.join(&spec.index_file), &dir.join(&spec.content_file))?;
            if seg.build_id() != spec.build_id || seg.n_docs() != spec.n_docs {
                return Err(seg
                    .corrupt("the segment does not match the segment list (another build of it)"));
            }
            segs.push(seg);
        }
        Self::assemble(dir, segs, specs)
    }

    fn assemble(dir: &Path, segs: Vec<Segment>, specs: &[SegmentSpec]) -> CoreResult<TextIndex> {
        let corrupt = |reason: String| CoreError::CorruptIndex {
            path: dir.to_path_buf(),
            reason,
        };
        // Live documents of each segment, in local (path) order.
        let mut lists: Vec<Vec<(u32, u32)>> = Vec::with_capacity(segs.len());
        for (s, (seg, spec)) in segs.iter().zip(specs).enumerate() {
            let mut dead = vec![false; seg.n_docs() as usize];
            let mut prev: Option<u32> = None;
            for &d in &spec.deleted {
                if d >= seg.n_docs() || prev.is_some_and(|p| p >= d) {
                    return Err(corrupt(format!(
                        "segment {s}: tombstone {d} out of range or unsorted"
                    )));
                }
                dead[d as usize] = true;
                prev = Some(d);
            }
            lists.push(
                (0..seg.n_docs())
                    .filter(|&d| !dead[d as usize])
                    .map(|d| (s as u32, d))
                    .collect(),
            );
        }
        let docs = if lists.len() == 1 {
            lists.pop().unwrap_or_default()
        } else {
            // Merge the (small) later segments first, then the base.
            let mut rest = lists.split_off(1);
            let mut acc = rest.pop().unwrap_or_default();
            while let Some(next) = rest.pop() {
                acc = merge_by_path(&segs, next, acc).map_err(&corrupt)?;
            }
            let base = lists.pop().unwrap_or_default();
            merge_by_path(&segs, base, acc).map_err(&corrupt)?
        };
        if docs.len() > 1 && segs.len() > 1 {
            for w in docs.windows(2) {
                let (a, b) = (
                    segs[w[0].0 as usize].path_bytes(w[0].1),
                    segs[w[1].0 as usize].path_bytes(w[1].1),
                );
                if a >= b {
                    return Err(corrupt(format!(
                        "paths out of order or duplicated: {:?}",
                        String::from_utf8_lossy(b)
                    )));
                }
            }
        }
        let mut logical: Vec<Vec<u32>> = segs
            .iter()
            .map(|seg| vec![DEAD; seg.n_docs() as usize])
            .collect();
        let mut n_chunks = 0u64;
        let mut content_bytes = 0u64;
        for (g, &(s, l)) in docs.iter().enumerate() {
            logical[s as usize][l as usize] = g as u32;
            let e = segs[s as usize].doc(l);
            n_chunks += u64::from(e.n_chunks);
            content_bytes += u64::from(e.raw_len);
        }
        let n_chunks =
            u32::try_from(n_chunks).map_err(|_| corrupt("too many chunks".to_string()))?;
        Ok(TextIndex {
            segs,
            docs,
            logical,
            n_chunks,
            content_bytes,
        })
    }

    /// The segments, base first.
    pub fn segments(&self) -> &[Segment] {
        &self.segs
    }

    /// Map a sorted list of segment `s`'s local ids to sorted logical ids, dropping deleted
    /// documents.
    pub fn to_logical(&self, s: usize, local: &[u32]) -> Vec<u32> {
        let table = &self.logical[s];
        local
            .iter()
            .filter_map(|&d| table.get(d as usize).copied().filter(|&g| g != DEAD))
            .collect()
    }

    /// Live documents of segment `s` (local ids, in order).
    pub fn live_in(&self, s: usize) -> Vec<u32> {
        self.logical[s]
            .iter()
            .enumerate()
            .filter(|(_, &g)| g != DEAD)
            .map(|(d, _)| d as u32)
            .collect()
    }

    /// The logical id of segment `s`'s local document `local`, `None` when it is deleted.
    pub fn logical_of(&self, s: usize, local: u32) -> Option<u32> {
        self.logical
            .get(s)?
            .get(local as usize)
            .copied()
            .filter(|&g| g != DEAD)
    }

    /// Where logical document `g` lives: (segment, local id).
    pub fn locate(&self, g: u32) -> (u32, u32) {
        self.docs[g as usize]
    }

    /// The logical id of `path`, if it is a live document (binary search: path order).
    pub fn find(&self, path: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.docs.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.path(mid as u32).as_bytes().cmp(path.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// Live documents.
    pub fn n_docs(&self) -> u32 {
        self.docs.len() as u32
    }

    /// Chunks of the live documents.
    pub fn n_chunks(&self) -> u32 {
        self.n_chunks
    }

    /// Distinct trigrams summed over segments (a trigram in two segments counts twice).
    pub fn n_trigrams(&self) -> u32 {
        self.segs.iter().map(Segment::n_trigrams).sum()
    }

    /// Bytes of the live documents.
    pub fn total_content_bytes(&self) -> u64 {
        self.content_bytes
    }

    pub fn index_bytes(&self) -> u64 {
        self.segs.iter().map(Segment::index_bytes).sum()
    }

    pub fn stored_bytes(&self) -> u64 {
        self.segs.iter().map(Segment::stored_bytes).sum()
    }

    /// The relative path of logical document `g`.
    pub fn path(&self, g: u32) -> &str {
        let (s, l) = self.docs[g as usize];
        self.segs[s as usize].path(l)
    }

    /// The bytes of logical document `g` (see [`Segment::read`]).
    pub fn read<'a>(
        &'a self,
        g: u32,
        zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
        out: &'a mut Vec<u8>,
    ) -> CoreResult<&'a [u8]> {
        let (s, l) = self.docs[g as usize];
        self.segs[s as usize].read(l, zstd, out)
    }

    /// Logical document `g`'s table entry and CRC-checked stored block (see
    /// [`Segment::stored`]), with its segment for error messages.
    pub fn stored(&self, g: u32) -> CoreResult<(&Segment, u32, DocEntry, &[u8])> {
        let (s, l) = self.docs[g as usize];
        let seg = &self.segs[s as usize];
        let (e, block) = seg.stored(l)?;
        Ok((seg, l, e, block))
    }

    /// Logical document `g`'s block filters (see [`Segment::block_filters`]).
    pub fn block_filters(&self, g: u32) -> Option<&[u8]> {
        let (s, l) = self.docs[g as usize];
        self.segs[s as usize].block_filters(l)
    }

    /// Chunk spans of logical document `g`.
    pub fn chunks(&self, g: u32) -> Vec<(u32, u32, &str)> {
        let (s, l) = self.docs[g as usize];
        self.segs[s as usize].chunks(l)
    }

    /// Logical document `g`'s rows of its segment's chunk table.
    pub fn chunk_table(&self, g: u32) -> ChunkTable<'_> {
        let (s, l) = self.docs[g as usize];
        self.segs[s as usize].chunk_table(l)
    }

    /// For each of `lines`, the smallest chunk of document `g` that contains it (ties: the
    /// earlier start, then the smaller id), as the chunk store's `enclosing` chooses.
    pub fn enclosing(&self, g: u32, lines: &[u32]) -> Vec<Option<(u32, u32, &str)>> {
        super::groups::enclosing_in(&self.chunk_table(g), lines)
    }
}

/// One document's rows of a segment's chunk table, decoded on demand: a literal's ranking
/// reads the span of every chunk of a candidate file but the id only of those holding a
/// matching line (`groups::enclosing_in`). A row that cannot be read, or whose id is not
/// UTF-8, is no chunk, as [`Segment::chunks`] leaves it out.
#[derive(Clone, Copy)]
pub struct ChunkTable<'a> {
    seg: &'a Segment,
    table: &'a [u8],
    width: usize,
    first: usize,
    n: usize,
}

impl<'a> ChunkTable<'a> {
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Row `i`'s (start line, end line).
    pub fn span(&self, i: usize) -> Option<(u32, u32)> {
        let at = (self.first + i).checked_mul(self.width)?;
        Some((u32_at(self.table, at)?, u32_at(self.table, at + 4)?))
    }

    /// Row `i`'s chunk id.
    pub fn id(&self, i: usize) -> Option<&'a str> {
        self.seg.chunk_id(u32::try_from(self.first + i).ok()?)
    }
}

/// Merge two path-ordered lists of (segment, local id); equal paths are an error.
fn merge_by_path(
    segs: &[Segment],
    a: Vec<(u32, u32)>,
    b: Vec<(u32, u32)>,
) -> Result<Vec<(u32, u32)>, String> {
    if b.is_empty() {
        return Ok(a);
    }
    let path = |x: (u32, u32)| segs[x.0 as usize].path_bytes(x.1);
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0usize, 0usize);
    while i < a.len() && j < b.len() {
        match path(a[i]).cmp(path(b[j])) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                return Err(format!(
                    "{:?} is live in two segments",
                    String::from_utf8_lossy(path(a[i]))
                ))
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    Ok(out)
}
