//! An owned, growable code store: appends for new chunks, tombstones for removed ones.
//!
//! Ids are row numbers and never change; deleting only sets a tombstone bit, so a caller's
//! id -> chunk map stays valid across incremental updates. `compact` is left to the caller
//! (rebuild a new index from the live rows) because it renumbers ids.

use super::search::{self, Codes, SearchOptions};
use super::select::Neighbor;
use crate::error::{CoreError, CoreResult};

/// Packed binary codes of a fixed width, with tombstones.
#[derive(Clone, Debug)]
pub struct HammingIndex {
    width: usize,
    data: Vec<u8>,
    deleted: Vec<u64>,
    n_deleted: usize,
}

impl HammingIndex {
    /// An empty index of `width`-byte codes (dim / 8 bytes).
    pub fn new(width: usize) -> CoreResult<HammingIndex> {
        Codes::new(&[], width)?;
        Ok(HammingIndex {
            width,
            data: Vec::new(),
            deleted: Vec::new(),
            n_deleted: 0,
        })
    }

    /// Bytes per code.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Number of ids ever assigned (live and deleted).
    pub fn len(&self) -> usize {
        self.data.len() / self.width
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of ids not deleted.
    pub fn live(&self) -> usize {
        self.len() - self.n_deleted
    }

    /// The raw code bytes (row-major, including deleted rows).
    pub fn codes(&self) -> &[u8] {
        &self.data
    }

    /// Append whole rows; returns the id of the first appended row.
    pub fn add(&mut self, codes: &[u8]) -> CoreResult<u32> {
        let first = self.len();
        let total = Codes::new(codes, self.width)?.rows() + first;
        if total > u32::MAX as usize {
            return Err(CoreError::InvalidArgument(format!(
                "at most {} codes per index",
                u32::MAX
            )));
        }
        self.data.extend_from_slice(codes);
        self.deleted.resize(total.div_ceil(64), 0);
        Ok(first as u32)
    }

    /// Tombstone an id. Returns false if it was already deleted; errors if it was never assigned.
    pub fn delete(&mut self, id: u32) -> CoreResult<bool> {
        let id = id as usize;
        if id >= self.len() {
            return Err(CoreError::InvalidArgument(format!(
                "id {id} out of range (index holds {} ids)",
                self.len()
            )));
        }
        let (word, bit) = (id / 64, 1u64 << (id % 64));
        if self.deleted[word] & bit != 0 {
            return Ok(false);
        }
        self.deleted[word] |= bit;
        self.n_deleted += 1;
        Ok(true)
    }

    pub fn is_deleted(&self, id: u32) -> bool {
        let id = id as usize;
        id < self.len() && self.deleted[id / 64] & (1u64 << (id % 64)) != 0
    }

    /// Exact top-k of each query over the live rows.
    pub fn search(&self, queries: &[u8], opts: &SearchOptions) -> CoreResult<Vec<Vec<Neighbor>>> {
        let codes = Codes::new(&self.data, self.width)?;
        let deleted = (self.n_deleted > 0).then_some(self.deleted.as_slice());
        search::topk(queries, codes, deleted, opts)
    }
}
