//! Bounded least-recently-used caches for a warm engine (issue 21):
//! - [`Lru`], a few entries: compiled patterns (a literal question compiles its verifying
//!   regex, its trigram plan and its definition pattern, and an agent asks the same few
//!   targets again and again; compiling `def __init__(self` costs more than verifying a rare
//!   literal's candidates);
//! - [`ByteLru`], bounded in bytes: decoded documents (a common literal verifies hundreds of
//!   files, and decoding them is most of its cost).

use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

/// At most `capacity` entries; a hit moves its entry to the front, an insert past the
/// capacity drops the least recently used one. Values are shared (`Arc`), so a caller keeps
/// what it got after the entry is dropped.
pub struct Lru<K, V> {
    capacity: usize,
    inner: Mutex<Slots<K, V>>,
}

struct Slots<K, V> {
    /// Entry and the tick of its last use.
    map: FxHashMap<K, (Arc<V>, u64)>,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Slots {
                map: FxHashMap::default(),
                tick: 0,
            }),
        }
    }

    /// The value for `key`, made by `make` when absent (outside the lock: two threads may
    /// both make it; the first one stored wins). An error from `make` is not stored.
    pub fn get_or_try<E>(&self, key: &K, make: impl FnOnce() -> Result<V, E>) -> Result<Arc<V>, E> {
        if let Some(v) = self.get(key) {
            return Ok(v);
        }
        let made = Arc::new(make()?);
        let mut slots = self.lock();
        slots.tick += 1;
        let tick = slots.tick;
        if let Some((v, used)) = slots.map.get_mut(key) {
            *used = tick;
            return Ok(Arc::clone(v));
        }
        if slots.map.len() >= self.capacity {
            // A linear scan for the oldest: the map is small (tens of entries).
            if let Some(oldest) = slots
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                slots.map.remove(&oldest);
            }
        }
        slots.map.insert(key.clone(), (Arc::clone(&made), tick));
        Ok(made)
    }

    fn get(&self, key: &K) -> Option<Arc<V>> {
        let mut slots = self.lock();
        slots.tick += 1;
        let tick = slots.tick;
        slots.map.get_mut(key).map(|(v, used)| {
            *used = tick;
            Arc::clone(v)
        })
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots<K, V>> {
        // A panic while holding the lock leaves a consistent map (every update is one
        // insert or remove), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Shared byte strings under a total size: the least recently used are dropped to make room;
/// a value larger than an eighth of the budget is not kept (one file must not evict all).
pub struct ByteLru<K> {
    budget: usize,
    inner: Mutex<ByteSlots<K>>,
}

struct ByteSlots<K> {
    map: FxHashMap<K, (Arc<[u8]>, u64)>,
    /// Last use -> key, oldest first.
    order: BTreeMap<u64, K>,
    bytes: usize,
    tick: u64,
}

impl<K: Hash + Eq + Clone> ByteLru<K> {
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            inner: Mutex::new(ByteSlots {
                map: FxHashMap::default(),
                order: BTreeMap::new(),
                bytes: 0,
                tick: 0,
            }),
        }
    }

    pub fn get(&self, key: &K) -> Option<Arc<[u8]>> {
        if self.budget == 0 {
            return None;
        }
        let mut guard = self.lock();
        let slots = &mut *guard;
        slots.tick += 1;
        let tick = slots.tick;
        let (value, used) = slots.map.get_mut(key)?;
        let old = std::mem::replace(used, tick);
        let value = Arc::clone(value);
        slots.order.remove(&old);
        slots.order.insert(tick, key.clone());
        Some(value)
    }

    /// Keep `value` under `key` (a copy of it), dropping the oldest entries to make room.
    pub fn insert(&self, key: &K, value: &[u8]) {
        if self.budget == 0 || value.len() > self.budget / 8 {
            return;
        }
        let value: Arc<[u8]> = Arc::from(value);
        let mut guard = self.lock();
        let slots = &mut *guard;
        if slots.map.contains_key(key) {
            return;
        }
        while slots.bytes + value.len() > self.budget {
            let Some((_, oldest)) = slots.order.pop_first() else {
                break;
            };
            if let Some((gone, _)) = slots.map.remove(&oldest) {
                slots.bytes -= gone.len();
            }
        }
        slots.tick += 1;
        let tick = slots.tick;
        slots.bytes += value.len();
        slots.order.insert(tick, key.clone());
        slots.map.insert(key.clone(), (value, tick));
    }

    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Entries and bytes held now.
    pub fn size(&self) -> (usize, usize) {
        let slots = self.lock();
        (slots.map.len(), slots.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteSlots<K>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_recently_used_and_drops_the_oldest() {
        let lru: Lru<u32, u32> = Lru::new(2);
        let made = std::cell::Cell::new(0);
        let get = |k: u32| {
            *lru.get_or_try(&k, || {
                made.set(made.get() + 1);
                Ok::<_, ()>(k * 10)
            })
            .expect("made")
        };
        assert_eq!((get(1), get(2), get(1)), (10, 20, 10));
        assert_eq!(get(3), 30); // drops 2, the least recently used
        assert_eq!(get(1), 10);
        assert_eq!(get(2), 20); // made again
        assert_eq!(made.get(), 4);
        assert_eq!(lru.len(), 2);
    }

    #[test]
    fn an_error_is_not_stored() {
        let lru: Lru<&str, u32> = Lru::new(4);
        assert!(lru.get_or_try(&"x", || Err::<u32, _>("bad")).is_err());
        assert!(lru.is_empty());
        assert_eq!(*lru.get_or_try(&"x", || Ok::<_, ()>(7)).expect("ok"), 7);
    }

    #[test]
    fn byte_lru_stays_under_its_budget() {
        let lru: ByteLru<u32> = ByteLru::new(80);
        for k in 0..10u32 {
            lru.insert(&k, &[k as u8; 10]);
        }
        assert_eq!(lru.size(), (8, 80));
        assert!(lru.get(&0).is_none() && lru.get(&1).is_none());
        assert_eq!(lru.get(&2).as_deref(), Some(&[2u8; 10][..]));
        lru.insert(&10, &[10; 10]); // drops 3: 2 was used since
        assert!(lru.get(&3).is_none() && lru.get(&2).is_some());
        lru.insert(&11, &[0; 11]); // over an eighth of the budget: not kept
        assert!(lru.get(&11).is_none());
        let off: ByteLru<u32> = ByteLru::new(0);
        off.insert(&1, &[]);
        assert!(off.get(&1).is_none());
    }
}
