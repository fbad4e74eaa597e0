//! The graph writer's edge merge and adjacency (`maguyva.graph.build.merge_rows`, `_csr`,
//! `_conf_rank`): the same results as the numpy code, bit for bit, with one radix sort of
//! (key, row) pairs and linear passes instead of whole-array numpy passes. All run with the
//! GIL released.
//!
//! A kernel returns `None` for inputs outside the domain where numpy's result is defined by
//! the docstrings alone (a negative node number or position, an edge kind above 7, a NaN or
//! negative-zero confidence, a hint that is not a permutation of the rows): the caller then
//! runs the numpy code, so `merge_rows` stays what it was for any input.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Bits needed to write `v` (Python's `int.bit_length` for a non-negative value).
fn bit_length(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Stable LSD radix sort of (key, row) pairs by the low `bits` bits of the key, 8 bits a
/// pass (a pass whose byte is the same in every key is skipped); `other` is scratch.
fn radix_sort(items: &mut Vec<(u64, u32)>, other: &mut Vec<(u64, u32)>, bits: u32) {
    let n = items.len();
    if n < 2 {
        return;
    }
    let passes = bits.div_ceil(8) as usize;
    let mut counts = vec![[0usize; 256]; passes];
    for &(k, _) in items.iter() {
        for (p, c) in counts.iter_mut().enumerate() {
            c[((k >> (8 * p)) & 0xFF) as usize] += 1;
        }
    }
    other.clear();
    other.resize(n, (0, 0));
    for (p, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue; // one byte value: this pass keeps the order
        }
        let mut at = [0usize; 256];
        let mut sum = 0;
        for (a, &x) in at.iter_mut().zip(c.iter()) {
            *a = sum;
            sum += x;
        }
        let shift = 8 * p;
        for &item in items.iter() {
            let b = ((item.0 >> shift) & 0xFF) as usize;
            other[at[b]] = item;
            at[b] += 1;
        }
        std::mem::swap(items, other);
    }
}

/// Stable sort of (key, row) pairs by key. A patch's hint gives them sorted but for a short
/// tail (the changed files' rows): the tail is sorted and merged in from the back (ties: the
/// prefix first, as it comes first); otherwise the radix sort.
fn stable_sort(items: &mut Vec<(u64, u32)>, other: &mut Vec<(u64, u32)>, bits: u32) {
    let n = items.len();
    let prefix = 1 + items.windows(2).take_while(|w| w[0].0 <= w[1].0).count();
    if prefix >= n {
        return;
    }
    if n - prefix > n / 16 {
        radix_sort(items, other, bits);
        *other = Vec::new(); // rarely needed again (a patch's hint is good): not kept
        return;
    }
    let mut tail = items[prefix..].to_vec();
    tail.sort_by_key(|p| p.0); // stable
    let (mut i, mut t, mut w) = (prefix, tail.len(), n);
    while t > 0 {
        w -= 1;
        if i > 0 && items[i - 1].0 > tail[t - 1].0 {
            i -= 1;
            items[w] = items[i];
        } else {
            t -= 1;
            items[w] = tail[t];
        }
    }
}

/// An empty vector with room for `n` items whose pages are mapped in one system call (Linux
/// `MADV_POPULATE_WRITE`): the outputs are fresh memory each call, and a fault a page (~10k
/// pages for the 10k-file tree's merge) costs more than the work in a virtual machine.
fn populated<T>(n: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(n);
    let bytes = n * std::mem::size_of::<T>();
    if bytes >= 1 << 20 {
        prefault(v.as_ptr() as usize, bytes);
    }
    v
}

#[cfg(target_os = "linux")]
fn prefault(addr: usize, len: usize) {
    const PAGE: usize = 4096;
    let start = addr & !(PAGE - 1);
    let end = (addr + len + PAGE - 1) & !(PAGE - 1);
    // SAFETY: MADV_POPULATE_WRITE only maps the pages of the range (as writes would, without
    // writing: contents unchanged); the range is the allocation's, rounded out to its pages,
    // which are mapped with it. Errors (an older kernel, another page size) are ignored: the
    // pages are then mapped on first touch as usual.
    unsafe {
        libc::madvise(
            start as *mut libc::c_void,
            end - start,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn prefault(_addr: usize, _len: usize) {}

/// Scratch vectors kept between calls: the writer merges ~1M rows per update, and fresh
/// pages for its temporaries cost more than the work (a page fault each 4 KiB; ~25k faults,
/// ~30-50 ms of system time a call on the 10k-file tree). The price: they stay allocated,
/// ~100 bytes a row (~110 MB for that tree's 1.1M rows).
#[derive(Default)]
struct Scratch {
    rows: Vec<Row>,
    hinted: Vec<Row>,
    items: Vec<(u64, u32)>,
    other: Vec<(u64, u32)>,
    groups: Vec<Group>,
    by_edge: Vec<Group>,
    first: Vec<u32>,
    lines_g: Vec<i32>,
    slot: Vec<u32>,
    group: Vec<u32>,
}

static SCRATCH: std::sync::Mutex<Option<Scratch>> = std::sync::Mutex::new(None);

/// `merge_rows`' results, edges in order of first appearance.
#[derive(Debug, Default, PartialEq)]
pub struct Merged {
    pub src: Vec<i32>,
    pub dst: Vec<i32>,
    pub kind: Vec<u8>,
    pub conf: Vec<f32>,
    pub lptr: Vec<i64>,
    pub lines: Vec<i32>,
    /// The rows sorted by (dst, src, kind, line); ties by the hint's order, else by row.
    pub order: Vec<i64>,
    /// Each group's (edge in key order) number in first-appearance order.
    pub edge_of_group: Vec<i64>,
}

/// The edge rows merged by (src, dst, kind) as `build.merge_rows` merges them; `Ok(None)`
/// outside the kernel's domain (see the module doc); `Err` for columns of unequal length or
/// a `pos` giving two edges the same first position (numpy's result is undefined there).
pub fn merge(
    src: &[i32],
    dst: &[i32],
    kind: &[u8],
    conf_rows: &[f64],
    line_rows: &[i32],
    pos: Option<&[i64]>,
    hint: Option<&[i64]>,
) -> Result<Option<Merged>, String> {
    let big = src.len();
    if [dst.len(), kind.len(), conf_rows.len(), line_rows.len()]
        .iter()
        .any(|&l| l != big)
        || pos.is_some_and(|p| p.len() != big)
    {
        return Err("the row columns differ in length".into());
    }
    if big == 0 {
        return Ok(Some(Merged {
            lptr: vec![0],
            ..Merged::default()
        }));
    }
    // the domain, in branch-free folds (vectorized)
    let (mut any_neg, mut top, mut kinds) = (0i32, 0i32, 0u8);
    for ((&s, &d), &k) in src.iter().zip(dst).zip(kind) {
        any_neg |= s | d;
        top = top.max(s).max(d);
        kinds |= k;
    }
    let bad_conf = conf_rows.iter().fold(false, |bad, &c| {
        let f = c as f32;
        bad | f.is_nan() | (f.to_bits() == 0x8000_0000)
    });
    let bad_pos = pos.is_some_and(|p| p.iter().fold(0i64, |a, &v| a | v) < 0);
    let wide_pos = pos.is_some_and(|p| p.iter().any(|&v| v > i64::from(u32::MAX)));
    if big > u32::MAX as usize || any_neg < 0 || kinds > 7 || bad_conf || bad_pos {
        return Ok(None);
    }
    if let Some(h) = hint {
        if h.len() != big || !is_permutation(h) {
            return Ok(None);
        }
    }
    let nb = bit_length(top as u64).max(1);
    if 2 * nb + 3 > 63 {
        return Ok(None); // numpy's int64 key would overflow
    }
    let (lo, hi) = line_rows
        .iter()
        .fold((i32::MAX, i32::MIN), |(a, b), &l| (a.min(l), b.max(l)));
    let (lo, hi) = (i64::from(lo), i64::from(hi));
    let lb = bit_length((hi - lo) as u64).max(1);
    let packed = 2 * nb + 3 + lb <= 63;
    // scratch from the last call (or fresh when another call holds it), given back after
    let mut guard = SCRATCH.try_lock().ok();
    let mut sc = guard.as_mut().and_then(|g| g.take()).unwrap_or_default();
    let result = merge_with(
        &mut sc,
        (src, dst, kind, conf_rows, line_rows),
        Positions {
            given: pos,
            // only the positions' order matters: wide ones are replaced by their ranks
            ranked: if wide_pos { pos.map(dense_ranks) } else { None },
        },
        hint,
        (nb, lo, lb, packed),
    );
    if let Some(g) = guard.as_mut() {
        **g = Some(sc);
    }
    result
}

/// The row columns: src, dst, kind, conf, line.
type Columns<'a> = (&'a [i32], &'a [i32], &'a [u8], &'a [f64], &'a [i32]);

/// `merge` after the checks, with the scratch vectors `sc` and the key's layout: `nb` bits a
/// node, lines from `lo` in `lb` bits, (key, line) `packed` in one u64 or not.
fn merge_with(
    sc: &mut Scratch,
    (src, dst, kind, conf_rows, line_rows): Columns<'_>,
    pos: Positions<'_>,
    hint: Option<&[i64]>,
    (nb, lo, lb, packed): (u32, i64, u32, bool),
) -> Result<Option<Merged>, String> {
    let big = src.len();
    let key_of =
        |r: usize| -> u64 { ((((dst[r] as u64) << nb) | src[r] as u64) << 3) | u64::from(kind[r]) };
    // each row's sort value (packed: (key, line) in one u64; else the key), position and
    // float32 confidence together: one cache line a row for the gathers that follow
    sc.rows.clear();
    sc.rows.extend((0..big).map(|r| Row {
        c: if packed {
            (key_of(r) << lb) | (i64::from(line_rows[r]) - lo) as u64
        } else {
            key_of(r)
        },
        pos: pos.at(r),
        conf: conf_rows[r] as f32,
    }));
    let mask = (1u64 << lb) - 1;
    let mut order: Vec<i64> = populated(big);
    let (groups, first, lines_g) = (&mut sc.groups, &mut sc.first, &mut sc.lines_g);
    if packed {
        // the rows in the hint's order (one gather), then a stable sort of (value, index
        // there): the sorted rows read that copy nearly in order when the hint is good
        let rows = match hint {
            Some(h) => {
                sc.hinted.clear();
                sc.hinted.extend(h.iter().map(|&r| sc.rows[r as usize]));
                &sc.hinted
            }
            None => &sc.rows,
        };
        sc.items.clear();
        sc.items
            .extend(rows.iter().enumerate().map(|(i, row)| (row.c, i as u32)));
        stable_sort(&mut sc.items, &mut sc.other, 2 * nb + 3 + lb);
        let items = &sc.items;
        order.extend(items.iter().map(|p| match hint {
            Some(h) => h[p.1 as usize],
            None => i64::from(p.1),
        }));
        group_pass(big, rows, (groups, first, lines_g), |j| {
            let (c, i) = items[j];
            (c >> lb, ((c & mask) as i64 + lo) as i32, i)
        });
    } else {
        // numpy's lexsort: (key, line), ties by row
        let mut items: Vec<(u64, i32, u32)> = sc
            .rows
            .iter()
            .enumerate()
            .map(|(r, row)| (row.c, line_rows[r], r as u32))
            .collect();
        items.sort_unstable();
        order.extend(items.iter().map(|p| i64::from(p.2)));
        group_pass(big, &sc.rows, (groups, first, lines_g), |j| items[j]);
    }
    let m = groups.len();
    // each group's rank by first position: the edges in first-appearance order
    let group = &mut sc.group;
    group.clear();
    group.resize(m, 0);
    let mut edge_of_group: Vec<i64> = populated(m);
    edge_of_group.resize(m, 0);
    let max_first = first.iter().copied().max().unwrap_or(0) as usize;
    let dup = || "pos gives two edges the same first position".to_string();
    if max_first <= 4 * big {
        let slot = &mut sc.slot;
        slot.clear();
        slot.resize(max_first + 1, u32::MAX);
        for (g, &f) in first.iter().enumerate() {
            let s = &mut slot[f as usize];
            if *s != u32::MAX {
                return Err(dup());
            }
            *s = g as u32;
        }
        for (e, &g) in slot.iter().filter(|&&g| g != u32::MAX).enumerate() {
            group[e] = g;
            edge_of_group[g as usize] = e as i64;
        }
    } else {
        let mut by: Vec<(u32, u32)> = first
            .iter()
            .enumerate()
            .map(|(g, &f)| (f, g as u32))
            .collect();
        by.sort_unstable();
        if by.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(dup());
        }
        for (e, &(_, g)) in by.iter().enumerate() {
            group[e] = g;
            edge_of_group[g as usize] = e as i64;
        }
    }
    // the edges, most with one line
    let node_mask = (1u64 << nb) - 1;
    let mut out = Merged {
        src: populated(m),
        dst: populated(m),
        kind: populated(m),
        conf: populated(m),
        lptr: populated(m + 1),
        lines: populated(lines_g.len()),
        order,
        edge_of_group,
    };
    // one tight gather of the groups in edge order (many loads in flight), then sequential
    // passes over that copy
    let ge = &mut sc.by_edge;
    ge.clear();
    ge.extend(group.iter().map(|&g| groups[g as usize]));
    out.kind.extend(ge.iter().map(|gr| (gr.key & 7) as u8));
    out.src
        .extend(ge.iter().map(|gr| ((gr.key >> 3) & node_mask) as i32));
    out.dst
        .extend(ge.iter().map(|gr| (gr.key >> (3 + nb)) as i32));
    out.conf.extend(ge.iter().map(|gr| gr.conf));
    out.lptr.push(0);
    let mut total = 0i64;
    for gr in ge.iter() {
        total += i64::from(gr.nlines);
        out.lptr.push(total);
        if gr.nlines == 1 {
            out.lines.push(gr.line0);
        } else {
            let at = gr.lstart as usize;
            out.lines
                .extend_from_slice(&lines_g[at..at + gr.nlines as usize]);
        }
    }
    Ok(Some(out))
}

/// A row's sort value, position (as u32: see `Positions`) and float32 confidence: 16 bytes,
/// one cache line for a gather.
#[derive(Clone, Copy)]
struct Row {
    c: u64,
    pos: u32,
    conf: f32,
}

/// The rows' positions: `given` (default: the row numbers), or their `ranked` replacement
/// when one does not fit in a u32.
struct Positions<'a> {
    given: Option<&'a [i64]>,
    ranked: Option<Vec<u32>>,
}

impl Positions<'_> {
    fn at(&self, r: usize) -> u32 {
        match (&self.ranked, self.given) {
            (Some(rank), _) => rank[r],
            (None, Some(p)) => p[r] as u32,
            (None, None) => r as u32,
        }
    }
}

/// Each value's rank among the distinct values (equal values, equal ranks): the same order.
fn dense_ranks(values: &[i64]) -> Vec<u32> {
    let mut by: Vec<(i64, u32)> = values
        .iter()
        .enumerate()
        .map(|(r, &v)| (v, r as u32))
        .collect();
    by.sort_unstable();
    let mut out = vec![0u32; values.len()];
    let mut rank = 0u32;
    for (j, &(v, r)) in by.iter().enumerate() {
        if j > 0 && v != by[j - 1].0 {
            rank += 1;
        }
        out[r as usize] = rank;
    }
    out
}

/// A group of rows with equal keys (an edge): its key, largest confidence, distinct lines
/// (`nlines` of them from `lstart` in the line list; the first one also here).
#[derive(Clone, Copy)]
struct Group {
    key: u64,
    conf: f32,
    nlines: u32,
    lstart: u32,
    line0: i32,
}

/// One pass over the sorted rows (`at(j)`: the j-th one's key, line and index in `rows`):
/// the groups in key order, each one's smallest position, and their distinct lines (into
/// the cleared `out` vectors).
fn group_pass(
    big: usize,
    rows: &[Row],
    (groups, first, lines_g): (&mut Vec<Group>, &mut Vec<u32>, &mut Vec<i32>),
    at: impl Fn(usize) -> (u64, i32, u32),
) {
    groups.clear();
    first.clear();
    lines_g.clear();
    let (mut prev_key, mut prev_line) = (0u64, 0i32);
    for j in 0..big {
        let (k, l, i) = at(j);
        let row = &rows[i as usize];
        if j == 0 || k != prev_key {
            groups.push(Group {
                key: k,
                conf: row.conf,
                nlines: 1,
                lstart: lines_g.len() as u32,
                line0: l,
            });
            first.push(row.pos);
            lines_g.push(l);
        } else {
            let last = groups.len() - 1;
            let gr = &mut groups[last];
            first[last] = first[last].min(row.pos);
            if row.conf > gr.conf {
                gr.conf = row.conf;
            }
            if l != prev_line {
                lines_g.push(l);
                gr.nlines += 1;
            }
        }
        (prev_key, prev_line) = (k, l);
    }
}

/// Whether `h` holds each of 0..len exactly once (a bitset: it stays in the cache).
fn is_permutation(h: &[i64]) -> bool {
    let mut seen = vec![0u64; h.len().div_ceil(64)];
    for &r in h {
        let Some(r) = usize::try_from(r).ok().filter(|&r| r < h.len()) else {
            return false;
        };
        let (w, b) = (r / 64, 1u64 << (r % 64));
        if seen[w] & b != 0 {
            return false;
        }
        seen[w] |= b;
    }
    true
}

/// Each confidence's rank among the sorted distinct `values` (highest first: `len - 1 -`
/// its index), or `None` when one is not among them (numpy's `searchsorted` + equality).
pub fn conf_rank(conf: &[f32], values: &[f32]) -> Option<Vec<i64>> {
    let last = values.len().checked_sub(1)?;
    let mut out = Vec::with_capacity(conf.len());
    for &x in conf {
        let at = values.partition_point(|&v| v < x);
        if at > last || values[at] != x {
            return None;
        }
        out.push((last - at) as i64);
    }
    Some(out)
}

/// The adjacency of `keys` (each edge's node, `0 <= key < n`) as (pointers, edge numbers),
/// a node's edges by `rank` (`0 <= rank < levels`), ties in edge order: two stable counting
/// sorts, by rank then by node.
pub fn csr(
    n: usize,
    keys: &[i32],
    rank: &[i64],
    levels: usize,
) -> Result<(Vec<i64>, Vec<i32>), String> {
    let m = keys.len();
    if rank.len() != m {
        return Err("keys and ranks differ in length".into());
    }
    if m > i32::MAX as usize {
        return Err("too many edges for int32 edge numbers".into());
    }
    let mut ptr = vec![0i64; n + 1];
    for &k in keys {
        match usize::try_from(k).ok().filter(|&k| k < n) {
            Some(k) => ptr[k + 1] += 1,
            None => return Err(format!("node {k} out of range (n = {n})")),
        }
    }
    for i in 0..n {
        ptr[i + 1] += ptr[i];
    }
    let by_rank: Vec<u32> = if levels <= 1 {
        if rank.iter().any(|&r| r != 0) {
            return Err("a rank is out of range".into());
        }
        (0..m as u32).collect()
    } else {
        let mut at = vec![0usize; levels + 1];
        for &r in rank {
            match usize::try_from(r).ok().filter(|&r| r < levels) {
                Some(r) => at[r + 1] += 1,
                None => return Err("a rank is out of range".into()),
            }
        }
        for i in 0..levels {
            at[i + 1] += at[i];
        }
        let mut out = vec![0u32; m];
        for (e, &r) in rank.iter().enumerate() {
            let slot = &mut at[r as usize];
            out[*slot] = e as u32;
            *slot += 1;
        }
        out
    };
    let mut cursor: Vec<i64> = ptr[..n].to_vec();
    let mut idx = vec![0i32; m];
    for &e in &by_rank {
        let slot = &mut cursor[keys[e as usize] as usize];
        idx[*slot as usize] = e as i32;
        *slot += 1;
    }
    Ok((ptr, idx))
}

fn contiguous<'a, T: numpy::Element>(
    arr: &'a PyReadonlyArray1<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    arr.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a contiguous 1-d array")))
}

/// `merge_edge_rows(src, dst, kind, conf, line, pos=None, hint=None) -> ((src, dst, kind,
/// conf, lptr, lines), order, edge_of_group) | None`: `build.merge_rows` of int32 `src` /
/// `dst`, uint8 `kind`, float64 `conf`, int32 `line`, int64 `pos` and `hint`, or None outside
/// the kernel's domain (a negative node or position, a kind above 7, a NaN or -0.0
/// confidence, a hint that is not a permutation of the rows). ValueError for columns of
/// unequal length or a `pos` giving two edges the same first position.
#[pyfunction]
#[pyo3(signature = (src, dst, kind, conf, line, pos = None, hint = None))]
#[allow(clippy::too_many_arguments)]
fn merge_edge_rows<'py>(
    py: Python<'py>,
    src: PyReadonlyArray1<'py, i32>,
    dst: PyReadonlyArray1<'py, i32>,
    kind: PyReadonlyArray1<'py, u8>,
    conf: PyReadonlyArray1<'py, f64>,
    line: PyReadonlyArray1<'py, i32>,
    pos: Option<PyReadonlyArray1<'py, i64>>,
    hint: Option<PyReadonlyArray1<'py, i64>>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let (s, d, k, c, l) = (
        contiguous(&src, "src")?,
        contiguous(&dst, "dst")?,
        contiguous(&kind, "kind")?,
        contiguous(&conf, "conf")?,
        contiguous(&line, "line")?,
    );
    let p = pos.as_ref().map(|a| contiguous(a, "pos")).transpose()?;
    let h = hint.as_ref().map(|a| contiguous(a, "hint")).transpose()?;
    let big = s.len();
    let merged = py
        .detach(|| merge(s, d, k, c, l, p, h))
        .map_err(PyValueError::new_err)?;
    let Some(mg) = merged else {
        return Ok(None);
    };
    let columns = (
        mg.src.into_pyarray(py),
        mg.dst.into_pyarray(py),
        mg.kind.into_pyarray(py),
        mg.conf.into_pyarray(py),
        mg.lptr.into_pyarray(py),
        mg.lines.into_pyarray(py),
    )
        .into_pyobject(py)?;
    let order = mg.order.into_pyarray(py).into_any();
    // numpy's dtype: int32 unless there are none or 2**31 rows or more
    let eog = if big == 0 || big >> 31 != 0 {
        mg.edge_of_group.into_pyarray(py).into_any()
    } else {
        let narrow: Vec<i32> = mg.edge_of_group.iter().map(|&e| e as i32).collect();
        narrow.into_pyarray(py).into_any()
    };
    Ok(Some(PyTuple::new(py, [columns.into_any(), order, eog])?))
}

/// `conf_ranks(conf, values) -> ranks | None`: each float32 confidence's rank (int64) among
/// the sorted distinct float32 `values`, highest first, or None when one is not among them.
#[pyfunction]
fn conf_ranks<'py>(
    py: Python<'py>,
    conf: PyReadonlyArray1<'py, f32>,
    values: PyReadonlyArray1<'py, f32>,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    let (c, v) = (contiguous(&conf, "conf")?, contiguous(&values, "values")?);
    Ok(py.detach(|| conf_rank(c, v)).map(|r| r.into_pyarray(py)))
}

/// Pointers and edge numbers, returned together.
type Adjacency<'py> = PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i32>>)>;

/// `csr_by_rank(n, keys, rank, levels) -> (ptr, idx)`: the adjacency of int32 `keys` (each
/// edge's node, below `n`) as int64 pointers and int32 edge numbers, a node's edges by int64
/// `rank` (below `levels`), ties in edge order. ValueError for a node or rank out of range.
#[pyfunction]
fn csr_by_rank<'py>(
    py: Python<'py>,
    n: usize,
    keys: PyReadonlyArray1<'py, i32>,
    rank: PyReadonlyArray1<'py, i64>,
    levels: usize,
) -> Adjacency<'py> {
    let (k, r) = (contiguous(&keys, "keys")?, contiguous(&rank, "rank")?);
    let (ptr, idx) = py
        .detach(|| csr(n, k, r, levels))
        .map_err(PyValueError::new_err)?;
    Ok((ptr.into_pyarray(py), idx.into_pyarray(py)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merge_edge_rows, m)?)?;
    m.add_function(wrap_pyfunction!(conf_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(csr_by_rank, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An edge being merged: (src, dst, kind), first position, best conf, lines.
    type Acc = ((i32, i32, u8), i64, f32, Vec<i32>);

    /// A plain reference: the rows merged one by one, the edges by first position.
    fn reference(
        src: &[i32],
        dst: &[i32],
        kind: &[u8],
        conf: &[f64],
        line: &[i32],
        pos: Option<&[i64]>,
    ) -> Vec<(i32, i32, u8, f32, Vec<i32>)> {
        let n = src.len();
        let mut edges: Vec<Acc> = Vec::new();
        for r in 0..n {
            let p = pos.map_or(r as i64, |p| p[r]);
            let k = (src[r], dst[r], kind[r]);
            match edges.iter_mut().find(|e| e.0 == k) {
                Some(e) => {
                    e.1 = e.1.min(p);
                    e.2 = e.2.max(conf[r] as f32);
                    e.3.push(line[r]);
                }
                None => edges.push((k, p, conf[r] as f32, vec![line[r]])),
            }
        }
        edges.sort_by_key(|e| e.1);
        edges
            .into_iter()
            .map(|(k, _, c, mut l)| {
                l.sort_unstable();
                l.dedup();
                (k.0, k.1, k.2, c, l)
            })
            .collect()
    }

    fn edges_of(m: &Merged) -> Vec<(i32, i32, u8, f32, Vec<i32>)> {
        (0..m.src.len())
            .map(|e| {
                let l = m.lines[m.lptr[e] as usize..m.lptr[e + 1] as usize].to_vec();
                (m.src[e], m.dst[e], m.kind[e], m.conf[e], l)
            })
            .collect()
    }

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn merges_like_the_reference() {
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        for round in 0..200 {
            let n = (rng(&mut seed) % 60) as usize;
            let nodes = 1 + rng(&mut seed) % if round % 2 == 0 { 5 } else { 1 << 29 };
            let span = 1 + rng(&mut seed) % if round % 3 == 0 { 4 } else { 1 << 30 };
            let src: Vec<i32> = (0..n).map(|_| (rng(&mut seed) % nodes) as i32).collect();
            let dst: Vec<i32> = (0..n).map(|_| (rng(&mut seed) % nodes) as i32).collect();
            let kind: Vec<u8> = (0..n).map(|_| (rng(&mut seed) % 3) as u8).collect();
            let conf: Vec<f64> = (0..n).map(|_| (rng(&mut seed) % 7) as f64 / 7.0).collect();
            let line: Vec<i32> = (0..n)
                .map(|_| (rng(&mut seed) % span) as i32 - (span / 2) as i32)
                .collect();
            let mut pos: Vec<i64> = (0..n as i64).map(|p| 3 * p + 1).collect();
            let mut hint: Vec<i64> = (0..n as i64).collect();
            for i in (1..n).rev() {
                pos.swap(i, (rng(&mut seed) % (i as u64 + 1)) as usize);
                hint.swap(i, (rng(&mut seed) % (i as u64 + 1)) as usize);
            }
            let want = reference(&src, &dst, &kind, &conf, &line, Some(&pos));
            for h in [None, Some(hint.as_slice())] {
                let got = merge(&src, &dst, &kind, &conf, &line, Some(&pos), h)
                    .unwrap()
                    .unwrap();
                assert_eq!(edges_of(&got), want);
                // order: a permutation sorted by (dst, src, kind, line)
                let key = |r: i64| {
                    let r = r as usize;
                    (dst[r], src[r], kind[r], line[r])
                };
                assert!(got.order.windows(2).all(|w| key(w[0]) <= key(w[1])));
                let mut o = got.order.clone();
                o.sort_unstable();
                assert_eq!(o, (0..n as i64).collect::<Vec<_>>());
                // edge_of_group numbers the groups (in key order) by first appearance
                let mut groups: Vec<(i32, i32, u8)> =
                    want.iter().map(|e| (e.1, e.0, e.2)).collect();
                groups.sort_unstable();
                for (g, &(d, s, k)) in groups.iter().enumerate() {
                    let e = got.edge_of_group[g] as usize;
                    assert_eq!((got.src[e], got.dst[e], got.kind[e]), (s, d, k));
                }
            }
        }
    }

    #[test]
    fn wide_positions_merge_as_their_order() {
        let (src, dst, kind) = ([1, 2, 1, 3, 2], [0, 0, 0, 1, 0], [0u8, 0, 0, 2, 0]);
        let (conf, line) = ([0.5, 0.25, 1.0, 0.5, 0.5], [3, 1, 2, 9, 1]);
        let wide = [9 << 40, 5 << 33, 7 << 40, 1 << 35, i64::MAX];
        let narrow = [4, 2, 3, 1, 5]; // the same order
        let got = merge(&src, &dst, &kind, &conf, &line, Some(&wide), None);
        let want = merge(&src, &dst, &kind, &conf, &line, Some(&narrow), None);
        assert_eq!(got.unwrap().unwrap(), want.unwrap().unwrap());
        assert_eq!(dense_ranks(&[5, 1 << 40, 5, -2]), [1, 2, 1, 0]);
    }

    #[test]
    fn ties_follow_the_hint_then_the_row() {
        let (src, dst, kind) = ([1, 1, 1], [2, 2, 2], [0u8, 0, 0]);
        let (conf, line) = ([0.5, 0.5, 0.5], [7, 7, 7]);
        let got = merge(&src, &dst, &kind, &conf, &line, None, None)
            .unwrap()
            .unwrap();
        assert_eq!(got.order, [0, 1, 2]);
        let got = merge(&src, &dst, &kind, &conf, &line, None, Some(&[2, 0, 1]))
            .unwrap()
            .unwrap();
        assert_eq!(got.order, [2, 0, 1]);
        assert_eq!(
            (got.lptr.as_slice(), got.lines.as_slice()),
            (&[0, 1][..], &[7][..])
        );
    }

    #[test]
    fn outside_the_domain_is_none_and_bad_input_an_error() {
        let one = |s: i32, k: u8, c: f64| merge(&[s], &[0], &[k], &[c], &[0], None, None);
        assert!(one(-1, 0, 0.5).unwrap().is_none());
        assert!(one(0, 8, 0.5).unwrap().is_none());
        assert!(one(0, 0, f64::NAN).unwrap().is_none());
        assert!(one(0, 0, -0.0).unwrap().is_none());
        assert!(one(0, 0, 0.5).unwrap().is_some());
        let two = merge(
            &[0, 1],
            &[0, 0],
            &[0, 0],
            &[1.0, 1.0],
            &[0, 0],
            None,
            Some(&[0, 0]),
        );
        assert!(two.unwrap().is_none()); // not a permutation
        let same = merge(
            &[0, 1],
            &[0, 0],
            &[0, 0],
            &[1.0, 1.0],
            &[0, 0],
            Some(&[4, 4]),
            None,
        );
        assert!(same.is_err());
        assert!(merge(&[0], &[], &[0], &[1.0], &[0], None, None).is_err());
        let empty = merge(&[], &[], &[], &[], &[], None, None).unwrap().unwrap();
        assert_eq!(empty.lptr, [0]);
    }

    #[test]
    fn radix_sort_is_stable() {
        let mut seed = 99u64;
        let mut items: Vec<(u64, u32)> = (0..5000)
            .map(|i| ((rng(&mut seed) % 300) << 20, i))
            .collect();
        let mut want = items.clone();
        want.sort_by_key(|p| p.0); // stable
        radix_sort(&mut items, &mut Vec::new(), 29);
        assert_eq!(items, want);
    }

    #[test]
    fn nearly_sorted_and_shuffled_sort_alike() {
        let mut seed = 7u64;
        for moved in [0usize, 3, 40, 2500] {
            // sorted keys with ties, then `moved` keys anywhere at the end (a patch's hint)
            let mut items: Vec<(u64, u32)> = (0..5000u32).map(|i| (u64::from(i / 3), i)).collect();
            for k in 0..moved {
                items[5000 - moved + k].0 = rng(&mut seed) % 1700;
            }
            let mut want = items.clone();
            want.sort_by_key(|p| p.0);
            stable_sort(&mut items, &mut Vec::new(), 11);
            assert_eq!(items, want);
        }
    }

    #[test]
    fn csr_orders_by_node_rank_then_edge() {
        let keys = [2, 0, 2, 2, 1, 0];
        let rank = [1, 0, 0, 1, 2, 0];
        let (ptr, idx) = csr(4, &keys, &rank, 3).unwrap();
        assert_eq!(ptr, [0, 2, 3, 6, 6]);
        assert_eq!(idx, [1, 5, 4, 2, 0, 3]);
        assert!(csr(2, &keys, &rank, 3).is_err());
        assert!(csr(4, &keys, &rank, 2).is_err());
        assert_eq!(csr(3, &[], &[], 0).unwrap(), (vec![0; 4], vec![]));
    }

    #[test]
    fn ranks_highest_first() {
        let values = [0.25f32, 0.5, 1.0];
        assert_eq!(conf_rank(&[1.0, 0.25, 0.5], &values), Some(vec![0, 2, 1]));
        assert_eq!(conf_rank(&[0.3], &values), None);
        assert_eq!(conf_rank(&[2.0], &values), None);
        assert_eq!(conf_rank(&[f32::NAN], &values), None);
        assert_eq!(conf_rank(&[1.0], &[]), None);
    }
}
