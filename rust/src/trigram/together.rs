//! A map over items shared by the calling thread and helpers from rayon's pool, where the
//! calling thread works from the start and never waits for a helper that has not started.
//!
//! `par_iter` from a thread outside the pool hands the whole job to the pool and sleeps
//! until the pool's threads are scheduled and done: on a loaded machine a question then
//! waits for the run queue twice (the workers' wake-up, then its own). Here the calling
//! thread takes items one by one from a shared counter at once; a helper takes from the same
//! counter when (if) it starts; once the counter is exhausted, the calling thread waits only
//! for the items helpers are busy with, and a helper that starts later finds the work closed
//! and returns without touching it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// What helpers share with the calling thread, its types erased: `ctx` points to the calling
/// thread's [`Ctx`], which `run` (monomorphized for it) reads.
struct Shared {
    next: AtomicUsize,
    n: usize,
    /// True while the calling thread's [`Ctx`] lives; helpers use `ctx` only while holding
    /// this lock for reading with `true` in it.
    open: RwLock<bool>,
    ctx: *const (),
    run: unsafe fn(*const (), usize),
}

// SAFETY: `ctx` is dereferenced (by `run`) only under `open`'s read lock while it holds
// `true`; the calling thread sets it `false` under the write lock (so after every helper's
// use) before its `Ctx` goes out of scope. What `Ctx` holds is `Sync` (the closure) or
// behind a `Mutex` (the results, `Send`).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// The calling thread's side: the item function and one slot per item.
struct Ctx<'a, R> {
    f: &'a (dyn Fn(usize) -> R + Sync),
    slots: Vec<Mutex<Option<R>>>,
}

/// Item `i` of the [`Ctx`] at `ctx`, into its slot.
///
/// # Safety
/// `ctx` must point to a live `Ctx<'_, R>`.
unsafe fn run<R: Send>(ctx: *const (), i: usize) {
    // SAFETY: the caller's contract.
    let ctx = unsafe { &*ctx.cast::<Ctx<'_, R>>() };
    let r = (ctx.f)(i);
    *ctx.slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
}

/// Closes a job when dropped: waits for helpers using the calling thread's [`Ctx`], then
/// marks it gone so helpers starting later leave it alone.
struct CloseOnDrop<'a>(&'a RwLock<bool>);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = false;
    }
}

/// `(0..n).map(f)`, in order, computed by the calling thread with up to `helpers` threads of
/// rayon's pool (none: the calling thread alone). An item a helper panicked on is done again
/// by the calling thread.
pub fn map<R: Send>(n: usize, helpers: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
    if helpers == 0 || n < 2 {
        return (0..n).map(f).collect();
    }
    let ctx = Ctx {
        f,
        slots: (0..n).map(|_| Mutex::new(None)).collect(),
    };
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        n,
        open: RwLock::new(true),
        ctx: std::ptr::from_ref(&ctx).cast::<()>(),
        run: run::<R>,
    });
    for _ in 0..helpers.min(n - 1) {
        let shared = Arc::clone(&shared);
        rayon::spawn(move || {
            let open = shared.open.read().unwrap_or_else(PoisonError::into_inner);
            if !*open {
                return;
            }
            loop {
                let i = shared.next.fetch_add(1, Ordering::Relaxed);
                if i >= shared.n {
                    break;
                }
                // SAFETY: `open` is held for reading with `true`: the `Ctx` is alive.
                let item = AssertUnwindSafe(|| unsafe { (shared.run)(shared.ctx, i) });
                if catch_unwind(item).is_err() {
                    break;
                }
            }
            drop(open);
        });
    }
    // Declared after `ctx`, so dropped before it even when `f` panics on this thread: the
    // job is closed (after the helpers at work are done) before the `Ctx` goes away.
    let close = CloseOnDrop(&shared.open);
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        let r = f(i);
        *ctx.slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    }
    // Wait for the helpers at work (not for those not started), and close the job.
    drop(close);
    ctx.slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| {
            let r = slot.into_inner().unwrap_or_else(PoisonError::into_inner);
            r.unwrap_or_else(|| f(i))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_in_order_whoever_computes_them() {
        for helpers in [0, 1, 3] {
            for n in [0, 1, 2, 7, 1000] {
                let got = map(n, helpers, &|i| i * i);
                assert_eq!(
                    got,
                    (0..n).map(|i| i * i).collect::<Vec<_>>(),
                    "{helpers} {n}"
                );
            }
        }
    }

    #[test]
    fn borrowed_state_is_used_only_while_alive() {
        // Many short maps over a borrowed vector: helpers that start late find each closed.
        for round in 0..200 {
            let data: Vec<u64> = (0..64).map(|i| i + round).collect();
            let sum: u64 = map(data.len(), 2, &|i| data[i] * 2).into_iter().sum();
            assert_eq!(sum, data.iter().map(|x| x * 2).sum::<u64>());
            // Results that borrow from the caller's state.
            let words: Vec<String> = (0..32).map(|i| format!("w{i}-{round}")).collect();
            let got: Vec<&str> = map(words.len(), 1, &|i| words[i].as_str());
            assert_eq!(got, words.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_panic_on_the_calling_thread_closes_the_job_before_its_state_goes() {
        for _ in 0..50 {
            let data: Vec<u64> = (0..256).collect();
            let caller = std::thread::current().id();
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                map(data.len(), 2, &|i| {
                    assert!(
                        std::thread::current().id() != caller || i < 100,
                        "caller item"
                    );
                    data[i]
                })
            }));
            // Either the caller reached item 100 and panicked, or helpers took those items.
            if let Ok(got) = outcome {
                assert_eq!(got, data);
            }
        }
    }

    #[test]
    fn a_panicking_item_in_a_helper_is_redone_by_the_caller() {
        let caller = std::thread::current().id();
        let got = map(64, 2, &|i| {
            if std::thread::current().id() != caller && i % 7 == 3 {
                panic!("helper item {i}");
            }
            i + 1
        });
        assert_eq!(got, (1..=64).collect::<Vec<_>>());
    }
}
