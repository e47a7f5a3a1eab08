//! The checkpoint functions Lua calls (exported by ffi/mod.rs): jobs queued to one worker
//! thread, which runs them in order (one folder's shadow index is never used twice at once) and
//! wakes Neovim when a result is ready. The work is in checkpoint/; this only converts. Files'
//! names cross as bytes both ways (a Lua string holds any): JSON would make a name that is not
//! UTF-8 another name.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

use mlua::{Lua, Result as LuaResult, Table, Value};
use parking_lot::Mutex;
use serde_json::{json, Value as Json};

use super::json::{from_lua, to_lua};
use crate::checkpoint::{Change, Checkpoints, Landed, Limits, Name, Reviewed, Turn};
use crate::support::waker::Waker;

/// A job's fields that hold names or folders: read as bytes, not as JSON.
const BYTE_FIELDS: [&str; 6] = ["folder", "state", "path", "paths", "reviewed", "bytes"];

/// A job: its JSON fields, and those of BYTE_FIELDS (a list of one for a single name).
struct Job {
    fields: Json,
    bytes: HashMap<&'static str, Vec<Vec<u8>>>,
}

/// An answer for Lua: JSON, except names, which are bytes.
enum Out {
    Json(Json),
    Bytes(Option<Vec<u8>>),
    Names(Vec<Name>),
    Table(Vec<(String, Out)>),
    List(Vec<Out>),
}

struct Worker {
    jobs: Sender<(u64, Job)>,
    waker: Arc<Waker>,
}

static WORKER: Mutex<Option<Worker>> = Mutex::new(None);
static DONE: Mutex<Vec<(u64, Result<Out, String>)>> = Mutex::new(Vec::new());
/// Told each time a result joins DONE (checkpoint_wait).
static READY: parking_lot::Condvar = parking_lot::Condvar::new();
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
pub fn checkpoint_job(_: &Lua, job: Table) -> LuaResult<u64> {
    let job = job_from_lua(job)?;
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let slot = WORKER.lock();
    let w = slot.as_ref().ok_or_else(|| err("pi-ide: checkpoint_attach first"))?;
    w.jobs.send((id, job)).map_err(|_| err("pi-ide: the checkpoint worker has stopped"))?;
    Ok(id)
}

/// Blocks until job `id`'s result is ready (it stays to be drained) or `ms` have passed;
/// whether it is ready. For a prompt typed in an agent's terminal: its Enter is held until the
/// turn's checkpoint is taken (terminal/prompts.lua).
pub fn checkpoint_wait(_: &Lua, (id, ms): (u64, u64)) -> LuaResult<bool> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    let mut done = DONE.lock();
    while !done.iter().any(|(d, _)| *d == id) {
        if READY.wait_until(&mut done, deadline).timed_out() {
            return Ok(done.iter().any(|(d, _)| *d == id));
        }
    }
    Ok(true)
}

/// The job's fields: BYTE_FIELDS as the bytes of their strings, the others as JSON.
fn job_from_lua(job: Table) -> LuaResult<Job> {
    let mut bytes = HashMap::new();
    let mut fields = serde_json::Map::new();
    for pair in job.pairs::<String, Value>() {
        let (key, value) = pair?;
        let Some(field) = BYTE_FIELDS.iter().find(|f| **f == key) else {
            fields.insert(key, from_lua(value)?);
            continue;
        };
        let names = match value {
            Value::String(s) => vec![s.as_bytes().to_vec()],
            Value::Table(t) => t.sequence_values::<mlua::LuaString>().map(|s| s.map(|s| s.as_bytes().to_vec())).collect::<LuaResult<_>>()?,
            Value::Nil => continue,
            other => return Err(err(format!("pi-ide: checkpoint job field {key} cannot be a {}", other.type_name()))),
        };
        bytes.insert(*field, names);
    }
    Ok(Job { fields: Json::Object(fields), bytes })
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
            Ok(value) => t.set("value", out_to_lua(lua, value)?)?,
            Err(e) => t.set("error", e)?,
        }
        out.raw_set(i + 1, t)?;
    }
    Ok(out)
}

fn out_to_lua(lua: &Lua, out: Out) -> LuaResult<Value> {
    Ok(match out {
        Out::Json(v) => to_lua(lua, &v)?,
        Out::Bytes(None) => Value::Nil,
        Out::Bytes(Some(b)) => Value::String(lua.create_string(b)?),
        Out::Names(names) => {
            let t = lua.create_table_with_capacity(names.len(), 0)?;
            for (i, n) in names.into_iter().enumerate() {
                t.raw_set(i + 1, lua.create_string(n.0)?)?;
            }
            Value::Table(t)
        }
        Out::List(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, out_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        Out::Table(fields) => {
            let t = lua.create_table_with_capacity(0, fields.len())?;
            for (k, v) in fields {
                t.raw_set(k.as_str(), out_to_lua(lua, v)?)?;
            }
            Value::Table(t)
        }
    })
}

fn spawn() -> Worker {
    let (jobs, rx) = channel::<(u64, Job)>();
    let waker = Arc::new(Waker::default());
    let w = waker.clone();
    std::thread::Builder::new()
        .name("pi-ide-checkpoints".into())
        .spawn(move || {
            let mut open: HashMap<(Vec<u8>, Vec<u8>), Checkpoints> = HashMap::new();
            for (id, job) in rx {
                let r = catch_unwind(AssertUnwindSafe(|| run(&mut open, id, &job)))
                    .unwrap_or_else(|_| Err("internal error in the checkpoint worker (please report it)".into()));
                DONE.lock().push((id, r));
                READY.notify_all();
                w.wake();
            }
        })
        .expect("spawning the checkpoint worker");
    Worker { jobs, waker }
}

fn run(open: &mut HashMap<(Vec<u8>, Vec<u8>), Checkpoints>, id: u64, job: &Job) -> Result<Out, String> {
    let text = |k: &str| job.fields.get(k).and_then(Json::as_str).map(str::to_owned);
    let names = |k: &str| -> Vec<Name> { job.bytes.get(k).map(|l| l.iter().map(|b| Name(b.clone())).collect()).unwrap_or_default() };
    let one = |k: &str| job.bytes.get(k).and_then(|l| l.first()).cloned().unwrap_or_default();
    let key = (one("folder"), one("state"));
    if !open.contains_key(&key) {
        let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
        let cp = Checkpoints::open(&path(&key.0), &path(&key.1), limits(&job.fields))?;
        open.insert(key.clone(), cp);
    }
    let cp = &open[&key];
    let n = job.fields.get("n").and_then(Json::as_u64);
    // `reviewed_blobs` and `reviewed_lefts`: in the order of `reviewed`, the blob id of the
    // text the user saw of each, and of what its review showed before ("" when unknown: the
    // user's own write, trusted; a review that could not read it says UNREAD, never shown).
    let ids = |k: &str| job.fields.get(k).and_then(Json::as_array).cloned().unwrap_or_default();
    let (blobs, lefts) = (ids("reviewed_blobs"), ids("reviewed_lefts"));
    let blob_at = |list: &[Json], i: usize| list.get(i).and_then(Json::as_str).filter(|b| !b.is_empty()).map(str::to_owned);
    let reviewed: Vec<Reviewed> =
        names("reviewed").into_iter().enumerate().map(|(i, path)| Reviewed { path, blob: blob_at(&blobs, i), left: blob_at(&lefts, i) }).collect();
    Ok(match text("op").as_deref() {
        Some("begin") => {
            let (turn, closed) = cp.begin(&text("agent").unwrap_or_default(), text("prompt"), &reviewed)?;
            let mut answer = vec![("turn", turn_out(&turn))];
            answer.extend(closed.map(|c| ("closed", turn_out(&c))));
            object(json!({}), answer)
        }
        Some("end") => turn_out(&cp.end(n.ok_or("end needs n")?, &reviewed)?),
        Some("warm") => Out::Json(json!(cp.warm()?)),
        Some("turns") => Out::List(cp.turns()?.iter().map(turn_out).collect()),
        Some("changes") => changes(cp, n)?,
        Some("content") => {
            let path = names("path").pop().ok_or("content needs a path")?;
            Out::Bytes(cp.content(n.ok_or("content needs n")?, &path)?)
        }
        Some("plan") => plan(cp, n)?,
        Some("undo") => undo(cp, n.ok_or("undo needs n")?, &names("paths"))?,
        Some("watch") => object(super::pending::watch(cp, &key, batch_to_worker(id, &key))?, vec![]),
        Some("unwatch") => Out::Json(json!(super::pending::unwatch(&key))),
        Some("landed") => landed(cp, job)?,
        Some("put") => put(cp, job, names("path").pop().ok_or("put needs a path")?)?,
        other => return Err(format!("no checkpoint operation {other:?}")),
    })
}

fn limits(job: &Json) -> Limits {
    let d = Limits::default();
    let num = |k: &str| job.get(k).and_then(Json::as_u64);
    Limits {
        files: num("max_files").map_or(d.files, |n| n as usize),
        file_bytes: num("max_file_bytes").unwrap_or(d.file_bytes),
        new_bytes: num("max_new_bytes").unwrap_or(d.new_bytes),
        turns: num("keep_turns").map_or(d.turns, |n| n as usize),
    }
}

/// A table of `plain`'s fields (a JSON object; nulls left out, as Lua's nil) and `more`.
fn object(plain: Json, more: Vec<(&str, Out)>) -> Out {
    let Json::Object(map) = plain else { return Out::Json(plain) };
    let mut fields: Vec<(String, Out)> = map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, Out::Json(v))).collect();
    fields.extend(more.into_iter().map(|(k, v)| (k.to_string(), v)));
    Out::Table(fields)
}

/// A turn as Lua reads it (its trees and fingerprints stay here).
fn turn_out(t: &Turn) -> Out {
    let plain = json!({"n": t.n, "agent": t.agent, "prompt": t.prompt, "started_ms": t.started_ms, "ended_ms": t.ended_ms, "undone": t.undone,
                       "between": t.between, "ignored_changed": t.ignored_changed});
    let names = [("changed", &t.changed), ("unreviewed", &t.unreviewed), ("other_text", &t.other_text), ("skipped", &t.skipped), ("guarded", &t.guarded)];
    object(plain, names.into_iter().map(|(k, v)| (k, Out::Names(v.clone()))).collect())
}

fn name_out(n: &Name) -> Out {
    Out::Bytes(Some(n.0.clone()))
}

fn change_out(c: &Change) -> Out {
    let (added, removed, line) = c.lines.unwrap_or((0, 0, 1));
    let plain = json!({"status": c.status.to_string(), "binary": c.binary, "diffed": c.lines.is_some(), "added": added,
                       "removed": removed, "line": line, "turns": c.turns, "agents": c.agents, "unreviewed": c.unreviewed,
                       "other_text": c.other_text, "guarded": c.guarded, "over_cap": c.over_cap, "lost": c.lost});
    object(plain, vec![("path", name_out(&c.path))])
}

fn changes(cp: &Checkpoints, n: Option<u64>) -> Result<Out, String> {
    let (turn, list) = cp.changes(n)?;
    Ok(object(json!({}), vec![("turn", turn_out(&turn)), ("files", Out::List(list.iter().map(change_out).collect()))]))
}

fn plan(cp: &Checkpoints, n: Option<u64>) -> Result<Out, String> {
    let plan = cp.plan_undo(n)?;
    let files = plan.files.iter().map(|f| {
        object(json!({"action": f.action, "changed_since": f.changed_since}), vec![("path", name_out(&f.path))])
    });
    let guarded = Out::Names(plan.turn.guarded.clone());
    let kept = Out::Names(plan.kept.clone());
    Ok(object(json!({}), vec![("turn", turn_out(&plan.turn)), ("files", Out::List(files.collect())), ("guarded", guarded), ("kept", kept)]))
}

fn undo(cp: &Checkpoints, n: u64, paths: &[Name]) -> Result<Out, String> {
    let r = cp.undo(n, paths)?;
    let failed = r.failed.iter().map(|(p, e)| object(json!({"error": e}), vec![("path", name_out(p))]));
    Ok(object(json!({}), vec![("restored", Out::Names(r.restored)), ("deleted", Out::Names(r.deleted)), ("failed", Out::List(failed.collect()))]))
}

/// What a watch does with each batch it sees settle: a job of its own for the worker, under
/// `id` (the job that started the watch, whose callback Lua keeps).
fn batch_to_worker(id: u64, key: &(Vec<u8>, Vec<u8>)) -> impl FnMut(Vec<(Vec<u8>, u64)>) + Send + 'static {
    let (folder, state) = key.clone();
    move |changed| {
        let (paths, first): (Vec<Vec<u8>>, Vec<u64>) = changed.into_iter().unzip();
        let bytes = HashMap::from([("folder", vec![folder.clone()]), ("state", vec![state.clone()]), ("paths", paths)]);
        if let Some(w) = WORKER.lock().as_ref() {
            let _ = w.jobs.send((id, Job { fields: json!({"op": "landed", "first_ms": first}), bytes }));
        }
    }
}

/// A batch a watch saw settle, judged: `{ landed = { ... }, more = n }`.
fn landed(cp: &Checkpoints, job: &Job) -> Result<Out, String> {
    let paths = job.bytes.get("paths").cloned().unwrap_or_default();
    let first: Vec<u64> = job.fields.get("first_ms").and_then(Json::as_array).map(|a| a.iter().filter_map(Json::as_u64).collect()).unwrap_or_default();
    let batch = cp.landed(&paths.into_iter().zip(first).collect::<Vec<_>>())?;
    let list = Out::List(batch.landed.iter().map(landed_out).collect());
    Ok(object(json!({"more": batch.more}), vec![("landed", list)]))
}

fn landed_out(l: &Landed) -> Out {
    let plain = json!({"kind": l.kind, "blob": l.blob, "base_blob": l.base_blob, "not_diffed": l.not_diffed, "no_base": l.no_base});
    let bytes = |b: &Option<Vec<u8>>| Out::Bytes(b.clone());
    object(plain, vec![("path", name_out(&l.path)), ("text", bytes(&l.text)), ("base", bytes(&l.base))])
}

/// Writes a decision on a pending change: `bytes` (a list of one; none: the file is removed)
/// while the file is still the blob `expected` (absent: nothing there).
fn put(cp: &Checkpoints, job: &Job, path: Name) -> Result<Out, String> {
    let bytes = job.bytes.get("bytes").and_then(|l| l.first());
    let expected = job.fields.get("expected").and_then(Json::as_str);
    cp.put(&path, bytes.map(Vec::as_slice), expected)?;
    Ok(Out::Json(json!(true)))
}
