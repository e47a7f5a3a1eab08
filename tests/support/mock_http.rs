//! The HTTP/1.1 side of the loopback model mocks (anthropic_mock.rs, gemini_mock.rs,
//! openai_mock.rs, responses_mock.rs), std only: one thread accepts, one thread serves each
//! connection, its requests one after another (keep-alive), with `Content-Length` or chunked
//! bodies as the agents send them; answers whole or streamed in chunks.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

/// Writes the response to one request.
type Answer = dyn Fn(&Request, &mut TcpStream) -> std::io::Result<()> + Send + Sync;

/// A free loopback port, served until dropped.
pub struct Server {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Listens on a free loopback port; `answer` answers each request.
    pub fn start(answer: impl Fn(&Request, &mut TcpStream) -> std::io::Result<()> + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock model's port");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let (answer, stopped): (Arc<Answer>, _) = (Arc::new(answer), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (answer, stopped) = (answer.clone(), stopped.clone());
                std::thread::spawn(move || serve(conn, &*answer, &stopped));
            }
        });
        Server { port, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Wake the accept loop so that it sees the flag and lets the listener go.
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves one connection until the client closes it or asks to, a request was for another host
/// (a mock serves no other: it answers, refusing, and closes), an answer fails, or the server
/// stopped.
fn serve(conn: TcpStream, answer: &Answer, stopped: &AtomicBool) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    while let Some(request) = read_request(&mut r) {
        let close = request.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
        if answer(&request, &mut out).is_err() || close || request.for_another_host() || stopped.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// One request as it came.
pub struct Request {
    pub method: String,
    /// As in the request line: a path with its query, or a proxy request's absolute URL or host.
    pub target: String,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The body as JSON (null if it is none).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A proxy request, meant for another host: `CONNECT`, or an absolute URL.
    pub fn for_another_host(&self) -> bool {
        self.method == "CONNECT" || !self.target.starts_with('/')
    }
}

/// Reads one request. None at the end of the stream or on garbage.
fn read_request(r: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let mut request = Request { method, target, headers, body: Vec::new() };
    let chunked = request.header("transfer-encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let length = request.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    request.body = if chunked { read_chunked(r)? } else { read_exact(r, length)? };
    Some(request)
}

fn read_exact(r: &mut impl BufRead, n: usize) -> Option<Vec<u8>> {
    let mut body = vec![0; n];
    r.read_exact(&mut body).ok()?;
    Some(body)
}

fn read_chunked(r: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let mut t = String::new();
                if r.read_line(&mut t).ok()? == 0 || t.trim().is_empty() {
                    return Some(body);
                }
            }
        }
        body.extend(read_exact(r, size)?);
        // The chunk's CRLF.
        read_exact(r, 2)?;
    }
}

/// A whole response: `status` ("200 OK"), `headers` (a Content-Length is added) and `body`.
pub fn respond(out: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        head += &format!("{k}: {v}\r\n");
    }
    head += &format!("Content-Length: {}\r\n\r\n", body.len());
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// The head of a `200 OK` streamed in chunks ([`chunk`], then [`end_chunks`]).
pub fn start_chunks(out: &mut TcpStream, content_type: &str) -> std::io::Result<()> {
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
    out.write_all(head.as_bytes())?;
    out.flush()
}

/// One chunk, sent at once.
pub fn chunk(out: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    out.write_all(format!("{:x}\r\n", data.len()).as_bytes())?;
    out.write_all(data)?;
    out.write_all(b"\r\n")?;
    out.flush()
}

/// The last chunk.
pub fn end_chunks(out: &mut TcpStream) -> std::io::Result<()> {
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}
