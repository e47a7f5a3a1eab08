//! The connection to a Neovim, made when a call needs one: the record's socket (refused unless
//! its peer is this user: peer.rs), an `initialize` of our own (carrying the client's name, so Neovim shows it, and
//! our folder, which its relative paths are relative to), then the client's calls relayed
//! line for line. Answers come back on a thread of their own. When the connection drops (Neovim
//! quit), the calls still waiting are answered with an error result, and the next call looks
//! for a Neovim again.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::find::{self, Wanted};

/// The id of our own `initialize`, whose answer is not the client's.
const INIT_ID: &str = "\"pi-ide-mcp/initialize\"";

pub struct Relay {
    wanted: Wanted,
    /// The client's `initialize` params, sent on to each Neovim we connect to.
    pub init: Mutex<Option<Value>>,
    conn: Mutex<Option<Conn>>,
    out: Arc<Mutex<std::io::Stdout>>,
}

struct Conn {
    stream: UnixStream,
    /// The ids of calls sent on it and not answered yet.
    waiting: Arc<Mutex<HashSet<String>>>,
    /// Cleared by its reader when Neovim closed it.
    alive: Arc<AtomicBool>,
    pid: u32,
}

impl Relay {
    pub fn new(wanted: Wanted) -> Relay {
        Relay { wanted, init: Mutex::new(None), conn: Mutex::new(None), out: Arc::new(Mutex::new(std::io::stdout())) }
    }

    /// Writes one message to the client.
    pub fn send(&self, frame: &str) {
        write_line(&self.out, frame);
    }

    /// Sends a call (raw line, its id as raw JSON) to Neovim, connecting first if need be; the
    /// answer reaches the client from the reader thread. Err: why it could not be sent. A line
    /// that could not be written whole never reached Neovim (it reads whole lines only), so
    /// after a connection that had gone it is sent once more, on a new one.
    pub fn call(&self, id: &str, line: &[u8]) -> Result<(), String> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if conn.as_ref().is_some_and(|c| !c.alive.load(Ordering::Acquire)) {
            *conn = None;
        }
        for attempt in 0..2 {
            if conn.is_none() {
                *conn = Some(self.connect()?);
            }
            let c = conn.as_mut().expect("connected above");
            c.waiting.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_owned());
            match write_all_line(&mut c.stream, line) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    c.waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
                    let pid = c.pid;
                    *conn = None;
                    if attempt == 1 {
                        return Err(format!("the connection to Neovim (pid {pid}) failed: {e}; call the tool again"));
                    }
                }
            }
        }
        unreachable!("the second attempt returns")
    }

    /// Sends a notification on to Neovim, if connected (a cancellation needs no new connection).
    pub fn notify(&self, line: &[u8]) {
        if let Some(c) = self.conn.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            let _ = write_all_line(&mut c.stream, line);
        }
    }

    fn connect(&self) -> Result<Conn, String> {
        let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
        let record = find::pick(&self.wanted, &find::look(), &cwd)?;
        let mut stream = UnixStream::connect(&record.socket_path)
            .map_err(|e| format!("cannot connect to Neovim (pid {}) at {}: {e}", record.pid, record.socket_path))?;
        // Before anything is sent: the socket must be this user's.
        crate::peer::check(&stream, &record)?;
        let params = self.init.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(default_init);
        let params = with_folder(params, &cwd);
        let hello = serde_json::json!({"jsonrpc": "2.0", "id": "pi-ide-mcp/initialize", "method": "initialize", "params": params});
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        write_all_line(&mut stream, hello.to_string().as_bytes())
            .and_then(|()| write_all_line(&mut stream, initialized))
            .map_err(|e| format!("cannot talk to Neovim (pid {}): {e}", record.pid))?;
        let waiting = Arc::new(Mutex::new(HashSet::new()));
        let alive = Arc::new(AtomicBool::new(true));
        let reader = stream.try_clone().map_err(|e| e.to_string())?;
        let (out, w, a, pid) = (self.out.clone(), waiting.clone(), alive.clone(), record.pid);
        std::thread::spawn(move || read_answers(reader, out, w, a, pid));
        eprintln!("pi-ide-mcp: connected to Neovim (pid {pid}, {})", record.workspace_folders.join(", "));
        Ok(Conn { stream, waiting, alive, pid })
    }
}

/// The client's `initialize` params with our folder, which the client gave us (it runs us
/// where it works), in `_meta`: Neovim resolves the client's relative paths against it, as the
/// client does when it writes (src/mcp/methods.rs: FOLDER_KEY).
fn with_folder(mut params: Value, cwd: &std::path::Path) -> Value {
    if !params.is_object() {
        params = default_init();
    }
    let meta = params.as_object_mut().expect("an object").entry("_meta").or_insert_with(|| serde_json::json!({}));
    if !meta.is_object() {
        *meta = serde_json::json!({});
    }
    meta["pi-ide/cwd"] = cwd.to_string_lossy().into_owned().into();
    params
}

fn default_init() -> Value {
    serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp-client", "version": "0"}})
}

/// Relays Neovim's answers to the client until the connection ends; then answers what still
/// waits with an error result, so that no call hangs.
fn read_answers(
    stream: UnixStream,
    out: Arc<Mutex<std::io::Stdout>>,
    waiting: Arc<Mutex<HashSet<String>>>,
    alive: Arc<AtomicBool>,
    pid: u32,
) {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let frame = line.trim_end();
        let Ok(head) = serde_json::from_str::<Head>(frame) else { continue };
        // Only answers go to the client: MCP clients read none of Neovim's notifications.
        let (Some(id), None) = (head.id, head.method) else { continue };
        let id = id.get().trim();
        if id == INIT_ID {
            continue;
        }
        waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        write_line(&out, frame);
    }
    // Gone first, so that no call is sent on it while the owed answers go out.
    alive.store(false, Ordering::Release);
    let owed: Vec<String> = waiting.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
    for id in owed {
        let why = format!("Neovim (pid {pid}) went away before answering (it quit, or its pi-ide server stopped); nothing was written. Call the tool again to use a Neovim that runs.");
        write_line(&out, &crate::frame::error_result(&id, &why));
    }
    eprintln!("pi-ide-mcp: the connection to Neovim (pid {pid}) ended");
}

fn write_all_line(stream: &mut UnixStream, line: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line);
    buf.push(b'\n');
    stream.write_all(&buf)
}

fn write_line(out: &Mutex<std::io::Stdout>, frame: &str) {
    let out = out.lock().unwrap_or_else(|e| e.into_inner());
    let mut lock = out.lock();
    let _ = lock.write_all(frame.as_bytes()).and_then(|()| lock.write_all(b"\n")).and_then(|()| lock.flush());
}
