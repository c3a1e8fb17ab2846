//! Operations run by the same binary in other containers: the image's health check, and the
//! backup service that takes a snapshot from the running back end on a schedule.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `runtime healthcheck`: 0 when `health/started` answers 200 on the local port.
pub fn healthcheck(listen: std::net::SocketAddr, app_path: &str) -> bool {
    let port = listen.port();
    let url = format!("http://127.0.0.1:{port}{app_path}/health/started");
    matches!(ureq::get(&url).call(), Ok(r) if r.status() == 200)
}

/// Settings of the backup service, from `EMR_BACKUP_*` variables.
#[derive(Debug, Clone)]
pub struct BackupConfig {
    /// `EMR_BACKUP_URL`, e.g. `http://backend:8080/openmrs/ws/rest/v1/backup`.
    pub url: String,
    pub username: String,
    pub password: String,
    /// `EMR_BACKUP_DIR`, default `/backups`.
    pub dir: PathBuf,
    /// `EMR_BACKUP_KEEP`, default 7.
    pub keep: usize,
    /// `EMR_BACKUP_INTERVAL_SECONDS`, default one day.
    pub interval: Duration,
}

impl BackupConfig {
    pub fn from_env() -> Result<BackupConfig, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let number = |k: &str, default: u64| -> Result<u64, String> {
            var(k)
                .map(|v| v.parse().map_err(|_| format!("{k} is not a number")))
                .transpose()
                .map(|v| v.unwrap_or(default))
        };
        Ok(BackupConfig {
            url: var("EMR_BACKUP_URL")
                .unwrap_or_else(|| "http://backend:8080/openmrs/ws/rest/v1/backup".into()),
            username: var("EMR_BACKUP_USERNAME")
                .or_else(|| var("EMR_ADMIN_USERNAME"))
                .unwrap_or_else(|| "admin".into()),
            password: var("EMR_BACKUP_PASSWORD")
                .or_else(|| var("EMR_ADMIN_PASSWORD"))
                .ok_or("set EMR_BACKUP_PASSWORD (or EMR_ADMIN_PASSWORD) for the backup account")?,
            dir: var("EMR_BACKUP_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/backups")),
            keep: number("EMR_BACKUP_KEEP", 7)?.max(1) as usize,
            interval: Duration::from_secs(number("EMR_BACKUP_INTERVAL_SECONDS", 86_400)?.max(60)),
        })
    }
}

/// Takes one backup into `dir`: streams it to a `.partial` file, checks its end line,
/// then renames it; finally keeps only the newest `keep` backups. Returns the file.
pub fn take_backup(cfg: &BackupConfig) -> Result<PathBuf, String> {
    use base64::Engine;
    use std::io::{BufRead, Seek, Write};
    std::fs::create_dir_all(&cfg.dir)
        .map_err(|e| format!("cannot create {}: {e}", cfg.dir.display()))?;
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", cfg.username, cfg.password));
    let response = ureq::get(&cfg.url)
        .header("Authorization", &format!("Basic {basic}"))
        .call()
        .map_err(|e| format!("backup request failed: {e}"))?;
    let name = format!(
        "emr-backup-{}.ndjson",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
    );
    let partial = cfg.dir.join(format!("{name}.partial"));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&partial)
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    let mut reader = response.into_body().into_reader();
    std::io::copy(&mut reader, &mut file).map_err(|e| format!("backup interrupted: {e}"))?;
    file.flush().map_err(|e| e.to_string())?;
    file.sync_all().map_err(|e| e.to_string())?;
    // A complete snapshot ends with its end line.
    file.rewind().map_err(|e| e.to_string())?;
    let last = std::io::BufReader::new(&file)
        .lines()
        .map_while(Result::ok)
        .last()
        .unwrap_or_default();
    if !last.contains("\"end\":true") {
        let _ = std::fs::remove_file(&partial);
        return Err("the backup stream ended early; no backup kept".into());
    }
    let done = cfg.dir.join(&name);
    std::fs::rename(&partial, &done).map_err(|e| e.to_string())?;
    prune(&cfg.dir, cfg.keep);
    Ok(done)
}

/// Keeps the newest `keep` complete backups (names sort by time).
fn prune(dir: &Path, keep: usize) {
    let mut backups: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("emr-backup-") && n.ends_with(".ndjson"))
        })
        .collect();
    backups.sort();
    let excess = backups.len().saturating_sub(keep);
    for old in backups.into_iter().take(excess) {
        if let Err(e) = std::fs::remove_file(&old) {
            tracing::warn!(file = %old.display(), "cannot remove an old backup: {e}");
        }
    }
}

/// `runtime backup-service`: one backup at start (once the back end answers), then one
/// per interval, forever. Failures are logged and retried at the next interval.
pub fn backup_service(cfg: &BackupConfig) -> ! {
    loop {
        match take_backup(cfg) {
            Ok(file) => tracing::info!(file = %file.display(), "backup taken"),
            Err(e) => tracing::error!("{e}"),
        }
        std::thread::sleep(cfg.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "emr-backup-20260101T000000.000Z.ndjson",
            "emr-backup-20260102T000000.000Z.ndjson",
            "emr-backup-20260103T000000.000Z.ndjson",
            "other.txt",
        ] {
            std::fs::write(dir.path().join(n), "x").unwrap();
        }
        prune(dir.path(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "emr-backup-20260102T000000.000Z.ndjson",
                "emr-backup-20260103T000000.000Z.ndjson",
                "other.txt"
            ]
        );
    }
}
