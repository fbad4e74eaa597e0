//! Literal and regex search: plan candidates from the trigram index, verify each candidate's
//! stored content with the `regex` crate (linear time), report lines and byte columns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use globset::GlobMatcher;
use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::ast;

use super::finder::{is_word_byte, Literal};
use super::index::{Segment, TextIndex};
use super::memo::{ByteLru, Lru};
use super::ngram;
use super::plan::{self, Query};
use super::postings;
use super::together;
use crate::error::{CoreError, CoreResult};

/// Limits on what a pattern may compile to (the `regex` crate refuses beyond them).
pub const REGEX_SIZE_LIMIT: usize = 4 << 20;
pub const REGEX_NEST_LIMIT: u32 = 64;
/// The longest line text returned; columns still refer to the full line.
pub const MAX_LINE_TEXT: usize = 1024;
/// Below this many candidates, planning stops and verification runs on one thread.
const SMALL_CANDIDATES: usize = 16;
/// Below this many, a literal's planning stops once a list removes under 5% of them.
const FEW_CANDIDATES: usize = 64;
/// Candidates holding fewer bytes than this are verified on the calling thread alone: a
/// helper from the pool costs its wake-up and its spinning before it sleeps again, about what
/// it saves there (with the decoded content cached, 1 MiB is ~0.3 ms of scanning). Above it,
/// the calling thread still works from the start (see [`together::map`]).
const PARALLEL_MIN_BYTES: u64 = 1 << 20;
/// An OR of more parts than this collects its documents in a bitmap.
const OR_BITMAP_PARTS: usize = 16;
/// Files-only and few-lines questions (`count_all: false`, at most this many lines per file)
/// stop decoding a file once its lines are found.
const STREAMING_MAX_LINES: usize = 32;
/// ... and when there are at least this many candidates (see `search`).
const STREAMING_MIN_CANDIDATES: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Case {
    Sensitive,
    Insensitive,
    Smart,
}

/// What to look for.
#[derive(Debug, Clone)]
pub struct SearchSpec {
    pub pattern: String,
    pub regex: bool,
    pub case: Case,
    pub whole_word: bool,
    pub path_glob: Option<String>,
    /// Stop after this many matching lines (in path order).
    pub max_lines: usize,
    /// Stop after this many matching files.
    pub max_files: usize,
    /// At most this many matching lines reported per file.
    pub max_lines_per_file: usize,
    /// Count every match of a file (exact `n_matches`/`n_lines`) instead of stopping once
    /// `max_lines_per_file` lines are found.
    pub count_all: bool,
}

/// One matching line: 1-based number; its text (capped) and the byte columns of each match
/// in the line are kept in its file's [`FileHits`] (see [`FileHits::text`] and
/// [`FileHits::columns`]): one buffer per file, not two allocations per line (a common
/// literal reports tens of thousands of lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineHit {
    pub line: u32,
    text: (u32, u32),
    columns: (u32, u32),
}

/// Lines a file's buffers make room for at its first matching line, and the bytes per line.
const FIRST_LINES: usize = 8;
const FIRST_LINE_BYTES: usize = 64;

/// All reported matches in one document.
#[derive(Debug, Clone, Default)]
pub struct FileHits {
    pub doc: u32,
    pub lines: Vec<LineHit>,
    /// Matches in the file (all of them unless the search stopped early, see `count_all`).
    pub n_matches: u32,
    pub n_lines: u32,
    /// The lines' texts, one after the other.
    texts: String,
    /// The lines' columns, one after the other.
    cols: Vec<(u32, u32)>,
}

impl FileHits {
    /// No lines yet.
    pub fn new(doc: u32) -> FileHits {
        FileHits {
            doc,
            ..FileHits::default()
        }
    }

    /// The text of `line`, one of [`FileHits::lines`].
    pub fn text(&self, line: &LineHit) -> &str {
        self.texts
            .get(line.text.0 as usize..line.text.1 as usize)
            .unwrap_or("")
    }

    /// The byte columns of each match in `line`, one of [`FileHits::lines`].
    pub fn columns(&self, line: &LineHit) -> &[(u32, u32)] {
        self.cols
            .get(line.columns.0 as usize..line.columns.1 as usize)
            .unwrap_or(&[])
    }

    /// Append a line: its number, its text (bytes as UTF-8, lossy) and its first column.
    pub fn push_line(&mut self, line: u32, text: &[u8], column: (u32, u32)) {
        if self.lines.is_empty() {
            // Room for a few lines at once: the buffers grew from empty in 2-4 steps each for
            // every matching file (malloc, realloc and free were ~8% of a common literal's
            // search), and most files hold a few matching lines.
            self.lines.reserve(FIRST_LINES);
            self.cols.reserve(FIRST_LINES);
            self.texts.reserve(FIRST_LINES * FIRST_LINE_BYTES);
        }
        let at = self.texts.len() as u32;
        match std::str::from_utf8(text) {
            Ok(t) => self.texts.push_str(t),
            Err(_) => self.texts.push_str(&String::from_utf8_lossy(text)),
        }
        let c = self.cols.len() as u32;
        self.cols.push(column);
        self.lines.push(LineHit {
            line,
            text: (at, self.texts.len() as u32),
            columns: (c, c + 1),
        });
    }

    /// Another column of the last line.
    fn push_column(&mut self, column: (u32, u32)) {
        if let Some(last) = self.lines.last_mut() {
            self.cols.push(column);
            last.columns.1 = self.cols.len() as u32;
        }
    }

    /// Keep the first `n` lines only.
    pub fn truncate_lines(&mut self, n: usize) {
        if let Some(first_gone) = self.lines.get(n).copied() {
            self.lines.truncate(n);
            self.texts.truncate(first_gone.text.0 as usize);
            self.cols.truncate(first_gone.columns.0 as usize);
        }
    }

    /// Every line as `(number, text, columns)`.
    pub fn each_line(&self) -> impl Iterator<Item = (u32, &str, &[(u32, u32)])> {
        self.lines
            .iter()
            .map(|l| (l.line, self.text(l), self.columns(l)))
    }
}

/// Equal lines, texts and columns (whatever the buffers hold past them).
impl PartialEq for FileHits {
    fn eq(&self, other: &FileHits) -> bool {
        self.doc == other.doc
            && self.n_matches == other.n_matches
            && self.n_lines == other.n_lines
            && self.lines.len() == other.lines.len()
            && self.each_line().eq(other.each_line())
    }
}

impl Eq for FileHits {}

#[derive(Debug, Default, Clone)]
pub struct SearchOutput {
    pub files: Vec<FileHits>,
    pub candidates: usize,
    pub truncated: bool,
}

/// A compiled search: the verifying regex and the candidate plan.
pub struct Compiled {
    pub regex: Regex,
    pub query: Query,
    pub whole_word: bool,
    /// The longest match in bytes, when bounded (every literal; a regex without unbounded
    /// repetition): a prefix of a document then decides its first matches (see
    /// [`verify_prefix`]).
    pub max_len: Option<usize>,
    /// A literal (not a regex), matched without the regex where it can be (see
    /// [`Literal`]).
    pub literal: Option<Literal>,
}

fn has_uppercase_literal(node: &ast::Ast) -> bool {
    use ast::{Ast, ClassSetItem};
    fn item(i: &ClassSetItem) -> bool {
        match i {
            ClassSetItem::Literal(l) => l.c.is_uppercase(),
            ClassSetItem::Range(r) => r.start.c.is_uppercase() || r.end.c.is_uppercase(),
            ClassSetItem::Bracketed(b) => set(&b.kind),
            ClassSetItem::Union(u) => u.items.iter().any(item),
            _ => false,
        }
    }
    fn set(s: &ast::ClassSet) -> bool {
        match s {
            ast::ClassSet::Item(i) => item(i),
            ast::ClassSet::BinaryOp(op) => set(&op.lhs) || set(&op.rhs),
        }
    }
    match node {
        Ast::Literal(l) => l.c.is_uppercase(),
        Ast::ClassBracketed(b) => set(&b.kind),
        Ast::Repetition(r) => has_uppercase_literal(&r.ast),
        Ast::Group(g) => has_uppercase_literal(&g.ast),
        Ast::Alternation(a) => a.asts.iter().any(has_uppercase_literal),
        Ast::Concat(c) => c.asts.iter().any(has_uppercase_literal),
        _ => false,
    }
}

/// Compile a spec: smart case decided like ripgrep (insensitive unless the pattern has an
/// upper-case literal), size and nesting limits enforced, a bad pattern a `BadRegex` error.
pub fn compile(spec: &SearchSpec) -> CoreResult<Compiled> {
    if spec.pattern.is_empty() {
        return Err(CoreError::BadRegex("the pattern is empty".into()));
    }
    let pattern = if spec.regex {
        spec.pattern.clone()
    } else {
        regex::escape(&spec.pattern)
    };
    let insensitive = match spec.case {
        Case::Sensitive => false,
        Case::Insensitive => true,
        Case::Smart => {
            let parsed = ast::parse::ParserBuilder::new()
                .nest_limit(REGEX_NEST_LIMIT)
                .build()
                .parse(&pattern)
                .map_err(|e| CoreError::BadRegex(e.to_string()))?;
            !has_uppercase_literal(&parsed)
        }
    };
    let regex = RegexBuilder::new(&pattern)
        .case_insensitive(insensitive)
        .multi_line(true)
        .nest_limit(REGEX_NEST_LIMIT)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| CoreError::BadRegex(e.to_string()))?;
    let hir = regex_syntax::ParserBuilder::new()
        .case_insensitive(insensitive)
        .multi_line(true)
        .utf8(false)
        .nest_limit(REGEX_NEST_LIMIT)
        .build()
        .parse(&pattern)
        .map_err(|e| CoreError::BadRegex(e.to_string()))?;
    // A match is a non-empty span (a file is found by what it contains), so a pattern that
    // can match the empty string (`x?`, `\b`, `^`) would report files by accident of what
    // else it matches: refused, as ripgrep would otherwise list every line.
    if hir.properties().minimum_len() == Some(0) {
        return Err(CoreError::BadRegex(format!(
            "{:?} can match the empty string, which every line contains; make it match at \
             least one character (e.g. `x+` instead of `x*` or `x?`)",
            spec.pattern
        )));
    }
    let literal = if spec.regex {
        None
    } else {
        Literal::new(&spec.pattern, insensitive)?
    };
    Ok(Compiled {
        regex,
        query: plan::plan(&hir),
        whole_word: spec.whole_word,
        max_len: hir.properties().maximum_len(),
        literal,
    })
}

/// Compiled searches kept for their next use: `(pattern, regex, case, whole_word)`.
type CompiledKey = (String, bool, Case, bool);
/// How many compiled searches are kept (each at most [`REGEX_SIZE_LIMIT`]; a literal's is a
/// few kB).
pub const COMPILED_CAPACITY: usize = 64;
static COMPILED: LazyLock<Lru<CompiledKey, Compiled>> =
    LazyLock::new(|| Lru::new(COMPILED_CAPACITY));

/// [`compile`], remembered: the same spec again (the same literal asked twice, or by two
/// retrievers of one question) reuses the regex and the plan (a bounded LRU).
pub fn compile_cached(spec: &SearchSpec) -> CoreResult<Arc<Compiled>> {
    let key = (spec.pattern.clone(), spec.regex, spec.case, spec.whole_word);
    COMPILED.get_or_try(&key, || compile(spec))
}

/// Sorted candidate documents (logical ids), or `None` for "every document". Planning may
/// stop early once few candidates remain (verification is exact anyway), so the set can
/// hold false candidates that depend on how the index is segmented.
pub fn candidates(index: &TextIndex, q: &Query) -> CoreResult<Option<Vec<u32>>> {
    candidates_with(index, q, false)
}

/// As [`candidates`]; with `exhaustive`, every list is intersected (no early stop), so the
/// set is a property of each document alone: the same whatever the segmentation (what BM25's
/// document frequencies need to equal those of a from-scratch build).
pub fn candidates_with(
    index: &TextIndex,
    q: &Query,
    exhaustive: bool,
) -> CoreResult<Option<Vec<u32>>> {
    let mut acc: Vec<u32> = Vec::new();
    for (s, seg) in index.segments().iter().enumerate() {
        // `None` ("every document") depends on the query alone, so it is the same for
        // every segment.
        let Some(local) = segment_candidates(seg, q, exhaustive)? else {
            return Ok(None);
        };
        let mapped = index.to_logical(s, &local);
        acc = if acc.is_empty() {
            mapped
        } else {
            postings::union(&acc, &mapped)
        };
    }
    Ok(Some(acc))
}

/// Sorted candidate documents of one segment (local ids), or `None` for "every document".
fn segment_candidates(seg: &Segment, q: &Query, exhaustive: bool) -> CoreResult<Option<Vec<u32>>> {
    Ok(match q {
        Query::All => None,
        Query::None => Some(Vec::new()),
        Query::Tri(t) => Some(seg.postings(*t)?),
        Query::Lit(s) => Some(literal_candidates(seg, s, exhaustive)?),
        Query::And(parts) => {
            // Cheapest (rarest) trigrams first; stop as soon as the set is empty.
            let mut order: Vec<(u64, &Query)> = parts
                .iter()
                .map(|p| match p {
                    Query::Tri(t) => (u64::from(seg.doc_count(*t)), p),
                    Query::Lit(s) => (literal_cost(seg, s), p),
                    _ => (u64::MAX, p),
                })
                .collect();
            order.sort_by_key(|(c, _)| *c);
            let mut acc: Option<Vec<u32>> = None;
            for (_, p) in order {
                if let Some(docs) = segment_candidates(seg, p, exhaustive)? {
                    acc = Some(match acc {
                        None => docs,
                        Some(a) => postings::intersect(&a, &docs),
                    });
                    // A handful of candidates is cheaper to verify than to decode the
                    // remaining (commoner) posting lists: verification is exact anyway.
                    if acc.as_ref().is_some_and(|a| {
                        a.is_empty() || (!exhaustive && a.len() <= SMALL_CANDIDATES)
                    }) {
                        break;
                    }
                }
            }
            acc
        }
        Query::Or(parts) if parts.len() > OR_BITMAP_PARTS => {
            // Many alternatives (a class window's 256 trigrams): one bitmap instead of a
            // union per list.
            let n = seg.n_docs() as usize;
            let mut bits = vec![0u64; n.div_ceil(64)];
            for p in parts {
                match segment_candidates(seg, p, exhaustive)? {
                    None => return Ok(None),
                    Some(docs) => {
                        for d in docs {
                            if let Some(w) = bits.get_mut(d as usize / 64) {
                                *w |= 1 << (d % 64);
                            }
                        }
                    }
                }
            }
            let mut acc = Vec::new();
            for (i, &w) in bits.iter().enumerate() {
                let mut w = w;
                while w != 0 {
                    acc.push((i * 64) as u32 + w.trailing_zeros());
                    w &= w - 1;
                }
            }
            Some(acc)
        }
        Query::Or(parts) => {
            let mut acc = Vec::new();
            for p in parts {
                match segment_candidates(seg, p, exhaustive)? {
                    None => return Ok(None),
                    Some(docs) => acc = postings::union(&acc, &docs),
                }
            }
            Some(acc)
        }
    })
}

/// The smallest document count among a literal's trigrams (an upper bound on its matches).
fn literal_cost(seg: &Segment, s: &[u8]) -> u64 {
    s.windows(3)
        .map(|w| u64::from(seg.doc_count(ngram::pack(w[0], w[1], w[2]))))
        .min()
        .unwrap_or(u64::MAX)
}

/// Documents that may contain the folded literal `s` (at least three bytes): the
/// intersection of its trigrams' lists, rarest first, then the follow-mask check: for every
/// trigram of `s` but the last, the document's mask must allow the byte that follows it in
/// `s`. Trigrams of one literal mostly co-occur in files that do not contain it (`get`,
/// `add`, `info` for `getaddrinfo`); the chain check removes most of those.
fn literal_candidates(seg: &Segment, s: &[u8], exhaustive: bool) -> CoreResult<Vec<u32>> {
    // Distinct trigrams with the follow bits the literal requires of each.
    let mut need: Vec<(u32, u8)> = Vec::new();
    for (i, w) in s.windows(3).enumerate() {
        let t = ngram::pack(w[0], w[1], w[2]);
        let bit = s
            .get(i + 3)
            .map_or(0, |&b| ngram::fold_mask(ngram::follow_bit(b)));
        match need.iter_mut().find(|(u, _)| *u == t) {
            Some((_, bits)) => *bits |= bit,
            None => need.push((t, bit)),
        }
    }
    let mut order: Vec<(u32, u32, u8)> = need
        .iter()
        .map(|&(t, bits)| (seg.doc_count(t), t, bits))
        .collect();
    order.sort_unstable();
    if order.first().is_none_or(|&(c, _, _)| c == 0) {
        return Ok(Vec::new());
    }
    let (mut docs, mut masks) = (Vec::new(), Vec::new());
    let mut acc: Option<Vec<u32>> = None;
    let mut removed_last = usize::MAX;
    for &(_, t, bits) in &order {
        // Few candidates left and the last (rarer) list removed almost none of them: they
        // are mostly real matches, and the commoner lists left cost more to decode than they
        // could save (`getaddrinfo` on the standard library: 5 lists of 7-10k postings for
        // one candidate).
        if let (Some(a), false) = (&acc, exhaustive) {
            if a.len() <= FEW_CANDIDATES && removed_last.saturating_mul(20) < a.len() {
                break;
            }
        }
        seg.postings_masked(t, &mut docs, &mut masks)?;
        let before = acc.as_ref().map(Vec::len);
        let next: Vec<u32> = match acc.take() {
            None => docs
                .iter()
                .zip(&masks)
                .filter(|&(_, &m)| m & bits == bits)
                .map(|(&d, _)| d)
                .collect(),
            Some(a) => intersect_masked(&a, &docs, &masks, bits),
        };
        removed_last = before.map_or(usize::MAX, |b| b - next.len());
        // A handful of candidates is cheaper to verify than the remaining (commoner) lists
        // are to decode.
        let done = next.is_empty() || (!exhaustive && next.len() <= SMALL_CANDIDATES);
        acc = Some(next);
        if done {
            break;
        }
    }
    Ok(acc.unwrap_or_default())
}

/// The documents of `a` that are in `docs` with a mask holding all of `bits`.
fn intersect_masked(a: &[u32], docs: &[u32], masks: &[u8], bits: u8) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0usize;
    for &x in a {
        if docs.len() - j > 64 * (a.len() + 1) {
            j += docs[j..].partition_point(|&y| y < x);
        } else {
            while j < docs.len() && docs[j] < x {
                j += 1;
            }
        }
        if j < docs.len() && docs[j] == x && masks.get(j).is_some_and(|&m| m & bits == bits) {
            out.push(x);
        }
    }
    out
}

/// What a query asks of one block of a large document: `Lit` holds the filter bits of a
/// literal's trigrams, all of which must be set in one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockPlan {
    /// Nothing a block filter can refute (every candidate passes).
    Pass,
    Lit(Vec<usize>),
    And(Vec<BlockPlan>),
    Or(Vec<BlockPlan>),
}

/// An OR of more alternatives than this is not checked against block filters (a class
/// window's 256 trigrams: each is in the document, and checking them costs more than it
/// saves).
const BLOCK_PLAN_MAX_OR: usize = 8;

impl BlockPlan {
    /// The block plan of `q`. A literal of one trigram passes (its document-level posting is
    /// exact); a longer one checks the trigrams of its first `BLOCK_OVERLAP` bytes, which
    /// lie in one block's range wherever the literal starts.
    pub fn of(q: &Query) -> BlockPlan {
        use super::format::{BLOCK_FILTER_BYTES, BLOCK_OVERLAP};
        match q {
            Query::Lit(s) if s.len() > 3 => {
                let s = &s[..s.len().min(BLOCK_OVERLAP)];
                let mut bits: Vec<usize> = s
                    .windows(3)
                    .map(|w| {
                        ngram::filter_bit(ngram::pack(w[0], w[1], w[2]), BLOCK_FILTER_BYTES * 8)
                    })
                    .collect();
                bits.sort_unstable();
                bits.dedup();
                BlockPlan::Lit(bits)
            }
            Query::And(parts) => {
                let parts: Vec<BlockPlan> = parts
                    .iter()
                    .map(BlockPlan::of)
                    .filter(|p| *p != BlockPlan::Pass)
                    .collect();
                if parts.is_empty() {
                    BlockPlan::Pass
                } else {
                    BlockPlan::And(parts)
                }
            }
            Query::Or(parts) if parts.len() <= BLOCK_PLAN_MAX_OR => {
                let parts: Vec<BlockPlan> = parts.iter().map(BlockPlan::of).collect();
                if parts.contains(&BlockPlan::Pass) {
                    BlockPlan::Pass
                } else {
                    BlockPlan::Or(parts)
                }
            }
            _ => BlockPlan::Pass,
        }
    }

    /// Whether a document with these block filters may match.
    pub fn passes(&self, filters: &[u8]) -> bool {
        use super::format::BLOCK_FILTER_BYTES;
        match self {
            BlockPlan::Pass => true,
            BlockPlan::Lit(bits) => filters.chunks_exact(BLOCK_FILTER_BYTES).any(|f| {
                bits.iter()
                    .all(|&b| f.get(b / 8).is_some_and(|&x| x & (1 << (b % 8)) != 0))
            }),
            BlockPlan::And(parts) => parts.iter().all(|p| p.passes(filters)),
            BlockPlan::Or(parts) => parts.iter().any(|p| p.passes(filters)),
        }
    }
}

/// Matches of `re` in `hay` as byte ranges, in order; with `whole_word`, only those not
/// glued to a word character on either side (a rejected match is retried one byte later).
pub struct Matches<'r, 'h> {
    re: &'r Regex,
    hay: &'h [u8],
    whole_word: bool,
    at: usize,
}

impl<'r, 'h> Matches<'r, 'h> {
    pub fn new(re: &'r Regex, hay: &'h [u8], whole_word: bool) -> Self {
        Self {
            re,
            hay,
            whole_word,
            at: 0,
        }
    }
}

impl Iterator for Matches<'_, '_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let hay = self.hay;
        while self.at <= hay.len() {
            let m = self.re.find_at(hay, self.at)?;
            let (s, e) = (m.start(), m.end());
            let ok = !self.whole_word
                || ((s == 0 || !is_word_byte(hay[s - 1]))
                    && (e == hay.len() || !is_word_byte(hay[e])));
            if ok && e > s {
                self.at = e;
                return Some((s, e));
            }
            self.at = s + 1;
        }
        None
    }
}

/// All matches of `re` in `hay` (see [`Matches`]), collected into `out`.
pub fn find_matches(re: &Regex, hay: &[u8], whole_word: bool, out: &mut Vec<(usize, usize)>) {
    out.clear();
    out.extend(Matches::new(re, hay, whole_word));
}

/// Verify one document; `None` when nothing matches. With `count_all` false, the scan stops
/// once `max_lines_per_file` lines are reported with all their matches (the counts are then
/// those of the reported lines: lower bounds), which is what a files-only or top-k question
/// needs: a common literal costs one match per file.
pub fn verify_doc(
    doc: u32,
    content: &[u8],
    compiled: &Compiled,
    max_lines_per_file: usize,
    count_all: bool,
) -> Option<FileHits> {
    verify_doc_in(doc, content, None, compiled, max_lines_per_file, count_all)
}

/// [`verify_doc`] of a document with block filters (`filters`: see [`Literal::matches`]).
pub fn verify_doc_in(
    doc: u32,
    content: &[u8],
    filters: Option<&[u8]>,
    compiled: &Compiled,
    max_lines_per_file: usize,
    count_all: bool,
) -> Option<FileHits> {
    verify_prefix(
        doc,
        content,
        filters,
        None,
        compiled,
        max_lines_per_file,
        count_all,
    )
    .flatten()
}

/// Bytes a match may look past its end (a Unicode word boundary reads one character).
const LOOK_AHEAD: usize = 8;

thread_local! {
    /// Per-thread buffer for a region's ASCII lower-cased copy (see [`Literal`]).
    static LOWERED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`verify_doc`] on `hay`, the whole content (`prefix_margin: None`) or only a prefix of it.
/// For a prefix, `Some(margin)` must exceed the longest match plus [`LOOK_AHEAD`]; the
/// answer is then `None` ("undecided: decode more") unless the prefix decides it exactly as
/// the whole content would: every match used starts `margin` bytes before the prefix's end
/// (so an earlier or longer match cannot hide past it) and every reported line ends inside.
pub fn verify_prefix(
    doc: u32,
    hay: &[u8],
    filters: Option<&[u8]>,
    prefix_margin: Option<usize>,
    compiled: &Compiled,
    max_lines_per_file: usize,
    count_all: bool,
) -> Option<Option<FileHits>> {
    let n = hay.len();
    let safe_end = match prefix_margin {
        None => usize::MAX,
        Some(m) => n.checked_sub(m)?,
    };
    let complete = prefix_margin.is_none();
    let mut hits = FileHits::new(doc);
    let literal = compiled.literal.as_ref().filter(|l| l.applies(hay));
    let mut verify = |matches: &mut dyn Iterator<Item = (usize, usize)>| {
        let limits = (max_lines_per_file, count_all);
        verify_matches(matches, hay, &mut hits, safe_end, complete, limits)
    };
    let found = match literal {
        Some(literal) => {
            let buf = LOWERED.with(std::cell::RefCell::take);
            let mut matches = literal.matches(hay, filters, compiled.whole_word, buf);
            let found = verify(&mut matches);
            LOWERED.with(|cell| cell.replace(matches.into_buffer()));
            found
        }
        None => verify(&mut Matches::new(&compiled.regex, hay, compiled.whole_word)),
    };
    let ((cur_line_start, cur_line_end), stopped) = found?;
    // Out of matches in a prefix: decided only when the line limit is reached and no
    // further match can start on the last reported line.
    let decided = complete
        || stopped
        || (!count_all
            && hits.lines.len() >= max_lines_per_file
            && cur_line_start != usize::MAX
            && cur_line_end < safe_end);
    decided.then_some((hits.n_matches > 0).then_some(hits))
}

/// The loop of [`verify_prefix`] over `matches`: fills `hits`; `None` when undecided, else
/// the last reported line's span and whether the line limit stopped it.
fn verify_matches(
    matches: &mut dyn Iterator<Item = (usize, usize)>,
    hay: &[u8],
    hits: &mut FileHits,
    safe_end: usize,
    complete: bool,
    (max_lines_per_file, count_all): (usize, bool),
) -> Option<((usize, usize), bool)> {
    let n = hay.len();
    let mut line_no: u32 = 1;
    let mut counted_to = 0usize;
    let mut cur_line_start = usize::MAX;
    let mut cur_line_end = 0usize;
    let mut stopped = false;
    for (s, e) in matches {
        if s >= safe_end {
            return None;
        }
        if cur_line_start != usize::MAX && s <= cur_line_end {
            // Same line as the previous match.
            hits.n_matches += 1;
            if hits.lines.len() == hits.n_lines as usize {
                let ce = e.min(cur_line_end) - cur_line_start;
                hits.push_column(((s - cur_line_start) as u32, ce as u32));
            }
            continue;
        }
        if !count_all && hits.lines.len() >= max_lines_per_file {
            stopped = true;
            break;
        }
        hits.n_matches += 1;
        line_no += memchr::memchr_iter(b'\n', &hay[counted_to..s]).count() as u32;
        counted_to = s;
        let ls = memchr::memrchr(b'\n', &hay[..s]).map_or(0, |p| p + 1);
        let le = match memchr::memchr(b'\n', &hay[s..]) {
            Some(p) => s + p,
            None if complete => n,
            None => return None,
        };
        cur_line_start = ls;
        cur_line_end = le;
        hits.n_lines += 1;
        if hits.lines.len() < max_lines_per_file {
            let mut end = le.min(ls + MAX_LINE_TEXT);
            if hay[ls..end].ends_with(b"\r") {
                end -= 1;
            }
            let column = ((s - ls) as u32, (e.min(le) - ls) as u32);
            hits.push_line(line_no, &hay[ls..end], column);
        }
    }
    Some(((cur_line_start, cur_line_end), stopped))
}

/// Output bytes decoded before the first look at a document's prefix, and the growth factor
/// of later steps (each step rescans the prefix: a factor of 4 bounds that at 1.33x).
const FIRST_STEP: usize = 4 << 10;
const STEP_GROWTH: usize = 4;
/// Past this many times the first step, the rest of a document is decoded in one go by
/// `lz4_flex` (the resumable decoder's slower speed then costs ~2 us per undecided document).
const LAST_STEP_FACTOR: usize = 4;

thread_local! {
    /// Per-thread decode buffer (kept across queries: growing it zero-fills).
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Verify document `d` decoding only as much of it as its first `max_lines_per_file`
/// matching lines need (`count_all: false` and a bounded match length; see
/// [`verify_prefix`]); other documents are decoded whole.
fn verify_streaming(
    index: &TextIndex,
    d: u32,
    compiled: &Compiled,
    max_len: usize,
    max_lines_per_file: usize,
    first_step: usize,
) -> CoreResult<Option<FileHits>> {
    let (seg, local, e, block) = index.stored(d)?;
    let filters = index.block_filters(d);
    // A small document is decoded whole by `lz4_flex` (faster per byte than the resumable
    // decoder: ~2.8 against ~2.0 GB/s on kernel sources).
    if e.codec != super::format::CODEC_LZ4 || e.raw_len as usize <= first_step {
        return BUFFER.with(|cell| {
            let mut buf = cell.borrow_mut();
            with_content(index, d, &mut buf, |c| {
                verify_doc_in(d, c, filters, compiled, max_lines_per_file, false)
            })
        });
    }
    let raw_len = e.raw_len as usize;
    let margin = max_len.saturating_add(LOOK_AHEAD + 1);
    BUFFER.with(|cell| {
        let mut buf = cell.borrow_mut();
        let need = raw_len + super::lz4::SLACK;
        if buf.len() < need {
            buf.resize(need, 0);
        }
        let mut dec = super::lz4::Lz4Decoder::new(block);
        let mut until = first_step;
        loop {
            dec.decode_until(&mut buf, until, raw_len)
                .map_err(|_| seg.content_error(local, "malformed LZ4 block"))?;
            let done = dec.is_done();
            if done && dec.decoded() != raw_len {
                return Err(seg.content_error(local, "content length mismatch"));
            }
            let hay = &buf[..dec.decoded()];
            let margin = if done { None } else { Some(margin) };
            if let Some(found) =
                verify_prefix(d, hay, filters, margin, compiled, max_lines_per_file, false)
            {
                return Ok(found);
            }
            if done {
                // Unreachable: a complete content always decides.
                return Ok(None);
            }
            if until >= first_step * LAST_STEP_FACTOR {
                // Not decided early: the rest at lz4_flex's speed, then the whole content.
                dec.finish(&mut buf, raw_len)
                    .map_err(|_| seg.content_error(local, "malformed LZ4 block"))?;
                until = usize::MAX;
                continue;
            }
            until = until.saturating_mul(STEP_GROWTH);
        }
    })
}

thread_local! {
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decoded documents of one index kept for its next questions, by logical id (a
/// [`ByteLru`]; the caller owns it beside the index and drops it with the index).
pub type ContentCache = ByteLru<u32>;

/// The decoded-content cache's budget in bytes: `MAGUYVA_TEXT_CACHE_MB` (0 turns it off),
/// else [`CONTENT_CACHE_MB`].
pub fn content_cache_budget() -> usize {
    std::env::var("MAGUYVA_TEXT_CACHE_MB")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(CONTENT_CACHE_MB)
        .saturating_mul(1 << 20)
}

/// The default budget of a [`ContentCache`], in MiB.
pub const CONTENT_CACHE_MB: usize = 64;

/// Run `f` on document `d`'s content (decompressed into `buf` unless stored as is).
pub fn with_content<T>(
    index: &TextIndex,
    d: u32,
    buf: &mut Vec<u8>,
    f: impl FnOnce(&[u8]) -> T,
) -> CoreResult<T> {
    with_content_cached(index, d, buf, None, f)
}

/// [`with_content`], first from `cache` (a compressed document decoded here is kept there;
/// one stored as is is read in place).
pub fn with_content_cached<T>(
    index: &TextIndex,
    d: u32,
    buf: &mut Vec<u8>,
    cache: Option<&ContentCache>,
    f: impl FnOnce(&[u8]) -> T,
) -> CoreResult<T> {
    if let Some(bytes) = cache.and_then(|c| c.get(&d)) {
        return Ok(f(&bytes));
    }
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let bytes = index.read(d, &mut slot, buf)?;
        if let Some(c) = cache {
            let (seg, local) = index.locate(d);
            let stored_as_is = index
                .segments()
                .get(seg as usize)
                .is_none_or(|seg| seg.doc(local).codec == super::format::CODEC_STORED);
            if !stored_as_is {
                c.insert(&d, bytes);
            }
        }
        Ok(f(bytes))
    })
}

/// Search the index. Results are in document (path) order; limits stop the scan early.
pub fn search(index: &TextIndex, spec: &SearchSpec) -> CoreResult<SearchOutput> {
    search_in(index, spec, None)
}

/// [`search`], reading documents through `cache` (see [`with_content_cached`]).
pub fn search_in(
    index: &TextIndex,
    spec: &SearchSpec,
    cache: Option<&ContentCache>,
) -> CoreResult<SearchOutput> {
    let held = compile_cached(spec)?;
    let compiled: &Compiled = &held;
    let glob: Option<GlobMatcher> = match &spec.path_glob {
        Some(g) if !g.is_empty() => Some(
            globset::GlobBuilder::new(g)
                .literal_separator(false)
                .build()
                .map_err(|e| CoreError::InvalidArgument(format!("bad path glob {g:?}: {e}")))?
                .compile_matcher(),
        ),
        _ => None,
    };
    let mut docs: Vec<u32> = match candidates(index, &compiled.query)? {
        Some(d) => d,
        None => (0..index.n_docs()).collect(),
    };
    if let Some(g) = &glob {
        docs.retain(|&d| g.is_match(index.path(d)));
    }
    // Large documents: every literal the query needs must lie in one block (format 5).
    let blocks = BlockPlan::of(&compiled.query);
    if blocks != BlockPlan::Pass {
        docs.retain(|&d| index.block_filters(d).is_none_or(|f| blocks.passes(f)));
    }
    let mut out = SearchOutput {
        candidates: docs.len(),
        ..SearchOutput::default()
    };
    let mut lines = 0usize;
    // Blocks keep the output in path order and let limits stop the scan between blocks.
    let block = 256;
    let failed = AtomicBool::new(false);
    // A question that needs only each file's first lines stops decoding a file there, when
    // the candidates are many (a common literal: most files match, early); a rare literal's
    // candidates are few, often large and matched late or not at all, and decoding them
    // whole with lz4_flex is faster (measured: 'scheduling while atomic' on the kernel
    // ~15% slower streamed).
    let streaming = compiled.max_len.filter(|_| {
        !spec.count_all
            && spec.max_lines_per_file <= STREAMING_MAX_LINES
            && docs.len() >= STREAMING_MIN_CANDIDATES
    });
    for chunk in docs.chunks(block) {
        let verify_one = |d: u32| {
            if failed.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let cached = streaming.and(cache).and_then(|c| c.get(&d));
            let r = match (streaming, cached) {
                // Decoded already: the whole content decides as its prefixes would.
                (Some(_), Some(bytes)) => Ok(verify_doc_in(
                    d,
                    &bytes,
                    index.block_filters(d),
                    compiled,
                    spec.max_lines_per_file,
                    false,
                )),
                (Some(max_len), None) => verify_streaming(
                    index,
                    d,
                    compiled,
                    max_len,
                    spec.max_lines_per_file,
                    FIRST_STEP,
                ),
                (None, _) => BUFFER.with(|cell| {
                    with_content_cached(index, d, &mut cell.borrow_mut(), cache, |c| {
                        let filters = index.block_filters(d);
                        let (max, all) = (spec.max_lines_per_file, spec.count_all);
                        verify_doc_in(d, c, filters, compiled, max, all)
                    })
                }),
            };
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        };
        let helpers = if chunk.len() <= SMALL_CANDIDATES {
            0
        } else {
            helpers_for(raw_bytes(index, chunk))
        };
        let found = together::map(chunk.len(), helpers, &|i| verify_one(chunk[i]));
        if collect_block(found, spec, &mut out, &mut lines)? {
            break;
        }
    }
    Ok(out)
}

/// How many of the pool's threads help the calling thread verify candidates of `bytes`
/// decoded bytes: none below [`PARALLEL_MIN_BYTES`], else one per [`PARALLEL_MIN_BYTES`] up
/// to the pool's size less one (the calling thread is the other).
fn helpers_for(bytes: u64) -> usize {
    if bytes < PARALLEL_MIN_BYTES {
        return 0;
    }
    let most = rayon::current_num_threads().saturating_sub(1).max(1);
    most.min(usize::try_from(bytes / PARALLEL_MIN_BYTES).unwrap_or(usize::MAX))
}

/// The decoded size of documents `docs`.
fn raw_bytes(index: &TextIndex, docs: &[u32]) -> u64 {
    docs.iter()
        .map(|&d| {
            let (s, local) = index.locate(d);
            index
                .segments()
                .get(s as usize)
                .map_or(0, |seg| u64::from(seg.doc(local).raw_len))
        })
        .sum()
}

/// Append one verified block to the output; true when a limit was reached.
fn collect_block(
    found: Vec<CoreResult<Option<FileHits>>>,
    spec: &SearchSpec,
    out: &mut SearchOutput,
    lines: &mut usize,
) -> CoreResult<bool> {
    for f in found {
        let Some(mut hits) = f? else { continue };
        if out.files.len() >= spec.max_files || *lines >= spec.max_lines {
            out.truncated = true;
            return Ok(true);
        }
        let room = spec.max_lines - *lines;
        if hits.lines.len() > room {
            hits.truncate_lines(room);
            out.truncated = true;
        }
        *lines += hits.lines.len();
        out.files.push(hits);
    }
    let full = out.files.len() >= spec.max_files || *lines >= spec.max_lines;
    // At a limit, more matches may exist further on.
    out.truncated |= full;
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigram::build::{build, BuildInput, BuildOptions};
    use proptest::prelude::*;

    fn scratch_dir(tag: &str) -> std::path::PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("maguyva-search-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    /// An index over `docs` written as files `f000.txt`, ...: (root, index dir, the index).
    fn index_docs(
        tag: &str,
        docs: &[String],
        opts: &BuildOptions,
    ) -> (std::path::PathBuf, std::path::PathBuf, TextIndex) {
        let root = scratch_dir(&format!("{tag}root"));
        let out = scratch_dir(&format!("{tag}out"));
        let inputs: Vec<BuildInput> = docs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let path = format!("f{i:03}.txt");
                std::fs::write(root.join(&path), text).expect("write");
                BuildInput {
                    path,
                    chunks: Vec::new(),
                }
            })
            .collect();
        build(&root, &inputs, &out, opts).expect("build");
        let index = TextIndex::open(&out).expect("open");
        (root, out, index)
    }

    /// The documents of `docs` that contain `needle` (ASCII case folding when insensitive).
    fn brute_force(docs: &[String], needle: &str, case: Case) -> Vec<u32> {
        docs.iter()
            .enumerate()
            .filter(|(_, d)| match case {
                Case::Sensitive => d.contains(needle),
                _ => d.to_lowercase().contains(&needle.to_lowercase()),
            })
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// The documents `search` reports for the literal `needle`.
    fn found_docs(index: &TextIndex, needle: &str, case: Case) -> Vec<u32> {
        search(index, &spec(needle, case))
            .expect("search")
            .files
            .iter()
            .map(|f| f.doc)
            .collect()
    }

    fn spec(pattern: &str, case: Case) -> SearchSpec {
        SearchSpec {
            pattern: pattern.to_string(),
            regex: false,
            case,
            whole_word: false,
            path_glob: None,
            max_lines: usize::MAX,
            max_files: usize::MAX,
            max_lines_per_file: 1,
            count_all: false,
        }
    }

    /// A pattern that can match the empty string is refused with a clear error (its matches
    /// would be whatever non-empty spans it happens to have); one that needs a byte is not.
    #[test]
    fn a_pattern_matching_the_empty_string_is_refused() {
        for pattern in ["x?", "(?:[0-9])?(?:[0-9])?", "a*", "\\b", "^", "(?:ab|)"] {
            let sp = SearchSpec {
                regex: true,
                ..spec(pattern, Case::Sensitive)
            };
            match compile(&sp) {
                Err(CoreError::BadRegex(msg)) => assert!(msg.contains("empty string"), "{msg}"),
                other => panic!("{pattern}: {:?}", other.map(|_| ())),
            }
        }
        for pattern in ["x+", "a?b", "[0-9]{1,3}", "^x$"] {
            let sp = SearchSpec {
                regex: true,
                ..spec(pattern, Case::Sensitive)
            };
            assert!(compile(&sp).is_ok(), "{pattern}");
        }
    }

    /// A prefix that cuts the leftmost match lets a later, shorter alternative match inside
    /// it, on the same line: the prefix must defer, not answer.
    #[test]
    fn prefix_defers_when_a_match_may_continue_past_it() {
        let sp = SearchSpec {
            regex: true,
            ..spec("(?:ab\n[abc]|\n)", Case::Sensitive)
        };
        let compiled = compile(&sp).expect("compile");
        let margin = compiled.max_len.expect("bounded") + LOOK_AHEAD + 1;
        let content = format!("xx ab\nc yy\n{}", "z".repeat(64));
        let whole = verify_doc(0, content.as_bytes(), &compiled, 1, false).expect("match");
        assert_eq!(whole.columns(&whole.lines[0]), &[(3, 5)]);
        for cut in 0..content.len() {
            if let Some(got) = verify_prefix(
                0,
                &content.as_bytes()[..cut],
                None,
                Some(margin),
                &compiled,
                1,
                false,
            ) {
                assert_eq!(got.as_ref(), Some(&whole), "cut {cut}");
                assert!(cut >= 6 + margin, "cut {cut}");
            }
        }
    }

    /// A large document whose literal's trigrams all occur, chained as the follow masks
    /// require, but in blocks far apart: the block filters refute it; the same pieces in one
    /// block (and the literal itself, across a block boundary) are found.
    #[test]
    fn block_filters_refute_trigrams_in_far_blocks() {
        let filler = |n: usize| "xyz \n".repeat(n / 5);
        let far = format!(
            "{}abcdQ bcdeQ{}cdef{}",
            filler(100),
            filler(40_000),
            filler(40_000)
        );
        let near = format!("{}abcdQ bcdeQ cdef{}", filler(100), filler(80_000));
        let cut = super::super::format::BLOCK * 3 - 3;
        let mut straddle = "xyz \n".repeat(cut / 5 + 1);
        straddle.truncate(cut);
        straddle.push_str(&format!("abcdef{}", filler(80_000)));
        let small = format!("{}abcdQ bcdeQ{}cdef", filler(100), filler(30_000));
        let docs = vec![far, near, straddle, small];
        let (root, out, index) = index_docs("b", &docs, &BuildOptions::default());
        assert!(index.block_filters(0).is_some() && index.block_filters(3).is_none());
        let sp = spec("abcdef", Case::Sensitive);
        let compiled = compile(&sp).expect("compile");
        assert_eq!(
            candidates(&index, &compiled.query).expect("candidates"),
            Some(vec![0, 1, 2, 3]),
            "the document-level plan keeps all four"
        );
        let got = search(&index, &sp).expect("search");
        assert_eq!(got.files.iter().map(|f| f.doc).collect::<Vec<_>>(), vec![2]);
        // The far one is refuted by its filters; the near one and the small one (no filters)
        // are verified.
        assert_eq!(got.candidates, 3);
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&out);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// Over a small alphabet (so that trigrams co-occur without the literal, which is
        /// what the follow masks must tell apart), candidates never miss a matching document
        /// and the search finds exactly the documents that contain the literal.
        #[test]
        fn literal_search_equals_brute_force(
            docs in proptest::collection::vec("[abcAB_ \n]{0,80}", 1..24),
            needles in proptest::collection::vec("[abcAB_ ]{3,7}", 1..8),
            zstd in any::<bool>(),
        ) {
            let opts = BuildOptions { zstd_level: if zstd { 1 } else { 0 }, ..BuildOptions::default() };
            let (root, out, index) = index_docs("", &docs, &opts);
            for needle in &needles {
                for case in [Case::Sensitive, Case::Insensitive] {
                    let want = brute_force(&docs, needle, case);
                    let compiled = compile(&spec(needle, case)).expect("compile");
                    let cands = candidates(&index, &compiled.query)
                        .expect("candidates")
                        .unwrap_or_else(|| (0..index.n_docs()).collect());
                    prop_assert!(want.iter().all(|d| cands.contains(d)), "{needle:?} {case:?}");
                    let got = found_docs(&index, needle, case);
                    prop_assert_eq!(&got, &want, "{:?} {:?}", needle, case);
                }
            }
            let _ = std::fs::remove_dir_all(&root);
            let _ = std::fs::remove_dir_all(&out);
        }

        /// A case-insensitive literal found in a lower-cased copy (`Folded`) gives the lines
        /// and columns the regex gives, whole word or not, also in documents holding `ſ` or
        /// the Kelvin sign (which fold to `s` and `k`: the regex decides those documents).
        #[test]
        fn folded_literal_equals_the_regex(
            doc in "[sSkKa\u{17f}\u{212a}\u{e9}_ \n]{0,120}",
            needle in "[skaSKA_ ]{1,4}",
            whole_word in any::<bool>(),
        ) {
            let sp = SearchSpec { whole_word, max_lines_per_file: usize::MAX, ..spec(&needle, Case::Insensitive) };
            let compiled = compile(&sp).expect("compile");
            prop_assert!(compiled.literal.is_some());
            let plain = Compiled { literal: None, ..compile(&sp).expect("compile") };
            let want = verify_doc(0, doc.as_bytes(), &plain, usize::MAX, true);
            let got = verify_doc(0, doc.as_bytes(), &compiled, usize::MAX, true);
            prop_assert_eq!(got, want);
        }

        /// Searching through a decoded-content cache (empty, then filled by the first
        /// search, with a budget that keeps only some documents) answers as reading the
        /// index does, and the cache stays within its budget.
        #[test]
        fn cached_search_equals_uncached(
            docs in proptest::collection::vec("[abcAB_ \n]{0,400}", 1..24),
            needles in proptest::collection::vec("[abcAB_ ]{1,5}", 1..6),
            budget in 0usize..4000,
            per_file in 1usize..4,
        ) {
            // zstd, so that every document is decoded (LZ4 keeps tiny ones as is).
            let opts = BuildOptions { zstd_level: 1, ..BuildOptions::default() };
            let (root, out, index) = index_docs("c", &docs, &opts);
            let cache = ContentCache::new(budget);
            for needle in &needles {
                let sp = SearchSpec { max_lines_per_file: per_file, ..spec(needle, Case::Insensitive) };
                let want = search(&index, &sp).expect("search").files;
                for _ in 0..2 {
                    let got = search_in(&index, &sp, Some(&cache)).expect("cached").files;
                    prop_assert_eq!(&got, &want, "{:?}", needle);
                }
                prop_assert!(cache.size().1 <= budget);
            }
            let _ = std::fs::remove_dir_all(&root);
            let _ = std::fs::remove_dir_all(&out);
        }

        /// Large documents (block filters) with literals planted around block boundaries
        /// (in filler of other bytes, so that the filters are sparse and do refute): the
        /// search finds exactly the documents that contain each literal.
        #[test]
        fn block_filtered_search_equals_brute_force(
            plants in proptest::collection::vec((0usize..4, 1usize..12, 0usize..140, 0usize..3), 1..10),
            needles in proptest::collection::vec("[abcAB_ ]{4,12}", 1..5),
            seed in any::<u64>(),
        ) {
            let mut rng = seed | 1;
            let mut next = || { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; rng };
            let mut docs: Vec<Vec<u8>> = (0..4)
                .map(|i| (0..70_000 + 30_000 * i).map(|_| b"xyz \n0123"[(next() % 9) as usize]).collect())
                .collect();
            for &(doc, block, delta, which) in &plants {
                let needle = needles[which % needles.len()].as_bytes();
                let at = (block * super::super::format::BLOCK + delta).saturating_sub(70);
                let d = &mut docs[doc];
                if at + needle.len() <= d.len() {
                    d[at..at + needle.len()].copy_from_slice(needle);
                }
            }
            let texts: Vec<String> = docs.iter().map(|d| String::from_utf8(d.clone()).expect("ascii")).collect();
            let (root, out, index) = index_docs("p", &texts, &BuildOptions::default());
            for needle in &needles {
                for case in [Case::Sensitive, Case::Insensitive] {
                    let want = brute_force(&texts, needle, case);
                    let got = found_docs(&index, needle, case);
                    prop_assert_eq!(&got, &want, "{:?} {:?}", needle, case);
                }
            }
            let _ = std::fs::remove_dir_all(&root);
            let _ = std::fs::remove_dir_all(&out);
        }

        /// Decoding a document only until its first lines are decided gives exactly what
        /// verifying the whole content gives, for literals and bounded regexes (anchors, word
        /// boundaries, alternations of different lengths, case folding), whole word or not,
        /// on documents many decoding steps long.
        #[test]
        fn streaming_equals_whole_content(
            docs in proptest::collection::vec("[abcAB_ \n]{0,3000}", 1..6),
            needle in "[abcAB ]{1,6}",
            kind in 0usize..6,
            max_lines in 1usize..4,
            whole_word in any::<bool>(),
            insensitive in any::<bool>(),
        ) {
            let (root, out, index) = index_docs("s", &docs, &BuildOptions::default());
            let lit = regex::escape(&needle);
            let (pattern, regex) = match kind {
                0 => (needle.clone(), false),
                1 => (format!("{lit}[ab]?c"), true),
                2 => (format!("(?:{lit}|a b|c)_?$"), true),
                3 => (format!(r"\b{lit}"), true),
                // A later, shorter alternative wins in a prefix that cuts the first one.
                4 => (format!("(?:{lit}\n[abc]|\n)"), true),
                _ => ("a{1,5}(?:B|\n)".to_string(), true),
            };
            let spec = SearchSpec {
                regex,
                whole_word,
                case: if insensitive { Case::Insensitive } else { Case::Sensitive },
                max_lines_per_file: max_lines,
                ..spec(&pattern, Case::Sensitive)
            };
            let compiled = compile(&spec).expect("compile");
            let max_len = compiled.max_len.expect("bounded");
            let mut buf = Vec::new();
            for d in 0..index.n_docs() {
                let whole = with_content(&index, d, &mut buf, |c| {
                    verify_doc(d, c, &compiled, max_lines, false)
                })
                .expect("read");
                // Small steps, so that documents of a few kB take several.
                let streamed = verify_streaming(&index, d, &compiled, max_len, max_lines, 64)
                    .expect("stream");
                prop_assert_eq!(&streamed, &whole, "{:?} doc {}", pattern, d);
                // Every prefix either defers or answers exactly as the whole content does.
                let content = docs[d as usize].as_bytes();
                let margin = max_len + LOOK_AHEAD + 1;
                for cut in 0..content.len() {
                    let part = &content[..cut];
                    if let Some(got) =
                        verify_prefix(d, part, None, Some(margin), &compiled, max_lines, false)
                    {
                        prop_assert_eq!(&got, &whole, "{:?} doc {} cut {}", pattern, d, cut);
                    }
                }
                if let Some(h) = &whole {
                    prop_assert_eq!(h.n_lines as usize, h.lines.len());
                    let cols: usize = h.lines.iter().map(|l| h.columns(l).len()).sum();
                    prop_assert_eq!(h.n_matches as usize, cols);
                }
            }
            let _ = std::fs::remove_dir_all(&root);
            let _ = std::fs::remove_dir_all(&out);
        }
    }
}
