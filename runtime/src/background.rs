//! One thread for long read-only work a person waits for but the clinic must not (the
//! month's reports), run at a lower scheduling priority than the threads that answer
//! requests: on a facility's two cores, a report over years of records then takes the
//! time the chart's requests leave, instead of half of it.
//!
//! Work is queued and done in order, one piece at a time; the caller awaits its answer.
//! The priority is Linux's per-thread nice value; where it cannot be set the work runs at
//! the ordinary priority, only sooner than it should.

use std::sync::OnceLock;
use std::sync::mpsc;

/// How much lower than the request threads the work runs (nice 10: when the request
/// threads want the cores, the work gets about a tenth of one).
const NICENESS: i32 = 10;

type Job = Box<dyn FnOnce() + Send>;

fn queue() -> &'static mpsc::Sender<Job> {
    static QUEUE: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("background".into())
            .spawn(move || {
                lower_priority();
                for job in rx {
                    // A job that panics loses its own answer (its caller is told), not the
                    // thread.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .expect("the background thread starts");
        tx
    })
}

#[cfg(target_os = "linux")]
fn lower_priority() {
    // On Linux the nice value is each thread's own: this thread's, not the request threads'.
    let this = rustix::thread::gettid();
    if rustix::process::setpriority_process(Some(this), NICENESS).is_err() {
        tracing::warn!("the background thread runs at the ordinary priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// The scheduling priority (nice value) of the background thread, as the system reports
/// it (tests).
pub fn niceness() -> Option<i32> {
    run(current_niceness).ok().flatten()
}

#[cfg(target_os = "linux")]
fn current_niceness() -> Option<i32> {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        // The fields after the command's closing parenthesis: state is the 3rd field of
        // the line, nice the 19th.
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.to_string()))
        .and_then(|rest| rest.split_whitespace().nth(16)?.parse().ok())
}

#[cfg(not(target_os = "linux"))]
fn current_niceness() -> Option<i32> {
    None
}

/// The background thread was lost (a job panicked): the work was not done.
#[derive(Debug)]
pub struct Lost;

/// Runs `f` on the background thread, after the work queued before it, and waits for it.
pub fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Lost> {
    let (tx, rx) = mpsc::sync_channel(1);
    queue()
        .send(Box::new(move || {
            let _ = tx.send(f());
        }))
        .map_err(|_| Lost)?;
    rx.recv().map_err(|_| Lost)
}

/// `run` for async callers: the request's task waits without holding a thread.
pub async fn run_async<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Lost> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    queue()
        .send(Box::new(move || {
            let _ = tx.send(f());
        }))
        .map_err(|_| Lost)?;
    rx.await.map_err(|_| Lost)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_caller_is_answered_at_a_lower_priority_even_after_a_panic() {
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let order = order.clone();
                std::thread::spawn(move || super::run(move || order.lock().unwrap().push(i)))
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
        let mut done = order.lock().unwrap().clone();
        done.sort();
        assert_eq!(done, vec![0, 1, 2, 3]);
        assert!(super::run(|| panic!("a report's bug")).is_err());
        assert_eq!(super::run(|| 7).unwrap(), 7);
        // At least NICENESS: a test run already niced further keeps its own.
        #[cfg(target_os = "linux")]
        assert!(super::niceness().is_some_and(|n| n >= super::NICENESS));
    }
}
