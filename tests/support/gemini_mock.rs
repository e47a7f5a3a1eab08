//! A mock of Google's Gemini REST API (the Generative Language API, `v1beta`) on loopback,
//! so that the real Gemini CLI runs offline (`GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>`).
//!
//! Served by tests/support/mock_http.rs (std only, keep-alive HTTP/1.1). Routes, as the CLI
//! (0.61.0) calls them, `<model>` being whatever model it picked:
//!
//! - `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: the conversation. Answered by
//!   the test's script, as server-sent events (`data: {"candidates":[…]}`), one HTTP chunk
//!   each: a text in as many events as it has pieces, or one `functionCall` part;
//! - `POST /v1beta/models/<model>:generateContent`: the same, in one JSON answer;
//! - `POST /v1beta/models/<model>:countTokens`: a count.
//!
//! Requests that are not the conversation are answered without the script: one that asks for
//! JSON (`generationConfig.responseMimeType`) gets an object that fits its schema (the CLI's
//! model router asks a "flash-lite" model to score the prompt's complexity before each turn,
//! and retries with back-off for about 90 s when the answer is not such JSON); one with no
//! tools gets a short text. Every request is recorded.
//!
//! The CLI is also pointed at this server as its HTTP(S) proxy: anything it tries to fetch from
//! the internet arrives here as a `CONNECT` (or an absolute URL), is refused, and is recorded in
//! [`GeminiMock::outside`], so a test can assert that nothing tried to leave the machine.
#![allow(dead_code)]

use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::mock_http::{self, chunk, end_chunks, respond, start_chunks, Server};

/// What the model answers to a turn of the conversation.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A text, streamed one piece an event.
    Text(Vec<String>),
    /// One call of the CLI's tool `name` (e.g. `write_file` with `{file_path, content}`).
    Call { name: String, args: Value },
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(vec![s.to_owned()])
    }

    /// A text streamed in these pieces, one event each.
    pub fn pieces(pieces: &[&str]) -> Reply {
        Reply::Text(pieces.iter().map(|p| p.to_string()).collect())
    }

    pub fn call(name: &str, args: Value) -> Reply {
        Reply::Call {
            name: name.to_owned(),
            args,
        }
    }
}

/// The part of a conversation request a script decides on: the newest `user` content.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// The user typed this prompt (the last text part: the CLI sends its session context
    /// before it, as a part of the same content or a content of its own).
    Prompt(String),
    /// The CLI ran tool `name` (or was refused it): its `functionResponse.response`, which is
    /// `{"output": …}` on success and `{"error": …}` otherwise.
    ToolResult { name: String, response: Value },
    /// Anything else.
    Other,
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub target: String,
    /// The model named in the path (`gemini-…`), if any.
    pub model: String,
    pub body: Value,
}

impl Request {
    /// Whether it is a turn of the conversation: a generate request that offers tools.
    pub fn is_turn(&self) -> bool {
        self.target.contains(":streamGenerateContent") || self.target.contains(":generateContent")
    }
}

type Script = dyn Fn(&Turn) -> Reply + Send + Sync;

struct State {
    script: Box<Script>,
    requests: Mutex<Vec<Request>>,
    outside: Mutex<Vec<String>>,
}

pub struct GeminiMock {
    server: Server,
    state: Arc<State>,
}

impl GeminiMock {
    /// Listens on a free loopback port; `script` answers each turn of the conversation.
    pub fn start(script: impl Fn(&Turn) -> Reply + Send + Sync + 'static) -> GeminiMock {
        let state = Arc::new(State {
            script: Box::new(script),
            requests: Mutex::default(),
            outside: Mutex::default(),
        });
        let st = state.clone();
        let server = Server::start(move |request, out| serve(&st, request, out));
        GeminiMock { server, state }
    }

    /// The base URL (`GOOGLE_GEMINI_BASE_URL`, and the proxy).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The conversation's requests so far (generate requests that offer tools), in order.
    pub fn turns(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_turn() && has_tools(&r.body))
            .collect()
    }

    /// Request lines of everything that tried to reach another host.
    pub fn outside(&self) -> Vec<String> {
        self.state.outside.lock().unwrap().clone()
    }

    /// One line per request (method, path, newest turn), for failure messages.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for r in self.requests() {
            let turn = if has_tools(&r.body) {
                format!("{:?}", turn_of(&r.body))
            } else {
                "(side request)".into()
            };
            out += &format!("  {} {} {}\n", r.method, r.target, cut(&turn, 300));
        }
        for o in self.outside() {
            out += &format!("  OUTSIDE: {o}\n");
        }
        out
    }
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The newest `user` content of a generate request, as a [`Turn`].
pub fn turn_of(body: &Value) -> Turn {
    let Some(content) = body["contents"]
        .as_array()
        .and_then(|c| c.iter().rev().find(|c| c["role"] == "user"))
    else {
        return Turn::Other;
    };
    let parts = content["parts"].as_array().cloned().unwrap_or_default();
    if let Some(r) = parts.iter().rev().find_map(|p| p.get("functionResponse")) {
        return Turn::ToolResult {
            name: r["name"].as_str().unwrap_or("").to_owned(),
            response: r["response"].clone(),
        };
    }
    match parts.iter().rev().find_map(|p| p["text"].as_str()) {
        Some(t) => Turn::Prompt(t.trim().to_owned()),
        None => Turn::Other,
    }
}

/// The names of the tools a request offers the model.
pub fn tool_names(body: &Value) -> Vec<String> {
    let decls = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default());
    decls.filter_map(|d| d["name"].as_str().map(str::to_owned)).collect()
}

// --- HTTP ---------------------------------------------------------------------------------------

/// Answers one request; a proxy request for another host is refused and recorded.
fn serve(st: &State, request: &mock_http::Request, out: &mut TcpStream) -> std::io::Result<()> {
    if request.for_another_host() {
        st.outside.lock().unwrap().push(format!("{} {}", request.method, request.target));
        return respond(out, "403 Forbidden", &[("connection", "close")], b"");
    }
    let body = request.json();
    // `/v1beta/models/<model>:<method>`
    let (model, method) = request
        .path()
        .strip_prefix("/v1beta/models/")
        .and_then(|m| m.split_once(':'))
        .unwrap_or(("", ""));
    st.requests.lock().unwrap().push(Request {
        method: request.method.clone(),
        target: request.target.clone(),
        model: model.to_owned(),
        body: body.clone(),
    });
    match (request.method.as_str(), method) {
        ("POST", "streamGenerateContent") => stream(out, &events(&answer(st, &body))),
        ("POST", "generateContent") => {
            let whole = candidate(&merged(answer(st, &body)), true);
            send_json(out, "200 OK", &whole)
        }
        ("POST", "countTokens") => send_json(out, "200 OK", &json!({"totalTokens": 100})),
        _ => {
            let err = json!({"error": {"code": 404, "message": format!("not mocked: {}", request.target), "status": "NOT_FOUND"}});
            send_json(out, "404 Not Found", &err)
        }
    }
}

/// The reply to a generate request: JSON when it asks for JSON, a short text when it offers no
/// tools (neither is the conversation), else the script's.
fn answer(st: &State, body: &Value) -> Reply {
    let config = &body["generationConfig"];
    if config["responseMimeType"] == "application/json" {
        let schema = if config["responseJsonSchema"].is_object() {
            &config["responseJsonSchema"]
        } else {
            &config["responseSchema"]
        };
        return Reply::text(&fitting(schema).to_string());
    }
    if !has_tools(body) {
        return Reply::text("Mock summary");
    }
    (st.script)(&turn_of(body))
}

/// A value that fits a (Gemini or JSON) schema: the smallest of each type. The router reads
/// `complexity_score` 1 as a simple task.
fn fitting(schema: &Value) -> Value {
    match schema["type"].as_str().unwrap_or("").to_ascii_lowercase().as_str() {
        "object" => {
            let props = schema["properties"].as_object().cloned().unwrap_or_default();
            Value::Object(props.iter().map(|(k, v)| (k.clone(), fitting(v))).collect())
        }
        "array" => json!([]),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        _ => match schema["enum"].as_array().and_then(|e| e.first()) {
            Some(first) => first.clone(),
            None => json!("mock"),
        },
    }
}

/// A text's pieces as one (for an answer that is not streamed).
fn merged(reply: Reply) -> Reply {
    match reply {
        Reply::Text(pieces) => Reply::Text(vec![pieces.concat()]),
        call => call,
    }
}

/// One `GenerateContentResponse`: a candidate with these parts; `last` ends it.
fn candidate(reply: &Reply, last: bool) -> Value {
    let parts = match reply {
        Reply::Text(pieces) => pieces.iter().map(|t| json!({"text": t})).collect(),
        Reply::Call { name, args } => vec![json!({"functionCall": {"name": name, "args": args}})],
    };
    let mut c = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "modelVersion": "gemini-mock"});
    if last {
        c["candidates"][0]["finishReason"] = json!("STOP");
        c["usageMetadata"] = json!({"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110});
    }
    c
}

/// The reply as stream events: a text one piece an event, a call in one.
fn events(reply: &Reply) -> Vec<Value> {
    match reply {
        Reply::Text(pieces) => {
            let n = pieces.len();
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| candidate(&Reply::Text(vec![p.clone()]), i + 1 == n))
                .collect()
        }
        call => vec![candidate(call, true)],
    }
}

fn send_json(out: &mut TcpStream, status: &str, body: &Value) -> std::io::Result<()> {
    respond(out, status, &[("content-type", "application/json; charset=UTF-8")], body.to_string().as_bytes())
}

/// Server-sent events, one HTTP chunk each, written as they are made (as Google's API streams).
fn stream(out: &mut TcpStream, events: &[Value]) -> std::io::Result<()> {
    start_chunks(out, "text/event-stream")?;
    for e in events {
        chunk(out, format!("data: {e}\r\n\r\n").as_bytes())?;
    }
    end_chunks(out)
}
