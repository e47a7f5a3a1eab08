//! The Copilot CLI's bridge (src/agents/copilot/) through a real HTTP client on the Unix socket (hyper's,
//! in testkit/src/copilot.rs), against a real headless Neovim: discovery, auth, the handshake,
//! the event stream, each tool's shape, reviews answered on every path, several sessions, and
//! Pi, Claude Code and Copilot connected at once.


use crate::harness::{self, *};
use pi_ide_testkit::copilot::{locks, CopilotClient, CopilotLock, Reply};
use pi_ide_testkit::nvim::Options;
use pi_ide_testkit::{Nvim, Peer};
use serde_json::{json, Value};

fn start() -> Nvim {
    Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ copilot = true })".into()),
        ..Default::default()
    })
}

fn lock(nvim: &Nvim) -> CopilotLock {
    let mut found = vec![];
    wait_until("the Copilot lockfile", PATIENCE, || {
        found = locks(&nvim.home);
        found.len() == 1
    });
    found.remove(0)
}

fn client(nvim: &Nvim, session: &str) -> CopilotClient {
    let mut c = CopilotClient::new(&lock(nvim), session);
    c.initialize();
    c
}

fn open_diff_args(path: &str, contents: &str, tab: &str) -> Value {
    json!({"original_file_path": path, "new_file_contents": contents, "tab_name": tab})
}

/// Sends open_diff and waits until `shown` reviews are on screen; the answer comes later.
fn open_review(
    nvim: &Nvim,
    c: &mut CopilotClient,
    path: &str,
    contents: &str,
    tab: &str,
    shown: u64,
) -> std::sync::mpsc::Receiver<Result<Reply, String>> {
    let rx = c.call_async("open_diff", open_diff_args(path, contents, tab));
    wait_until("the review on screen", PATIENCE, || {
        nvim.t("reviews_shown", json!([])).as_u64() == Some(shown)
    });
    rx
}

fn answer(rx: std::sync::mpsc::Receiver<Result<Reply, String>>) -> Value {
    let reply = rx.recv_timeout(PATIENCE).expect("an answer").expect("a reply");
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.tool_json()
}

#[test]
fn the_lockfile_names_a_private_socket_and_only_the_nonce_gets_in() {
    let nvim = start();
    let l = lock(&nvim);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&l.path), 0o600);
    assert_eq!(l.json["scheme"], "unix");
    assert_eq!(l.json["pid"], nvim.pid());
    assert!(l.json.get("isTrusted").is_none(), "never trusted unless the user says so");
    let cwd = nvim.cwd.canonicalize().unwrap();
    let folders: Vec<String> = serde_json::from_value(l.json["workspaceFolders"].clone()).unwrap();
    assert!(folders.iter().any(|f| std::path::Path::new(f) == cwd), "{folders:?} lists {}", cwd.display());
    assert_eq!(l.json["ideName"], nvim.lockfile().ide_name);
    let socket = l.socket();
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(socket.parent().unwrap()), 0o700);

    let c = CopilotClient::new(&l, "s");
    let body = Some(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#.to_string());
    for auth in ["", "Nonce wrong", "Bearer x"] {
        let r = c.send("POST", body.clone(), &[("authorization", auth.to_string())]).unwrap();
        assert_eq!(r.status, 401, "{auth:?}: {r:?}");
    }
    assert!(nvim.lua("return require('pi-ide').info().clients").as_array().unwrap().is_empty());
}

#[test]
fn the_handshake_lists_copilots_tools_and_answers_in_its_shapes() {
    let nvim = start();
    let mut c = CopilotClient::new(&lock(&nvim), "hs");
    // The CLI asks server/discover first and falls back on -32601.
    let d = c.request("server/discover", json!({}));
    assert_eq!(error_code(&d.json()), -32601);
    let init = c.request("initialize", json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "copilot-cli", "version": "1.0.102"}}));
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(c.notify("notifications/initialized").status, 202);
    let list = c.request("tools/list", json!({}));
    let names: Vec<String> = list.json()["result"]["tools"].as_array().unwrap().iter()
        .map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["get_selection", "get_diagnostics", "open_diff", "close_diff", "update_session_name"]);
    // pi-ide's tools are not Copilot's.
    assert_eq!(error_code(&c.call("openDiff", json!({})).json()), -32601);
    // A bad argument names itself.
    let bad = c.call("get_diagnostics", json!({"uri": 5})).json();
    assert_eq!(error_code(&bad), -32602);

    // get_selection: null with no file, then the cursor's file.
    assert_eq!(c.call("get_selection", json!({})).tool_json(), Value::Null);
    let path = edit_file(&nvim, "sel.rs", &["fn main() {}", "// two"]);
    nvim.lua("vim.api.nvim_win_set_cursor(0, {2, 3})");
    let sel = c.call("get_selection", json!({})).tool_json();
    assert_eq!(sel["filePath"], path.as_str());
    assert_eq!(sel["current"], true);
    assert_eq!(sel["selection"]["start"], json!({"line": 1, "character": 3}));
    assert_eq!(sel["selection"]["isEmpty"], true);

    // get_diagnostics: a list of files with a path and severities in words.
    nvim.lua("local ns = vim.api.nvim_create_namespace('t'); vim.diagnostic.set(ns, 0, {{lnum = 0, col = 3, message = 'unused', severity = vim.diagnostic.severity.WARN, source = 'rustc'}})");
    let diags = c.call("get_diagnostics", json!({})).tool_json();
    assert_eq!(diags[0]["filePath"], path.as_str());
    assert!(diags[0]["uri"].as_str().unwrap().starts_with("file:///"));
    assert_eq!(diags[0]["diagnostics"][0]["severity"], "Warning");
    assert_eq!(diags[0]["diagnostics"][0]["message"], "unused");
    let one = c.call("get_diagnostics", json!({"uri": diags[0]["uri"].clone()})).tool_json();
    assert_eq!(one.as_array().unwrap().len(), 1);

    // The CLI lists the tools on a second connection while it initializes: that may come first.
    let early = CopilotClient::new(&lock(&nvim), "not-yet").send("POST", Some(json!({"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":{"progressToken":0}}}).to_string()), &[]).unwrap();
    assert_eq!(early.json()["result"]["tools"].as_array().map(Vec::len), Some(5), "{early:?}");
    // A tool call outside any session needs one first.
    let other = CopilotClient::new(&lock(&nvim), "never-initialized");
    let r = other.send("POST", Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_selection"}}).to_string()), &[]).unwrap();
    assert_eq!(r.status, 404, "{r:?}");
}

#[test]
fn the_selection_and_send_reach_the_event_stream() {
    let nvim = start();
    let c = client(&nvim, "ev");
    let events = c.events();
    let path = edit_file(&nvim, "a.txt", &["one", "two", "three"]);
    nvim.lua("vim.api.nvim_win_set_cursor(0, {3, 1})");
    let sel = next_event(&events, "selection_changed", |e| e["params"]["selection"]["start"]["line"] == 2);
    assert_eq!(sel["params"]["filePath"], path.as_str());
    assert_eq!(sel["params"]["current"], true);
    // :PiIde send with a range: the CLI inserts @path:L1-L2.
    nvim.command("1,2PiIde send").unwrap();
    let m = next_event(&events, "add_selection", |_| true);
    assert_eq!(m["params"]["filePath"], path.as_str());
    assert_eq!(m["params"]["selection"]["start"]["line"], 0);
    assert_eq!(m["params"]["selection"]["end"]["line"], 1);
    nvim.command(&format!("PiIde add {}", nvim.cwd.display())).unwrap();
    let f = next_event(&events, "add_file_reference", |_| true);
    assert!(f["params"]["filePath"].as_str().unwrap().ends_with('/'));
    assert!(f["params"]["selection"].is_null());
}

fn next_event(events: &std::sync::mpsc::Receiver<Value>, method: &str, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let e = events.recv_timeout(left).unwrap_or_else(|_| panic!("no {method} event"));
        if e["method"] == method && want(&e) {
            return e;
        }
    }
}

#[test]
fn open_diff_is_an_editable_review_answered_saved_or_rejected() {
    let nvim = start();
    let mut c = client(&nvim, "rev");
    let path = file_with(&nvim, "hello.txt", "hello\n");
    nvim.command("set columns=200").unwrap();
    let rx = open_review(&nvim, &mut c, &path, "hello world\n", "[Copilot CLI] - hello.txt (a1)", 1);
    // The CLI writes its own proposal; what the user accepts is then set over it.
    assert_eq!(nvim.lua("return {vim.bo.buftype, vim.bo.modifiable}"), json!(["acwrite", true]));
    assert!(nvim.lua("return vim.wo.winbar").as_str().unwrap().contains("Copilot writes its proposal, then your text over it"));
    // A pane of an 80-column terminal: the short form, and the accept hint still fits.
    nvim.command("vertical resize 39").unwrap();
    nvim.wait_for("vim.wo.winbar:find('Copilot writes', 1, true) == nil", PATIENCE);
    let bar = nvim.lua("return vim.wo.winbar").as_str().unwrap().to_owned();
    assert!(bar.contains("agent+you") && bar.contains(":w accept"), "{bar}");
    assert_eq!(nvim.lua("return vim.fn.strdisplaywidth(vim.wo.winbar) <= vim.api.nvim_win_get_width(0)"), json!(true), "{bar}");
    type_accept(&nvim, ":w<CR>");
    let a = answer(rx);
    assert_eq!(a["success"], true);
    assert_eq!(a["result"], "SAVED");
    assert_eq!(a["tab_name"], "[Copilot CLI] - hello.txt (a1)");
    assert_eq!((a["trigger"].as_str(), a["message"].as_str()), (Some("accepted_in_editor"), Some("The user accepted the change in Neovim")));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n", "the editor does not write it");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 1", PATIENCE);

    // :q in the proposal rejects.
    let rx = open_review(&nvim, &mut c, &path, "bye\n", "[Copilot CLI] - hello.txt (b2)", 1);
    type_keys(&nvim, ":q<CR>");
    let a = answer(rx);
    assert_eq!((a["result"].as_str(), a["tab_name"].as_str()), (Some("REJECTED"), Some("[Copilot CLI] - hello.txt (b2)")));
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
}

// Seven lines; the proposal changes lines 1, 4 and 7: three one-line hunks.
const SEVEN: &str = "a\nb\nc\nd\ne\nf\ng\n";
const PROPOSAL: &str = "A\nb\nc\nD\ne\nf\nG\n";
const HUNKS_1_AND_3: &str = "A\nb\nc\nd\ne\nf\nG\n";

/// A review of SEVEN → PROPOSAL with its middle hunk rejected and `:w` typed: the answer.
fn accept_all_but_the_middle_hunk(nvim: &Nvim, c: &mut CopilotClient, path: &str, tab: &str) -> Value {
    let rx = open_review(nvim, c, path, PROPOSAL, tab, 1);
    nvim.wait_for("(require('pi-ide.features.review').current() or {}).hunks ~= nil", PATIENCE);
    type_keys(nvim, "4G:PiIde hunk reject<CR>");
    type_accept(nvim, ":w<CR>");
    let a = answer(rx);
    assert_eq!((a["result"].as_str(), a["trigger"].as_str()), (Some("SAVED"), Some("accepted_in_editor")), "{a}");
    a
}

fn notes_with(nvim: &Nvim, text: &str) -> String {
    let mut found = String::new();
    wait_until(text, PATIENCE, || {
        found = nvim.notes().into_iter().find(|n| n.contains(text)).unwrap_or_default();
        !found.is_empty()
    });
    found
}

#[test]
fn a_partial_acceptance_is_set_over_the_clis_own_write_and_its_message_names_the_declined_hunk() {
    let nvim = start();
    nvim.record_notify();
    let mut c = client(&nvim, "part");
    let path = file_with(&nvim, "p.txt", SEVEN);
    let a = accept_all_but_the_middle_hunk(&nvim, &mut c, &path, "tab-p");
    let message = a["message"].as_str().unwrap();
    assert!(message.contains("only part") && message.contains("hunk 2 of 3 (your line 4) was declined"), "{message}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SEVEN, "nothing is written before the CLI's own write");
    // The CLI writes its own proposal, in place, as it does after SAVED.
    std::fs::write(&path, PROPOSAL).unwrap();
    wait_until("the accepted text over the CLI's write", PATIENCE, || std::fs::read_to_string(&path).unwrap() == HUNKS_1_AND_3);
    let said = notes_with(&nvim, "written over it");
    assert!(said.contains("Its model is not told"), "{said}");
    let dir = std::path::Path::new(&path).parent().unwrap();
    assert!(std::fs::read_dir(dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains(".pi-ide-")), "no temporary file left");
}

#[test]
fn other_text_or_a_link_is_never_overwritten_and_a_full_rejection_is_a_rejection() {
    let nvim = start();
    nvim.record_notify();
    let mut c = client(&nvim, "other");
    // The CLI writes something else: left as it is, and said.
    let path = file_with(&nvim, "o.txt", SEVEN);
    accept_all_but_the_middle_hunk(&nvim, &mut c, &path, "tab-o");
    std::fs::write(&path, "theirs\n").unwrap();
    notes_with(&nvim, "was not set to the text you accepted: it holds other text");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs\n");
    // A link to a file holding the proposal swapped in: refused, and what it leads to untouched.
    let path = file_with(&nvim, "l.txt", SEVEN);
    accept_all_but_the_middle_hunk(&nvim, &mut c, &path, "tab-l");
    let elsewhere = std::path::Path::new(&path).with_file_name("elsewhere.txt");
    std::fs::write(&elsewhere, PROPOSAL).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    notes_with(&nvim, "replaced by a link");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), PROPOSAL);
    assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
    // Every hunk rejected: answered as a rejection, as before.
    let path = file_with(&nvim, "r.txt", SEVEN);
    let rx = open_review(&nvim, &mut c, &path, PROPOSAL, "tab-r", 1);
    nvim.wait_for("(require('pi-ide.features.review').current() or {}).hunks ~= nil", PATIENCE);
    type_accept(&nvim, "1G:PiIde hunk reject<CR>4G:PiIde hunk reject<CR>7G:PiIde hunk reject<CR>:w<CR>");
    assert_eq!(answer(rx)["result"], "REJECTED");
}

#[test]
fn a_cli_that_never_writes_or_an_editor_that_stops_meanwhile_gets_nothing_written() {
    let nvim = start();
    nvim.record_notify();
    let mut c = client(&nvim, "never");
    let path = file_with(&nvim, "n.txt", SEVEN);
    accept_all_but_the_middle_hunk(&nvim, &mut c, &path, "tab-n");
    // The bound is 10 s: the watch ends, nothing written.
    notes_with(&nvim, "did not write its proposal to");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SEVEN);
    // The editor stops while it watches: it stops watching, and the CLI's later write stays.
    let path = file_with(&nvim, "s.txt", SEVEN);
    accept_all_but_the_middle_hunk(&nvim, &mut c, &path, "tab-s");
    nvim.command("PiIde stop").unwrap();
    let log = nvim.home.join("state/nvim/pi-ide.log");
    wait_until("the watch to end", PATIENCE, || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("s.txt: the editor stopped before the agent wrote its proposal"))
    });
    std::fs::write(&path, PROPOSAL).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), PROPOSAL);
    let dir = std::path::Path::new(&path).parent().unwrap();
    assert!(std::fs::read_dir(dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains(".pi-ide-")), "no temporary file left");
}

#[test]
fn close_diff_from_the_terminal_rejects_the_open_review_and_reports() {
    let nvim = start();
    let mut c = client(&nvim, "close");
    let path = file_with(&nvim, "c.txt", "c\n");
    let rx = open_review(&nvim, &mut c, &path, "d\n", "tab-c", 1);
    let closed = c.call("close_diff", json!({"tab_name": "tab-c"})).tool_json();
    assert_eq!(closed, json!({"success": true, "already_closed": false, "tab_name": "tab-c", "message": closed["message"]}));
    let a = answer(rx);
    assert_eq!((a["result"].as_str(), a["trigger"].as_str()), (Some("REJECTED"), Some("closed_via_tool")));
    nvim.wait_for("#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 1", PATIENCE);
    let again = c.call("close_diff", json!({"tab_name": "tab-c"})).tool_json();
    assert_eq!(again["already_closed"], true);
}

#[test]
fn every_other_ending_answers_rejected_first() {
    let nvim = start();
    let path = file_with(&nvim, "e.txt", "e\n");
    // The session ends (DELETE) with a review open.
    let mut c = client(&nvim, "del");
    let rx = open_review(&nvim, &mut c, &path, "x\n", "t-del", 1);
    assert_eq!(c.delete().status, 200);
    assert_eq!(answer(rx)["result"], "REJECTED");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // Re-initialize with the same id after DELETE, as the CLI does at startup.
    let mut again = CopilotClient::new(&lock(&nvim), "del");
    again.initialize();
    // The CLI hangs up while waiting: the review goes away.
    let rx = open_review(&nvim, &mut again, &path, "y\n", "t-drop", 1);
    drop(again);
    drop(rx);
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // The editor stops.
    let mut c = client(&nvim, "stop");
    let rx = open_review(&nvim, &mut c, &path, "z\n", "t-stop", 1);
    nvim.command("PiIde stop").unwrap();
    assert_eq!(answer(rx)["result"], "REJECTED");
    assert!(locks(&nvim.home).is_empty(), "the lockfile goes with the server");
    assert!(!lock_socket_exists(&c), "and the socket");
}

fn lock_socket_exists(c: &CopilotClient) -> bool {
    c.send("POST", Some("{}".into()), &[]).is_ok()
}

#[test]
fn an_oversized_open_diff_is_rejected_not_dropped() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ copilot = true, max_message_size = 4096 })".into()),
        ..Default::default()
    });
    let mut c = client(&nvim, "big");
    nvim.t("record_notify", json!([]));
    let path = file_with(&nvim, "big.txt", "b\n");
    let big = "x".repeat(100_000);
    let a = c.call("open_diff", open_diff_args(&path, &big, "t-big")).tool_json();
    assert_eq!((a["result"].as_str(), a["tab_name"].as_str()), (Some("REJECTED"), Some("t-big")));
    wait_until("a message naming the limit", PATIENCE, || {
        nvim.t("has_note", json!(["max_message_size"])) == json!(true)
    });
    // The session goes on.
    assert_eq!(c.call("get_selection", json!({})).status, 200);
}

#[test]
fn sessions_keep_their_reviews_and_names_apart() {
    let nvim = start();
    let mut a = client(&nvim, "session-a");
    let mut b = client(&nvim, "session-b");
    assert_eq!(a.call("update_session_name", json!({"name": "Fix the login"})).tool_json(), json!({"success": true}));
    b.call("update_session_name", json!({"name": "Write docs"}));
    let path = file_with(&nvim, "s.txt", "s\n");
    // Room for who asks beside the file's name (an 80-column pane has none: it is left out).
    nvim.command("set columns=200").unwrap();
    let ra = open_review(&nvim, &mut a, &path, "a\n", "same-tab", 1);
    let rb = open_review(&nvim, &mut b, &path, "b\n", "same-tab", 2);
    // b's close_diff touches b's review only.
    assert_eq!(b.call("close_diff", json!({"tab_name": "same-tab"})).tool_json()["already_closed"], false);
    assert_eq!(answer(rb)["trigger"], "closed_via_tool");
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    // Which agent and session asks, on the review and in the status.
    nvim.wait_for("vim.wo[vim.fn.win_getid(vim.fn.winnr('h'))].winbar:find('Fix the login', 1, true) ~= nil", PATIENCE);
    let status = nvim.lua("return require('pi-ide').status()").as_str().unwrap().to_owned();
    assert!(status.contains("“Fix the login”") && status.contains("“Write docs”"), "{status}");
    let lines = nvim.lua("return table.concat(require('pi-ide.core.status').lines(), '\\n')");
    assert!(lines.as_str().unwrap().contains("session \"Fix the login\""), "{lines}");
    type_accept(&nvim, ":w<CR>");
    assert_eq!(answer(ra)["result"], "SAVED");
}

#[test]
fn pi_claude_and_copilot_at_once_each_with_a_review() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ copilot = true, claude_code = true })".into()),
        ..Default::default()
    });
    let mut pi = nvim.peer();
    let l = nvim.lockfile();
    let mut claude = Peer::connect_with_headers(l.port, &[("x-claude-code-ide-authorization", &l.auth_token)]).unwrap();
    claude.initialize().unwrap();
    let mut copilot = client(&nvim, "trio");
    let (p1, p2, p3) = (file_with(&nvim, "p.txt", "p\n"), file_with(&nvim, "q.txt", "q\n"), file_with(&nvim, "r.txt", "r\n"));
    harness::open_review(&nvim, &mut pi, "pi", &p1, "pi\n", "pi-tab", 1);
    harness::open_review(&nvim, &mut claude, "cl", &p2, "claude\n", "claude-tab", 2);
    let rx = open_review(&nvim, &mut copilot, &p3, "copilot\n", "copilot-tab", 3);
    // Each gets the selection, in its words.
    let events = copilot.events();
    nvim.command("tabnew").unwrap();
    let path = edit_file(&nvim, "shared.txt", &["x"]);
    let seen = |v: &Value| v["params"]["filePath"] == path.as_str();
    wait_until("Pi's selection", PATIENCE, || pi.wait_notification("selection_changed", PATIENCE).is_ok_and(|v| seen(&v)));
    wait_until("Claude's selection", PATIENCE, || claude.wait_notification("selection_changed", PATIENCE).is_ok_and(|v| seen(&v)));
    assert_eq!(next_event(&events, "selection_changed", seen)["params"]["current"], true);
    nvim.command("tabclose").unwrap();
    // Everyone's diagnostics, in each one's shape.
    let d = pi.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(pi_ide_testkit::peer::texts(&d)[0].starts_with('{'));
    let d = claude.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(pi_ide_testkit::peer::texts(&d)[0].starts_with('['));
    assert!(copilot.call("get_diagnostics", json!({})).tool_json().is_array());
    // Deciding one leaves the others open.
    nvim.command("PiIde reject").unwrap();
    nvim.wait_for("#require('pi-ide.features.review').list() == 2", PATIENCE);
    let open: Vec<String> = serde_json::from_value(nvim.lua("return vim.tbl_map(function(r) return r.tab_name end, require('pi-ide.features.review').list())")).unwrap();
    assert_eq!(open.len(), 2, "{open:?}");
    nvim.wait_for("#require('pi-ide.features.review').list() == 2", PATIENCE);
    nvim.command("PiIde stop").unwrap();
    assert_eq!(answer(rx)["result"], "REJECTED");
    let frames = read_until_close(&mut pi).0;
    assert!(answer_in(&frames, "pi").is_some_and(|t| t[0] == "DIFF_REJECTED" || t[0] == "FILE_SAVED"));
}

#[test]
fn off_by_default_nothing_of_it_runs() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({})".into()),
        ..Default::default()
    });
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    assert!(locks(&nvim.home).is_empty());
    assert_eq!(nvim.lua("return require('pi-ide').info().copilot_socket"), Value::Null);
    assert!(nvim.lua("return table.concat(require('pi-ide.core.status').lines(), '\\n')")
        .as_str().unwrap().contains("copilot: off"));
    // A bad option is named and the rest applies.
    nvim.t("record_notify", json!([]));
    nvim.lua("require('pi-ide').setup({ copilot = { trust = true } })");
    assert_eq!(nvim.t("has_note", json!(["trust_workspace"])), json!(true));
}

#[test]
fn trust_is_written_only_when_the_user_says_so() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ copilot = { trust_workspace = true } })".into()),
        ..Default::default()
    });
    assert_eq!(lock(&nvim).json["isTrusted"], true);
}

#[test]
fn a_flood_of_idle_sockets_never_locks_the_cli_out() {
    let nvim = start();
    let l = lock(&nvim);
    // Silent sockets, and some that stop in the middle of their headers.
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut s = std::os::unix::net::UnixStream::connect(l.socket()).unwrap();
        if i % 2 == 0 {
            use std::io::Write;
            let _ = s.write_all(b"POST /mcp HTTP/1.1\r\nhost: x\r\n");
        }
        idle.push(s);
    }
    let mut c = client(&nvim, "after-flood");
    assert_eq!(c.call("get_selection", json!({})).status, 200);
    // Neovim holds at most the cap, not one socket per idle connection.
    let fds = std::fs::read_dir(format!("/proc/{}/fd", nvim.pid())).unwrap().count();
    assert!(fds < 200, "{fds} descriptors open");
    responsive(&nvim, PATIENCE);
}

#[test]
fn a_cli_that_goes_away_is_seen_gone_in_seconds() {
    // The CLI holds its event stream while it runs: once the stream closes and nothing comes
    // back, the session ends (a quiet session without a stream waits 30 s).
    let nvim = start();
    edit_file(&nvim, "here.txt", &["x"]);
    let c = client(&nvim, "leaving");
    let events = c.events();
    let listed = || nvim.lua("return #require('pi-ide').info().clients").as_u64() == Some(1);
    wait_until("the session listed", PATIENCE, listed);
    // The stream is open once the selection arrives on it.
    next_event(&events, "selection_changed", |_| true);
    drop(events);
    drop(c);
    let t = std::time::Instant::now();
    wait_until("the session gone", PATIENCE, || nvim.lua("return #require('pi-ide').info().clients").as_u64() == Some(0));
    assert!(t.elapsed() < std::time::Duration::from_secs(15), "took {:?}", t.elapsed());
}

/// What the real CLI was seen sending when its connection was renewed during an edit: the
/// first open_diff, its close_diff at once (while the core still stages the proposal, here
/// made slow), and a new open_diff of the same file. The first is rejected and never shows;
/// the new one shows and is answered.
#[test]
fn a_review_closed_while_it_was_staged_never_shows_and_the_next_does() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ copilot = true })".into()),
        env: vec![("PI_IDE_FAILPOINTS".into(), "slow-stage-ms=5000".into())],
        ..Default::default()
    });
    let mut c = client(&nvim, "renewed");
    let path = file_with(&nvim, "r.txt", "one\n");
    let first = c.call_async("open_diff", open_diff_args(&path, "two\n", "tab-1"));
    let log = nvim.home.join("state/nvim/pi-ide.log");
    wait_until("the staging to begin", PATIENCE, || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("fail point: staging slowed"))
    });
    let closed = c.call("close_diff", json!({"tab_name": "tab-1"})).tool_json();
    assert_eq!(closed["already_closed"], false, "{closed}");
    let a = answer(first);
    assert_eq!((a["result"].as_str(), a["trigger"].as_str()), (Some("REJECTED"), Some("closed_via_tool")), "{a}");
    assert_eq!(nvim.t("reviews_shown", json!([])), json!(0));
    let second = open_review(&nvim, &mut c, &path, "two\n", "tab-2", 1);
    type_accept(&nvim, ":w<CR>");
    let b = answer(second);
    assert_eq!(b["result"], "SAVED", "{b}");
}
