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

const K1: f64 = 1.2;
const B: f64 = 0.75;
const WINDOW: u32 = 60;

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

/// Rank chunks for `terms` (already lower-cased, stop words removed) and keep the best `k`.
pub fn rank(
    index: &TextIndex,
    terms: &[String],
    k: usize,
    max_docs: usize,
) -> CoreResult<Vec<ChunkScore>> {
    let n = f64::from(index.n_docs().max(1));
    let mut term_docs: Vec<(usize, Option<Vec<u32>>, f64)> = Vec::new();
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
    if term_docs.is_empty() {
        return Ok(Vec::new());
    }
    // Pre-score documents by the IDF of the terms they may contain; terms in most documents
    // (or too short to plan) do not nominate candidates but still count in the scores.
    let mut prescore: HashMap<u32, f64> = HashMap::new();
    for (_, docs, w) in &term_docs {
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
    all.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.doc.cmp(&b.doc))
            .then(a.start_line.cmp(&b.start_line))
    });
    all.truncate(k);
    Ok(all)
}

fn average_chunk_lines(index: &TextIndex) -> f64 {
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
    let n_lines = newlines.len() as u32 + u32::from(!content.ends_with(b"\n"));
    let mut spans: Vec<(u32, u32, Option<String>)> = index
        .chunks(d)
        .into_iter()
        .map(|(s, e, id)| (s, e, Some(id.to_string())))
        .collect();
    if spans.is_empty() {
        let mut s = 1;
        while s <= n_lines.max(1) {
            spans.push((s, (s + WINDOW - 1).min(n_lines.max(1)), None));
            s += WINDOW;
        }
    }
    spans.sort_by_key(|(s, e, _)| (*s, std::cmp::Reverse(*e)));
    // Per span: term frequencies and matching lines.
    let mut tf: Vec<HashMap<usize, u32>> = vec![HashMap::new(); spans.len()];
    let mut lines: Vec<Vec<u32>> = vec![Vec::new(); spans.len()];
    for (ti, finder, _) in finders {
        for pos in finder.find_iter(&lowered) {
            let line = line_of(pos);
            let upto = spans.partition_point(|(s, _, _)| *s <= line);
            let best = spans[..upto]
                .iter()
                .enumerate()
                .filter(|(_, (s, e, _))| *s <= line && line <= *e)
                .min_by_key(|(_, (s, e, _))| e - s)
                .map(|(i, _)| i);
            if let Some(i) = best {
                *tf[i].entry(*ti).or_default() += 1;
                lines[i].push(line);
            }
        }
    }
    let weight: HashMap<usize, f64> = finders.iter().map(|(i, _, w)| (*i, *w)).collect();
    let mut out = Vec::new();
    for (i, (s, e, id)) in spans.into_iter().enumerate() {
        if tf[i].is_empty() {
            continue;
        }
        let len = f64::from(e.saturating_sub(s) + 1);
        let norm = K1 * (1.0 - B + B * len / avg_len);
        // Summed in term order: a HashMap's order differs between runs, and so would the
        // last bits of the score (and the order of near ties).
        let mut per_term: Vec<(usize, u32)> = tf[i].iter().map(|(&t, &f)| (t, f)).collect();
        per_term.sort_unstable();
        let score: f64 = per_term
            .iter()
            .map(|&(t, f)| {
                let f = f64::from(f);
                weight.get(&t).copied().unwrap_or(0.0) * f * (K1 + 1.0) / (f + norm)
            })
            .sum();
        let mut ls = std::mem::take(&mut lines[i]);
        ls.sort_unstable();
        ls.dedup();
        let mut terms: Vec<usize> = tf[i].keys().copied().collect();
        terms.sort_unstable();
        out.push(ChunkScore {
            doc: d,
            start_line: s,
            end_line: e,
            chunk_id: id,
            score,
            lines: ls,
            terms,
        });
    }
    out
}
