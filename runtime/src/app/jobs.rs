//! Jobs the application runs in the background: the auto-close of visits left open, the
//! reports' schedules, and the stock rules' evaluation.

use crate::domains::visit::close_stale_visits;
use crate::http::AppState;
use chrono::Utc;

/// Runs `close_stale_visits` every `every` until the process ends.
pub fn spawn_auto_close(state: std::sync::Arc<AppState>, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                // Several runtimes on one database: the one that takes the jobs' lock runs
                // it, the others skip this round.
                let _alone = match st.store.server() {
                    Some(pg) => match pg.try_hold(crate::store::pg::Lock::Jobs)? {
                        Some(held) => Some(held),
                        None => return Ok(0),
                    },
                    None => None,
                };
                close_stale_visits(&st.clinic(), Utc::now())
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
                let _alone = match st.store.server() {
                    Some(pg) => match pg.try_hold(crate::store::pg::Lock::ReportSchedules)? {
                        Some(held) => Some(held),
                        None => return Ok(Vec::new()),
                    },
                    None => None,
                };
                let now = Utc::now();
                crate::domains::report::due(&st.store, now.date_naive(), now)
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
                let _alone = match st.store.server() {
                    Some(pg) => match pg.try_hold(crate::store::pg::Lock::StockRules)? {
                        Some(held) => Some(held),
                        None => return Ok(Default::default()),
                    },
                    None => None,
                };
                crate::domains::stock::evaluation::evaluate_due_rules(&st, Utc::now())
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
