//! The on-disk layout of a text index: two files in the modality's directory.
//!
//! `trigram.idx` holds the tables and posting lists; `content.bin` holds every indexed file's
//! bytes, one block each (LZ4 by default, zstd on request, stored as is when compression does
//! not pay), with a CRC32 of the stored block, so that matches are verified against exactly
//! the content that was indexed, whatever happened to the work tree since.
//!
//! ```text
//! trigram.idx: header (HEADER_LEN bytes) then sections, all integers little-endian
//!   magic "MGVTRIDX", version u32, n_docs u32, n_trigrams u32, n_chunks u32, build_id u64,
//!   total_content_bytes u64, then SECTIONS x (offset u64, len u64, crc32 u32, reserved u32),
//!   then crc32 of everything before it (u32)
//!   PATHS    concatenated UTF-8 paths
//!   DOCS     n_docs x DOC_LEN: path_off u32, path_len u32, content_off u64, clen u32,
//!            raw_len u32, first_chunk u32, n_chunks u32, crc32 of the stored block u32,
//!            codec u8 (0 stored, 1 LZ4 block, 2 zstd frame), 3 reserved bytes
//!   TRIGRAMS the trigrams, sorted, with their postings offsets: a `keytable` (format 7;
//!            format 5-6: n_trigrams fixed entries, see `tri_len`)
//!   POSTINGS per trigram: count (LEB128 varint), ceil(count / 2) bytes of 4-bit follow
//!            masks (low nibble first, see `ngram::follow_bit` and `ngram::fold_mask`), then
//!            the count ids as gaps bit-packed in blocks of 128 (see `postings::encode`)
//!   CHUNKS   n_chunks x CHUNK_LEN: start_line u32, end_line u32 (format 5-6: then
//!            id_off u32, id_len u32 into CHUNKIDS, the ids concatenated)
//!   CHUNKIDS width u32, then when width > 0 n_chunks x width bytes, each id's 2 x width
//!            lower-case hex digits as bytes; when 0, (n_chunks + 1) x u32 offsets and the
//!            ids concatenated (ids that are not all hex of one length)
//!   BLOCKS   for every document of at least BLOCK_MIN_DOC bytes, in document order:
//!            ceil(raw_len / BLOCK) one-hash Bloom filters of BLOCK_FILTER_BYTES each, the
//!            trigrams starting in [b * BLOCK, (b + 1) * BLOCK + BLOCK_OVERLAP) of block b
//!            (see `ngram::block_filters`)
//! content.bin: magic "MGVTRCON", version u32, reserved u32, build_id u64, then blocks
//! ```
//!
//! Format history: 1 — first version (zstd frames only). 2 — per-document codec and CRC32
//! (LZ4 decompresses ~3x faster than zstd level 1, which is what literal queries pay for),
//! and a follow mask per posting (which bytes may come after the trigram in the document:
//! a literal's consecutive trigrams must chain, which removes most false candidates).
//! 3 — posting ids bit-packed in blocks of 128 instead of LEB128 varints (~30% smaller
//! postings); an index may be a list of segments (`segments.json`, written by the text
//! modality), each segment in this format. 4 — the document's CRC32 covers its stored
//! (compressed) block instead of the decompressed bytes: checked before decoding, so a
//! damaged block never reaches the decoder, and a search that needs only a document's first
//! matching lines can stop decoding there (`lz4::Lz4Decoder`); it also hashes 0.4x the bytes.
//! 5 — per-block trigram filters for large documents (`BLOCKS`): a literal must have all its
//! trigrams in one block, which document-level postings cannot see (a phrase of common words
//! in large files).
//! 6 — a trigram's table entry is 8 bytes (its 24 bits and a 40-bit postings offset) instead
//! of 16 (trigram u32, count u32, offset u64), the count a varint at the head of its
//! postings: the table was two thirds of a small repository's `trigram.idx` (requests:
//! 377 of 560 KB). Version 5 is still read (`Header::version`).
//! 7 — the trigram table as a `keytable` (groups of 32: a directory entry and varint gaps,
//! ~3 bytes a trigram instead of 8), chunk entries of 8 bytes and chunk ids stored as the
//! bytes their hex digits spell (10 bytes for the chunker's 20 digits): requests' table
//! and chunk sections 218 to ~90 KB. Versions 5 and 6 are still read.
//! 8 — a file of at most `PACK_MAX` bytes may be *packed*: the reserved word of section 0's
//! entry is 1 and everything after the header is one zstd frame of the sections, which the
//! reader decompresses at open (`inflate`); offsets, lengths and CRCs are those of the
//! sections themselves. A small tree's postings are far from their entropy (requests:
//! 249 to ~145 KB); a large index stays mapped. Otherwise the layout of version 7, still read.

use std::path::Path;

use super::keytable;
use crate::error::CoreError;

pub const MAGIC: &[u8; 8] = b"MGVTRIDX";
pub const CONTENT_MAGIC: &[u8; 8] = b"MGVTRCON";
pub const VERSION: u32 = 8;
/// The oldest version this build reads (5: 16-byte trigram entries, `TRI_LEN_V5`).
pub const MIN_VERSION: u32 = 5;
pub const INDEX_FILE: &str = "trigram.idx";
pub const CONTENT_FILE: &str = "content.bin";

pub const SEC_PATHS: usize = 0;
pub const SEC_DOCS: usize = 1;
pub const SEC_TRIGRAMS: usize = 2;
pub const SEC_POSTINGS: usize = 3;
pub const SEC_CHUNKS: usize = 4;
pub const SEC_CHUNKIDS: usize = 5;
pub const SEC_BLOCKS: usize = 6;
pub const SECTIONS: usize = 7;

/// Documents of at least this many bytes get per-block trigram filters.
pub const BLOCK_MIN_DOC: u32 = 64 << 10;
/// Bytes of content per filter block, and how far a block's trigrams reach into the next one
/// (a literal of up to `BLOCK_OVERLAP + 2` bytes lies wholly in some block's range).
pub const BLOCK: usize = 8 << 10;
pub const BLOCK_OVERLAP: usize = 64;
/// Bytes per block filter (a third of a bit per content byte).
pub const BLOCK_FILTER_BYTES: usize = 320;

/// Filter blocks of a document of `raw_len` bytes (0 below [`BLOCK_MIN_DOC`]).
pub fn filter_blocks(raw_len: u32) -> usize {
    if raw_len < BLOCK_MIN_DOC {
        0
    } else {
        (raw_len as usize).div_ceil(BLOCK)
    }
}

pub const FIXED_LEN: usize = 8 + 4 * 4 + 8 + 8;
pub const SECTION_ENTRY_LEN: usize = 24;
pub const HEADER_LEN: usize = FIXED_LEN + SECTIONS * SECTION_ENTRY_LEN + 4;
pub const CONTENT_HEADER_LEN: usize = 8 + 4 + 4 + 8;
pub const DOC_LEN: usize = 40;

/// How a document's bytes are kept in `content.bin`.
pub const CODEC_STORED: u8 = 0;
pub const CODEC_LZ4: u8 = 1;
pub const CODEC_ZSTD: u8 = 2;
pub const TRI_LEN: usize = 8;
pub const TRI_LEN_V5: usize = 16;

/// Bytes per trigram table entry in a file of `version`.
pub fn tri_len(version: u32) -> usize {
    if version < 6 {
        TRI_LEN_V5
    } else {
        TRI_LEN
    }
}
/// Bytes per chunk table entry in a file of `version`.
pub fn chunk_len(version: u32) -> usize {
    if version < 7 {
        16
    } else {
        8
    }
}
/// The widest hex chunk id stored as bytes (longer ones are stored as text).
pub const MAX_ID_WIDTH: usize = 64;

/// Read a little-endian `u32` at `off`; `None` past the end.
#[inline]
pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Read a little-endian `u64` at `off`; `None` past the end.
#[inline]
pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Files of at most this many bytes are packed when that saves a tenth (decompressing
/// 2 MiB at open costs ~2-5 ms CPU; a larger index stays mapped from the page cache).
pub const PACK_MAX: u64 = 2 << 20;
/// The zstd level of a packed file (15: requests' postings 6 % smaller than at 6, ~0.1 s
/// per MiB written).
pub const PACK_LEVEL: i32 = 15;

/// The bytes a reader sees: the mapped file, or a packed file's header and sections.
pub enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Where a file format's header keeps what packing needs: the magic, the fixed part's
/// length, the number of sections (entries of `SECTION_ENTRY_LEN` after the fixed part,
/// then the header's CRC) and the first version that may be packed.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub magic: &'static [u8; 8],
    pub fixed_len: usize,
    pub sections: usize,
    pub packs_from: u32,
}

/// `trigram.idx`'s layout.
pub const LAYOUT: Layout = Layout {
    magic: MAGIC,
    fixed_len: FIXED_LEN,
    sections: SECTIONS,
    packs_from: 8,
};

impl Layout {
    pub const fn header_len(&self) -> usize {
        self.fixed_len + self.sections * SECTION_ENTRY_LEN + 4
    }

    /// The packed flag: section 0's reserved word.
    const fn flag_at(&self) -> usize {
        self.fixed_len + 20
    }

    /// The sections (in file order, after the header) as one zstd frame, when the file is
    /// small enough and packing saves a tenth; `None`: write them as they are.
    pub fn pack(&self, parts: &[&[u8]]) -> Option<Vec<u8>> {
        let body: usize = parts.iter().map(|p| p.len()).sum();
        if (self.header_len() + body) as u64 > PACK_MAX || body < 256 {
            return None;
        }
        let frame = zstd::bulk::compress(&parts.concat(), PACK_LEVEL).ok()?;
        (frame.len() * 10 <= body * 9).then_some(frame)
    }

    /// Mark an encoded header as packed (and checksum it again).
    pub fn mark_packed(&self, header: &mut [u8]) {
        let (at, end) = (self.flag_at(), self.header_len() - 4);
        header[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32fast::hash(&header[..end]);
        header[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// A packed file's header and decompressed sections; `Ok(None)` when `b` is not a
    /// packed file of this layout with a sound header (the reader's own checks then
    /// report what is wrong with it).
    pub fn unpack(&self, path: &Path, b: &[u8]) -> Result<Option<Vec<u8>>, CoreError> {
        let hl = self.header_len();
        if b.len() < hl
            || &b[..8] != self.magic
            || u32_at(b, 8).is_none_or(|v| v < self.packs_from)
            || u32_at(b, self.flag_at()) != Some(1)
            || u32_at(b, hl - 4) != Some(crc32fast::hash(&b[..hl - 4]))
        {
            return Ok(None);
        }
        let corrupt = |reason: String| CoreError::CorruptIndex {
            path: path.to_path_buf(),
            reason,
        };
        let mut end = hl as u64;
        for i in 0..self.sections {
            let at = self.fixed_len + i * SECTION_ENTRY_LEN;
            let (off, len) = (u64_at(b, at).unwrap_or(0), u64_at(b, at + 8).unwrap_or(0));
            end = end.max(off.saturating_add(len));
        }
        if end > PACK_MAX {
            return Err(corrupt(format!("a packed file of {end} bytes")));
        }
        let body = zstd::bulk::decompress(&b[hl..], end as usize - hl)
            .map_err(|e| corrupt(format!("packed sections do not decompress ({e})")))?;
        if body.len() != end as usize - hl {
            return Err(corrupt(format!(
                "packed sections are {} bytes, the header says {}",
                body.len(),
                end as usize - hl
            )));
        }
        let mut image = Vec::with_capacity(end as usize);
        image.extend_from_slice(&b[..hl]);
        image.extend_from_slice(&body);
        Ok(Some(image))
    }

    /// The file as its reader sees it (`unpack`, or the mapping itself).
    pub fn inflate(&self, path: &Path, map: memmap2::Mmap) -> Result<Bytes, CoreError> {
        Ok(match self.unpack(path, &map)? {
            Some(image) => Bytes::Owned(image),
            None => Bytes::Map(map),
        })
    }
}

/// Write a file of `layout`: its encoded `header` then its sections, packed when that
/// pays (`Layout::pack`); returns the bytes written.
pub fn write_file(
    layout: &Layout,
    out: &mut impl std::io::Write,
    mut header: Vec<u8>,
    parts: &[&[u8]],
) -> std::io::Result<u64> {
    let packed = layout.pack(parts);
    if packed.is_some() {
        layout.mark_packed(&mut header);
    }
    out.write_all(&header)?;
    let mut n = header.len() as u64;
    match &packed {
        Some(frame) => {
            out.write_all(frame)?;
            n += frame.len() as u64;
        }
        None => {
            for p in parts {
                out.write_all(p)?;
                n += p.len() as u64;
            }
        }
    }
    Ok(n)
}

/// The parsed fixed header of `trigram.idx`.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    /// The file's format version (`MIN_VERSION..=VERSION`; written as `VERSION`).
    pub version: u32,
    pub n_docs: u32,
    pub n_trigrams: u32,
    pub n_chunks: u32,
    pub build_id: u64,
    pub total_content_bytes: u64,
    pub sections: [(u64, u64, u32); SECTIONS],
}

impl Header {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.n_docs.to_le_bytes());
        out.extend_from_slice(&self.n_trigrams.to_le_bytes());
        out.extend_from_slice(&self.n_chunks.to_le_bytes());
        out.extend_from_slice(&self.build_id.to_le_bytes());
        out.extend_from_slice(&self.total_content_bytes.to_le_bytes());
        for (off, len, crc) in self.sections {
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parse and check the header of a file of `file_len` bytes: magic, version, header
    /// checksum, and that every section lies inside the file.
    pub fn decode(path: &Path, b: &[u8]) -> Result<Header, CoreError> {
        let corrupt = |reason: String| CoreError::CorruptIndex {
            path: path.to_path_buf(),
            reason,
        };
        if b.len() < HEADER_LEN {
            return Err(corrupt(format!(
                "{} bytes is shorter than the header",
                b.len()
            )));
        }
        if &b[..8] != MAGIC {
            return Err(corrupt("not a Maguyva trigram index (bad magic)".into()));
        }
        let version = u32_at(b, 8).unwrap_or(0);
        if !(MIN_VERSION..=VERSION).contains(&version) {
            return Err(corrupt(format!(
                "format version {version}, this build reads versions {MIN_VERSION}-{VERSION}: \
                 rebuild the index"
            )));
        }
        let want = u32_at(b, HEADER_LEN - 4).unwrap_or(0);
        if crc32fast::hash(&b[..HEADER_LEN - 4]) != want {
            return Err(corrupt("header checksum mismatch".into()));
        }
        let mut sections = [(0u64, 0u64, 0u32); SECTIONS];
        for (i, s) in sections.iter_mut().enumerate() {
            let at = FIXED_LEN + i * SECTION_ENTRY_LEN;
            let off = u64_at(b, at).unwrap_or(u64::MAX);
            let len = u64_at(b, at + 8).unwrap_or(u64::MAX);
            let crc = u32_at(b, at + 16).unwrap_or(0);
            let end = off.checked_add(len);
            if off < HEADER_LEN as u64 || end.is_none_or(|e| e > b.len() as u64) {
                return Err(corrupt(format!("section {i} lies outside the file")));
            }
            *s = (off, len, crc);
        }
        let h = Header {
            version,
            n_docs: u32_at(b, 12).unwrap_or(0),
            n_trigrams: u32_at(b, 16).unwrap_or(0),
            n_chunks: u32_at(b, 20).unwrap_or(0),
            build_id: u64_at(b, 24).unwrap_or(0),
            total_content_bytes: u64_at(b, 32).unwrap_or(0),
            sections,
        };
        let tri = if version < 7 {
            u64::from(h.n_trigrams) * tri_len(version) as u64
        } else {
            // a keytable: its directory, then the gaps (checked where they are read)
            (h.n_trigrams as usize).div_ceil(keytable::GROUP) as u64 * keytable::DIR_LEN as u64
        };
        let expect = [
            (SEC_DOCS, u64::from(h.n_docs) * DOC_LEN as u64, true),
            (SEC_TRIGRAMS, tri, version < 7),
            (
                SEC_CHUNKS,
                u64::from(h.n_chunks) * chunk_len(version) as u64,
                true,
            ),
        ];
        for (sec, len, exact) in expect {
            if !exact && h.sections[sec].1 >= len {
                continue;
            }
            if h.sections[sec].1 != len {
                return Err(corrupt(format!(
                    "section {sec} is {} bytes, its count says {len}",
                    h.sections[sec].1
                )));
            }
        }
        Ok(h)
    }
}

/// The header of `content.bin`.
pub fn encode_content_header(build_id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(CONTENT_HEADER_LEN);
    out.extend_from_slice(CONTENT_MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&build_id.to_le_bytes());
    out
}

/// Check `content.bin`'s header against the index's build id.
pub fn check_content_header(path: &Path, b: &[u8], build_id: u64) -> Result<(), CoreError> {
    // the content store's layout did not change in versions 6 and 7: any version is read
    let corrupt = |reason: &str| CoreError::CorruptIndex {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    if b.len() < CONTENT_HEADER_LEN || &b[..8] != CONTENT_MAGIC {
        return Err(corrupt("not a Maguyva content store (bad magic)"));
    }
    if !u32_at(b, 8).is_some_and(|v| (MIN_VERSION..=VERSION).contains(&v)) {
        return Err(corrupt(
            "content store of another format version: rebuild the index",
        ));
    }
    if u64_at(b, 16) != Some(build_id) {
        return Err(corrupt(
            "content store belongs to another build of the index",
        ));
    }
    Ok(())
}
