//! Fail points for the integration tests: conditions that cannot be produced from outside on a
//! test machine (a connection task that panics, a mount that never answers) are switched on by
//! the environment variable `PI_IDE_FAILPOINTS`, read once. Unset (always, for users), every
//! check here is a load of a static and nothing else.
//!
//! `PI_IDE_FAILPOINTS` is a comma-separated list of:
//! - `panic-on=<method>`: a connection task panics when a request of that method arrives;
//! - `hang-under=<folder>`: any look at a path under that folder blocks for an hour, as on an
//!   NFS mount whose server is gone;
//! - `slow-stage-ms=<n>`: staging an openDiff's proposal takes n ms longer (a slow disk), so
//!   that what arrives meanwhile (a close_tab) can be tested;
//! - `watch-limit=<n>`: the system refuses a watch past n folders, as inotify does at
//!   fs.inotify.max_user_watches (shared by every program of the user's).

use std::path::Path;
use std::sync::OnceLock;

#[derive(Default)]
struct Points {
    panic_on: Option<String>,
    hang_under: Option<String>,
    slow_stage_ms: u64,
    watch_limit: Option<usize>,
}

fn points() -> &'static Points {
    static POINTS: OnceLock<Points> = OnceLock::new();
    POINTS.get_or_init(|| {
        let mut p = Points::default();
        let spec = std::env::var("PI_IDE_FAILPOINTS").unwrap_or_default();
        for item in spec.split(',') {
            match item.split_once('=') {
                Some(("panic-on", m)) => p.panic_on = Some(m.to_owned()),
                Some(("hang-under", d)) => p.hang_under = Some(d.to_owned()),
                Some(("slow-stage-ms", n)) => p.slow_stage_ms = n.parse().unwrap_or(0),
                Some(("watch-limit", n)) => p.watch_limit = n.parse().ok(),
                _ => {}
            }
        }
        p
    })
}

/// Panics when `method` is the one `panic-on` names.
pub fn panic_on(method: &str) {
    if points().panic_on.as_deref() == Some(method) {
        panic!("fail point: panic-on={method}");
    }
}

/// Blocks for an hour when `path` is under the folder `hang-under` names.
pub fn hang_if_under(path: &Path) {
    if let Some(dir) = &points().hang_under {
        if path.starts_with(dir) {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// Sleeps for `slow-stage-ms` (staging a proposal), saying so in the log first (a test waits
/// for that line to know the staging has begun).
pub fn slow_stage() {
    let ms = points().slow_stage_ms;
    if ms > 0 {
        crate::warn!("fail point: staging slowed by {ms} ms");
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Whether the `watch-limit` stands in for the system's limit of watched folders, at the
/// `n`-th folder watched.
pub fn watch_limit_reached(n: usize) -> bool {
    points().watch_limit.is_some_and(|limit| n >= limit)
}
