//! Claude Code compatibility (opt-in): its lockfile folder, its header, the `mcp` subprotocol,
//! its ide_connected notification, and Pi served by the same server at the same time.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

fn claude_nvim(on: bool) -> (Nvim, std::path::PathBuf) {
    let claude_dir = pi_ide_testkit::nvim::temp_dir("claude");
    let nvim = Nvim::start_with(Options {
        env: vec![("CLAUDE_CONFIG_DIR".into(), claude_dir.to_string_lossy().into())],
        after: Some(format!("require('pi-ide').stop() require('pi-ide').setup({{claude_code = {on}}}) require('pi-ide').start()")),
        ..Default::default()
    });
    (nvim, claude_dir)
}

#[test]
fn off_by_default_no_claude_lockfile_and_no_claude_header() {
    let (nvim, claude_dir) = claude_nvim(false);
    assert!(lock::read_all(&claude_dir.join("ide")).is_empty());
    let l = nvim.lockfile();
    assert!(matches!(
        Peer::connect_with_headers(
            l.port,
            &[("x-claude-code-ide-authorization", &l.auth_token)]
        ),
        Err(pi_ide_testkit::ConnectError::Http(401))
    ));
    std::fs::remove_dir_all(&claude_dir).ok();
}

#[test]
fn on_it_writes_both_lockfiles_and_serves_both_agents_at_once() {
    let (nvim, claude_dir) = claude_nvim(true);
    let pi_lock = nvim.lockfile();
    let claude = lock::read_all(&claude_dir.join("ide"));
    assert_eq!(claude.len(), 1);
    assert_eq!(claude[0].port, pi_lock.port);
    assert_eq!(claude[0].raw, pi_lock.raw);
    // Claude Code: its header and the mcp subprotocol, echoed.
    let mut c = Peer::connect_with_headers(
        pi_lock.port,
        &[
            ("x-claude-code-ide-authorization", &claude[0].auth_token),
            ("sec-websocket-protocol", "mcp"),
        ],
    )
    .expect("claude connects");
    assert_eq!(c.subprotocol().as_deref(), Some("mcp"));
    let r = c.request("initialize", json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}})).unwrap();
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    c.notify("notifications/initialized", json!({})).unwrap();
    c.notify("ide_connected", json!({"pid": 4242})).unwrap();
    // Pi at the same time.
    let mut p = nvim.peer();
    assert!(p
        .call_tool("getDiagnostics", json!({}))
        .unwrap()
        .get("result")
        .is_some());
    assert!(c
        .call_tool("getWorkspaceFolders", json!({}))
        .unwrap()
        .get("result")
        .is_some());
    nvim.wait_for("#require('pi-ide').info().clients == 2", PATIENCE);
    // Both get notifications.
    edit_file(&nvim, "x.txt", &["a", "b"]);
    type_keys(&nvim, "j");
    assert_eq!(
        next_selection(&mut p)["filePath"],
        next_selection(&mut c)["filePath"]
    );
    // Stopping removes both lockfiles.
    nvim.command("PiIde stop").unwrap();
    assert!(lock::read_all(&claude_dir.join("ide")).is_empty());
    assert!(lock::read_all(&nvim.lock_dir).is_empty());
    std::fs::remove_dir_all(&claude_dir).ok();
}

/// Claude Code as the real CLI (2.1.330) speaks: its header, the mcp subprotocol, its
/// initialize, notifications/initialized, ide_connected, tools/list.
fn claude_code_connects(port: u16, token: &str) -> Peer {
    let mut c = Peer::connect_with_headers(
        port,
        &[
            ("x-claude-code-ide-authorization", token),
            ("sec-websocket-protocol", "mcp"),
        ],
    )
    .expect("claude connects");
    assert_eq!(c.subprotocol().as_deref(), Some("mcp"));
    let r = c
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                   "clientInfo": {"name": "claude-code", "version": "2.1.330"}}),
        )
        .unwrap();
    // The version it asks for is answered (the Copilot CLI asks for the same one).
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    c.notify("notifications/initialized", json!({})).unwrap();
    c.notify("ide_connected", json!({"pid": 4242})).unwrap();
    let tools = c.request("tools/list", json!({})).unwrap();
    assert!(tools["result"]["tools"].as_array().unwrap().len() > 5);
    c
}

fn diagnostics_text(r: &Value) -> Value {
    serde_json::from_str(&texts(r)[0]).unwrap()
}

#[test]
fn claude_codes_sequence_around_a_write_gets_its_diagnostics_shape_and_its_own_reviews_closed() {
    let (nvim, claude_dir) = claude_nvim(true);
    let l = nvim.lockfile();
    let mut c = claude_code_connects(l.port, &l.auth_token);
    let path = edit_file(&nvim, "main.rs", &["fn main() {", "  let x = 1;", "}"]);
    let uri = format!("file://{path}");
    // Before the write (its 500 ms limit): the file's diagnostics, as an array; none yet: [].
    let before = c.call_tool("getDiagnostics", json!({"uri": uri})).unwrap();
    assert_eq!(diagnostics_text(&before), json!([]));
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ lnum = 1, col = 6, end_col = 7, severity = 2, message = 'unused variable', source = 'rustc', code = 'W1' }})");
    let r = c.call_tool("getDiagnostics", json!({"uri": uri})).unwrap();
    let d = diagnostics_text(&r);
    assert_eq!(d.as_array().unwrap().len(), 1, "{d}");
    assert_eq!(d[0]["uri"], uri);
    let item = &d[0]["diagnostics"][0];
    assert_eq!(item["message"], "unused variable");
    assert_eq!(item["severity"], "Warning");
    assert_eq!(item["source"], "rustc");
    assert_eq!(
        item["range"],
        json!({"start": {"line": 1, "character": 6}, "end": {"line": 1, "character": 7}})
    );
    // After the write (no uri): every file, as an array it can iterate.
    let after = diagnostics_text(&c.call_tool("getDiagnostics", json!({})).unwrap());
    assert_eq!(after[0]["diagnostics"][0]["message"], "unused variable");
    // closeAllDiffTabs on every prompt: its own review is closed (rejected), and counted.
    c.send_json(&json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "fn main() {}\n", "tab_name": "✻ [Claude Code] main.rs ⧉"}}}))
        .unwrap();
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    let closed = c.call_tool("closeAllDiffTabs", json!({})).unwrap();
    assert_eq!(texts(&closed), vec!["CLOSED_1_DIFF_TABS".to_string()]);
    let answer = c.wait_response(&json!("w")).unwrap();
    assert_eq!(texts(&answer)[0], "DIFF_REJECTED");
    std::fs::remove_dir_all(&claude_dir).ok();
}

#[test]
fn with_pi_and_claude_code_connected_each_keeps_its_reviews_and_its_diagnostics_shape() {
    let (nvim, claude_dir) = claude_nvim(true);
    let l = nvim.lockfile();
    let mut pi = nvim.peer();
    let mut c = claude_code_connects(l.port, &l.auth_token);
    let path = edit_file(&nvim, "a.rs", &["x"]);
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ lnum = 0, col = 0, severity = 1, message = 'boom' }})");
    let uri = format!("file://{path}");
    // Each in its own shape.
    let for_pi = diagnostics_text(&pi.call_tool("getDiagnostics", json!({})).unwrap());
    assert_eq!(for_pi[&uri][0]["message"], "boom", "{for_pi}");
    let for_claude = diagnostics_text(&c.call_tool("getDiagnostics", json!({})).unwrap());
    assert_eq!(for_claude[0]["uri"], uri, "{for_claude}");
    // Pi's review survives Claude Code's closeAllDiffTabs (the user typed a prompt there).
    nvim.t("record_events", json!(["PiIdeReviewOpened"]));
    pi.send_json(&json!({"jsonrpc": "2.0", "id": "p", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "y\n", "tab_name": "pi-edit:1"}}}))
        .unwrap();
    wait_until("the review on screen", PATIENCE, || nvim.t("count_events", json!(["PiIdeReviewOpened"])) == json!(1));
    let closed = c.call_tool("closeAllDiffTabs", json!({})).unwrap();
    assert_eq!(texts(&closed), vec!["CLOSED_0_DIFF_TABS".to_string()]);
    // A close_tab naming Pi's tab from Claude Code does nothing either.
    c.call_tool("close_tab", json!({"tab_name": "pi-edit:1"})).unwrap();
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(1));
    // Pi's review is still there for the user: :w accepts it.
    type_accept(&nvim, ":w<CR>");
    assert_eq!(
        texts(&pi.wait_response(&json!("p")).unwrap()),
        vec!["FILE_SAVED".to_string(), "y\n".to_string()]
    );
    std::fs::remove_dir_all(&claude_dir).ok();
}

#[test]
fn the_selection_is_sent_again_when_claude_code_says_ide_connected() {
    // Claude Code listens for selection_changed only once its UI has taken the connection
    // (after ide_connected): the state sent right after initialize is lost on it.
    let (nvim, _dir) = claude_nvim(true);
    let path = edit_file(&nvim, "sel.txt", &["one", "two"]);
    nvim.lua("vim.api.nvim_win_set_cursor(0, {2, 1})");
    nvim.lua("require('pi-ide.features.selection').flush()");
    let l = nvim.lockfile();
    let mut c = Peer::connect_with_headers(l.port, &[("x-claude-code-ide-authorization", &l.auth_token)]).unwrap();
    c.request("initialize", json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "claude-code"}})).unwrap();
    let first = c.wait_notification("selection_changed", PATIENCE).unwrap();
    assert_eq!(first["params"]["filePath"], path.as_str());
    c.notify("ide_connected", json!({"pid": 1})).unwrap();
    let again = c.wait_notification("selection_changed", PATIENCE).unwrap();
    assert_eq!(again["params"], first["params"]);
}
