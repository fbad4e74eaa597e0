//! From a regex syntax tree to a trigram query (after Russ Cox's Google Code Search).
//!
//! Every node gets an [`Info`]: either the exact set of (case-folded) strings it can match, or
//! the sets of possible prefixes and suffixes plus a query every match must satisfy. Sets that
//! grow past small limits are given up (replaced by "anything"), which only weakens the query:
//! the plan is always a superset filter, and verification decides.

use std::collections::BTreeSet;

use regex_syntax::hir::{Class, Hir, HirKind};

use super::ngram;

/// A boolean query over trigrams. `All` matches every document, `None` none. `Lit` is a
/// case-folded string of at least three bytes: every one of its trigrams, chained (each
/// trigram's follow mask in the document must allow the next byte of the string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    All,
    None,
    Tri(u32),
    Lit(Vec<u8>),
    And(Vec<Query>),
    Or(Vec<Query>),
}

const MAX_EXACT: usize = 32;
const MAX_SET: usize = 32;
/// Classes up to this many characters are expanded (16: a hex digit, `[0-9a-f]`).
const MAX_CLASS: usize = 16;
const MAX_NODES: usize = 4096;
/// Enumerate a class's members (to fold them) only up to this many code points: `(?i)[0-9a-f]`
/// has 22, 16 once folded.
const MAX_CLASS_ENUM: usize = 64;
/// A window of three single-byte positions in a concatenation becomes an OR of trigrams when
/// it has at most this many (`[0-9a-f][0-9a-f]-`: 256).
const MAX_WINDOW: usize = 256;

impl Query {
    pub fn and(self, other: Query) -> Query {
        match (self, other) {
            (Query::All, q) | (q, Query::All) => q,
            (Query::None, _) | (_, Query::None) => Query::None,
            (Query::And(mut a), Query::And(b)) => {
                a.extend(b);
                Query::And(a)
            }
            (Query::And(mut a), q) | (q, Query::And(mut a)) => {
                a.push(q);
                Query::And(a)
            }
            (a, b) => Query::And(vec![a, b]),
        }
    }

    pub fn or(self, other: Query) -> Query {
        match (self, other) {
            (Query::None, q) | (q, Query::None) => q,
            (Query::All, _) | (_, Query::All) => Query::All,
            (Query::Or(mut a), Query::Or(b)) => {
                a.extend(b);
                Query::Or(a)
            }
            (Query::Or(mut a), q) | (q, Query::Or(mut a)) => {
                a.push(q);
                Query::Or(a)
            }
            (a, b) => Query::Or(vec![a, b]),
        }
    }

    /// The query of one literal (case-folded here): `Lit`, or `All` when shorter than three
    /// bytes.
    pub fn literal(s: &[u8]) -> Query {
        if s.len() < 3 {
            Query::All
        } else {
            Query::Lit(fold(s))
        }
    }

    pub fn nodes(&self) -> usize {
        match self {
            Query::And(v) | Query::Or(v) => 1 + v.iter().map(Query::nodes).sum::<usize>(),
            Query::Lit(s) => s.len().saturating_sub(2),
            _ => 1,
        }
    }
}

type Set = BTreeSet<Vec<u8>>;

#[derive(Debug, Clone)]
struct Info {
    exact: Option<Set>,
    prefix: Set,
    suffix: Set,
    query: Query,
}

fn set_of(s: &[u8]) -> Set {
    std::iter::once(s.to_vec()).collect()
}

fn fold(s: &[u8]) -> Vec<u8> {
    s.iter().map(|&b| ngram::fold(b)).collect()
}

fn any() -> Info {
    Info {
        exact: None,
        prefix: set_of(b""),
        suffix: set_of(b""),
        query: Query::All,
    }
}

fn exact(set: Set) -> Info {
    Info {
        exact: Some(set),
        prefix: Set::new(),
        suffix: Set::new(),
        query: Query::All,
    }
}

fn head(s: &[u8]) -> Vec<u8> {
    s[..s.len().min(2)].to_vec()
}

fn tail(s: &[u8]) -> Vec<u8> {
    s[s.len().saturating_sub(2)..].to_vec()
}

fn cap(set: Set) -> Set {
    if set.len() > MAX_SET {
        set_of(b"")
    } else {
        set
    }
}

/// Turn an exact info into prefix/suffix/query form.
fn inexact(info: Info) -> Info {
    let Some(set) = info.exact else {
        return info;
    };
    let alts = set.iter().fold(Query::None, |q, s| q.or(Query::literal(s)));
    Info {
        exact: None,
        prefix: cap(set.iter().map(|s| head(s)).collect()),
        suffix: cap(set.iter().map(|s| tail(s)).collect()),
        query: info.query.and(alts),
    }
}

fn cross(a: &Set, b: &Set) -> Set {
    let mut out = Set::new();
    for x in a {
        for y in b {
            let mut s = x.clone();
            s.extend_from_slice(y);
            out.insert(s);
        }
    }
    out
}

fn concat(x: Info, y: Info) -> Info {
    if let (Some(a), Some(b)) = (&x.exact, &y.exact) {
        if a.len() * b.len() <= MAX_EXACT {
            let mut info = exact(cross(a, b));
            info.query = x.query.and(y.query);
            return info;
        }
    }
    let x_exact = x.exact.clone();
    let y_exact = y.exact.clone();
    let (x, y) = (inexact(x), inexact(y));
    let junction = if x.suffix.len() * y.prefix.len() <= MAX_SET * MAX_SET / 4 {
        cross(&x.suffix, &y.prefix)
            .iter()
            .fold(Query::None, |q, s| q.or(Query::literal(s)))
    } else {
        Query::All
    };
    let prefix = match &x_exact {
        Some(a) if a.len() * y.prefix.len() <= MAX_SET => {
            cross(a, &y.prefix).iter().map(|s| head(s)).collect()
        }
        Some(_) => set_of(b""),
        None => x.prefix.clone(),
    };
    let suffix = match &y_exact {
        Some(b) if x.suffix.len() * b.len() <= MAX_SET => {
            cross(&x.suffix, b).iter().map(|s| tail(s)).collect()
        }
        Some(_) => set_of(b""),
        None => y.suffix.clone(),
    };
    Info {
        exact: None,
        prefix: cap(prefix),
        suffix: cap(suffix),
        query: x.query.and(y.query).and(junction),
    }
}

/// Concatenate infos left to right, first joining each run of adjacent exact ones (while their
/// cross product stays small): a case-insensitive literal is one class per letter, and after
/// an inexact part (`\w+_error`) a left-to-right fold would turn `_error` into separate
/// junction trigrams; joined, it is one literal, chained by the follow masks.
fn concat_all(infos: impl Iterator<Item = Info>) -> Info {
    let mut acc: Option<Info> = None;
    let mut run: Option<Info> = None;
    for next in infos {
        run = match run {
            Some(r) => match (&r.exact, &next.exact) {
                (Some(a), Some(b)) if a.len() * b.len() <= MAX_EXACT => Some(concat(r, next)),
                _ => {
                    acc = Some(match acc {
                        None => r,
                        Some(a) => concat(a, r),
                    });
                    Some(next)
                }
            },
            None => Some(next),
        };
    }
    let last = match (acc, run) {
        (Some(a), Some(r)) => Some(concat(a, r)),
        (a, r) => a.or(r),
    };
    last.unwrap_or_else(|| exact(set_of(b"")))
}

fn alternate(x: Info, y: Info) -> Info {
    if let (Some(a), Some(b)) = (&x.exact, &y.exact) {
        if a.len() + b.len() <= MAX_EXACT {
            let mut info = exact(a.union(b).cloned().collect());
            info.query = x.query.or(y.query);
            return info;
        }
    }
    let (x, y) = (inexact(x), inexact(y));
    Info {
        exact: None,
        prefix: cap(x.prefix.union(&y.prefix).cloned().collect()),
        suffix: cap(x.suffix.union(&y.suffix).cloned().collect()),
        query: x.query.or(y.query),
    }
}

/// The folded strings a class matches, or `None` when it has more than [`MAX_CLASS`] of them
/// (counted after folding: `(?i)[0-9a-f]` is 16 strings).
fn class_set(c: &Class) -> Option<Set> {
    let mut set = Set::new();
    match c {
        Class::Unicode(u) => {
            let total: u64 = u
                .ranges()
                .iter()
                .map(|r| u64::from(r.end()) - u64::from(r.start()) + 1)
                .sum();
            if total as usize > MAX_CLASS_ENUM {
                return None;
            }
            for r in u.ranges() {
                for ch in r.start()..=r.end() {
                    let mut buf = [0u8; 4];
                    set.insert(fold(ch.encode_utf8(&mut buf).as_bytes()));
                }
            }
        }
        Class::Bytes(b) => {
            let total: usize = b
                .ranges()
                .iter()
                .map(|r| usize::from(r.end()) - usize::from(r.start()) + 1)
                .sum();
            if total > MAX_CLASS_ENUM {
                return None;
            }
            for r in b.ranges() {
                for byte in r.start()..=r.end() {
                    set.insert(vec![ngram::fold(byte)]);
                }
            }
        }
    }
    (set.len() <= MAX_CLASS).then_some(set)
}

fn class(c: &Class) -> Info {
    class_set(c).map_or_else(any, exact)
}

/// One position of a concatenation seen as a sequence of bytes: the folded bytes it may hold,
/// or `Gap` (something of unknown length or a non-byte class: no window spans it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pos {
    Bytes(Vec<u8>),
    Gap,
}

/// The single-byte set of `hir` when it matches exactly one byte from a small class.
fn one_byte(hir: &Hir) -> Option<Vec<u8>> {
    match hir.kind() {
        HirKind::Literal(lit) if lit.0.len() == 1 => Some(vec![ngram::fold(lit.0[0])]),
        HirKind::Class(c) => {
            let set = class_set(c)?;
            set.iter()
                .map(|s| (s.len() == 1).then(|| s[0]))
                .collect::<Option<Vec<u8>>>()
        }
        HirKind::Capture(cap) => one_byte(&cap.sub),
        _ => None,
    }
}

/// Append the positions of `hir` to `out` (see [`Pos`]). Zero-width assertions add nothing
/// (the bytes around them are still adjacent); `x{n,m}` of a one-byte `x` is `n` copies when
/// `n == m <= 4`, else its first and last `min(n, 2)` copies around a gap (every match starts
/// and ends with them).
fn positions(hir: &Hir, out: &mut Vec<Pos>) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => {
            out.extend(lit.0.iter().map(|&b| Pos::Bytes(vec![ngram::fold(b)])))
        }
        HirKind::Class(_) => out.push(one_byte(hir).map_or(Pos::Gap, Pos::Bytes)),
        HirKind::Capture(cap) => positions(&cap.sub, out),
        HirKind::Concat(subs) => subs.iter().for_each(|s| positions(s, out)),
        HirKind::Repetition(rep) => match one_byte(&rep.sub) {
            Some(set) if rep.max == Some(rep.min) && rep.min <= 4 => {
                out.extend((0..rep.min).map(|_| Pos::Bytes(set.clone())));
            }
            Some(set) if rep.min >= 1 => {
                let edge = rep.min.min(2);
                out.extend((0..edge).map(|_| Pos::Bytes(set.clone())));
                out.push(Pos::Gap);
                out.extend((0..edge).map(|_| Pos::Bytes(set.clone())));
            }
            _ => out.push(Pos::Gap),
        },
        HirKind::Alternation(_) => out.push(Pos::Gap),
    }
}

/// Trigrams across runs of small classes (codesearch's cross products, bounded): every window
/// of three byte positions with more than [`MAX_EXACT`] and at most [`MAX_WINDOW`] folded
/// trigrams becomes an OR of them, and the windows are ANDed. `[0-9a-f]{8}-[0-9a-f]{4}`: the
/// exact sets give up inside the hex runs (16^2 > 32 strings), which leaves one junction
/// (`h-h`); the windows add `hh-` and `-hh`. Smaller windows are left to the exact sets
/// (which see whole literals, with the follow-mask chain), literal runs to `Lit`.
fn windows(subs: &[Hir]) -> Query {
    let mut pos = Vec::new();
    for s in subs {
        positions(s, &mut pos);
    }
    let mut q = Query::All;
    for w in pos.windows(3) {
        let (Pos::Bytes(a), Pos::Bytes(b), Pos::Bytes(c)) = (&w[0], &w[1], &w[2]) else {
            continue;
        };
        let n = a.len() * b.len() * c.len();
        if n <= MAX_EXACT || n > MAX_WINDOW {
            continue;
        }
        let mut alts: Set = Set::new();
        for &x in a {
            for &y in b {
                for &z in c {
                    alts.insert(vec![x, y, z]);
                }
            }
        }
        q = q.and(
            alts.iter()
                .fold(Query::None, |q, s| q.or(Query::literal(s))),
        );
    }
    q
}

/// `q` with identical AND operands dropped (a window may repeat a junction's OR).
fn dedup(q: Query) -> Query {
    match q {
        Query::And(parts) => {
            let mut out: Vec<Query> = Vec::with_capacity(parts.len());
            for p in parts.into_iter().map(dedup) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            if out.len() == 1 {
                out.pop().unwrap_or(Query::All)
            } else {
                Query::And(out)
            }
        }
        Query::Or(parts) => Query::Or(parts.into_iter().map(dedup).collect()),
        q => q,
    }
}

fn info(hir: &Hir) -> Info {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => exact(set_of(b"")),
        HirKind::Literal(lit) => exact(set_of(&fold(&lit.0))),
        HirKind::Class(c) => class(c),
        HirKind::Capture(cap) => info(&cap.sub),
        HirKind::Repetition(rep) => {
            let sub = info(&rep.sub);
            match (rep.min, rep.max) {
                (1, Some(1)) => sub,
                (0, Some(1)) => match sub.exact {
                    Some(mut set) if set.len() < MAX_EXACT => {
                        set.insert(Vec::new());
                        exact(set)
                    }
                    _ => any(),
                },
                (0, _) => any(),
                // At least one copy: every match starts and ends with a match of `sub`.
                _ => {
                    let sub = inexact(sub);
                    Info { exact: None, ..sub }
                }
            }
        }
        HirKind::Concat(subs) => {
            let mut info = concat_all(subs.iter().map(info));
            info.query = info.query.and(windows(subs));
            info
        }
        HirKind::Alternation(subs) => subs
            .iter()
            .map(info)
            .reduce(alternate)
            .unwrap_or_else(|| exact(Set::new())),
    }
}

/// The trigram query every match of `hir` satisfies (in case-folded trigram space).
pub fn plan(hir: &Hir) -> Query {
    let q = dedup(inexact(info(hir)).query);
    if q.nodes() > MAX_NODES {
        Query::All
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pattern: &str) -> Query {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .expect("valid pattern");
        plan(&hir)
    }

    fn tri(s: &str) -> Query {
        Query::Lit(s.as_bytes().to_vec())
    }

    #[test]
    fn literal_is_one_chained_node() {
        assert_eq!(q("abcd"), tri("abcd"));
        assert_eq!(q("ABcd"), tri("abcd"));
        assert_eq!(q("ab"), Query::All);
    }

    #[test]
    fn case_insensitive_costs_nothing() {
        assert_eq!(q("(?i)abcd"), q("abcd"));
    }

    #[test]
    fn alternation_becomes_or() {
        assert_eq!(q("abc|xyz"), Query::Or(vec![tri("abc"), tri("xyz")]));
    }

    #[test]
    fn star_splits_but_keeps_both_sides() {
        assert_eq!(q("abc.*xyz"), Query::And(vec![tri("abc"), tri("xyz")]));
    }

    #[test]
    fn small_class_expands() {
        assert_eq!(q("ab[cd]"), Query::Or(vec![tri("abc"), tri("abd")]));
    }

    fn ors(q: &Query) -> Vec<usize> {
        match q {
            Query::And(v) => v.iter().flat_map(ors).collect(),
            Query::Or(v) => vec![v.len()],
            _ => vec![],
        }
    }

    #[test]
    fn hex_digit_class_expands() {
        // 16 characters: the trigrams across the dash (`hh-`, `h-h`, `-hh`, 256 each) are a
        // filter, not "everything"; case-insensitive folds to the same 16.
        let plan = q("[0-9a-f]{8}-[0-9a-f]{4}");
        assert_eq!(ors(&plan), vec![256, 256, 256], "{plan:?}");
        assert_eq!(q("(?i)[0-9a-f]{8}-[0-9a-f]{4}"), plan);
        assert_eq!(q("[0-9a-f]{2,}-[0-9a-f]{2,9}"), plan);
        // One hex digit before the dash may be all there is: no `hh-`.
        assert_eq!(ors(&q("[0-9a-f]+-[0-9a-f]{2,}")), vec![256, 256]);
        assert_eq!(q("[a-z]-[a-z]"), Query::All);
    }

    #[test]
    fn windows_across_captures_and_fixed_repeats() {
        // `x[0-9]{2}y` keeps its exact strings (100 > 32: the windows `x00`.. and `00y`..).
        let plan = q("x([0-9]{2})y");
        assert_eq!(ors(&plan), vec![100, 100], "{plan:?}");
        // A gap (an unbounded class) cuts the windows.
        assert_eq!(q("[0-9]{2}\\w+[0-9]{2}"), Query::All);
    }

    /// Whether the folded `doc` satisfies `q`, reading `Lit(s)` as "contains `s`": the
    /// strongest reading the planner promises, so a dropped alternative shows.
    fn holds(q: &Query, doc: &[u8]) -> bool {
        match q {
            Query::All => true,
            Query::None => false,
            Query::Tri(t) => doc.windows(3).any(|w| ngram::pack(w[0], w[1], w[2]) == *t),
            Query::Lit(s) => doc.windows(s.len()).any(|w| w == s.as_slice()),
            Query::And(v) => v.iter().all(|p| holds(p, doc)),
            Query::Or(v) => v.iter().any(|p| holds(p, doc)),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Every string a pattern matches satisfies its plan (soundness of the class
        /// expansion and the windows, including every alternative of every window).
        #[test]
        fn plan_holds_for_matching_text(
            which in 0usize..PATTERNS.len(),
            seed in "[0-9a-fA-F\\-x_ ]{0,40}",
        ) {
            let pattern = PATTERNS[which];
            let gen = proptest::string::string_regex(GENERATORS[which]).expect("generator");
            let mut runner = proptest::test_runner::TestRunner::deterministic();
            let re = regex::bytes::Regex::new(pattern).expect("pattern");
            let plan = q(pattern);
            for _ in 0..32 {
                let text = proptest::strategy::ValueTree::current(
                    &proptest::strategy::Strategy::new_tree(&gen, &mut runner).expect("tree"),
                );
                let doc = format!("{seed}{text}{seed}");
                proptest::prop_assert!(re.is_match(doc.as_bytes()), "{doc:?}");
                proptest::prop_assert!(holds(&plan, &fold(doc.as_bytes())), "{pattern} {doc:?}");
            }
        }
    }

    const PATTERNS: [&str; 5] = [
        "[0-9a-f]{8}-[0-9a-f]{4}",
        "(?i)[0-9a-f]{8}-[0-9a-f]{4}",
        "x([0-9]{2})y",
        "[0-9a-f]+-[0-9a-f]{2,}",
        "(?i)[ab][0-9a-f]{2}[:-][0-9]k",
    ];
    /// Strings each pattern matches (ASCII only, so that the generator stays simple).
    const GENERATORS: [&str; 5] = [
        "[0-9a-f]{8}-[0-9a-f]{4}",
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}",
        "x[0-9]{2}y",
        "[0-9a-f]{1,6}-[0-9a-f]{2,6}",
        "[abAB][0-9a-fA-F]{2}[:-][0-9][kK]",
    ];

    #[test]
    fn case_insensitive_literal_after_a_gap_stays_one_literal() {
        // `\\w+` is inexact; the classes of `(?i)_error` after it still join into one literal.
        assert_eq!(q(r"(?i)\w+_error"), tri("_error"));
        assert_eq!(q(r"(?i)def\s+x_error"), q(r"def\s+x_error"));
    }

    #[test]
    fn dot_star_is_all() {
        assert_eq!(q(".*"), Query::All);
        assert_eq!(q(r"\w+"), Query::All);
    }

    #[test]
    fn empty_class_matches_nothing() {
        let hir = Hir::class(Class::Bytes(regex_syntax::hir::ClassBytes::empty()));
        assert_eq!(plan(&hir), Query::None);
    }
}
