//! The review promise on every way a connection ends. The Pi extension writes the file
//! unreviewed when its socket closes with an openDiff unanswered, so each close path must
//! answer every review of that client (DIFF_REJECTED at least) and get that answer onto the
//! wire before it closes: the client stopped reading (1008), a message over max_message_size
//! (1009), a panic in the connection task (1011), the editor stopping or quitting with an agent
//! suspended with Ctrl-Z; and the caps on handshakes and clients never touch an open review.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

fn small_limit() -> Options {
    Options {
        before: Some("require('pi-ide').setup({ max_message_size = 1048576 })".into()),
        ..Default::default()
    }
}

fn frames_named(frames: &[Value], method: &str) -> usize {
    frames.iter().filter(|f| f["method"] == method).count()
}

#[test]
fn a_suspended_agent_gets_its_answer_however_long_the_user_types_meanwhile() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "a.txt", "old\n");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "d1", &path, "new\n", "pi-edit:1", 1);
    // Pi is suspended (Ctrl-Z) and reads nothing. The user types on for a long while: every
    // pause asks for a suggestion, every next keystroke cancels it.
    let sent = nvim.t("typing_pauses", json!([5000, 2000]));
    assert_eq!(sent, json!(5000));
    // The user accepts the review.
    type_accept(&nvim, ":w<CR>");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // Pi resumes and reads what waited for it: the answer, and a connection still open.
    let r = p.wait_response(&json!("d1")).expect("the answer survived");
    assert_eq!(texts(&r), vec!["FILE_SAVED".to_string(), "new\n".into()]);
    let frames: Vec<Value> = p.inbox.drain(..).collect();
    let (asked, cancelled) = (
        frames_named(&frames, "getSuggestions"),
        frames_named(&frames, "request_cancelled"),
    );
    eprintln!("5000 typing pauses for a suspended agent: {asked} requests and {cancelled} cancels reached it");
    assert!(asked < 5000, "requests that were cancelled before they went out were still sent");
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
}

#[test]
fn a_client_given_up_for_not_reading_gets_its_reviews_rejected_before_the_1008() {
    let nvim = Nvim::start_with(small_limit());
    nvim.record_notify();
    let path = file_with(&nvim, "a.txt", "old\n");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "d1", &path, "new\n", "pi-edit:1", 1);
    // It reads nothing while more is sent to it than may wait (notifications give way at the
    // bound by closing it: it would never catch up).
    nvim.t("notifications", json!([3000, 20000]));
    // The review is taken away at once, and the user is told why.
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    nvim.wait_t("has_note", json!(["a.txt", "rejected", "does not read"]), PATIENCE);
    // When it reads again, its answer comes before the Close.
    let (frames, end) = read_until_close(&mut p);
    assert_eq!(
        answer_in(&frames, "d1"),
        Some(vec!["DIFF_REJECTED".to_string(), "pi-edit:1".into()]),
        "{} frames before {end:?}",
        frames.len()
    );
    assert!(matches!(end, Received::Close { code: 1008, .. }), "{end:?}");
    nvim.wait_for("#require('pi-ide').info().clients == 0", PATIENCE);
}

#[test]
fn an_open_diff_over_max_message_size_is_rejected_before_the_1009() {
    let nvim = Nvim::start_with(small_limit());
    nvim.record_notify();
    let path = file_with(&nvim, "a.txt", "old\n");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "d1", &path, "new\n", "pi-edit:1", 1);
    // 3 MiB, its id after its arguments (an agent may order keys any way).
    let big = "y".repeat(3 << 20);
    let text = format!(
        r#"{{"params":{{"arguments":{{"new_file_contents":"{big}","old_file_path":"{path}","new_file_path":"{path}","tab_name":"pi-write:2"}},"name":"openDiff"}},"method":"tools/call","jsonrpc":"2.0","id":"d2"}}"#
    );
    p.send_text(&text).unwrap();
    let (frames, end) = read_until_close(&mut p);
    assert_eq!(answer_in(&frames, "d2"), Some(vec!["DIFF_REJECTED".to_string(), "pi-write:2".into()]));
    assert_eq!(answer_in(&frames, "d1"), Some(vec!["DIFF_REJECTED".to_string(), "pi-edit:1".into()]));
    match end {
        Received::Close { code, reason } => {
            assert_eq!(code, 1009);
            assert!(reason.contains("1048576"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    nvim.wait_t("has_note", json!(["3.0 MiB", "max_message_size (1.0 MiB)", "a.txt"]), PATIENCE);
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // The same in fragments, the id first: the fragment that crosses the limit is dropped; and
    // another openDiff right behind it (in the same write) is rejected too, not lost.
    let mut q = nvim.peer();
    let text = open_diff_call("d3", &path, &"z".repeat(2 << 20), "pi-write:3").to_string();
    let (a, b) = text.as_bytes().split_at(1000);
    let mut raw = pi_ide_testkit::peer::raw_frame(false, 1, a);
    raw.extend(pi_ide_testkit::peer::raw_frame(true, 0, b));
    let next = open_diff_call("d4", &path, "small\n", "pi-write:4").to_string();
    raw.extend(pi_ide_testkit::peer::raw_frame(true, 1, next.as_bytes()));
    q.write_raw(&raw).unwrap();
    let (frames, end) = read_until_close(&mut q);
    assert_eq!(answer_in(&frames, "d3"), Some(vec!["DIFF_REJECTED".to_string(), "pi-write:3".into()]));
    assert_eq!(answer_in(&frames, "d4"), Some(vec!["DIFF_REJECTED".to_string(), "pi-write:4".into()]));
    assert!(matches!(end, Received::Close { code: 1009, .. }), "{end:?}");
    // Whole, then another openDiff behind it.
    let mut q = nvim.peer();
    let mut raw = pi_ide_testkit::peer::raw_frame(true, 1, open_diff_call("d5", &path, &"z".repeat(2 << 20), "pi-write:5").to_string().as_bytes());
    raw.extend(pi_ide_testkit::peer::raw_frame(true, 1, open_diff_call("d6", &path, "x\n", "pi-write:6").to_string().as_bytes()));
    q.write_raw(&raw).unwrap();
    let (frames, end) = read_until_close(&mut q);
    assert_eq!(answer_in(&frames, "d5"), Some(vec!["DIFF_REJECTED".to_string(), "pi-write:5".into()]));
    assert_eq!(answer_in(&frames, "d6"), Some(vec!["DIFF_REJECTED".to_string(), "pi-write:6".into()]));
    assert!(matches!(end, Received::Close { code: 1009, .. }), "{end:?}");
    // Others are served as before.
    assert_eq!(nvim.peer().request("ping", json!({})).unwrap()["result"], json!({}));
}

#[test]
fn a_frame_that_breaks_the_protocol_rejects_the_reviews_before_the_close() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "a.txt", "old\n");
    // A text frame that is not UTF-8 (1007), and an unmasked frame (1002).
    for (n, (bad, code)) in [(pi_ide_testkit::peer::raw_frame(true, 1, &[0xc3, 0x28]), 1007u16), (vec![0x81, 0x01, b'x'], 1002)]
        .into_iter()
        .enumerate()
    {
        let mut p = nvim.peer();
        let id = format!("d{n}");
        open_review(&nvim, &mut p, &id, &path, "new\n", &format!("pi-edit:{n}"), 1);
        p.write_raw(&bad).unwrap();
        let (frames, end) = read_until_close(&mut p);
        assert_eq!(answer_in(&frames, &id), Some(vec!["DIFF_REJECTED".to_string(), format!("pi-edit:{n}")]));
        assert!(matches!(end, Received::Close { code: c, .. } if c == code), "{end:?}");
        nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    }
}

#[test]
fn a_panic_in_the_connection_task_rejects_its_reviews_before_the_1011() {
    let nvim = Nvim::start_with(Options {
        env: vec![("PI_IDE_FAILPOINTS".into(), "panic-on=test/panic".into())],
        ..Default::default()
    });
    nvim.record_notify();
    let path = file_with(&nvim, "a.txt", "old\n");
    let mut other = nvim.peer();
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "d1", &path, "new\n", "pi-edit:1", 1);
    p.send_json(&json!({"jsonrpc": "2.0", "id": 7, "method": "test/panic"})).unwrap();
    let (frames, end) = read_until_close(&mut p);
    assert_eq!(answer_in(&frames, "d1"), Some(vec!["DIFF_REJECTED".to_string(), "pi-edit:1".into()]));
    assert!(matches!(end, Received::Close { code: 1011, .. }), "{end:?}");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    nvim.wait_t("has_note", json!(["a.txt", "rejected", "internal error"]), PATIENCE);
    // Nothing else is harmed.
    assert_eq!(other.request("ping", json!({})).unwrap()["result"], json!({}));
    assert_eq!(nvim.peer().request("ping", json!({})).unwrap()["result"], json!({}));
}

#[test]
fn stopping_or_quitting_with_a_suspended_agent_still_delivers_the_rejection() {
    for way in ["stop", "quit"] {
        let mut nvim = Nvim::start();
        let path = file_with(&nvim, "a.txt", "old\n");
        let mut p = nvim.peer();
        open_review(&nvim, &mut p, "d1", &path, "new\n", "pi-edit:1", 1);
        // Suspended with Ctrl-Z while the editor had much to tell it: its socket is full.
        nvim.t("notifications", json!([600, 20000]));
        if way == "stop" {
            nvim.command("PiIde stop").unwrap();
        } else {
            assert!(nvim.quit(PATIENCE), "Neovim did not quit");
        }
        // It resumes: the rejection is there, before the connection ends.
        let (frames, end) = read_until_close(&mut p);
        assert_eq!(
            answer_in(&frames, "d1"),
            Some(vec!["DIFF_REJECTED".to_string(), "pi-edit:1".into()]),
            "{way}: {} frames, then {end:?}",
            frames.len()
        );
    }
}

#[test]
fn the_handshake_and_client_caps_never_touch_an_open_review() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "a.txt", "old\n");
    let l = nvim.lockfile();
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "d1", &path, "new\n", "pi-edit:1", 1);
    // Idle sockets beyond the handshake cap, and clients beyond the client cap.
    let idle: Vec<_> = (0..200)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", l.port)).ok())
        .collect();
    let mut others = Vec::new();
    let mut full = 0;
    for _ in 0..70 {
        match Peer::connect(l.port, &l.auth_token) {
            Ok(o) => others.push(o),
            Err(pi_ide_testkit::ConnectError::Http(503)) => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((others.len(), full), (63, 7), "63 more clients, then 503");
    drop(idle);
    // The review was not touched: the user accepts it, and the agent hears it.
    assert_eq!(nvim.t("reviews_shown", json!([])), json!(1));
    type_accept(&nvim, ":w<CR>");
    let r = p.wait_response(&json!("d1")).unwrap();
    assert_eq!(texts(&r), vec!["FILE_SAVED".to_string(), "new\n".into()]);
}

/// A review its client gave up on while its panes were being built (a Ctrl-C'd MCP client): the
/// core ended it and deleted its staged files, so the next step fails. That is no error to show:
/// an error's traceback once stopped Neovim at a more-prompt, and its API with it.
#[test]
fn showing_a_review_the_core_ended_meanwhile_fails_quietly_and_a_real_failure_says_one_line() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "a.txt", "old\n");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "q1", &path, "new\n", "pi-edit:q1", 1);
    // The core ends it first (as when its client leaves), then a step fails.
    nvim.lua("local r = require('pi-ide.features.review').current() require('pi-ide.core.native').get().review_reject(r.req) require('pi-ide.features.review').failed(r, 'E484: gone\\nstack traceback:\\n  x')");
    assert!(nvim.notes().iter().all(|n| !n.contains("cannot show")), "{:?}", nvim.notes());
    assert_eq!(review_answer(&mut p, "q1")[0], "DIFF_REJECTED");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // A failure of a review still open: rejected, and said in one line.
    open_review(&nvim, &mut p, "q2", &path, "new\n", "pi-edit:q2", 1);
    nvim.lua("require('pi-ide.features.review').failed(require('pi-ide.features.review').current(), 'boom\\nstack traceback:\\n  x')");
    assert_eq!(review_answer(&mut p, "q2")[0], "DIFF_REJECTED");
    let said: Vec<String> = nvim.notes().into_iter().filter(|n| n.contains("cannot show")).collect();
    assert_eq!(said, vec!["pi-ide.nvim: cannot show the review of a.txt: boom".to_string()]);
    assert_eq!(nvim.lua("return 1"), json!(1), "Neovim answers: no prompt holds it");
}
