//! JSON-RPC and MCP over a real socket to a real Neovim: the frames the Pi extension sends,
//! and the broken ones it never should.

use crate::harness::*;
use std::io::Write;

#[test]
fn initialize_answers_with_string_and_number_ids_echoed() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let mut p = Peer::connect(l.port, &l.auth_token).unwrap();
    let params = json!({"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"pi-ide","version":"0.1.0"}});
    let r = p
        .request_with_id(
            json!("5f0c1e9a-3b5e-4c0e-9f1e-2a7d4c6b8e01"),
            "initialize",
            params.clone(),
        )
        .unwrap();
    assert_eq!(r["id"], "5f0c1e9a-3b5e-4c0e-9f1e-2a7d4c6b8e01");
    assert_eq!(r["jsonrpc"], "2.0");
    assert_eq!(r["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(r["result"]["serverInfo"]["name"], "pi-ide.nvim");
    assert!(r["result"]["serverInfo"]["version"].is_string());
    assert!(r["result"]["capabilities"]["tools"].is_object());
    let r = p.request_with_id(json!(7), "initialize", params).unwrap();
    assert_eq!(r["id"], 7);
    // The editor saw who connected.
    nvim.wait_for(
        "(require('pi-ide').info().clients[1] or {}).name == 'pi-ide'",
        PATIENCE,
    );
    let st = nvim.lua("return require('pi-ide').info().clients[1]");
    assert_eq!(st["version"], "0.1.0");
    assert!(st["connected_at"].as_u64().unwrap() > 1_700_000_000);
}

#[test]
fn a_large_number_id_is_echoed_exactly() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let mut p = Peer::connect(l.port, &l.auth_token).unwrap();
    p.send_text(r#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}"#)
        .unwrap();
    let raw = p.recv_text().unwrap();
    assert_eq!(
        raw,
        r#"{"jsonrpc":"2.0","id":12345678901234567890123,"result":{}}"#
    );
}

#[test]
fn tools_list_describes_every_tool_with_a_schema() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let r = p.request("tools/list", json!({})).unwrap();
    let tools = r["result"]["tools"].as_array().unwrap();
    let diag = tools
        .iter()
        .find(|t| t["name"] == "getDiagnostics")
        .expect("getDiagnostics listed");
    assert_eq!(diag["inputSchema"]["type"], "object");
    assert_eq!(diag["inputSchema"]["properties"]["uri"]["type"], "string");
    for t in tools {
        assert!(
            t["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{t}"
        );
    }
    // notifications/initialized is accepted and never answered.
    p.notify("notifications/initialized", json!({})).unwrap();
    let r = p.request("ping", json!({})).unwrap();
    assert_eq!(
        r["result"],
        json!({}),
        "the next frame is the ping's answer, not one for the notification"
    );
    assert!(
        p.inbox.iter().all(|f| f.get("id").is_none()),
        "a frame answered the notification: {:?}",
        p.inbox
    );
}

#[test]
fn unknown_method_and_unknown_tool_are_32601() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let r = p.request("resources/list", json!({})).unwrap();
    assert_eq!(error_code(&r), -32601);
    let r = p.call_tool("noSuchTool", json!({})).unwrap();
    assert_eq!(error_code(&r), -32601);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("noSuchTool"));
}

#[test]
fn invalid_params_name_the_parameter() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let r = p.call_tool("getDiagnostics", json!({"uri": 42})).unwrap();
    assert_eq!(error_code(&r), -32602);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("'uri'"),
        "{r}"
    );
    let r = p.request("tools/call", json!({"arguments": {}})).unwrap();
    assert_eq!(error_code(&r), -32602);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("'name'"),
        "{r}"
    );
}

#[test]
fn malformed_frames_get_the_right_codes_and_the_connection_lives_on() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let cases = [
        ("{not json", -32700),
        ("", -32700),
        ("[]", -32600),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600),
        ("42", -32600),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":1,"method":17}"#, -32600),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}"#,
            -32600,
        ),
    ];
    for (text, code) in cases {
        p.send_text(text).unwrap();
        let r = p.recv_json().unwrap();
        assert_eq!(error_code(&r), code, "{text:?} -> {r}");
    }
    // Invalid UTF-8 in a binary frame is a parse error too.
    p.send_binary(vec![0xff, 0xfe, b'{']).unwrap();
    assert_eq!(error_code(&p.recv_json().unwrap()), -32700);
    // A well-formed binary frame is served.
    p.send_binary(br#"{"jsonrpc":"2.0","id":"b","method":"ping"}"#.to_vec())
        .unwrap();
    assert_eq!(p.recv_json().unwrap()["id"], "b");
    // A ping frame is answered by the server without disturbing anything.
    p.ping(b"hi").unwrap();
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
    // Neovim itself is fine.
    assert_eq!(nvim.lua("return 1 + 1"), json!(2));
}

#[test]
fn an_oversized_message_closes_that_connection_with_1009_only() {
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        after: Some("require('pi-ide').stop() require('pi-ide').setup({max_message_size = 65536}) require('pi-ide').start()".into()),
        ..Default::default()
    });
    let mut other = nvim.peer();
    let mut p = nvim.peer();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(70_000)
    );
    p.send_text(&big).unwrap();
    let (frames, end) = read_until_close(&mut p);
    // The request is answered before the close (never held in memory: see tests/hardening/hostile.rs).
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["id"], 1);
    assert_eq!(error_code(&frames[0]), -32600);
    match end {
        Received::Close { code, reason } => {
            assert_eq!(code, 1009);
            assert!(reason.contains("65536"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Just under the limit is fine, the other client is untouched, and the editor responds.
    let ok = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(60_000)
    );
    other.send_text(&ok).unwrap();
    assert_eq!(other.recv_json().unwrap()["id"], 2);
    assert_eq!(nvim.lua("return 'alive'"), json!("alive"));
}

#[test]
fn a_fragmented_message_is_reassembled() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let mut p = Peer::connect(l.port, &l.auth_token).unwrap();
    // Write the frames by hand: a text frame without FIN, then a continuation with FIN.
    let text = br#"{"jsonrpc":"2.0","id":"frag","method":"ping"}"#;
    let (a, b) = text.split_at(10);
    let mut raw = Vec::new();
    raw.extend(masked_frame(0x1, false, a));
    raw.extend(masked_frame(0x0, true, b));
    p.write_raw(&raw).unwrap();
    assert_eq!(p.recv_json().unwrap()["id"], "frag");
}

fn masked_frame(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        if fin { 0x80 } else { 0 } | opcode,
        0x80 | payload.len() as u8,
    ];
    let mask = [1u8, 2, 3, 4];
    f.extend(mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

#[test]
fn a_probe_that_connects_and_closes_at_once_is_shrugged_off() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    for _ in 0..20 {
        let s = std::net::TcpStream::connect(("127.0.0.1", l.port)).unwrap();
        drop(s);
    }
    // Half a handshake, then gone.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", l.port)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    drop(s);
    let mut p = nvim.peer();
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
    assert_eq!(
        nvim.lua("return #require('pi-ide').info().clients"),
        json!(1)
    );
}

#[test]
fn permessage_deflate_offer_is_declined_not_refused() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let mut p = Peer::connect_with_headers(
        l.port,
        &[
            (pi_ide_testkit::peer::AUTH_HEADER, &l.auth_token),
            (
                "sec-websocket-extensions",
                "permessage-deflate; client_max_window_bits",
            ),
        ],
    )
    .unwrap();
    assert!(p.initialize().unwrap()["result"].is_object());
}
