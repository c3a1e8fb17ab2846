//! Rendered answers of the calls that many screens poll with the same URL, kept until
//! anything is written.
//!
//! The service-queue dashboard is open on several screens of a facility at once (the
//! reception, each consultation room, the laboratory) and each asks every few seconds for
//! the same pages of open queue entries (hundreds of kilobytes of JSON: every entry nests
//! its patient, visit, queue, status and priority) and the same counts. Between two
//! writes those answers cannot change, so the first request renders one and the others
//! copy its bytes.
//!
//! Validity is a stamp: the store's commit count (`Store::commit_count`, raised after
//! every commit, whatever the table, and again when a cache of decoded users or settings
//! is emptied) and this cache's own epoch (raised when the content is reloaded). A renderer notes the stamp before it reads anything, so an answer
//! rendered while a write committed carries the older stamp and is not served after it.
//! The stamp also holds the day (answers show ages and "today"). The key holds everything
//! else an answer depends on: the call, its query (each part written with its length, so
//! no query reads as another), the caller's locale and fallbacks, and the origin its links
//! name. The caller's privileges are checked before the cache is consulted, and the
//! answers cached here do not vary with them.
//!
//! Requests for one key wait for a single renderer (so the 32 screens that ask right
//! after a write do not render the page 32 times); other keys go on in parallel. The
//! cache is bounded in bytes and in keys, and starts over past either bound.

use crate::http::error::ApiResult;
use axum::body::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// About fifty pages of a busy day's dashboard.
const BYTE_LIMIT: usize = 32 << 20;
/// A patient banner's entry is one key per patient; a day's patients fit.
const KEY_LIMIT: usize = 4_096;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    commits: u64,
    epoch: u64,
    /// Answers hold ages and "today": one rendered on another day is stale.
    day: chrono::NaiveDate,
}

struct Cached {
    stamp: Stamp,
    body: Bytes,
}

type Slot = Arc<tokio::sync::Mutex<Option<Cached>>>;

#[derive(Default)]
struct Slots {
    by_key: HashMap<String, Slot>,
    bytes: usize,
}

#[derive(Default)]
pub struct AnswerCache {
    epoch: AtomicU64,
    slots: std::sync::Mutex<Slots>,
}

impl AnswerCache {
    /// Makes every kept answer stale (the content changed under them).
    pub fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    fn stamp(&self, store: &crate::store::Store) -> Stamp {
        Stamp {
            commits: store.commit_count(),
            epoch: self.epoch.load(Ordering::SeqCst),
            day: crate::wire::today(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        match self.slots.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The answer under `key` if nothing was written since it was rendered, else
    /// `render`'s (kept for the next request). An error is answered and not kept.
    pub async fn get_or_render<F, Fut>(
        &self,
        store: &crate::store::Store,
        key: String,
        render: F,
    ) -> ApiResult<Bytes>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = ApiResult<Bytes>>,
    {
        let slot = {
            let mut slots = self.lock();
            match slots.by_key.get(&key) {
                Some(slot) => slot.clone(),
                None => {
                    if slots.by_key.len() >= KEY_LIMIT || slots.bytes + key.len() > BYTE_LIMIT {
                        *slots = Slots::default();
                    }
                    // A key's own bytes count against the bound too.
                    slots.bytes += key.len();
                    let slot = Slot::default();
                    slots.by_key.insert(key.clone(), slot.clone());
                    slot
                }
            }
        };
        let mut held = slot.lock().await;
        let stamp = self.stamp(store);
        if let Some(cached) = held.as_ref()
            && cached.stamp == stamp
        {
            return Ok(cached.body.clone());
        }
        let body = match render().await {
            Ok(body) => body,
            Err(e) => {
                // A key that never rendered is not kept (a malformed query would fill the
                // map with empty slots).
                if held.is_none() {
                    let mut slots = self.lock();
                    if slots
                        .by_key
                        .get(&key)
                        .is_some_and(|s| Arc::ptr_eq(s, &slot))
                    {
                        slots.by_key.remove(&key);
                        slots.bytes = slots.bytes.saturating_sub(key.len());
                    }
                }
                return Err(e);
            }
        };
        let before = held.as_ref().map_or(0, |c| c.body.len());
        *held = Some(Cached {
            stamp,
            body: body.clone(),
        });
        let mut slots = self.lock();
        slots.bytes = slots.bytes.saturating_sub(before) + body.len();
        if slots.bytes > BYTE_LIMIT {
            *slots = Slots::default();
        }
        Ok(body)
    }
}

/// The key of a call's answer: `call` names the handler, and everything else the answer
/// depends on follows (see the module's documentation).
pub fn key(
    caller: &crate::http::Caller,
    catalog: &crate::catalog::Catalog,
    call: &str,
    query: &[(String, String)],
) -> String {
    let ctx_locale = caller.locale(catalog);
    let user_locale = caller
        .user
        .as_ref()
        .and_then(|u| u.properties.get("defaultLocale"))
        .map(String::as_str)
        .unwrap_or_default();
    compose(
        &[call, caller.origin.as_str(), &ctx_locale, user_locale],
        query,
    )
}

/// Each part written with its length, so that no query can be made to read as another
/// (`patient=P%26isEnded%3Dfalse` is not `patient=P&isEnded=false`).
fn compose(parts: &[&str], query: &[(String, String)]) -> String {
    let mut key = String::new();
    for part in parts {
        key.push_str(&format!("{}:{part};", part.len()));
    }
    for (name, value) in query {
        key.push_str(&format!("{}:{name}={}:{value};", name.len(), value.len()));
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use std::sync::atomic::AtomicUsize;

    async fn answer(
        cache: &AnswerCache,
        store: &Store,
        renders: &AtomicUsize,
        text: &str,
    ) -> Bytes {
        cache
            .get_or_render(store, "k".into(), || async {
                renders.fetch_add(1, Ordering::SeqCst);
                Ok(Bytes::from(text.to_string()))
            })
            .await
            .unwrap()
    }

    fn write_something(store: &Store) {
        store
            .write(|txn| {
                txn.open_table(crate::store::kv::TableDefinition::<&str, &str>::new(
                    "scratch",
                ))?
                .insert("a", "b")?;
                Ok(())
            })
            .unwrap();
    }

    #[tokio::test]
    async fn an_answer_is_kept_until_a_write_or_a_reload() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let cache = AnswerCache::default();
        let renders = AtomicUsize::new(0);
        assert_eq!(answer(&cache, &store, &renders, "one").await, "one");
        assert_eq!(answer(&cache, &store, &renders, "two").await, "one");
        assert_eq!(renders.load(Ordering::SeqCst), 1);
        write_something(&store);
        assert_eq!(answer(&cache, &store, &renders, "three").await, "three");
        assert_eq!(answer(&cache, &store, &renders, "four").await, "three");
        cache.invalidate();
        assert_eq!(answer(&cache, &store, &renders, "five").await, "five");
        assert_eq!(renders.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_write_during_the_render_makes_its_answer_stale() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let cache = AnswerCache::default();
        let rendered = cache
            .get_or_render(&store, "k".into(), || async {
                // The render read the store before this write committed.
                write_something(&store);
                Ok(Bytes::from_static(b"before"))
            })
            .await
            .unwrap();
        assert_eq!(rendered, "before");
        let renders = AtomicUsize::new(0);
        assert_eq!(answer(&cache, &store, &renders, "after").await, "after");
        assert_eq!(renders.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn no_query_reads_as_another() {
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let split = compose(
            &["queue-entry"],
            &pairs(&[("patient", "P"), ("isEnded", "false")]),
        );
        let folded = compose(&["queue-entry"], &pairs(&[("patient", "P&isEnded=false")]));
        let shifted = compose(&["queue-entry"], &pairs(&[("patient=P&isEnded", "false")]));
        assert_ne!(split, folded);
        assert_ne!(split, shifted);
        assert_ne!(folded, shifted);
        assert_ne!(compose(&["a", "b"], &[]), compose(&["a;b"], &[]));
    }

    #[tokio::test]
    async fn an_error_is_not_kept() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let cache = AnswerCache::default();
        let failed = cache
            .get_or_render(&store, "k".into(), || async {
                Err(crate::http::error::ApiError::BadRequest("no".into()))
            })
            .await;
        assert!(failed.is_err());
        let renders = AtomicUsize::new(0);
        assert_eq!(answer(&cache, &store, &renders, "ok").await, "ok");
        assert_eq!(renders.load(Ordering::SeqCst), 1);
    }
}
