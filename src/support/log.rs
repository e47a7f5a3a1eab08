//! The log file shared by Rust and Lua (`stdpath("log")/pi-ide.log`). A message below the level
//! is never formatted: the macros check one atomic first.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

pub const OFF: u8 = 0;
pub const ERROR: u8 = 1;
pub const WARN: u8 = 2;
pub const INFO: u8 = 3;
pub const DEBUG: u8 = 4;
pub const TRACE: u8 = 5;

static LEVEL: AtomicU8 = AtomicU8::new(OFF);
static FILE: Mutex<Option<File>> = Mutex::new(None);

pub fn level_from_name(name: &str) -> Option<u8> {
    Some(match name {
        "off" => OFF,
        "error" => ERROR,
        "warn" => WARN,
        "info" => INFO,
        "debug" => DEBUG,
        "trace" => TRACE,
        _ => return None,
    })
}

fn level_name(level: u8) -> &'static str {
    match level {
        ERROR => "ERROR",
        WARN => "WARN",
        INFO => "INFO",
        DEBUG => "DEBUG",
        _ => "TRACE",
    }
}

/// Opens (appending) the log file and sets the level. `OFF` closes it.
pub fn configure(path: &Path, level: u8) -> std::io::Result<()> {
    let mut file = FILE.lock();
    if level == OFF {
        *file = None;
    } else {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        *file = Some(OpenOptions::new().create(true).append(true).open(path)?);
    }
    LEVEL.store(level, Ordering::Release);
    Ok(())
}

#[inline]
pub fn enabled(level: u8) -> bool {
    level != OFF && level <= LEVEL.load(Ordering::Relaxed)
}

pub fn write(level: u8, origin: &str, args: std::fmt::Arguments<'_>) {
    let line = format!(
        "{} {:<5} [{origin}] {args}\n",
        timestamp(),
        level_name(level)
    );
    if let Some(f) = FILE.lock().as_mut() {
        // One write per line: with O_APPEND, lines from Rust and Lua never interleave mid-line.
        let _ = f.write_all(line.as_bytes());
    }
}

/// UTC `YYYY-MM-DDTHH:MM:SS.mmmZ`, without a date crate.
fn timestamp() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_millis()
    )
}

#[macro_export]
macro_rules! log_at {
    ($level:expr, $($arg:tt)*) => {
        if $crate::support::log::enabled($level) {
            $crate::support::log::write($level, "rust", format_args!($($arg)*));
        }
    };
}
#[macro_export]
macro_rules! error { ($($arg:tt)*) => { $crate::log_at!($crate::support::log::ERROR, $($arg)*) }; }
#[macro_export]
macro_rules! warn { ($($arg:tt)*) => { $crate::log_at!($crate::support::log::WARN, $($arg)*) }; }
#[macro_export]
macro_rules! info { ($($arg:tt)*) => { $crate::log_at!($crate::support::log::INFO, $($arg)*) }; }
#[macro_export]
macro_rules! debug { ($($arg:tt)*) => { $crate::log_at!($crate::support::log::DEBUG, $($arg)*) }; }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_shape() {
        let t = timestamp();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }

    #[test]
    fn levels_filter_and_lines_land_in_the_file() {
        let p = std::env::temp_dir().join(format!("pi-ide-log-test-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&p);
        configure(&p, INFO).unwrap();
        assert!(enabled(ERROR) && enabled(INFO) && !enabled(DEBUG));
        crate::info!("hello {}", 1);
        crate::debug!("hidden");
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("INFO  [rust] hello 1"), "{text}");
        assert!(!text.contains("hidden"));
        configure(&p, OFF).unwrap();
        assert!(!enabled(ERROR));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(level_from_name("warn"), Some(WARN));
        assert_eq!(level_from_name("loud"), None);
    }
}
