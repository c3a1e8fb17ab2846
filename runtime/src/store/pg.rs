//! The PostgreSQL engine behind `store::kv`: several runtimes on one database.
//!
//! Each table of the store is one SQL table `(k bytea primary key, v bytea not null)` in
//! the schema the runtime is configured with, created by the write transaction that first
//! opens it (the store creates every table when it opens, so in practice at start-up).
//!
//! **One writer at a time, across runtimes.** A write transaction begins with
//! `pg_advisory_xact_lock(<schema>, WRITE)`: write transactions are serialised exactly as
//! redb serialises them in one process, so what a domain checks inside a write (a unique
//! identifier, a counter's next value, a username) cannot be raced by another runtime, and
//! the lock is released by the commit itself (or by the server when a runtime dies
//! mid-transaction). A read-check-write sequence that reads before it writes (the
//! visit-overlap rule) holds the clinical lock (`ClinicalLock`), a session-level advisory
//! lock, for its whole sequence. Reads are `REPEATABLE READ, READ ONLY` snapshots and take
//! no lock. A commit returns once PostgreSQL has made it durable (`synchronous_commit` on),
//! so an acknowledged write survives the loss of any runtime; and a transaction in which a
//! statement failed is refused at commit rather than answered by PostgreSQL's silent
//! `ROLLBACK` (`Txn::failed`).
//!
//! **Change notices.** After a commit, the runtime that wrote sends one `NOTIFY` on
//! its schema's channel naming the tables it touched (and the keys, when few), in the same round
//! trip as the `COMMIT` but outside the transaction. Every other runtime listens on a
//! connection of its own (`listen`) and drops or refreshes what it keeps in memory; a
//! listener that loses its connection reports it, so the store drops every cache rather
//! than trust what it may have missed.
//!
//! **Round trips.** A read transaction's `BEGIN` is sent with its first statement (both
//! queued before either answer is awaited) and its `ROLLBACK` is queued without waiting;
//! several key ranges are read in one statement (`TableRef::rows_in_ranges`). Sessions run
//! with `jit = off`.
//!
//! **Threads.** The client's connections are driven by a small runtime of this engine's own;
//! callers block on the answers (`futures_executor::block_on`) from whatever thread they
//! run on, as they block on redb's disk reads.

use crate::store::{StoreError, StoreResult, WriteFailure};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Statement};

/// The channels change notices travel on: one per schema (`Engine::channel`), since
/// PostgreSQL's channels are the database's and one database may hold several stores.
const CHANNEL_PREFIX: &str = "emr_changes_";
/// Keys a notice names per table at most; past it, the notice says "every key".
const KEYS_PER_NOTICE: usize = 64;
/// Idle connections kept for reuse.
const IDLE_CONNECTIONS: usize = 32;

/// The advisory locks of one schema (the second key of `pg_advisory_*lock(int, int)`).
#[derive(Clone, Copy)]
pub enum Lock {
    /// Held by every write transaction, released by its commit.
    Write = 1,
    /// Held by a clinical read-check-write sequence.
    Clinical = 2,
    /// Held by the runtime running the visits' auto-close. Each background job has a lock
    /// of its own: jobs of one runtime tick together, and a shared lock would let one of
    /// them skip the others' rounds.
    Jobs = 3,
    /// Held by the runtime making the reports' scheduled requests.
    ReportSchedules = 4,
    /// Held by the runtime evaluating the stock rules.
    StockRules = 5,
}

/// What a committed write transaction changed: table → its keys, or `None` for "any".
pub type Touched = BTreeMap<String, Option<BTreeSet<String>>>;

/// A change notice from another runtime, or the loss of the notices.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    Changed(Touched),
    /// The listener lost its connection (and has it again): anything may have changed.
    Lost,
}

pub struct Engine {
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    config: tokio_postgres::Config,
    schema: String,
    /// The first key of this schema's advisory locks.
    lock_space: i32,
    idle: Mutex<Vec<Conn>>,
    /// Tables known to exist.
    created: Mutex<HashSet<String>>,
    /// This runtime's name in change notices, so it skips its own.
    instance: String,
    /// What this engine did, for benchmarks and operators (`stats`).
    counters: Counters,
}

/// Statements sent and how long write transactions held the write lock.
#[derive(Default)]
struct Counters {
    statements: std::sync::atomic::AtomicU64,
    /// The latest write transactions' lock hold times, in microseconds (a window).
    holds: Mutex<VecDeque<u32>>,
}

/// Write transactions whose hold times `Stats` keeps.
const HOLDS_KEPT: usize = 100_000;

/// What an engine did since it was opened.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Statements (and statement batches) sent to the server.
    pub statements: u64,
    /// How long each of the latest write transactions held the write lock, from the
    /// moment it was granted to the end of its commit, in microseconds.
    pub write_lock_holds_us: Vec<u32>,
}

struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

fn wait<F: std::future::Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

/// A PostgreSQL error as the store reports it: the server or the connection gone is
/// `Unavailable` (503, try again), a full disk `Unwritable` (507), anything else a store
/// error.
fn classify(e: tokio_postgres::Error) -> StoreError {
    use tokio_postgres::error::SqlState;
    match e.code() {
        Some(c) if *c == SqlState::DISK_FULL => StoreError::Unwritable(WriteFailure {
            disk_full: true,
            detail: e.to_string(),
            since: chrono::Utc::now().to_rfc3339(),
        }),
        Some(c)
            if c.code().starts_with("08")
                || c.code().starts_with("57P")
                || *c == SqlState::TOO_MANY_CONNECTIONS =>
        {
            StoreError::Unavailable(e.to_string())
        }
        Some(_) => StoreError::Redb(format!("PostgreSQL: {e}")),
        None => StoreError::Unavailable(e.to_string()),
    }
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

impl Engine {
    /// Connects to `url` (a `postgres://` URL or key=value string) and works in `schema`,
    /// created if missing.
    pub fn connect(url: &str, password: Option<&str>, schema: &str) -> StoreResult<Arc<Engine>> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Redb(format!("EMR_DATABASE_URL: {e}")))?;
        if let Some(p) = password {
            config.password(p);
        }
        if config.get_application_name().is_none() {
            config.application_name("emr-runtime");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Redb(e.to_string()))?;
        let handle = runtime.handle().clone();
        let lock_space = {
            use sha2::Digest;
            let d = sha2::Sha256::digest(schema.as_bytes());
            i32::from_be_bytes([d[0], d[1], d[2], d[3]])
        };
        let engine = Arc::new(Engine {
            runtime: Mutex::new(Some(runtime)),
            handle,
            config,
            schema: schema.to_string(),
            lock_space,
            idle: Mutex::new(Vec::new()),
            created: Mutex::new(HashSet::new()),
            instance: crate::store::record::new_uuid(),
            counters: Counters::default(),
        });
        let conn = engine.connect_raw(false)?;
        wait(
            conn.client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote(schema))),
        )
        .or_else(|e| {
            // Two runtimes creating the schema at once: one wins, the other finds it.
            if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
                Ok(())
            } else {
                Err(classify(e))
            }
        })?;
        drop(conn);
        Ok(engine)
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The channel of this schema's change notices.
    pub fn channel(&self) -> String {
        format!("{CHANNEL_PREFIX}{:08x}", self.lock_space as u32)
    }

    pub fn stats(&self) -> Stats {
        Stats {
            statements: self
                .counters
                .statements
                .load(std::sync::atomic::Ordering::Relaxed),
            write_lock_holds_us: self
                .counters
                .holds
                .lock()
                .map(|h| h.iter().copied().collect())
                .unwrap_or_default(),
        }
    }

    fn count_statement(&self) {
        self.counters
            .statements
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn connect_raw(&self, in_schema: bool) -> StoreResult<Conn> {
        let config = self.config.clone();
        // No JIT compilation: every statement here reads or writes rows by key, and
        // PostgreSQL compiled the several-ranges read (whose estimate grows with the
        // table) for tens of milliseconds each time, which took the chart's vitals on a
        // million observations to one answer a second.
        let settings = match in_schema {
            true => format!("SET jit = off; SET search_path TO {}", quote(&self.schema)),
            false => "SET jit = off".to_string(),
        };
        let client = wait(self.handle.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client.batch_execute(&settings).await?;
            Ok::<_, tokio_postgres::Error>(client)
        }))
        .map_err(|e| StoreError::Unavailable(e.to_string()))?
        .map_err(classify)?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    fn checkout(&self) -> StoreResult<Conn> {
        loop {
            let conn = self.idle.lock().expect("idle connections").pop();
            match conn {
                Some(c) if c.client.is_closed() => continue,
                Some(c) => return Ok(c),
                None => return self.connect_raw(true),
            }
        }
    }

    fn checkin(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().expect("idle connections");
        if idle.len() < IDLE_CONNECTIONS {
            idle.push(conn);
        }
    }

    /// Whether the database answers (`health/started`).
    pub fn reachable(&self) -> StoreResult<()> {
        let conn = self.checkout()?;
        wait(conn.client.simple_query("SELECT 1")).map_err(classify)?;
        self.checkin(conn);
        Ok(())
    }

    /// The two keys of `lock` in this schema, as `pg_advisory_lock(int, int)` takes them
    /// (`pg_locks` shows them as `classid` and `objid`).
    pub fn lock_args(&self, lock: Lock) -> (i32, i32) {
        (self.lock_space, lock as i32)
    }

    /// Holds `lock` (session level) until the answer is dropped.
    pub fn hold(self: &Arc<Self>, lock: Lock) -> StoreResult<HeldLock> {
        let conn = self.checkout()?;
        let (a, b) = self.lock_args(lock);
        wait(
            conn.client
                .execute("SELECT pg_advisory_lock($1, $2)", &[&a, &b]),
        )
        .map_err(classify)?;
        Ok(HeldLock {
            engine: self.clone(),
            conn: Some(conn),
            lock,
        })
    }

    /// Takes `lock` if no other runtime holds it.
    pub fn try_hold(self: &Arc<Self>, lock: Lock) -> StoreResult<Option<HeldLock>> {
        let conn = self.checkout()?;
        let (a, b) = self.lock_args(lock);
        let row = wait(
            conn.client
                .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&a, &b]),
        )
        .map_err(classify)?;
        if row.get::<_, bool>(0) {
            Ok(Some(HeldLock {
                engine: self.clone(),
                conn: Some(conn),
                lock,
            }))
        } else {
            self.checkin(conn);
            Ok(None)
        }
    }

    /// Listens for other runtimes' change notices, calling `on` with each (and with
    /// `Notice::Lost` whenever the listening connection was lost), until the engine is
    /// dropped. Reconnects by itself. `on` runs on a thread of its own, in the order the
    /// notices came, and may read the store (this engine's own thread drives the
    /// connections, so it must never wait for one).
    pub fn listen(self: &Arc<Self>, on: Arc<dyn Fn(Notice) + Send + Sync>) {
        let (deliver, notices) = std::sync::mpsc::channel::<Notice>();
        let spawned = std::thread::Builder::new()
            .name("store-changes".into())
            .spawn(move || {
                for notice in notices {
                    on(notice);
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot follow other runtimes' changes: {e}");
            return;
        }
        let weak = Arc::downgrade(self);
        let config = self.config.clone();
        let channel = self.channel();
        self.handle.spawn(async move {
            let mut first = true;
            loop {
                let Some(instance) = weak.upgrade().map(|e| e.instance.clone()) else {
                    return;
                };
                if let Ok((client, mut connection)) = config.connect(NoTls).await {
                    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                    let pump = tokio::spawn(async move {
                        let mut messages =
                            futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                        use futures_util::StreamExt;
                        while let Some(Ok(m)) = messages.next().await {
                            if let tokio_postgres::AsyncMessage::Notification(n) = m
                                && tx.send(n.payload().to_string()).is_err()
                            {
                                break;
                            }
                        }
                    });
                    if client
                        .batch_execute(&format!("LISTEN {channel}"))
                        .await
                        .is_ok()
                    {
                        // Whatever changed while no one listened is unknown.
                        if !first && deliver.send(Notice::Lost).is_err() {
                            return;
                        }
                        while let Some(payload) = rx.recv().await {
                            if let Some(touched) = parse_notice(&payload, &instance)
                                && deliver.send(Notice::Changed(touched)).is_err()
                            {
                                return;
                            }
                        }
                        tracing::warn!(
                            "the connection that follows other runtimes' changes was lost"
                        );
                        if deliver.send(Notice::Lost).is_err() {
                            return;
                        }
                    }
                    pump.abort();
                }
                first = false;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
    }

    /// Tells the other runtimes of something that is not stored (a failed login, which
    /// each runtime counts in memory): a notice as a commit sends, naming `keys` of
    /// `topic`, sent at once outside any transaction.
    pub fn announce(&self, topic: &str, keys: &[String]) -> StoreResult<()> {
        let mut touched = Touched::new();
        touched.insert(
            topic.to_string(),
            Some(keys.iter().take(KEYS_PER_NOTICE).cloned().collect()),
        );
        let payload = notice_payload(&self.instance, &touched);
        let conn = self.checkout()?;
        self.count_statement();
        wait(
            conn.client
                .execute("SELECT pg_notify($1, $2)", &[&self.channel(), &payload]),
        )
        .map_err(classify)?;
        self.checkin(conn);
        Ok(())
    }

    /// Names the tables of this runtime's schema (`store::check`, backups).
    pub fn tables(&self) -> StoreResult<Vec<String>> {
        let conn = self.checkout()?;
        let rows = wait(conn.client.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
            &[&self.schema],
        ))
        .map_err(classify)?;
        self.checkin(conn);
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.lock().ok().and_then(|mut r| r.take()) {
            // Dropping a runtime inside another's context panics; this never waits.
            rt.shutdown_background();
        }
    }
}

/// A notice's payload: `{"from": instance, "tables": {table: [keys] | null}}`.
fn notice_payload(instance: &str, touched: &Touched) -> String {
    serde_json::json!({ "from": instance, "tables": touched }).to_string()
}

fn parse_notice(payload: &str, own: &str) -> Option<Touched> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    if v.get("from")?.as_str()? == own {
        return None;
    }
    serde_json::from_value(v.get("tables")?.clone()).ok()
}

/// A session-level advisory lock, released when dropped.
pub struct HeldLock {
    engine: Arc<Engine>,
    conn: Option<Conn>,
    lock: Lock,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let (a, b) = self.engine.lock_args(self.lock);
            if wait(
                conn.client
                    .execute("SELECT pg_advisory_unlock($1, $2)", &[&a, &b]),
            )
            .is_ok()
            {
                self.engine.checkin(conn);
            }
            // Otherwise the connection is dropped, and the server releases the lock with it.
        }
    }
}

/// One transaction on one connection.
pub struct Txn {
    engine: Arc<Engine>,
    conn: RefCell<Option<Conn>>,
    write: bool,
    touched: RefCell<Touched>,
    created: RefCell<Vec<String>>,
    finished: Cell<bool>,
    /// When a write transaction was granted the write lock.
    locked_at: std::time::Instant,
    /// Rows written and not sent yet: table → key → value. Sent in one statement per table
    /// before anything else is (a read, a delete, the commit), so a transaction reads its
    /// own writes and an encounter with its observations and their index entries costs a
    /// few round trips instead of one per row.
    pending: RefCell<Pending>,
    /// A read transaction's `BEGIN` (`BEGIN_READ`) is not sent yet: it travels with the
    /// first statement (pipelined, one round trip for both), and a read that sends nothing
    /// sends no `BEGIN`.
    begin_pending: Cell<bool>,
    /// A statement of this transaction failed. PostgreSQL has then aborted the transaction,
    /// and would answer its `COMMIT` with a silent `ROLLBACK`, not an error: a caller that
    /// went on after a failure (a read it could do without) must not have its writes
    /// acknowledged, so `commit` refuses.
    failed: Cell<bool>,
}

/// A read transaction's opening statement. PostgreSQL takes a `REPEATABLE READ`
/// transaction's snapshot at its first statement, so sending `BEGIN` with that statement
/// changes nothing of what the transaction sees.
const BEGIN_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// Rows written and not sent yet, by table and key.
type Pending = BTreeMap<&'static str, BTreeMap<Vec<u8>, Vec<u8>>>;

/// Rows sent in one statement at most.
const BATCH_ROWS: usize = 5_000;

impl Txn {
    /// A snapshot for reading (its `BEGIN` goes with its first statement).
    pub fn read(engine: &Arc<Engine>) -> StoreResult<Txn> {
        Ok(Txn::on(engine, engine.checkout()?, false))
    }

    /// The write transaction: waits until no other runtime's is running.
    pub fn write(engine: &Arc<Engine>) -> StoreResult<Txn> {
        let (a, b) = engine.lock_args(Lock::Write);
        let conn = engine.checkout()?;
        engine.count_statement();
        wait(
            conn.client
                .batch_execute(&format!("BEGIN; SELECT pg_advisory_xact_lock({a}, {b})")),
        )
        .map_err(classify)?;
        Ok(Txn::on(engine, conn, true))
    }

    /// A transaction on `conn`: a write one already begun, a read one not yet.
    fn on(engine: &Arc<Engine>, conn: Conn, write: bool) -> Txn {
        Txn {
            locked_at: std::time::Instant::now(),
            pending: RefCell::default(),
            engine: engine.clone(),
            conn: RefCell::new(Some(conn)),
            write,
            touched: RefCell::default(),
            created: RefCell::default(),
            finished: Cell::new(false),
            begin_pending: Cell::new(!write),
            failed: Cell::new(false),
        }
    }

    /// Notes that a statement of this transaction failed (see `failed`).
    fn failing(&self, e: tokio_postgres::Error) -> StoreError {
        self.failed.set(true);
        classify(e)
    }

    /// Sends a statement, preceded in the same round trip by the transaction's `BEGIN`
    /// when that has not been sent yet.
    fn run<T>(
        &self,
        conn: &Conn,
        statement: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> StoreResult<T> {
        self.engine.count_statement();
        if !self.begin_pending.replace(false) {
            return wait(statement).map_err(|e| self.failing(e));
        }
        // Both requests are queued on the connection before either answer is awaited.
        self.engine.count_statement();
        let (begun, answer) = wait(futures_util::future::join(
            conn.client.batch_execute(BEGIN_READ),
            statement,
        ));
        begun.map_err(|e| self.failing(e))?;
        answer.map_err(|e| self.failing(e))
    }

    /// Commits durably, then tells the other runtimes what changed (outside the
    /// transaction, in the same round trip). Answers what changed.
    pub fn commit(self) -> StoreResult<Touched> {
        self.flush()?;
        if self.failed.get() {
            // Dropped unfinished, the transaction is rolled back.
            return Err(StoreError::Redb(
                "PostgreSQL: a statement of this transaction failed, so it was not committed"
                    .into(),
            ));
        }
        let touched = self.touched.take();
        let channel = self.engine.channel();
        let mut sql = String::from("COMMIT");
        if !touched.is_empty() {
            let payload = notice_payload(&self.engine.instance, &touched);
            if payload.len() < 7900 {
                sql.push_str(&format!(
                    "; SELECT pg_notify('{channel}', '{}')",
                    payload.replace('\'', "''")
                ));
            } else {
                let all: Touched = touched.keys().map(|t| (t.clone(), None)).collect();
                sql.push_str(&format!(
                    "; SELECT pg_notify('{channel}', '{}')",
                    notice_payload(&self.engine.instance, &all).replace('\'', "''")
                ));
            }
        }
        let result = {
            let conn = self.conn.borrow();
            let conn = conn
                .as_ref()
                .expect("an open transaction has its connection");
            self.engine.count_statement();
            wait(conn.client.batch_execute(&sql))
        };
        self.finished.set(true);
        if self.write
            && let Ok(mut holds) = self.engine.counters.holds.lock()
        {
            if holds.len() >= HOLDS_KEPT {
                holds.pop_front();
            }
            holds.push_back(self.locked_at.elapsed().as_micros().min(u32::MAX as u128) as u32);
        }
        match result {
            Ok(()) => {
                let mut created = self.engine.created.lock().expect("created tables");
                created.extend(self.created.take());
                Ok(touched)
            }
            Err(e) => {
                // The connection's state is unknown: it is not reused.
                self.conn.borrow_mut().take();
                Err(classify(e))
            }
        }
    }

    fn statement(&self, conn: &mut Conn, sql: &str) -> StoreResult<Statement> {
        if let Some(s) = conn.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = wait(conn.client.prepare(sql)).map_err(|e| self.failing(e))?;
        conn.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Sends the rows written and not sent yet.
    fn flush(&self) -> StoreResult<()> {
        if self.pending.borrow().is_empty() {
            return Ok(());
        }
        let pending = self.pending.take();
        for (table, rows) in pending {
            let sql = format!(
                "INSERT INTO {} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
                quote(table)
            );
            let rows: Vec<(Vec<u8>, Vec<u8>)> = rows.into_iter().collect();
            for chunk in rows.chunks(BATCH_ROWS) {
                let keys: Vec<&[u8]> = chunk.iter().map(|(k, _)| k.as_slice()).collect();
                let values: Vec<&[u8]> = chunk.iter().map(|(_, v)| v.as_slice()).collect();
                self.send(&sql, &[&keys, &values])?;
            }
        }
        Ok(())
    }

    fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<tokio_postgres::Row>> {
        self.flush()?;
        let mut conn = self.conn.borrow_mut();
        let conn = conn
            .as_mut()
            .expect("an open transaction has its connection");
        let statement = self.statement(conn, sql)?;
        self.run(conn, conn.client.query(&statement, params))
    }

    fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        self.flush()?;
        self.send(sql, params)
    }

    /// Executes a statement as it is (`execute` first sends the rows pending).
    fn send(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        let mut conn = self.conn.borrow_mut();
        let conn = conn
            .as_mut()
            .expect("an open transaction has its connection");
        let statement = self.statement(conn, sql)?;
        self.run(conn, conn.client.execute(&statement, params))
    }

    /// A table to read (it must exist).
    pub fn table(&self, name: &'static str) -> StoreResult<TableRef<'_>> {
        Ok(TableRef { txn: self, name })
    }

    /// A table to write, created if it does not exist yet.
    pub fn create_table(&self, name: &'static str) -> StoreResult<TableRef<'_>> {
        let known = self
            .engine
            .created
            .lock()
            .expect("created tables")
            .contains(name)
            || self.created.borrow().iter().any(|c| c == name);
        if !known {
            self.execute(
                &format!(
                    "CREATE TABLE IF NOT EXISTS {} (k bytea PRIMARY KEY, v bytea NOT NULL)",
                    quote(name)
                ),
                &[],
            )?;
            self.created.borrow_mut().push(name.to_string());
        }
        Ok(TableRef { txn: self, name })
    }

    /// Drops a table with its rows (one statement, however many; an index no version uses
    /// any more). Other runtimes learn nothing of it: none of this version reads it.
    pub fn drop_table(&self, name: &'static str) -> StoreResult<()> {
        self.execute(&format!("DROP TABLE IF EXISTS {}", quote(name)), &[])?;
        self.created.borrow_mut().retain(|c| c != name);
        self.engine
            .created
            .lock()
            .expect("created tables")
            .remove(name);
        Ok(())
    }

    fn touch(&self, table: &str, key: Option<&[u8]>) {
        if !self.write {
            return;
        }
        let mut touched = self.touched.borrow_mut();
        let entry = touched
            .entry(table.to_string())
            .or_insert_with(|| Some(BTreeSet::new()));
        match (entry.as_mut(), key) {
            (Some(keys), Some(k)) if keys.len() < KEYS_PER_NOTICE => {
                keys.insert(String::from_utf8_lossy(k).into_owned());
            }
            (Some(_), _) => *entry = None,
            (None, _) => {}
        }
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        let Some(conn) = self.conn.get_mut().take() else {
            return;
        };
        if self.finished.get() || self.begin_pending.get() {
            // Committed, or a read that never began.
            self.engine.checkin(conn);
        } else if !self.write {
            // A read ends without waiting for its answer: the `ROLLBACK` is queued on the
            // connection (requests go out in order), so whoever takes the connection next
            // sends its own statements after it. Its answer, read by the connection's
            // task, is dropped; a connection that failed is found closed at checkout.
            use std::future::Future as _;
            {
                let rollback = std::pin::pin!(conn.client.batch_execute("ROLLBACK"));
                let _ =
                    rollback.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
            }
            self.engine.checkin(conn);
        } else if wait(conn.client.batch_execute("ROLLBACK")).is_ok() {
            // An unfinished write is rolled back before its connection is reused.
            self.engine.checkin(conn);
        }
    }
}

/// A table opened in a transaction.
pub struct TableRef<'t> {
    txn: &'t Txn,
    name: &'static str,
}

impl<'t> TableRef<'t> {
    pub fn get(&self, key: &[u8]) -> StoreResult<Option<Vec<u8>>> {
        let rows = self.txn.query(
            &format!("SELECT v FROM {} WHERE k = $1", quote(self.name)),
            &[&key],
        )?;
        Ok(rows.first().map(|r| r.get::<_, Vec<u8>>(0)))
    }

    /// The rows of several keys, by key (one statement).
    pub fn get_many(
        &self,
        keys: &[Vec<u8>],
    ) -> StoreResult<std::collections::HashMap<Vec<u8>, Vec<u8>>> {
        if keys.is_empty() {
            return Ok(Default::default());
        }
        let wanted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let rows = self.txn.query(
            &format!("SELECT k, v FROM {} WHERE k = ANY($1)", quote(self.name)),
            &[&wanted],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1)))
            .collect())
    }

    /// Every row of several key ranges `[low, high)`, each range's rows in key order and
    /// the ranges in the order given, in one statement (each range an index scan).
    pub fn rows_in_ranges(
        &self,
        ranges: &[crate::store::kv::KeyRange],
    ) -> StoreResult<Vec<crate::store::kv::RawRow>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let lows: Vec<&[u8]> = ranges.iter().map(|(l, _)| l.as_slice()).collect();
        let highs: Vec<&[u8]> = ranges.iter().map(|(_, h)| h.as_slice()).collect();
        // Each range its own index scan (LATERAL), whatever the planner would estimate.
        let rows = self.txn.query(
            &format!(
                "SELECT s.k, s.v FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS r(low, high, n) \
                 CROSS JOIN LATERAL (SELECT k, v FROM {} WHERE k >= r.low AND k < r.high ORDER BY k) s \
                 ORDER BY r.n, s.k",
                quote(self.name)
            ),
            &[&lows, &highs],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1)))
            .collect())
    }

    /// Writes a row: sent with the others before the transaction's next statement.
    pub fn put(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        let full = {
            let mut pending = self.txn.pending.borrow_mut();
            pending
                .entry(self.name)
                .or_default()
                .insert(key.to_vec(), value.to_vec());
            pending.values().map(BTreeMap::len).sum::<usize>() >= BATCH_ROWS
        };
        self.txn.touch(self.name, Some(key));
        if full {
            self.txn.flush()?;
        }
        Ok(())
    }

    pub fn delete(&self, key: &[u8]) -> StoreResult<bool> {
        let n = self.txn.execute(
            &format!("DELETE FROM {} WHERE k = $1", quote(self.name)),
            &[&key],
        )?;
        self.txn.touch(self.name, Some(key));
        Ok(n > 0)
    }

    /// Removes many rows in one statement.
    pub fn delete_many(&self, keys: &[Vec<u8>]) -> StoreResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        self.txn.execute(
            &format!("DELETE FROM {} WHERE k = ANY($1)", quote(self.name)),
            &[&keys],
        )?;
        for k in keys {
            self.txn.touch(self.name, Some(k));
        }
        Ok(())
    }

    pub fn clear(&self) -> StoreResult<()> {
        self.txn
            .execute(&format!("DELETE FROM {}", quote(self.name)), &[])?;
        self.txn.touch(self.name, None);
        Ok(())
    }

    #[allow(clippy::len_without_is_empty)] // `kv::ReadableTable::is_empty` reads one row
    pub fn len(&self) -> StoreResult<u64> {
        let rows = self
            .txn
            .query(&format!("SELECT count(*) FROM {}", quote(self.name)), &[])?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0)) as u64)
    }

    pub fn range(&self, lower: Bound<Vec<u8>>, upper: Bound<Vec<u8>>) -> Rows<'t> {
        Rows {
            table: TableRef {
                txn: self.txn,
                name: self.name,
            },
            lower,
            upper,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_done: false,
            back_done: false,
            chunk: 32,
        }
    }
}

type Pair = (Vec<u8>, Vec<u8>);

/// A range read in chunks from either end, as it is consumed: a page of newest-first keys
/// reads only the page's rows, not the whole range.
pub struct Rows<'t> {
    table: TableRef<'t>,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    front: VecDeque<Pair>,
    back: VecDeque<Pair>,
    front_done: bool,
    back_done: bool,
    chunk: i64,
}

fn above(k: &[u8], lower: &Bound<Vec<u8>>) -> bool {
    match lower {
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below(k: &[u8], upper: &Bound<Vec<u8>>) -> bool {
    match upper {
        Bound::Included(u) => k <= u.as_slice(),
        Bound::Excluded(u) => k < u.as_slice(),
        Bound::Unbounded => true,
    }
}

impl Rows<'_> {
    fn fetch(&mut self, ascending: bool) -> StoreResult<Vec<Pair>> {
        let mut conditions = Vec::new();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        let lower = match &self.lower {
            Bound::Included(l) => Some((">=", l)),
            Bound::Excluded(l) => Some((">", l)),
            Bound::Unbounded => None,
        };
        let upper = match &self.upper {
            Bound::Included(u) => Some(("<=", u)),
            Bound::Excluded(u) => Some(("<", u)),
            Bound::Unbounded => None,
        };
        for (op, bound) in lower.into_iter().chain(upper) {
            params.push(bound);
            conditions.push(format!("k {op} ${}", params.len()));
        }
        params.push(&self.chunk);
        let sql = format!(
            "SELECT k, v FROM {}{}{} ORDER BY k {} LIMIT ${}",
            quote(self.table.name),
            if conditions.is_empty() { "" } else { " WHERE " },
            conditions.join(" AND "),
            if ascending { "ASC" } else { "DESC" },
            params.len()
        );
        let rows = self.table.txn.query(&sql, &params)?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1)))
            .collect())
    }

    fn refill(&mut self, ascending: bool) -> StoreResult<()> {
        let rows = self.fetch(ascending)?;
        let complete = (rows.len() as i64) < self.chunk;
        self.chunk = (self.chunk * 2).min(2048);
        if ascending {
            self.front.extend(rows);
            self.front_done = complete;
        } else {
            self.back.extend(rows);
            self.back_done = complete;
        }
        Ok(())
    }
}

impl Iterator for Rows<'_> {
    type Item = StoreResult<Pair>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((k, v)) = self.front.pop_front() {
                if !below(&k, &self.upper) {
                    self.front.clear();
                    self.front_done = true;
                    return None;
                }
                self.lower = Bound::Excluded(k.clone());
                return Some(Ok((k, v)));
            }
            if self.front_done {
                return None;
            }
            if let Err(e) = self.refill(true) {
                self.front_done = true;
                self.back_done = true;
                return Some(Err(e));
            }
        }
    }
}

impl DoubleEndedIterator for Rows<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((k, v)) = self.back.pop_front() {
                if !above(&k, &self.lower) {
                    self.back.clear();
                    self.back_done = true;
                    return None;
                }
                self.upper = Bound::Excluded(k.clone());
                return Some(Ok((k, v)));
            }
            if self.back_done {
                return None;
            }
            if let Err(e) = self.refill(false) {
                self.front_done = true;
                self.back_done = true;
                return Some(Err(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_name_their_sender_and_skip_their_own() {
        let mut touched = Touched::new();
        touched.insert("patients".into(), Some(["p1".to_string()].into()));
        touched.insert("settings".into(), None);
        let payload = notice_payload("me", &touched);
        assert_eq!(parse_notice(&payload, "me"), None);
        assert_eq!(parse_notice(&payload, "other"), Some(touched));
        assert_eq!(parse_notice("not json", "other"), None);
    }

    #[test]
    fn bounds_keep_a_range_inside_them() {
        let lower = Bound::Excluded(b"b".to_vec());
        let upper = Bound::Included(b"d".to_vec());
        assert!(!above(b"b", &lower) && above(b"c", &lower));
        assert!(below(b"d", &upper) && !below(b"e", &upper));
        assert!(above(b"", &Bound::Unbounded) && below(b"\xff", &Bound::Unbounded));
    }
}
