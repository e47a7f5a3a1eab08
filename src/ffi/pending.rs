//! The checkpoint worker's jobs for pending changes (lua/pi-ide/features/pending/): a folder's
//! watch started and stopped, each batch it saw settle judged (checkpoint/landed.rs) and handed
//! to Lua under the number of the job that started the watch, and a decision written.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use parking_lot::Mutex;
use serde_json::{json, Value as Json};

use super::checkpoint::{name_out, object, queue, Job, Out};
use crate::checkpoint::{Checkpoints, Landed, Name};

/// The watches under way: (folder, state) -> the watch.
static WATCHES: Mutex<Option<HashMap<(Vec<u8>, Vec<u8>), crate::watch::Watch>>> = Mutex::new(None);

/// Starts watching the folder (again: the old watch goes), then takes the snapshot its changes
/// are judged against; how it went.
pub(super) fn watch(cp: &Checkpoints, id: u64, key: &(Vec<u8>, Vec<u8>)) -> Result<Out, String> {
    let (folder, state) = key.clone();
    let root = Path::new(std::ffi::OsStr::from_bytes(&folder)).canonicalize().map_err(|e| e.to_string())?;
    let batch_to_worker = move |changed: Vec<(Vec<u8>, u64)>| {
        let (paths, first): (Vec<Vec<u8>>, Vec<u64>) = changed.into_iter().unzip();
        let bytes = HashMap::from([("folder", vec![folder.clone()]), ("state", vec![state.clone()]), ("paths", paths)]);
        queue(id, Job { fields: json!({"op": "landed", "first_ms": first}), bytes });
    };
    let w = crate::watch::start(&root, cp.ignored_folders(), batch_to_worker)?;
    cp.watch_baseline()?;
    let out = json!({"watch": true, "folders": w.folders, "gave_up": w.gave_up, "setup_ms": w.setup_ms});
    WATCHES.lock().get_or_insert_with(HashMap::new).insert(key.clone(), w);
    Ok(object(out, vec![]))
}

/// Stops the folder's watch, if there is one.
pub(super) fn unwatch(key: &(Vec<u8>, Vec<u8>)) -> Out {
    let gone = WATCHES.lock().as_mut().and_then(|m| m.remove(key)).is_some();
    Out::Json(json!(gone))
}

/// A batch the watch saw settle, judged: `{ landed = { ... }, more = n }`.
pub(super) fn landed(cp: &Checkpoints, job: &Job) -> Result<Out, String> {
    let paths = job.bytes.get("paths").cloned().unwrap_or_default();
    let first: Vec<u64> = job.fields.get("first_ms").and_then(Json::as_array).map(|a| a.iter().filter_map(Json::as_u64).collect()).unwrap_or_default();
    let changed: Vec<(Vec<u8>, u64)> = paths.into_iter().zip(first).collect();
    let batch = cp.landed(&changed)?;
    let list = Out::List(batch.landed.iter().map(landed_out).collect());
    Ok(object(json!({"more": batch.more}), vec![("landed", list)]))
}

fn landed_out(l: &Landed) -> Out {
    let plain = json!({"kind": l.kind, "blob": l.blob, "base_blob": l.base_blob, "not_diffed": l.not_diffed, "no_base": l.no_base});
    let bytes = |b: &Option<Vec<u8>>| Out::Bytes(b.clone());
    object(plain, vec![("path", name_out(&l.path)), ("text", bytes(&l.text)), ("base", bytes(&l.base))])
}

/// Writes a decision: `bytes` (a list of one; none: the file is removed) while the file is
/// still the blob `expected` (JSON null: nothing there).
pub(super) fn put(cp: &Checkpoints, job: &Job, path: Name) -> Result<Out, String> {
    let bytes = job.bytes.get("bytes").and_then(|l| l.first());
    let expected = job.fields.get("expected").and_then(Json::as_str);
    cp.put(&path, bytes.map(Vec::as_slice), expected)?;
    Ok(Out::Json(json!(true)))
}
