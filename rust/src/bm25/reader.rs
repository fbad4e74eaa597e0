//! A segment's BM25 postings, memory-mapped and validated once (checksums, counts, every
//! offset), then read-only and `Sync`. Accessors are bounds-checked: a damaged file that
//! passed the checksums by chance yields `CorruptIndex`, never a panic.

use std::fs::File;
use std::path::{Path, PathBuf};

use memchr::memmem::Finder;
use memmap2::Mmap;

use super::build::gram;
use super::format::{self, Header};
use crate::error::{CoreError, CoreResult};
use crate::trigram::format::u32_at;
use crate::trigram::index::Segment;
use crate::trigram::postings::get_varint;

/// The bytes a word (and so a term the postings can answer) is made of, lower-cased.
pub const ALPHABET: &[u8] = b"0123456789_abcdefghijklmnopqrstuvwxyz";

/// One scoring unit: its document (local id), lines and chunk (index in the document's
/// chunk table, `None` for a window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub doc: u32,
    pub start: u32,
    pub end: u32,
    pub chunk: Option<u32>,
}

/// One segment's postings file.
pub struct Postings {
    path: PathBuf,
    map: Mmap,
    header: Header,
}

impl Postings {
    /// Open and validate the postings of `seg` at `path`; `Ok(None)` when the file does not
    /// exist (an index built before postings existed).
    pub fn open(path: &Path, seg: &Segment) -> CoreResult<Option<Postings>> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(CoreError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        // SAFETY: as the trigram index: written once into a fresh generation directory and
        // never modified in place; every read below is a bounds-checked slice.
        let map = unsafe { Mmap::map(&file) }.map_err(|source| CoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let header = Header::decode(path, &map)?;
        let p = Postings {
            path: path.to_path_buf(),
            map,
            header,
        };
        if header.build_id != seg.build_id() || header.n_docs != seg.n_docs() {
            return Err(p.corrupt("the postings belong to another build of the segment"));
        }
        p.validate()?;
        Ok(Some(p))
    }

    pub fn corrupt(&self, reason: impl Into<String>) -> CoreError {
        CoreError::CorruptIndex {
            path: self.path.clone(),
            reason: reason.into(),
        }
    }

    fn section(&self, i: usize) -> &[u8] {
        let (off, len, _) = self.header.sections[i];
        // Bounds were checked against the file length in `Header::decode`.
        &self.map[off as usize..(off + len) as usize]
    }

    /// Checksums, then the references between sections: units of known documents in
    /// document order, word offsets ascending inside their sections, gram lists inside
    /// GRAMIDS and naming known words.
    fn validate(&self) -> CoreResult<()> {
        for i in 0..format::SECTIONS {
            if crc32fast::hash(self.section(i)) != self.header.sections[i].2 {
                return Err(self.corrupt(format!("section {i} checksum mismatch")));
            }
        }
        let mut prev_doc = 0u32;
        for u in 0..self.header.n_units {
            let unit = self.unit(u)?;
            if unit.doc >= self.header.n_docs || unit.doc < prev_doc {
                return Err(self.corrupt(format!("unit {u} names document {}", unit.doc)));
            }
            prev_doc = unit.doc;
        }
        let words = self.section(format::SEC_WORDS);
        let (vocab_len, blob_len) = (
            self.section(format::SEC_VOCAB).len() as u64,
            self.section(format::SEC_POSTINGS).len() as u64,
        );
        let (mut pv, mut pp) = (0u32, 0u32);
        for w in 0..=self.header.n_words as usize {
            let v = u32_at(words, w * format::WORD_LEN).unwrap_or(u32::MAX);
            let p = u32_at(words, w * format::WORD_LEN + 4).unwrap_or(u32::MAX);
            if v < pv || p < pp || u64::from(v) > vocab_len || u64::from(p) > blob_len {
                return Err(self.corrupt(format!("word {w} points outside its sections")));
            }
            (pv, pp) = (v, p);
        }
        if u64::from(pv) != vocab_len || u64::from(pp) != blob_len {
            return Err(self.corrupt("the word table does not cover its sections"));
        }
        // Each trigram's list decodes to known words, and the lists tile GRAMIDS.
        let mut end = 0usize;
        for g in 0..self.header.n_grams as usize {
            let (_, count, at) = self.gram_entry(g);
            let mut n = 0usize;
            let mut bad = at as usize != end;
            for w in self.gram_ids(count as usize, at as usize) {
                bad |= w.is_none_or(|w| w >= self.header.n_words);
                n += 1;
                if bad {
                    break;
                }
            }
            if bad || n != count as usize {
                return Err(self.corrupt(format!("trigram {g}'s word list is damaged")));
            }
            end = self.gram_ids_end(count as usize, at as usize);
        }
        if end != self.section(format::SEC_GRAMIDS).len() {
            return Err(self.corrupt("the trigram lists do not cover their section"));
        }
        Ok(())
    }

    pub fn n_units(&self) -> u32 {
        self.header.n_units
    }

    pub fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    pub fn unit(&self, u: u32) -> CoreResult<Unit> {
        let table = self.section(format::SEC_UNITS);
        let at = u as usize * format::UNIT_LEN;
        let field = |i: usize| u32_at(table, at + 4 * i);
        match (field(0), field(1), field(2), field(3)) {
            (Some(doc), Some(start), Some(end), Some(chunk)) => Ok(Unit {
                doc,
                start,
                end,
                chunk: (chunk != format::NO_CHUNK).then_some(chunk),
            }),
            _ => Err(self.corrupt(format!("unit {u} out of range"))),
        }
    }

    fn word_range(&self, sec: usize, field: usize, w: u32) -> &[u8] {
        let words = self.section(format::SEC_WORDS);
        let at = w as usize * format::WORD_LEN + field;
        let (a, b) = (
            u32_at(words, at).unwrap_or(0) as usize,
            u32_at(words, at + format::WORD_LEN).unwrap_or(0) as usize,
        );
        self.section(sec).get(a..b).unwrap_or(&[])
    }

    /// The bytes of word `w` (validated offsets).
    pub fn word(&self, w: u32) -> &[u8] {
        self.word_range(format::SEC_VOCAB, 0, w)
    }

    fn gram_entry(&self, g: usize) -> (u32, u32, u32) {
        let t = self.section(format::SEC_GRAMS);
        let at = g * format::GRAM_LEN;
        (
            u32_at(t, at).unwrap_or(0),
            u32_at(t, at + 4).unwrap_or(0),
            u32_at(t, at + 8).unwrap_or(0),
        )
    }

    /// The `count` word ids of the list at byte `at` of GRAMIDS (`None` where damaged).
    fn gram_ids(&self, count: usize, at: usize) -> impl Iterator<Item = Option<u32>> + '_ {
        let ids = self.section(format::SEC_GRAMIDS);
        let (mut pos, mut prev) = (at, 0u32);
        (0..count).map(move |_| {
            prev = prev.checked_add(get_varint(ids, &mut pos)?)?;
            Some(prev)
        })
    }

    /// Where the list at `at` of `count` ids ends.
    fn gram_ids_end(&self, count: usize, at: usize) -> usize {
        let ids = self.section(format::SEC_GRAMIDS);
        let mut pos = at;
        for _ in 0..count {
            if get_varint(ids, &mut pos).is_none() {
                break;
            }
        }
        pos
    }

    /// The words containing trigram `key` (empty when none does; validated at open).
    fn gram_words(&self, key: u32) -> impl Iterator<Item = u32> + '_ {
        let (count, at) = self.gram_list(key);
        self.gram_ids(count, at).map_while(|w| w)
    }

    /// `(count, first)` of trigram `key`'s word list.
    fn gram_list(&self, key: u32) -> (usize, usize) {
        let n = self.header.n_grams as usize;
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.gram_entry(mid).0 < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        match (lo < n).then(|| self.gram_entry(lo)) {
            Some((k, c, f)) if k == key => (c as usize, f as usize),
            _ => (0, 0),
        }
    }

    /// The word equal to `w`, by binary search of the sorted vocabulary.
    fn find_word(&self, w: &[u8]) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, self.header.n_words);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.word(mid).cmp(w) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The words that contain `term` (lower-case, at least 2 bytes of [`ALPHABET`]), each
    /// with its count of non-overlapping matches, in word order.
    pub fn matching_words(&self, term: &[u8], finder: &Finder<'_>) -> Vec<(u32, u32)> {
        let cands: Vec<u32> = if term.len() >= 3 {
            // The rarest trigram's words; the others only confirm what the match check does.
            let rarest = term
                .windows(3)
                .map(|t| {
                    let key = gram(t);
                    (self.gram_list(key).0, key)
                })
                .min();
            rarest.map_or_else(Vec::new, |(_, key)| self.gram_words(key).collect())
        } else {
            // A 2-byte term: the word itself, and the longer words that hold it followed or
            // preceded by some byte.
            let mut c: Vec<u32> = self.find_word(term).into_iter().collect();
            for &x in ALPHABET {
                c.extend(self.gram_words(gram(&[term[0], term[1], x])));
                c.extend(self.gram_words(gram(&[x, term[0], term[1]])));
            }
            c.sort_unstable();
            c.dedup();
            c
        };
        cands
            .into_iter()
            .filter_map(|w| {
                let n = finder.find_iter(self.word(w)).count() as u32;
                (n > 0).then_some((w, n))
            })
            .collect()
    }

    /// Word `w`'s postings, decoded entry by entry: `f(unit, occurrences, lines)` where
    /// `lines` is `Some` only when `want_lines(unit)` says so.
    pub fn for_each_posting(
        &self,
        w: u32,
        mut want_lines: impl FnMut(u32) -> bool,
        mut f: impl FnMut(u32, u32, Option<&[u32]>),
    ) -> CoreResult<()> {
        let b = self.word_range(format::SEC_POSTINGS, 4, w);
        let bad = || self.corrupt(format!("postings of word {w} are damaged"));
        let mut pos = 0usize;
        let n = get_varint(b, &mut pos).ok_or_else(bad)?;
        let mut unit = 0u32;
        let mut lines: Vec<u32> = Vec::new();
        for _ in 0..n {
            let gap = get_varint(b, &mut pos).ok_or_else(bad)?;
            unit = unit.checked_add(gap).ok_or_else(bad)?;
            if unit >= self.header.n_units {
                return Err(bad());
            }
            let packed = get_varint(b, &mut pos).ok_or_else(bad)?;
            let n_lines = packed >> 1;
            let occ = if packed & 1 == 1 {
                n_lines
            } else {
                get_varint(b, &mut pos).ok_or_else(bad)?
            };
            if want_lines(unit) {
                lines.clear();
                let mut at = self.unit(unit)?.start;
                for _ in 0..n_lines {
                    at = at
                        .checked_add(get_varint(b, &mut pos).ok_or_else(bad)?)
                        .ok_or_else(bad)?;
                    lines.push(at);
                }
                f(unit, occ, Some(&lines));
            } else {
                for _ in 0..n_lines {
                    get_varint(b, &mut pos).ok_or_else(bad)?;
                }
                f(unit, occ, None);
            }
        }
        Ok(())
    }
}
