//! A loopback mock of OpenAI's Responses API (`POST .../responses`, streamed as SSE), the model
//! of Codex and codex-acp under test (Codex refuses chat completions). Replies follow rules on
//! the newest item of the request's `input`: the user's text, or the output of a tool call.
//! Every request is recorded. Tool calls are `function_call` items (an MCP tool carries its
//! server's `namespace`) or the `apply_patch` custom tool call.
#![allow(dead_code)]

use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mock_http::{respond, Request, Server};

/// What the model answers.
#[derive(Clone, Debug)]
pub enum Reply {
    Text(String),
    /// An output item as is (a `function_call` or `custom_tool_call`; a `call_id` is added).
    Item(Value),
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_owned())
    }

    /// A call of tool `name` of MCP server `server` (Codex's `mcp__<server>` namespace).
    pub fn mcp(server: &str, name: &str, arguments: Value) -> Reply {
        Reply::Item(json!({"type": "function_call", "namespace": format!("mcp__{server}"), "name": name,
            "arguments": arguments.to_string()}))
    }

    /// Codex's apply_patch with this patch ("*** Begin Patch ... *** End Patch").
    pub fn patch(patch: &str) -> Reply {
        Reply::Item(json!({"type": "custom_tool_call", "name": "apply_patch", "input": patch}))
    }
}

#[derive(Clone, Debug)]
enum When {
    UserSays(String),
    /// The output of a call whose output contains this text.
    ToolOutput(String),
}

#[derive(Default)]
struct State {
    rules: Mutex<Vec<(When, Reply)>>,
    requests: Mutex<Vec<Value>>,
    arrived: Condvar,
}

pub struct ResponsesMock {
    server: Server,
    state: Arc<State>,
}

pub const DEFAULT_TEXT: &str = "Mock model: nothing to do.";
pub const DEFAULT_AFTER_TOOL: &str = "Mock model: done.";

impl ResponsesMock {
    pub fn start() -> ResponsesMock {
        let state = Arc::new(State::default());
        let st = state.clone();
        let server = Server::start(move |request, out| answer(&st, request, out));
        ResponsesMock { server, state }
    }

    /// The provider's base URL (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.server.port)
    }

    /// When the user's text contains `text`, answer `reply` (the first matching rule wins).
    pub fn on_user(&self, text: &str, reply: Reply) {
        self.state.rules.lock().unwrap().push((When::UserSays(text.to_owned()), reply));
    }

    /// When a tool's output contains `text` (any output: ""), answer `reply`.
    pub fn after_output(&self, text: &str, reply: Reply) {
        self.state.rules.lock().unwrap().push((When::ToolOutput(text.to_owned()), reply));
    }

    /// The newest turn of every request so far, for failure reports.
    pub fn turns_report(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().iter().map(|b| format!("{:?}", newest(b))).collect()
    }

    /// Waits for a request whose newest turn satisfies `pred` and returns that turn's text.
    pub fn wait_turn(&self, what: &str, timeout: Duration, pred: impl Fn(&Turn) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        let mut reqs = self.state.requests.lock().unwrap();
        loop {
            if let Some(t) = reqs.iter().map(newest).find(|t| pred(t)) {
                return match t {
                    Turn::User(s) | Turn::Output(s) => s,
                };
            }
            let now = Instant::now();
            if now >= deadline {
                let turns: Vec<Turn> = reqs.iter().map(newest).collect();
                panic!("the model never got {what}; turns it got: {turns:?}");
            }
            reqs = self.state.arrived.wait_timeout(reqs, deadline - now).unwrap().0;
        }
    }

    /// The names of the tools (and MCP namespaces' tools) of the latest request.
    pub fn offered_tools(&self) -> String {
        self.state.requests.lock().unwrap().last().map(|b| b["tools"].to_string()).unwrap_or_default()
    }
}

/// The newest turn of a request: the user's text or a tool's output.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    User(String),
    Output(String),
}

fn newest(body: &Value) -> Turn {
    let items = body["input"].as_array().cloned().unwrap_or_default();
    let Some(last) = items.last() else { return Turn::User(String::new()) };
    let kind = last["type"].as_str().unwrap_or_default();
    if kind.ends_with("_call_output") {
        return Turn::Output(text_of(&last["output"]));
    }
    Turn::User(text_of(&last["content"]))
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(|p| p["text"].as_str().map(str::to_owned).unwrap_or_else(|| text_of(p))).collect(),
        Value::Object(_) => v["content"].as_str().unwrap_or_default().to_owned(),
        _ => String::new(),
    }
}

fn decide(state: &State, body: &Value) -> Reply {
    let turn = newest(body);
    let rules = state.rules.lock().unwrap();
    let hit = rules.iter().find(|(when, _)| match (when, &turn) {
        (When::UserSays(t), Turn::User(s)) | (When::ToolOutput(t), Turn::Output(s)) => s.contains(t.as_str()),
        _ => false,
    });
    match (hit, turn) {
        (Some((_, reply)), _) => reply.clone(),
        (None, Turn::User(_)) => Reply::text(DEFAULT_TEXT),
        (None, Turn::Output(_)) => Reply::text(DEFAULT_AFTER_TOOL),
    }
}

fn answer(state: &State, request: &Request, out: &mut TcpStream) -> std::io::Result<()> {
    if request.method != "POST" || !request.target.ends_with("/responses") {
        return respond(out, "404 Not Found", &[("Content-Type", "application/json")], b"{}");
    }
    let body = request.json();
    let reply = decide(state, &body);
    state.requests.lock().unwrap().push(body);
    state.arrived.notify_all();
    respond(out, "200 OK", &[("Content-Type", "text/event-stream")], events(&reply).as_bytes())
}

static IDS: AtomicU64 = AtomicU64::new(1);

/// The SSE events of one response: created, the output item, completed.
fn events(reply: &Reply) -> String {
    let n = IDS.fetch_add(1, Ordering::Relaxed);
    let mut evs = vec![json!({"type": "response.created", "response": {"id": format!("resp_{n}")}})];
    match reply {
        Reply::Text(text) => {
            let item = json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant", "content": []});
            evs.push(json!({"type": "response.output_item.added", "output_index": 0, "item": item}));
            evs.push(json!({"type": "response.output_text.delta", "item_id": format!("msg_{n}"), "output_index": 0,
                "content_index": 0, "delta": text}));
            let mut done = item.clone();
            done["content"] = json!([{"type": "output_text", "text": text, "annotations": []}]);
            evs.push(json!({"type": "response.output_item.done", "output_index": 0, "item": done}));
        }
        Reply::Item(item) => {
            let mut item = item.clone();
            item["call_id"] = json!(format!("call_{n}"));
            evs.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
        }
    }
    let usage = json!({"input_tokens": 10, "input_tokens_details": null, "output_tokens": 5,
        "output_tokens_details": null, "total_tokens": 15});
    evs.push(json!({"type": "response.completed", "response": {"id": format!("resp_{n}"), "usage": usage}}));
    evs.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect()
}
