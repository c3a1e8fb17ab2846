//! The `runtime` binary: reads its settings from the environment, opens the store, starts
//! serving the embedded bundle, and drains requests on SIGTERM or Ctrl-C.

use runtime::{Config, EMBEDDED_BUNDLE, app, open_store, start};
use std::process::ExitCode;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let began = Instant::now();
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
    let store = match open_store(&config) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(1);
        }
    };
    let listen = config.listen;
    let (state, report) = match start(config, EMBEDDED_BUNDLE.to_vec(), store) {
        Ok(s) => s,
        Err(e) => {
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
                patients = report.patients,
                admin_created = report.admin_created,
                dropped_settings = ?report.dropped_settings,
                address = %listen,
                ready_ms = began.elapsed().as_secs_f64() * 1000.0,
                "ready"
            );
        }
        let server = axum::serve(listener, app(state)).with_graceful_shutdown(shutdown_signal());
        match server.await {
            Ok(()) => {
                tracing::info!("stopped");
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!("server error: {e}");
                ExitCode::from(1)
            }
        }
    })
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
