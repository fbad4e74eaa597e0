//! A segment's BM25 postings, memory-mapped and validated once (checksums, counts, every
//! offset), then read-only and `Sync`. Accessors are bounds-checked: a damaged file that
//! passed the checksums by chance yields `CorruptIndex`, never a panic.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memchr::memmem::Finder;
use memmap2::Mmap;

use super::build::gram;
use super::format::{self, Header};
use crate::error::{CoreError, CoreResult};
use crate::trigram::bm25::spans_of;
use crate::trigram::format::u32_at;
use crate::trigram::index::Segment;
use crate::trigram::keytable;
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

/// Per word and one past the last: (offset in the vocabulary, offset in POSTINGS).
type WordTable = Vec<(u32, u32)>;

/// One segment's postings file, its units and word table decoded at open.
pub struct Postings {
    path: PathBuf,
    map: crate::trigram::format::Bytes,
    header: Header,
    units: Vec<Unit>,
    words: WordTable,
    /// Format 2: the vocabulary spelled out (format 1 reads it from the file).
    vocab: Vec<u8>,
    /// Format 2 without trigram lists (a small vocabulary): built from the vocabulary on
    /// first use.
    mem_grams: OnceLock<MemGrams>,
}

/// Trigram lists in memory, indexed by the trigram's three [`ALPHABET`] ranks (37^3
/// slots): `ids[starts[k]..starts[k + 1]]` are the words holding trigram `k`.
struct MemGrams {
    starts: Vec<u32>,
    ids: Vec<u32>,
}

/// Trigrams over [`ALPHABET`].
const DENSE: usize = 37 * 37 * 37;

/// A byte's rank in [`ALPHABET`].
#[inline]
fn rank(b: u8) -> Option<usize> {
    match b {
        b'0'..=b'9' => Some(usize::from(b - b'0')),
        b'_' => Some(10),
        b'a'..=b'z' => Some(11 + usize::from(b - b'a')),
        _ => None,
    }
}

/// The slot of trigram `t` (three bytes), `None` outside the alphabet.
#[inline]
fn dense(t: &[u8]) -> Option<usize> {
    Some((rank(t[0])? * 37 + rank(t[1])?) * 37 + rank(t[2])?)
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
        let map = format::LAYOUT.inflate(path, map)?;
        let header = Header::decode(path, &map)?;
        let mut p = Postings {
            path: path.to_path_buf(),
            map,
            header,
            units: Vec::new(),
            words: Vec::new(),
            vocab: Vec::new(),
            mem_grams: OnceLock::new(),
        };
        if header.build_id != seg.build_id() || header.n_docs != seg.n_docs() {
            return Err(p.corrupt("the postings belong to another build of the segment"));
        }
        if header.version < 2 {
            p.units = p.units_v1()?;
            p.words = p.words_v1()?;
        } else {
            p.units = p.units_v2(seg)?;
            (p.words, p.vocab) = p.words_v2()?;
        }
        p.validate()?;
        Ok(Some(p))
    }

    /// Format 1's unit table.
    fn units_v1(&self) -> CoreResult<Vec<Unit>> {
        let table = self.section(format::SEC_UNITS);
        let mut units = Vec::with_capacity(self.header.n_units as usize);
        for (u, e) in table.chunks_exact(format::UNIT_LEN).enumerate() {
            let field = |i: usize| u32_at(e, 4 * i).unwrap_or(0);
            let (doc, chunk) = (field(0), field(3));
            if doc >= self.header.n_docs || units.last().is_some_and(|l: &Unit| doc < l.doc) {
                return Err(self.corrupt(format!("unit {u} names document {doc}")));
            }
            units.push(Unit {
                doc,
                start: field(1),
                end: field(2),
                chunk: (chunk != format::NO_CHUNK).then_some(chunk),
            });
        }
        Ok(units)
    }

    /// Format 2's units: each document's chunks from the segment's chunk table, or windows
    /// over the line count stored for a document without chunks.
    fn units_v2(&self, seg: &Segment) -> CoreResult<Vec<Unit>> {
        let b = self.section(format::SEC_UNITS);
        let mut units = Vec::with_capacity(self.header.n_units as usize);
        let mut pos = 0usize;
        for doc in 0..self.header.n_docs {
            let n_lines = get_varint(b, &mut pos)
                .ok_or_else(|| self.corrupt(format!("document {doc}'s units are damaged")))?;
            let chunks = seg.chunks(doc);
            if chunks.is_empty() == (n_lines == 0) {
                return Err(self.corrupt(format!("document {doc}'s units do not fit its chunks")));
            }
            for sp in spans_of(&chunks, n_lines) {
                units.push(Unit {
                    doc,
                    start: sp.start,
                    end: sp.end,
                    chunk: sp.chunk.map(|c| c as u32),
                });
            }
        }
        if pos != b.len() || units.len() != self.header.n_units as usize {
            return Err(self.corrupt("the units do not fit their section"));
        }
        Ok(units)
    }

    /// Format 1's word table.
    fn words_v1(&self) -> CoreResult<WordTable> {
        let t = self.section(format::SEC_WORDS);
        Ok(t.chunks_exact(format::WORD_LEN)
            .map(|e| (u32_at(e, 0).unwrap_or(0), u32_at(e, 4).unwrap_or(0)))
            .collect())
    }

    /// Format 2's word table and vocabulary, front coding undone.
    fn words_v2(&self) -> CoreResult<(WordTable, Vec<u8>)> {
        let (t, own) = (
            self.section(format::SEC_WORDS),
            self.section(format::SEC_VOCAB),
        );
        let n = self.header.n_words as usize;
        let bad = || self.corrupt("the word table is damaged");
        let mut words = Vec::with_capacity(n + 1);
        let mut vocab: Vec<u8> = Vec::with_capacity(own.len() * 2);
        let (mut pos, mut at, mut prev, mut blob) = (0usize, 0usize, 0usize, 0u32);
        for _ in 0..n {
            let mut next = || get_varint(t, &mut pos).ok_or_else(bad);
            let (shared, len, plen) = (next()? as usize, next()? as usize, next()?);
            let word = own.get(at..at + len).ok_or_else(bad)?;
            if shared > vocab.len() - prev {
                return Err(bad());
            }
            let start = vocab.len();
            words.push((u32::try_from(start).map_err(|_| bad())?, blob));
            vocab.extend_from_within(prev..prev + shared);
            vocab.extend_from_slice(word);
            (prev, at) = (start, at + len);
            blob = blob.checked_add(plen).ok_or_else(bad)?;
        }
        words.push((u32::try_from(vocab.len()).map_err(|_| bad())?, blob));
        if pos != t.len() || at != own.len() {
            return Err(bad());
        }
        Ok((words, vocab))
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
        let (vocab_len, blob_len) = (
            self.vocab_bytes().len() as u64,
            self.section(format::SEC_POSTINGS).len() as u64,
        );
        let (mut pv, mut pp) = (0u32, 0u32);
        for (w, &(v, p)) in self.words.iter().enumerate() {
            if v < pv || p < pp || u64::from(v) > vocab_len || u64::from(p) > blob_len {
                return Err(self.corrupt(format!("word {w} points outside its sections")));
            }
            (pv, pp) = (v, p);
        }
        if u64::from(pv) != vocab_len
            || u64::from(pp) != blob_len
            || self.words.len() != self.header.n_words as usize + 1
        {
            return Err(self.corrupt("the word table does not cover its sections"));
        }
        if self.header.version >= 2 {
            return self.validate_grams();
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
        self.units
            .get(u as usize)
            .copied()
            .ok_or_else(|| self.corrupt(format!("unit {u} out of range")))
    }

    /// The vocabulary: format 2's decoded at open, format 1's in the file.
    fn vocab_bytes(&self) -> &[u8] {
        if self.header.version >= 2 {
            &self.vocab
        } else {
            self.section(format::SEC_VOCAB)
        }
    }

    /// Word `w`'s range of offsets (0: vocabulary, 1: postings).
    fn word_span(&self, field: usize, w: u32) -> (usize, usize) {
        let at = |i: usize| {
            self.words
                .get(i)
                .map_or(0, |&(v, p)| if field == 0 { v } else { p }) as usize
        };
        (at(w as usize), at(w as usize + 1))
    }

    /// The bytes of word `w` (validated offsets).
    pub fn word(&self, w: u32) -> &[u8] {
        let (a, b) = self.word_span(0, w);
        self.vocab_bytes().get(a..b).unwrap_or(&[])
    }

    /// Word `w`'s postings.
    fn word_postings(&self, w: u32) -> &[u8] {
        let (a, b) = self.word_span(1, w);
        self.section(format::SEC_POSTINGS).get(a..b).unwrap_or(&[])
    }

    /// Format 2: every trigram's list decodes to known words, ascending, and ends where
    /// the next one starts.
    fn validate_grams(&self) -> CoreResult<()> {
        let n = self.header.n_grams as usize;
        let ids = self.section(format::SEC_GRAMIDS);
        let entries = keytable::entries(self.section(format::SEC_GRAMS), n)
            .ok_or_else(|| self.corrupt("the trigram table is damaged"))?;
        for (g, &(_, at)) in entries.iter().enumerate() {
            let end = entries.get(g + 1).map_or(ids.len() as u64, |e| e.1);
            let list = usize::try_from(at)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(a, b)| ids.get(a..b));
            let ok = list.is_some_and(|l| {
                let (mut pos, mut prev, mut first) = (0usize, 0u32, true);
                while pos < l.len() {
                    match get_varint(l, &mut pos).and_then(|d| prev.checked_add(d)) {
                        Some(w) if w < self.header.n_words && (first || w > prev) => {
                            (prev, first) = (w, false);
                        }
                        _ => return false,
                    }
                }
                !first
            });
            if !ok {
                return Err(self.corrupt(format!("trigram {g}'s word list is damaged")));
            }
        }
        Ok(())
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

    /// Whether the trigram lists are built in memory (format 2, none in the file).
    fn grams_in_memory(&self) -> bool {
        self.header.version >= 2 && self.header.n_grams == 0
    }

    /// `f(slot, word)` for each trigram of each word, a word once per trigram, in word order.
    fn each_gram(&self, f: &mut dyn FnMut(usize, u32)) {
        // the last word seen per slot, plus one
        let mut last = vec![0u32; DENSE];
        for w in 0..self.header.n_words {
            for k in self.word(w).windows(3).filter_map(dense) {
                if last[k] != w + 1 {
                    last[k] = w + 1;
                    f(k, w);
                }
            }
        }
    }

    /// The vocabulary's trigram lists, built once by counting (two passes over the words).
    fn mem_grams(&self) -> &MemGrams {
        self.mem_grams.get_or_init(|| {
            let mut starts = vec![0u32; DENSE + 1];
            self.each_gram(&mut |k, _| starts[k + 1] += 1);
            for k in 0..DENSE {
                starts[k + 1] += starts[k];
            }
            let mut ids = vec![0u32; starts[DENSE] as usize];
            let mut fill = starts.clone();
            self.each_gram(&mut |k, w| {
                ids[fill[k] as usize] = w;
                fill[k] += 1;
            });
            MemGrams { starts, ids }
        })
    }

    /// The words containing trigram `key` (empty when none does; validated at open).
    fn gram_words(&self, key: u32) -> Vec<u32> {
        let (count, at) = self.gram_list(key);
        if self.grams_in_memory() {
            let g = self.mem_grams();
            let start = g.starts.get(at).map_or(0, |&s| s as usize);
            return g.ids.get(start..start + count).unwrap_or(&[]).to_vec();
        }
        let ids = self.section(format::SEC_GRAMIDS);
        if self.header.version < 2 {
            return self.gram_ids(count, at).map_while(|w| w).collect();
        }
        // format 2: gaps up to the list's end (`count` is its length in bytes)
        let list = ids.get(at..at.saturating_add(count)).unwrap_or(&[]);
        let (mut pos, mut prev, mut out) = (0usize, 0u32, Vec::new());
        while pos < list.len() {
            match get_varint(list, &mut pos).and_then(|g| prev.checked_add(g)) {
                Some(w) => prev = w,
                None => break,
            }
            out.push(prev);
        }
        out
    }

    /// `(size, first)` of trigram `key`'s word list: its count of words (format 1) or its
    /// bytes (format 2), either a measure of how rare the trigram is.
    fn gram_list(&self, key: u32) -> (usize, usize) {
        let n = self.header.n_grams as usize;
        if self.grams_in_memory() {
            let g = self.mem_grams();
            let t = [(key >> 16) as u8, (key >> 8) as u8, key as u8];
            return dense(&t).map_or((0, 0), |k| ((g.starts[k + 1] - g.starts[k]) as usize, k));
        }
        if self.header.version >= 2 {
            let ids = self.section(format::SEC_GRAMIDS).len() as u64;
            return keytable::find_span(self.section(format::SEC_GRAMS), n, key)
                .and_then(|(at, end)| {
                    let len = end.unwrap_or(ids).checked_sub(at)?;
                    Some((usize::try_from(len).ok()?, usize::try_from(at).ok()?))
                })
                .unwrap_or((0, 0));
        }
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
            rarest.map_or_else(Vec::new, |(_, key)| self.gram_words(key))
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
        let b = self.word_postings(w);
        let v2 = self.header.version >= 2;
        let bad = || self.corrupt(format!("postings of word {w} are damaged"));
        let mut pos = 0usize;
        let n = get_varint(b, &mut pos).ok_or_else(bad)?;
        let mut unit = 0u32;
        let mut lines: Vec<u32> = Vec::new();
        for _ in 0..n {
            let mut gap = get_varint(b, &mut pos).ok_or_else(bad)?;
            // format 2: the gap's low bit marks one occurrence on one line
            let single = v2 && gap & 1 == 1;
            if v2 {
                gap >>= 1;
            }
            unit = unit.checked_add(gap).ok_or_else(bad)?;
            if unit >= self.header.n_units {
                return Err(bad());
            }
            let (n_lines, occ) = if single {
                (1, 1)
            } else {
                let packed = get_varint(b, &mut pos).ok_or_else(bad)?;
                let n_lines = packed >> 1;
                if packed & 1 == 1 {
                    (n_lines, n_lines)
                } else {
                    (n_lines, get_varint(b, &mut pos).ok_or_else(bad)?)
                }
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

#[cfg(test)]
mod version_tests {
    use super::*;
    use crate::bm25::build::{build_for_segment, build_postings_with};
    use crate::trigram::build::{build, BuildInput, BuildOptions, ChunkSpan};
    use crate::trigram::postings::put_varint;

    /// The version 1 file of the same postings (fixed unit, word and trigram tables).
    fn as_version_1(p: &Postings) -> Vec<u8> {
        let mut units = Vec::new();
        for u in &p.units {
            for v in [u.doc, u.start, u.end, u.chunk.unwrap_or(format::NO_CHUNK)] {
                units.extend_from_slice(&v.to_le_bytes());
            }
        }
        // format 1's postings: every entry with its line count
        let (mut words, mut blob) = (Vec::new(), Vec::new());
        for w in 0..p.header.n_words {
            words.extend_from_slice(&p.words[w as usize].0.to_le_bytes());
            words.extend_from_slice(&(blob.len() as u32).to_le_bytes());
            let mut entries = Vec::new();
            p.for_each_posting(
                w,
                |_| true,
                |u, n, l| entries.push((u, n, l.unwrap_or(&[]).to_vec())),
            )
            .expect("postings");
            put_varint(&mut blob, entries.len() as u32);
            let mut last = 0;
            for (u, n, lines) in entries {
                put_varint(&mut blob, u - last);
                last = u;
                let one_each = n as usize == lines.len();
                put_varint(&mut blob, (lines.len() as u32) << 1 | u32::from(one_each));
                if !one_each {
                    put_varint(&mut blob, n);
                }
                let mut at = p.units[u as usize].start;
                for l in lines {
                    put_varint(&mut blob, l - at);
                    at = l;
                }
            }
        }
        words.extend_from_slice(&p.words[p.header.n_words as usize].0.to_le_bytes());
        words.extend_from_slice(&(blob.len() as u32).to_le_bytes());
        let (mut grams, mut ids) = (Vec::new(), Vec::new());
        let mut by_gram: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for w in 0..p.header.n_words {
            for t in p.word(w).windows(3) {
                let list = by_gram.entry(gram(t)).or_default();
                if list.last() != Some(&w) {
                    list.push(w);
                }
            }
        }
        for (key, list) in by_gram {
            for v in [key, list.len() as u32, ids.len() as u32] {
                grams.extend_from_slice(&v.to_le_bytes());
            }
            let mut prev = 0;
            for w in list {
                put_varint(&mut ids, w - prev);
                prev = w;
            }
        }
        let data = [units, words, p.vocab.clone(), blob, grams, ids];
        let mut header = Header {
            version: 1,
            n_grams: (data[format::SEC_GRAMS].len() / format::GRAM_LEN) as u32,
            ..p.header
        };
        let mut off = format::HEADER_LEN as u64;
        for (i, d) in data.iter().enumerate() {
            header.sections[i] = (off, d.len() as u64, crc32fast::hash(d));
            off += d.len() as u64;
        }
        let mut out = header.encode();
        for d in data {
            out.extend_from_slice(&d);
        }
        out
    }

    /// Postings written as version 1 (and 2: version 3 not packed) read as the version 3
    /// ones: units, words, the words holding a term, every posting.
    #[test]
    fn version_1_reads_as_version_2() {
        let dir = std::env::temp_dir().join(format!("maguyva-bm25v1-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root")).expect("mkdir");
        let inputs: Vec<BuildInput> = (0..12u32)
            .map(|i| {
                let body: String = (0..i * 9 + 3)
                    .map(|j| format!("def handle_{}(request_{j}): return cache_{i}\n", j % 4))
                    .collect();
                std::fs::write(dir.join("root").join(format!("f{i}.py")), body).expect("write");
                BuildInput {
                    path: format!("f{i}.py"),
                    // every third file without chunks: its units are windows
                    chunks: (0..i % 3 * 2)
                        .map(|c| ChunkSpan {
                            start_line: c * 3 + 1,
                            end_line: c * 3 + 5,
                            id: format!("{i}-{c}"),
                        })
                        .collect(),
                }
            })
            .collect();
        build(&dir.join("root"), &inputs, &dir, &BuildOptions::default()).expect("build");
        build_for_segment(&dir, "trigram.idx", "content.bin").expect("postings");
        let seg = Segment::open(&dir.join("trigram.idx"), &dir.join("content.bin")).expect("seg");
        let v2 = Postings::open(&dir.join("trigram.bm25"), &seg)
            .expect("v2")
            .expect("file");
        assert_eq!(v2.header.n_grams, 0, "a small vocabulary is scanned");
        build_postings_with(&seg, &dir.join("grams.bm25"), 0).expect("with grams");
        let grams = Postings::open(&dir.join("grams.bm25"), &seg)
            .expect("grams")
            .expect("file");
        assert!(grams.header.n_grams > 0);
        assert_eq!(v2.header.version, format::VERSION);
        let packed = std::fs::read(dir.join("trigram.bm25")).expect("read");
        assert!(packed.len() < v2.map.len(), "a small file is packed");
        // the same sections as version 2 wrote them (not packed)
        let mut plain = v2.map.to_vec();
        plain[8..12].copy_from_slice(&2u32.to_le_bytes());
        plain[format::FIXED_LEN + 20..format::FIXED_LEN + 24].fill(0);
        let crc = crc32fast::hash(&plain[..format::HEADER_LEN - 4]);
        plain[format::HEADER_LEN - 4..format::HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(dir.join("v2.bm25"), &plain).expect("write v2");
        let old = Postings::open(&dir.join("v2.bm25"), &seg)
            .expect("v2")
            .expect("file");
        assert_eq!(
            (old.header.version, &old.units, &old.words),
            (2, &v2.units, &v2.words)
        );
        std::fs::write(dir.join("v1.bm25"), as_version_1(&old)).expect("write v1");
        let v1 = Postings::open(&dir.join("v1.bm25"), &seg)
            .expect("v1")
            .expect("file");
        assert_eq!(v1.header.version, 1);
        assert!(v1.bytes() > v2.bytes());
        assert_eq!(v1.units, v2.units);
        assert!(v2.units.iter().any(|u| u.chunk.is_none()));
        for w in 0..v2.header.n_words {
            assert_eq!(v1.word(w), v2.word(w));
            let mut got = [Vec::new(), Vec::new(), Vec::new()];
            for (p, out) in [&v1, &v2, &old].into_iter().zip(got.iter_mut()) {
                p.for_each_posting(
                    w,
                    |u| u % 2 == 0,
                    |u, n, l| out.push((u, n, l.map(<[u32]>::to_vec))),
                )
                .expect("postings");
            }
            assert_eq!(got[0], got[1]);
            assert_eq!(got[2], got[1]);
        }
        // the scan of the vocabulary, its trigram lists (both formats) find the same words
        for term in [
            "handle", "re", "cache_1", "que", "st_1", "zz", "ndle_0", "e_1", "n_c",
        ] {
            let f = Finder::new(term.as_bytes());
            let want = v2.matching_words(term.as_bytes(), &f);
            assert_eq!(v1.matching_words(term.as_bytes(), &f), want, "{term}");
            assert_eq!(grams.matching_words(term.as_bytes(), &f), want, "{term}");
        }
        assert!(!v2
            .matching_words(b"handle", &Finder::new(b"handle"))
            .is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
