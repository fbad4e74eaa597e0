//! The graph writer's adjacency (`maguyva.modalities.graph.build._csr`, `_conf_rank`): the
//! same results as the numpy code, bit for bit, with two stable counting sorts instead of a
//! sort of int64 keys. (A native edge merge was measured too: alone 1.5x numpy's speed, inside
//! the writer no faster unless ~110 MB of scratch stayed allocated between updates;
//! `build.merge_rows` stays numpy, docs/graph-incremental.md.)

use crate::error::{CoreError, CoreResult};

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

fn invalid(msg: impl Into<String>) -> CoreError {
    CoreError::InvalidArgument(msg.into())
}

/// The adjacency of `keys` (each edge's node, `0 <= key < n`) as (pointers, edge numbers),
/// a node's edges by `rank` (`0 <= rank < levels`), ties in edge order: two stable counting
/// sorts, by rank then by node.
pub fn csr(
    n: usize,
    keys: &[i32],
    rank: &[i64],
    levels: usize,
) -> CoreResult<(Vec<i64>, Vec<i32>)> {
    let m = keys.len();
    if rank.len() != m {
        return Err(invalid("keys and ranks differ in length"));
    }
    if m > i32::MAX as usize {
        return Err(invalid("too many edges for int32 edge numbers"));
    }
    let mut ptr = vec![0i64; n + 1];
    for &k in keys {
        match usize::try_from(k).ok().filter(|&k| k < n) {
            Some(k) => ptr[k + 1] += 1,
            None => return Err(invalid(format!("node {k} out of range (n = {n})"))),
        }
    }
    for i in 0..n {
        ptr[i + 1] += ptr[i];
    }
    let by_rank = order_by_rank(rank, levels)?;
    let mut cursor: Vec<i64> = ptr[..n].to_vec();
    let mut idx = vec![0i32; m];
    for &e in &by_rank {
        let slot = &mut cursor[keys[e as usize] as usize];
        idx[*slot as usize] = e as i32;
        *slot += 1;
    }
    Ok((ptr, idx))
}

/// The edge numbers in a stable order by `rank` (a counting sort over `levels`).
fn order_by_rank(rank: &[i64], levels: usize) -> CoreResult<Vec<u32>> {
    let m = rank.len();
    if levels <= 1 {
        if rank.iter().any(|&r| r != 0) {
            return Err(invalid("a rank is out of range"));
        }
        return Ok((0..m as u32).collect());
    }
    let mut at = vec![0usize; levels + 1];
    for &r in rank {
        match usize::try_from(r).ok().filter(|&r| r < levels) {
            Some(r) => at[r + 1] += 1,
            None => return Err(invalid("a rank is out of range")),
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
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_orders_by_node_rank_then_edge() {
        let keys = [2, 0, 2, 2, 1, 0];
        let rank = [1, 0, 0, 1, 2, 0];
        let (ptr, idx) = csr(4, &keys, &rank, 3).unwrap();
        assert_eq!(ptr, [0, 2, 3, 6, 6]);
        assert_eq!(idx, [1, 5, 4, 2, 0, 3]);
        assert_eq!(csr(3, &[], &[], 0).unwrap(), (vec![0; 4], vec![]));
    }

    #[test]
    fn out_of_range_is_an_invalid_argument() {
        let keys = [2, 0, 2, 2, 1, 0];
        let rank = [1, 0, 0, 1, 2, 0];
        let bad =
            |r: CoreResult<(Vec<i64>, Vec<i32>)>| matches!(r, Err(CoreError::InvalidArgument(_)));
        assert!(bad(csr(2, &keys, &rank, 3)));
        assert!(bad(csr(4, &keys, &rank, 2)));
        assert!(bad(csr(4, &keys, &rank[1..], 3)));
        assert!(bad(csr(4, &[-1], &[0], 1)));
        assert!(bad(csr(4, &[0], &[1], 1)));
    }

    #[test]
    fn equals_a_stable_sort_by_node_then_rank() {
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % m
        };
        let keys: Vec<i32> = (0..3000).map(|_| next(50) as i32).collect();
        let rank: Vec<i64> = (0..3000).map(|_| next(4) as i64).collect();
        let (ptr, idx) = csr(50, &keys, &rank, 4).unwrap();
        let mut want: Vec<i32> = (0..3000).collect();
        want.sort_by_key(|&e| (keys[e as usize], rank[e as usize]));
        assert_eq!(idx, want);
        assert_eq!(ptr[50], 3000);
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
