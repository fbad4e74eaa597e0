//! Literal and regex search: plan candidates from the trigram index, verify each candidate's
//! stored content with the `regex` crate (linear time), report lines and byte columns.

use std::sync::atomic::{AtomicBool, Ordering};

use globset::GlobMatcher;
use rayon::prelude::*;
use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::ast;

use super::index::TextIndex;
use super::plan::{self, Query};
use super::postings;
use crate::error::{CoreError, CoreResult};

/// Limits on what a pattern may compile to (the `regex` crate refuses beyond them).
pub const REGEX_SIZE_LIMIT: usize = 4 << 20;
pub const REGEX_NEST_LIMIT: u32 = 64;
/// The longest line text returned; columns still refer to the full line.
pub const MAX_LINE_TEXT: usize = 1024;
/// Below this many candidates, planning stops and verification runs on one thread.
const SMALL_CANDIDATES: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// At most this many matching lines reported per file (the count stays exact).
    pub max_lines_per_file: usize,
}

/// One matching line: 1-based number, text (capped), byte columns of each match in the line.
#[derive(Debug, Clone)]
pub struct LineHit {
    pub line: u32,
    pub text: String,
    pub columns: Vec<(u32, u32)>,
}

/// All reported matches in one document.
#[derive(Debug, Clone)]
pub struct FileHits {
    pub doc: u32,
    pub lines: Vec<LineHit>,
    /// Matches in the file (all of them, even past `max_lines_per_file`).
    pub n_matches: u32,
    pub n_lines: u32,
}

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
    Ok(Compiled {
        regex,
        query: plan::plan(&hir),
        whole_word: spec.whole_word,
    })
}

/// Sorted candidate documents, or `None` for "every document".
pub fn candidates(index: &TextIndex, q: &Query) -> CoreResult<Option<Vec<u32>>> {
    Ok(match q {
        Query::All => None,
        Query::None => Some(Vec::new()),
        Query::Tri(t) => Some(index.postings(*t)?),
        Query::And(parts) => {
            // Cheapest (rarest) trigrams first; stop as soon as the set is empty.
            let mut order: Vec<(u64, &Query)> = parts
                .iter()
                .map(|p| match p {
                    Query::Tri(t) => (u64::from(index.doc_count(*t)), p),
                    _ => (u64::MAX, p),
                })
                .collect();
            order.sort_by_key(|(c, _)| *c);
            let mut acc: Option<Vec<u32>> = None;
            for (_, p) in order {
                if let Some(docs) = candidates(index, p)? {
                    acc = Some(match acc {
                        None => docs,
                        Some(a) => postings::intersect(&a, &docs),
                    });
                    // A handful of candidates is cheaper to verify than to decode the
                    // remaining (commoner) posting lists: verification is exact anyway.
                    if acc.as_ref().is_some_and(|a| a.len() <= SMALL_CANDIDATES) {
                        break;
                    }
                }
            }
            acc
        }
        Query::Or(parts) => {
            let mut acc = Vec::new();
            for p in parts {
                match candidates(index, p)? {
                    None => return Ok(None),
                    Some(docs) => acc = postings::union(&acc, &docs),
                }
            }
            Some(acc)
        }
    })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Matches of `re` in `hay` as byte ranges; with `whole_word`, only those not glued to a
/// word character on either side (a rejected match is retried one byte later).
pub fn find_matches(re: &Regex, hay: &[u8], whole_word: bool, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut at = 0usize;
    while at <= hay.len() {
        let Some(m) = re.find_at(hay, at) else { break };
        let (s, e) = (m.start(), m.end());
        let ok = !whole_word
            || ((s == 0 || !is_word_byte(hay[s - 1])) && (e == hay.len() || !is_word_byte(hay[e])));
        if ok && e > s {
            out.push((s, e));
            at = e;
        } else {
            at = s + 1;
        }
    }
}

/// Verify one document; `None` when nothing matches.
pub fn verify_doc(
    doc: u32,
    content: &[u8],
    compiled: &Compiled,
    max_lines_per_file: usize,
    scratch: &mut Vec<(usize, usize)>,
) -> Option<FileHits> {
    find_matches(&compiled.regex, content, compiled.whole_word, scratch);
    if scratch.is_empty() {
        return None;
    }
    let mut hits = FileHits {
        doc,
        lines: Vec::new(),
        n_matches: scratch.len() as u32,
        n_lines: 0,
    };
    let mut line_no: u32 = 1;
    let mut counted_to = 0usize;
    let mut cur_line_start = usize::MAX;
    for &(s, e) in scratch.iter() {
        line_no += memchr::memchr_iter(b'\n', &content[counted_to..s]).count() as u32;
        counted_to = s;
        let ls = memchr::memrchr(b'\n', &content[..s]).map_or(0, |p| p + 1);
        let le = memchr::memchr(b'\n', &content[s..]).map_or(content.len(), |p| s + p);
        let (cs, ce) = ((s - ls) as u32, (e.min(le) - ls) as u32);
        if ls == cur_line_start {
            if let Some(last) = hits.lines.last_mut() {
                last.columns.push((cs, ce));
            }
            continue;
        }
        cur_line_start = ls;
        hits.n_lines += 1;
        if hits.lines.len() < max_lines_per_file {
            let mut end = le.min(ls + MAX_LINE_TEXT);
            let line = &content[ls..end];
            if line.ends_with(b"\r") {
                end -= 1;
            }
            hits.lines.push(LineHit {
                line: line_no,
                text: String::from_utf8_lossy(&content[ls..end]).into_owned(),
                columns: vec![(cs, ce)],
            });
        }
    }
    Some(hits)
}

thread_local! {
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Run `f` on document `d`'s content with this thread's decompressor and buffer.
pub fn with_content<T>(
    index: &TextIndex,
    d: u32,
    buf: &mut Vec<u8>,
    f: impl FnOnce(&[u8]) -> T,
) -> CoreResult<T> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                zstd::bulk::Decompressor::new().map_err(|source| CoreError::Io {
                    path: "zstd".into(),
                    source,
                })?,
            );
        }
        match slot.as_mut() {
            Some(dec) => index.content(d, dec, buf),
            None => Ok(()),
        }
    })?;
    Ok(f(buf))
}

/// Search the index. Results are in document (path) order; limits stop the scan early.
pub fn search(index: &TextIndex, spec: &SearchSpec) -> CoreResult<SearchOutput> {
    let compiled = compile(spec)?;
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
    let mut out = SearchOutput {
        candidates: docs.len(),
        ..SearchOutput::default()
    };
    let mut lines = 0usize;
    // Blocks keep the output in path order and let limits stop the scan between blocks.
    let block = 256;
    let failed = AtomicBool::new(false);
    for chunk in docs.chunks(block) {
        let verify_one = |(buf, scratch): &mut (Vec<u8>, Vec<(usize, usize)>), d: u32| {
            if failed.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let r = with_content(index, d, buf, |c| {
                verify_doc(d, c, &compiled, spec.max_lines_per_file, scratch)
            });
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        };
        if chunk.len() <= SMALL_CANDIDATES {
            let mut state = (Vec::new(), Vec::new());
            let found: Vec<CoreResult<Option<FileHits>>> =
                chunk.iter().map(|&d| verify_one(&mut state, d)).collect();
            if collect_block(found, spec, &mut out, &mut lines)? {
                break;
            }
            continue;
        }
        let found: Vec<CoreResult<Option<FileHits>>> = chunk
            .par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |state, &d| verify_one(state, d),
            )
            .collect();
        if collect_block(found, spec, &mut out, &mut lines)? {
            break;
        }
    }
    Ok(out)
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
            hits.lines.truncate(room);
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
