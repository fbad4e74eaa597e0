//! BM25 ranking of chunks for natural-language questions, from the trigram index.
//!
//! Each term is a case-insensitive literal. Its document frequency comes from the trigram
//! index (a slight over-estimate: candidates, not verified matches) and gives the IDF; term
//! frequency and length normalisation are per chunk (the indexer's chunks, or 60-line windows
//! for a file without chunks). Candidate documents are those containing the rarer terms,
//! pre-ranked by the summed IDF of the terms they may contain, at most `max_docs` of them.

use std::collections::HashMap;

use memchr::memmem::Finder;
use rayon::prelude::*;

use super::index::TextIndex;
use super::plan::Query;
use super::search::{candidates_with, with_content};
use crate::error::CoreResult;

pub const K1: f64 = 1.2;
pub const B: f64 = 0.75;
/// Lines per scoring window of a file without chunks.
pub const WINDOW: u32 = 60;

/// One ranked chunk.
#[derive(Debug, Clone)]
pub struct ChunkScore {
    pub doc: u32,
    pub start_line: u32,
    pub end_line: u32,
    pub chunk_id: Option<String>,
    pub score: f64,
    /// Matching lines in the chunk, sorted.
    pub lines: Vec<u32>,
    /// The terms (indices into the input) found in the chunk.
    pub terms: Vec<usize>,
}

fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The terms that score: (index into the input, candidate documents or `None` for every
/// document, IDF). A term's document frequency is its candidate count in the trigram index.
pub type TermWeights = Vec<(usize, Option<Vec<u32>>, f64)>;

/// Weights of `terms` (lower-cased here; terms under 2 bytes or in no document dropped).
pub fn term_weights(index: &TextIndex, terms: &[String]) -> CoreResult<TermWeights> {
    let n = f64::from(index.n_docs().max(1));
    let mut term_docs: TermWeights = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        let lowered = t.to_lowercase();
        if lowered.len() < 2 {
            continue;
        }
        // Exhaustive: document frequencies must not depend on how the index is segmented.
        let docs = candidates_with(index, &Query::literal(lowered.as_bytes()), true)?;
        let df = docs.as_ref().map_or(n, |d| d.len() as f64);
        if df == 0.0 {
            continue;
        }
        term_docs.push((i, docs, idf(n, df)));
    }
    Ok(term_docs)
}

/// Rank chunks for `terms` (already lower-cased, stop words removed) and keep the best `k`,
/// scanning the stored content of at most `max_docs` nominated documents.
pub fn rank(
    index: &TextIndex,
    terms: &[String],
    k: usize,
    max_docs: usize,
) -> CoreResult<Vec<ChunkScore>> {
    let term_docs = term_weights(index, terms)?;
    if term_docs.is_empty() {
        return Ok(Vec::new());
    }
    let docs = nominate(index, &term_docs, max_docs);
    score_docs(index, terms, &term_docs, &docs, k)
}

/// As [`rank`], scanning every candidate document of every term (no nomination): the exact
/// BM25 that the index-time postings compute (`crate::bm25`), kept as their reference.
pub fn rank_all(index: &TextIndex, terms: &[String], k: usize) -> CoreResult<Vec<ChunkScore>> {
    let term_docs = term_weights(index, terms)?;
    if term_docs.is_empty() {
        return Ok(Vec::new());
    }
    let mut docs: Vec<u32> = Vec::new();
    for (_, d, _) in &term_docs {
        match d {
            None => {
                docs = (0..index.n_docs()).collect();
                break;
            }
            Some(d) => docs = super::postings::union(&docs, d),
        }
    }
    score_docs(index, terms, &term_docs, &docs, k)
}

/// Documents worth scanning: pre-ranked by the summed IDF of the terms they may contain,
/// the best `max_docs`, in document order.
fn nominate(index: &TextIndex, term_docs: &TermWeights, max_docs: usize) -> Vec<u32> {
    let n = f64::from(index.n_docs().max(1));
    // Pre-score documents by the IDF of the terms they may contain; terms in most documents
    // (or too short to plan) do not nominate candidates but still count in the scores.
    let mut prescore: HashMap<u32, f64> = HashMap::new();
    for (_, docs, w) in term_docs {
        if let Some(docs) = docs {
            if (docs.len() as f64) <= n * 0.5 || term_docs.len() == 1 {
                for &d in docs {
                    *prescore.entry(d).or_default() += w;
                }
            }
        }
    }
    if prescore.is_empty() {
        // Only common terms: nominate by the rarest one.
        if let Some((_, Some(docs), w)) = term_docs
            .iter()
            .filter(|t| t.1.is_some())
            .min_by_key(|t| t.1.as_ref().map_or(usize::MAX, Vec::len))
        {
            for &d in docs {
                prescore.insert(d, *w);
            }
        }
    }
    let mut cand: Vec<(u32, f64)> = prescore.into_iter().collect();
    cand.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    cand.truncate(max_docs);
    let mut docs: Vec<u32> = cand.into_iter().map(|(d, _)| d).collect();
    docs.sort_unstable();
    docs
}

/// Score the chunks of `docs` (sorted) by scanning their content; the best `k`.
fn score_docs(
    index: &TextIndex,
    terms: &[String],
    term_docs: &TermWeights,
    docs: &[u32],
    k: usize,
) -> CoreResult<Vec<ChunkScore>> {
    let avg_len = average_chunk_lines(index);
    let finders: Vec<(usize, Finder<'static>, f64)> = term_docs
        .iter()
        .map(|(i, _, w)| {
            (
                *i,
                Finder::new(terms[*i].to_lowercase().as_bytes()).into_owned(),
                *w,
            )
        })
        .collect();
    let scored: Vec<CoreResult<Vec<ChunkScore>>> = docs
        .par_iter()
        .map_init(Vec::new, |buf, &d| {
            with_content(index, d, buf, |content| {
                score_doc(index, d, content, &finders, avg_len)
            })
        })
        .collect();
    let mut all = Vec::new();
    for s in scored {
        all.extend(s?);
    }
    // Stable: equal keys keep span order (a chunk before the chunks nested in it).
    all.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.doc.cmp(&b.doc))
            .then(a.start_line.cmp(&b.start_line))
    });
    all.truncate(k);
    Ok(all)
}

/// Mean lines per chunk, the BM25 length prior (sampled on large indexes).
pub fn average_chunk_lines(index: &TextIndex) -> f64 {
    let n = index.n_chunks();
    if n == 0 {
        return f64::from(WINDOW);
    }
    // Sampled: the first chunks of up to 2,000 documents are enough for a length prior.
    let mut total = 0u64;
    let mut count = 0u64;
    for d in (0..index.n_docs()).step_by((index.n_docs() as usize / 2000).max(1)) {
        for (s, e, _) in index.chunks(d) {
            total += u64::from(e.saturating_sub(s) + 1);
            count += 1;
        }
    }
    if count == 0 {
        f64::from(WINDOW)
    } else {
        total as f64 / count as f64
    }
}

/// A scoring unit of a document: a chunk (its index in the document's chunk table) or, for a
/// document without chunks, a window of [`WINDOW`] lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
    pub chunk: Option<usize>,
}

/// The scoring units of a document with `chunks` and `content`, in scoring order: start
/// ascending, end descending (a chunk before those nested in it), stable.
pub fn unit_spans(chunks: &[(u32, u32, &str)], content: &[u8]) -> Vec<Span> {
    let n_lines = if chunks.is_empty() {
        let newlines = memchr::memchr_iter(b'\n', content).count() as u32;
        (newlines + u32::from(!content.ends_with(b"\n"))).max(1)
    } else {
        0
    };
    spans_of(chunks, n_lines)
}

/// As [`unit_spans`] for a document of `n_lines` lines (only read when it has no chunks:
/// then its units are windows of [`WINDOW`] lines).
pub fn spans_of(chunks: &[(u32, u32, &str)], n_lines: u32) -> Vec<Span> {
    let mut spans: Vec<Span> = chunks
        .iter()
        .enumerate()
        .map(|(i, &(start, end, _))| Span {
            start,
            end,
            chunk: Some(i),
        })
        .collect();
    if spans.is_empty() {
        let mut s = 1;
        while s <= n_lines {
            spans.push(Span {
                start: s,
                end: (s + WINDOW - 1).min(n_lines),
                chunk: None,
            });
            s += WINDOW;
        }
    }
    spans.sort_by_key(|sp| (sp.start, std::cmp::Reverse(sp.end)));
    spans
}

/// The unit that owns `line`: the smallest span holding it (the first such in scoring order).
pub fn owner(spans: &[Span], line: u32) -> Option<usize> {
    let upto = spans.partition_point(|sp| sp.start <= line);
    spans[..upto]
        .iter()
        .enumerate()
        .filter(|(_, sp)| sp.start <= line && line <= sp.end)
        .min_by_key(|(_, sp)| sp.end - sp.start)
        .map(|(i, _)| i)
}

/// BM25's length normalisation of a unit of lines `start..=end`.
#[inline]
pub fn norm(start: u32, end: u32, avg_len: f64) -> f64 {
    let len = f64::from(end.saturating_sub(start) + 1);
    K1 * (1.0 - B + B * len / avg_len)
}

/// One term's share of a unit's score: IDF `weight`, term frequency `tf`.
#[inline]
pub fn term_score(weight: f64, tf: u32, norm: f64) -> f64 {
    let f = f64::from(tf);
    weight * f * (K1 + 1.0) / (f + norm)
}

fn score_doc(
    index: &TextIndex,
    d: u32,
    content: &[u8],
    finders: &[(usize, Finder<'static>, f64)],
    avg_len: f64,
) -> Vec<ChunkScore> {
    let lowered: Vec<u8> = content.iter().map(u8::to_ascii_lowercase).collect();
    let newlines: Vec<usize> = memchr::memchr_iter(b'\n', &lowered).collect();
    let line_of = |pos: usize| newlines.partition_point(|&p| p < pos) as u32 + 1;
    let chunks = index.chunks(d);
    let spans = unit_spans(&chunks, content);
    // Per span: term frequencies and matching lines.
    let mut tf: Vec<HashMap<usize, u32>> = vec![HashMap::new(); spans.len()];
    let mut lines: Vec<Vec<u32>> = vec![Vec::new(); spans.len()];
    for (ti, finder, _) in finders {
        for pos in finder.find_iter(&lowered) {
            let line = line_of(pos);
            if let Some(i) = owner(&spans, line) {
                *tf[i].entry(*ti).or_default() += 1;
                lines[i].push(line);
            }
        }
    }
    let weight: HashMap<usize, f64> = finders.iter().map(|(i, _, w)| (*i, *w)).collect();
    let mut out = Vec::new();
    for (i, sp) in spans.into_iter().enumerate() {
        if tf[i].is_empty() {
            continue;
        }
        let norm = norm(sp.start, sp.end, avg_len);
        // Summed in term order: a HashMap's order differs between runs, and so would the
        // last bits of the score (and the order of near ties).
        let mut per_term: Vec<(usize, u32)> = tf[i].iter().map(|(&t, &f)| (t, f)).collect();
        per_term.sort_unstable();
        let score: f64 = per_term
            .iter()
            .map(|&(t, f)| term_score(weight.get(&t).copied().unwrap_or(0.0), f, norm))
            .sum();
        let mut ls = std::mem::take(&mut lines[i]);
        ls.sort_unstable();
        ls.dedup();
        let mut terms: Vec<usize> = tf[i].keys().copied().collect();
        terms.sort_unstable();
        out.push(ChunkScore {
            doc: d,
            start_line: sp.start,
            end_line: sp.end,
            chunk_id: sp.chunk.map(|c| chunks[c].2.to_string()),
            score,
            lines: ls,
            terms,
        });
    }
    out
}
