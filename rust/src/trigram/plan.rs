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

fn class(c: &Class) -> Info {
    let mut set = Set::new();
    match c {
        Class::Unicode(u) => {
            let total: u64 = u
                .ranges()
                .iter()
                .map(|r| u64::from(r.end()) - u64::from(r.start()) + 1)
                .sum();
            if total as usize > MAX_CLASS {
                return any();
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
            if total > MAX_CLASS {
                return any();
            }
            for r in b.ranges() {
                for byte in r.start()..=r.end() {
                    set.insert(vec![ngram::fold(byte)]);
                }
            }
        }
    }
    exact(set)
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
        HirKind::Concat(subs) => subs
            .iter()
            .map(info)
            .reduce(concat)
            .unwrap_or_else(|| exact(set_of(b""))),
        HirKind::Alternation(subs) => subs
            .iter()
            .map(info)
            .reduce(alternate)
            .unwrap_or_else(|| exact(Set::new())),
    }
}

/// The trigram query every match of `hir` satisfies (in case-folded trigram space).
pub fn plan(hir: &Hir) -> Query {
    let q = inexact(info(hir)).query;
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

    #[test]
    fn hex_digit_class_expands() {
        // 16 characters: the trigrams across the dash are a filter, not "everything".
        let plan = q("[0-9a-f]{8}-[0-9a-f]{4}");
        assert!(matches!(&plan, Query::Or(v) if v.len() == 256), "{plan:?}");
        assert_eq!(q("[a-z]-[a-z]"), Query::All);
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
