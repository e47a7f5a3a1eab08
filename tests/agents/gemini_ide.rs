//! Gemini CLI's IDE mode (src/agents/gemini.rs, companion/) through a plain HTTP client on its loopback port,
//! against a real headless Neovim: the discovery file (private, in the temp folder, gone on
//! quit), the Bearer token and loopback Host and Origin checked on every request, the handshake,
//! the context on the event stream, and openDiff answered at once with the decision told later.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use crate::harness::{self, *};
use pi_ide_testkit::nvim::Options;
use pi_ide_testkit::Nvim;
use serde_json::{json, Value};

/// A temp folder of this test's own (TMPDIR), so the discovery file is found by its name alone.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pi-ide-gemini-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(tmp: &Path) -> Nvim {
    start_with(tmp, "")
}

/// With more of setup()'s options (`more`: `key = value, `).
fn start_with(tmp: &Path, more: &str) -> Nvim {
    Nvim::start_with(Options {
        after: Some(format!("require('pi-ide').setup({{ {more}gemini = true }})")),
        env: vec![("TMPDIR".into(), tmp.to_string_lossy().into())],
        ..Default::default()
    })
}

/// The token in a companion CLI's file (Gemini's discovery file, Qwen Code's lock file) that
/// names `nvim` as the CLIs read it: its ideInfo, and its folder in workspacePath.
pub fn token_of_ours(file: &Value, nvim: &Nvim) -> String {
    assert_eq!(file["ideInfo"]["name"], "neovim");
    assert!(file["ideInfo"]["displayName"].as_str().is_some_and(|n| !n.is_empty()));
    let cwd = nvim.cwd.canonicalize().unwrap();
    let folders = file["workspacePath"].as_str().unwrap();
    assert!(folders.split(':').any(|f| Path::new(f) == cwd), "{folders}");
    file["authToken"].as_str().unwrap().to_owned()
}

fn discovery(tmp: &Path, nvim: &Nvim) -> (PathBuf, Value) {
    let dir = tmp.join("gemini/ide");
    let prefix = format!("gemini-ide-server-{}-", nvim.pid());
    let mut found = None;
    wait_until("the discovery file", PATIENCE, || {
        let entries = std::fs::read_dir(&dir).into_iter().flatten().flatten();
        found = entries.map(|e| e.path()).find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix));
        found.is_some()
    });
    let path = found.unwrap();
    let json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, json)
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: String,
    pub(crate) body: String,
}

/// One request on a connection of its own; `headers` are added as given.
pub(crate) fn request(port: u64, method: &str, headers: &[(&str, String)], body: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
    let mut head = format!("{method} /mcp HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    s.write_all(format!("{head}content-type: application/json\r\n\r\n{body}").as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap();
    let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
    Reply { status, headers: headers.to_lowercase(), body: body.to_owned() }
}

pub(crate) struct Client {
    pub(crate) port: u64,
    pub(crate) token: String,
    pub(crate) session: Option<String>,
}

impl Client {
    pub(crate) fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![("Host", format!("127.0.0.1:{}", self.port)), ("Authorization", format!("Bearer {}", self.token))];
        h.extend(self.session.clone().map(|s| ("mcp-session-id", s)));
        h
    }

    pub(crate) fn post(&self, msg: Value) -> Reply {
        request(self.port, "POST", &self.headers(), &msg.to_string())
    }

    /// Connected with what the discovery file `file` says.
    pub(crate) fn of(file: &Value) -> Client {
        Client::connect(file["port"].as_u64().unwrap(), file["authToken"].as_str().unwrap())
    }

    pub(crate) fn connect(port: u64, token: &str) -> Client {
        let mut c = Client { port, token: token.into(), session: None };
        let r = c.post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "gemini-cli-mcp-client", "version": "0"}}}));
        assert_eq!(r.status, 200, "{}", r.body);
        let line = r.headers.lines().find(|l| l.starts_with("mcp-session-id:")).expect("a session id");
        c.session = Some(line.split_once(':').unwrap().1.trim().to_owned());
        assert_eq!(c.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).status, 202);
        c
    }

    /// The event stream: its messages, one a line.
    pub(crate) fn events(&self) -> std::sync::mpsc::Receiver<Value> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port as u16)).unwrap();
        let mut head = "GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\n".to_string();
        for (k, v) in self.headers() {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        s.write_all(format!("{head}\r\n").as_bytes()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(s).lines().map_while(Result::ok) {
                if let Some(Ok(v)) = line.strip_prefix("data: ").map(serde_json::from_str::<Value>) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        rx
    }

    pub(crate) fn call(&self, id: u64, tool: &str, args: Value) -> Value {
        let r = self.post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
        assert_eq!(r.status, 200, "{}", r.body);
        serde_json::from_str(&r.body).unwrap()
    }
}

/// Waits until `n` reviews are on screen.
/// The CLI's openDiff of `path` with `text`, once the review is on screen; its answer.
pub(crate) fn propose(c: &Client, nvim: &Nvim, id: u64, path: &str, text: &str) -> Value {
    let answer = c.call(id, "openDiff", json!({"filePath": path, "newContent": text}));
    wait_shown(nvim, 1, "the review on screen");
    answer
}

pub(crate) fn wait_shown(nvim: &Nvim, n: u64, what: &str) {
    wait_until(what, PATIENCE, || nvim.t("reviews_shown", json!([])).as_u64() == Some(n));
}

pub(crate) fn next_of(events: &std::sync::mpsc::Receiver<Value>, method: &str) -> Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let v = events.recv_timeout(left).unwrap_or_else(|_| panic!("no {method}"));
        if v["method"] == method {
            return v["params"].clone();
        }
    }
}

/// The next decision on the stream (the context's updates skipped): `{method, params}`.
pub(crate) fn next_diff_event(events: &std::sync::mpsc::Receiver<Value>) -> Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let v = events.recv_timeout(left).expect("no decision");
        if v["method"].as_str().is_some_and(|m| m.starts_with("ide/diff")) {
            return json!({"method": v["method"], "params": v["params"]});
        }
    }
}

#[test]
fn a_decision_made_while_no_stream_is_open_is_sent_when_one_opens() {
    let tmp = temp_dir("held");
    let mut nvim = start(&tmp);
    let (_, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let f = file_with(&nvim, "h.txt", "old\n");
    propose(&c, &nvim, 2, &f, "new\n");
    type_accept(&nvim, ":w<CR>");
    wait_shown(&nvim, 0, "the review decided");
    let events = c.events();
    assert_eq!(next_diff_event(&events), json!({"method": "ide/diffAccepted", "params": {"filePath": f, "content": "new\n"}}));
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The CLI's closeDiff while Neovim's main loop is held (a prompt): answered anyway, with null
/// (nothing was decided: the CLI's own proposal), and the review goes once Neovim runs again.
#[test]
fn a_close_while_neovim_is_held_is_answered_and_the_review_goes_after() {
    let tmp = temp_dir("close-held");
    let mut nvim = start(&tmp);
    let (_, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let f = file_with(&nvim, "c.txt", "old\n");
    propose(&c, &nvim, 2, &f, "new\n");
    let held = hold_main_loop(&nvim);
    let closed = c.call(3, "closeDiff", json!({"filePath": f, "suppressNotification": true}));
    assert!(held.still_held(), "the answer waited for Neovim");
    assert_eq!(closed["result"]["content"][0]["text"], r#"{"content":null}"#);
    held.release();
    wait_shown(&nvim, 0, "the review gone");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "old\n");
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// What the user left in a review (a hunk declined, a line edited in Normal mode) is known to
/// the core as they change it: the CLI's closeDiff while Neovim is busy (a long `:!command`)
/// gets it at once, not null (which would write the whole proposal, the declined hunk too).
#[test]
fn a_close_while_neovim_is_busy_gives_the_hunks_declined_and_the_edits_made_before() {
    let tmp = temp_dir("close-busy");
    let mut nvim = start(&tmp);
    let (_, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let pane = || nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)");
    let close_while_busy = |id: u64, path: &str| {
        let held = hold_main_loop(&nvim);
        let closed = c.call(id, "closeDiff", json!({"filePath": path, "suppressNotification": true}));
        assert!(held.still_held(), "answered while Neovim was busy");
        held.release();
        wait_shown(&nvim, 0, "the review gone");
        closed["result"]["content"][0]["text"].clone()
    };

    let h = file_with(&nvim, "h.txt", "one\ntwo\n");
    propose(&c, &nvim, 2, &h, "four\ntwo\nsix\n");
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    wait_until("the hunk declined", PATIENCE, || pane() == json!(["four", "two"]));
    assert_eq!(close_while_busy(3, &h), r#"{"content":"four\ntwo\n"}"#);

    let e = file_with(&nvim, "e.txt", "one\n");
    propose(&c, &nvim, 4, &e, "ONE\nTWO\n");
    type_keys(&nvim, "ggAmine<Esc>");
    wait_until("the edit made", PATIENCE, || pane() == json!(["ONEmine", "TWO"]));
    assert_eq!(close_while_busy(5, &e), r#"{"content":"ONEmine\nTWO\n"}"#);

    // Still typing (Insert mode): only Lua knows the text, and reads it.
    let t = file_with(&nvim, "t.txt", "one\n");
    propose(&c, &nvim, 6, &t, "ONE\n");
    type_keys(&nvim, "ggAtyped");
    wait_until("the typing shown", PATIENCE, || pane() == json!(["ONEtyped"]));
    let closed = c.call(7, "closeDiff", json!({"filePath": t, "suppressNotification": true}));
    assert_eq!(closed["result"]["content"][0]["text"], r#"{"content":"ONEtyped\n"}"#);
    type_keys(&nvim, "<Esc>");
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A closeDiff of a file with no review (already decided, or never opened) is answered as VS
/// Code's companion answers it: content null, not an error.
#[test]
fn a_close_of_no_review_is_answered_content_null() {
    let tmp = temp_dir("close-none");
    let mut nvim = start(&tmp);
    let (_, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let f = file_with(&nvim, "n.txt", "old\n");
    let closed = c.call(2, "closeDiff", json!({"filePath": f, "suppressNotification": true}));
    assert_eq!(closed["result"]["content"][0]["text"], r#"{"content":null}"#, "{closed}");
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// An openDiff over max_message_size is rejected as any: ide/diffRejected on the stream (the
/// CLI waits there, never reading the POST's result), the POST answered empty.
#[test]
fn an_oversized_open_diff_is_rejected_on_the_event_stream() {
    let tmp = temp_dir("oversized");
    let mut nvim = start_with(&tmp, "max_message_size = 1048576, ");
    let (_, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let events = c.events();
    let f = file_with(&nvim, "big.txt", "old\n");
    let big = "x".repeat(2 << 20);
    let now = c.call(2, "openDiff", json!({"filePath": f, "newContent": big}));
    assert_eq!(now["result"], json!({"content": []}), "{now}");
    assert_eq!(next_diff_event(&events), json!({"method": "ide/diffRejected", "params": {"filePath": f}}));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "old\n");
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// One request on the kept-alive connection `s`: the status of its answer (0: the connection
/// was closed), with the answer read whole so the connection can go on.
fn on_kept_alive(s: &mut TcpStream, head: &str, body: &str) -> u16 {
    let sent = s.write_all(format!("POST /mcp HTTP/1.1\r\n{head}Content-Length: {}\r\ncontent-type: application/json\r\n\r\n{body}", body.len()).as_bytes());
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut status = String::new();
    if sent.is_err() || r.read_line(&mut status).unwrap_or(0) == 0 {
        return 0;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    r.read_exact(&mut vec![0; length]).unwrap();
    status.split(' ').nth(1).unwrap().parse().unwrap()
}

/// The CLI keeps its connection alive between calls; a stranger opening more connections than
/// the cap, each refused (no token), pushes out only its own: the CLI's goes on.
#[test]
fn strangers_connections_never_push_out_the_clis_kept_alive_one() {
    let tmp = temp_dir("kept-alive");
    let mut nvim = start(&tmp);
    let (_, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let host = format!("Host: 127.0.0.1:{}\r\n", c.port);
    let cli = format!("{host}Authorization: Bearer {}\r\nmcp-session-id: {}\r\n", c.token, c.session.clone().unwrap());
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}).to_string();
    let mut kept = TcpStream::connect(("127.0.0.1", c.port as u16)).unwrap();
    assert_eq!(on_kept_alive(&mut kept, &cli, &ping), 200);
    // Beyond the cap (twice the clients: 128), each answered 401 and kept open.
    let strangers: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", c.port as u16)).unwrap();
            assert_eq!(on_kept_alive(&mut s, &host, &ping), 401);
            s
        })
        .collect();
    assert_eq!(on_kept_alive(&mut kept, &cli, &ping), 200, "the CLI's connection was pushed out");
    drop(strangers);
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn the_discovery_file_is_private_and_only_the_bearer_from_loopback_gets_in() {
    let tmp = temp_dir("auth");
    let mut nvim = start(&tmp);
    let (path, file) = discovery(&tmp, &nvim);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let port = file["port"].as_u64().unwrap();
    assert!(path.to_string_lossy().ends_with(&format!("-{port}.json")));
    let token = token_of_ours(&file, &nvim);
    assert_ne!(port, nvim.lockfile().port as u64, "a port of its own");

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
    let host = ("Host", format!("127.0.0.1:{port}"));
    let bearer = ("Authorization", format!("Bearer {token}"));
    assert_eq!(request(port, "POST", &[host.clone()], &init).status, 401, "no token");
    assert_eq!(request(port, "POST", &[host.clone(), ("Authorization", "Bearer nope".into())], &init).status, 401);
    assert_eq!(request(port, "POST", &[host.clone(), ("Authorization", format!("Nonce {token}"))], &init).status, 401);
    let evil_host = ("Host", format!("evil.example:{port}"));
    assert_eq!(request(port, "POST", &[evil_host, bearer.clone()], &init).status, 403, "a rebinding page's Host");
    let evil_origin = ("Origin", "http://evil.example".to_string());
    assert_eq!(request(port, "POST", &[host.clone(), bearer.clone(), evil_origin], &init).status, 403);
    let loopback_origin = ("Origin", format!("http://localhost:{port}"));
    assert_eq!(request(port, "POST", &[host, bearer, loopback_origin], &init).status, 200);

    let c = Client::connect(port, &token);
    let tools = c.post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<String> = serde_json::from_str::<Value>(&tools.body).unwrap()["result"]["tools"]
        .as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["openDiff", "closeDiff"]);

    assert!(nvim.quit(PATIENCE));
    assert!(!path.exists(), "the discovery file is removed on quit");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn context_on_the_stream_and_open_diff_answered_at_once_its_decision_told_later() {
    let tmp = temp_dir("diff");
    let mut nvim = start(&tmp);
    let (path, file) = discovery(&tmp, &nvim);
    let c = Client::of(&file);
    let events = c.events();
    let f = edit_file(&nvim, "g.txt", &["one", "two"]);
    let ctx = next_of(&events, "ide/contextUpdate");
    let active = &ctx["workspaceState"]["openFiles"][0];
    assert_eq!(active["path"], f.as_str());
    assert_eq!(active["isActive"], true);
    assert_eq!(active["cursor"]["line"], 1, "1-based: {ctx}");

    // Accepted with the user's edit: the decision carries the text the user kept.
    let now = propose(&c, &nvim, 3, &f, "one\nTWO\n");
    assert_eq!(now["result"], json!({"content": []}), "answered at once");
    type_keys(&nvim, "ggAmine<Esc>");
    type_accept(&nvim, ":w<CR>");
    let accepted = next_of(&events, "ide/diffAccepted");
    assert_eq!(accepted, json!({"filePath": f, "content": "onemine\nTWO\n"}));

    // Rejected with :q.
    propose(&c, &nvim, 4, &f, "three\n");
    type_keys(&nvim, ":q<CR>");
    assert_eq!(next_of(&events, "ide/diffRejected"), json!({"filePath": f}));

    // Answered in the terminal: closeDiff takes the review away and gives the text the user
    // left in it (a hunk declined there stays declined: the CLI writes that); with
    // suppressNotification no rejection follows (it would race the CLI's own answer).
    // The CLI then writes it, and the user's buffer of the file shows it.
    let h = edit_file(&nvim, "h.txt", &["one", "two"]);
    propose(&c, &nvim, 5, &h, "four\ntwo\nsix\n");
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    let closed = c.call(6, "closeDiff", json!({"filePath": h, "suppressNotification": true}));
    assert_eq!(closed["result"]["content"][0]["text"], r#"{"content":"four\ntwo\n"}"#);
    std::fs::write(&h, "four\ntwo\n").unwrap();
    let shown = || nvim.lua_with("return vim.fn.getbufline(vim.fn.bufnr(...), 1, '$')", vec![h.clone().into()]);
    wait_until("the user's buffer to show what the CLI wrote", PATIENCE, || shown() == json!(["four", "two"]));
    wait_shown(&nvim, 0, "the review gone");
    let other = file_with(&nvim, "other.txt", "x\n");
    propose(&c, &nvim, 7, &other, "y\n");
    type_keys(&nvim, ":q<CR>");
    assert_eq!(next_diff_event(&events), json!({"method": "ide/diffRejected", "params": {"filePath": other}}));

    // Without suppressNotification the close is a rejection the CLI hears.
    propose(&c, &nvim, 8, &f, "five\n");
    c.call(9, "closeDiff", json!({"filePath": f}));
    assert_eq!(next_diff_event(&events), json!({"method": "ide/diffRejected", "params": {"filePath": f}}));

    assert!(nvim.quit(PATIENCE));
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn another_users_folder_in_the_way_is_refused_and_said_once() {
    // The temp folder is shared: where the CLI's folder goes, another user's may already be.
    // SAFETY: geteuid has no preconditions.
    let tmp = if unsafe { libc::geteuid() } == 0 {
        let tmp = temp_dir("theirs");
        std::fs::create_dir(tmp.join("gemini")).unwrap();
        std::os::unix::fs::chown(tmp.join("gemini"), Some(65534), Some(65534)).unwrap();
        tmp
    } else {
        PathBuf::from("/usr/share")
    };
    let mut nvim = Nvim::start_with(Options {
        before: Some("require('pi_ide_test').record_notify()".into()),
        after: Some("require('pi-ide').setup({ gemini = true })".into()),
        env: vec![("TMPDIR".into(), tmp.to_string_lossy().into())],
        ..Default::default()
    });
    nvim.wait_t("has_note", json!(["not serving Gemini CLI"]), PATIENCE);
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(true), "the rest is served");
    assert!(!tmp.join("gemini/ide").exists(), "nothing written there");
    assert!(harness::health(&nvim).contains("Gemini CLI"));
    assert!(nvim.quit(PATIENCE));
    if tmp.starts_with(std::env::temp_dir()) {
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
