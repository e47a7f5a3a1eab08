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

/// Lua that names `resident`: KiB of the library's read-only mappings (code, constants)
/// resident in this Neovim.
const RESIDENT_READ_ONLY: &str = "local resident = require('pi_ide_test.agents').resident_read_only_kib";

#[test]
fn what_only_loading_and_the_start_read_of_the_library_is_given_back() {
    let nvim = Nvim::start();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let native = "require('pi-ide.core.native').get()";
    // Loading the library again touches much of it (relocations, luaopen); what the start
    // did once is what the server does then.
    // The least of three tries: another thread (the server's, finishing its start) may run
    // between one give-back and its reading.
    let got = nvim.lua(&format!(
        "{RESIDENT_READ_ONLY} local loaded, advised, after = resident(), 0, math.huge \
         for _ = 1, 3 do advised = {native}.release_load_pages() after = math.min(after, resident()) end \
         return {{ loaded = loaded, advised = advised, after = after }}"
    ));
    let kib = |k: &str| got[k].as_f64().unwrap();
    assert!(kib("advised") > 1024.0 * 1024.0, "{got}: the code and constants are over 1 MiB");
    // Left: the pages the return to Lua and a waking server thread touch (the kernel maps 64
    // KiB around each page that faults: ~250 KiB here), not what loading and the start used
    // (the code placed first alone is over 450 KiB).
    assert!(kib("after") <= 400.0, "{got}");
    // And everything still works: an agent connects and is answered.
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    let r = p.request("tools/list", json!({})).unwrap();
    assert!(r["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{r}");
}

#[test]
fn what_an_agent_s_handshake_and_its_first_checkpoint_ran_once_is_given_back() {
    let nvim = Nvim::start();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    // Each time the pages are given back, what of them is resident right after: the least of
    // three tries (another thread may run between one give-back and its reading).
    nvim.lua(&format!(
        "{RESIDENT_READ_ONLY} local server = require('pi-ide.core.server') local give = server.give_back_pages \
         _G.given = {{}} server.give_back_pages = function(after) local kib = math.huge \
         for _ = 1, 3 do give(after) kib = math.min(kib, resident()) end \
         table.insert(_G.given, {{ after = after, kib = kib }}) end"
    ));
    let mut p = nvim.peer();
    // Nothing of the agent's runs on the server's thread while the handshake's pages go.
    nvim.wait_for("vim.iter(_G.given):any(function(g) return g.after == 'a handshake' end)", PATIENCE);
    // Its first request after a quiet time begins a turn: a checkpoint of the folder.
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(r.get("result").is_some(), "{r}");
    nvim.wait_for("vim.iter(_G.given):any(function(g) return g.after == 'a checkpoint' end)", PATIENCE);
    let given = nvim.lua("return _G.given");
    let afters: Vec<&str> = given.as_array().unwrap().iter().filter_map(|g| g["after"].as_str()).collect();
    assert!(afters.contains(&"a handshake"), "{given}");
    // Right after: the return to Lua and what other threads ran meanwhile, not the handshake's
    // or the checkpoint's code (the code that runs once an agent is connected is over 400 KiB).
    for g in given.as_array().unwrap() {
        assert!(g["kib"].as_f64().unwrap() <= 400.0, "{given}");
    }
    // And the agent is still answered.
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(r.get("result").is_some(), "{r}");
}

#[test]
fn what_a_review_ran_is_given_back_once_it_closes() {
    let nvim = Nvim::start();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim.lua(
        "local server = require('pi-ide.core.server') local give = server.give_back_pages \
         _G.given = {} server.give_back_pages = function(after) give(after) table.insert(_G.given, { after = after }) end",
    );
    let mut p = nvim.peer();
    let path = file_with(&nvim, "r.txt", "x\n");
    open_review(&nvim, &mut p, "r", &path, "y\n", "pi-write:r", 1);
    type_keys(&nvim, ":q<CR>");
    let r = p.wait_response(&json!("r")).unwrap();
    assert!(r.to_string().contains("DIFF_REJECTED"), "{r}");
    // Given back once the review's windows are gone. (What is resident right after is not
    // asserted here: the core is still answering the review on its own thread meanwhile; the
    // handshake's test above checks what a give-back leaves.)
    nvim.wait_for("vim.iter(_G.given):any(function(g) return g.after == 'a review' end)", PATIENCE);
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(0));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "x\n");
}

#[test]
fn pages_that_cannot_be_given_back_disturb_nothing() {
    let nvim = Nvim::start();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim.lua(
        "_G.connected = 0 vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeClientConnected', \
         callback = function() _G.connected = _G.connected + 1 end }) \
         require('pi-ide.core.native').get().release_load_pages = function() error('no madvise here') end",
    );
    let mut p = nvim.peer();
    // The handshake's handler goes on past it (the user hears of the agent), and so does the
    // checkpoint's: the agent is answered and the turn recorded.
    nvim.wait_for("_G.connected == 1", PATIENCE);
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(r.get("result").is_some(), "{r}");
    nvim.wait_for("require('pi-ide.features.checkpoints').status_line():find('last turn 1') ~= nil", PATIENCE);
    let log = std::fs::read_to_string(nvim.lua("return require('pi-ide.core.log').path()").as_str().unwrap()).unwrap();
    assert!(log.contains("could not give back the library's pages after a handshake"), "{log}");
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(r.get("result").is_some(), "{r}");
}

#[test]
fn the_modules_an_idle_server_with_an_agent_loads_hold_no_decimal_literal() {
    // LuaJIT reads a decimal literal with libm, whose tables then stay resident (56 KiB in
    // every Neovim): fractions are written as divisions, which are folded without it.
    let nvim = Nvim::start();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    let found = nvim.t("agents.decimal_literals", json!([]));
    assert!(found["scanned"].as_u64().unwrap() > 10, "{found}");
    assert_eq!(found["found"], json!([]), "decimal literals in modules loaded at start");
}
