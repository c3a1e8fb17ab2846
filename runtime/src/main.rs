//! The `runtime` binary: reads its settings from the environment, opens the store, starts
//! serving the embedded bundle, and drains requests on SIGTERM or Ctrl-C.
//! `runtime restore FILE` fills an empty data directory from a backup instead.

use clap::{Parser, Subcommand};
use runtime::app::app;
use runtime::app::start::{open_store, start};
use runtime::embedded::EMBEDDED_BUNDLE;
use runtime::http::Config;
use std::process::ExitCode;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator asks for transparent huge pages on its arenas, so while the store's page
/// cache fills (the first minutes after a start, or after a quiet night), every few
/// hundred kilobytes of newly read pages costs one 2 MiB page zeroed at once: a call every
/// twenty-five or so charts took 5 to 8 ms instead of 1 on this project's virtual machines
/// (docs/benchmarks.md, "Latency tails"). Ordinary 4 KiB pages spread that cost evenly;
/// latency-bound databases (Redis, MongoDB) advise the same. It applies to the whole
/// process, arenas already mapped included, from the next page fault on.
fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("transparent huge pages stay on: {e}");
    }
}

#[derive(Parser)]
#[command(
    name = "runtime",
    version,
    about = "Serve the embedded content over an OpenMRS-compatible REST API (settings come from EMR_* variables)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Fill an empty data directory (EMR_DATA_DIR) from a backup taken with GET ws/rest/v1/backup.
    Restore {
        /// The backup file (JSON lines).
        file: std::path::PathBuf,
    },
    /// Read every record and index of the store (EMR_DATA_DIR/store.redb) and report what is
    /// inconsistent; exit 1 if anything is. Stop the service first.
    CheckStore,
    /// Give back the space the store file no longer uses. Stop the service first.
    CompactStore,
    /// Exit 0 when the local service answers health/started (the image's HEALTHCHECK).
    Healthcheck,
    /// Take a backup from the running back end now and on a schedule (EMR_BACKUP_* variables).
    BackupService,
    /// Take one backup from the running back end into EMR_BACKUP_DIR and exit.
    Backup,
}

fn main() -> ExitCode {
    let began = Instant::now();
    without_transparent_huge_pages();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("EMR_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Some(Command::Healthcheck) => {
            return if runtime::ops::healthcheck(config.listen, &config.app_path) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            };
        }
        Some(Command::BackupService | Command::Backup) => {
            let cfg = match runtime::ops::BackupConfig::from_env() {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("{e}");
                    return ExitCode::from(2);
                }
            };
            if matches!(cli.command, Some(Command::BackupService)) {
                runtime::ops::backup_service(&cfg);
            }
            return match runtime::ops::take_backup(&cfg) {
                Ok(file) => {
                    tracing::info!(file = %file.display(), "backup taken");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    tracing::error!("{e}");
                    ExitCode::from(1)
                }
            };
        }
        Some(Command::CheckStore | Command::CompactStore) if config.database.is_some() => {
            tracing::error!(
                "check-store and compact-store read the redb file; a PostgreSQL store is checked and compacted with PostgreSQL's own tools (pg_amcheck, VACUUM)"
            );
            return ExitCode::from(2);
        }
        Some(Command::CheckStore) => return check_store(&config),
        Some(Command::CompactStore) => {
            let path = config.data_dir.join("store.redb");
            return match runtime::store::check::compact_store(&path) {
                Ok((before, after)) => {
                    tracing::info!(file = %path.display(), before, after, "store compacted");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    tracing::error!("{e}");
                    ExitCode::from(1)
                }
            };
        }
        _ => {}
    }
    let restoring = matches!(cli.command, Some(Command::Restore { .. }));
    if let Some(Command::Restore { file }) = &cli.command {
        // The whole backup is checked before the data directory is touched.
        let checked = std::fs::File::open(file)
            .map_err(runtime::store::RestoreError::from)
            .and_then(|f| {
                runtime::store::verify_snapshot(
                    std::io::BufReader::new(f),
                    &runtime::domains::REGISTRY,
                )
            });
        if let Err(e) = checked {
            tracing::error!(file = %file.display(), "restore refused: {e}");
            return ExitCode::from(1);
        }
    }
    if !restoring && let Err(e) = runtime::app::start::check_first_start(&config) {
        tracing::error!("cannot start: {e}");
        return ExitCode::from(1);
    }
    let store = match open_store(&config) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(1);
        }
    };
    if let Some(Command::Restore { file }) = cli.command {
        return restore(&store, &file);
    }
    let listen = config.listen;
    // Start-up reads the store (settings, roles, the administrator); redb may panic on a
    // page damaged outside it, which is reported as damage rather than a crash.
    let store_path = config.data_dir.join("store.redb");
    let started =
        runtime::store::medium::catch_panic(|| start(config, EMBEDDED_BUNDLE.to_vec(), store));
    let (state, report) = match started {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::error!("cannot start: {e}");
            return ExitCode::from(1);
        }
        Err(panic) => {
            let e = runtime::store::StoreError::Damaged {
                path: store_path,
                detail: panic,
            };
            tracing::error!("cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(listen).await {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(%listen, "cannot listen: {e}");
                return ExitCode::from(1);
            }
        };
        {
            let catalog = state.catalog.load();
            let h = &catalog.header;
            let counts: Vec<String> = catalog
                .content
                .counts()
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| format!("{k}={n}"))
                .collect();
            tracing::info!(
                bundle = %h.content_hash,
                build_type = h.build_type.as_str(),
                site = h.site.as_deref().unwrap_or("-"),
                entities = %counts.join(" "),
                admin_created = report.admin_created,
                dropped_settings = ?report.dropped_settings,
                address = %listen,
                ready_ms = began.elapsed().as_secs_f64() * 1000.0,
                "ready"
            );
        }
        runtime::app::jobs::spawn_auto_close(state.clone(), std::time::Duration::from_secs(60));
        runtime::app::jobs::spawn_report_schedules(
            state.clone(),
            std::time::Duration::from_secs(60),
        );
        runtime::app::jobs::spawn_stock_rules(state.clone(), std::time::Duration::from_secs(60));
        runtime::app::health::spawn_store_recovery(
            state.clone(),
            std::time::Duration::from_secs(5),
        );
        // Bounded connections with header timeouts; the peer's address reaches handlers
        // (the login throttle counts by it).
        let limits = state.config.connections;
        runtime::serve::serve(listener, app(state), limits, shutdown_signal()).await;
        tracing::info!("stopped");
        ExitCode::SUCCESS
    })
}

fn check_store(config: &Config) -> ExitCode {
    let path = config.data_dir.join("store.redb");
    match runtime::store::check::check_store(&path, &runtime::domains::REGISTRY) {
        Ok(report) => {
            println!("table                                    entries    stored MB       disk MB");
            for t in &report.tables {
                println!(
                    "{:<36} {:>11} {:>12.1} {:>12.1}",
                    t.name,
                    t.entries,
                    t.stored_bytes as f64 / 1e6,
                    t.disk_bytes as f64 / 1e6
                );
            }
            if report.allocated_bytes > 0 {
                println!(
                    "file {:.1} MB: pages in use {:.1} MB, free room {:.1} MB",
                    report.file_bytes as f64 / 1e6,
                    report.allocated_bytes as f64 / 1e6,
                    report.file_bytes.saturating_sub(report.allocated_bytes) as f64 / 1e6
                );
            }
            for p in &report.problems {
                println!("{p}");
            }
            println!(
                "{}: {} records and {} index entries read, {} problem(s)",
                path.display(),
                report.records,
                report.index_entries,
                report.problems.len()
            );
            if report.is_clean() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::from(1)
        }
    }
}

fn restore(store: &runtime::store::Store, file: &std::path::Path) -> ExitCode {
    let input = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) => {
            tracing::error!("cannot open {}: {e}", file.display());
            return ExitCode::from(1);
        }
    };
    match store.restore(input) {
        Ok(n) => {
            tracing::info!(records = n, file = %file.display(), "restored");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!("restore refused: {e}");
            ExitCode::from(1)
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
