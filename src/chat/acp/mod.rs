//! The chat's ACP backend (agentclientprotocol.com): JSON-RPC on the agent's stdio. Lua sends
//! our requests (initialize, session/new, session/prompt, …) as it sends Pi's commands; this
//! reads everything the agent writes, off the main thread: responses and `session/update`s
//! become the ops Pi's records do (updates.rs), and the agent's requests are answered here or
//! handed to Lua:
//!
//! - a permission that carries a change, and `fs/write_text_file`, become a review of the whole
//!   file as it will be (change.rs), through the editor's one review state machine (a client of
//!   this process: server/local.rs, behind [`Reviewer`]). `:w` answers the allow-once option
//!   (or writes the user's text), `:q` the reject; never an "always" option;
//! - other permissions and `fs/read_text_file` go to Lua (a dialog, never offering an "always"
//!   option; unsaved buffer text), which answers through [`Acp::answer`]; a read of a file no
//!   buffer holds is read here;
//! - anything else is answered "method not found".
//!
//! Every question asked is answered exactly once: by the user, by a cancel (`cancelled`, and
//! the reviews taken away), or, when the agent is gone, by no one, since nobody can read it. A
//! question whose id is one that already waits is refused at once and shown nowhere: the answer
//! to one must never land on the other. What we write is written as the review showed it
//! (support/reviewed_write.rs), off the thread that reads the agent; what the agent writes
//! itself after an allow is read back and compared with what the user accepted, and set to it
//! when the user kept only part of the proposal or edited it (landed.rs).

pub mod change;
mod landed;
mod mirror;
mod patch;
mod patched;
mod updates;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use self::change::Change;
use self::landed::Landing;
use self::mirror::Mirror;
use super::op::Op;
use crate::agents::chat::{Done, Proposal};
use crate::protocol::tools::Verdict;
use crate::support::blob::blob_id;
use crate::support::own_write::OwnWrite;
use crate::support::reviewed_write::Seen;

/// The largest file a review or a read takes from disk.
pub const MAX_FILE: u64 = 32 << 20;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_REQUEST: i64 = -32600;
const REFUSED: i64 = -32000;
/// What the texts kept of the agent's reads may weigh.
const SERVED_BYTES: usize = 16 << 20;
/// Questions of the agent's that may wait at once; more are answered at once (refused): a
/// flood must not queue dialogs or memory without end.
pub const MAX_ASKED: usize = 64;
/// JSON-RPC's answer to a request its sender cancelled.
const REQUEST_CANCELLED: i64 = -32800;

/// Where the chat's reviews go (the running server's review state machine).
pub trait Reviewer: Send + Sync {
    /// Shows `proposal`; `done` gets the user's verdict, once (a rejection when it cannot be
    /// shown).
    fn review(&self, proposal: Proposal, done: Done);
    /// Every review of this chat goes, each answered.
    fn end(&self);
    /// The review named `tab` goes (its agent withdrew the question), answered as closed.
    fn close(&self, tab: &str);
}

/// A question of the agent's, not answered yet.
enum Asked {
    /// `call`: the tool call it is about; `path`: the file its change writes, when it carries
    /// one (reviewed), else Lua asks the user; `seen`: that file as the review showed it;
    /// `through_us`: the change comes back as our write (the user's text is kept for it), else
    /// the agent writes its own proposal and the user's text is set over it (landed.rs).
    Permission { id: Value, options: Vec<Value>, call: String, path: Option<String>, seen: Option<Seen>, through_us: bool },
    /// `proposed`: the agent's text (the user's may differ: the agent is then told); `seen`: the
    /// file as the review showed it.
    Write { id: Value, path: String, proposed: String, seen: Seen },
    Read { id: Value, params: Value },
    /// A patch's files, one review each (patched.rs).
    Patch { id: Value, options: Vec<Value>, call: String, parts: Vec<patched::Part> },
}

impl Asked {
    fn id(&self) -> &Value {
        match self {
            Asked::Permission { id, .. } | Asked::Write { id, .. } | Asked::Read { id, .. } | Asked::Patch { id, .. } => id,
        }
    }
}

/// What a review shows while it waits: the proposal, and the blob id of the file it replaces
/// (None: there was none).
struct Shown {
    proposal: String,
    before: Option<String>,
}

/// What the user accepted in a permission's review of a change that comes back as our write.
struct Accepted {
    shown: String,
    text: String,
    seen: Seen,
    /// The hunks the user declined or edited (review/declined.lua), when they said.
    note: Option<String>,
}

/// Where ops that come of a decision go (the chat's queue): a verdict arrives on another thread.
pub type Events = Box<dyn Fn(Op) + Send + Sync>;

pub struct Acp {
    reviewer: Arc<dyn Reviewer>,
    events: Events,
    /// The agent writes its allowed changes itself and mirrors them (mirror.rs).
    writes_itself: bool,
    /// Shared with the threads that read a file for the agent.
    state: Arc<Mutex<State>>,
    /// The agent's folder, where the relative paths of its patches are.
    cwd: Option<PathBuf>,
}

/// What the chat knows of the agent's questions and files, behind one lock. It is never held
/// while a review opens, an op goes out or an answer is built: a review may be decided at once,
/// on the same thread.
#[derive(Default)]
struct State {
    /// The agent's stdin (taken when the chat stops, so that it closes).
    out: Option<Sender<Vec<u8>>>,
    /// By the id's JSON text.
    asked: HashMap<String, Asked>,
    /// The review each reviewed question opened, by the question's key.
    tabs: HashMap<String, String>,
    /// The change a `tool_call` carried, by its id (a permission may name only the call).
    fragments: HashMap<String, Change>,
    /// Files the agent read through us: it writes them through us too, so its
    /// permission's review is editable and the user's text is what gets written.
    read_through_us: HashSet<String>,
    /// What the user accepted in such a review, by path, for the write that follows. Only a
    /// write of that very proposal takes it.
    accepted: HashMap<String, Accepted>,
    /// What each review shows, by the question's key, while it waits.
    shown: HashMap<String, Shown>,
    /// Changes allowed that the agent writes itself, to read back.
    landing: Landing,
    /// The proposal of each such change, by path: an agent that also mirrors its own write as
    /// `fs/write_text_file` gets its answer at once for exactly that text (the landing sets the
    /// user's text over its write), never a second review; other text is refused. Of an agent
    /// that does not write itself, that write is ours (mirror.rs).
    mirrors: HashMap<String, Mirror>,
    /// The whole text we last gave the agent of each file it read (a buffer's unsaved text, or
    /// the disk's): a change whose "before" is that text is the whole file.
    served: HashMap<String, String>,
    /// Reviews opened so far (their tabs are numbered).
    reviews: u64,
}

impl Acp {
    pub fn new(reviewer: Arc<dyn Reviewer>, out: Sender<Vec<u8>>, events: Events) -> Acp {
        let state = State { out: Some(out), ..State::default() };
        Acp { reviewer, events, writes_itself: false, state: Arc::new(Mutex::new(state)), cwd: None }
    }

    /// The agent runs in `cwd` (its session's folder).
    pub fn in_folder(self, cwd: Option<PathBuf>) -> Acp {
        Acp { cwd, ..self }
    }

    /// An agent that writes its allowed changes itself and mirrors each as fs/write_text_file.
    pub fn writing_itself(self, writes_itself: bool) -> Acp {
        Acp { writes_itself, ..self }
    }

    /// One message from the agent: the op for Lua, if any.
    pub fn record(self: &Arc<Self>, mut msg: Map<String, Value>, cap_lines: usize) -> Option<Op> {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let params = msg.remove("params").unwrap_or(Value::Null);
        match (msg.remove("id"), method) {
            (Some(id), Some(method)) => self.request(id, &method, params),
            (None, Some(method)) if method == "$/cancel_request" => self.withdrawn(params.get("requestId")?),
            (None, Some(method)) if method == "session/update" => {
                let update = params.get("update")?;
                self.remember_fragment(update);
                self.call_ended(update);
                updates::op(update, cap_lines)
            }
            (None, Some(method)) => Some(Op::Event { kind: Some(method), event: params }),
            (Some(id), None) => {
                if msg.get("result").and_then(|r| r.get("stopReason")).is_some() {
                    let mut state = self.state.lock();
                    state.mirrors.clear(); // a mirror comes within its turn
                    let expected = state.landing.turn_ended();
                    drop(state);
                    self.check_landed(expected);
                }
                Some(response(id, msg))
            }
            (None, None) => None,
        }
    }

    fn request(self: &Arc<Self>, id: Value, method: &str, params: Value) -> Option<Op> {
        let key = id.to_string();
        let refused = {
            let asked = &self.state.lock().asked;
            if asked.contains_key(&key) {
                Some((INVALID_REQUEST, format!("the id {key} is already in use by a request that waits for its answer")))
            } else if asked.len() >= MAX_ASKED {
                Some((REFUSED, format!("more than {MAX_ASKED} questions wait for the user")))
            } else {
                None
            }
        };
        if let Some((code, why)) = refused {
            crate::warn!("acp: the agent's {method} refused: {why}");
            self.reply(&id, Err((code, why)));
            return None;
        }
        match method {
            "session/request_permission" => self.permission(key, id, params),
            "fs/write_text_file" => self.write(key, id, params),
            "fs/read_text_file" => {
                let path = str_of(&params, "path");
                let mut state = self.state.lock();
                state.read_through_us.insert(path.to_owned());
                state.asked.insert(key.clone(), Asked::Read { id, params: params.clone() });
                drop(state);
                Some(Op::AgentRequest { id: key, method: method.into(), params })
            }
            _ => {
                self.reply(&id, Err((METHOD_NOT_FOUND, format!("{method} is not offered by this client"))));
                None
            }
        }
    }

    fn permission(self: &Arc<Self>, key: String, id: Value, params: Value) -> Option<Op> {
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
        let call_id = str_of(&call, "toolCallId").to_owned();
        let remembered = || self.state.lock().fragments.get(&call_id).cloned();
        let change = change::of_content(&call).or_else(remembered).or_else(|| change::of_raw_input(&call));
        let Some(change) = change else {
            if let Some(text) = patch::text_of(&call).map(str::to_owned) {
                return self.patch_permission(key, id, params, &text);
            }
            let unshown = change::looks_like_change(&call).then(String::new);
            return self.ask_user(key, id, params, unshown);
        };
        let path = change.path().to_owned();
        let through_us = self.state.lock().read_through_us.contains(&path);
        let seen = match Seen::look(Path::new(&path)) {
            Ok(seen) => seen,
            Err(why) => {
                self.reply(&id, Ok(reject(&options)));
                return Some(refused(&path, &why, Some(&call)));
            }
        };
        let real = seen.real();
        let asked = Asked::Permission { id, options, call: call_id, path: Some(path), seen: Some(seen), through_us };
        self.state.lock().asked.insert(key.clone(), asked);
        self.propose(key, &change, &real, Some((&call, !through_us)))
    }

    /// A permission Lua asks: the agent's options less any "always" (a standing answer the user
    /// never gave), and, when it changes a file we could not show, that (`unshown`: why, or "").
    fn ask_user(&self, key: String, id: Value, mut params: Value, unshown: Option<String>) -> Option<Op> {
        let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
        let call_id = params.pointer("/toolCall/toolCallId").and_then(Value::as_str).unwrap_or_default().to_owned();
        params["options"] = Value::Array(options.iter().filter(|o| is_once(o)).cloned().collect());
        params["unshown_change"] = Value::Bool(unshown.is_some());
        if let Some(why) = unshown.filter(|w| !w.is_empty()) {
            params["unshown_why"] = Value::String(why);
        }
        let asked = Asked::Permission { id, options, call: call_id, path: None, seen: None, through_us: false };
        self.state.lock().asked.insert(key.clone(), asked);
        Some(Op::AgentRequest { id: key, method: "session/request_permission".into(), params })
    }

    fn write(self: &Arc<Self>, key: String, id: Value, params: Value) -> Option<Op> {
        let path = str_of(&params, "path").to_owned();
        let content = str_of(&params, "content").to_owned();
        // The user accepted this very change in the permission's review: what they accepted is
        // written. Any other write of the file (a later change) is reviewed anew.
        let accepted = self.state.lock().accepted.remove(&path).filter(|a| a.shown == content);
        if let Some(a) = accepted {
            let edited = (a.text != content).then(|| a.note.unwrap_or_default());
            self.write_accepted(id, path, a.text, a.seen, edited);
            return None;
        }
        let mirror = self.state.lock().mirrors.remove(&path);
        if let Some(m) = mirror {
            if !self.writes_itself && content == m.proposal {
                return self.write_allowed(id, path, m);
            }
            return self.mirrored(&id, &path, &m.proposal, &content);
        }
        let seen = match Seen::look(Path::new(&path)) {
            Ok(seen) => seen,
            Err(why) => {
                self.reply(&id, Err((REFUSED, format!("cannot review this write: {why}"))));
                return Some(refused(&path, &why, None));
            }
        };
        let real = seen.real();
        let asked = Asked::Write { id, path: path.clone(), proposed: content.clone(), seen };
        self.state.lock().asked.insert(key.clone(), asked);
        self.propose(key, &Change::Whole { path, text: content }, &real, None)
    }

    /// The agent's `fs/write_text_file` of a change it was allowed to write itself: the very
    /// proposal is answered at once and written by no one here (the agent writes it, and the
    /// landing sets what the user accepted over it: no race of two writers); other text is
    /// refused and said.
    fn mirrored(&self, id: &Value, path: &str, proposal: &str, content: &str) -> Option<Op> {
        if content == proposal {
            self.reply(id, Ok(Value::Null));
            return None;
        }
        let why = "the agent's write is not the change the user allowed";
        crate::warn!("acp: {path}: {why}");
        self.reply(id, Err((REFUSED, format!("{path} was not written: {why}"))));
        Some(refused(path, why, None))
    }

    /// The write of an allowed change that the agent has us make after all (mirror.rs): what the
    /// user accepted is written, and the change is no longer looked for as the agent's own.
    fn write_allowed(self: &Arc<Self>, id: Value, path: String, m: Mirror) -> Option<Op> {
        self.state.lock().landing.forget(&m.call, &path);
        let edited = m.edited();
        self.write_accepted(id, path, m.accepted, m.seen, edited);
        None
    }

    /// Writes what the user accepted onto the file the review showed, on a thread of its own
    /// (never the one that reads the agent: a slow disk must not hold it); answers the agent and
    /// tells the chat how it went. `edited`: the text is not the agent's (what was declined or
    /// edited, "" when unsaid).
    fn write_accepted(self: &Arc<Self>, id: Value, path: String, text: String, seen: Seen, edited: Option<String>) {
        let me = self.clone();
        std::thread::spawn(move || {
            let done = seen.write(text.as_bytes());
            me.reply(&id, done.clone().map(|()| Value::Null).map_err(|why| (REFUSED, format!("{path} was not written: {why}"))));
            match done {
                Ok(()) => (me.events)(written(&path, &edited)),
                Err(why) => {
                    crate::warn!("acp: {path} was not written: {why}");
                    (me.events)(Op::Event { kind: Some("write_refused".into()), event: json!({ "path": path, "why": why }) });
                }
            }
        });
    }

    /// A `tool_call_update` that ends a call: the change it was allowed to write is read back.
    fn call_ended(self: &Arc<Self>, update: &Value) {
        let ended = matches!(update.get("status").and_then(Value::as_str), Some("completed") | Some("failed"));
        if !ended || str_of(update, "sessionUpdate") != "tool_call_update" {
            return;
        }
        let expected = self.state.lock().landing.call_ended(str_of(update, "toolCallId"));
        // A failed call wrote nothing the agent stands by; the turn's checkpoint still compares
        // whatever it left with what was accepted.
        if update.get("status").and_then(Value::as_str) == Some("completed") {
            self.check_landed(expected);
        }
    }

    /// Reads back, on a worker, what the agent wrote of the changes the user allowed.
    fn check_landed(self: &Arc<Self>, expected: Vec<landed::Expected>) {
        if expected.is_empty() {
            return;
        }
        let me = self.clone();
        std::thread::spawn(move || landed::check(&expected, &|op| (me.events)(op)));
    }

    /// Works out the whole file and opens its review; a change that cannot be shown is refused
    /// at once, and the chat says why. `real`: where the file's path leads (the chat's line
    /// names a link). `permission`: the tool call it asks for, and whether the agent writes its
    /// own proposal; None: our write.
    fn propose(self: &Arc<Self>, key: String, change: &Change, real: &Path, permission: Option<(&Value, bool)>) -> Option<Op> {
        let agent_writes = permission.is_some_and(|(_, a)| a);
        let path = change.path().to_owned();
        let served = self.state.lock().served.get(&path).cloned();
        let whole = match change {
            Change::Replace { old, new, .. } if served.as_deref() == Some(old.as_str()) => Ok((served, new.clone())),
            _ => whole_file(change),
        };
        let (before, contents) = match whole {
            Ok(c) => c,
            Err(why) => {
                self.decided(&key, Verdict::Rejected);
                return Some(refused(&path, &why, permission.map(|(call, _)| call)));
            }
        };
        let name = Path::new(&path).file_name().map_or(path.clone(), |f| f.to_string_lossy().into_owned());
        let before = before.map(|b| blob_id(b.as_bytes()));
        let tab = {
            let mut state = self.state.lock();
            state.reviews += 1;
            let tab = format!("{name} ({})", state.reviews);
            state.tabs.insert(key.clone(), tab.clone());
            state.shown.insert(key.clone(), Shown { proposal: contents.clone(), before });
            tab
        };
        let proposal = Proposal { tab, path: path.clone(), contents, agent_writes };
        let me = self.clone();
        self.reviewer.review(proposal, Box::new(move |verdict| me.decided(&key, verdict)));
        Some(review_event(&path, real, permission.map(|(call, _)| call)))
    }

    /// The user's verdict on question `key` (nothing if it was answered already: cancelled).
    fn decided(self: &Arc<Self>, key: &str, verdict: Verdict) {
        let (shown, asked) = {
            let mut state = self.state.lock();
            state.tabs.remove(key);
            (state.shown.remove(key), state.asked.remove(key))
        };
        let Some(asked) = asked else { return };
        match (asked, verdict) {
            (Asked::Permission { id, options, call, path, seen, through_us }, Verdict::Accepted(text, note)) => {
                let Some(allow) = option_of(&options, "allow_once") else {
                    crate::warn!("acp: the agent offers no allow-once option; answered as a rejection");
                    return self.reply(&id, Ok(reject(&options)));
                };
                match (path, shown, seen) {
                    (Some(path), Some(shown), Some(seen)) if through_us => {
                        self.state.lock().accepted.insert(path, Accepted { shown: shown.proposal, text, seen, note });
                    }
                    // The agent writes its proposal: what lands is read back, and set to the
                    // user's text when that differs.
                    (Some(path), Some(shown), Some(seen)) => {
                        let mirror = Mirror { proposal: shown.proposal.clone(), call: call.clone(), accepted: text.clone(), seen: seen.clone(), note: note.clone() };
                        let own = (shown.proposal != text).then(|| OwnWrite { seen, proposal: shown.proposal, accepted: text.clone() });
                        let expected = landed::Expected::new(&call, &path, &text, shown.before).with_own(own, note);
                        let mut state = self.state.lock();
                        state.landing.expect(expected);
                        mirror::remember(&mut state.mirrors, path, mirror);
                    }
                    _ => {}
                }
                self.reply(&id, Ok(selected(allow)));
            }
            (Asked::Permission { id, options, .. } | Asked::Patch { id, options, .. }, _) => self.reply(&id, Ok(reject(&options))),
            (Asked::Write { id, path, proposed, seen }, Verdict::Accepted(text, note)) => {
                let edited = (text != proposed).then(|| note.unwrap_or_default());
                self.write_accepted(id, path, text, seen, edited);
            }
            (Asked::Write { id, .. }, _) => self.reply(&id, Err((REFUSED, "the user rejected this change in the editor".into()))),
            (Asked::Read { id, .. }, _) => self.reply(&id, Err((REFUSED, "not answered".into()))),
        }
    }

    /// Lua's answer to question `key` (a dialog's choice, a buffer's text): `result`, or the
    /// error `error`; a read with neither is read from disk here. False when it was answered
    /// already.
    pub fn answer(&self, key: &str, result: Option<Value>, error: Option<String>) -> bool {
        let asked = self.state.lock().asked.remove(key);
        let Some(asked) = asked else { return false };
        // A dialog may pick only a once option the agent offered: anything else is no answer.
        let result = match &asked {
            Asked::Permission { options, .. } => result.map(|r| once_only(r, options)),
            _ => result,
        };
        let id = match asked {
            Asked::Read { id, params } if result.is_none() && error.is_none() => {
                let (out, state) = (self.state.lock().out.clone(), self.state.clone());
                std::thread::spawn(move || {
                    let read = read_file(&params);
                    remember_read(&mut state.lock().served, &params, read.as_ref().ok());
                    send(out.as_ref(), &id, read.map_err(|e| (REFUSED, e)));
                });
                return true;
            }
            Asked::Read { id, params } => {
                remember_read(&mut self.state.lock().served, &params, result.as_ref());
                id
            }
            other => other.id().clone(),
        };
        match error {
            Some(e) => self.reply(&id, Err((REFUSED, e))),
            None => self.reply(&id, Ok(result.unwrap_or(Value::Null))),
        }
        true
    }

    /// The turn is cancelled: every permission waiting is answered `cancelled` and every write
    /// refused, and their reviews go. Returns how many were answered.
    pub fn cancel(&self) -> usize {
        let asked: Vec<(String, Asked)> = {
            let map = &mut self.state.lock().asked;
            let keys: Vec<String> = map.iter().filter(|(_, a)| !matches!(a, Asked::Read { .. })).map(|(k, _)| k.clone()).collect();
            keys.into_iter().filter_map(|k| map.remove(&k).map(|a| (k, a))).collect()
        };
        for (_, a) in &asked {
            match a {
                Asked::Permission { id, .. } | Asked::Patch { id, .. } => self.reply(id, Ok(json!({ "outcome": { "outcome": "cancelled" } }))),
                Asked::Write { id, .. } => self.reply(id, Err((REFUSED, "cancelled by the user".into()))),
                Asked::Read { .. } => {}
            }
        }
        {
            let mut state = self.state.lock();
            state.accepted.clear();
            state.shown.clear();
            state.mirrors.clear();
        }
        self.reviewer.end();
        asked.len()
    }

    /// The agent withdrew its question `id` (`$/cancel_request`): it is answered as cancelled,
    /// its review goes, and Lua drops its dialog.
    fn withdrawn(&self, id: &Value) -> Option<Op> {
        let key = id.to_string();
        let asked = self.state.lock().asked.remove(&key)?;
        self.reply(id, Err((REQUEST_CANCELLED, "cancelled by the agent".into())));
        if let Asked::Patch { parts, .. } = &asked {
            for tab in patched::tabs(parts) {
                self.reviewer.close(&tab);
            }
        }
        let tab = {
            let mut state = self.state.lock();
            state.shown.remove(&key);
            state.tabs.remove(&key)
        };
        if let Some(tab) = tab {
            self.reviewer.close(&tab);
        }
        Some(Op::Event { kind: Some("withdrawn".into()), event: json!({ "id": key }) })
    }

    /// The agent is gone, or the chat stops: nothing more is written to it, its reviews go.
    /// What it was allowed to write and may have written before it went is read back.
    pub fn ended(self: &Arc<Self>) {
        {
            let mut state = self.state.lock();
            state.out.take();
            state.asked.clear();
        }
        self.reviewer.end();
        let expected = self.state.lock().landing.turn_ended();
        self.check_landed(expected);
    }

    fn remember_fragment(&self, update: &Value) {
        let Some(change) = change::of_content(update) else { return };
        let fragments = &mut self.state.lock().fragments;
        if fragments.len() >= 256 {
            fragments.clear(); // old calls' changes: their permissions came long ago
        }
        fragments.insert(str_of(update, "toolCallId").to_owned(), change);
    }

    /// Answers the agent (nothing once its stdin is closed); the line is built before the lock.
    fn reply(&self, id: &Value, answer: Result<Value, (i64, String)>) {
        let Some(line) = line_of(id, answer) else { return };
        if let Some(out) = &self.state.lock().out {
            let _ = out.send(line);
        }
    }
}

/// Writes one JSON-RPC answer to the agent (nothing once its stdin is closed).
fn send(out: Option<&Sender<Vec<u8>>>, id: &Value, answer: Result<Value, (i64, String)>) {
    if let (Some(out), Some(line)) = (out, line_of(id, answer)) {
        let _ = out.send(line);
    }
}

/// One JSON-RPC answer, as the line written to the agent.
fn line_of(id: &Value, answer: Result<Value, (i64, String)>) -> Option<Vec<u8>> {
    let frame = match answer {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err((code, message)) => json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }),
    };
    let mut line = serde_json::to_vec(&frame).ok()?;
    line.push(b'\n');
    Some(line)
}

fn response(id: Value, mut msg: Map<String, Value>) -> Op {
    let id = match id {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let error = msg.remove("error").map(|e| e.get("message").and_then(Value::as_str).map_or(e.to_string(), str::to_owned));
    Op::Response { id: Some(id), command: None, success: error.is_none(), data: msg.remove("result").filter(|r| !r.is_null()), error }
}

/// The chat's line for a review opened (`call`: the permission's tool call, if any).
fn review_event(path: &str, real: &Path, call: Option<&Value>) -> Op {
    let linked = crate::support::real::leads_elsewhere(Path::new(path), real);
    let event = json!({ "path": path, "tool": call.map(tool_of), "real_path": real.to_string_lossy(), "linked": linked });
    Op::Event { kind: Some("review".into()), event }
}

/// What the chat draws of a permission's tool call (its block, when no `tool_call` came first).
fn tool_of(call: &Value) -> Value {
    json!({ "id": str_of(call, "toolCallId"), "title": call.get("title"), "kind": call.get("kind"), "rawInput": call.get("rawInput") })
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn option_of<'a>(options: &'a [Value], kind: &str) -> Option<&'a str> {
    options.iter().find(|o| str_of(o, "kind") == kind).and_then(|o| o.get("optionId")?.as_str())
}

fn selected(option: &str) -> Value {
    json!({ "outcome": { "outcome": "selected", "optionId": option } })
}

/// An option that answers this question only (allow once, reject once), not a standing rule.
fn is_once(option: &Value) -> bool {
    matches!(str_of(option, "kind"), "allow_once" | "reject_once")
}

/// A dialog's answer, if it selects a once option among `options`; else `cancelled`.
fn once_only(result: Value, options: &[Value]) -> Value {
    let picked = result.pointer("/outcome/optionId").and_then(Value::as_str);
    let offered = |id: &str| options.iter().any(|o| o.get("optionId").and_then(Value::as_str) == Some(id) && is_once(o));
    match picked {
        Some(id) if !offered(id) => {
            crate::warn!("acp: the answer {id} is not a once option the agent offered; answered cancelled");
            json!({ "outcome": { "outcome": "cancelled" } })
        }
        _ => result,
    }
}

/// The chat's line for a change that cannot be reviewed (`call`: the tool call asking, if any).
fn refused(path: &str, why: &str, call: Option<&Value>) -> Op {
    let event = json!({ "path": path, "why": why, "tool": call.map(tool_of) });
    Op::Event { kind: Some("change_refused".into()), event }
}

/// The reject-once option; else "cancelled" (never a standing "always" answer on the user's
/// behalf).
fn reject(options: &[Value]) -> Value {
    match option_of(options, "reject_once") {
        Some(o) => selected(o),
        None => json!({ "outcome": { "outcome": "cancelled" } }),
    }
}

/// A whole file we gave the agent (no `line`, no `limit`), kept for [`Acp::propose`].
fn remember_read(served: &mut HashMap<String, String>, params: &Value, result: Option<&Value>) {
    let whole = params.get("line").is_none_or(Value::is_null) && params.get("limit").is_none_or(Value::is_null);
    let text = result.and_then(|r| r.get("content")).and_then(Value::as_str);
    if let (true, Some(text)) = (whole, text) {
        // What it holds stays small whatever the agent reads: old reads go first.
        if served.len() >= 16 || served.values().map(String::len).sum::<usize>() + text.len() > SERVED_BYTES {
            served.clear();
        }
        if text.len() <= SERVED_BYTES {
            served.insert(str_of(params, "path").to_owned(), text.to_owned());
        }
    }
}

/// We wrote `path` as the user accepted it; `edited`: not as the agent proposed it.
fn written(path: &str, edited: &Option<String>) -> Op {
    let note = edited.as_deref().filter(|n| !n.is_empty());
    Op::Event { kind: Some("written".into()), event: json!({ "path": path, "edited": edited.is_some(), "note": note }) }
}

/// The file on disk (None: there is none) and the whole file the change leaves.
fn whole_file(change: &Change) -> Result<(Option<String>, String), String> {
    let path = Path::new(change.path());
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", change.path()));
    }
    let disk = disk_text(path)?;
    let after = change::apply(change, disk.as_deref())?;
    Ok((disk, after))
}

/// A file's text on disk (None: there is none).
fn disk_text(path: &Path) -> Result<Option<String>, String> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(format!("{} is not a file", path.display())),
        Ok(_) => read_bounded(path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// A file's text, at most [`MAX_FILE`] bytes of it (a file that grows while read is cut off
/// with an error, never read without end).
fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("the file is larger than {} MiB", MAX_FILE >> 20));
    }
    String::from_utf8(bytes).map_err(|_| "the file is not UTF-8 text".to_owned())
}

/// `fs/read_text_file` from disk: `line` (1-based) and `limit` honoured; a file that does not
/// exist reads as "" (so that an agent can create one).
fn read_file(params: &Value) -> Result<Value, String> {
    let path = Path::new(str_of(params, "path"));
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let text = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err(format!("{} is not a file", path.display())),
        Ok(_) => read_bounded(path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let first = params.get("line").and_then(Value::as_u64).unwrap_or(1).max(1) as usize - 1;
    let limit = params.get("limit").and_then(Value::as_u64).map_or(usize::MAX, |l| l as usize);
    if first == 0 && limit == usize::MAX {
        return Ok(json!({ "content": text }));
    }
    let lines: Vec<&str> = text.split_inclusive('\n').skip(first).take(limit).collect();
    Ok(json!({ "content": lines.concat() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoReviews;
    impl Reviewer for NoReviews {
        fn review(&self, _: Proposal, done: Done) {
            done(Verdict::Rejected);
        }
        fn end(&self) {}
        fn close(&self, _: &str) {}
    }

    fn acp() -> (Arc<Acp>, std::sync::mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Arc::new(Acp::new(Arc::new(NoReviews), tx, Box::new(|_| {}))), rx)
    }

    fn message(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn reads_take_regular_files_only_and_a_missing_one_is_empty() {
        assert!(read_file(&json!({"path": "/dev/zero"})).unwrap_err().contains("not a file"));
        assert!(read_file(&json!({"path": "relative.txt"})).unwrap_err().contains("absolute"));
        assert_eq!(read_file(&json!({"path": "/no/such/file"})).unwrap(), json!({"content": ""}));
        let dir = std::env::temp_dir().join(format!("acp-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.txt");
        std::fs::write(&f, "a\nb\nc\n").unwrap();
        let path = f.display().to_string();
        assert_eq!(read_file(&json!({"path": path, "line": 2, "limit": 1})).unwrap(), json!({"content": "b\n"}));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Accepts the first review with the user's own text, rejects the rest.
    struct AcceptOnce(std::sync::atomic::AtomicBool);
    impl Reviewer for AcceptOnce {
        fn review(&self, _: Proposal, done: Done) {
            let first = !self.0.swap(true, std::sync::atomic::Ordering::Relaxed);
            done(if first { Verdict::Accepted("mine\n".into(), None) } else { Verdict::Rejected });
        }
        fn end(&self) {}
        fn close(&self, _: &str) {}
    }

    #[test]
    fn an_accepted_change_is_written_only_for_the_write_of_that_very_proposal() {
        let dir = std::env::temp_dir().join(format!("acp-memo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("g.txt").display().to_string();
        std::fs::write(&path, "a\n").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let acp = Arc::new(Acp::new(Arc::new(AcceptOnce(Default::default())), tx, Box::new(|_| {})));
        let msg = |v: Value| message(v);
        acp.record(msg(json!({"id": 1, "method": "fs/read_text_file", "params": {"path": path}})), 3);
        assert!(acp.answer("1", Some(json!({"content": "a\n"})), None));
        let diff = json!({"type": "diff", "path": path, "oldText": "a\n", "newText": "b\n"});
        let options = json!([{"optionId": "y", "kind": "allow_once"}, {"optionId": "n", "kind": "reject_once"}]);
        acp.record(msg(json!({"id": 2, "method": "session/request_permission", "params": {"toolCall": {"toolCallId": "t", "content": [diff]}, "options": options}})), 3);
        // A later, different write of the file is not the accepted one: reviewed anew (rejected).
        acp.record(msg(json!({"id": 3, "method": "fs/write_text_file", "params": {"path": path, "content": "other\n"}})), 3);
        let answers: Vec<Value> = rx.try_iter().map(|l| serde_json::from_slice(&l).unwrap()).collect();
        assert_eq!(answers.iter().find(|a| a["id"] == 2).unwrap()["result"]["outcome"]["optionId"], "y");
        assert!(answers.iter().find(|a| a["id"] == 3).unwrap().get("error").is_some(), "{answers:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\n", "neither the stale acceptance nor the new text");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Accepts every review as proposed.
    struct AcceptAll;
    impl Reviewer for AcceptAll {
        fn review(&self, proposal: Proposal, done: Done) {
            done(Verdict::Accepted(proposal.contents, None));
        }
        fn end(&self) {}
        fn close(&self, _: &str) {}
    }

    #[test]
    fn the_mirror_of_a_change_the_agent_writes_itself_is_answered_at_once_and_other_text_refused() {
        let dir = crate::scratch_dir("acp-mirror");
        let (f, g) = (dir.join("f.txt").display().to_string(), dir.join("g.txt").display().to_string());
        std::fs::write(&f, "a\n").unwrap();
        std::fs::write(&g, "a\n").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let acp = Arc::new(Acp::new(Arc::new(AcceptAll), tx, Box::new(|_| {})).writing_itself(true));
        let options = json!([{"optionId": "y", "kind": "allow_once"}, {"optionId": "n", "kind": "reject_once"}]);
        let ask = |id: u64, path: &str| {
            let diff = json!({"type": "diff", "path": path, "oldText": "a\n", "newText": "b\n"});
            message(json!({"id": id, "method": "session/request_permission", "params": {"toolCall": {"toolCallId": format!("t{id}"), "content": [diff]}, "options": options}}))
        };
        let write = |id: u64, path: &str, text: &str| message(json!({"id": id, "method": "fs/write_text_file", "params": {"path": path, "content": text}}));
        acp.record(ask(1, &f), 3);
        assert!(acp.record(write(2, &f, "b\n"), 3).is_none(), "no second review");
        acp.record(ask(3, &g), 3);
        let flagged = acp.record(write(4, &g, "other\n"), 3);
        assert!(matches!(flagged, Some(Op::Event { kind: Some(ref k), .. }) if k == "change_refused"), "{flagged:?}");
        let answers: Vec<Value> = rx.try_iter().map(|l| serde_json::from_slice(&l).unwrap()).collect();
        let answer = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap().clone();
        assert_eq!(answer(1)["result"]["outcome"]["optionId"], "y");
        assert!(answer(2).get("error").is_none() && answer(2)["result"].is_null(), "{answers:?}");
        assert!(answer(4).get("error").is_some(), "{answers:?}");
        // The agent writes its own proposal: nothing here wrote either file.
        assert_eq!((std::fs::read_to_string(&f).unwrap(), std::fs::read_to_string(&g).unwrap()), ("a\n".into(), "a\n".into()));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// An agent that has the client write: a new file asked about unread, then its
    /// fs/write_text_file after the allow: the accepted text is written, once.
    #[test]
    fn the_write_of_an_allowed_new_file_from_an_agent_that_does_not_write_itself_is_made() {
        let dir = crate::scratch_dir("acp-client-writes");
        let path = dir.join("new.txt").display().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        let acp = Arc::new(Acp::new(Arc::new(AcceptOnce(Default::default())), tx, Box::new(|_| {})));
        let options = json!([{"optionId": "y", "kind": "allow_once"}, {"optionId": "n", "kind": "reject_once"}]);
        let diff = json!({"type": "diff", "path": path, "oldText": "", "newText": "fresh\n"});
        acp.record(message(json!({"id": 1, "method": "session/request_permission", "params": {"toolCall": {"toolCallId": "w", "content": [diff]}, "options": options}})), 3);
        acp.record(message(json!({"id": 2, "method": "fs/write_text_file", "params": {"path": path, "content": "fresh\n"}})), 3);
        let answer = rx.iter().map(|l| serde_json::from_slice::<Value>(&l).unwrap()).find(|a| a["id"] == 2).unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine\n", "the text the user accepted");
        assert!(acp.state.lock().landing.turn_ended().is_empty(), "not looked for as the agent's own write");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_flood_of_questions_is_refused_beyond_the_bound() {
        let (acp, rx) = acp();
        let ask = |i: usize| {
            let call = json!({"toolCallId": format!("t{i}"), "title": "Run"});
            message(json!({"jsonrpc": "2.0", "id": i, "method": "session/request_permission", "params": {"toolCall": call, "options": []}}))
        };
        let ops: Vec<Op> = (0..MAX_ASKED + 6).filter_map(|i| acp.record(ask(i), 3)).collect();
        assert_eq!(ops.len(), MAX_ASKED, "asked of the user");
        let refused: Vec<Value> = rx.try_iter().map(|l| serde_json::from_slice(&l).unwrap()).collect();
        assert_eq!(refused.len(), 6);
        assert!(refused.iter().all(|r| r["error"]["code"] == REFUSED), "{refused:?}");
        // Answered, a question makes room again.
        assert!(acp.answer("0", Some(json!({"outcome": {"outcome": "cancelled"}})), None));
        assert!(acp.record(ask(1000), 3).is_some());
    }

    #[test]
    fn a_change_that_does_not_apply_is_rejected_at_once_without_always() {
        let (acp, rx) = acp();
        let options = json!([{"optionId": "a", "kind": "allow_always"}, {"optionId": "r", "kind": "reject_once"}]);
        let diff = json!({"type": "diff", "path": "/no/such/dir/f.txt", "oldText": "x", "newText": "y"});
        let ask = json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
            "params": {"toolCall": {"toolCallId": "e", "content": [diff]}, "options": options}});
        let op = acp.record(message(ask), 3);
        assert!(matches!(op, Some(Op::Event { kind: Some(ref k), .. }) if k == "change_refused"), "{op:?}");
        let answer: Value = serde_json::from_slice(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(answer["result"]["outcome"]["optionId"], "r");
    }
}
