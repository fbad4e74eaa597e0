//! A literal found with `memmem`, block by block: as is when the search is case-sensitive,
//! in an ASCII lower-cased copy when it is case-insensitive (see [`Literal`]); in a large
//! document (format 5's block filters) only in the blocks whose filter holds the literal's
//! trigrams, so that a literal in a few places of a large file skips the rest of it.

use memchr::memmem::Finder;

use super::format::{BLOCK, BLOCK_FILTER_BYTES, BLOCK_OVERLAP};
use super::ngram;
use crate::error::{CoreError, CoreResult};

/// A literal pattern's matches found without the regex: byte for byte (case-sensitive) or as
/// lower-case bytes in an ASCII lower-cased copy of the document (case-insensitive ASCII).
/// The regex crate's prefilter for a case-insensitive literal (Teddy over its case variants)
/// stops at every `def ` of a file when asked for `def __init__(self`. Unicode simple case
/// folding also matches a few characters outside ASCII to ASCII letters (`ſ` to `s`, the
/// Kelvin sign to `k`): a document holding one of those for a letter of the literal is
/// searched with the regex (see [`Literal::applies`]), so the matches are the regex's in
/// every document.
pub struct Literal {
    finder: Finder<'static>,
    len: usize,
    /// Searched in a lower-cased copy (the literal is case-insensitive).
    folds: bool,
    /// The UTF-8 forms of the characters outside ASCII that fold to a letter of the literal.
    others: Vec<Finder<'static>>,
    /// The block-filter bits of the trigrams of the literal's first `BLOCK_OVERLAP` bytes
    /// (empty below three bytes: every block may then hold it).
    block_bits: Vec<usize>,
}

impl Literal {
    /// The literal `literal` as the regex of its escaped form matches it, case-insensitive or
    /// not; `None` when only the regex can find it (case-insensitive outside ASCII).
    pub fn new(literal: &str, insensitive: bool) -> CoreResult<Option<Literal>> {
        if literal.is_empty() || (insensitive && !literal.is_ascii()) {
            return Ok(None);
        }
        let bytes = if insensitive {
            literal.as_bytes().to_ascii_lowercase()
        } else {
            literal.as_bytes().to_vec()
        };
        let mut others: Vec<char> = Vec::new();
        if insensitive {
            for b in bytes.iter().copied().filter(u8::is_ascii_lowercase) {
                others.extend(folds_outside_ascii(b as char)?);
            }
        }
        others.sort_unstable();
        others.dedup();
        let head = &bytes[..bytes.len().min(BLOCK_OVERLAP)];
        let mut block_bits: Vec<usize> = head
            .windows(3)
            .map(|w| ngram::filter_bit(ngram::pack(w[0], w[1], w[2]), BLOCK_FILTER_BYTES * 8))
            .collect();
        block_bits.sort_unstable();
        block_bits.dedup();
        Ok(Some(Literal {
            finder: Finder::new(&bytes).into_owned(),
            len: bytes.len(),
            folds: insensitive,
            others: others
                .iter()
                .map(|c| Finder::new(c.to_string().as_bytes()).into_owned())
                .collect(),
            block_bits,
        }))
    }

    /// True when `hay` holds none of the characters outside ASCII that fold to the literal
    /// (always, for a case-sensitive one).
    pub fn applies(&self, hay: &[u8]) -> bool {
        self.others.iter().all(|f| f.find(hay).is_none())
    }

    /// Whether block `b` of `filters` (a document's block filters) may hold the start of a
    /// match: every trigram of the literal's first `BLOCK_OVERLAP` bytes is in its filter
    /// (a match starting in block `b` has those trigrams start in the range the filter
    /// covers, `[b * BLOCK, (b + 1) * BLOCK + BLOCK_OVERLAP)`).
    fn may_start_in(&self, filters: &[u8], b: usize) -> bool {
        let f = &filters[b * BLOCK_FILTER_BYTES..(b + 1) * BLOCK_FILTER_BYTES];
        self.block_bits
            .iter()
            .all(|&bit| f[bit / 8] & (1 << (bit % 8)) != 0)
    }

    /// The matches in `hay` (whole word or not), skipping the blocks that `filters` (the
    /// document's block filters, when it has them) says cannot hold one; `lowered` is a
    /// buffer for the lower-cased copy (taken back with [`LiteralMatches::into_buffer`]).
    pub fn matches<'l, 'h>(
        &'l self,
        hay: &'h [u8],
        filters: Option<&'h [u8]>,
        whole_word: bool,
        lowered: Vec<u8>,
    ) -> LiteralMatches<'l, 'h> {
        LiteralMatches {
            literal: self,
            hay,
            filters: filters.filter(|f| f.len() % BLOCK_FILTER_BYTES == 0 && !f.is_empty()),
            whole_word,
            at: 0,
            region_end: 0,
            lowered,
            base: 0,
        }
    }
}

/// The characters outside ASCII that the regex crate's case-insensitive `c` matches.
fn folds_outside_ascii(c: char) -> CoreResult<Vec<char>> {
    let hir = regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .build()
        .parse(&c.to_string())
        .map_err(|e| CoreError::BadRegex(e.to_string()))?;
    let mut out = Vec::new();
    if let regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) = hir.kind()
    {
        for r in class.ranges() {
            out.extend((r.start()..=r.end()).filter(|ch| !ch.is_ascii()));
        }
    }
    Ok(out)
}

pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The matches of a [`Literal`] in a document, in order, as the regex of the escaped
/// literal gives them (leftmost, not overlapping; with `whole_word`, a match glued to a word
/// byte is dropped and the search resumes one byte later). The document is searched region
/// by region: a region is a run of blocks that may hold a match start (the whole document
/// when it has no block filters), searched up to `len - 1` bytes past its end; no match
/// starts in a block between regions, so the matches are those of a scan of everything.
pub struct LiteralMatches<'l, 'h> {
    literal: &'l Literal,
    hay: &'h [u8],
    filters: Option<&'h [u8]>,
    whole_word: bool,
    /// Where the next match may start.
    at: usize,
    /// The end of the current region's match starts (`at >= region_end`: find the next).
    region_end: usize,
    /// The lower-cased copy of `hay[base..]`'s current region (case-insensitive only).
    lowered: Vec<u8>,
    base: usize,
}

impl LiteralMatches<'_, '_> {
    /// The lower-case buffer, for the next document.
    pub fn into_buffer(self) -> Vec<u8> {
        self.lowered
    }

    /// The next region at or after `at`: `(first start, end of starts)`, or `None`.
    fn next_region(&self, at: usize) -> Option<(usize, usize)> {
        let n = self.hay.len();
        if at >= n {
            return None;
        }
        let Some(filters) = self.filters else {
            return Some((at, n));
        };
        let blocks = filters.len() / BLOCK_FILTER_BYTES;
        let mut b = at / BLOCK;
        while b < blocks && !self.literal.may_start_in(filters, b) {
            b += 1;
        }
        let start = at.max(b * BLOCK);
        if b >= blocks || start >= n {
            return None;
        }
        let mut e = b + 1;
        while e < blocks && self.literal.may_start_in(filters, e) {
            e += 1;
        }
        // Past the last filter block (a document longer than its filters say: never built
        // so, but then nothing is skipped there).
        let end = if e >= blocks { n } else { (e * BLOCK).min(n) };
        Some((start, end))
    }
}

impl Iterator for LiteralMatches<'_, '_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let len = self.literal.len;
        let n = self.hay.len();
        loop {
            if self.at >= self.region_end {
                let (start, end) = self.next_region(self.at)?;
                self.at = start;
                self.region_end = end;
                if self.literal.folds {
                    let upto = end.saturating_add(len - 1).min(n);
                    self.lowered.clear();
                    self.lowered
                        .extend(self.hay[start..upto].iter().map(u8::to_ascii_lowercase));
                    self.base = start;
                }
            }
            let upto = self.region_end.saturating_add(len - 1).min(n);
            let window = if self.literal.folds {
                &self.lowered[self.at - self.base..upto - self.base]
            } else {
                &self.hay[self.at..upto]
            };
            let Some(i) = self.literal.finder.find(window) else {
                self.at = self.region_end;
                continue;
            };
            let (s, e) = (self.at + i, self.at + i + len);
            let hay = self.hay;
            let ok = !self.whole_word
                || ((s == 0 || !is_word_byte(hay[s - 1])) && (e == n || !is_word_byte(hay[e])));
            if ok {
                self.at = e;
                return Some((s, e));
            }
            self.at = s + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every match of `needle` in `hay` by a naive scan: leftmost, not overlapping, with
    /// ASCII case folding when `insensitive`, whole word or not.
    fn naive(
        hay: &[u8],
        needle: &[u8],
        insensitive: bool,
        whole_word: bool,
    ) -> Vec<(usize, usize)> {
        let eq = |a: u8, b: u8| {
            if insensitive {
                a.eq_ignore_ascii_case(&b)
            } else {
                a == b
            }
        };
        let mut out = Vec::new();
        let mut at = 0;
        while at + needle.len() <= hay.len() {
            let (s, e) = (at, at + needle.len());
            let here = hay[s..e].iter().zip(needle).all(|(&a, &b)| eq(a, b));
            let word = !whole_word
                || ((s == 0 || !is_word_byte(hay[s - 1]))
                    && (e == hay.len() || !is_word_byte(hay[e])));
            if here && word {
                out.push((s, e));
                at = e;
            } else {
                at += 1;
            }
        }
        out
    }

    fn filters_of(hay: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        ngram::block_filters(hay, &mut out);
        out
    }

    fn found(
        lit: &Literal,
        hay: &[u8],
        filters: Option<&[u8]>,
        whole: bool,
    ) -> Vec<(usize, usize)> {
        lit.matches(hay, filters, whole, Vec::new()).collect()
    }

    /// Filler that holds none of the test literals' trigrams, so that the filters refute.
    fn filler(n: usize) -> Vec<u8> {
        b"xyz 0123\n".iter().copied().cycle().take(n).collect()
    }

    #[test]
    fn matches_straddling_block_edges_are_found() {
        let needle = b"raise ValueError";
        for edge in 1..6 {
            for back in 0..needle.len() + 2 {
                let mut hay = filler(BLOCK * 10);
                let at = edge * BLOCK - back;
                hay[at..at + needle.len()].copy_from_slice(needle);
                let filters = filters_of(&hay);
                let lit = Literal::new("raise ValueError", false).unwrap().unwrap();
                let want = naive(&hay, needle, false, false);
                assert_eq!(want, vec![(at, at + needle.len())]);
                assert_eq!(
                    found(&lit, &hay, Some(&filters), false),
                    want,
                    "edge {edge} back {back}"
                );
                let lit = Literal::new("RAISE valueerror", true).unwrap().unwrap();
                assert_eq!(
                    found(&lit, &hay, Some(&filters), false),
                    want,
                    "edge {edge} back {back}"
                );
                let whole = naive(&hay, needle, true, true);
                assert_eq!(
                    found(&lit, &hay, Some(&filters), true),
                    whole,
                    "edge {edge} back {back}"
                );
            }
        }
    }

    #[test]
    fn refuted_blocks_are_skipped_and_the_rest_scanned() {
        let mut hay = filler(BLOCK * 12);
        hay[3 * BLOCK + 5..3 * BLOCK + 10].copy_from_slice(b"abcde");
        hay[9 * BLOCK - 2..9 * BLOCK + 3].copy_from_slice(b"abcde");
        let filters = filters_of(&hay);
        let lit = Literal::new("abcde", false).unwrap().unwrap();
        let passing: Vec<usize> = (0..12).filter(|&b| lit.may_start_in(&filters, b)).collect();
        // The two blocks where a match starts pass (block 9 too, as its filter reaches back
        // into none: the match starts in block 8); most others are refuted.
        assert!(passing.contains(&3) && passing.contains(&8), "{passing:?}");
        assert!(passing.len() <= 4, "{passing:?}");
        let want = vec![
            (3 * BLOCK + 5, 3 * BLOCK + 10),
            (9 * BLOCK - 2, 9 * BLOCK + 3),
        ];
        assert_eq!(found(&lit, &hay, Some(&filters), false), want);
        assert_eq!(found(&lit, &hay, None, false), want);
    }

    #[test]
    fn crlf_non_utf8_and_empty_documents() {
        let lit = Literal::new("ab", false).unwrap().unwrap();
        assert_eq!(found(&lit, b"", None, false), vec![]);
        assert_eq!(found(&lit, b"", Some(&filters_of(b"")), false), vec![]);
        let hay = b"x ab\r\n\xff\xfeab\r\nab";
        assert_eq!(
            found(&lit, hay, None, false),
            naive(hay, b"ab", false, false)
        );
        // A word byte: 0x80 and above glue (as the regex's Unicode word boundary sees a
        // byte that is not ASCII).
        assert_eq!(found(&lit, hay, None, true), vec![(2, 4), (12, 14)]);
        let mut big = filler(BLOCK * 9);
        big[BLOCK * 4..BLOCK * 4 + 6].copy_from_slice(b"\xffAB\r\n\xc3");
        let upper = Literal::new("ab", true).unwrap().unwrap();
        assert_eq!(
            found(&upper, &big, Some(&filters_of(&big)), false),
            vec![(BLOCK * 4 + 1, BLOCK * 4 + 3)]
        );
        assert!(Literal::new("é", true).unwrap().is_none());
        assert!(Literal::new("", false).unwrap().is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Over filler with literals planted around block edges (and the filters of the
        /// document, or none), the matches are the naive scan's, case-insensitive or not,
        /// whole word or not.
        #[test]
        fn literal_matches_equal_a_naive_scan(
            blocks in 0usize..12,
            plants in proptest::collection::vec((0usize..12, 0usize..80, any::<bool>()), 0..8),
            needle in "[abAB_ \r\n\u{e9}]{1,9}",
            insensitive in any::<bool>(),
            whole_word in any::<bool>(),
            tail in 0usize..BLOCK,
        ) {
            let mut hay = filler(blocks * BLOCK + tail);
            let bytes = needle.as_bytes();
            for &(block, delta, upper) in &plants {
                let at = (block * BLOCK + BLOCK / 2 * usize::from(upper)).saturating_sub(delta);
                if at + bytes.len() <= hay.len() {
                    let planted = if upper { bytes.to_ascii_uppercase() } else { bytes.to_vec() };
                    hay[at..at + bytes.len()].copy_from_slice(&planted);
                }
            }
            let Some(lit) = Literal::new(&needle, insensitive).unwrap() else {
                prop_assert!(insensitive && !needle.is_ascii());
                return Ok(());
            };
            let want = naive(&hay, bytes, insensitive, whole_word);
            let filters = filters_of(&hay);
            prop_assert_eq!(&found(&lit, &hay, Some(&filters), whole_word), &want);
            prop_assert_eq!(&found(&lit, &hay, None, whole_word), &want);
        }
    }
}
