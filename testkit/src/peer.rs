//! A blocking WebSocket client that speaks to the editor like the Pi extension does.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

pub const AUTH_HEADER: &str = "x-pi-ide-authorization";

#[derive(Debug)]
pub enum ConnectError {
    /// The server answered the upgrade with this HTTP status (401 for a bad token).
    Http(u16),
    Other(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Http(s) => write!(f, "Unexpected server response: {s}"),
            ConnectError::Other(e) => f.write_str(e),
        }
    }
}

/// What the server sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    Json(Value),
    /// A text frame that is not JSON.
    Text(String),
    Close {
        code: u16,
        reason: String,
    },
    /// The socket ended without a Close frame.
    Gone,
}

pub struct Peer {
    ws: WebSocket<TcpStream>,
    next_id: u64,
    /// Frames that arrived while waiting for something else (notifications, server requests).
    pub inbox: VecDeque<Value>,
    subprotocol: Option<String>,
}

impl Peer {
    /// Connects with the given token (as `x-pi-ide-authorization`).
    pub fn connect(port: u16, token: &str) -> Result<Peer, ConnectError> {
        Peer::connect_with_headers(port, &[(AUTH_HEADER, token)])
    }

    /// Connects sending exactly these extra headers (none, several, repeated…).
    pub fn connect_with_headers(port: u16, headers: &[(&str, &str)]) -> Result<Peer, ConnectError> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .map_err(|e| ConnectError::Other(e.to_string()))?;
        Peer::upgrade(stream, port, headers)
    }

    /// The WebSocket upgrade over a TCP connection made beforehand (as an async client library
    /// does for many connections at once: every connect first, then every request).
    pub fn upgrade(stream: TcpStream, port: u16, headers: &[(&str, &str)]) -> Result<Peer, ConnectError> {
        stream.set_nodelay(true).ok();
        stream.set_read_timeout(Some(Duration::from_secs(30))).ok();
        let mut req = format!("ws://127.0.0.1:{port}/")
            .into_client_request()
            .map_err(|e| ConnectError::Other(e.to_string()))?;
        for (k, v) in headers {
            req.headers_mut().append(
                tungstenite::http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| ConnectError::Other(e.to_string()))?,
                tungstenite::http::HeaderValue::from_str(v)
                    .map_err(|e| ConnectError::Other(e.to_string()))?,
            );
        }
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        match tungstenite::client::client_with_config(req, stream, Some(config)) {
            Ok((ws, resp)) => Ok(Peer {
                ws,
                next_id: 1,
                inbox: VecDeque::new(),
                subprotocol: resp
                    .headers()
                    .get("sec-websocket-protocol")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            }),
            Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(resp))) => {
                Err(ConnectError::Http(resp.status().as_u16()))
            }
            Err(e) => Err(ConnectError::Other(e.to_string())),
        }
    }

    /// The subprotocol the server chose, if any.
    pub fn subprotocol(&self) -> Option<String> {
        self.subprotocol.clone()
    }

    pub fn set_timeout(&mut self, t: Duration) {
        self.ws.get_mut().set_read_timeout(Some(t)).ok();
    }

    pub fn send_text(&mut self, text: &str) -> Result<(), String> {
        self.ws
            .send(Message::text(text.to_owned()))
            .map_err(|e| e.to_string())
    }

    pub fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), String> {
        self.ws
            .send(Message::binary(bytes))
            .map_err(|e| e.to_string())
    }

    pub fn send_json(&mut self, v: &Value) -> Result<(), String> {
        self.send_text(&v.to_string())
    }

    pub fn ping(&mut self, payload: &[u8]) -> Result<(), String> {
        self.ws
            .send(Message::Ping(payload.to_vec().into()))
            .map_err(|e| e.to_string())
    }

    /// The next meaningful frame (pings and pongs are skipped). Errors on timeout.
    pub fn recv(&mut self) -> Result<Received, String> {
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    return Ok(match serde_json::from_str(t.as_str()) {
                        Ok(v) => Received::Json(v),
                        Err(_) => Received::Text(t.as_str().to_owned()),
                    })
                }
                Ok(Message::Close(frame)) => {
                    return Ok(match frame {
                        Some(f) => Received::Close {
                            code: u16::from(f.code),
                            reason: f.reason.as_str().to_owned(),
                        },
                        None => Received::Close {
                            code: 1005,
                            reason: String::new(),
                        },
                    })
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err("timed out waiting for a frame".into())
                }
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    return Ok(Received::Gone)
                }
                Err(tungstenite::Error::Io(e))
                    if e.kind() == std::io::ErrorKind::ConnectionReset =>
                {
                    return Ok(Received::Gone)
                }
                Err(tungstenite::Error::Protocol(_)) => return Ok(Received::Gone),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// The next JSON frame, from the inbox first.
    pub fn recv_json(&mut self) -> Result<Value, String> {
        if let Some(v) = self.inbox.pop_front() {
            return Ok(v);
        }
        match self.recv()? {
            Received::Json(v) => Ok(v),
            other => Err(format!("expected a JSON frame, got {other:?}")),
        }
    }

    /// Waits for the response with this id; other frames go to the inbox.
    pub fn wait_response(&mut self, id: &Value) -> Result<Value, String> {
        if let Some(pos) = self
            .inbox
            .iter()
            .position(|v| v.get("id") == Some(id) && v.get("method").is_none())
        {
            return Ok(self.inbox.remove(pos).unwrap());
        }
        loop {
            match self.recv()? {
                Received::Json(v) if v.get("id") == Some(id) && v.get("method").is_none() => {
                    return Ok(v)
                }
                Received::Json(v) => self.inbox.push_back(v),
                other => {
                    return Err(format!(
                        "connection ended while waiting for {id}: {other:?}"
                    ))
                }
            }
        }
    }

    /// Waits for a notification with this method; other frames go to the inbox.
    pub fn wait_notification(&mut self, method: &str, timeout: Duration) -> Result<Value, String> {
        self.wait_frame(&format!("{method} notification"), timeout, |v| {
            v["method"] == method && v.get("id").is_none()
        })
    }

    /// Waits for the first frame (inbox first) that `wanted` accepts; the others go to the inbox.
    fn wait_frame(
        &mut self,
        what: &str,
        timeout: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        if let Some(pos) = self.inbox.iter().position(&wanted) {
            return Ok(self.inbox.remove(pos).unwrap());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no {what} within {timeout:?}"));
            }
            self.set_timeout(left);
            let got = self.recv();
            self.set_timeout(Duration::from_secs(30));
            match got? {
                Received::Json(v) if wanted(&v) => return Ok(v),
                Received::Json(v) => self.inbox.push_back(v),
                other => {
                    return Err(format!(
                        "connection ended while waiting for {what}: {other:?}"
                    ))
                }
            }
        }
    }

    /// Sends a request with the given id and waits for its response (the whole frame).
    pub fn request_with_id(
        &mut self,
        id: Value,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.wait_response(&id)
    }

    /// Sends a request with a fresh numeric id and waits for its response (the whole frame).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.request_with_id(json!(id), method, params)
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// `initialize` exactly as the Pi extension sends it (a UUID-like string id).
    pub fn initialize(&mut self) -> Result<Value, String> {
        let id = format!("init-{}", self.next_id);
        self.next_id += 1;
        self.request_with_id(
            json!(id),
            "initialize",
            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "pi-ide", "version": "0.1.0"}}),
        )
    }

    /// `tools/call` and the whole response frame.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, String> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Closes with a Close frame (code 1000) and waits briefly for the server's reply.
    pub fn close(mut self) {
        let _ = self.ws.close(None);
        self.set_timeout(Duration::from_millis(500));
        while self.ws.read().is_ok() {}
    }

    /// Drops the TCP connection without a Close frame (a killed agent).
    pub fn kill(self) {
        let _ = self.ws.get_ref().shutdown(std::net::Shutdown::Both);
    }
}

/// The texts of a tool result's content.
pub fn texts(response: &Value) -> Vec<String> {
    response["result"]["content"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl Peer {
    /// Writes raw bytes to the socket (for hand-made frames).
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), String> {
        use std::io::Write;
        self.ws
            .get_mut()
            .write_all(bytes)
            .map_err(|e| e.to_string())
    }
}

impl Peer {
    /// The next text frame exactly as sent (to check bytes, e.g. an echoed id).
    pub fn recv_text(&mut self) -> Result<String, String> {
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => return Ok(t.as_str().to_owned()),
                Ok(Message::Close(_)) => return Err("closed".into()),
                Ok(_) => continue,
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl Peer {
    /// Waits for a request from the editor (a frame with both `method` and `id`), e.g.
    /// getSuggestions; other frames go to the inbox.
    pub fn wait_request(&mut self, method: &str, timeout: Duration) -> Result<Value, String> {
        self.wait_frame(&format!("{method} request"), timeout, |v| {
            v["method"] == method && v.get("id").is_some()
        })
    }

    /// Answers a request from the editor.
    pub fn respond(&mut self, id: &Value, result: Value) -> Result<(), String> {
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    pub fn respond_error(&mut self, id: &Value, code: i64, message: &str) -> Result<(), String> {
        self.send_json(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
    }
}

/// A masked client frame written by hand, to send what a well-behaved library would not: a
/// message cut in fragments (`fin` false), a control frame in the middle, a header alone.
pub fn raw_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![(if fin { 0x80 } else { 0 }) | opcode];
    let mask = [7u8, 1, 8, 3];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n < 65536 => {
            f.push(0x80 | 126);
            f.extend((n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend((n as u64).to_be_bytes());
        }
    }
    f.extend(mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}
