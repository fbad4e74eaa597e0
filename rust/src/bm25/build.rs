//! Writing a segment's BM25 postings, at index build, from the segment itself (its stored
//! content and chunk table), so the postings describe exactly what the trigram index holds.
//!
//! The query side matches a term (bytes of `[a-z0-9_]`) as a case-insensitive substring of
//! the content; such a match never crosses a byte outside that set, so it lies inside one
//! *word* (a maximal run of `[A-Za-z0-9_]`, lower-cased). Per word and scoring unit the file
//! keeps the occurrences and lines; a term's frequency in a unit is then the sum over the
//! words containing it of occurrences x matches in the word, the same count the content
//! scan makes.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use rayon::prelude::*;

use super::format::{self, Header};
use crate::error::{CoreError, CoreResult};
use crate::trigram::bm25::{owner, unit_spans, Span};
use crate::trigram::index::Segment;
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

/// One word's entry for a unit: (segment-wide unit, occurrences, sorted lines, the unit's
/// start line).
type WordEntry = (u32, u32, Vec<u32>, u32);
type WordMap = HashMap<Vec<u8>, Vec<WordEntry>>;

/// One document's scoring units and, per (word, unit), the occurrences and sorted lines.
struct DocWords {
    spans: Vec<Span>,
    entries: Vec<(Vec<u8>, u32, u32, Vec<u32>)>,
}

/// Split one document into words and attribute each occurrence to the unit owning its line.
fn doc_words(chunks: &[(u32, u32, &str)], content: &[u8]) -> DocWords {
    let spans = unit_spans(chunks, content);
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
    let word = |o: &(usize, usize, u32, u32)| -> Vec<u8> {
        content[o.0..o.1]
            .iter()
            .map(u8::to_ascii_lowercase)
            .collect()
    };
    let mut keyed: Vec<(Vec<u8>, u32, u32)> = occ.iter().map(|o| (word(o), o.2, o.3)).collect();
    keyed.sort_unstable();
    let mut entries: Vec<(Vec<u8>, u32, u32, Vec<u32>)> = Vec::new();
    for (w, u, l) in keyed {
        match entries.last_mut() {
            Some(e) if e.0 == w && e.1 == u => {
                e.2 += 1;
                if e.3.last() != Some(&l) {
                    e.3.push(l);
                }
            }
            _ => entries.push((w, u, 1, vec![l])),
        }
    }
    DocWords { spans, entries }
}

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
    let docs: Vec<CoreResult<DocWords>> = (0..seg.n_docs())
        .into_par_iter()
        .map_init(
            || (None, Vec::new()),
            |(zstd, buf), d| {
                let content = seg.read(d, zstd, buf)?;
                Ok(doc_words(&seg.chunks(d), content))
            },
        )
        .collect();
    let mut units: Vec<u8> = Vec::new();
    let mut n_units = 0u32;
    let mut by_word: WordMap = HashMap::new();
    for (d, doc) in docs.into_iter().enumerate() {
        let doc = doc?;
        let first = n_units;
        for sp in &doc.spans {
            for v in [
                d as u32,
                sp.start,
                sp.end,
                sp.chunk.map_or(format::NO_CHUNK, |c| c as u32),
            ] {
                units.extend_from_slice(&v.to_le_bytes());
            }
        }
        n_units = n_units
            .checked_add(doc.spans.len() as u32)
            .ok_or_else(|| too_large(out))?;
        for (w, u, n, lines) in doc.entries {
            let start = doc.spans[u as usize].start;
            by_word
                .entry(w)
                .or_default()
                .push((first + u, n, lines, start));
        }
    }
    let enc = encode(seg, units, n_units, by_word, out)?;
    write(out, &enc)
}

fn encode(
    seg: &Segment,
    units: Vec<u8>,
    n_units: u32,
    by_word: WordMap,
    out: &Path,
) -> CoreResult<Encoded> {
    let mut words: Vec<(Vec<u8>, Vec<WordEntry>)> = by_word.into_iter().collect();
    words.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let (mut table, mut vocab, mut blob) = (Vec::new(), Vec::new(), Vec::new());
    let mut grams: Vec<(u32, u32)> = Vec::new();
    let off32 = |v: &Vec<u8>| u32::try_from(v.len()).map_err(|_| too_large(out));
    for (id, (w, entries)) in words.iter().enumerate() {
        table.extend_from_slice(&off32(&vocab)?.to_le_bytes());
        table.extend_from_slice(&off32(&blob)?.to_le_bytes());
        vocab.extend_from_slice(w);
        put_varint(&mut blob, entries.len() as u32);
        let mut prev = 0u32;
        for (u, n, lines, start) in entries {
            put_varint(&mut blob, u - prev);
            prev = *u;
            // Lines, shifted one bit: set when each line holds one occurrence (the usual
            // case), so the count of occurrences is written only when it differs.
            let one_each = *n as usize == lines.len();
            put_varint(&mut blob, ((lines.len() as u32) << 1) | u32::from(one_each));
            if !one_each {
                put_varint(&mut blob, *n);
            }
            let mut at = *start;
            for &l in lines {
                put_varint(&mut blob, l - at);
                at = l;
            }
        }
        for t in w.windows(3) {
            grams.push((gram(t), id as u32));
        }
    }
    table.extend_from_slice(&off32(&vocab)?.to_le_bytes());
    table.extend_from_slice(&off32(&blob)?.to_le_bytes());
    grams.sort_unstable();
    grams.dedup();
    let (mut gram_table, mut gram_ids) = (Vec::new(), Vec::new());
    let mut n_grams = 0u32;
    let mut i = 0;
    while i < grams.len() {
        let key = grams[i].0;
        let (first, at) = (i, off32(&gram_ids)?);
        let mut prev = 0u32;
        while i < grams.len() && grams[i].0 == key {
            put_varint(&mut gram_ids, grams[i].1 - prev);
            prev = grams[i].1;
            i += 1;
        }
        for v in [key, (i - first) as u32, at] {
            gram_table.extend_from_slice(&v.to_le_bytes());
        }
        n_grams += 1;
    }
    let sections = [units, table, vocab, blob, gram_table, gram_ids];
    let mut offsets = [(0u64, 0u64, 0u32); format::SECTIONS];
    let mut off = format::HEADER_LEN as u64;
    for (i, data) in sections.iter().enumerate() {
        offsets[i] = (off, data.len() as u64, crc32fast::hash(data));
        off += data.len() as u64;
    }
    let header = Header {
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
    w.write_all(&enc.header.encode()).map_err(io_err(out))?;
    let mut bytes = format::HEADER_LEN as u64;
    for data in &enc.sections {
        w.write_all(data).map_err(io_err(out))?;
        bytes += data.len() as u64;
    }
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
