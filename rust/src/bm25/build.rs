//! Writing a segment's BM25 postings, at index build, from the segment itself (its stored
//! content and chunk table), so the postings describe exactly what the trigram index holds.
//!
//! The query side matches a term (bytes of `[a-z0-9_]`) as a case-insensitive substring of
//! the content; such a match never crosses a byte outside that set, so it lies inside one
//! *word* (a maximal run of `[A-Za-z0-9_]`, lower-cased). Per word and scoring unit the file
//! keeps the occurrences and lines; a term's frequency in a unit is then the sum over the
//! words containing it of occurrences x matches in the word, the same count the content
//! scan makes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::format::{self, Header};
use crate::error::{CoreError, CoreResult};
use crate::trigram::bm25::{owner, unit_spans, Span};
use crate::trigram::index::Segment;
use crate::trigram::keytable;
use crate::trigram::postings::put_varint;

/// What a postings build wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostingsReport {
    pub units: u32,
    pub words: u32,
    pub bytes: u64,
}

/// Bytes a word is made of (the query side's term alphabet, before lower-casing).
#[inline]
pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// One document's scoring units, its lower-cased bytes and, per (word, unit) in word order,
/// `(word start, word end, unit, occurrences, lines start, lines end)` with the unit's
/// sorted lines in `lines`.
struct DocWords {
    spans: Vec<Span>,
    lowered: Vec<u8>,
    entries: Vec<(usize, usize, u32, u32, usize, usize)>,
    lines: Vec<u32>,
}

/// Split one document into words and attribute each occurrence to the unit owning its line.
fn doc_words(chunks: &[(u32, u32, &str)], content: &[u8]) -> DocWords {
    let spans = unit_spans(chunks, content);
    let lowered = content.to_ascii_lowercase();
    // (word start, word end, unit, line), in content order.
    let mut occ: Vec<(usize, usize, u32, u32)> = Vec::new();
    let (mut line, mut owner_line, mut unit) = (1u32, 0u32, None);
    let mut i = 0;
    while i < content.len() {
        let b = content[i];
        if b == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if !is_word_byte(b) {
            i += 1;
            continue;
        }
        let start = i;
        while i < content.len() && is_word_byte(content[i]) {
            i += 1;
        }
        if i - start < 2 {
            continue; // a term has at least 2 bytes: a 1-byte word never matches
        }
        if owner_line != line {
            owner_line = line;
            unit = owner(&spans, line);
        }
        if let Some(u) = unit {
            occ.push((start, i, u as u32, line));
        }
    }
    occ.sort_unstable_by(|a, b| {
        lowered[a.0..a.1]
            .cmp(&lowered[b.0..b.1])
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    let mut entries: Vec<(usize, usize, u32, u32, usize, usize)> = Vec::new();
    let mut lines: Vec<u32> = Vec::new();
    for (s, e, u, l) in occ {
        match entries.last_mut() {
            Some(x) if x.2 == u && lowered[x.0..x.1] == lowered[s..e] => {
                x.3 += 1;
                if lines.last() != Some(&l) {
                    lines.push(l);
                    x.5 += 1;
                }
            }
            _ => {
                entries.push((s, e, u, 1, lines.len(), lines.len() + 1));
                lines.push(l);
            }
        }
    }
    DocWords {
        spans,
        lowered,
        entries,
        lines,
    }
}

/// One word's postings as they are appended, document after document (units ascending).
#[derive(Default)]
struct WordPostings {
    entries: u32,
    last_unit: u32,
    blob: Vec<u8>,
}

impl WordPostings {
    fn push(&mut self, unit: u32, occurrences: u32, unit_start: u32, lines: &[u32]) {
        self.entries += 1;
        // format 2: the unit gap shifted one bit, set for one occurrence on one line (two
        // entries in three on the stdlib), which then needs no count
        let single = occurrences == 1 && lines.len() == 1;
        put_varint(
            &mut self.blob,
            ((unit - self.last_unit) << 1) | u32::from(single),
        );
        self.last_unit = unit;
        if single {
            put_varint(&mut self.blob, lines[0] - unit_start);
            return;
        }
        // Lines, shifted one bit: set when each line holds one occurrence (the usual
        // case), so the count of occurrences is written only when it differs.
        let one_each = occurrences as usize == lines.len();
        put_varint(
            &mut self.blob,
            ((lines.len() as u32) << 1) | u32::from(one_each),
        );
        if !one_each {
            put_varint(&mut self.blob, occurrences);
        }
        let mut at = unit_start;
        for &l in lines {
            put_varint(&mut self.blob, l - at);
            at = l;
        }
    }
}

type WordMap = FxHashMap<Vec<u8>, WordPostings>;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CoreError + '_ {
    move |source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn too_large(path: &Path) -> CoreError {
    CoreError::InvalidArgument(format!(
        "{}: BM25 postings over 4 GiB in one segment",
        path.display()
    ))
}

/// The encoded sections of a segment's postings.
struct Encoded {
    header: Header,
    sections: [Vec<u8>; format::SECTIONS],
}

/// Build the postings of every document of `seg` (deleted ones too: tombstones are applied
/// when searching) and write them to `out`.
pub fn build_postings(seg: &Segment, out: &Path) -> CoreResult<PostingsReport> {
    build_postings_with(seg, out, format::SCAN_VOCAB_BELOW)
}

/// As [`build_postings`], writing the trigram lists only for a vocabulary of at least
/// `scan_below` bytes.
pub fn build_postings_with(
    seg: &Segment,
    out: &Path,
    scan_below: usize,
) -> CoreResult<PostingsReport> {
    build_postings_batched(seg, out, scan_below, DOCS_PER_BATCH)
}

/// As [`build_postings_with`], splitting `batch` documents at a time (the same bytes for
/// any batch size: a test holds that).
pub(crate) fn build_postings_batched(
    seg: &Segment,
    out: &Path,
    scan_below: usize,
    batch: u32,
) -> CoreResult<PostingsReport> {
    let batch = batch.max(1);
    let n_docs = seg.n_docs();
    let split = |from: u32, to: u32| -> Vec<CoreResult<DocWords>> {
        (from..to)
            .into_par_iter()
            .map_init(
                || (None, Vec::new()),
                |(zstd, buf), d| {
                    let content = seg.read(d, zstd, buf)?;
                    Ok(doc_words(&seg.chunks(d), content))
                },
            )
            .collect()
    };
    let mut merged = Merged::default();
    let mut from = n_docs.min(batch);
    let mut ready = split(0, from);
    loop {
        // the next batch split on the pool while this one is merged on the calling thread
        let to = n_docs.min(from.saturating_add(batch));
        let (next, done) = rayon::join(|| split(from, to), || merged.merge(ready, out));
        done?;
        if from >= n_docs {
            break;
        }
        ready = next;
        from = to;
    }
    let Merged {
        units,
        n_units,
        by_word,
    } = merged;
    let enc = encode(seg, units, n_units, by_word, out, scan_below)?;
    write(out, &enc)
}

/// Documents split into words at once (in parallel) before the calling thread merges them,
/// while the next batch is split: the build holds two batches' words, not the segment's.
const DOCS_PER_BATCH: u32 = 512;

/// The postings merged so far, document after document.
#[derive(Default)]
struct Merged {
    units: Vec<u8>,
    n_units: u32,
    by_word: WordMap,
}

impl Merged {
    fn merge(&mut self, docs: Vec<CoreResult<DocWords>>, out: &Path) -> CoreResult<()> {
        for doc in docs {
            let doc = doc?;
            let first = self.n_units;
            // format 2: a document's units are its chunks, or windows over its lines
            let windows = doc.spans.first().is_some_and(|sp| sp.chunk.is_none());
            put_varint(
                &mut self.units,
                if windows {
                    doc.spans.last().map_or(0, |sp| sp.end)
                } else {
                    0
                },
            );
            self.n_units = self
                .n_units
                .checked_add(doc.spans.len() as u32)
                .filter(|&n| n <= u32::MAX >> 1)
                .ok_or_else(|| too_large(out))?;
            // a word's entries are consecutive (sorted by word, then unit): one lookup each
            let entries = &doc.entries;
            let mut i = 0;
            while i < entries.len() {
                let w = &doc.lowered[entries[i].0..entries[i].1];
                let mut j = i + 1;
                while j < entries.len() && doc.lowered[entries[j].0..entries[j].1] == *w {
                    j += 1;
                }
                let push = |p: &mut WordPostings| {
                    for &(_, _, u, n, l0, l1) in &entries[i..j] {
                        p.push(
                            first + u,
                            n,
                            doc.spans[u as usize].start,
                            &doc.lines[l0..l1],
                        );
                    }
                };
                if let Some(p) = self.by_word.get_mut(w) {
                    push(p);
                } else {
                    let mut p = WordPostings::default();
                    push(&mut p);
                    self.by_word.insert(w.to_vec(), p);
                }
                i = j;
            }
        }
        Ok(())
    }
}

fn encode(
    seg: &Segment,
    units: Vec<u8>,
    n_units: u32,
    by_word: WordMap,
    out: &Path,
    scan_below: usize,
) -> CoreResult<Encoded> {
    let mut words: Vec<(Vec<u8>, WordPostings)> = by_word.into_iter().collect();
    words.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let (mut table, mut vocab, mut blob) = (Vec::new(), Vec::new(), Vec::new());
    let mut grams: Vec<(u32, u32)> = Vec::new();
    // a small vocabulary is scanned for a term instead (`Postings::matching_words`)
    let with_grams = words.iter().map(|(w, _)| w.len()).sum::<usize>() >= scan_below;
    let off32 = |v: &Vec<u8>| u32::try_from(v.len()).map_err(|_| too_large(out));
    let mut prev: &[u8] = &[];
    for (id, (w, postings)) in words.iter().enumerate() {
        // front coded: the bytes shared with the previous word, then its own
        let shared = prev.iter().zip(w).take_while(|(a, b)| a == b).count();
        let at = blob.len();
        put_varint(&mut blob, postings.entries);
        blob.extend_from_slice(&postings.blob);
        for v in [shared, w.len() - shared, blob.len() - at] {
            put_varint(&mut table, u32::try_from(v).map_err(|_| too_large(out))?);
        }
        vocab.extend_from_slice(&w[shared..]);
        prev = w;
        for t in w.windows(3).filter(|_| with_grams) {
            grams.push((gram(t), id as u32));
        }
    }
    off32(&vocab)?;
    off32(&blob)?;
    grams.sort_unstable();
    grams.dedup();
    let (mut entries, mut gram_ids) = (Vec::new(), Vec::new());
    let mut ids: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < grams.len() {
        let key = grams[i].0;
        entries.push((key, gram_ids.len() as u64));
        ids.clear();
        while i < grams.len() && grams[i].0 == key {
            ids.push(grams[i].1);
            i += 1;
        }
        // gaps up to the next list (no count: the table gives where it ends)
        let mut prev = 0u32;
        for &w in &ids {
            put_varint(&mut gram_ids, w - prev);
            prev = w;
        }
    }
    off32(&gram_ids)?;
    let n_grams = entries.len() as u32;
    let gram_table = keytable::encode(&entries).ok_or_else(|| too_large(out))?;
    let sections = [units, table, vocab, blob, gram_table, gram_ids];
    let mut offsets = [(0u64, 0u64, 0u32); format::SECTIONS];
    let mut off = format::HEADER_LEN as u64;
    for (i, data) in sections.iter().enumerate() {
        offsets[i] = (off, data.len() as u64, crc32fast::hash(data));
        off += data.len() as u64;
    }
    let header = Header {
        version: format::VERSION,
        n_docs: seg.n_docs(),
        n_units,
        n_words: words.len() as u32,
        n_grams,
        build_id: seg.build_id(),
        sections: offsets,
    };
    Ok(Encoded { header, sections })
}

/// A trigram of a word as the GRAMS table keys it.
#[inline]
pub fn gram(t: &[u8]) -> u32 {
    (u32::from(t[0]) << 16) | (u32::from(t[1]) << 8) | u32::from(t[2])
}

fn write(out: &Path, enc: &Encoded) -> CoreResult<PostingsReport> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(out).map_err(io_err(out))?);
    let parts: Vec<&[u8]> = enc.sections.iter().map(Vec::as_slice).collect();
    let bytes =
        crate::trigram::format::write_file(&format::LAYOUT, &mut w, enc.header.encode(), &parts)
            .map_err(io_err(out))?;
    w.flush().map_err(io_err(out))?;
    w.into_inner()
        .map_err(|e| io_err(out)(e.into_error()))?
        .sync_all()
        .map_err(io_err(out))?;
    Ok(PostingsReport {
        units: enc.header.n_units,
        words: enc.header.n_words,
        bytes,
    })
}

/// Write the postings of the segment `index_file` + `content_file` in `dir` beside it (the
/// text build's last step).
pub fn build_for_segment(
    dir: &Path,
    index_file: &str,
    content_file: &str,
) -> CoreResult<PostingsReport> {
    let seg = Segment::open(&dir.join(index_file), &dir.join(content_file))?;
    build_postings(&seg, &dir.join(format::postings_name(index_file)))
}
