//! A loopback OpenAI-compatible chat-completions server: the model of a real agent CLI under
//! test. `POST .../chat/completions` answers by rules the test sets (a text or one tool call),
//! streamed as the OpenAI API streams (SSE chunks, then `data: [DONE]`), over keep-alive
//! HTTP/1.1. Every request is recorded, so a test can assert what reached the model.
//!
//! Rules look at the newest turn of the conversation: either the user's input (every `user`
//! message after the last assistant or tool message: agents append notices of their own as user
//! messages after the typed one) or the result of a tool call (the last message is a `tool`),
//! or at the system prompt (a side request such as the pi-ide extension's getSuggestions).
//!
//! A reply can also be a text streamed slowly ([`Reply::slow_text`]: parts a delay apart), so
//! that a test can act while the model is still answering (abort it, steer it); a stream the
//! client closed before its end is counted ([`OpenAiMock::streams_cut`]).
#![allow(dead_code)]

use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mock_http::{chunk, end_chunks, respond, start_chunks, Request, Server};

/// What the model answers.
#[derive(Clone, Debug)]
pub enum Reply {
    Text(String),
    /// One call of the agent's tool `name` with these arguments.
    ToolCall {
        name: String,
        arguments: Value,
    },
    /// A text streamed in `parts`, each sent `delay` after the one before (the first too).
    Slow {
        parts: Vec<String>,
        delay: Duration,
    },
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_owned())
    }

    pub fn tool(name: &str, arguments: Value) -> Reply {
        Reply::ToolCall {
            name: name.to_owned(),
            arguments,
        }
    }

    /// `text` streamed slowly: cut into `parts` pieces of about the same length (at character
    /// boundaries), each sent `delay` after the one before. The whole takes `parts * delay`.
    pub fn slow_text(text: &str, parts: usize, delay: Duration) -> Reply {
        let chars: Vec<char> = text.chars().collect();
        let n = parts.clamp(1, chars.len().max(1));
        let parts = (0..n)
            .map(|i| {
                chars[i * chars.len() / n..(i + 1) * chars.len() / n]
                    .iter()
                    .collect()
            })
            .collect();
        Reply::Slow { parts, delay }
    }

    /// `count` words "w1 w2 ... w<count>", one a part, each `delay` after the one before: a
    /// long answer a test can cut short and still tell how far it got.
    pub fn slow_words(count: usize, delay: Duration) -> Reply {
        let parts = (1..=count)
            .map(|i| {
                if i == 1 {
                    format!("w{i}")
                } else {
                    format!(" w{i}")
                }
            })
            .collect();
        Reply::Slow { parts, delay }
    }

    /// The whole text of a text reply ("" for a tool call).
    pub fn full_text(&self) -> String {
        match self {
            Reply::Text(t) => t.clone(),
            Reply::Slow { parts, .. } => parts.concat(),
            Reply::ToolCall { .. } => String::new(),
        }
    }
}

/// The newest turn of a conversation, as the rules see it.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    /// The user's input (several user messages joined by newlines).
    User(String),
    /// The result of a call of the tool `name`.
    ToolResult { name: String, content: String },
}

#[derive(Clone, Debug)]
enum When {
    UserSays(String),
    ToolAnswered(String),
    SystemSays(String),
}

#[derive(Clone, Debug)]
struct Rule {
    when: When,
    reply: Reply,
}

/// One request the mock received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
struct State {
    rules: Mutex<Vec<Rule>>,
    requests: Mutex<Vec<Recorded>>,
    /// Signalled whenever a request is recorded.
    arrived: Condvar,
    /// Streamed replies the client stopped reading before their end (an abort).
    cut: AtomicUsize,
}

pub struct OpenAiMock {
    server: Server,
    state: Arc<State>,
}

/// Said when no rule matches the user's input, and after a tool result no rule names.
pub const DEFAULT_TEXT: &str = "Mock model: nothing to do.";
pub const DEFAULT_AFTER_TOOL: &str = "Mock model: done.";

/// What the system prompt of the pi-ide extension's suggestion requests asks the model for.
pub const SUGGESTION_TAG: &str = "<SUGGESTION>";

impl OpenAiMock {
    /// Listens on a free loopback port, serving on threads of its own until dropped.
    pub fn start() -> OpenAiMock {
        let state = Arc::new(State::default());
        let st = state.clone();
        let server = Server::start(move |request, out| answer(out, &st, request));
        OpenAiMock { server, state }
    }

    /// The base URL an OpenAI client is given (`.../v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.server.port)
    }

    /// When the user's input contains `text`, answer `reply`. The first matching rule wins.
    pub fn on_user(&self, text: &str, reply: Reply) {
        self.push(When::UserSays(text.to_owned()), reply);
    }

    /// When the result of a call of `tool` arrives, answer `reply`.
    pub fn after_tool(&self, tool: &str, reply: Reply) {
        self.push(When::ToolAnswered(tool.to_owned()), reply);
    }

    /// When the system prompt contains `text`, answer `reply`, whatever the turn.
    pub fn on_system(&self, text: &str, reply: Reply) {
        self.push(When::SystemSays(text.to_owned()), reply);
    }

    /// Answers the pi-ide extension's requests for inline completions (its getSuggestions: a
    /// system prompt that asks for `<SUGGESTION>` blocks) with one candidate, `insertion`.
    /// Add it before rules on the user's input: the first matching rule wins.
    pub fn on_suggestion(&self, insertion: &str) {
        let answer = format!("<SUGGESTION>{insertion}</SUGGESTION>");
        self.on_system(SUGGESTION_TAG, Reply::Text(answer));
    }

    fn push(&self, when: When, reply: Reply) {
        self.state.rules.lock().unwrap().push(Rule { when, reply });
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The newest turn of each chat-completion request so far, for failure reports.
    pub fn turns_report(&self) -> Vec<String> {
        self.completions().iter().map(|b| format!("{:?}", turn(b))).collect()
    }

    /// The bodies of the chat-completion requests so far.
    pub fn completions(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body)
            .collect()
    }

    /// Waits for a chat-completion request that satisfies `pred` (one already received counts)
    /// and returns its body. Panics after `timeout`, naming `what` and listing the turns seen.
    pub fn wait_completion(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        let mut reqs = self.state.requests.lock().unwrap();
        loop {
            let found = reqs
                .iter()
                .filter(|r| r.path.ends_with("/chat/completions"))
                .find(|r| pred(&r.body));
            if let Some(r) = found {
                return r.body.clone();
            }
            let now = Instant::now();
            if now >= deadline {
                let turns: Vec<Turn> = reqs.iter().map(|r| turn(&r.body)).collect();
                panic!("the model never got {what}; turns it got: {turns:?}");
            }
            reqs = self
                .state
                .arrived
                .wait_timeout(reqs, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// The contents of every result of `tool` that reached the model (each once).
    pub fn tool_results(&self, tool: &str) -> Vec<String> {
        let mut seen = Vec::new();
        for body in self.completions() {
            for (name, content) in all_tool_results(&body) {
                if name == tool && !seen.contains(&content) {
                    seen.push(content);
                }
            }
        }
        seen
    }

    /// How many streamed replies the client closed before their end (Pi aborting a turn
    /// closes its request to the model).
    pub fn streams_cut(&self) -> usize {
        self.state.cut.load(Ordering::SeqCst)
    }

    /// The names of the tools the agent offered its model in its latest request.
    pub fn offered_tools(&self) -> Vec<String> {
        let Some(last) = self.completions().pop() else {
            return Vec::new();
        };
        last["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn answer(out: &mut TcpStream, state: &State, request: &Request) -> std::io::Result<()> {
    let (method, path, json) = (request.method.as_str(), request.target.as_str(), request.json());
    record(state, method, path, json.clone());
    if method == "POST" && path.ends_with("/chat/completions") {
        let reply = decide(&state.rules.lock().unwrap(), &json);
        if json["stream"] == json!(true) {
            let sent = stream_reply(out, &reply);
            if sent.is_err() {
                state.cut.fetch_add(1, Ordering::SeqCst);
            }
            return sent;
        }
        return send_json(out, 200, &whole_reply(&reply));
    }
    if method == "GET" && path.ends_with("/models") {
        return send_json(
            out,
            200,
            &json!({"object": "list", "data": [{"id": "mock", "object": "model"}]}),
        );
    }
    send_json(
        out,
        404,
        &json!({"error": {"message": format!("no {method} {path} here")}}),
    )
}

fn record(state: &State, method: &str, path: &str, body: Value) {
    state.requests.lock().unwrap().push(Recorded {
        method: method.to_owned(),
        path: path.to_owned(),
        body,
    });
    state.arrived.notify_all();
}

/// The reply the rules give for this request.
fn decide(rules: &[Rule], body: &Value) -> Reply {
    let turn = turn(body);
    let system = system_prompt(body);
    let hit = rules.iter().find(|r| match (&r.when, &turn) {
        (When::SystemSays(text), _) => system.contains(text.as_str()),
        (When::UserSays(text), Turn::User(input)) => input.contains(text.as_str()),
        (When::ToolAnswered(tool), Turn::ToolResult { name, .. }) => name == tool,
        _ => false,
    });
    match (hit, &turn) {
        (Some(rule), _) => rule.reply.clone(),
        (None, Turn::User(_)) => Reply::text(DEFAULT_TEXT),
        (None, Turn::ToolResult { .. }) => Reply::text(DEFAULT_AFTER_TOOL),
    }
}

/// The newest turn of the conversation in a chat-completion request.
pub fn turn(body: &Value) -> Turn {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    // A notice the agent appended after a tool result (Copilot's "<system_notification>", the
    // pi-ide extension's editor context) leaves that result the newest turn.
    let notices = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] == "user" && is_notice(&m["content"]))
        .count();
    let before = &messages[..messages.len() - notices];
    if let Some(last) = before.last().filter(|m| m["role"] == "tool") {
        return Turn::ToolResult {
            name: tool_name(&messages, &last["tool_call_id"]),
            content: text_of(&last["content"]),
        };
    }
    let inputs: Vec<String> = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .collect();
    Turn::User(inputs.into_iter().rev().collect::<Vec<_>>().join("\n"))
}

/// A user message the agent added on its own: Copilot's `<system_notification>` (e.g. the
/// editor connected again), or the editor context the pi-ide extension appends before every
/// model call (`<editor>`, `<lsp_diagnostics>`).
fn is_notice(content: &Value) -> bool {
    let text = text_of(content);
    let text = text.trim_start();
    ["<system_notification>", "<editor>", "<lsp_diagnostics>"]
        .iter()
        .any(|tag| text.starts_with(tag))
}

/// The system prompt of a chat-completion request (`system` or `developer` messages).
pub fn system_prompt(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "system" || m["role"] == "developer")
        .map(|m| text_of(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The context the pi-ide extension appended to this request (its `<editor>` and
/// `<lsp_diagnostics>` blocks), "" when there is none.
pub fn editor_context(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .rev()
        .take_while(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .filter(|t| {
            let t = t.trim_start();
            t.starts_with("<editor>") || t.starts_with("<lsp_diagnostics>")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The user's input in this request ("" when its newest turn is a tool result).
pub fn user_input(body: &Value) -> String {
    match turn(body) {
        Turn::User(s) => s,
        Turn::ToolResult { .. } => String::new(),
    }
}

/// The text of every user message in the conversation, in order (the agent's own notices too):
/// e.g. to find a steering message that reached the model after the turn it interrupted.
pub fn user_texts(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .collect()
}

/// Every tool result in the conversation: (tool name, content).
pub fn all_tool_results(body: &Value) -> Vec<(String, String)> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                tool_name(&messages, &m["tool_call_id"]),
                text_of(&m["content"]),
            )
        })
        .collect()
}

/// The name of the tool the assistant called with this call id.
fn tool_name(messages: &[Value], call_id: &Value) -> String {
    messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .find(|c| &c["id"] == call_id)
        .and_then(|c| c["function"]["name"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// A message's content as text: a string, or the text parts of a list of parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

static CALLS: AtomicU64 = AtomicU64::new(1);

/// The chunks of a streamed reply, each a `chat.completion.chunk` object, with how long to wait
/// before sending it.
fn chunks(reply: &Reply) -> Vec<(Duration, Value)> {
    let id = format!("chatcmpl-mock-{}", CALLS.fetch_add(1, Ordering::Relaxed));
    let chunk = |delta: Value, finish: Value, usage: Option<Value>| {
        let mut c = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": "mock",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        if let Some(u) = usage {
            c["choices"] = json!([]);
            c["usage"] = u;
        }
        c
    };
    let now = |c: Value| (Duration::ZERO, c);
    let mut out: Vec<(Duration, Value)> = match reply {
        Reply::Slow { parts, delay } => {
            let mut v = vec![now(chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
                None,
            ))];
            v.extend(
                parts
                    .iter()
                    .map(|p| (*delay, chunk(json!({"content": p}), Value::Null, None))),
            );
            v.push(now(chunk(json!({}), json!("stop"), None)));
            v
        }
        Reply::Text(text) => vec![
            chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
                None,
            ),
            chunk(json!({"content": text}), Value::Null, None),
            chunk(json!({}), json!("stop"), None),
        ]
        .into_iter()
        .map(now)
        .collect(),
        Reply::ToolCall { name, arguments } => {
            let call_id = format!("call_{}", CALLS.fetch_add(1, Ordering::Relaxed));
            vec![
                chunk(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": call_id,
                    "type": "function", "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                    None,
                ),
                chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments.to_string()}}]}),
                    Value::Null,
                    None,
                ),
                chunk(json!({}), json!("tool_calls"), None),
            ]
            .into_iter()
            .map(now)
            .collect()
        }
    };
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    out.push(now(chunk(json!({}), Value::Null, Some(usage))));
    out
}

fn stream_reply(out: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    start_chunks(out, "text/event-stream")?;
    for (wait, c) in chunks(reply) {
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        chunk(out, format!("data: {c}\n\n").as_bytes())?;
    }
    chunk(out, b"data: [DONE]\n\n")?;
    end_chunks(out)
}

/// The same reply unstreamed (`stream: false`).
fn whole_reply(reply: &Reply) -> Value {
    let message = match reply {
        Reply::Text(_) | Reply::Slow { .. } => {
            json!({"role": "assistant", "content": reply.full_text()})
        }
        Reply::ToolCall { name, arguments } => json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_0", "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}),
    };
    let finish = if !matches!(reply, Reply::ToolCall { .. }) {
        "stop"
    } else {
        "tool_calls"
    };
    json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "mock",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

fn send_json(out: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let status = if status == 200 { "200 OK" } else { "404 Not Found" };
    respond(out, status, &[("Content-Type", "application/json")], body.to_string().as_bytes())
}
