//! selection_changed end to end: what a real client receives while a user moves, selects and
//! switches buffers in a real Neovim.

use crate::harness::*;

fn decode_url(url: &str) -> String {
    let rest = url.strip_prefix("file://").expect("file:// URL");
    let b = rest.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&rest[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn cursor_moves_send_every_field_with_utf16_characters_and_an_encoded_url() {
    let nvim = Nvim::start();
    let line = "héllo wörld 😀 x";
    let path = edit_file(&nvim, "dir with space/ünï code.rs", &["first", line]);
    let mut p = nvim.peer();
    let x = line.find('x').unwrap();
    nvim.lua_with(
        "vim.api.nvim_win_set_cursor(0, {2, ...})",
        vec![(x as u64).into()],
    );
    // Moves come through the CursorMoved autocmd as they would for a user.
    nvim.command("doautocmd CursorMoved").unwrap();
    let mut s = next_selection(&mut p);
    // The first frame may be the state from before the move (sent with the handshake).
    while s["selection"]["start"]["line"] != 1 {
        s = next_selection(&mut p);
    }
    assert_eq!(s["filePath"], path);
    let url = s["fileUrl"].as_str().unwrap();
    assert!(url.starts_with("file:///"), "{url}");
    assert!(
        !url.contains(' ') && url.is_ascii(),
        "not percent-encoded: {url}"
    );
    assert_eq!(decode_url(url), path);
    assert_eq!(s["text"], "");
    let pos = json!({"line": 1, "character": utf16(line, x)});
    assert_eq!(
        s["selection"],
        json!({"start": pos, "end": pos, "isEmpty": true})
    );
    assert_eq!(utf16(line, x), 15, "é, ö are one unit each, 😀 is two");
}

#[test]
fn characterwise_selection_is_inclusive_of_the_last_character() {
    let nvim = Nvim::start();
    let l0 = "aé😀bc";
    edit_file(&nvim, "v.txt", &[l0, "second", "third"]);
    let mut p = nvim.peer();
    // From 'é' (byte 1) to '😀' inclusive.
    type_keys(&nvim, "0lvl");
    let s = loop {
        let s = next_selection(&mut p);
        if !s["selection"]["isEmpty"].as_bool().unwrap() {
            break s;
        }
    };
    assert_eq!(s["text"], "é😀");
    assert_eq!(s["selection"]["start"], json!({"line": 0, "character": 1}));
    assert_eq!(
        s["selection"]["end"],
        json!({"line": 0, "character": 4}),
        "end is just past the emoji (2 UTF-16 units)"
    );
    // Across lines, selecting backwards: start and end are ordered.
    type_keys(&nvim, "<Esc>jj0lvkk");
    let s = loop {
        let s = next_selection(&mut p);
        if s["selection"]["start"]["line"] == 0 && s["selection"]["end"]["line"] == 2 {
            break s;
        }
    };
    assert_eq!(s["text"], "é😀bc\nsecond\nth");
    assert_eq!(s["selection"]["start"]["character"], 1);
    assert_eq!(s["selection"]["end"]["character"], 2);
}

#[test]
fn linewise_selection_covers_whole_lines() {
    let nvim = Nvim::start();
    edit_file(&nvim, "V.txt", &["one", "twö", "three"]);
    let mut p = nvim.peer();
    type_keys(&nvim, "ggllVj");
    let s = loop {
        let s = next_selection(&mut p);
        if s["text"] != "" {
            break s;
        }
    };
    assert_eq!(s["text"], "one\ntwö");
    assert_eq!(s["selection"]["start"], json!({"line": 0, "character": 0}));
    assert_eq!(s["selection"]["end"], json!({"line": 1, "character": 3}));
    assert_eq!(s["selection"]["isEmpty"], false);
}

#[test]
fn blockwise_selection_sends_the_block_and_its_corners() {
    let nvim = Nvim::start();
    edit_file(&nvim, "b.txt", &["abcdef", "ghijkl", "mnopqr"]);
    let mut p = nvim.peer();
    type_keys(&nvim, "gg0l<C-v>jll");
    let s = loop {
        let s = next_selection(&mut p);
        if s["text"] != "" {
            break s;
        }
    };
    assert_eq!(s["text"], "bcd\nhij");
    assert_eq!(s["selection"]["start"], json!({"line": 0, "character": 1}));
    assert_eq!(s["selection"]["end"], json!({"line": 1, "character": 4}));
}

#[test]
fn a_quick_v_then_y_is_sent_at_once_and_kept_until_the_cursor_moves() {
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        // A long debounce: anything that arrives quickly came from the flush on leaving visual.
        after: Some("require('pi-ide').stop() require('pi-ide').setup({selection_debounce_ms = 3000}) require('pi-ide').start()".into()),
        ..Default::default()
    });
    edit_file(&nvim, "q.txt", &["alpha beta", "gamma"]);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    type_keys(&nvim, "wvey");
    let s = p
        .wait_notification("selection_changed", PATIENCE)
        .expect("sent on leaving visual mode")["params"]
        .clone();
    assert_eq!(s["text"], "beta");
    assert_eq!(s["selection"]["isEmpty"], false);
    // The yank put the cursor at the start of the selection; the selection stays the state.
    nvim.lua("require('pi-ide.features.selection').flush()");
    no_selection_within(&mut p, 300);
    assert_eq!(
        nvim.lua("return require('pi-ide.features.selection').compute().text"),
        json!("beta")
    );
    // Moving away demotes it to the cursor.
    type_keys(&nvim, "j");
    nvim.lua("require('pi-ide.features.selection').flush()");
    let s = next_selection(&mut p);
    assert_eq!(s["selection"]["isEmpty"], true);
    assert_eq!(s["selection"]["start"]["line"], 1);
}

#[test]
fn a_visual_delete_does_not_send_the_deleted_selection() {
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        after: Some("require('pi-ide').stop() require('pi-ide').setup({selection_debounce_ms = 50}) require('pi-ide').start()".into()),
        ..Default::default()
    });
    edit_file(&nvim, "d.txt", &["alpha beta", "gamma"]);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    type_keys(&nvim, "wved");
    // Whatever arrives must not claim the deleted word is selected, up to the final state: the
    // cursor on the space left at the end of "alpha ".
    nvim.lua("require('pi-ide.features.selection').flush()");
    loop {
        let s = next_selection(&mut p);
        assert_eq!(s["selection"]["isEmpty"], true, "{s}");
        if s["selection"]["start"] == json!({"line": 0, "character": 5}) {
            break;
        }
    }
    assert_eq!(
        nvim.lua("return require('pi-ide.features.selection').compute().selection.isEmpty"),
        json!(true)
    );
}

#[test]
fn switching_to_a_terminal_keeps_the_file_and_selection_just_left() {
    let nvim = Nvim::start();
    let path = edit_file(&nvim, "t.txt", &["one", "two", "three"]);
    nvim.command("botright split | terminal").unwrap();
    nvim.command("wincmd p").unwrap();
    let mut p = nvim.peer();
    type_keys(&nvim, "Vj");
    let s = loop {
        let s = next_selection(&mut p);
        if s["text"] == "one\ntwo" {
            break s;
        }
    };
    assert_eq!(s["filePath"], path);
    // Into the terminal (the way Pi often runs inside Neovim), even into terminal mode.
    type_keys(&nvim, "<C-w>j");
    nvim.wait_for("vim.bo.buftype == 'terminal'", PATIENCE);
    nvim.command("startinsert").unwrap();
    nvim.lua("require('pi-ide.features.selection').flush()");
    no_selection_within(&mut p, 400);
    let latest = texts(&p.call_tool("getLatestSelection", json!({})).unwrap());
    let latest: Value = serde_json::from_str(&latest[0]).unwrap();
    assert_eq!(latest["text"], "one\ntwo");
    assert_eq!(latest["filePath"], path);
    // Help, quickfix and scratch buffers do not count either.
    nvim.command("stopinsert | help | copen | enew").unwrap();
    nvim.lua("require('pi-ide.features.selection').flush()");
    no_selection_within(&mut p, 300);
}

#[test]
fn moves_are_debounced_and_unchanged_states_are_not_resent() {
    let nvim = Nvim::start();
    edit_file(&nvim, "m.txt", &["a", "b", "c", "d"]);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    // Ten quick moves: one notification, for where the cursor ended.
    type_keys(&nvim, "jjjkkkjjkj");
    let s = next_selection(&mut p);
    assert_eq!(s["selection"]["start"]["line"], 2);
    no_selection_within(&mut p, 400);
    // Moving away and back before the debounce fires: nothing new to say.
    type_keys(&nvim, "kj");
    no_selection_within(&mut p, 400);
}

#[test]
fn a_client_gets_the_current_state_right_after_its_handshake_and_not_before() {
    let nvim = Nvim::start();
    let path = edit_file(&nvim, "h.txt", &["x", "y"]);
    type_keys(&nvim, "j");
    let first = nvim.peer();
    drop(first); // someone was connected, so the state is known
    nvim.lua("require('pi-ide.features.selection').flush()");
    let l = nvim.lockfile();
    let mut p = Peer::connect(l.port, &l.auth_token).unwrap();
    // Before initialize: nothing.
    p.set_timeout(std::time::Duration::from_millis(300));
    assert!(p.recv().is_err(), "a frame arrived before the handshake");
    p.set_timeout(10 * SECOND);
    p.send_json(&json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"pi-ide","version":"0.1.0"}}})).unwrap();
    let r = p.recv_json().unwrap();
    assert_eq!(r["id"], "i", "the initialize answer comes first");
    let n = p.recv_json().unwrap();
    assert_eq!(n["method"], "selection_changed", "{n}");
    assert_eq!(n["params"]["filePath"], path);
    assert_eq!(n["params"]["selection"]["start"]["line"], 1);
}

#[test]
fn clients_that_did_not_initialize_get_no_notifications() {
    let nvim = Nvim::start();
    edit_file(&nvim, "n.txt", &["x", "y"]);
    let l = nvim.lockfile();
    let mut silent = Peer::connect(l.port, &l.auth_token).unwrap();
    let mut p = nvim.peer();
    type_keys(&nvim, "j");
    while next_selection(&mut p)["selection"]["start"]["line"] != 1 {}
    // The broadcast has happened; had the silent client been sent it, it would come before the
    // answer to this ping.
    assert_eq!(silent.request("ping", json!({})).unwrap()["result"], json!({}));
    assert!(silent.inbox.is_empty(), "{:?}", silent.inbox);
}

#[test]
fn a_huge_selection_is_capped() {
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        after: Some("require('pi-ide').setup({selection_max_lines = 10})".into()),
        ..Default::default()
    });
    let lines: Vec<String> = (0..5000).map(|i| format!("line {i}")).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    edit_file(&nvim, "big.txt", &refs);
    let mut p = nvim.peer();
    type_keys(&nvim, "ggVG");
    let s = loop {
        let s = next_selection(&mut p);
        if s["text"] != "" {
            break s;
        }
    };
    assert_eq!(s["text"].as_str().unwrap().lines().count(), 10);
    assert_eq!(
        s["selection"]["end"]["line"], 4999,
        "the range is the real one"
    );
}
