//! A literal search's matching lines grouped by their enclosing chunk, with what the text
//! modality ranks each group by (definition line, whole-word match, match count), so that a
//! common literal (tens of thousands of lines) crosses into Python as one tuple per chunk,
//! not one per line (issue 21). The rules are those of `TextSearcher._literal`
//! (`python/maguyva/modalities/text/modality.py`), which `tests/test_text_groups.py` checks
//! against the Python transcription kept there.

use regex::Regex;

use super::index::ChunkTable;
use super::search::FileHits;

/// The lines of one file that share an enclosing chunk (or one line outside every chunk),
/// as ranking needs them: counts and flags, the chunk id borrowed from the index, the lines
/// themselves left in the file's hits (see [`Grouped`]) until the group is chosen: a common
/// literal ranks hundreds of groups for the few it returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group<'a> {
    pub start: u32,
    pub end: u32,
    pub chunk_id: Option<&'a str>,
    /// The hit (index into the file's lines) of the group's first line: its snippet.
    pub first: usize,
    /// Matches in the group's lines.
    pub n_columns: usize,
    /// A match not glued to a word character (as `_any_whole_word` decides).
    pub whole: bool,
    /// Some line is a definition of the target; `None` when a line is not ASCII (Python's
    /// `re` decides those: Unicode classes differ between the two engines).
    pub is_def: Option<bool>,
}

/// One file's groups, in order of their first line, and the group of each of its hits.
#[derive(Debug, Clone, PartialEq)]
pub struct Grouped<'a> {
    pub groups: Vec<Group<'a>>,
    pub of_hit: Vec<u32>,
}

/// A chosen group with its lines copied out of the file's hits.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedGroup {
    pub start: u32,
    pub end: u32,
    pub chunk_id: Option<String>,
    /// The first line's text.
    pub snippet: String,
    pub lines: Vec<u32>,
    /// `[line, start, end]` of every match.
    pub columns: Vec<[u32; 3]>,
    pub whole: bool,
    pub is_def: Option<bool>,
    /// The lines' texts, only when `is_def` is undecided.
    pub texts: Option<Vec<String>>,
}

impl Grouped<'_> {
    /// Group `g` with its lines, columns and (when undecided) texts taken from `hits`, the
    /// file these groups were made from.
    pub fn owned(&self, hits: &FileHits, g: usize) -> OwnedGroup {
        let group = &self.groups[g];
        let mine = || {
            hits.lines
                .iter()
                .zip(&self.of_hit)
                .filter(move |(_, &of)| of as usize == g)
                .map(|(h, _)| h)
        };
        let mut lines = Vec::new();
        let mut columns = Vec::with_capacity(group.n_columns);
        for h in mine() {
            lines.push(h.line);
            columns.extend(hits.columns(h).iter().map(|&(s, e)| [h.line, s, e]));
        }
        OwnedGroup {
            start: group.start,
            end: group.end,
            chunk_id: group.chunk_id.map(str::to_string),
            snippet: hits.text(&hits.lines[group.first]).to_string(),
            lines,
            columns,
            whole: group.whole,
            is_def: group.is_def,
            texts: group
                .is_def
                .is_none()
                .then(|| mine().map(|h| hits.text(h).to_string()).collect()),
        }
    }
}

/// What `_any_whole_word` asks of a byte next to a match: `word[b]` is true when
/// `bytes([b]).decode("latin-1")` is alphanumeric or `_` (given by the caller, from Python).
pub struct WordBytes(pub [bool; 256]);

impl WordBytes {
    fn glued(&self, raw: &[u8], at: Option<usize>) -> bool {
        at.and_then(|i| raw.get(i))
            .is_some_and(|&b| self.0[b as usize])
    }
}

/// A file's chunk spans, as [`enclosing_in`] reads them: row `i`'s span and, only when it
/// holds a line, its id (`None`: no chunk).
pub trait SpanRows<'a> {
    fn rows(&self) -> usize;
    fn span(&self, i: usize) -> Option<(u32, u32)>;
    fn id(&self, i: usize) -> Option<&'a str>;
}

impl<'a> SpanRows<'a> for [(u32, u32, &'a str)] {
    fn rows(&self) -> usize {
        self.len()
    }
    fn span(&self, i: usize) -> Option<(u32, u32)> {
        self.get(i).map(|s| (s.0, s.1))
    }
    fn id(&self, i: usize) -> Option<&'a str> {
        self.get(i).map(|s| s.2)
    }
}

impl<'a> SpanRows<'a> for ChunkTable<'a> {
    fn rows(&self) -> usize {
        self.len()
    }
    fn span(&self, i: usize) -> Option<(u32, u32)> {
        ChunkTable::span(self, i)
    }
    fn id(&self, i: usize) -> Option<&'a str> {
        ChunkTable::id(self, i)
    }
}

/// For each of `lines`, the smallest of `spans` holding it (ties: the earlier start, then
/// the smaller id), as the chunk store's `enclosing` chooses.
pub fn enclosing<'a>(
    spans: &[(u32, u32, &'a str)],
    lines: &[u32],
) -> Vec<Option<(u32, u32, &'a str)>> {
    enclosing_in(spans, lines)
}

/// [`enclosing`] over any [`SpanRows`]. Each span looks at the lines it holds only (two
/// binary searches in the sorted lines): a common literal's few matching lines in a long
/// file are not a pass over every line of every span (a module's chunk spans the whole
/// file, its classes most of it); an id is read only for a span that holds a line.
pub fn enclosing_in<'a, S: SpanRows<'a> + ?Sized>(
    spans: &S,
    lines: &[u32],
) -> Vec<Option<(u32, u32, &'a str)>> {
    let key = |s: &(u32, u32, &'a str)| (s.1 - s.0, s.0, s.2);
    let sorted_already = lines.windows(2).all(|w| w[0] <= w[1]);
    let order: Vec<usize> = if sorted_already {
        Vec::new()
    } else {
        let mut order: Vec<usize> = (0..lines.len()).collect();
        order.sort_by_key(|&i| lines[i]);
        order
    };
    let sorted: std::borrow::Cow<'_, [u32]> = if sorted_already {
        std::borrow::Cow::Borrowed(lines)
    } else {
        std::borrow::Cow::Owned(order.iter().map(|&i| lines[i]).collect())
    };
    let mut best: Vec<Option<(u32, u32, &'a str)>> = vec![None; lines.len()];
    for i in 0..spans.rows() {
        let Some((start, end)) = spans.span(i) else {
            continue;
        };
        if end < start {
            continue;
        }
        let from = sorted.partition_point(|&l| l < start);
        let to = sorted.partition_point(|&l| l <= end);
        if from >= to {
            continue;
        }
        let Some(id) = spans.id(i) else {
            continue;
        };
        let span = (start, end, id);
        for slot in &mut best[from..to] {
            if slot.is_none_or(|b| key(&span) < key(&b)) {
                *slot = Some(span);
            }
        }
    }
    if sorted_already {
        return best;
    }
    let mut out: Vec<Option<(u32, u32, &'a str)>> = vec![None; lines.len()];
    for (p, b) in best.into_iter().enumerate() {
        out[order[p]] = b;
    }
    out
}

/// Group one file's hits; `spans` are its chunks, `definition` the target's definition
/// pattern (already in the `regex` crate's dialect).
pub fn group_file<'a, S: SpanRows<'a> + ?Sized>(
    hits: &FileHits,
    spans: &S,
    definition: Option<&Regex>,
    word: &WordBytes,
) -> Grouped<'a> {
    let numbers: Vec<u32> = hits.lines.iter().map(|l| l.line).collect();
    let chunks = enclosing_in(spans, &numbers);
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut of_hit: Vec<u32> = Vec::with_capacity(hits.lines.len());
    // The last few chunks' groups, by id: a file's lines come in order, so a chunk's lines
    // are mostly together (a class's lines resume after its methods': a map, not the last).
    let mut by_id: rustc_hash::FxHashMap<&'a str, usize> = rustc_hash::FxHashMap::default();
    for (i, (hit, chunk)) in hits.lines.iter().zip(chunks).enumerate() {
        let at = match chunk {
            Some((_, _, id)) => *by_id.entry(id).or_insert(groups.len()),
            None => groups.len(),
        };
        if at == groups.len() {
            groups.push(Group {
                start: hit.line,
                end: hit.line,
                chunk_id: None,
                first: i,
                n_columns: 0,
                whole: false,
                is_def: Some(false),
            });
        }
        of_hit.push(at as u32);
        let g = &mut groups[at];
        if let Some((s, e, id)) = chunk {
            // The span of the group's last line's chunk (equal ids, equal content).
            (g.start, g.end) = (s, e);
            g.chunk_id = Some(id);
        }
        let (text, columns) = (hits.text(hit), hits.columns(hit));
        g.n_columns += columns.len();
        if !g.whole {
            let raw = text.as_bytes();
            g.whole = columns.iter().any(|&(s, e)| {
                let (s, e) = (s as usize, e as usize);
                !word.glued(raw, s.checked_sub(1)) && !word.glued(raw, Some(e))
            });
        }
        if let Some(re) = definition {
            if !text.is_ascii() {
                g.is_def = None;
            } else if g.is_def == Some(false) && re.is_match(text) {
                g.is_def = Some(true);
            }
        }
    }
    Grouped { groups, of_hit }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word() -> WordBytes {
        let mut w = [false; 256];
        for b in 0..=255u8 {
            w[b as usize] = b.is_ascii_alphanumeric() || b == b'_';
        }
        WordBytes(w)
    }

    #[test]
    fn smallest_enclosing_span_wins() {
        let spans = [(1, 10, "m"), (2, 5, "b"), (2, 5, "a"), (7, 8, "c")];
        let got = enclosing(&spans, &[1, 3, 7, 9, 11]);
        assert_eq!(
            got,
            vec![
                Some((1, 10, "m")),
                Some((2, 5, "a")),
                Some((7, 8, "c")),
                Some((1, 10, "m")),
                None
            ]
        );
    }

    proptest::proptest! {
        /// The smallest enclosing span of each line (in any order, repeated or not) is the
        /// one a scan of every span finds.
        #[test]
        fn enclosing_equals_a_scan_of_every_span(
            spans in proptest::collection::vec((0u32..60, 0u32..40, 0usize..4), 0..12),
            lines in proptest::collection::vec(0u32..110, 0..30),
        ) {
            const IDS: [&str; 4] = ["a", "b", "c", "d"];
            // Some spans end before they start (refused), as a damaged table could hold.
            let spans: Vec<(u32, u32, &str)> = spans
                .iter()
                .map(|&(s, len, id)| if id == 3 && len > 30 { (s + 5, s, IDS[id]) } else { (s, s + len, IDS[id]) })
                .collect();
            let want: Vec<Option<(u32, u32, &str)>> = lines
                .iter()
                .map(|&l| {
                    spans
                        .iter()
                        .filter(|s| s.0 <= l && l <= s.1)
                        .min_by_key(|s| (s.1 - s.0, s.0, s.2))
                        .copied()
                })
                .collect();
            proptest::prop_assert_eq!(enclosing(&spans, &lines), want);
        }
    }

    /// Spans whose id is missing (a row [`ChunkTable`] cannot read) are no chunks.
    struct Partial<'a>(Vec<(u32, u32, Option<&'a str>)>);

    impl<'a> SpanRows<'a> for Partial<'a> {
        fn rows(&self) -> usize {
            self.0.len()
        }
        fn span(&self, i: usize) -> Option<(u32, u32)> {
            self.0.get(i).map(|s| (s.0, s.1))
        }
        fn id(&self, i: usize) -> Option<&'a str> {
            self.0.get(i).and_then(|s| s.2)
        }
    }

    proptest::proptest! {
        /// Reading ids only for spans that hold a line answers as the list of every span
        /// with an id.
        #[test]
        fn ids_read_on_demand_equal_the_full_list(
            spans in proptest::collection::vec((0u32..60, 0u32..40, 0usize..5), 0..12),
            lines in proptest::collection::vec(0u32..110, 0..30),
        ) {
            const IDS: [Option<&str>; 5] = [Some("a"), Some("b"), Some("c"), Some("d"), None];
            let rows = Partial(spans.iter().map(|&(s, len, id)| (s, s + len, IDS[id])).collect());
            let listed: Vec<(u32, u32, &str)> =
                rows.0.iter().filter_map(|&(s, e, id)| Some((s, e, id?))).collect();
            proptest::prop_assert_eq!(enclosing_in(&rows, &lines), enclosing(&listed, &lines));
        }
    }

    #[test]
    fn groups_by_chunk_and_flags() {
        let mut hits = FileHits::new(0);
        hits.push_line(2, b"def self_x(): pass", (4, 8));
        hits.push_line(3, b"  x = self", (6, 10));
        hits.push_line(20, b"myself", (2, 6));
        (hits.n_matches, hits.n_lines) = (3, 3);
        let re = Regex::new(r"^\s*def\b[^\n]*?\bself\b").unwrap();
        let grouped = group_file(&hits, &[(1, 5, "f")][..], Some(&re), &word());
        assert_eq!(grouped.groups.len(), 2);
        assert_eq!(grouped.of_hit, vec![0, 0, 1]);
        let first = grouped.owned(&hits, 0);
        assert_eq!(first.lines, vec![2, 3]);
        assert_eq!(first.columns, vec![[2, 4, 8], [3, 6, 10]]);
        assert_eq!(
            (first.snippet.as_str(), first.chunk_id.as_deref()),
            ("def self_x(): pass", Some("f"))
        );
        assert_eq!(
            (first.whole, first.is_def, first.texts),
            (true, Some(false), None)
        );
        let second = grouped.owned(&hits, 1);
        assert_eq!(second.chunk_id, None);
        assert_eq!((second.start, second.end), (20, 20));
        assert!(!second.whole);
    }
}
