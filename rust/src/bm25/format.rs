//! The on-disk layout of a segment's BM25 postings: one file beside the segment's
//! `*.idx`, with the same conventions (versioned header, per-section CRC32, header CRC32).
//!
//! ```text
//! *.bm25: header (HEADER_LEN bytes) then sections, all integers little-endian
//!   magic "MGVBM25P", version u32, n_docs u32, n_units u32, n_words u32, n_grams u32,
//!   reserved u32, build_id u64 (the segment's trigram index), then SECTIONS x (offset u64,
//!   len u64, crc32 u32, reserved u32), then crc32 of everything before it (u32)
//!   UNITS    per document, a varint: 0 when it has chunks (its units are its chunks, in
//!            the trigram index's chunk table), else its line count (its units are 60-line
//!            windows); units are numbered per document in the scorer's span order (start
//!            ascending, end descending). Format 1: n_units x UNIT_LEN: doc u32, start_line
//!            u32, end_line u32, chunk u32 (index in the document's chunk table, NO_CHUNK
//!            for a window)
//!   WORDS    per word, varints: bytes shared with the previous word, bytes of its own,
//!            bytes of its postings. Format 1: (n_words + 1) x WORD_LEN: vocab_off u32,
//!            postings_off u32 (word i is VOCAB[vocab_off(i)..vocab_off(i + 1)], its
//!            postings likewise)
//!   VOCAB    the distinct lower-cased words (runs of [a-z0-9_], at least 2 bytes), sorted;
//!            format 2 keeps each word's own bytes only (front coding)
//!   POSTINGS per word, varints: n_entries, then per entry unit gap << 1 | (1 for one
//!            occurrence on one line: then only that line's gap follows), n_lines << 1 | (1
//!            when the occurrences equal n_lines), the occurrences when they do not, line
//!            gaps (the first from the unit's start line). Format 1: no low bit on the gap
//!            (every entry has its n_lines)
//!   GRAMS    the trigrams (3 bytes, first byte highest), sorted, and their offsets into
//!            GRAMIDS: a `trigram::keytable`. Format 1: n_grams x GRAM_LEN: trigram u32,
//!            count u32, offset u32
//!   GRAMIDS  per trigram, the ids of the words that contain it: format 2 the
//!            ids as varint gaps up to the next list. Format 1: count varint gaps.
//!            Both empty in format 2 when the vocabulary is under `SCAN_VOCAB_BELOW`
//!            bytes (the reader builds the lists from it on first use)
//! ```
//!
//! Format history: 1 — first version. 2 — the units, the word table and the vocabulary
//! decoded at open instead of fixed tables (the units repeated the trigram index's chunk
//! spans; words are front coded), the trigram table a keytable: stdlib 1.63 MB to ~0.6 MB
//! of these sections; an entry of one occurrence on one line saves its count (-0.39 MB).
//! 3 — packed as the trigram index's format 8 (`trigram::format::Layout`: a file of at most
//! `PACK_MAX` bytes, its sections one zstd frame decompressed at open; requests' 147 to
//! ~89 KB); otherwise the layout of version 2. Versions 1 and 2 are still read.

use std::path::Path;

use crate::error::CoreError;
use crate::trigram::format::{u32_at, u64_at};
use crate::trigram::keytable;

pub const MAGIC: &[u8; 8] = b"MGVBM25P";
pub const VERSION: u32 = 3;
/// Packing, as `trigram.idx`'s (section 0's reserved word, from version 3).
pub const LAYOUT: crate::trigram::format::Layout = crate::trigram::format::Layout {
    magic: MAGIC,
    fixed_len: FIXED_LEN,
    sections: SECTIONS,
    packs_from: 3,
};
/// The oldest version this build reads.
pub const MIN_VERSION: u32 = 1;

pub const SEC_UNITS: usize = 0;
pub const SEC_WORDS: usize = 1;
pub const SEC_VOCAB: usize = 2;
pub const SEC_POSTINGS: usize = 3;
pub const SEC_GRAMS: usize = 4;
pub const SEC_GRAMIDS: usize = 5;
pub const SECTIONS: usize = 6;

pub const FIXED_LEN: usize = 8 + 6 * 4 + 8;
pub const SECTION_ENTRY_LEN: usize = 24;
pub const HEADER_LEN: usize = FIXED_LEN + SECTIONS * SECTION_ENTRY_LEN + 4;
pub const UNIT_LEN: usize = 16;
pub const WORD_LEN: usize = 8;
pub const GRAM_LEN: usize = 12;
pub const NO_CHUNK: u32 = u32::MAX;
/// Format 2 writes no trigram lists (GRAMS and GRAMIDS empty) for a vocabulary under this
/// many bytes: the reader builds them from the vocabulary on first use (the stdlib's 458
/// KB of words: ~5 ms CPU once), and they were 0.53 MB of its file.
pub const SCAN_VOCAB_BELOW: usize = 1 << 20;

/// The postings file of the segment whose trigram index is `index_file`
/// (`trigram.idx` -> `trigram.bm25`, `seg-000001.idx` -> `seg-000001.bm25`).
pub fn postings_name(index_file: &str) -> String {
    match index_file.strip_suffix(".idx") {
        Some(stem) => format!("{stem}.bm25"),
        None => format!("{index_file}.bm25"),
    }
}

/// The parsed fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// `MIN_VERSION..=VERSION` (written as `VERSION`).
    pub version: u32,
    pub n_docs: u32,
    pub n_units: u32,
    pub n_words: u32,
    pub n_grams: u32,
    pub build_id: u64,
    pub sections: [(u64, u64, u32); SECTIONS],
}

impl Header {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(MAGIC);
        for v in [
            self.version,
            self.n_docs,
            self.n_units,
            self.n_words,
            self.n_grams,
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.build_id.to_le_bytes());
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

    /// Parse and check the header of a file: magic, version, header checksum, sections
    /// inside the file and of the sizes their counts imply.
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
            return Err(corrupt("not Maguyva BM25 postings (bad magic)".into()));
        }
        let version = u32_at(b, 8).unwrap_or(0);
        if !(MIN_VERSION..=VERSION).contains(&version) {
            return Err(corrupt(format!(
                "BM25 postings version {version}, this build reads versions \
                 {MIN_VERSION}-{VERSION}: rebuild the index"
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
            n_units: u32_at(b, 16).unwrap_or(0),
            n_words: u32_at(b, 20).unwrap_or(0),
            n_grams: u32_at(b, 24).unwrap_or(0),
            build_id: u64_at(b, 32).unwrap_or(0),
            sections,
        };
        // format 2's units and words are varints, checked as they are decoded at open
        let expect = [
            (
                SEC_UNITS,
                u64::from(h.n_units) * UNIT_LEN as u64,
                version < 2,
            ),
            (
                SEC_WORDS,
                (u64::from(h.n_words) + 1) * WORD_LEN as u64,
                version < 2,
            ),
            (
                SEC_GRAMS,
                u64::from(h.n_grams) * GRAM_LEN as u64,
                version < 2,
            ),
            (
                SEC_GRAMS,
                (h.n_grams as usize).div_ceil(keytable::GROUP) as u64 * keytable::DIR_LEN as u64,
                version >= 2,
            ),
        ];
        for (sec, len, applies) in expect {
            if !applies || (version >= 2 && h.sections[sec].1 >= len) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            version: VERSION,
            n_docs: 3,
            n_units: 0,
            n_words: 0,
            n_grams: 0,
            build_id: 42,
            sections: [(HEADER_LEN as u64, 0, 0); SECTIONS],
        }
    }

    #[test]
    fn header_round_trips() {
        let mut h = header();
        h.sections[SEC_WORDS] = (HEADER_LEN as u64, WORD_LEN as u64, 7);
        let mut b = h.encode();
        b.extend_from_slice(&[0u8; WORD_LEN]);
        assert_eq!(Header::decode(Path::new("x"), &b).expect("decode"), h);
    }

    #[test]
    fn every_header_byte_is_checked() {
        let mut h = header();
        h.sections[SEC_WORDS] = (HEADER_LEN as u64, WORD_LEN as u64, 7);
        let mut good = h.encode();
        good.extend_from_slice(&[0u8; WORD_LEN]);
        for i in 0..HEADER_LEN {
            let mut b = good.clone();
            b[i] ^= 0x10;
            assert!(Header::decode(Path::new("x"), &b).is_err(), "byte {i}");
        }
    }

    #[test]
    fn names_follow_the_segment() {
        assert_eq!(postings_name("trigram.idx"), "trigram.bm25");
        assert_eq!(postings_name("seg-000003.idx"), "seg-000003.bm25");
        assert_eq!(postings_name("other"), "other.bm25");
    }
}
