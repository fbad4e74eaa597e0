//! Scans: one or many queries against a block of packed codes, single- or multi-threaded.
//!
//! The database is walked in blocks sized to stay in L2 while every query of a batch is compared
//! with the block; each thread owns a contiguous id range and its own selectors, and the partial
//! results are merged by (distance, id), so the answer does not depend on the thread count.

use rayon::prelude::*;

use super::kernels::{Kernel, Resolved, GROUP};
use super::select::{merge, Neighbor, Selector, TopK};
use crate::error::{CoreError, CoreResult};

/// Bytes of the database compared with a whole batch before moving on (fits in L2).
const BLOCK_BYTES: usize = 256 * 1024;
/// Below this many compared bytes (rows x width x queries) a scan stays on the calling thread:
/// splitting costs more than it saves on small indexes.
const PARALLEL_MIN_BYTES: usize = 4 * 1024 * 1024;

/// How to run a search.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchOptions {
    /// Number of neighbours per query.
    pub k: usize,
    /// Maximum threads (0 = the rayon pool's size). The pool is shared, so never oversubscribed.
    pub threads: usize,
    /// Force a kernel (tests, benchmarks); `None` = the fastest supported one.
    pub kernel: Option<Kernel>,
    /// Force a selector (tests); `Auto` picks by the distance range.
    pub selector: Selector,
}

/// Validated view of a code matrix: `rows` rows of `width` bytes.
#[derive(Clone, Copy)]
pub struct Codes<'a> {
    pub data: &'a [u8],
    pub width: usize,
}

impl<'a> Codes<'a> {
    /// Check that `data` holds whole rows of `width` bytes and that ids fit in `u32`.
    pub fn new(data: &'a [u8], width: usize) -> CoreResult<Codes<'a>> {
        if width == 0 {
            return Err(CoreError::InvalidArgument(
                "code width must be at least 1 byte".into(),
            ));
        }
        if !data.len().is_multiple_of(width) {
            return Err(CoreError::InvalidArgument(format!(
                "code buffer of {} bytes is not a whole number of {width}-byte rows",
                data.len()
            )));
        }
        if data.len() / width > u32::MAX as usize {
            return Err(CoreError::InvalidArgument(format!(
                "at most {} codes per index",
                u32::MAX
            )));
        }
        Ok(Codes { data, width })
    }

    pub fn rows(&self) -> usize {
        self.data.len() / self.width
    }
}

/// Resolve the kernel for a call, with a clear error when a forced one is unsupported.
pub fn resolve_kernel(kernel: Option<Kernel>) -> CoreResult<Resolved> {
    let kernel = kernel.unwrap_or_else(Kernel::best);
    kernel.resolve().ok_or_else(|| {
        CoreError::InvalidArgument(format!(
            "kernel {:?} is not supported by this CPU (available: {})",
            kernel.name(),
            Kernel::available()
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// Distances from one query to every row.
pub fn distances(query: &[u8], codes: Codes<'_>, kernel: Option<Kernel>) -> CoreResult<Vec<u32>> {
    if query.len() != codes.width {
        return Err(CoreError::InvalidArgument(format!(
            "query has {} bytes, codes have {} bytes per row",
            query.len(),
            codes.width
        )));
    }
    let kernel = resolve_kernel(kernel)?;
    let mut out = vec![0u32; codes.rows()];
    if !out.is_empty() {
        kernel.distances(query, codes.data, &mut out);
    }
    Ok(out)
}

/// The exact top-k of each query (`queries` holds whole rows of `codes.width` bytes).
///
/// `deleted` is an optional tombstone bitset (bit `i` of word `i / 64` marks id `i`).
/// Each result list is sorted by (distance, id) and holds `min(k, live rows)` neighbours.
pub fn topk(
    queries: &[u8],
    codes: Codes<'_>,
    deleted: Option<&[u64]>,
    opts: &SearchOptions,
) -> CoreResult<Vec<Vec<Neighbor>>> {
    let width = codes.width;
    if !queries.len().is_multiple_of(width) {
        return Err(CoreError::InvalidArgument(format!(
            "queries buffer of {} bytes is not a whole number of {width}-byte rows",
            queries.len()
        )));
    }
    let kernel = resolve_kernel(opts.kernel)?;
    let n_queries = queries.len() / width;
    let rows = codes.rows();
    let max_distance = u32::try_from(width * 8).map_err(|_| {
        CoreError::InvalidArgument(format!("code width {width} bytes is too large"))
    })?;
    if n_queries == 0 {
        return Ok(Vec::new());
    }
    if rows == 0 || opts.k == 0 {
        return Ok(vec![Vec::new(); n_queries]);
    }
    let block_rows = (BLOCK_BYTES / width).max(1);
    let pool = rayon::current_num_threads().max(1);
    let want = if opts.threads == 0 {
        pool
    } else {
        opts.threads.min(pool)
    };
    let work = rows.saturating_mul(width).saturating_mul(n_queries);
    let n_blocks = rows.div_ceil(block_rows);
    let parts = if work < PARALLEL_MIN_BYTES {
        1
    } else {
        want.min(n_blocks).max(1)
    };

    let scan_range = |lo: usize, hi: usize| -> Vec<Vec<Neighbor>> {
        let mut sel: Vec<TopK> = (0..n_queries)
            .map(|_| TopK::new(opts.selector, opts.k, max_distance))
            .collect();
        // Distances of one group of queries to one block (query-major), then selection.
        let group = GROUP.min(n_queries);
        let mut buf = vec![0u32; block_rows * group];
        let mut start = lo;
        while start < hi {
            let end = (start + block_rows).min(hi);
            let n = end - start;
            let block = &codes.data[start * width..end * width];
            for (qs, sels) in queries.chunks(width * group).zip(sel.chunks_mut(group)) {
                let out = &mut buf[..n * sels.len()];
                kernel.distances_multi(qs, width, block, out);
                for (s, dists) in sels.iter_mut().zip(out.chunks_exact_mut(n)) {
                    if let Some(bits) = deleted {
                        mask_deleted(bits, start, dists);
                    }
                    s.push_block(start as u32, dists);
                }
            }
            start = end;
        }
        sel.into_iter().map(TopK::into_sorted).collect()
    };

    if parts == 1 {
        return Ok(scan_range(0, rows));
    }
    // Contiguous ranges aligned to blocks, one per thread.
    let per = n_blocks.div_ceil(parts) * block_rows;
    let ranges: Vec<(usize, usize)> = (0..parts)
        .map(|p| (p * per, ((p + 1) * per).min(rows)))
        .filter(|(lo, hi)| lo < hi)
        .collect();
    let partials: Vec<Vec<Vec<Neighbor>>> = ranges
        .par_iter()
        .map(|&(lo, hi)| scan_range(lo, hi))
        .collect();
    let mut per_query: Vec<Vec<Vec<Neighbor>>> = vec![Vec::with_capacity(parts); n_queries];
    for partial in partials {
        for (q, list) in partial.into_iter().enumerate() {
            per_query[q].push(list);
        }
    }
    Ok(per_query.into_iter().map(|p| merge(p, opts.k)).collect())
}

/// Set the distance of tombstoned ids in `out` (ids `start..start + out.len()`) to `u32::MAX`.
fn mask_deleted(bits: &[u64], start: usize, out: &mut [u32]) {
    let end = start + out.len();
    let mut word = start / 64;
    while word * 64 < end && word < bits.len() {
        let mut w = bits[word];
        while w != 0 {
            let id = word * 64 + w.trailing_zeros() as usize;
            w &= w - 1;
            if id >= start && id < end {
                out[id - start] = u32::MAX;
            }
        }
        word += 1;
    }
}
