//! BM25 from the index-time postings: term at a time over dense per-unit arrays, the best
//! `k` kept in a heap, the matching lines decoded for those `k` only.
//!
//! The statistics are the content scan's (`trigram::bm25`): the same IDF (candidate
//! document frequencies from the trigram index), length prior, units and term frequencies,
//! summed in the same order, so scores agree to the bit. Unlike the scan, every document
//! with a match is scored (the scan nominates at most `max_docs`, and none whose terms are
//! all in more than half of the documents while a rarer term exists).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use memchr::memmem::Finder;

use super::format;
use super::reader::{Postings, ALPHABET};
use crate::error::CoreResult;
use crate::trigram::bm25::{average_chunk_lines, norm, term_score, term_weights, ChunkScore};
use crate::trigram::index::TextIndex;

/// The postings of every segment of a text index.
pub struct Bm25Index {
    segs: Vec<Postings>,
    avg_len: f64,
}

/// A ranked unit in the heap; `Ord` puts the better one first (higher score, then earlier
/// document, start line and unit), as the scan's stable sort does.
#[derive(Debug, Clone, Copy)]
struct Cand {
    score: f64,
    doc: u32,
    start: u32,
    seg: usize,
    unit: u32,
    mask: u64,
}

impl Cand {
    fn key_cmp(&self, o: &Self) -> Ordering {
        o.score
            .total_cmp(&self.score)
            .then(self.doc.cmp(&o.doc))
            .then(self.start.cmp(&o.start))
            .then(self.unit.cmp(&o.unit))
    }
}

impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.key_cmp(o) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    /// Less is better: the max-heap's top is the worst kept unit.
    fn cmp(&self, o: &Self) -> Ordering {
        self.key_cmp(o)
    }
}

/// The most terms one question may score from postings (a bit each per unit).
const MAX_TERMS: usize = 64;

impl Bm25Index {
    /// The postings of `index`'s segments (their trigram files named `index_files`, in the
    /// same order); `Ok(None)` when some segment has none (built before postings existed).
    pub fn open(
        dir: &Path,
        index_files: &[String],
        index: &TextIndex,
    ) -> CoreResult<Option<Bm25Index>> {
        let mut segs = Vec::with_capacity(index_files.len());
        for (name, seg) in index_files.iter().zip(index.segments()) {
            match Postings::open(&dir.join(format::postings_name(name)), seg)? {
                Some(p) => segs.push(p),
                None => return Ok(None),
            }
        }
        Ok(Some(Bm25Index {
            segs,
            avg_len: average_chunk_lines(index),
        }))
    }

    /// Bytes of the postings files.
    pub fn bytes(&self) -> u64 {
        self.segs.iter().map(Postings::bytes).sum()
    }

    /// Rank chunks for `terms` and keep the best `k`; `Ok(None)` when the postings cannot
    /// answer (a term with a byte outside words, or too many terms): scan the content then.
    pub fn rank(
        &self,
        index: &TextIndex,
        terms: &[String],
        k: usize,
    ) -> CoreResult<Option<Vec<ChunkScore>>> {
        let lowered: Vec<String> = terms.iter().map(|t| t.to_lowercase()).collect();
        if lowered
            .iter()
            .any(|t| t.len() >= 2 && !t.bytes().all(|b| ALPHABET.contains(&b)))
        {
            return Ok(None);
        }
        let weights = term_weights(index, terms)?;
        if weights.len() > MAX_TERMS {
            return Ok(None);
        }
        if weights.is_empty() || k == 0 {
            return Ok(Some(Vec::new()));
        }
        let finders: Vec<Finder<'_>> = weights
            .iter()
            .map(|(i, _, _)| Finder::new(lowered[*i].as_bytes()))
            .collect();
        let mut heap: BinaryHeap<Cand> = BinaryHeap::with_capacity(k + 1);
        let mut matched: Vec<Vec<Vec<(u32, u32)>>> = Vec::with_capacity(self.segs.len());
        for (s, p) in self.segs.iter().enumerate() {
            let words: Vec<Vec<(u32, u32)>> = weights
                .iter()
                .zip(&finders)
                .map(|((i, _, _), f)| p.matching_words(lowered[*i].as_bytes(), f))
                .collect();
            self.score_segment(index, s, p, &weights, &words, k, &mut heap)?;
            matched.push(words);
        }
        let mut best = heap.into_sorted_vec();
        let mut lines: Vec<Vec<u32>> = vec![Vec::new(); best.len()];
        for (s, p) in self.segs.iter().enumerate() {
            let picked: HashMap<u32, usize> = best
                .iter()
                .enumerate()
                .filter(|(_, c)| c.seg == s)
                .map(|(i, c)| (c.unit, i))
                .collect();
            if picked.is_empty() {
                continue;
            }
            for words in &matched[s] {
                for &(w, _) in words {
                    p.for_each_posting(
                        w,
                        |u| picked.contains_key(&u),
                        |u, _, ls| {
                            if let (Some(ls), Some(&i)) = (ls, picked.get(&u)) {
                                lines[i].extend_from_slice(ls);
                            }
                        },
                    )?;
                }
            }
        }
        let mut out = Vec::with_capacity(best.len());
        for (c, mut ls) in best.drain(..).zip(lines) {
            let unit = self.segs[c.seg].unit(c.unit)?;
            ls.sort_unstable();
            ls.dedup();
            let chunk_id = match unit.chunk {
                None => None,
                Some(ci) => {
                    let chunks = index.chunks(c.doc);
                    let id = chunks.get(ci as usize).map(|ch| ch.2.to_string());
                    Some(id.ok_or_else(|| {
                        self.segs[c.seg].corrupt(format!("unit {} names a missing chunk", c.unit))
                    })?)
                }
            };
            out.push(ChunkScore {
                doc: c.doc,
                start_line: unit.start,
                end_line: unit.end,
                chunk_id,
                score: c.score,
                lines: ls,
                terms: (0..weights.len())
                    .filter(|j| c.mask & (1u64 << j) != 0)
                    .map(|j| weights[j].0)
                    .collect(),
            });
        }
        Ok(Some(out))
    }

    /// Score segment `s`'s units term by term and offer each scored live unit to the heap.
    #[allow(clippy::too_many_arguments)]
    fn score_segment(
        &self,
        index: &TextIndex,
        s: usize,
        p: &Postings,
        weights: &crate::trigram::bm25::TermWeights,
        words: &[Vec<(u32, u32)>],
        k: usize,
        heap: &mut BinaryHeap<Cand>,
    ) -> CoreResult<()> {
        let n = p.n_units() as usize;
        let mut score = vec![0f64; n];
        let mut mask = vec![0u64; n];
        let mut tf = vec![0u32; n];
        let (mut touched, mut hit): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for (j, ((_, _, weight), term_words)) in weights.iter().zip(words).enumerate() {
            for &(w, count) in term_words {
                p.for_each_posting(
                    w,
                    |_| false,
                    |u, occ, _| {
                        let slot = &mut tf[u as usize];
                        if *slot == 0 {
                            touched.push(u);
                        }
                        *slot = slot.saturating_add(occ.saturating_mul(count));
                    },
                )?;
            }
            for &u in &touched {
                let f = std::mem::take(&mut tf[u as usize]);
                let unit = p.unit(u)?;
                score[u as usize] +=
                    term_score(*weight, f, norm(unit.start, unit.end, self.avg_len));
                if mask[u as usize] == 0 {
                    hit.push(u);
                }
                mask[u as usize] |= 1u64 << j;
            }
            touched.clear();
        }
        for u in hit {
            let unit = p.unit(u)?;
            let Some(doc) = index.logical_of(s, unit.doc) else {
                continue; // deleted or changed since this segment was written
            };
            let cand = Cand {
                score: score[u as usize],
                doc,
                start: unit.start,
                seg: s,
                unit: u,
                mask: mask[u as usize],
            };
            if heap.len() < k {
                heap.push(cand);
            } else if heap.peek().is_some_and(|worst| cand < *worst) {
                heap.pop();
                heap.push(cand);
            }
        }
        Ok(())
    }
}
