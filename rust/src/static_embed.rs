//! Static embedding tier: the weighted mean of int8 table rows over each text's token ids.
//!
//! Why in Rust: numpy has no segmented sum that is both fast and gather-free (`reduceat` over
//! gathered rows copies every token's row first), and the tier's point is thousands of chunks
//! per CPU-second. `pool` is the fast path (f32 accumulators, the row loop auto-vectorises);
//! `pool_scalar` is the f64 reference the tests compare it with.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::error::CoreError;
use crate::wordpiece::WordPiece;

/// A borrowed table: `vocab` rows of `dim` int8 values, a dequantisation scale per row and a
/// pooling weight per row (SIF weights; 0 drops a token).
#[derive(Clone, Copy)]
pub struct Table<'a> {
    pub rows: &'a [i8],
    pub dim: usize,
    pub scales: &'a [f32],
    pub weights: &'a [f32],
}

impl<'a> Table<'a> {
    /// Check the shapes once, so the loops can index without surprises.
    pub fn new(
        rows: &'a [i8],
        dim: usize,
        scales: &'a [f32],
        weights: &'a [f32],
    ) -> Result<Self, CoreError> {
        let vocab = scales.len();
        if dim == 0 || rows.len() != vocab * dim || weights.len() != vocab {
            return Err(CoreError::InvalidArgument(format!(
                "static table: {} int8 values, {} scales and {} weights do not make a \
                 (vocab, dim={dim}) table",
                rows.len(),
                scales.len(),
                weights.len()
            )));
        }
        Ok(Table {
            rows,
            dim,
            scales,
            weights,
        })
    }

    pub fn vocab(&self) -> usize {
        self.scales.len()
    }
}

/// Check that `offsets` cut `ids` into `offsets.len() - 1` texts and that every id is a row.
fn check(table: &Table<'_>, ids: &[u32], offsets: &[i64]) -> Result<usize, CoreError> {
    let bad = |msg: String| Err(CoreError::InvalidArgument(msg));
    if offsets.is_empty() || offsets[0] != 0 || offsets[offsets.len() - 1] != ids.len() as i64 {
        return bad(format!(
            "offsets must start at 0 and end at len(ids) = {}",
            ids.len()
        ));
    }
    if offsets.windows(2).any(|w| w[1] < w[0]) {
        return bad("offsets must not decrease".into());
    }
    if let Some(&id) = ids.iter().find(|&&id| id as usize >= table.vocab()) {
        return bad(format!(
            "token id {id} is outside the table ({} rows)",
            table.vocab()
        ));
    }
    Ok(offsets.len() - 1)
}

/// Weighted mean of each text's rows into `out` (`texts x dim`, f32). A text whose weights
/// sum to 0 (empty, or only dropped tokens) gets a zero vector.
pub fn pool(table: &Table<'_>, ids: &[u32], offsets: &[i64]) -> Result<Vec<f32>, CoreError> {
    let n = check(table, ids, offsets)?;
    let dim = table.dim;
    let mut out = vec![0f32; n * dim];
    for (text, acc) in out.chunks_exact_mut(dim).enumerate() {
        mean_into(
            table,
            &ids[offsets[text] as usize..offsets[text + 1] as usize],
            acc,
        );
    }
    Ok(out)
}

/// The weighted mean of `bag`'s rows into `acc` (zeros in; ids checked by the caller).
fn mean_into(table: &Table<'_>, bag: &[u32], acc: &mut [f32]) {
    let dim = table.dim;
    let mut total = 0f32;
    for &id in bag {
        let id = id as usize;
        let w = table.weights[id];
        if w == 0.0 {
            continue;
        }
        total += w;
        let coef = w * table.scales[id];
        let row = &table.rows[id * dim..(id + 1) * dim];
        for (a, &r) in acc.iter_mut().zip(row) {
            *a += coef * f32::from(r);
        }
    }
    if total > 0.0 {
        let inv = 1.0 / total;
        acc.iter_mut().for_each(|a| *a *= inv);
    }
}

/// Tokenize each ASCII text (`wordpiece`, at most `max_tokens` ids) and pool it, in one pass
/// and on every core: `texts x dim` f32, as `pool` gives for the same ids, and the number of
/// tokens pooled.
pub fn pool_texts<S: AsRef<[u8]> + Sync>(
    table: &Table<'_>,
    wordpiece: &WordPiece,
    texts: &[S],
    max_tokens: usize,
) -> Result<(Vec<f32>, usize), CoreError> {
    if wordpiece.max_id() >= table.vocab() {
        return Err(CoreError::InvalidArgument(format!(
            "static table: {} rows, the tokenizer has ids up to {}",
            table.vocab(),
            wordpiece.max_id()
        )));
    }
    let dim = table.dim;
    let mut out = vec![0f32; texts.len() * dim];
    let tokens = AtomicUsize::new(0);
    out.par_chunks_mut(dim)
        .zip(texts.par_iter())
        .try_for_each_init(Vec::new, |ids, (acc, text)| {
            wordpiece.encode(text.as_ref(), max_tokens, ids)?;
            tokens.fetch_add(ids.len(), Ordering::Relaxed);
            mean_into(table, ids, acc);
            Ok::<(), CoreError>(())
        })?;
    Ok((out, tokens.into_inner()))
}

/// One text cut from a file's bytes (`pool_spans`): `head` (none when empty), a `\n`, then
/// lines `start..=end` (numbered from 1, split on `\n` as `spans.file_lines` does) of
/// `contents[file]`.
pub struct SpanText<'a> {
    pub file: usize,
    pub start: u32,
    pub end: u32,
    pub head: &'a [u8],
}

/// Where each line of `content` starts, or None when the lines are not plain `\n` ones (a
/// `\r` anywhere: the chunker then drops a trailing `\r` per line, not a byte range).
fn line_starts(content: &[u8]) -> Option<Vec<usize>> {
    if memchr::memchr(b'\r', content).is_some() {
        return None;
    }
    let mut starts = Vec::with_capacity(content.len() / 32 + 1);
    starts.push(0);
    starts.extend(memchr::memchr_iter(b'\n', content).map(|at| at + 1));
    if starts.last() == Some(&content.len()) {
        starts.pop(); // `split("\n")`'s empty last piece, dropped
    }
    Some(starts)
}

/// Bytes of lines `start..=end` (from 1) joined by `\n`, or None when out of range.
fn lines_of<'a>(content: &'a [u8], starts: &[usize], start: u32, end: u32) -> Option<&'a [u8]> {
    let (s, e) = (start as usize, end as usize);
    if s == 0 || e < s || e > starts.len() {
        return None;
    }
    let stop = if e < starts.len() {
        starts[e] - 1
    } else {
        content.len() - usize::from(content.last() == Some(&b'\n'))
    };
    Some(&content[starts[s - 1]..stop])
}

/// Tokenize and pool texts cut from file contents without building them in Python: each
/// `spans[i]` is `head + "\n" + lines` cut to `max_bytes`, as the semantic build's
/// `embed_text` and the static tier's cut make it. A text is left out (a zero row, its index
/// in the third result, for the caller's general path) when its file's bytes do not have
/// the CRC-32 `crcs[file]` the spans were cut from, hold a `\r`, its lines are out of
/// range, or its cut is not ASCII. Returns `spans x dim` f32, the tokens pooled, the indices
/// left out.
pub fn pool_spans(
    table: &Table<'_>,
    wordpiece: &WordPiece,
    contents: &[&[u8]],
    crcs: &[u32],
    spans: &[SpanText<'_>],
    max_tokens: usize,
    max_bytes: usize,
) -> Result<(Vec<f32>, usize, Vec<usize>), CoreError> {
    if wordpiece.max_id() >= table.vocab() {
        return Err(CoreError::InvalidArgument(format!(
            "static table: {} rows, the tokenizer has ids up to {}",
            table.vocab(),
            wordpiece.max_id()
        )));
    }
    if crcs.len() != contents.len() {
        return Err(CoreError::InvalidArgument(format!(
            "{} contents and {} CRC-32s",
            contents.len(),
            crcs.len()
        )));
    }
    if let Some(bad) = spans.iter().find(|s| s.file >= contents.len()) {
        return Err(CoreError::InvalidArgument(format!(
            "span of file {} outside the {} contents",
            bad.file,
            contents.len()
        )));
    }
    let lines: Vec<Option<Vec<usize>>> = contents
        .par_iter()
        .zip(crcs.par_iter())
        .map(|(c, &crc)| {
            if crc32fast::hash(c) == crc {
                line_starts(c)
            } else {
                None
            }
        })
        .collect();
    let dim = table.dim;
    let mut out = vec![0f32; spans.len() * dim];
    let mut pooled = vec![false; spans.len()];
    let tokens = AtomicUsize::new(0);
    out.par_chunks_mut(dim)
        .zip(pooled.par_iter_mut())
        .zip(spans.par_iter())
        .for_each_init(
            || (Vec::new(), Vec::new()),
            |(ids, text), ((acc, ok), span)| {
                let content = contents[span.file];
                let Some(body) = lines[span.file]
                    .as_deref()
                    .and_then(|starts| lines_of(content, starts, span.start, span.end))
                else {
                    return;
                };
                text.clear();
                if !span.head.is_empty() {
                    text.extend_from_slice(span.head);
                    text.push(b'\n');
                }
                text.extend_from_slice(body);
                text.truncate(max_bytes);
                if !text.is_ascii() || wordpiece.encode(text, max_tokens, ids).is_err() {
                    return;
                }
                tokens.fetch_add(ids.len(), Ordering::Relaxed);
                mean_into(table, ids, acc);
                *ok = true;
            },
        );
    let left = (0..spans.len()).filter(|&i| !pooled[i]).collect();
    Ok((out, tokens.into_inner(), left))
}

/// The reference: the same mean, one element at a time in f64.
pub fn pool_scalar(table: &Table<'_>, ids: &[u32], offsets: &[i64]) -> Result<Vec<f32>, CoreError> {
    let n = check(table, ids, offsets)?;
    let dim = table.dim;
    let mut out = vec![0f32; n * dim];
    for text in 0..n {
        let bag = &ids[offsets[text] as usize..offsets[text + 1] as usize];
        let total: f64 = bag
            .iter()
            .map(|&id| f64::from(table.weights[id as usize]))
            .sum();
        if total <= 0.0 {
            continue;
        }
        for j in 0..dim {
            let mut sum = 0f64;
            for &id in bag {
                let id = id as usize;
                let value = f64::from(table.rows[id * dim + j]) * f64::from(table.scales[id]);
                sum += f64::from(table.weights[id]) * value;
            }
            out[text * dim + j] = (sum / total) as f32;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random table (xorshift), so the test needs no crate.
    fn table_data(vocab: usize, dim: usize) -> (Vec<i8>, Vec<f32>, Vec<f32>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let rows = (0..vocab * dim).map(|_| (next() % 255) as i8).collect();
        let scales = (0..vocab)
            .map(|_| (next() % 1000) as f32 / 1e5 + 1e-3)
            .collect();
        let mut weights: Vec<f32> = (0..vocab).map(|_| (next() % 1000) as f32 / 1e3).collect();
        weights[0] = 0.0; // a dropped token
        (rows, scales, weights)
    }

    #[test]
    fn fast_matches_reference() {
        let (rows, scales, weights) = table_data(97, 33);
        let table = Table::new(&rows, 33, &scales, &weights).unwrap();
        let ids: Vec<u32> = (0..500u32).map(|i| (i * 7919) % 97).collect();
        let offsets = [0i64, 0, 1, 3, 120, 120, 499, 500];
        let fast = pool(&table, &ids, &offsets).unwrap();
        let slow = pool_scalar(&table, &ids, &offsets).unwrap();
        assert_eq!(fast.len(), 7 * 33);
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
        // The empty texts are zero vectors.
        assert!(fast[..33].iter().all(|&x| x == 0.0));
        assert!(fast[4 * 33..5 * 33].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn texts_pool_as_their_ids_do() {
        let (rows, scales, weights) = table_data(6, 8);
        let table = Table::new(&rows, 8, &scales, &weights).unwrap();
        let vocab = ["[PAD]", "[UNK]", "a", "b", "##b", "("];
        let wp = WordPiece::new(&vocab, 1, &[0], 100).unwrap();
        let texts = ["ab (a", "", "bb b(", "zzz"];
        let (fast, tokens) = pool_texts(&table, &wp, &texts, 4).unwrap();
        assert_eq!(tokens, 9);
        let ids = [2u32, 4, 5, 2, 3, 4, 3, 5, 1];
        let slow = pool(&table, &ids, &[0, 4, 4, 8, 9]).unwrap();
        assert_eq!(fast, slow);
        let small = Table::new(&rows[..40], 8, &scales[..5], &weights[..5]).unwrap();
        assert!(
            pool_texts(&small, &wp, &texts, 4).is_err(),
            "ids past the table"
        );
        assert!(pool_texts(&table, &wp, &["é"], 4).is_err(), "not ASCII");
    }

    #[test]
    fn spans_pool_as_their_texts_do() {
        let (rows, scales, weights) = table_data(6, 8);
        let table = Table::new(&rows, 8, &scales, &weights).unwrap();
        let vocab = ["[PAD]", "[UNK]", "a", "b", "##b", "("];
        let wp = WordPiece::new(&vocab, 1, &[0], 100).unwrap();
        let file: &[u8] = b"ab\nb (a\n\nbb\n";
        let other: &[u8] = b"a\r\nb\n";
        let odd: &[u8] = "a\n\u{e9}\nb".as_bytes(); // no trailing newline
        let contents = [file, other, odd];
        let crcs: Vec<u32> = contents.iter().map(|c| crc32fast::hash(c)).collect();
        let span = |file, start, end, head: &'static str| SpanText {
            file,
            start,
            end,
            head: head.as_bytes(),
        };
        let spans = [
            span(0, 1, 2, "h"),  // "h\nab\nb (a": 9 bytes, whole
            span(0, 3, 4, ""),   // "\nbb"
            span(0, 4, 5, "a"),  // past the last line
            span(1, 1, 1, "a"),  // a file with \r
            span(2, 3, 3, "b"),  // "b\nb", the last line without its newline
            span(2, 1, 2, "a"),  // not ASCII
            span(0, 1, 4, "bb"), // cut: "bb\nab\nb ("
        ];
        let (fast, tokens, left) =
            pool_spans(&table, &wp, &contents, &crcs, &spans, 16, 9).unwrap();
        assert_eq!(left, vec![2, 3, 5]);
        let texts = ["h\nab\nb (a", "\nbb", "", "", "b\nb", "", "bb\nab\nb ("];
        let (slow, want) = pool_texts(&table, &wp, &texts, 16).unwrap();
        assert_eq!(fast, slow);
        assert_eq!(tokens, want);
        let mut bad = crcs.clone();
        bad[0] ^= 1;
        let (_, _, left) = pool_spans(&table, &wp, &contents, &bad, &spans, 16, 9).unwrap();
        assert_eq!(
            left,
            vec![0, 1, 2, 3, 5, 6],
            "the bytes are not the ones cut from"
        );
        assert!(pool_spans(&table, &wp, &contents, &crcs[..2], &spans, 16, 9).is_err());
    }

    #[test]
    fn only_dropped_tokens_give_zero() {
        let (rows, scales, weights) = table_data(5, 4);
        let table = Table::new(&rows, 4, &scales, &weights).unwrap();
        let out = pool(&table, &[0, 0], &[0, 2]).unwrap();
        assert_eq!(out, vec![0.0; 4]);
    }

    #[test]
    fn rejects_bad_input() {
        let (rows, scales, weights) = table_data(5, 4);
        assert!(Table::new(&rows, 3, &scales, &weights).is_err());
        let table = Table::new(&rows, 4, &scales, &weights).unwrap();
        assert!(pool(&table, &[5], &[0, 1]).is_err(), "id outside the table");
        assert!(
            pool(&table, &[1, 2], &[0, 1]).is_err(),
            "offsets do not end at len(ids)"
        );
        assert!(
            pool(&table, &[1, 2], &[0, 2, 1, 2]).is_err(),
            "decreasing offsets"
        );
        assert!(pool(&table, &[], &[]).is_err(), "no offsets");
        assert_eq!(pool(&table, &[], &[0]).unwrap(), Vec::<f32>::new());
    }
}
