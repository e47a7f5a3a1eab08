//! A chat with `sh -c` scripts playing Pi.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::queue::MAX_OPS;
use super::*;

fn sh(script: &str) -> ChatOptions {
    ChatOptions::new(vec!["sh".into(), "-c".into(), script.into()])
}

/// A chat whose wakes are only counted.
fn start(opts: ChatOptions) -> (Chat, Arc<AtomicUsize>) {
    let wakes = Arc::new(AtomicUsize::new(0));
    let w = wakes.clone();
    let chat = Chat::start(opts, Box::new(move || {
        w.fetch_add(1, Ordering::Relaxed);
    }))
    .unwrap();
    (chat, wakes)
}

/// Drains until the exit op (included), or panics after 20 s.
fn until_exit(chat: &Chat) -> Vec<Op> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ops = Vec::new();
    while !matches!(ops.last(), Some(Op::Exit { .. })) {
        assert!(Instant::now() < deadline, "no exit op; so far {ops:?}");
        ops.extend(chat.drain());
        std::thread::sleep(Duration::from_millis(5));
    }
    ops
}

/// What Lua draws from `ops`: the drains of a test may split what one drain would coalesce
/// (a busy machine), so adjacent deltas of one block are joined and a tool's outputs reduced
/// to the last, as one drain would hand them over.
fn as_one_drain(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::new();
    for op in ops {
        match (out.last_mut(), op) {
            (Some(Op::Text { index: a, text: t }), Op::Text { index: b, text: more }) if *a == b => t.push_str(&more),
            (Some(Op::Thinking { index: a, text: t }), Op::Thinking { index: b, text: more }) if *a == b => t.push_str(&more),
            (Some(Op::ToolOutput { id: a, .. }), op @ Op::ToolOutput { .. }) if matches!(&op, Op::ToolOutput { id, .. } if id == a) => {
                *out.last_mut().unwrap() = op;
            }
            (_, op) => out.push(op),
        }
    }
    out
}

/// Drains until `found` says an op is there; returns every op so far.
fn until(chat: &Chat, found: impl Fn(&Op) -> bool) -> Vec<Op> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ops = Vec::new();
    while !ops.iter().any(&found) {
        assert!(Instant::now() < deadline, "not found; so far {ops:?}");
        ops.extend(chat.drain());
        std::thread::sleep(Duration::from_millis(5));
    }
    ops
}

fn event_named(name: &str) -> impl Fn(&Op) -> bool + '_ {
    move |op| matches!(op, Op::Event { kind: Some(k), .. } if k == name)
}

/// `printf` of a delta record, for a script.
fn delta(kind: &str, index: i64, text: &str) -> String {
    let record = json!({"type": "message_update", "assistantMessageEvent": {"type": kind, "contentIndex": index, "delta": text}});
    format!("printf '%s\\n' '{record}'\n")
}

fn text(index: i64, t: &str) -> Op {
    Op::Text { index: Some(index), text: t.into() }
}

fn exit(code: Option<i32>, signal: Option<i32>) -> impl Fn(&Op) -> bool {
    move |op| matches!(op, Op::Exit { code: c, signal: s, .. } if *c == code && *s == signal)
}

fn gone(pid: i64) -> bool {
    // Reaped, or a zombie nobody has reaped yet (this container's init may not).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

#[test]
fn a_thousand_deltas_are_one_op() {
    let d = delta("text_delta", 0, "x").replace('\n', "");
    let script = format!("i=0; while [ $i -lt 1000 ]; do {d}; i=$((i+1)); done");
    let (chat, _) = start(sh(&script));
    let ops = until_exit(&chat);
    // Drained only now and then while Pi streams: a handful of ops, not a thousand.
    assert!(ops.len() < 50, "{} ops", ops.len());
    let all: String = ops.iter().filter_map(|op| match op {
        Op::Text { index: Some(0), text } => Some(text.as_str()),
        _ => None,
    }).collect();
    assert_eq!(all, "x".repeat(1000));
    assert_eq!(chat.stats().text_deltas.load(Ordering::Relaxed), 1000);
    assert_eq!(chat.stats().lines.load(Ordering::Relaxed), 1000);
}

#[test]
fn blocks_of_text_and_thinking_stay_apart() {
    let script = [
        delta("thinking_delta", 0, "hm"),
        delta("thinking_delta", 0, "m"),
        delta("text_delta", 1, "a"),
        delta("text_delta", 1, "b"),
        delta("text_delta", 2, "c"),
        // Drawn from the deltas: the rest of message_update is dropped.
        r#"printf '%s\n' '{"type":"message_update","assistantMessageEvent":{"type":"text_end","contentIndex":2,"content":"c"}}'"#.into(),
        "sleep 0.3\n".into(),
    ]
    .concat();
    let (chat, _) = start(sh(&script));
    let ops = as_one_drain(until_exit(&chat));
    assert_eq!(ops[..3], [
        Op::Thinking { index: Some(0), text: "hmm".into() },
        text(1, "ab"),
        text(2, "c"),
    ]);
    assert!(matches!(ops[3], Op::Exit { .. }), "{ops:?}");
}

#[test]
fn tool_output_keeps_the_latest_first_lines() {
    let update = |n: usize| {
        let text: String = (1..=n).map(|i| format!("line {i}\n")).collect();
        let r = json!({"type": "tool_execution_update", "toolCallId": "c1", "toolName": "bash",
            "args": {"command": "seq"}, "partialResult": {"content": [{"type": "text", "text": text}]}});
        format!("printf '%s\\n' '{r}'\n")
    };
    let end = json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash", "isError": false,
        "result": {"content": [{"type": "text", "text": "done\n"}]}});
    let start_ = json!({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": {"command": "seq"}});
    let script = format!("printf '%s\\n' '{start_}'\n{}{}{}sleep 0.3\nprintf '%s\\n' '{end}'\n", update(2), update(10), update(20));
    let mut opts = sh(&script);
    opts.cap_lines = 12;
    let (chat, _) = start(opts);
    let ops = as_one_drain(until_exit(&chat));
    assert_eq!(ops[0], Op::ToolStart { id: "c1".into(), name: "bash".into(), args: Some(json!({"command": "seq"})) });
    let want: Vec<String> = (1..=12).map(|i| format!("line {i}")).collect();
    assert_eq!(ops[1], Op::ToolOutput { id: "c1".into(), lines: want, more: 8 });
    assert_eq!(ops[2], Op::ToolEnd { id: "c1".into(), name: "bash".into(), is_error: false, lines: vec!["done".into()], more: 0 });
    assert_eq!(ops.len(), 4, "{ops:?}");
}

#[test]
fn crlf_ends_a_record_and_u2028_does_not() {
    // \342\200\250 is U+2028 and \342\200\251 U+2029, raw inside a JSON string.
    let script = r#"printf '{"type":"x","s":"a\342\200\250b\342\200\251c"}\r\n{"type":"y"}\r\n'"#;
    let (chat, _) = start(sh(script));
    let ops = until_exit(&chat);
    assert_eq!(ops[0], Op::Event { kind: Some("x".into()), event: json!({"type": "x", "s": "a\u{2028}b\u{2029}c"}) });
    assert!(event_named("y")(&ops[1]), "{ops:?}");
    assert_eq!(chat.stats().malformed.load(Ordering::Relaxed), 0);
}

#[test]
fn malformed_lines_are_counted_and_skipped() {
    let script = r#"printf 'not json\n[1,2]\n{"type":"bad \377 utf8"}\n{"type":"ok"}\n'"#;
    let (chat, _) = start(sh(script));
    let ops = until_exit(&chat);
    assert!(event_named("ok")(&ops[0]), "{ops:?}");
    assert_eq!(ops.len(), 2);
    assert_eq!(chat.stats().malformed.load(Ordering::Relaxed), 3);
    assert_eq!(chat.stats().lines.load(Ordering::Relaxed), 4);
}

#[test]
fn a_line_over_32_mib_is_dropped_and_reading_goes_on() {
    let script = r#"printf '{"type":"huge","s":"'; head -c 34000000 /dev/zero | tr '\0' a; printf '"}\n{"type":"after"}\n'"#;
    let (chat, _) = start(sh(script));
    let ops = until_exit(&chat);
    assert!(event_named("after")(&ops[0]), "{:?}", &ops[..1]);
    assert_eq!(chat.stats().malformed.load(Ordering::Relaxed), 1);
    assert!(chat.stats().bytes_in.load(Ordering::Relaxed) > 34_000_000);
}

#[test]
fn responses_carry_id_data_and_error() {
    // The fake Pi echoes each command back as its response.
    let (chat, wakes) = start(sh("while read -r l; do printf '%s\\n' \"$l\"; done"));
    assert!(chat.send_json(&json!({"type": "response", "id": "r1", "command": "get_state", "success": true, "data": {"n": 1}})));
    assert!(chat.send(br#"{"type":"response","command":"parse","success":false,"error":"Failed to parse"}"#.to_vec()));
    let ops = until(&chat, |op| matches!(op, Op::Response { success: false, .. }));
    assert_eq!(ops, [
        Op::Response { id: Some("r1".into()), command: Some("get_state".into()), success: true, data: Some(json!({"n": 1})), error: None },
        Op::Response { id: None, command: Some("parse".into()), success: false, data: None, error: Some("Failed to parse".into()) },
    ]);
    assert!(wakes.load(Ordering::Relaxed) >= 1);
    assert!(chat.stop(Duration::from_secs(5)), "exits when its stdin closes");
}

#[test]
fn the_exit_op_has_the_code_and_the_stderr_tail() {
    let (chat, _) = start(sh("i=1; while [ $i -le 25 ]; do echo \"err $i\" >&2; i=$((i+1)); done; exit 3"));
    let ops = until_exit(&chat);
    let want: Vec<String> = (6..=25).map(|i| format!("err {i}")).collect();
    assert_eq!(ops, [Op::Exit { code: Some(3), signal: None, stderr: want }]);
    assert_eq!(chat.pid(), None);

    let (chat, _) = start(sh("kill -KILL $$"));
    assert!(exit(None, Some(libc::SIGKILL))(&until_exit(&chat)[0]));
}

#[test]
fn stop_closes_stdin_then_terms_then_kills() {
    // Exits on EOF: within the grace period.
    let (chat, _) = start(sh("while read -r l; do :; done"));
    let t = Instant::now();
    assert!(chat.stop(Duration::from_secs(5)));
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(chat.stop(Duration::from_secs(5)), "a second stop gives the same answer");
    assert_eq!(chat.pid(), None);

    // Deaf to EOF and to SIGTERM: SIGKILL after grace + 300 ms.
    let (chat, _) = start(sh("trap '' TERM; while :; do sleep 0.05; done"));
    let pid = chat.pid().unwrap() as i64;
    let t = Instant::now();
    assert!(!chat.stop(Duration::from_millis(100)));
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(gone(pid));
    assert!(!chat.send(b"{}".to_vec()));
}

#[test]
fn stop_ends_what_pi_started() {
    // Pi deaf to EOF and SIGTERM (SIGKILL ends it), and Pi that exits when its stdin closes.
    for tail in ["trap '' TERM; while :; do sleep 0.05; done", "while read -r l; do :; done"] {
        let (chat, _) = start(sh(&format!(
            r#"sleep 1000 & printf '{{"type":"child","pid":%s}}\n' $!; {tail}"#
        )));
        let ops = until(&chat, event_named("child"));
        let Op::Event { event, .. } = &ops[0] else { unreachable!() };
        let grandchild = event["pid"].as_i64().unwrap();
        assert!(!gone(grandchild));
        chat.stop(Duration::from_secs(2));
        let deadline = Instant::now() + Duration::from_secs(2);
        while !gone(grandchild) {
            assert!(Instant::now() < deadline, "sleep {grandchild} outlived stop ({tail})");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A Pi that died of itself leaves nothing behind in its group either.
#[test]
fn what_pi_left_running_ends_when_it_exits() {
    let (chat, _) = start(sh(r#"sleep 1000 >/dev/null 2>&1 & printf '{"type":"child","pid":%s}\n' $!; exit 7"#));
    let ops = until_exit(&chat);
    let Op::Event { event, .. } = &ops[0] else { panic!("{ops:?}") };
    let grandchild = event["pid"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !gone(grandchild) {
        assert!(Instant::now() < deadline, "sleep {grandchild} outlived Pi");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(exit(Some(7), None)(ops.last().unwrap()));
}

/// Writes to a Pi that closed its stdin, then to one that was killed. Run in a process of its
/// own with SIGPIPE at its default (death), as a host that never set it aside would have it.
#[test]
fn writing_to_a_dead_pi_fails_quietly() {
    const CHILD: &str = "PI_IDE_CHAT_SIGPIPE_DEFAULT";
    if std::env::var_os(CHILD).is_none() {
        let name = "chat::tests::writing_to_a_dead_pi_fails_quietly";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{:?}\n{text}{}", out.status, String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("1 passed"), "the test did not run in the child: {text}");
        return;
    }
    // SAFETY: this process runs this one test.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let (chat, _) = start(sh(r#"exec 0<&-; printf '{"type":"deaf"}\n'; sleep 5"#));
    until(&chat, event_named("deaf"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while chat.send(b"{\"type\":\"get_state\"}".to_vec()) {
        assert!(Instant::now() < deadline, "send never noticed the closed pipe");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (chat, _) = start(sh("while read -r l; do :; done"));
    assert!(chat.send_json(&json!({"type": "get_state"})));
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(chat.pid().unwrap() as i32, libc::SIGKILL) };
    until_exit(&chat);
    assert!(!chat.send_json(&json!({"type": "get_state"})));
    assert!(chat.stop(Duration::ZERO), "already gone");
}

#[test]
fn a_lua_that_does_not_drain_holds_pi_back() {
    let n = 3 * MAX_OPS;
    let script = format!("i=0; while [ $i -lt {n} ]; do printf '{{\"type\":\"e\",\"i\":%d}}\\n' $i; i=$((i+1)); done");
    let (chat, _) = start(sh(&script));
    let deadline = Instant::now() + Duration::from_secs(20);
    while chat.queued() < MAX_OPS {
        assert!(Instant::now() < deadline, "only {} queued", chat.queued());
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(chat.queued(), MAX_OPS, "the reader waits for room");
    assert!(chat.pid().is_some(), "Pi waits too");
    // Nothing was lost, and the order held.
    let ops = until_exit(&chat);
    let seen: Vec<i64> = ops.iter().filter_map(|op| match op {
        Op::Event { event, .. } => event["i"].as_i64(),
        _ => None,
    }).collect();
    assert_eq!(seen, (0..n as i64).collect::<Vec<_>>());
}

#[test]
fn wakes_are_rate_limited() {
    // About 2,000 deltas a second for a second, drained on every wake as Lua would.
    let d = delta("text_delta", 0, "x").replace('\n', "");
    let script = format!("j=0; while [ $j -lt 50 ]; do i=0; while [ $i -lt 40 ]; do {d}; i=$((i+1)); done; sleep 0.02; j=$((j+1)); done");
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let tx = std::sync::Mutex::new(tx);
    let chat = Chat::start(sh(&script), Box::new(move || {
        let _ = tx.lock().unwrap().send(());
    }))
    .unwrap();
    let t = Instant::now();
    let mut ops = Vec::new();
    while !matches!(ops.last(), Some(Op::Exit { .. })) {
        rx.recv_timeout(Duration::from_secs(20)).expect("a wake");
        ops.extend(chat.drain());
    }
    let frames = t.elapsed().as_millis() as u64 / 16 + 2;
    let wakes = chat.stats().wakes.load(Ordering::Relaxed);
    assert!(wakes <= frames, "{wakes} wakes in {frames} frames");
    assert_eq!(chat.stats().text_deltas.load(Ordering::Relaxed), 2000);
    assert!(ops.len() as u64 <= wakes + 1, "{} ops for {wakes} wakes", ops.len());
}

#[test]
fn spawn_failures_are_one_sentence() {
    let err = Chat::start(ChatOptions::new(vec!["/nonexistent/pi".into()]), Box::new(|| {})).err();
    assert_eq!(err.as_deref(), Some("cannot start pi (`/nonexistent/pi`): No such file or directory"));
    let mut opts = ChatOptions::new(vec!["sh".into()]);
    opts.cwd = Some("/nonexistent/folder".into());
    let err = Chat::start(opts, Box::new(|| {})).err().unwrap();
    assert!(err.contains("/nonexistent/folder does not exist"), "{err}");
}

#[test]
fn env_and_cwd_reach_pi() {
    let dir = crate::scratch_dir("chat-cwd");
    let mut opts = sh(r#"printf '{"type":"env","v":"%s","cwd":"%s","home":"%s"}\n' "$PI_CHAT_TEST" "$(pwd -P)" "$HOME""#);
    opts.cwd = Some(dir.clone());
    opts.env = vec![("PI_CHAT_TEST".into(), "yes".into())];
    let (chat, _) = start(opts);
    let ops = until_exit(&chat);
    let Op::Event { event, .. } = &ops[0] else { panic!("{ops:?}") };
    assert_eq!(event["v"], "yes");
    assert_eq!(event["cwd"], Value::from(dir.canonicalize().unwrap().to_string_lossy().as_ref()));
    assert_eq!(event["home"], Value::from(std::env::var("HOME").unwrap_or_default()), "inherited");
}
