//! A fake ACP agent (agentclientprotocol.com) for tests and benchmarks of the chat: JSON-RPC
//! lines on stdin/stdout, no model. What a prompt does is in its first word:
//!
//! - `stream N [R]`: N agent_message_chunk of "cK " (K = 1..N; every tenth ends with a newline
//!   instead of a space), R a second (0 or none: at once).
//! - `edit PATH OLD NEW`: a tool_call, then a permission carrying the fragment (Claude Code's
//!   shape); allowed once, it writes the file itself (OLD replaced by NEW).
//! - `create PATH TEXT`: the same for a new file (`oldText: null`).
//! - `rewrite PATH TEXT [fail|other|link]`: `edit` of the whole file into TEXT (`|` for a line
//!   break); allowed, it writes TEXT, or: `fail` writes nothing (the call failed), `other`
//!   writes "other", `link` puts TEXT in PATH.elsewhere and a link to it in PATH's place.
//! - `unified PATH`: Copilot's shape: the fragment on the tool_call only, and a unified diff in
//!   the permission's rawInput that turns a line "two" into "TWO"; allowed, it writes that.
//! - `gemini PATH NEW`: Gemini CLI's: fs/read_text_file, a permission with the whole file before
//!   and after (NEW appended), then fs/write_text_file with the whole file.
//! - `mirror PATH TEXT`: opencode's shape: a permission with the whole file before ("" for a new
//!   one) and after (TEXT, `|` for a line break); allowed, it sends fs/write_text_file of TEXT
//!   and, without waiting for the answer, writes TEXT itself, then says the call completed (an
//!   allow that comes after a session/cancel is applied all the same).
//! - `write PATH TEXT`: fs/write_text_file only.
//! - `nulls`: a tool call whose arguments hold a JSON null (`move_path`), completed at once.
//! - `twice PATH1 PATH2`: a lying agent: fs/write_text_file of PATH1 ("first") and, while it
//!   waits, of PATH2 ("second") with the same request id (the answers are in the log).
//! - `lie PATH OLD NEW OTHER [late]`: a lying agent: `edit`'s permission (OLD replaced by NEW),
//!   but once allowed it writes OTHER instead of NEW; with `late`, it never says the call
//!   completed (only the turn's end shows it).
//! - `ask`: a permission with no change (an `execute` call).
//! - `ask_edit PATH`: a permission for an `edit` call whose change is in no shape a client knows.
//! - `shell SCRIPT`: runs SCRIPT with `sh -c` (an agent's shell tool: nothing asked, nothing
//!   reviewed).
//! - `withdraw PATH`: a permission carrying a new file, withdrawn with `$/cancel_request` 0.8 s
//!   later (the answer it then gets is reported).
//! - `crash`: a permission carrying a change, then "fake acp: crashed on purpose" on stderr and
//!   exit 3 without waiting.
//! - `malformed`: a line that is not JSON and one of 40 MiB, then "ok".
//!
//! `session/list` lists one earlier session ("old1", "Earlier work"); `session/load` replays a
//! question and its answer. A session announces one command (`/review`); each turn ends with a usage_update (1,200 of
//! 200,000 tokens, 0.01 USD), and a message saying how each question was answered ("allowed",
//! "rejected", "cancelled", "error: …", "content: …") and the stopReason (`cancelled` after a
//! session/cancel). Everything read is appended to `$FAKE_ACP_LOG` as a line, if it is set.
//!
//!   fake_acp_agent [--mode M]   (the session's first mode; "auto" edits without asking)

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

struct Agent {
    out: Mutex<std::io::Stdout>,
    waiting: Mutex<HashMap<u64, Sender<Value>>>,
    next: AtomicU64,
    cancelled: AtomicBool,
    log: Option<Mutex<std::fs::File>>,
}

impl Agent {
    fn write(&self, v: &Value) {
        let mut out = self.out.lock().unwrap();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    fn update(&self, update: Value) {
        self.write(&json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}}));
    }

    fn say(&self, text: &str) {
        self.update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}));
    }

    /// Sends a request and waits for its answer (the result, or {"error": …}).
    fn ask(&self, method: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, SeqCst);
        let (tx, rx) = channel();
        self.waiting.lock().unwrap().insert(id, tx);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.recv().unwrap_or(json!({"error": "stdin closed"}))
    }
}

const OPTIONS: &str = r#"[{"optionId":"yes","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always allow","kind":"allow_always"},{"optionId":"no","name":"Reject","kind":"reject_once"}]"#;

fn options() -> Value {
    serde_json::from_str(OPTIONS).unwrap()
}

/// What an answer to a permission was, in a word.
fn outcome(answer: &Value) -> String {
    match (answer.pointer("/outcome/outcome").and_then(Value::as_str), answer.pointer("/outcome/optionId").and_then(Value::as_str)) {
        (Some("selected"), Some("yes")) => "allowed".into(),
        (Some("selected"), Some("no")) => "rejected".into(),
        (Some("selected"), Some(other)) => format!("chose {other}"),
        (Some("cancelled"), _) => "cancelled".into(),
        _ => format!("answered {answer}"),
    }
}

fn permission(agent: &Agent, call: Value) -> String {
    outcome(&agent.ask("session/request_permission", json!({"sessionId": "s1", "toolCall": call, "options": options()})))
}

fn edit(agent: &Agent, path: &str, old: Option<&str>, new: &str) -> String {
    let diff = json!({"type": "diff", "path": path, "oldText": old, "newText": new});
    agent.update(json!({"sessionUpdate": "tool_call", "toolCallId": "e1", "title": format!("Edit {path}"), "kind": "edit", "status": "pending", "content": [diff]}));
    let said = permission(agent, json!({"toolCallId": "e1", "title": format!("Edit {path}"), "kind": "edit", "content": [diff]}));
    if said == "allowed" {
        let text = match old {
            None => new.to_owned(),
            Some(old) => std::fs::read_to_string(path).unwrap_or_default().replacen(old, new, 1),
        };
        std::fs::write(path, text).unwrap();
        agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "completed"}));
    } else {
        agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "failed"}));
    }
    said
}

/// `rewrite`: the whole file into `text`, then what `then` says (see the top of this file).
fn rewrite(agent: &Agent, path: &str, text: &str, then: &str) -> String {
    let (old, new) = (std::fs::read_to_string(path).unwrap_or_default(), text.replace('|', "\n"));
    let diff = json!({"type": "diff", "path": path, "oldText": old, "newText": new});
    agent.update(json!({"sessionUpdate": "tool_call", "toolCallId": "r1", "title": format!("Edit {path}"), "kind": "edit", "status": "pending", "content": [diff]}));
    let said = permission(agent, json!({"toolCallId": "r1", "title": format!("Edit {path}"), "kind": "edit", "content": [diff]}));
    let status = match then {
        _ if said != "allowed" || then == "fail" => "failed",
        "other" => {
            std::fs::write(path, "other\n").unwrap();
            "completed"
        }
        "link" => {
            let elsewhere = format!("{path}.elsewhere");
            std::fs::write(&elsewhere, &new).unwrap();
            std::fs::remove_file(path).unwrap();
            std::os::unix::fs::symlink(&elsewhere, path).unwrap();
            "completed"
        }
        _ => {
            std::fs::write(path, &new).unwrap();
            "completed"
        }
    };
    agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "r1", "status": status}));
    said
}

/// `edit`'s permission, but once allowed the file gets `other` instead of `new`.
fn lie(agent: &Agent, path: &str, old: &str, new: &str, other: &str, late: bool) -> String {
    let diff = json!({"type": "diff", "path": path, "oldText": old, "newText": new});
    agent.update(json!({"sessionUpdate": "tool_call", "toolCallId": "l1", "title": format!("Edit {path}"), "kind": "edit", "status": "pending", "content": [diff]}));
    let said = permission(agent, json!({"toolCallId": "l1", "title": format!("Edit {path}"), "kind": "edit", "content": [diff]}));
    if said == "allowed" {
        let text = std::fs::read_to_string(path).unwrap_or_default().replacen(old, other, 1);
        std::fs::write(path, text).unwrap();
        if !late {
            agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "l1", "status": "completed"}));
        }
    }
    said
}

/// Two writes with the same request id, the second while the first waits for the user.
fn twice(agent: &Agent, first: &str, second: &str) -> String {
    const ID: u64 = 7777;
    let (tx, rx) = channel();
    agent.waiting.lock().unwrap().insert(ID, tx);
    for (path, text) in [(first, "first\n"), (second, "second\n")] {
        agent.write(&json!({"jsonrpc": "2.0", "id": ID, "method": "fs/write_text_file", "params": {"sessionId": "s1", "path": path, "content": text}}));
    }
    let answer = rx.recv().unwrap_or(json!({"error": "stdin closed"}));
    format!("twice: {answer}")
}

fn unified(agent: &Agent, path: &str) -> String {
    let fragment = json!({"type": "diff", "path": path, "oldText": "two", "newText": "TWO"});
    agent.update(json!({"sessionUpdate": "tool_call", "toolCallId": "u1", "title": "Edit", "kind": "edit", "status": "pending", "content": [fragment]}));
    let diff = "--- a\n+++ b\n@@ -2,1 +2,1 @@\n-two\n+TWO\n";
    let said = permission(agent, json!({"toolCallId": "u1", "title": "Edit", "kind": "edit", "rawInput": {"fileName": path, "diff": diff}}));
    if said == "allowed" {
        let text = std::fs::read_to_string(path).unwrap_or_default().replacen("two", "TWO", 1);
        std::fs::write(path, text).unwrap();
    }
    said
}

/// A permission carrying a change to `path`, withdrawn ($/cancel_request) a moment later.
fn withdraw(agent: &Arc<Agent>, path: &str) -> String {
    let id = agent.next.load(SeqCst);
    let a = agent.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        a.write(&json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}}));
    });
    let diff = json!({"type": "diff", "path": path, "oldText": null, "newText": "w\n"});
    let answer = agent.ask("session/request_permission", json!({"sessionId": "s1", "toolCall": {"toolCallId": "w1", "title": "Write", "content": [diff]}, "options": options()}));
    format!("withdrawn, answered {answer}")
}

fn gemini(agent: &Agent, path: &str, new: &str) -> String {
    let read = agent.ask("fs/read_text_file", json!({"sessionId": "s1", "path": path}));
    let Some(before) = read.get("content").and_then(Value::as_str) else {
        return format!("read failed: {read}");
    };
    let after = format!("{before}{new}");
    let diff = json!({"type": "diff", "path": path, "oldText": before, "newText": after});
    let said = permission(agent, json!({"toolCallId": "g1", "title": "WriteFile", "kind": "edit", "content": [diff]}));
    if said != "allowed" {
        return said;
    }
    let wrote = agent.ask("fs/write_text_file", json!({"sessionId": "s1", "path": path, "content": after}));
    format!("{said}, write: {wrote}")
}

/// `mirror`: see the top of this file.
fn mirror(agent: &Agent, path: &str, text: &str) -> String {
    let (old, new) = (std::fs::read_to_string(path).unwrap_or_default(), text.replace('|', "\n"));
    let diff = json!({"type": "diff", "path": path, "oldText": old, "newText": new});
    let said = permission(agent, json!({"toolCallId": "m1", "title": path, "kind": "edit", "content": [diff]}));
    if said != "allowed" {
        agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "m1", "status": "failed"}));
        return said;
    }
    let id = agent.next.fetch_add(1, SeqCst);
    let (tx, rx) = channel();
    agent.waiting.lock().unwrap().insert(id, tx);
    agent.write(&json!({"jsonrpc": "2.0", "id": id, "method": "fs/write_text_file", "params": {"sessionId": "s1", "path": path, "content": new}}));
    std::fs::write(path, &new).unwrap();
    agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "m1", "status": "completed"}));
    let answer = rx.recv().unwrap_or(json!({"error": "stdin closed"}));
    format!("{said}, mirror: {answer}")
}

fn stream(agent: &Agent, n: u64, rate: u64) {
    let start = std::time::Instant::now();
    for k in 1..=n {
        if agent.cancelled.load(SeqCst) {
            return;
        }
        if rate > 0 {
            let due = start + Duration::from_micros(k * 1_000_000 / rate);
            std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
        }
        // Every tenth ends a line, as a model's text does.
        agent.say(&format!("c{k}{}", if k % 10 == 0 { "\n" } else { " " }));
    }
}

/// Runs `script` with `sh -c` in our folder, as an agent's shell tool does: no question asked.
fn shell(agent: &Arc<Agent>, script: &str) -> String {
    let call = json!({"sessionUpdate": "tool_call", "toolCallId": "sh1", "title": script, "kind": "execute", "status": "in_progress"});
    agent.update(call);
    let ok = std::process::Command::new("sh").arg("-c").arg(script).status().is_ok_and(|s| s.success());
    agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "sh1", "status": if ok { "completed" } else { "failed" }}));
    format!("shell: {}", if ok { "done" } else { "failed" })
}

fn turn(agent: &Arc<Agent>, text: &str) -> String {
    let w: Vec<&str> = text.split_whitespace().collect();
    let arg = |i: usize| w.get(i).copied().unwrap_or_default();
    match arg(0) {
        "stream" => {
            stream(agent, arg(1).parse().unwrap_or(10), arg(2).parse().unwrap_or(0));
            String::new()
        }
        "edit" => edit(agent, arg(1), Some(arg(2)), arg(3)),
        "create" => edit(agent, arg(1), None, &format!("{}\n", arg(2))),
        "rewrite" => rewrite(agent, arg(1), arg(2), arg(3)),
        "unified" => unified(agent, arg(1)),
        "gemini" => gemini(agent, arg(1), &format!("{}\n", arg(2))),
        "mirror" => mirror(agent, arg(1), arg(2)),
        "nulls" => {
            agent.update(json!({"sessionUpdate": "tool_call", "toolCallId": "n1", "title": "Move", "kind": "move", "status": "in_progress", "rawInput": {"path": "/tmp/a", "move_path": null}}));
            agent.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "n1", "status": "completed"}));
            String::new()
        }
        "write" => {
            let wrote = agent.ask("fs/write_text_file", json!({"sessionId": "s1", "path": arg(1), "content": format!("{}\n", arg(2))}));
            format!("write: {wrote}")
        }
        "ask" => permission(agent, json!({"toolCallId": "x1", "title": "Run make", "kind": "execute", "rawInput": {"command": "make"}})),
        "ask_edit" => permission(agent, json!({"toolCallId": "x2", "title": format!("Patch {}", arg(1)), "kind": "edit", "rawInput": {"patch": "*** Begin Patch"}})),
        "twice" => twice(agent, arg(1), arg(2)),
        "lie" => lie(agent, arg(1), arg(2), arg(3), arg(4), arg(5) == "late"),
        "shell" => shell(agent, text.trim_start().trim_start_matches("shell").trim()),
        "withdraw" => withdraw(agent, arg(1)),
        "crash" => {
            let diff = json!({"type": "diff", "path": arg(1), "oldText": null, "newText": "x\n"});
            agent.write(&json!({"jsonrpc": "2.0", "id": 999, "method": "session/request_permission",
                "params": {"sessionId": "s1", "toolCall": {"toolCallId": "c1", "content": [diff]}, "options": options()}}));
            std::thread::sleep(Duration::from_millis(300));
            eprintln!("fake acp: crashed on purpose");
            std::process::exit(3);
        }
        "malformed" => {
            let mut out = agent.out.lock().unwrap();
            let _ = writeln!(out, "this is not json");
            let _ = writeln!(out, "{{\"x\": \"{}\"}}", "y".repeat(40 << 20));
            drop(out);
            "ok".into()
        }
        _ => format!("you said {text}"),
    }
}

fn prompt(agent: Arc<Agent>, id: Value, params: Value) {
    std::thread::spawn(move || {
        agent.cancelled.store(false, SeqCst);
        let text = params.pointer("/prompt/0/text").and_then(Value::as_str).unwrap_or_default().to_owned();
        let said = turn(&agent, &text);
        // A question answered `cancelled` means a session/cancel is on its way (a client may
        // send it after the answers): the turn ends as cancelled once it is read.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while said.starts_with("cancelled") && !agent.cancelled.load(SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !said.is_empty() {
            agent.say(&format!("\n[{said}]"));
        }
        agent.update(json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": {"amount": 0.01, "currency": "USD"}}));
        let reason = if agent.cancelled.load(SeqCst) { "cancelled" } else { "end_turn" };
        agent.write(&json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": reason}}));
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.iter().position(|a| a == "--mode").and_then(|i| args.get(i + 1)).cloned().unwrap_or("default".into());
    let log = std::env::var_os("FAKE_ACP_LOG").and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
    let agent = Arc::new(Agent {
        out: Mutex::new(std::io::stdout()),
        waiting: Mutex::default(),
        next: AtomicU64::new(1),
        cancelled: AtomicBool::new(false),
        log: log.map(Mutex::new),
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Some(f) = &agent.log {
            let _ = writeln!(f.lock().unwrap(), "{line}");
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        handle(&agent, msg, &mode);
    }
    // stdin closed: whatever waits for an answer gets none.
    agent.waiting.lock().unwrap().clear();
}

fn handle(agent: &Arc<Agent>, msg: Value, mode: &str) {
    let method = msg.get("method").and_then(Value::as_str).unwrap_or_default();
    let id = msg.get("id").cloned();
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let reply = |result: Value| agent.write(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match (method, &id) {
        ("", Some(Value::Number(n))) => {
            let waiter = agent.waiting.lock().unwrap().remove(&n.as_u64().unwrap_or(0));
            let answer = msg.get("result").cloned().unwrap_or_else(|| json!({"error": msg.get("error")}));
            if let Some(w) = waiter {
                let _ = w.send(answer);
            }
        }
        ("initialize", _) => reply(json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}, "authMethods": []})),
        ("session/new", _) => {
            reply(json!({"sessionId": "s1", "modes": {"currentModeId": mode,
                "availableModes": [{"id": "default", "name": "Default"}, {"id": "auto", "name": "Auto"}]}}));
            agent.update(json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "review", "description": "Review the changes"}]}));
        }
        ("session/set_mode", _) => {
            agent.update(json!({"sessionUpdate": "current_mode_update", "currentModeId": params["modeId"]}));
            reply(json!({}))
        }
        ("session/list", _) => reply(json!({"sessions": [{"sessionId": "old1", "cwd": params["cwd"], "title": "Earlier work"}]})),
        ("session/load", _) => {
            agent.update(json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "an earlier question"}}));
            agent.update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "an earlier answer"}}));
            reply(json!({}))
        }
        ("session/prompt", Some(id)) => prompt(agent.clone(), id.clone(), params),
        ("session/cancel", None) => agent.cancelled.store(true, SeqCst),
        (_, Some(_)) => agent.write(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown"}})),
        _ => {}
    }
}
