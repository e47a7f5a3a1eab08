//! A mock of Anthropic's Messages API on loopback, so that the real Claude Code runs offline.
//!
//! Served by tests/support/mock_http.rs (std only, keep-alive HTTP/1.1). `POST /v1/messages`
//! is answered by the test's script, streamed as SSE (`message_start` … `message_stop`) when the
//! request asks for a stream; `count_tokens` gets a count; requests with no tools (titles,
//! classifiers, the side calls Claude Code makes besides the conversation) get a short text.
//! Every request is recorded.
//!
//! Claude Code is also pointed at this server as its HTTP(S) proxy: anything it tries to fetch
//! from the internet arrives here as a `CONNECT` (or an absolute URL), is refused, and is recorded
//! in [`Mock::outside`], so a test can assert that nothing tried to leave the machine.
#![allow(dead_code)]

use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::mock_http::{self, respond, Server};

/// What the model answers next.
pub enum Reply {
    Text(String),
    /// One tool call (e.g. `Write` with `{file_path, content}`).
    Tool {
        name: String,
        input: Value,
    },
}

/// The part of a request a script decides on: the last block of the latest user message.
/// (Claude Code sends its context, e.g. the editor's selection, as `system` messages after it.)
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// The user typed this prompt.
    Prompt(String),
    /// A tool ran (or was refused): its result text and whether it is an error.
    ToolResult {
        id: String,
        text: String,
        is_error: bool,
    },
    /// Anything else (a request with no user message, an unknown block).
    Other,
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub body: Value,
}

type Script = dyn Fn(&Turn) -> Reply + Send + Sync;

struct State {
    script: Box<Script>,
    requests: Mutex<Vec<Request>>,
    /// Request lines of requests meant for another host (through the proxy setting).
    outside: Mutex<Vec<String>>,
    next_id: AtomicU64,
}

pub struct Mock {
    server: Server,
    state: Arc<State>,
}

impl Mock {
    /// Listens on a free loopback port; `script` answers each conversation turn.
    pub fn start(script: impl Fn(&Turn) -> Reply + Send + Sync + 'static) -> Mock {
        let state = Arc::new(State {
            script: Box::new(script),
            requests: Mutex::default(),
            outside: Mutex::default(),
            next_id: AtomicU64::new(1),
        });
        let st = state.clone();
        let server = Server::start(move |request, out| serve(&st, request, out));
        Mock { server, state }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Conversation turns so far (`/v1/messages` requests that carry tools), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.target.starts_with("/v1/messages?") || r.target == "/v1/messages")
            .filter(|r| has_tools(&r.body))
            .map(|r| r.body)
            .collect()
    }

    /// Request lines of everything that tried to reach another host.
    pub fn outside(&self) -> Vec<String> {
        self.state.outside.lock().unwrap().clone()
    }

    /// One line per request (method, path, latest turn), for failure messages.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for r in self.requests() {
            out += &format!("  {} {} {:?}\n", r.method, r.target, turn_of(&r.body));
        }
        for o in self.outside() {
            out += &format!("  OUTSIDE: {o}\n");
        }
        out
    }
}

fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The last block of the latest `user` message, as a [`Turn`].
pub fn turn_of(body: &Value) -> Turn {
    let Some(msg) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
    else {
        return Turn::Other;
    };
    let block = match &msg["content"] {
        Value::String(s) => return Turn::Prompt(s.trim().to_owned()),
        Value::Array(blocks) => blocks.last().cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    };
    match block["type"].as_str() {
        // Trimmed: Claude Code adds a newline to prompts it repeats in the history.
        Some("text") => Turn::Prompt(block["text"].as_str().unwrap_or("").trim().to_owned()),
        Some("tool_result") => Turn::ToolResult {
            id: block["tool_use_id"].as_str().unwrap_or("").to_owned(),
            text: result_text(&block["content"]),
            is_error: block["is_error"] == true,
        },
        _ => Turn::Other,
    }
}

/// A tool_result's content: a string, or text blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Every tool_result block in a request's messages (the whole conversation so far).
pub fn tool_results(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push(b.clone());
            }
        }
    }
    out
}

/// The texts of every `system`-role message (Claude Code's per-turn context).
pub fn system_texts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "system" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_owned)),
            ),
            _ => {}
        }
    }
    out
}

/// The result of the model's call of tool `name` (matched by the tool_use's id) in a request's
/// history, if there is one.
pub fn result_of(body: &Value, name: &str) -> Option<Value> {
    let id = body["messages"]
        .as_array()?
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_use" && b["name"] == name)?["id"]
        .clone();
    tool_results(body)
        .into_iter()
        .find(|r| r["tool_use_id"] == id)
}

// --- HTTP ---------------------------------------------------------------------------------------

/// Answers one request; a proxy request for another host is refused and recorded.
fn serve(st: &State, request: &mock_http::Request, out: &mut TcpStream) -> std::io::Result<()> {
    if request.for_another_host() {
        st.outside.lock().unwrap().push(format!("{} {}", request.method, request.target));
        return respond(out, "403 Forbidden", &[("connection", "close")], b"");
    }
    let body = request.json();
    st.requests.lock().unwrap().push(Request {
        method: request.method.clone(),
        target: request.target.clone(),
        body: body.clone(),
    });
    let (status, ctype, payload) = answer(st, request, &body);
    respond(out, status, &[("content-type", ctype), ("request-id", "req_mock")], &payload)
}

fn answer(st: &State, request: &mock_http::Request, body: &Value) -> (&'static str, &'static str, Vec<u8>) {
    match (request.method.as_str(), request.path()) {
        ("POST", "/v1/messages/count_tokens") => (
            "200 OK",
            "application/json",
            json!({"input_tokens": 100}).to_string().into_bytes(),
        ),
        ("POST", "/v1/messages") => {
            // Side requests carry no tools: a short text is what they expect.
            let reply = if has_tools(body) {
                (st.script)(&turn_of(body))
            } else {
                Reply::Text("Mock session".into())
            };
            let id = st.next_id.fetch_add(1, Ordering::Relaxed);
            let model = body["model"].as_str().unwrap_or("claude-mock").to_owned();
            if body["stream"] == true {
                (
                    "200 OK",
                    "text/event-stream",
                    sse(&reply, id, &model).into_bytes(),
                )
            } else {
                (
                    "200 OK",
                    "application/json",
                    whole(&reply, id, &model).to_string().into_bytes(),
                )
            }
        }
        _ => {
            let err = json!({"type": "error", "error": {"type": "not_found_error", "message": "not mocked"}});
            (
                "404 Not Found",
                "application/json",
                err.to_string().into_bytes(),
            )
        }
    }
}

/// The content block of a reply, as it is when complete.
fn block(reply: &Reply, id: u64) -> Value {
    match reply {
        Reply::Text(t) => json!({"type": "text", "text": t}),
        Reply::Tool { name, input } => {
            json!({"type": "tool_use", "id": format!("toolu_mock_{id}"), "name": name, "input": input})
        }
    }
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "end_turn",
        Reply::Tool { .. } => "tool_use",
    }
}

/// A non-streamed message.
fn whole(reply: &Reply, id: u64, model: &str) -> Value {
    json!({"id": format!("msg_mock_{id}"), "type": "message", "role": "assistant", "model": model,
           "content": [block(reply, id)], "stop_reason": stop_reason(reply), "stop_sequence": null,
           "usage": {"input_tokens": 100, "output_tokens": 10}})
}

/// The same message as server-sent events: the block starts empty and arrives as one delta.
fn sse(reply: &Reply, id: u64, model: &str) -> String {
    let (start, delta) = match reply {
        Reply::Text(t) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": t}),
        ),
        Reply::Tool { input, .. } => {
            let mut b = block(reply, id);
            b["input"] = json!({});
            (
                b,
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            )
        }
    };
    let mut first = whole(reply, id, model);
    first["content"] = json!([]);
    first["stop_reason"] = Value::Null;
    first["usage"]["output_tokens"] = json!(1);
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": first}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null}, "usage": {"output_tokens": 10}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
        .collect()
}
