//! The Copilot CLI's side of its IDE bridge (src/agents/copilot/), for tests and benchmarks: find the
//! editor by the Copilot lockfile, then speak MCP over HTTP on its Unix socket with hyper's
//! client. Blocking calls on a private runtime; each request on a connection of its own (the
//! CLI keeps several open: a pending open_diff holds one).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::UnixStream;

/// A Copilot lockfile as the CLI reads it.
#[derive(Debug, Clone)]
pub struct CopilotLock {
    pub path: PathBuf,
    pub json: Value,
}

impl CopilotLock {
    pub fn socket(&self) -> PathBuf {
        PathBuf::from(self.json["socketPath"].as_str().unwrap_or_default())
    }
    pub fn authorization(&self) -> String {
        self.json["headers"]["Authorization"].as_str().unwrap_or_default().to_owned()
    }
}

/// The lockfiles in `<home>/.copilot/ide`.
pub fn locks(home: &Path) -> Vec<CopilotLock> {
    locks_in(&home.join(".copilot").join("ide"))
}

/// The lockfiles in `dir` (`$COPILOT_HOME/ide`).
pub fn locks_in(dir: &Path) -> Vec<CopilotLock> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lock"))
        .filter_map(|p| {
            let json = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            Some(CopilotLock { path: p, json })
        })
        .collect()
}

/// What came back: the HTTP status and the body (JSON when it parses).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub session_header: Option<String>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
    /// The first text item of a tool result, parsed as JSON.
    pub fn tool_json(&self) -> Value {
        let v = self.json();
        let text = v["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text item: {v}"));
        serde_json::from_str(text).unwrap_or_else(|e| panic!("tool text is not JSON ({e}): {text}"))
    }
}

pub struct CopilotClient {
    socket: PathBuf,
    pub authorization: String,
    pub session: String,
    rt: std::sync::Arc<tokio::runtime::Runtime>,
    next_id: u64,
}

impl CopilotClient {
    pub fn new(lock: &CopilotLock, session: &str) -> CopilotClient {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        CopilotClient {
            socket: lock.socket(),
            authorization: lock.authorization(),
            session: session.to_owned(),
            rt: std::sync::Arc::new(rt),
            next_id: 1,
        }
    }

    /// One HTTP request on a new connection.
    pub fn send(&self, method: &str, body: Option<String>, headers: &[(&str, String)]) -> Result<Reply, String> {
        let fut = send(self.socket.clone(), method.to_owned(), body, self.headers(headers));
        let timed = async { tokio::time::timeout(Duration::from_secs(60), fut).await };
        self.rt.block_on(timed).map_err(|_| "timed out".to_string())?
    }

    /// [`CopilotClient::send`] in the background: the reply arrives on the receiver.
    pub fn send_async(&self, method: &str, body: Option<String>) -> mpsc::Receiver<Result<Reply, String>> {
        let (tx, rx) = mpsc::channel();
        let fut = send(self.socket.clone(), method.to_owned(), body, self.headers(&[]));
        self.rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx
    }

    fn headers(&self, extra: &[(&str, String)]) -> Vec<(String, String)> {
        let mut h = vec![
            ("authorization".to_owned(), self.authorization.clone()),
            ("x-copilot-session-id".to_owned(), self.session.clone()),
            ("x-copilot-pid".to_owned(), std::process::id().to_string()),
        ];
        for (k, v) in extra {
            h.retain(|(name, _)| name != k);
            h.push(((*k).to_owned(), v.clone()));
        }
        h
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// POSTs a JSON-RPC request; returns the reply.
    pub fn request(&mut self, method: &str, params: Value) -> Reply {
        let id = self.id();
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send("POST", Some(msg.to_string()), &[]).expect("POST")
    }

    /// POSTs a notification.
    pub fn notify(&mut self, method: &str) -> Reply {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        self.send("POST", Some(msg.to_string()), &[]).expect("POST")
    }

    /// What the CLI does on connect: initialize, then notifications/initialized.
    pub fn initialize(&mut self) -> Reply {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "copilot-cli", "version": "1.0.102"}});
        let r = self.request("initialize", params);
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(self.notify("notifications/initialized").status, 202);
        r
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Reply {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// A tool call in the background (open_diff waits for the user).
    pub fn call_async(&mut self, tool: &str, arguments: Value) -> mpsc::Receiver<Result<Reply, String>> {
        let id = self.id();
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        self.send_async("POST", Some(msg.to_string()))
    }

    /// Opens the event stream (GET /mcp); each event's data arrives on the receiver as JSON.
    pub fn events(&self) -> mpsc::Receiver<Value> {
        let (tx, rx) = mpsc::channel();
        let socket = self.socket.clone();
        let headers = self.headers(&[("accept", "text/event-stream".into())]);
        self.rt.spawn(async move {
            let Ok(mut body) = open(socket, "GET".into(), None, headers).await.map(|r| r.into_body()) else { return };
            let mut buf = String::new();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else { continue };
                buf.push_str(&String::from_utf8_lossy(&data));
                while let Some(end) = buf.find("\n\n") {
                    let event: String = buf.drain(..end + 2).collect();
                    let data = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect::<String>();
                    if let Ok(v) = serde_json::from_str(&data) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        rx
    }

    /// DELETE /mcp: ends the session.
    pub fn delete(&self) -> Reply {
        self.send("DELETE", None, &[]).expect("DELETE")
    }
}

async fn open(
    socket: PathBuf,
    method: String,
    body: Option<String>,
    headers: Vec<(String, String)>,
) -> Result<hyper::Response<hyper::body::Incoming>, String> {
    let stream = UnixStream::connect(&socket).await.map_err(|e| format!("connect {}: {e}", socket.display()))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut req = Request::builder().method(method.as_str()).uri("http://localhost/mcp").header("host", "localhost");
    for (k, v) in headers {
        req = req.header(k, v);
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| e.to_string())?;
    sender.send_request(req).await.map_err(|e| e.to_string())
}

async fn send(
    socket: PathBuf,
    method: String,
    body: Option<String>,
    headers: Vec<(String, String)>,
) -> Result<Reply, String> {
    let resp = open(socket, method, body, headers).await?;
    let status = resp.status().as_u16();
    let session_header = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Reply { status, body: String::from_utf8_lossy(&bytes).into_owned(), session_header })
}
