//! The functions Lua calls (`require`d as the table `luaopen_pi_ide` returns). Every one is
//! wrapped so that a Rust panic becomes a Lua error instead of reaching Neovim.

mod chat;
mod checkpoint;
mod events;
mod json;
mod pending;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use mlua::{Lua, Result as LuaResult, Table, Value};

use self::json::{from_lua, to_lua};
use parking_lot::Mutex;

use crate::state::{ClientSnapshot, Settings, Shared};
use crate::protocol::jsonrpc::RpcError;
use crate::agents::Agent;
use crate::protocol::tools::Verdict;
use crate::server::{Options, Server};
use crate::support::{log, waker};

static SERVER: Mutex<Option<Server>> = Mutex::new(None);

fn guard<R>(name: &str, f: impl FnOnce() -> LuaResult<R>) -> LuaResult<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(mlua::Error::runtime(format!(
                "pi-ide: internal error in {name}: {what} (please report it)"
            )))
        }
    }
}

fn err(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

fn with_server<R>(f: impl FnOnce(&Server) -> R) -> Option<R> {
    SERVER.lock().as_ref().map(f)
}

fn start(lua: &Lua, (opts, handle): (Table, Value)) -> LuaResult<Table> {
    let mut slot = SERVER.lock();
    if slot.is_some() {
        return Err(err("pi-ide: the server is already running"));
    }
    let Value::UserData(handle) = handle else {
        return Err(err("pi-ide: start needs the uv async handle"));
    };
    if !waker::available() {
        return Err(err(
            "pi-ide: uv_async_send not found in this process (is this Neovim?)",
        ));
    }
    let options = Options {
        ide_name: opts.get("ide_name")?,
        workspace_folders: opts.get("workspace_folders")?,
        own_names: opts.get("own_names")?,
        serve: agents_to_serve(opts.get("serve")?)?,
    };
    let shared = Arc::new(Shared::new(Settings {
        fallback_after: Some(Duration::from_millis(opts.get("diagnostics_timeout_ms")?)),
        selection_debounce: Duration::from_millis(opts.get("selection_debounce_ms")?),
        max_message_size: opts.get("max_message_size")?,
        stage_dir: std::path::PathBuf::from(opts.get::<String>("run_dir")?)
            .join(format!("pi-ide.{}", std::process::id())),
    }));
    shared.set_review_enabled(opts.get("review_enabled")?);
    shared.set_turn_quiet(opts.get::<Option<u64>>("turn_quiet_ms")?.unwrap_or(u64::MAX));
    // SAFETY: luv's async userdata holds a pointer to its uv_async_t; Lua keeps the handle open
    // until after `stop` (which detaches) returns.
    unsafe {
        let ptr = *(handle.to_pointer() as *const *mut c_void);
        shared.events.waker.attach(ptr);
    }
    let server = Server::start(options, shared).map_err(err)?;
    let info = lua.create_table()?;
    info.set("port", server.port)?;
    info.set("lockfile", server.lock_path().to_string_lossy().into_owned())?;
    info.set("served", served_table(lua, &server)?)?;
    // `{ [agent] = why }`: agents asked for that could not be served.
    let refused = lua.create_table()?;
    for (name, why) in &server.refused {
        refused.set(*name, why.as_str())?;
    }
    info.set("refused", refused)?;
    *slot = Some(server);
    Ok(info)
}

/// `opts.serve`: `{ [agent name] = its options }`, the agents served from the start.
fn agents_to_serve(serve: Option<Table>) -> LuaResult<Vec<(&'static Agent, serde_json::Value)>> {
    let mut out = Vec::new();
    let Some(serve) = serve else {
        return Ok(out);
    };
    for pair in serve.pairs::<String, Value>() {
        let (name, options) = pair?;
        out.push((agent_named(&name)?, from_lua(options)?));
    }
    Ok(out)
}

fn agent_named(name: &str) -> LuaResult<&'static Agent> {
    crate::agents::find(name).ok_or_else(|| err(format!("pi-ide: no agent {name} in the core")))
}

/// `{ [agent] = { lockfile = path, socket = path? } }` for every agent served.
fn served_table(lua: &Lua, server: &Server) -> LuaResult<Table> {
    let t = lua.create_table()?;
    for (name, paths) in server.served() {
        t.set(name, paths_table(lua, &paths)?)?;
    }
    Ok(t)
}

fn paths_table(lua: &Lua, paths: &[(&'static str, std::path::PathBuf)]) -> LuaResult<Table> {
    let t = lua.create_table()?;
    for (key, path) in paths {
        t.set(*key, path.to_string_lossy().into_owned())?;
    }
    Ok(t)
}

fn stop(_: &Lua, (): ()) -> LuaResult<bool> {
    // Take it out first so that nothing else sees a half-stopped server.
    let server = SERVER.lock().take();
    Ok(match server {
        Some(s) => {
            s.stop();
            true
        }
        None => false,
    })
}

/// Sets each `key => value` on a Lua table (the `?` is the enclosing function's).
macro_rules! fields {
    ($t:expr, $($k:literal => $v:expr),* $(,)?) => {{ $($t.set($k, $v)?;)* }};
}

fn drain(lua: &Lua, (): ()) -> LuaResult<Table> {
    let events = with_server(|s| s.shared.clone())
        .map(|sh| sh.events.drain())
        .unwrap_or_default();
    let out = lua.create_table_with_capacity(events.len(), 0)?;
    for (i, ev) in events.into_iter().enumerate() {
        out.raw_set(i + 1, events::to_table(lua, &ev)?)?;
    }
    Ok(out)
}

fn respond(_: &Lua, (req, value): (u64, Value)) -> LuaResult<bool> {
    let value: serde_json::Value = from_lua(value)
        .map_err(|e| err(format!("pi-ide: cannot send this answer as JSON: {e}")))?;
    Ok(with_server(|s| s.shared.respond(req, Ok(value))).unwrap_or(false))
}

/// Every tool, of every agent, and what answers it: `{ ["agent.tool"] = { handler } }` (handler nil:
/// the core answers it).
fn tools(lua: &Lua, (): ()) -> LuaResult<Table> {
    let t = lua.create_table()?;
    for (agent, tool) in crate::agents::ALL.iter().flat_map(|a| a.tools.iter().map(move |t| (a.name, t))) {
        let entry = lua.create_table()?;
        if tool.answered_by_lua() {
            fields!(entry, "handler" => tool.handler_name());
        }
        // By agent: two agents may list tools of one name (openDiff).
        t.set(format!("{agent}.{}", tool.name), entry)?;
    }
    Ok(t)
}

/// Options that take effect while running (setup() after start): `{ review_enabled = bool }`.
fn configure(_: &Lua, opts: Table) -> LuaResult<()> {
    let review: Option<bool> = opts.get("review_enabled")?;
    if let Some(review) = review {
        with_server(|s| s.shared.set_review_enabled(review));
    }
    // Absent: checkpoints are off, and no call starts a turn.
    let quiet: Option<u64> = opts.get("turn_quiet_ms")?;
    with_server(|s| s.shared.set_turn_quiet(quiet.unwrap_or(u64::MAX)));
    Ok(())
}

/// The agent suggestions go to (the client that initialized last): `{ id, name, version }`,
/// or nil. Cheap (statuslines call it).
fn agent(lua: &Lua, (): ()) -> LuaResult<Value> {
    match with_server(|s| s.shared.clients.agent()).flatten() {
        Some(c) => {
            let t = lua.create_table()?;
            t.set("id", c.id)?;
            t.set("name", c.name)?;
            t.set("version", c.version)?;
            Ok(Value::Table(t))
        }
        None => Ok(Value::Nil),
    }
}

/// Every agent connected: `{ {id, name, agent, session_name}, ... }` (one short lock: the
/// statusline reads it).
fn agents(lua: &Lua, (): ()) -> LuaResult<Table> {
    let list = lua.create_table()?;
    for c in with_server(|s| s.shared.clients.agents()).unwrap_or_default() {
        let t = lua.create_table()?;
        fields!(t, "id" => c.id, "name" => c.name, "agent" => c.agent.name,
            "session_name" => c.session_name, "tag" => c.tag);
        list.push(t)?;
    }
    Ok(list)
}

/// Lua has read the files staged for review `req`: the core deletes them (it owns them).
fn staged_loaded(_: &Lua, req: u64) -> LuaResult<()> {
    with_server(|s| s.shared.release_staged(req));
    Ok(())
}

/// The user accepted review `req` with this text (exactly as they left it; `note`: the hunks
/// they declined or edited, told to an agent that writes its own proposal): the text's git blob
/// id (what the file must hold once the agent has written it), and that of the file its left
/// pane showed (nil when it was not read). Nil when the review had ended already: nothing was
/// sent.
fn review_accept(_: &Lua, (req, text, note): (u64, mlua::LuaString, Option<String>)) -> LuaResult<(Option<String>, Option<String>)> {
    let text = text.to_str().map_err(|_| err("pi-ide: the accepted text is not UTF-8"))?.to_owned();
    let blob = crate::support::blob::blob_id(text.as_bytes());
    match with_server(|s| s.shared.accept(req, text, note)).flatten() {
        Some(left) => Ok((Some(blob), left)),
        None => Ok((None, None)),
    }
}

/// The user rejected review `req` (or its panes went away). False when it had ended already.
fn review_reject(_: &Lua, req: u64) -> LuaResult<bool> {
    Ok(with_server(|s| s.shared.decide(req, Verdict::Rejected)).unwrap_or(false))
}

/// What the user has left in review `req` now (they decided a hunk or edited it): its text,
/// or nil when it is changing (Insert mode) and Lua must be asked. Kept by the core for an
/// agent's close (Hook::CloseReviewKeepingText), answered even while Neovim is busy.
fn review_left(_: &Lua, (req, text): (u64, Option<mlua::LuaString>)) -> LuaResult<bool> {
    use crate::state::reviews::left::Left;
    let left = match text.as_ref().map(|t| t.to_str().map(|t| t.to_owned())) {
        Some(Ok(text)) => Left::Text(text),
        Some(Err(_)) | None => Left::Unknown,
    };
    Ok(with_server(|s| s.shared.set_review_left(req, left)).unwrap_or(false))
}

/// Closes `client`'s review named `tab` as its agent asked (Hook::CloseReviewKeepingText):
/// the number of the review Lua shows, to take away; nil when there was none.
fn review_close(_: &Lua, (client, tab): (u64, String)) -> LuaResult<Option<u64>> {
    let (_, ended) = with_server(|s| s.shared.close_review(client, &tab)).unwrap_or_default();
    Ok(ended.and_then(|e| match e {
        crate::state::events::Event::ReviewEnded { req, .. } => Some(req),
        _ => None,
    }))
}

/// Rejects every review of `client` (the chat aborts its Pi's turn). Returns the numbers of
/// those Lua shows, to take away.
fn reject_reviews_of(_: &Lua, client: u64) -> LuaResult<Vec<u64>> {
    let (_, events) = with_server(|s| s.shared.end_reviews_of(client, &Verdict::Rejected)).unwrap_or_default();
    Ok(events.iter().filter_map(|e| match e {
        crate::state::events::Event::ReviewEnded { req, .. } => Some(*req),
        _ => None,
    }).collect())
}

fn respond_error(_: &Lua, (req, code, message): (u64, i64, String)) -> LuaResult<bool> {
    Ok(with_server(|s| s.shared.respond(req, Err(RpcError::new(code, message)))).unwrap_or(false))
}

/// Called on every cursor move: keep it to a lock and an atomic.
fn selection_touch(_: &Lua, (): ()) -> LuaResult<()> {
    if let Some(s) = SERVER.lock().as_ref() {
        s.shared.selection_touch();
    }
    Ok(())
}

fn selection_set(_: &Lua, state: Value) -> LuaResult<bool> {
    let params: serde_json::Value = from_lua(state)
        .map_err(|e| err(format!("pi-ide: bad selection state: {e}")))?;
    Ok(with_server(|s| s.shared.selection_set(params)).unwrap_or(false))
}

fn selection_last(lua: &Lua, (): ()) -> LuaResult<Value> {
    match with_server(|s| s.shared.selection.last_params()).flatten() {
        Some(v) => to_lua(lua, &v),
        None => Ok(Value::Nil),
    }
}

/// Something changed in Neovim's diagnostics (called from the autocmd, before converting).
fn diagnostics_touch(_: &Lua, (): ()) -> LuaResult<u64> {
    Ok(with_server(|s| s.shared.diagnostics.touch()).unwrap_or(0))
}

fn diagnostics_generation(_: &Lua, (): ()) -> LuaResult<u64> {
    Ok(with_server(|s| s.shared.diagnostics.generation()).unwrap_or(0))
}

/// The converted diagnostics of the buffers that changed, as of generation `as_of`: a list of
/// `{ buf, uri, path, real?, items }` (items: JSON text), or `{ buf }` for a buffer without any.
fn diagnostics_update(_: &Lua, (list, as_of): (Table, u64)) -> LuaResult<()> {
    let mut buffers = Vec::new();
    for item in list.sequence_values::<Table>() {
        let item = item?;
        let buf: i64 = item.get("buf")?;
        let entry = match item.get::<Option<String>>("uri")? {
            Some(uri) => Some(crate::state::diagnostics::Entry {
                uri,
                path: item.get("path")?,
                real: item.get("real")?,
                items: item.get("items")?,
            }),
            None => None,
        };
        buffers.push((buf, entry));
    }
    with_server(|s| s.shared.diagnostics.update(buffers, as_of));
    Ok(())
}

/// For :checkhealth: each lockfile and what is wrong with it (nil when nothing).
fn check_lockfiles(lua: &Lua, (): ()) -> LuaResult<Table> {
    let out = lua.create_table()?;
    if let Some(results) = with_server(|s| s.check_lockfiles()) {
        for (path, result) in results {
            let t = lua.create_table()?;
            t.set("path", path.to_string_lossy().into_owned())?;
            t.set("problem", result.err())?;
            out.push(t)?;
        }
    }
    Ok(out)
}

/// For :checkhealth: each lock folder and why it is not private (nil when it is).
fn check_lock_dirs(lua: &Lua, (): ()) -> LuaResult<Table> {
    let out = lua.create_table()?;
    for (path, problem) in with_server(|s| s.check_lock_dirs()).unwrap_or_default() {
        let t = lua.create_table()?;
        t.set("path", path.to_string_lossy().into_owned())?;
        t.set("problem", problem)?;
        out.push(t)?;
    }
    Ok(out)
}

/// Sends a request to the agent that initialized last. Returns its number, or nil, an error
/// code (`native.send_errors`) and a sentence for the user; and, fourth, the number of an older
/// request of the same method it replaced before that one went out (it gets no answer).
type Sent = (Option<u64>, Option<&'static str>, Option<&'static str>, Option<u64>);
fn request(_: &Lua, (method, params, timeout_ms): (String, Value, Option<u64>)) -> LuaResult<Sent> {
    use crate::state::requests::SendError;
    let params: serde_json::Value =
        from_lua(params).map_err(|e| err(format!("pi-ide: bad params: {e}")))?;
    let sent = match with_server(|s| s.shared.clone()) {
        Some(shared) => shared.request(&method, &params, timeout_ms.map(Duration::from_millis)),
        None => Err(SendError::NotRunning),
    };
    Ok(match sent {
        Ok(r) => (Some(r.req), None, None, r.superseded),
        Err(e) => (None, Some(e.code()), Some(e.message()), None),
    })
}

/// The real path of a path the agent chose, resolved off the main thread and waited for at
/// most a short deadline (a hung mount must not freeze Neovim): the path, or nil and
/// "missing" or "timeout".
fn realpath(lua: &Lua, path: mlua::LuaString) -> LuaResult<(Option<mlua::LuaString>, Option<&'static str>)> {
    use crate::support::resolve::{Resolved, MAIN_THREAD_DEADLINE, PATHS};
    use std::os::unix::ffi::OsStrExt;
    // A path is bytes (a file's name need not be UTF-8), both ways.
    let path = Path::new(std::ffi::OsStr::from_bytes(&path.as_bytes())).to_path_buf();
    Ok(match PATHS.blocking(&path, MAIN_THREAD_DEADLINE) {
        Resolved::Real(p) => (Some(lua.create_string(p.as_os_str().as_bytes())?), None),
        Resolved::Missing => (None, Some("missing")),
        Resolved::TimedOut => (None, Some("timeout")),
    })
}

/// The git blob id of the file at `path` as it is now (the user's own write, just made): nil
/// when it is not a regular file or is larger than `max` bytes.
fn blob_of_file(_: &Lua, (path, max): (mlua::LuaString, usize)) -> LuaResult<Option<String>> {
    use crate::support::on_disk::{self, OnDisk};
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(&path.as_bytes())).to_path_buf();
    Ok(match on_disk::read(path, max) {
        OnDisk::Contents(bytes) => Some(crate::support::blob::blob_id(&bytes)),
        _ => None,
    })
}

/// Where a text stops being valid UTF-8: nil when it is valid, else the 0-based byte offset.
fn utf8_error(_: &Lua, text: mlua::LuaString) -> LuaResult<Option<usize>> {
    Ok(std::str::from_utf8(&text.as_bytes()).err().map(|e| e.valid_up_to()))
}

fn cancel(_: &Lua, req: u64) -> LuaResult<bool> {
    Ok(with_server(|s| s.shared.cancel(req)).unwrap_or(false))
}

/// Sends a notification to every initialized client; returns how many got it.
fn notify_clients(_: &Lua, (method, params): (String, Value)) -> LuaResult<usize> {
    let params: serde_json::Value = from_lua(params)
        .map_err(|e| err(format!("pi-ide: bad params: {e}")))?;
    Ok(with_server(|s| s.shared.clients.broadcast(&method, &params)).unwrap_or(0))
}

fn status(lua: &Lua, (): ()) -> LuaResult<Table> {
    let t = lua.create_table()?;
    let guard = SERVER.lock();
    let Some(s) = guard.as_ref() else {
        t.set("running", false)?;
        return Ok(t);
    };
    t.set("running", true)?;
    t.set("port", s.port)?;
    t.set("lockfile", s.lock_path().to_string_lossy().into_owned())?;
    t.set("served", served_table(lua, s)?)?;
    let info = s.lock_info();
    t.set("ide_name", info.ide_name)?;
    t.set("workspace_folders", info.workspace_folders)?;
    let snap = s.shared.snapshot();
    t.set("parked", snap.parked)?;
    t.set("wakes", snap.wakes)?;
    t.set("requests_in_flight", snap.requests_in_flight)?;
    t.set("request_target", snap.request_target)?;
    let clients = lua.create_table()?;
    for ClientSnapshot { client: c, parked } in snap.clients {
        let since = c
            .connected_at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let row = lua.create_table()?;
        fields!(row, "id" => c.id, "name" => c.name, "version" => c.version,
            "connected_at" => since, "parked" => parked, "agent" => c.agent.name,
            "session_name" => c.session_name, "tag" => c.tag);
        clients.push(row)?;
    }
    t.set("clients", clients)?;
    Ok(t)
}

/// The stamp of the sources under `root` (the plugin's folder), or nil when they are not there.
fn checkout_stamp(_: &Lua, root: String) -> LuaResult<Option<String>> {
    Ok(crate::support::stamp::stamp(Path::new(&root)))
}

/// What the sources under `root` are without reading them (their sizes, inodes and change
/// times): native.lua keeps the stamp by it.
fn checkout_key(_: &Lua, root: String) -> LuaResult<Option<String>> {
    Ok(crate::support::stamp::key(Path::new(&root)))
}

fn set_workspace_folders(_: &Lua, folders: Vec<String>) -> LuaResult<bool> {
    match with_server(|s| s.set_workspace_folders(folders)) {
        Some(r) => r.map_err(err),
        None => Ok(false),
    }
}

/// Neovim got the focus (an agent's record says when it last had it).
fn focused(_: &Lua, (): ()) -> LuaResult<()> {
    with_server(|s| s.focused()).transpose().map_err(err).map(|_| ())
}

/// Serves agent `name` from now on (its options as `start`'s `serve` gives them; idempotent).
/// Returns what Lua shows of its side: `{ lockfile = path, socket = path? }`.
fn serve(lua: &Lua, (name, options): (String, Value)) -> LuaResult<Table> {
    let agent = agent_named(&name)?;
    let options = from_lua(options)?;
    let served = with_server(|s| s.serve(agent, &options)).ok_or_else(|| err("the server is not running"))?;
    paths_table(lua, &served.map_err(err)?)
}

/// The client that came from the launch tagged `tag` (see `serve`), if one is connected.
fn client_tagged(_: &Lua, tag: String) -> LuaResult<Option<u64>> {
    Ok(with_server(|s| s.shared.clients.tagged(&tag)).flatten())
}

fn log_configure(_: &Lua, (path, level): (String, String)) -> LuaResult<()> {
    let level = log::level_from_name(&level)
        .ok_or_else(|| err(format!("pi-ide: unknown log level '{level}'")))?;
    log::configure(Path::new(&path), level)
        .map_err(|e| err(format!("pi-ide: cannot open log file {path}: {e}")))
}

fn log_write(_: &Lua, (level, message): (String, String)) -> LuaResult<()> {
    if let Some(level) = log::level_from_name(&level) {
        if log::enabled(level) {
            log::write(level, "lua", format_args!("{message}"));
        }
    }
    Ok(())
}

/// A panic anywhere in the library goes to the log file, never to Neovim's stderr (it would
/// scribble over the screen).
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            log::write(log::ERROR, "rust", format_args!("panic: {info}"));
        }));
    });
}

macro_rules! export {
    ($lua:expr, $t:expr, $($name:ident => $f:path),* $(,)?) => {{
        $(
            $t.set(stringify!($name), $lua.create_function(|lua, args| guard(stringify!($name), || $f(lua, args)))?)?;
        )*
    }};
}

#[mlua::lua_module(skip_memory_check)]
fn pi_ide(lua: &Lua) -> LuaResult<Table> {
    install_panic_hook();
    let t = lua.create_table()?;
    t.set("abi", crate::ABI)?;
    t.set("version", env!("CARGO_PKG_VERSION"))?;
    // What it was built from (build.rs); native.lua compares it with the checkout.
    t.set("source_stamp", env!("PI_IDE_SOURCE_STAMP"))?;
    // The JSON-RPC error codes Lua answers with: one definition (jsonrpc.rs).
    let codes = lua.create_table()?;
    codes.set("internal_error", crate::protocol::jsonrpc::INTERNAL_ERROR)?;
    codes.set("method_not_found", crate::protocol::jsonrpc::METHOD_NOT_FOUND)?;
    codes.set("invalid_params", crate::protocol::jsonrpc::INVALID_PARAMS)?;
    t.set("codes", codes)?;
    // Why `request` could not send: codes Lua compares.
    let send_errors = lua.create_table()?;
    for e in crate::state::requests::SendError::ALL {
        send_errors.set(e.code(), e.code())?;
    }
    t.set("send_errors", send_errors)?;
    export!(lua, t,
        start => start,
        stop => stop,
        drain => drain,
        respond => respond,
        respond_error => respond_error,
        staged_loaded => staged_loaded,
        review_accept => review_accept,
        review_reject => review_reject,
        review_close => review_close,
        review_left => review_left,
        reject_reviews_of => reject_reviews_of,
        agent => agent,
        configure => configure,
        tools => tools,
        status => status,
        set_workspace_folders => set_workspace_folders,
        focused => focused,
        serve => serve,
        client_tagged => client_tagged,
        selection_touch => selection_touch,
        selection_set => selection_set,
        agents => agents,
        selection_last => selection_last,
        notify_clients => notify_clients,
        request => request,
        check_lockfiles => check_lockfiles,
        check_lock_dirs => check_lock_dirs,
        checkout_stamp => checkout_stamp,
        checkout_key => checkout_key,
        diagnostics_touch => diagnostics_touch,
        diagnostics_generation => diagnostics_generation,
        diagnostics_update => diagnostics_update,
        cancel => cancel,
        realpath => realpath,
        utf8_error => utf8_error,
        blob_of_file => blob_of_file,
        log_configure => log_configure,
        log => log_write,
        chat_start => self::chat::chat_start,
        chat_send => self::chat::chat_send,
        chat_drain => self::chat::chat_drain,
        chat_stop => self::chat::chat_stop,
        chat_pid => self::chat::chat_pid,
        chat_stats => self::chat::chat_stats,
        chat_answer => self::chat::chat_answer,
        chat_cancel => self::chat::chat_cancel,
        checkpoint_attach => self::checkpoint::checkpoint_attach,
        checkpoint_detach => self::checkpoint::checkpoint_detach,
        checkpoint_job => self::checkpoint::checkpoint_job,
        checkpoint_drain => self::checkpoint::checkpoint_drain,
        checkpoint_wait => self::checkpoint::checkpoint_wait,
    );
    Ok(t)
}
