//! Property tests: every kernel equals the scalar reference; top-k equals a full sort.

use proptest::prelude::*;

use super::kernels::Kernel;
use super::search::{self, Codes, SearchOptions};
use super::select::Selector;
use super::{scalar, HammingIndex};

/// Rows of `width` bytes drawn from a small alphabet so that many distances tie.
fn codes_strategy() -> impl Strategy<Value = (usize, Vec<u8>, Vec<u8>)> {
    (1usize..160, 0usize..100).prop_flat_map(|(width, rows)| {
        (
            Just(width),
            proptest::collection::vec(
                prop_oneof![Just(0u8), Just(0xff), Just(0x0f), any::<u8>()],
                width * rows,
            ),
            proptest::collection::vec(any::<u8>(), width * 3),
        )
    })
}

fn full_sort(
    queries: &[u8],
    data: &[u8],
    width: usize,
    k: usize,
    dead: &[bool],
) -> Vec<Vec<(u32, u32)>> {
    queries
        .chunks_exact(width)
        .map(|q| {
            let mut all: Vec<(u32, u32)> = data
                .chunks_exact(width)
                .enumerate()
                .filter(|(i, _)| !dead.get(*i).copied().unwrap_or(false))
                .map(|(i, row)| (scalar::distance(q, row), i as u32))
                .collect();
            all.sort_unstable();
            all.truncate(k);
            all
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn kernels_equal_scalar((width, data, queries) in codes_strategy()) {
        let codes = Codes::new(&data, width).unwrap();
        let q = &queries[..width];
        let expected = search::distances(q, codes, Some(Kernel::Scalar)).unwrap();
        for kernel in Kernel::available() {
            let got = search::distances(q, codes, Some(kernel)).unwrap();
            prop_assert_eq!(&got, &expected, "kernel {}", kernel.name());
        }
    }

    #[test]
    fn multi_query_kernels_equal_scalar(
        width in 1usize..300,
        rows in 0usize..23,
        nq in 1usize..11,
        seed in any::<u64>(),
    ) {
        // Random bytes of every width (tails, 1/2/4 and odd numbers of 64-byte blocks) and query
        // counts that are and are not multiples of the group size.
        let mut state = seed | 1;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        };
        let data: Vec<u8> = (0..width * rows).map(|_| next()).collect();
        let queries: Vec<u8> = (0..width * nq).map(|_| next()).collect();
        let mut want = Vec::new();
        for q in queries.chunks_exact(width) {
            for row in data.chunks_exact(width) {
                want.push(scalar::distance(q, row));
            }
        }
        for kernel in Kernel::available() {
            let mut got = vec![0u32; rows * nq];
            kernel.resolve().unwrap().distances_multi(&queries, width, &data, &mut got);
            prop_assert_eq!(&got, &want, "kernel {}", kernel.name());
        }
    }

    #[test]
    fn topk_equals_full_sort((width, data, queries) in codes_strategy(), k in 0usize..40, heap in any::<bool>()) {
        let codes = Codes::new(&data, width).unwrap();
        let selector = if heap { Selector::Heap } else { Selector::Counting };
        let opts = SearchOptions { k, selector, ..Default::default() };
        let got = search::topk(&queries, codes, None, &opts).unwrap();
        prop_assert_eq!(got, full_sort(&queries, &data, width, k, &[]));
    }

    #[test]
    fn tombstones_are_skipped((width, data, queries) in codes_strategy(), k in 1usize..30, seed in any::<u64>()) {
        let mut index = HammingIndex::new(width).unwrap();
        index.add(&data).unwrap();
        let mut dead = vec![false; index.len()];
        for (i, d) in dead.iter_mut().enumerate() {
            if (seed.rotate_left(i as u32 % 64) ^ i as u64).is_multiple_of(3) {
                *d = true;
                index.delete(i as u32).unwrap();
            }
        }
        let opts = SearchOptions { k, ..Default::default() };
        prop_assert_eq!(index.search(&queries, &opts).unwrap(), full_sort(&queries, &data, width, k, &dead));
        prop_assert_eq!(index.live(), dead.iter().filter(|d| !**d).count());
    }
}

#[test]
fn threaded_scan_equals_single_thread() {
    // Large enough to cross the parallel threshold; a biased generator makes many ties.
    let width = 128;
    let rows = 9_000;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..rows * width)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state as u8) & 0x11
        })
        .collect();
    let queries = data[..width * 5].to_vec();
    let codes = Codes::new(&data, width).unwrap();
    let one = SearchOptions {
        k: 50,
        threads: 1,
        ..Default::default()
    };
    let many = SearchOptions {
        k: 50,
        threads: 0,
        ..Default::default()
    };
    let a = search::topk(&queries, codes, None, &one).unwrap();
    let b = search::topk(&queries, codes, None, &many).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, full_sort(&queries, &data, width, 50, &[]));
}

#[test]
fn distances_above_16_bits_use_the_unpacked_path() {
    // 8 200-byte codes: a distance of 65 600 does not fit the packed 16-bit fields.
    let width = 8_200;
    let data: Vec<u8> = [vec![0xffu8; width], vec![0u8; width], vec![0x0fu8; width]].concat();
    let queries = vec![0u8; width * 5];
    for kernel in Kernel::available() {
        let resolved = kernel.resolve().unwrap();
        let mut got = vec![0u32; 15];
        resolved.distances_multi(&queries, width, &data, &mut got);
        assert_eq!(got[..3], [65_600, 0, 32_800], "kernel {}", kernel.name());
        assert!(got.chunks(3).all(|c| c == &got[..3]));
        let mut single = vec![0u32; 3];
        resolved.distances(&queries[..width], &data, &mut single);
        assert_eq!(single, [65_600, 0, 32_800], "kernel {}", kernel.name());
    }
}

#[test]
fn edge_cases() {
    let empty = Codes::new(&[], 16).unwrap();
    let opts = SearchOptions {
        k: 5,
        ..Default::default()
    };
    assert_eq!(
        search::topk(&[0; 16], empty, None, &opts).unwrap(),
        vec![vec![]]
    );
    let codes = Codes::new(&[1, 2, 3], 1).unwrap();
    let all = SearchOptions {
        k: 100,
        ..Default::default()
    };
    assert_eq!(search::topk(&[0], codes, None, &all).unwrap()[0].len(), 3);
    assert!(Codes::new(&[1, 2, 3], 2).is_err());
    assert!(Codes::new(&[], 0).is_err());
    assert!(search::topk(&[0, 0, 0], codes, None, &opts).is_ok());
    assert!(search::distances(&[0, 0], codes, None).is_err());
    let mut index = HammingIndex::new(1).unwrap();
    assert!(index.delete(0).is_err());
    index.add(&[7]).unwrap();
    assert!(index.delete(0).unwrap());
    assert!(!index.delete(0).unwrap());
    assert_eq!(index.search(&[7], &opts).unwrap(), vec![vec![]]);
}
