//! The workspace's watches for pending changes (lua/pi-ide/features/pending/), kept for the
//! checkpoint worker (ffi/checkpoint.rs), which starts and stops them and judges each batch
//! they see settle (checkpoint/landed.rs).

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use parking_lot::Mutex;
use serde_json::{json, Value as Json};

use crate::checkpoint::Checkpoints;

/// A watch's folder and state folder, as the worker's jobs name them.
pub(super) type Key = (Vec<u8>, Vec<u8>);

/// The watches under way.
static WATCHES: Mutex<Option<HashMap<Key, crate::watch::Watch>>> = Mutex::new(None);

/// Starts watching the folder of `key` (again: the old watch goes), `batch` getting what it
/// sees settle, then takes the snapshot its changes are judged against; how it went.
pub(super) fn watch(cp: &Checkpoints, key: &Key, batch: impl FnMut(Vec<(Vec<u8>, u64)>) + Send + 'static) -> Result<Json, String> {
    let root = Path::new(std::ffi::OsStr::from_bytes(&key.0)).canonicalize().map_err(|e| e.to_string())?;
    let w = crate::watch::start(&root, cp.ignored_folders(), batch)?;
    cp.watch_baseline()?;
    let out = json!({"watch": true, "folders": w.folders, "gave_up": w.gave_up, "setup_ms": w.setup_ms});
    WATCHES.lock().get_or_insert_with(HashMap::new).insert(key.clone(), w);
    Ok(out)
}

/// Stops the folder's watch; whether there was one.
pub(super) fn unwatch(key: &Key) -> bool {
    WATCHES.lock().as_mut().and_then(|m| m.remove(key)).is_some()
}
