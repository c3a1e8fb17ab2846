//! Group commit: many writers' transactions made durable by one flush.
//!
//! A write transaction commits without waiting for the disk (redb's `Durability::None`: the
//! change is visible to every later transaction at once, but not yet synced), then its
//! writer waits until a durable commit covers it. The first writer to wait becomes the
//! leader: it commits an empty durable transaction, which makes every commit before it
//! durable (redb's guarantee), then wakes the writers it covered. Writers that commit while
//! a leader's fsync runs are covered by the next leader, so under load one fsync serves
//! many writers; alone, a writer pays the same as a durable commit of its own.
//!
//! The API acknowledges a write only after the wait. A handler's read-check-write runs
//! under the clinical write lock; [`durable_after`] lets the wait happen after that lock is
//! released. A would-be leader does not flush while other writers hold or wait for that
//! lock (their commits are moments away, and a flush would hold redb's single writer slot
//! through its fsync, stalling them one by one): it waits for them to commit, up to
//! `MAX_BATCH` commits or `MAX_GATHER`, then flushes all of them at once.
//!
//! If the flush fails (full disk, I/O error), every writer it covered gets the error and
//! nothing of theirs survives: redb refuses further writes on that database until it is
//! opened again, and opening discards what was never made durable. Until the store is
//! reopened (see `Store::try_recover`), reads may still see those refused changes.

use crate::store::{StoreError, StoreResult};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Commits gathered at most into one flush (bounds the first writer's wait).
const MAX_BATCH: u64 = 64;
/// How long a leader waits at most for queued writers before flushing anyway (a writer
/// that holds the lock for long, or a stream of writers that commit nothing).
const MAX_GATHER: Duration = Duration::from_millis(5);

/// The commit sequence and the flush state shared by a store's writers.
#[derive(Default)]
pub struct GroupCommit {
    /// The sequence number of the latest commit (assigned inside its write transaction,
    /// which redb runs one at a time, so the order is the commit order).
    assigned: AtomicU64,
    /// Threads holding or waiting for the clinical write lock.
    queued: AtomicUsize,
    state: Mutex<FlushState>,
    flushed: Condvar,
}

#[derive(Default)]
struct FlushState {
    /// Every commit up to this sequence number is durable.
    durable: u64,
    /// A leader is flushing.
    flushing: bool,
    /// The last failed flush: the sequence it was to cover, and its error's text.
    failed: Option<(u64, String)>,
}

impl GroupCommit {
    /// Numbers a commit about to be made (call inside its write transaction).
    pub fn assign(&self) -> u64 {
        self.assigned.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A writer starts waiting for the clinical write lock.
    pub fn enter(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
    }

    /// A writer has released the clinical write lock: a leader gathering writers looks
    /// again.
    pub fn leave(&self) {
        self.queued.fetch_sub(1, Ordering::SeqCst);
        let _st = self.lock();
        self.flushed.notify_all();
    }

    /// Whether to wait for other writers before flushing.
    fn gather(&self, st: &FlushState, since: Instant) -> bool {
        let others = self
            .queued
            .load(Ordering::SeqCst)
            .saturating_sub(HOLDS_LOCK.with(|h| h.get()));
        others > 0
            && self.assigned.load(Ordering::SeqCst) - st.durable < MAX_BATCH
            && since.elapsed() < MAX_GATHER
    }

    fn lock(&self) -> MutexGuard<'_, FlushState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Returns once commit `seq` is durable, flushing with `flush` when no other writer is.
    /// `flush` must commit durably; it is run outside the state's lock.
    pub fn wait_durable(
        &self,
        seq: u64,
        flush: impl FnOnce() -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut flush = Some(flush);
        let since = Instant::now();
        let mut st = self.lock();
        loop {
            if st.durable >= seq {
                return Ok(());
            }
            if let Some((through, why)) = &st.failed
                && *through >= seq
            {
                return Err(StoreError::Redb(format!(
                    "the commit could not be made durable: {why}"
                )));
            }
            if !st.flushing && self.gather(&st, since) {
                st = match self.flushed.wait_timeout(st, MAX_GATHER) {
                    Ok((g, _)) => g,
                    Err(poisoned) => poisoned.into_inner().0,
                };
                continue;
            }
            if !st.flushing {
                let Some(flush) = flush.take() else {
                    // Cannot happen: a leader leaves only after recording its outcome.
                    return Err(StoreError::Redb("the commit was not flushed".into()));
                };
                st.flushing = true;
                // Everything assigned so far is covered: the flush's own transaction begins
                // only after each of those commits has ended.
                let target = self.assigned.load(Ordering::SeqCst);
                drop(st);
                let outcome = flush();
                st = self.lock();
                st.flushing = false;
                match &outcome {
                    Ok(()) => st.durable = st.durable.max(target),
                    Err(e) => st.failed = Some((target, e.to_string())),
                }
                self.flushed.notify_all();
                // The leader answers with its own error (the classified one).
                outcome?;
                continue;
            }
            st = match self.flushed.wait(st) {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }
}

/// A commit made but not yet known durable, and how to make it so.
pub struct Pending {
    pub(super) seq: u64,
    pub(super) wait: Box<dyn FnOnce(u64) -> StoreResult<()> + Send>,
}

impl Pending {
    /// Waits until the commit is durable.
    pub fn wait(self) -> StoreResult<()> {
        (self.wait)(self.seq)
    }
}

thread_local! {
    /// 1 while this thread holds the clinical write lock (it is not waited for by itself).
    static HOLDS_LOCK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Inside `durable_after`: the latest commit of this thread not yet waited for.
    static DEFERRED: RefCell<Option<Option<Pending>>> = const { RefCell::new(None) };
}

/// Marks this thread as holding the clinical write lock, or no longer.
pub fn holding_lock(held: bool) {
    HOLDS_LOCK.with(|h| h.set(usize::from(held)));
}

/// Hands `pending` to the enclosing `durable_after` on this thread, if there is one
/// (keeping the latest commit, whose durability implies the earlier ones'). Gives it back
/// when there is none: the caller must then wait itself.
pub(super) fn defer(pending: Pending) -> Option<Pending> {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(slot) => {
            if slot.as_ref().is_none_or(|p| p.seq <= pending.seq) {
                *slot = Some(pending);
            }
            None
        }
        None => Some(pending),
    })
}

/// Runs `f`, whose store writes then commit without waiting for the disk; returns what it
/// returned and the wait for its latest commit, to be made after `f`'s locks are released
/// and before anything is acknowledged.
pub fn durable_after<T>(f: impl FnOnce() -> T) -> (T, Option<Pending>) {
    /// Restores the enclosing scope, also when `f` panics (the thread is reused).
    struct Scope(Option<Option<Pending>>);
    impl Drop for Scope {
        fn drop(&mut self) {
            let outer = self.0.take();
            DEFERRED.with(|d| *d.borrow_mut() = outer);
        }
    }
    let outer = DEFERRED.with(|d| d.borrow_mut().replace(None));
    let scope = Scope(outer);
    let out = f();
    let pending = DEFERRED.with(|d| d.borrow_mut().as_mut().and_then(Option::take));
    drop(scope);
    (out, pending)
}

/// What a writer needs to flush, shared so that a deferred wait outlives the borrow of
/// the store.
pub(super) fn waiter(
    commits: Arc<GroupCommit>,
    flush: impl Fn() -> StoreResult<()> + Send + 'static,
) -> Box<dyn FnOnce(u64) -> StoreResult<()> + Send> {
    Box::new(move |seq| commits.wait_durable(seq, flush))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn one_flush_covers_every_commit_assigned_before_it() {
        let commits = GroupCommit::default();
        let flushes = AtomicUsize::new(0);
        let a = commits.assign();
        let b = commits.assign();
        commits
            .wait_durable(a, || {
                flushes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        // b was assigned before a's flush began: already durable, no second flush.
        commits
            .wait_durable(b, || {
                flushes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        assert_eq!(flushes.load(Ordering::SeqCst), 1);
        let c = commits.assign();
        commits
            .wait_durable(c, || {
                flushes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        assert_eq!(flushes.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_flush_fails_every_commit_it_covered_and_not_later_ones() {
        let commits = GroupCommit::default();
        let a = commits.assign();
        let b = commits.assign();
        assert!(
            commits
                .wait_durable(a, || Err(StoreError::Redb("disk gone".into())))
                .is_err()
        );
        let err = commits.wait_durable(b, || Ok(())).unwrap_err();
        assert!(err.to_string().contains("disk gone"), "{err}");
        let c = commits.assign();
        commits.wait_durable(c, || Ok(())).unwrap();
    }

    #[test]
    fn writers_on_many_threads_are_all_made_durable() {
        let commits = Arc::new(GroupCommit::default());
        let flushes = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (commits, flushes) = (commits.clone(), flushes.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let seq = commits.assign();
                        commits
                            .wait_durable(seq, || {
                                flushes.fetch_add(1, Ordering::SeqCst);
                                Ok(())
                            })
                            .unwrap();
                        assert!(commits.lock().durable >= seq);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(commits.lock().durable, 1600);
        assert!(flushes.load(Ordering::SeqCst) >= 1);
    }

    #[test]
    fn a_leader_waits_for_queued_writers_and_flushes_them_together() {
        let commits = Arc::new(GroupCommit::default());
        let flushes = Arc::new(AtomicUsize::new(0));
        let first = commits.assign();
        // Another writer is queued on the lock: the first writer's wait gathers it.
        commits.enter();
        let waiter = {
            let (commits, flushes) = (commits.clone(), flushes.clone());
            std::thread::spawn(move || {
                commits
                    .wait_durable(first, || {
                        flushes.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .unwrap();
            })
        };
        let second = commits.assign();
        commits.leave();
        commits
            .wait_durable(second, || {
                flushes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        waiter.join().unwrap();
        assert!(commits.lock().durable >= second);
        // One flush for both, unless the gathering ran out of time on a slow machine.
        let n = flushes.load(Ordering::SeqCst);
        assert!(n == 1 || n == 2, "{n} flushes");
    }

    #[test]
    fn a_writer_holding_the_lock_flushes_without_waiting_for_itself() {
        let commits = GroupCommit::default();
        commits.enter();
        holding_lock(true);
        let seq = commits.assign();
        let started = Instant::now();
        commits.wait_durable(seq, || Ok(())).unwrap();
        holding_lock(false);
        commits.leave();
        assert!(started.elapsed() < MAX_GATHER, "it waited for itself");
    }

    #[test]
    fn a_deferred_commit_is_handed_back_after_the_scope_and_none_outside_one() {
        let noop = || Pending {
            seq: 0,
            wait: Box::new(|_| Ok(())),
        };
        assert!(defer(noop()).is_some(), "no scope: the caller waits");
        let ((), pending) = durable_after(|| {
            assert!(
                defer(Pending {
                    seq: 3,
                    wait: Box::new(|_| Ok(()))
                })
                .is_none()
            );
            assert!(
                defer(Pending {
                    seq: 2,
                    wait: Box::new(|_| Ok(()))
                })
                .is_none()
            );
        });
        assert_eq!(pending.map(|p| p.seq), Some(3), "the latest commit is kept");
        assert!(defer(noop()).is_some(), "the scope has ended");
        let caught = std::panic::catch_unwind(|| durable_after(|| panic!("handler bug")));
        assert!(caught.is_err());
        assert!(defer(noop()).is_some(), "a panic ends the scope too");
    }
}
