//! Exact top-k selection over small integer distances, ties broken by the smaller id.
//!
//! Rows are scanned in increasing id order, so a later row never beats an earlier row at the same
//! distance; both selectors rely on that to stay deterministic without comparing ids in the hot
//! path. [`Counting`] keeps per-distance id lists below a threshold that only falls (the idea of
//! faiss's counting select): most distances fail one comparison and cost nothing more. [`Heap`]
//! is the fallback for distance ranges too large for a bucket per value.

use std::collections::BinaryHeap;

/// A neighbour: `(distance, id)`, ordered by distance then id.
pub type Neighbor = (u32, u32);

/// Distance ranges up to this many values use [`Counting`]; wider ones use [`Heap`].
pub const COUNTING_MAX_RANGE: usize = 1 << 16;

/// Which selector to run (tests force each one; `Auto` picks by the distance range).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Selector {
    #[default]
    Auto,
    Counting,
    Heap,
}

/// A streaming top-k accumulator fed with blocks of consecutive ids.
pub enum TopK {
    Counting(Counting),
    Heap(Heap),
}

impl TopK {
    /// A selector for `k` results over distances in `0..=max_distance`.
    pub fn new(selector: Selector, k: usize, max_distance: u32) -> TopK {
        let range = max_distance as usize + 1;
        match selector {
            Selector::Heap => TopK::Heap(Heap::new(k)),
            _ if range > COUNTING_MAX_RANGE => TopK::Heap(Heap::new(k)),
            _ => TopK::Counting(Counting::new(k, max_distance)),
        }
    }

    /// Offer `dists[i]` for id `first + i`. Distances above `max_distance` (tombstones) are skipped.
    #[inline]
    pub fn push_block(&mut self, first: u32, dists: &[u32]) {
        match self {
            TopK::Counting(c) => c.push_block(first, dists),
            TopK::Heap(h) => h.push_block(first, dists),
        }
    }

    /// The selected neighbours, sorted by (distance, id).
    pub fn into_sorted(self) -> Vec<Neighbor> {
        match self {
            TopK::Counting(c) => c.into_sorted(),
            TopK::Heap(h) => h.into_sorted(),
        }
    }
}

/// Counting select: buckets of ids per distance below a falling threshold.
pub struct Counting {
    k: usize,
    buckets: Vec<Vec<u32>>,
    /// Exclusive bound: only distances `< thresh` can still enter the top-k.
    thresh: u32,
    /// Number of ids held in `buckets[..thresh]`.
    count: usize,
}

impl Counting {
    pub fn new(k: usize, max_distance: u32) -> Counting {
        let range = max_distance as usize + 1;
        Counting {
            k,
            buckets: (0..range).map(|_| Vec::new()).collect(),
            thresh: if k == 0 { 0 } else { range as u32 },
            count: 0,
        }
    }

    #[inline]
    pub fn push_block(&mut self, first: u32, dists: &[u32]) {
        for (i, &d) in dists.iter().enumerate() {
            if d < self.thresh {
                self.insert(d, first + i as u32);
            }
        }
    }

    #[cold]
    fn insert(&mut self, d: u32, id: u32) {
        let bucket = &mut self.buckets[d as usize];
        if bucket.len() >= self.k {
            return; // k earlier ids already hold this distance
        }
        bucket.push(id);
        self.count += 1;
        // Drop the top bucket while the buckets below it already hold k ids.
        while self.thresh > 0 {
            let top = self.buckets[self.thresh as usize - 1].len();
            if self.count - top < self.k {
                break;
            }
            self.count -= top;
            self.buckets[self.thresh as usize - 1].clear();
            self.thresh -= 1;
        }
    }

    pub fn into_sorted(self) -> Vec<Neighbor> {
        let mut out = Vec::with_capacity(self.k.min(self.count));
        for (d, ids) in self.buckets.iter().enumerate().take(self.thresh as usize) {
            for &id in ids {
                if out.len() == self.k {
                    return out;
                }
                out.push((d as u32, id));
            }
        }
        out
    }
}

/// Heap fallback: a max-heap of the k best `(distance, id)` pairs.
pub struct Heap {
    k: usize,
    heap: BinaryHeap<Neighbor>,
}

impl Heap {
    pub fn new(k: usize) -> Heap {
        Heap {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 20) + 1),
        }
    }

    #[inline]
    pub fn push_block(&mut self, first: u32, dists: &[u32]) {
        if self.k == 0 {
            return;
        }
        for (i, &d) in dists.iter().enumerate() {
            if d == u32::MAX {
                continue; // tombstone
            }
            let item = (d, first + i as u32);
            if self.heap.len() < self.k {
                self.heap.push(item);
            } else if let Some(mut top) = self.heap.peek_mut() {
                if item < *top {
                    *top = item;
                }
            }
        }
    }

    pub fn into_sorted(self) -> Vec<Neighbor> {
        self.heap.into_sorted_vec()
    }
}

/// Merge sorted partial results (from disjoint id ranges) into the global top-k.
pub fn merge(parts: Vec<Vec<Neighbor>>, k: usize) -> Vec<Neighbor> {
    let mut all: Vec<Neighbor> = parts.into_iter().flatten().collect();
    all.sort_unstable();
    all.truncate(k);
    all
}
