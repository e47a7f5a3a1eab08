//! The checkpoint functions Lua calls (exported by ffi/mod.rs): jobs queued to one worker
//! thread, which runs them in order (one folder's shadow index is never used twice at once) and
//! wakes Neovim when a result is ready. The work is in checkpoint/; this only converts.

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

use mlua::{Lua, Result as LuaResult, Table, Value};
use parking_lot::Mutex;
use serde_json::{json, Value as Json};

use super::json::{from_lua, to_lua};
use crate::checkpoint::{Checkpoints, Limits};
use crate::support::waker::Waker;

enum Answer {
    Json(Json),
    Bytes(Option<Vec<u8>>),
}

struct Worker {
    jobs: Sender<(u64, Json)>,
    waker: Arc<Waker>,
}

static WORKER: Mutex<Option<Worker>> = Mutex::new(None);
static DONE: Mutex<Vec<(u64, Result<Answer, String>)>> = Mutex::new(Vec::new());
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn err(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

/// Starts the worker (once) and points its wakes at `handle` (a `vim.uv.new_async` userdata).
pub fn checkpoint_attach(_: &Lua, handle: Value) -> LuaResult<()> {
    let Value::UserData(handle) = handle else {
        return Err(err("pi-ide: checkpoint_attach needs the uv async handle"));
    };
    let mut slot = WORKER.lock();
    let worker = slot.get_or_insert_with(spawn);
    // SAFETY: as in `start`: the userdata holds its uv_async_t*, open until checkpoint_detach.
    unsafe { worker.waker.attach(*(handle.to_pointer() as *const *mut c_void)) };
    Ok(())
}

/// No more wakes (Neovim is leaving); jobs still running finish unheard.
pub fn checkpoint_detach(_: &Lua, (): ()) -> LuaResult<()> {
    if let Some(w) = WORKER.lock().as_ref() {
        w.waker.detach();
    }
    Ok(())
}

/// Queues `job` (`{ op, folder, state, ... }`); its number, which the drained result carries.
pub fn checkpoint_job(_: &Lua, job: Value) -> LuaResult<u64> {
    let job = from_lua(job)?;
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let slot = WORKER.lock();
    let w = slot.as_ref().ok_or_else(|| err("pi-ide: checkpoint_attach first"))?;
    w.jobs.send((id, job)).map_err(|_| err("pi-ide: the checkpoint worker has stopped"))?;
    Ok(id)
}

/// The results ready: `{ { id, ok, value | error } ... }`.
pub fn checkpoint_drain(lua: &Lua, (): ()) -> LuaResult<Table> {
    if let Some(w) = WORKER.lock().as_ref() {
        w.waker.clear_pending();
    }
    let done = std::mem::take(&mut *DONE.lock());
    let out = lua.create_table()?;
    for (i, (id, result)) in done.into_iter().enumerate() {
        let t = lua.create_table()?;
        t.set("id", id)?;
        t.set("ok", result.is_ok())?;
        match result {
            Ok(Answer::Json(v)) => t.set("value", to_lua(lua, &v)?)?,
            Ok(Answer::Bytes(b)) => t.set("value", b.map(|b| lua.create_string(b)).transpose()?)?,
            Err(e) => t.set("error", e)?,
        }
        out.raw_set(i + 1, t)?;
    }
    Ok(out)
}

fn spawn() -> Worker {
    let (jobs, rx) = channel::<(u64, Json)>();
    let waker = Arc::new(Waker::default());
    let w = waker.clone();
    std::thread::Builder::new()
        .name("pi-ide-checkpoints".into())
        .spawn(move || {
            let mut open: HashMap<(String, String), Checkpoints> = HashMap::new();
            for (id, job) in rx {
                let r = catch_unwind(AssertUnwindSafe(|| run(&mut open, &job)))
                    .unwrap_or_else(|_| Err("internal error in the checkpoint worker (please report it)".into()));
                DONE.lock().push((id, r));
                w.wake();
            }
        })
        .expect("spawning the checkpoint worker");
    Worker { jobs, waker }
}

fn run(open: &mut HashMap<(String, String), Checkpoints>, job: &Json) -> Result<Answer, String> {
    let text = |k: &str| job.get(k).and_then(Json::as_str).map(str::to_owned);
    let (folder, state) = (text("folder").unwrap_or_default(), text("state").unwrap_or_default());
    let key = (folder.clone(), state.clone());
    if !open.contains_key(&key) {
        let cp = Checkpoints::open(&PathBuf::from(&folder), &PathBuf::from(&state), limits(job))?;
        open.insert(key.clone(), cp);
    }
    let cp = &open[&key];
    let n = job.get("n").and_then(Json::as_u64);
    let strings = |k: &str| -> Vec<String> {
        job.get(k).and_then(Json::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    };
    let value = match text("op").as_deref() {
        Some("begin") => {
            let (turn, closed) = cp.begin(&text("agent").unwrap_or_default(), text("prompt"))?;
            let mut answer = json!({"turn": turn});
            if let Some(closed) = closed {
                answer["closed"] = json!(closed);
            }
            answer
        }
        Some("end") => json!(cp.end(n.ok_or("end needs n")?, &strings("reviewed"))?),
        Some("turns") => json!(cp.turns()),
        Some("changes") => changes(cp, n)?,
        Some("content") => return Ok(Answer::Bytes(cp.content(n.ok_or("content needs n")?, &text("path").unwrap_or_default())?)),
        Some("plan") => plan(cp, n)?,
        Some("undo") => undo(cp, n.ok_or("undo needs n")?, &strings("paths"))?,
        other => return Err(format!("no checkpoint operation {other:?}")),
    };
    Ok(Answer::Json(value))
}

fn limits(job: &Json) -> Limits {
    let d = Limits::default();
    let num = |k: &str| job.get(k).and_then(Json::as_u64);
    Limits {
        files: num("max_files").map_or(d.files, |n| n as usize),
        file_bytes: num("max_file_bytes").unwrap_or(d.file_bytes),
        new_bytes: num("max_new_bytes").unwrap_or(d.new_bytes),
    }
}

fn changes(cp: &Checkpoints, n: Option<u64>) -> Result<Json, String> {
    let (turn, list) = cp.changes(n)?;
    let files: Vec<Json> = list
        .iter()
        .map(|c| {
            let (added, removed, line) = c.lines.unwrap_or((0, 0, 1));
            json!({"path": c.path, "status": c.status.to_string(), "binary": c.binary, "diffed": c.lines.is_some(), "added": added,
                   "removed": removed, "line": line, "turns": c.turns, "agents": c.agents, "unreviewed": c.unreviewed})
        })
        .collect();
    Ok(json!({"turn": turn, "files": files}))
}

fn plan(cp: &Checkpoints, n: Option<u64>) -> Result<Json, String> {
    let plan = cp.plan_undo(n)?;
    let files: Vec<Json> = plan.files.iter().map(|f| json!({"path": f.path, "action": f.action, "changed_since": f.changed_since})).collect();
    Ok(json!({"turn": plan.turn, "files": files}))
}

fn undo(cp: &Checkpoints, n: u64, paths: &[String]) -> Result<Json, String> {
    let r = cp.undo(n, paths)?;
    let failed: Vec<Json> = r.failed.iter().map(|(p, e)| json!({"path": p, "error": e})).collect();
    Ok(json!({"restored": r.restored, "deleted": r.deleted, "failed": failed}))
}
