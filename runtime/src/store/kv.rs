//! The storage seam: named tables of ordered keys and values, read in snapshot transactions
//! and written in serialised write transactions, over one of two engines.
//!
//! - **redb** (the default): the embedded file, one process. Each type here wraps redb's
//!   own, so the embedded path costs one enum match.
//! - **PostgreSQL** (`store::pg`, chosen by `EMR_DATABASE_URL`): one SQL table per table
//!   here (`k bytea primary key, v bytea`), shared by several runtimes. A write
//!   transaction first takes one transaction-scoped advisory lock, so write transactions
//!   run one at a time across every runtime exactly as redb runs them in one process;
//!   every rule the domains check inside a write transaction (unique identifiers,
//!   counters) therefore holds across runtimes too. Reads are `REPEATABLE READ` snapshots.
//!
//! The names and signatures follow redb's (`TableDefinition`, `open_table`, `get`,
//! `range`, `insert`), which the domains' `store.rs` files were written against: a domain
//! names its tables and indexes once and never learns which engine it runs on. Keys are
//! ordered by their bytes on both engines (redb's order for `&str` keys, PostgreSQL's for
//! `bytea`), so range scans return the same rows in the same order.

use crate::store::pg;
use crate::store::{StoreError, StoreResult};
pub use redb::{Key, Value};
use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

/// A table's name and the types of its keys and values.
pub struct TableDefinition<K: Key + 'static, V: Value + 'static> {
    name: &'static str,
    redb: redb::TableDefinition<'static, K, V>,
}

impl<K: Key + 'static, V: Value + 'static> Clone for TableDefinition<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key + 'static, V: Value + 'static> Copy for TableDefinition<K, V> {}

impl<K: Key + 'static, V: Value + 'static> TableDefinition<K, V> {
    pub const fn new(name: &'static str) -> Self {
        TableDefinition {
            name,
            redb: redb::TableDefinition::new(name),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The same table as redb names it (`store::check` reads a file with redb directly).
    pub fn redb(&self) -> redb::TableDefinition<'static, K, V> {
        self.redb
    }
}

/// A snapshot: every read in it sees the store as it was when it began.
pub enum ReadTransaction {
    Redb(redb::ReadTransaction),
    Pg(pg::Txn),
}

/// The one write transaction running (per store file, or per database across runtimes).
#[allow(clippy::large_enum_variant)] // one per write, on the stack of its writer
pub enum WriteTransaction {
    Redb(redb::WriteTransaction),
    Pg(pg::Txn),
}

impl ReadTransaction {
    pub fn open_table<K: Key + 'static, V: Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> StoreResult<ReadOnlyTable<'_, K, V>> {
        Ok(match self {
            ReadTransaction::Redb(t) => ReadOnlyTable::Redb(t.open_table(def.redb)?),
            ReadTransaction::Pg(t) => ReadOnlyTable::Pg(t.table(def.name)?, PhantomData),
        })
    }
}

impl WriteTransaction {
    /// The table, created if it does not exist yet.
    pub fn open_table<K: Key + 'static, V: Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> StoreResult<Table<'_, K, V>> {
        Ok(match self {
            WriteTransaction::Redb(t) => Table::Redb(t.open_table(def.redb)?, audited(def.name)),
            WriteTransaction::Pg(t) => {
                Table::Pg(t.create_table(def.name)?, PhantomData, audited(def.name))
            }
        })
    }

    /// Removes every row of the table (redb drops the table, which the next `open_table`
    /// creates again empty; PostgreSQL keeps it, since other runtimes may be reading it).
    pub fn delete_table<K: Key + 'static, V: Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> StoreResult<()> {
        match self {
            WriteTransaction::Redb(t) => {
                t.delete_table(def.redb)?;
            }
            WriteTransaction::Pg(t) => t.create_table(def.name)?.clear()?,
        }
        Ok(())
    }

    /// Drops a table no longer used, rows and all: redb frees its pages, PostgreSQL drops
    /// it in one statement (where `delete_table` deletes its rows one by one, for tables
    /// other runtimes may still be reading).
    pub fn drop_table<K: Key + 'static, V: Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> StoreResult<()> {
        match self {
            WriteTransaction::Redb(t) => {
                t.delete_table(def.redb)?;
            }
            WriteTransaction::Pg(t) => t.drop_table(def.name)?,
        }
        Ok(())
    }
}

/// A stored key or value, borrowed from the engine's page (redb) or owned (PostgreSQL).
pub enum AccessGuard<'a, V: Value + 'static> {
    Redb(redb::AccessGuard<'a, V>),
    Owned(Vec<u8>),
}

impl<V: Value + 'static> AccessGuard<'_, V> {
    pub fn value(&self) -> V::SelfType<'_> {
        match self {
            AccessGuard::Redb(g) => g.value(),
            AccessGuard::Owned(bytes) => V::from_bytes(bytes),
        }
    }
}

/// Rows of a table in key order, either way (`rev`).
pub enum Range<'a, K: Key + 'static, V: Value + 'static> {
    Redb(redb::Range<'a, K, V>),
    Pg(pg::Rows<'a>, PhantomData<(K, V)>),
}

type Row<'a, K, V> = StoreResult<(AccessGuard<'a, K>, AccessGuard<'a, V>)>;

impl<'a, K: Key + 'static, V: Value + 'static> Iterator for Range<'a, K, V> {
    type Item = Row<'a, K, V>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Range::Redb(r) => r.next().map(|row| {
                row.map(|(k, v)| (AccessGuard::Redb(k), AccessGuard::Redb(v)))
                    .map_err(StoreError::from)
            }),
            Range::Pg(rows, _) => rows
                .next()
                .map(|row| row.map(|(k, v)| (AccessGuard::Owned(k), AccessGuard::Owned(v)))),
        }
    }
}

impl<K: Key + 'static, V: Value + 'static> DoubleEndedIterator for Range<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Range::Redb(r) => r.next_back().map(|row| {
                row.map(|(k, v)| (AccessGuard::Redb(k), AccessGuard::Redb(v)))
                    .map_err(StoreError::from)
            }),
            Range::Pg(rows, _) => rows
                .next_back()
                .map(|row| row.map(|(k, v)| (AccessGuard::Owned(k), AccessGuard::Owned(v)))),
        }
    }
}

/// What reading a table offers, in a read or a write transaction.
pub trait ReadableTable<K: Key + 'static, V: Value + 'static> {
    fn get<'a>(&self, key: impl Borrow<K::SelfType<'a>>)
    -> StoreResult<Option<AccessGuard<'_, V>>>;

    fn range<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> StoreResult<Range<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'a>> + 'a;

    fn iter(&self) -> StoreResult<Range<'_, K, V>> {
        self.range::<K::SelfType<'_>>(..)
    }

    /// How many rows the table holds.
    fn len(&self) -> StoreResult<u64>;

    /// The rows of several keys, in their order.
    fn get_many<'a>(
        &self,
        keys: &[K::SelfType<'a>],
    ) -> StoreResult<Vec<Option<AccessGuard<'_, V>>>>;

    fn is_empty(&self) -> StoreResult<bool> {
        Ok(self.iter()?.next().transpose()?.is_none())
    }

    /// Every row of several key ranges `[low, high)`, as bytes: each range's rows in key
    /// order, the ranges in the order given.
    fn rows_in_ranges(&self, ranges: &[KeyRange]) -> StoreResult<Vec<RawRow>>;
}

/// A half-open range of keys, as bytes: `[low, high)`.
pub type KeyRange = (Vec<u8>, Vec<u8>);
/// A row as bytes: key, value.
pub type RawRow = (Vec<u8>, Vec<u8>);

/// A table opened in a read transaction.
pub enum ReadOnlyTable<'t, K: Key + 'static, V: Value + 'static> {
    Redb(redb::ReadOnlyTable<K, V>),
    Pg(pg::TableRef<'t>, PhantomData<(K, V)>),
}

/// A table opened in a write transaction; its name when its changes are audited (see
/// `capture`).
pub enum Table<'t, K: Key + 'static, V: Value + 'static> {
    Redb(redb::Table<'t, K, V>, Option<&'static str>),
    Pg(pg::TableRef<'t>, PhantomData<(K, V)>, Option<&'static str>),
}

fn key_bytes<K: Key + 'static>(key: &K::SelfType<'_>) -> Vec<u8> {
    K::as_bytes(key).as_ref().to_vec()
}

fn bound_bytes<'a, K: Key + 'static, KR: Borrow<K::SelfType<'a>>>(b: Bound<&KR>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(key_bytes::<K>(k.borrow())),
        Bound::Excluded(k) => Bound::Excluded(key_bytes::<K>(k.borrow())),
        Bound::Unbounded => Bound::Unbounded,
    }
}

macro_rules! readable {
    ($table:ident) => {
        // Inherent, as redb's are, so that reading needs no trait in scope.
        impl<K: Key + 'static, V: Value + 'static> $table<'_, K, V> {
            pub fn get<'a>(
                &self,
                key: impl Borrow<K::SelfType<'a>>,
            ) -> StoreResult<Option<AccessGuard<'_, V>>> {
                #[allow(unused_imports)]
                use redb::ReadableTable as _;
                Ok(match self {
                    $table::Redb(t, ..) => t.get(key)?.map(AccessGuard::Redb),
                    $table::Pg(t, ..) => t
                        .get(&key_bytes::<K>(key.borrow()))?
                        .map(AccessGuard::Owned),
                })
            }

            pub fn range<'a, KR>(
                &self,
                range: impl RangeBounds<KR> + 'a,
            ) -> StoreResult<Range<'_, K, V>>
            where
                KR: Borrow<K::SelfType<'a>> + 'a,
            {
                #[allow(unused_imports)]
                use redb::ReadableTable as _;
                Ok(match self {
                    $table::Redb(t, ..) => Range::Redb(t.range(range)?),
                    $table::Pg(t, ..) => Range::Pg(
                        t.range(
                            bound_bytes::<K, KR>(range.start_bound()),
                            bound_bytes::<K, KR>(range.end_bound()),
                        ),
                        PhantomData,
                    ),
                })
            }

            pub fn iter(&self) -> StoreResult<Range<'_, K, V>> {
                self.range::<K::SelfType<'_>>(..)
            }

            /// The rows of several keys at once, in the keys' order (one statement on
            /// PostgreSQL, where a page of records read one by one would be one round
            /// trip each).
            pub fn get_many<'a>(
                &self,
                keys: &[K::SelfType<'a>],
            ) -> StoreResult<Vec<Option<AccessGuard<'_, V>>>> {
                #[allow(unused_imports)]
                use redb::ReadableTable as _;
                match self {
                    $table::Redb(t, ..) => keys
                        .iter()
                        .map(|k| Ok(t.get(k)?.map(AccessGuard::Redb)))
                        .collect(),
                    $table::Pg(t, ..) => {
                        let wanted: Vec<Vec<u8>> = keys.iter().map(|k| key_bytes::<K>(k)).collect();
                        let mut found = t.get_many(&wanted)?;
                        Ok(wanted
                            .iter()
                            .map(|k| found.remove(k).map(AccessGuard::Owned))
                            .collect())
                    }
                }
            }

            pub fn len(&self) -> StoreResult<u64> {
                use redb::ReadableTableMetadata as _;
                match self {
                    $table::Redb(t, ..) => Ok(t.len()?),
                    $table::Pg(t, ..) => t.len(),
                }
            }

            pub fn is_empty(&self) -> StoreResult<bool> {
                Ok(self.iter()?.next().transpose()?.is_none())
            }

            /// Every row of several key ranges at once (one statement on PostgreSQL, where
            /// the chart's nine vital signs read one by one were nine round trips).
            pub fn rows_in_ranges(&self, ranges: &[KeyRange]) -> StoreResult<Vec<RawRow>> {
                #[allow(unused_imports)]
                use redb::ReadableTable as _;
                match self {
                    $table::Redb(t, ..) => {
                        let mut rows = Vec::new();
                        for (low, high) in ranges {
                            for row in t.range(K::from_bytes(low)..K::from_bytes(high))? {
                                let (k, v) = row?;
                                rows.push((
                                    K::as_bytes(&k.value()).as_ref().to_vec(),
                                    V::as_bytes(&v.value()).as_ref().to_vec(),
                                ));
                            }
                        }
                        Ok(rows)
                    }
                    $table::Pg(t, ..) => t.rows_in_ranges(ranges),
                }
            }
        }

        impl<K: Key + 'static, V: Value + 'static> ReadableTable<K, V> for $table<'_, K, V> {
            fn get<'a>(
                &self,
                key: impl Borrow<K::SelfType<'a>>,
            ) -> StoreResult<Option<AccessGuard<'_, V>>> {
                $table::get(self, key)
            }

            fn range<'a, KR>(
                &self,
                range: impl RangeBounds<KR> + 'a,
            ) -> StoreResult<Range<'_, K, V>>
            where
                KR: Borrow<K::SelfType<'a>> + 'a,
            {
                $table::range(self, range)
            }

            fn len(&self) -> StoreResult<u64> {
                $table::len(self)
            }

            fn get_many<'a>(
                &self,
                keys: &[K::SelfType<'a>],
            ) -> StoreResult<Vec<Option<AccessGuard<'_, V>>>> {
                $table::get_many(self, keys)
            }

            fn rows_in_ranges(&self, ranges: &[KeyRange]) -> StoreResult<Vec<RawRow>> {
                $table::rows_in_ranges(self, ranges)
            }
        }
    };
}

readable!(ReadOnlyTable);
readable!(Table);

impl<K: Key + 'static, V: Value + 'static> Table<'_, K, V> {
    /// Writes a row, replacing any with the same key.
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> StoreResult<()> {
        match self {
            Table::Redb(t, audited) => {
                if let Some(table) = audited {
                    touched(table, key_bytes::<K>(key.borrow()));
                    if dry_run() {
                        return Ok(());
                    }
                }
                t.insert(key, value)?;
            }
            Table::Pg(t, _, audited) => {
                let key = key_bytes::<K>(key.borrow());
                if let Some(table) = audited {
                    touched(table, key.clone());
                    if dry_run() {
                        return Ok(());
                    }
                }
                t.put(&key, V::as_bytes(value.borrow()).as_ref())?;
            }
        }
        Ok(())
    }

    /// Removes a row; answers whether there was one.
    pub fn remove<'a>(&mut self, key: impl Borrow<K::SelfType<'a>>) -> StoreResult<bool> {
        if let Table::Redb(_, Some(table)) | Table::Pg(_, _, Some(table)) = self {
            touched(table, key_bytes::<K>(key.borrow()));
        }
        match self {
            Table::Redb(t, _) => Ok(t.remove(key)?.is_some()),
            Table::Pg(t, ..) => t.delete(&key_bytes::<K>(key.borrow())),
        }
    }

    /// Removes the rows of many keys (in one statement on PostgreSQL), given as stored.
    pub fn remove_many(&mut self, keys: &[Vec<u8>]) -> StoreResult<()> {
        if let Table::Redb(_, Some(table)) | Table::Pg(_, _, Some(table)) = self {
            for k in keys {
                touched(table, k.clone());
            }
        }
        match self {
            Table::Redb(t, _) => {
                for k in keys {
                    t.remove(K::from_bytes(k))?;
                }
            }
            Table::Pg(t, ..) => t.delete_many(keys)?,
        }
        Ok(())
    }
}

/// The keys written in the audited tables by the write transaction running on this
/// thread, by table (`capture`).
pub type Touched = std::collections::BTreeMap<&'static str, std::collections::BTreeSet<Vec<u8>>>;

struct Capture {
    /// `None`: every table.
    audited: Option<std::sync::Arc<std::collections::HashSet<&'static str>>>,
    touched: Touched,
    /// The writes are noted and not made (`keys_to_write`).
    dry: bool,
}

thread_local! {
    /// What the write transaction running on this thread has written in the audited tables.
    /// A write transaction runs on its caller's thread from begin to commit, one at a time
    /// per thread, so a thread's capture is one transaction's.
    static CAPTURE: std::cell::RefCell<Option<Capture>> = const { std::cell::RefCell::new(None) };
}

/// Starts noting the keys this thread's write transaction writes in the `audited` tables
/// (the store's audit trail reads their values before and after, `store::audit`); the
/// returned guard ends the capture and hands the keys over.
pub fn capture(audited: std::sync::Arc<std::collections::HashSet<&'static str>>) -> CaptureGuard {
    CAPTURE.with(|c| {
        *c.borrow_mut() = Some(Capture {
            audited: Some(audited),
            touched: Touched::new(),
            dry: false,
        })
    });
    CaptureGuard(())
}

/// Runs `f` without writing anything and answers the keys it would have written in every
/// table, by table (a record moved to another patient finds its old index entries by
/// indexing its old version this way, `record::rewrite_all`). A capture running around it
/// (the audit's) is set aside meanwhile and goes on after.
pub fn keys_to_write<R>(f: impl FnOnce() -> R) -> (R, Touched) {
    let outer = CAPTURE.with(|c| c.borrow_mut().take());
    CAPTURE.with(|c| {
        *c.borrow_mut() = Some(Capture {
            audited: None,
            touched: Touched::new(),
            dry: true,
        })
    });
    let out = f();
    let inner = CAPTURE.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer));
    (out, inner.map(|c| c.touched).unwrap_or_default())
}

/// Ends the capture when dropped, so that an error leaves nothing behind for the next
/// transaction on the thread.
pub struct CaptureGuard(());

impl CaptureGuard {
    /// Ends the capture: the keys written, by table.
    pub fn finish(self) -> Touched {
        CAPTURE
            .with(|c| c.borrow_mut().take())
            .map(|c| c.touched)
            .unwrap_or_default()
    }
}

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CAPTURE.with(|c| c.borrow_mut().take());
    }
}

fn audited(table: &'static str) -> Option<&'static str> {
    CAPTURE.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|c| c.audited.as_ref().is_none_or(|a| a.contains(table)))
            .map(|_| table)
    })
}

fn dry_run() -> bool {
    CAPTURE.with(|c| c.borrow().as_ref().is_some_and(|c| c.dry))
}

fn touched(table: &'static str, key: Vec<u8>) {
    CAPTURE.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            c.touched.entry(table).or_default().insert(key);
        }
    })
}
