//! The server's life with clients: connect, disconnect, reconnect, parked calls, stopping and
//! quitting with work in flight, and the editor staying responsive under load.

use crate::harness::*;
use std::time::Duration;

/// Makes getOpenEditors park until the test answers (its handler keeps the reply), with the
/// busy-editor fallback pushed out of the way.
fn park_diagnostics(nvim: &Nvim) {
    nvim.lua(
        "require('pi-ide').stop() require('pi-ide').setup({diagnostics_timeout_ms = 600000}) require('pi-ide').start() \
         require('pi_ide_test').park_calls('pi-ide.features.tools.editors', 'getOpenEditors')",
    );
}

#[test]
fn disconnect_and_reconnect() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let p = nvim.peer();
    nvim.wait_for("#require('pi-ide').info().clients == 1", PATIENCE);
    p.close();
    nvim.wait_for("#require('pi-ide').info().clients == 0", PATIENCE);
    let mut p = nvim.peer();
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
    // A client killed without a Close frame is noticed too.
    let q = nvim.peer();
    nvim.wait_for("#require('pi-ide').info().clients == 2", PATIENCE);
    q.kill();
    nvim.wait_for("#require('pi-ide').info().clients == 1", PATIENCE);
    assert_eq!(
        nvim.lockfile().port,
        l.port,
        "the server stays up across clients"
    );
}

#[test]
fn a_parked_call_does_not_block_other_requests_and_is_answered_later() {
    let nvim = Nvim::start();
    park_diagnostics(&nvim);
    let mut p = nvim.peer();
    p.send_json(&json!({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"getOpenEditors","arguments":{}}}))
        .unwrap();
    nvim.wait_for("require('pi_ide_test').parked_calls() == 1", PATIENCE);
    assert_eq!(nvim.lua("return require('pi-ide').info().parked"), json!(1));
    // Other requests are served meanwhile, on the same connection.
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
    // Answering later reaches the client, once.
    assert_eq!(nvim.t("reply", json!([1, {}])), json!(true));
    assert_eq!(nvim.t("reply", json!([1, {}])), json!(false));
    let r = p.wait_response(&json!("slow")).unwrap();
    assert_eq!(texts(&r), vec!["{}".to_string()]);
    assert_eq!(nvim.lua("return require('pi-ide').info().parked"), json!(0));
}

#[test]
fn a_disconnect_abandons_that_clients_parked_calls_and_tells_lua() {
    let nvim = Nvim::start();
    park_diagnostics(&nvim);
    nvim.t("record_events", json!(["PiIdeClientDisconnected"]));
    let mut p = nvim.peer();
    p.send_json(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getOpenEditors"}}),
    )
    .unwrap();
    nvim.wait_for("require('pi_ide_test').parked_calls() == 1", PATIENCE);
    p.kill();
    nvim.wait_t("has_event", json!(["PiIdeClientDisconnected"]), PATIENCE);
    let gone = nvim.t("last_event", json!(["PiIdeClientDisconnected"]));
    assert_eq!(gone["abandoned"].as_array().map(Vec::len), Some(1), "{gone}");
    assert_eq!(nvim.lua("return require('pi-ide').info().parked"), json!(0));
    // A late answer is refused quietly.
    assert_eq!(nvim.t("reply", json!([1, {}])), json!(false));
}

#[test]
fn stop_answers_parked_calls_before_the_close_frame() {
    let nvim = Nvim::start();
    park_diagnostics(&nvim);
    let mut p = nvim.peer();
    p.send_json(&json!({"jsonrpc":"2.0","id":"parked","method":"tools/call","params":{"name":"getOpenEditors"}}))
        .unwrap();
    nvim.wait_for("require('pi_ide_test').parked_calls() == 1", PATIENCE);
    nvim.command("PiIde stop").unwrap();
    let (frames, end) = read_until_close(&mut p);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["id"], "parked");
    assert_eq!(error_code(&frames[0]), -32603);
    assert!(matches!(end, Received::Close { code: 1001, .. }), "{end:?}");
}

#[test]
fn quitting_with_a_parked_call_answers_it_then_closes_then_exits() {
    let mut nvim = Nvim::start();
    park_diagnostics(&nvim);
    let mut p = nvim.peer();
    let l = nvim.lockfile();
    p.send_json(
        &json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"getOpenEditors"}}),
    )
    .unwrap();
    nvim.wait_for("require('pi_ide_test').parked_calls() == 1", PATIENCE);
    assert!(nvim.quit(PATIENCE), "nvim did not exit");
    let (frames, end) = read_until_close(&mut p);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["id"], 9);
    assert!(frames[0].get("error").is_some());
    assert!(matches!(end, Received::Close { .. }), "{end:?}");
    assert!(!l.path.exists());
}

#[test]
fn pings_and_pongs_never_wake_the_main_loop() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    // Lua has handled the client's arrival (its events were the last wake-ups).
    nvim.wait_for("require('pi-ide.core.server').agent_name() ~= nil", PATIENCE);
    let before = nvim.lua("return require('pi-ide').info().wakes");
    for _ in 0..50 {
        p.ping(b"keepalive").unwrap();
    }
    // A request that Rust answers itself does not wake Neovim either.
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(nvim.lua("return require('pi-ide').info().wakes"), before);
    // ...while a tool call Lua answers does (proving the counter counts).
    p.call_tool("getWorkspaceFolders", json!({})).unwrap();
    let after = nvim
        .lua("return require('pi-ide').info().wakes")
        .as_u64()
        .unwrap();
    assert!(after > before.as_u64().unwrap());
}

#[test]
fn a_flooding_client_meets_backpressure_and_the_editor_stays_responsive() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    // Several clients each pipeline many tool calls without reading the answers.
    let mut floods = Vec::new();
    for c in 0..4 {
        let port = l.port;
        let token = l.auth_token.clone();
        floods.push(std::thread::spawn(move || {
            let mut p = Peer::connect(port, &token).unwrap();
            for i in 0..3000 {
                let msg = json!({"jsonrpc":"2.0","id":format!("{c}-{i}"),"method":"tools/call","params":{"name":"getOpenEditors"}});
                if p.send_json(&msg).is_err() {
                    break;
                }
            }
            // Now read every answer: each request is answered exactly once.
            let mut seen = std::collections::HashSet::new();
            while seen.len() < 3000 {
                let r = p.recv_json().expect("answer");
                assert!(seen.insert(r["id"].as_str().unwrap().to_owned()), "answered twice: {r}");
            }
            seen.len()
        }));
    }
    // While the flood runs, Neovim keeps answering its own RPC.
    for _ in 0..20 {
        assert_eq!(nvim.lua("return 6 * 7"), json!(42));
        std::thread::sleep(Duration::from_millis(20));
    }
    for f in floods {
        assert_eq!(f.join().unwrap(), 3000);
    }
}
