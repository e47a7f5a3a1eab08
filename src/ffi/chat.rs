//! The chat functions Lua calls (exported by ffi/mod.rs): chats by number, each with a waker of
//! its own, and their ops as Lua tables. The work is in chat/; this only converts.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use mlua::{Lua, Result as LuaResult, Table, Value};
use parking_lot::Mutex;

use crate::chat::{Chat, ChatOptions, Op};
use super::json::{from_lua, to_lua};
use crate::support::waker::{self, Waker};

struct Entry {
    chat: Chat,
    waker: Arc<Waker>,
}

static CHATS: Mutex<BTreeMap<i64, Entry>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicI64 = AtomicI64::new(1);

fn err(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

/// `opts`: `{ cmd = {argv...}, cwd?, env? = {K = V}, frame_ms? = 16, cap_lines? = 12 }`;
/// `handle`: a `vim.uv.new_async` userdata, as `start`'s. Returns the chat's number.
pub fn chat_start(_: &Lua, (opts, handle): (Table, Value)) -> LuaResult<i64> {
    let Value::UserData(handle) = handle else {
        return Err(err("pi-ide: chat_start needs the uv async handle"));
    };
    if !waker::available() {
        return Err(err("pi-ide: uv_async_send not found in this process (is this Neovim?)"));
    }
    let options = options(&opts)?;
    let waker = Arc::new(Waker::default());
    // SAFETY: as in `start`: luv's userdata holds its uv_async_t*, and Lua keeps the handle open
    // until chat_stop (which detaches) returns.
    unsafe { waker.attach(*(handle.to_pointer() as *const *mut c_void)) };
    let w = waker.clone();
    let chat = Chat::start(options, Box::new(move || w.wake())).map_err(|e| {
        waker.detach();
        err(e)
    })?;
    let id = NEXT.fetch_add(1, Relaxed);
    CHATS.lock().insert(id, Entry { chat, waker });
    Ok(id)
}

fn options(opts: &Table) -> LuaResult<ChatOptions> {
    let mut o = ChatOptions::new(opts.get("cmd")?);
    o.cwd = opts.get::<Option<String>>("cwd")?.map(Into::into);
    if let Some(env) = opts.get::<Option<Table>>("env")? {
        o.env = env.pairs::<String, String>().collect::<LuaResult<_>>()?;
    }
    if let Some(ms) = opts.get::<Option<u64>>("frame_ms")? {
        o.frame = Duration::from_millis(ms);
    }
    if let Some(n) = opts.get::<Option<usize>>("cap_lines")? {
        o.cap_lines = n;
    }
    if let Some(acp) = opts.get::<Option<Table>>("acp")? {
        let reviews = ServerReviews { tag: acp.get("tag")?, label: acp.get("label")? };
        o.acp = Some(Arc::new(reviews));
        o.acp_writes_itself = acp.get::<Option<bool>>("writes_itself")?.unwrap_or(false);
    }
    Ok(o)
}

/// An ACP chat's reviews go to the running server's review state machine; with no server
/// running they cannot be shown, and are rejected.
struct ServerReviews {
    /// The chat's tag: its client's among the server's.
    tag: String,
    /// What reviews show as their agent (the agent's name, " (chat)").
    label: String,
}

impl crate::chat::acp::Reviewer for ServerReviews {
    fn review(&self, proposal: crate::agents::chat::Proposal, done: crate::agents::chat::Done) {
        let mut done = Some(done);
        super::with_server(|s| {
            if let Some(done) = done.take() {
                s.review_for_chat((&self.tag, &self.label), proposal, done);
            }
        });
        if let Some(done) = done {
            crate::warn!("chat: a change could not be reviewed (the pi-ide server is not running): rejected");
            done(crate::protocol::tools::Verdict::Rejected);
        }
    }

    fn end(&self) {
        super::with_server(|s| s.end_chat_reviews(&self.tag));
    }

    fn close(&self, tab: &str) {
        super::with_server(|s| s.close_chat_review(&self.tag, tab));
    }
}

/// Lua's answer to an ACP agent's question `key` (an `agent_request` op): `result`, or the
/// error `message`; neither, for a file read: the core reads it from disk. False when it was
/// answered already (cancelled) or the chat is gone.
pub fn chat_answer(_: &Lua, (id, key, result, message): (i64, String, Value, Option<String>)) -> LuaResult<bool> {
    let result = match result {
        Value::Nil => None,
        v => Some(from_lua(v).map_err(|e| err(format!("pi-ide: chat_answer: not JSON: {e}")))?),
    };
    Ok(with_chat(id, |e| e.chat.acp().is_some_and(|a| a.answer(&key, result, message))).unwrap_or(false))
}

/// Cancels an ACP chat's turn on our side: every permission waiting answered `cancelled`, every
/// write refused, their reviews taken away. Returns how many were answered.
pub fn chat_cancel(_: &Lua, id: i64) -> LuaResult<usize> {
    Ok(with_chat(id, |e| e.chat.acp().map_or(0, |a| a.cancel())).unwrap_or(0))
}

fn with_chat<R>(id: i64, f: impl FnOnce(&Entry) -> R) -> Option<R> {
    CHATS.lock().get(&id).map(f)
}

/// Queues a command (a table, sent as JSON; or a string, sent as it is) for Pi's stdin. False
/// when the chat is gone or its stdin closed. Never waits.
pub fn chat_send(_: &Lua, (id, command): (i64, Value)) -> LuaResult<bool> {
    let line = match command {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Table(_) => {
            let v = from_lua(command).map_err(|e| err(format!("pi-ide: cannot send this command as JSON: {e}")))?;
            serde_json::to_vec(&v).map_err(|e| err(format!("pi-ide: cannot send this command as JSON: {e}")))?
        }
        other => return Err(err(format!("pi-ide: chat_send needs a table or a string, not a {}", other.type_name()))),
    };
    Ok(with_chat(id, |e| e.chat.send(line)).unwrap_or(false))
}

/// The ops queued since the last drain, in order (a list of tables; see [`op_table`]).
pub fn chat_drain(lua: &Lua, id: i64) -> LuaResult<Table> {
    let ops = with_chat(id, |e| {
        e.waker.clear_pending();
        e.chat.drain()
    })
    .unwrap_or_default();
    let out = lua.create_table_with_capacity(ops.len(), 0)?;
    for (i, op) in ops.into_iter().enumerate() {
        out.raw_set(i + 1, op_table(lua, op)?)?;
    }
    Ok(out)
}

/// Ends the chat (chat::Chat::stop) and forgets it. Blocks up to `grace_ms` + ~1.3 s. True
/// when Pi exited within `grace_ms`; false too for a chat already stopped.
pub fn chat_stop(_: &Lua, (id, grace_ms): (i64, Option<u64>)) -> LuaResult<bool> {
    // Out of the table first: the lock is not held while stop waits.
    let Some(entry) = CHATS.lock().remove(&id) else {
        return Ok(false);
    };
    let exited = entry.chat.stop(Duration::from_millis(grace_ms.unwrap_or(0)));
    entry.waker.detach();
    Ok(exited)
}

/// Pi's pid while it runs, else nil.
pub fn chat_pid(_: &Lua, id: i64) -> LuaResult<Option<u32>> {
    Ok(with_chat(id, |e| e.chat.pid()).flatten())
}

/// `{ lines, malformed, text_deltas, ops_drained, drains, wakes, bytes_in }`, or nil.
pub fn chat_stats(lua: &Lua, id: i64) -> LuaResult<Option<Table>> {
    let Some(counts) = with_chat(id, |e| {
        let s = e.chat.stats();
        [
            ("lines", &s.lines),
            ("malformed", &s.malformed),
            ("text_deltas", &s.text_deltas),
            ("ops_drained", &s.ops_drained),
            ("drains", &s.drains),
            ("wakes", &s.wakes),
            ("bytes_in", &s.bytes_in),
        ]
        .map(|(k, n)| (k, n.load(Relaxed)))
    }) else {
        return Ok(None);
    };
    let t = lua.create_table()?;
    for (k, n) in counts {
        t.set(k, n)?;
    }
    Ok(Some(t))
}

fn json(lua: &Lua, v: Option<serde_json::Value>) -> LuaResult<Value> {
    v.map_or(Ok(Value::Nil), |v| to_lua(lua, &v))
}

/// One op for Lua: `{ kind = ..., ... }`, fields as chat::Op's (snake_case).
fn op_table(lua: &Lua, op: Op) -> LuaResult<Table> {
    let t = lua.create_table()?;
    macro_rules! set { ($($k:literal => $v:expr),* $(,)?) => {{ $(t.set($k, $v)?;)* }}; }
    match op {
        Op::Text { index, text } => set!("kind" => "text", "index" => index, "text" => text),
        Op::Thinking { index, text } => set!("kind" => "thinking", "index" => index, "text" => text),
        Op::ToolStart { id, name, args } => {
            set!("kind" => "tool_start", "id" => id, "name" => name, "args" => json(lua, args)?)
        }
        Op::ToolOutput { id, lines, more } => {
            set!("kind" => "tool_output", "id" => id, "lines" => lines, "more" => more)
        }
        Op::ToolEnd { id, name, is_error, lines, more } => set!("kind" => "tool_end", "id" => id,
            "name" => name, "is_error" => is_error, "lines" => lines, "more" => more),
        Op::Response { id, command, success, data, error } => set!("kind" => "response", "id" => id,
            "command" => command, "success" => success, "data" => json(lua, data)?, "error" => error),
        Op::UiRequest(request) => set!("kind" => "ui_request", "request" => to_lua(lua, &request)?),
        Op::AgentRequest { id, method, params } => set!("kind" => "agent_request", "id" => id,
            "method" => method, "params" => to_lua(lua, &params)?),
        Op::Event { kind, event } => set!("kind" => "event", "type" => kind, "event" => to_lua(lua, &event)?),
        Op::Exit { code, signal, stderr } => {
            set!("kind" => "exit", "code" => code, "signal" => signal, "stderr" => stderr)
        }
    }
    Ok(t)
}
