//! Jobs the application runs in the background: the auto-close of visits left open, the
//! reports' schedules, and the stock rules' evaluation.

use crate::domains::visit::close_stale_visits;
use crate::http::AppState;
use crate::store::StoreResult;
use crate::store::pg::Lock;
use chrono::Utc;

/// Runs `work` on the runtime that takes the job's `lock`: with several runtimes on one
/// database the others skip this round (answering nothing done); alone, always.
fn alone<T: Default>(
    st: &AppState,
    lock: Lock,
    work: impl FnOnce() -> StoreResult<T>,
) -> StoreResult<T> {
    let _held = match st.store.server() {
        Some(pg) => match pg.try_hold(lock)? {
            Some(held) => Some(held),
            None => return Ok(T::default()),
        },
        None => None,
    };
    work()
}

/// Runs `close_stale_visits` every `every` until the process ends.
pub fn spawn_auto_close(state: std::sync::Arc<AppState>, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                alone(&st, Lock::Jobs, || {
                    close_stale_visits(&st.clinic(), Utc::now())
                })
            })
            .await
            {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => tracing::info!(
                    closed = n,
                    "visits left open past visits.autoCloseVisitTimeout were ended"
                ),
                Ok(Err(e)) => tracing::error!(%e, "the visit auto-close job failed"),
                Err(e) => tracing::error!(%e, "the visit auto-close job panicked"),
            }
        }
    });
}

/// Every `every`: makes the month's request of each monthly report schedule once the month
/// is over, and runs every request left waiting (made by a schedule, or asked before the
/// runtime last stopped), one at a time, in the background.
pub fn spawn_report_schedules(state: std::sync::Arc<AppState>, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let st = state.clone();
            let due = tokio::task::spawn_blocking(move || {
                alone(&st, Lock::ReportSchedules, || {
                    let now = Utc::now();
                    crate::domains::report::due(&st.store, now.date_naive(), now)
                })
            })
            .await;
            match due {
                Ok(Ok(list)) => {
                    for uuid in list {
                        crate::domains::report::rest::spawn_run(state.clone(), uuid);
                    }
                }
                Ok(Err(e)) => tracing::error!(%e, "the report schedule job failed"),
                Err(e) => tracing::error!(%e, "the report schedule job panicked"),
            }
        }
    });
}

/// Every `every`: evaluates the stock rules that are due (`stock::evaluation`), sending
/// their alerts.
pub fn spawn_stock_rules(state: std::sync::Arc<AppState>, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                alone(&st, Lock::StockRules, || {
                    crate::domains::stock::evaluation::evaluate_due_rules(&st, Utc::now())
                })
            })
            .await
            {
                Ok(Ok(done)) if done.alerts > 0 => tracing::info!(
                    rules = done.evaluated,
                    alerts = done.alerts,
                    "stock rules at or below their quantity sent alerts"
                ),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!(%e, "the stock rule evaluation failed"),
                Err(e) => tracing::error!(%e, "the stock rule evaluation panicked"),
            }
        }
    });
}
