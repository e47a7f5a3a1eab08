//! Claude Code compatibility (opt-in): its lockfile folder, its header, the `mcp` subprotocol,
//! its ide_connected notification, and Pi served by the same server at the same time.

mod common;
use common::*;
use pi_ide_peer::nvim::Options;

fn claude_nvim(on: bool) -> (Nvim, std::path::PathBuf) {
    let claude_dir = pi_ide_peer::nvim::temp_dir("claude");
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
        Err(pi_ide_peer::ConnectError::Http(401))
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
