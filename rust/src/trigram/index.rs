//! A loaded text index: memory-mapped, validated once, then read-only and `Sync`.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::format::{self, u32_at, u64_at, Header};
use super::postings;
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

/// The immutable index. Every accessor checks bounds, so a corrupt file yields an error,
/// never a panic or an out-of-bounds read.
pub struct TextIndex {
    dir: PathBuf,
    idx: Mmap,
    content: Mmap,
    header: Header,
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

impl TextIndex {
    /// Open and validate the index in `dir`: headers, section bounds and checksums, and the
    /// document table's references into the other sections.
    pub fn open(dir: &Path) -> CoreResult<TextIndex> {
        let idx_path = dir.join(format::INDEX_FILE);
        let content_path = dir.join(format::CONTENT_FILE);
        let idx = map(&idx_path)?;
        let header = Header::decode(&idx_path, &idx)?;
        let content = map(&content_path)?;
        format::check_content_header(&content_path, &content, header.build_id)?;
        let index = TextIndex {
            dir: dir.to_path_buf(),
            idx,
            content,
            header,
        };
        index.validate()?;
        Ok(index)
    }

    fn corrupt(&self, reason: impl Into<String>) -> CoreError {
        CoreError::CorruptIndex {
            path: self.dir.join(format::INDEX_FILE),
            reason: reason.into(),
        }
    }

    fn validate(&self) -> CoreResult<()> {
        for i in 0..format::SECTIONS {
            let (_, _, crc) = self.header.sections[i];
            if crc32fast::hash(self.section(i)) != crc {
                return Err(self.corrupt(format!("section {i} checksum mismatch")));
            }
        }
        let paths_len = self.section(format::SEC_PATHS).len() as u64;
        let content_len = self.content.len() as u64;
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
        }
        Ok(())
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

    /// The bytes of document `d`: borrowed from the mapping when stored as is, otherwise
    /// decompressed into `out` (zstd with the caller's per-thread decompressor). The CRC32 of
    /// the result is checked, so a damaged content file is `CorruptIndex`, never wrong results.
    pub fn read<'a>(
        &'a self,
        d: u32,
        zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
        out: &'a mut Vec<u8>,
    ) -> CoreResult<&'a [u8]> {
        let e = self.doc(d);
        let start = usize::try_from(e.content_off).unwrap_or(usize::MAX);
        let block = self
            .content
            .get(start..start.saturating_add(e.clen as usize))
            .ok_or_else(|| self.corrupt(format!("document {d} content out of bounds")))?;
        let bad = |what: String| self.corrupt(format!("document {d} ({}): {what}", self.path(d)));
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
                out.truncate(n);
                out
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
        if crc32fast::hash(bytes) != e.crc {
            return Err(bad("content checksum mismatch".into()));
        }
        Ok(bytes)
    }

    /// Chunk spans of document `d`: (start_line, end_line, id).
    pub fn chunks(&self, d: u32) -> Vec<(u32, u32, &str)> {
        let e = self.doc(d);
        let table = self.section(format::SEC_CHUNKS);
        let ids = self.section(format::SEC_CHUNKIDS);
        (e.first_chunk..e.first_chunk + e.n_chunks)
            .filter_map(|c| {
                let at = c as usize * format::CHUNK_LEN;
                let (s, en) = (u32_at(table, at)?, u32_at(table, at + 4)?);
                let (io, il) = (
                    u32_at(table, at + 8)? as usize,
                    u32_at(table, at + 12)? as usize,
                );
                let id = std::str::from_utf8(ids.get(io..io.checked_add(il)?)?).ok()?;
                Some((s, en, id))
            })
            .collect()
    }

    /// Find a trigram's table entry: (count, postings offset).
    fn lookup(&self, t: u32) -> Option<(u32, u64)> {
        let table = self.section(format::SEC_TRIGRAMS);
        let n = self.header.n_trigrams as usize;
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let v = u32_at(table, mid * format::TRI_LEN)?;
            match v.cmp(&t) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let at = mid * format::TRI_LEN;
                    return Some((u32_at(table, at + 4)?, u64_at(table, at + 8)?));
                }
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
