//! A fake `pi --mode rpc`, for benchmarks and failure tests of a client of Pi's RPC mode: JSON
//! command lines on stdin, JSON records on stdout, the shapes Pi 0.87 gives (see the RPC and
//! JSON modes' pages of Pi's documentation), and no model: every prompt is answered by a text
//! streamed at a fixed rate.
//!
//!   fake_pi_rpc [--deltas N] [--rate R] [--tool] [--malformed] [--exit-after-deltas K]
//!               [--startup-ms MS] [--start-when PATH]
//!
//! - `--deltas N` (100): text_delta records per answer, each a few words ("d7 lorem ipsum "; every
//!   tenth ends with a newline instead of a space), contentIndex 0.
//! - `--rate R` (50): deltas per second, paced on a schedule (delta i at start + i/R, slept and
//!   then spun for the last half millisecond), so that the rate holds whatever the client does.
//!   0 means as fast as possible.
//! - `--tool`: before the text, one call of a `bash` tool: the assistant message with the call,
//!   tool_execution_start, 50 tool_execution_update (each with the whole output so far, as Pi's
//!   bash gives it, 2 more lines each time), tool_execution_end with 100 lines, the toolResult
//!   message, turn_end, turn_start. The updates come in a burst, unpaced.
//! - `--malformed`: a line that is not JSON on stdout, after message_start of each answer.
//! - `--exit-after-deltas K` (K >= 1): right after the K-th delta, "fake pi: crashed on purpose" on stderr and exit 3.
//! - `--startup-ms MS` (0): wait this long before reading stdin (Pi takes about a second).
//! - `--start-when PATH`: read stdin only once PATH exists (a start a test ends on cue).
//! - Pi's own options a launcher may pass are accepted and ignored: `--mode X`, `-e X`,
//!   `--extension X`, `--session X`, `--session-dir X`, `--name X`, `--provider X`,
//!   `--model X`, `--continue`, `--no-session`.
//!
//! Every command gets a `response` (its id and command, success true; data for get_state,
//! get_messages, get_available_models, get_available_thinking_levels, get_session_stats,
//! get_commands, get_last_assistant_text, export_html, new_session, switch_session); a line
//! that is not JSON gets Pi's `{"type":"response","command":"parse","success":false,...}`.
//! A `prompt` (when idle) streams: agent_start, turn_start, the user message (message_start,
//! message_end), message_start of the assistant, text_start, the deltas, text_end, message_end
//! (stopReason "stop"), turn_end, agent_end, agent_settled. While it streams, a `prompt` with
//! `streamingBehavior` "steer" or "followUp" (or a `steer`/`follow_up` command) is queued
//! (queue_update) and answered in the same run after the current answer, as Pi does; a `prompt`
//! without it fails as Pi's does. `abort` stops the deltas: message_end with stopReason
//! "aborted", turn_end, agent_end, agent_settled, then the abort's response (unlike Pi, it drops
//! what was queued; `clear_queue` returns and clears the queue as Pi's does). End of stdin: exit 0.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

#[derive(Clone)]
struct Opts {
    deltas: usize,
    rate: f64,
    tool: bool,
    malformed: bool,
    exit_after: Option<usize>,
    startup_ms: u64,
    start_when: Option<String>,
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "fake pi: {msg}\nusage: fake_pi_rpc [--deltas N] [--rate R] [--tool] [--malformed] \
         [--exit-after-deltas K] [--startup-ms MS] [--start-when PATH]"
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        deltas: 100,
        rate: 50.0,
        tool: false,
        malformed: false,
        exit_after: None,
        startup_ms: 0,
        start_when: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} wants a value")))
        };
        let num = |name: &str, v: String| -> f64 {
            v.parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .unwrap_or_else(|| usage(&format!("{name}: not a number: {v}")))
        };
        match a.as_str() {
            "--deltas" => o.deltas = num("--deltas", value("--deltas")) as usize,
            "--rate" => o.rate = num("--rate", value("--rate")),
            "--tool" => o.tool = true,
            "--malformed" => o.malformed = true,
            "--exit-after-deltas" => {
                o.exit_after =
                    Some(num("--exit-after-deltas", value("--exit-after-deltas")) as usize)
            }
            "--startup-ms" => o.startup_ms = num("--startup-ms", value("--startup-ms")) as u64,
            "--start-when" => o.start_when = Some(value("--start-when")),
            // Pi's own options, as a launcher passes them: ignored.
            "--mode" | "-e" | "--extension" | "--session" | "--session-dir" | "--name" | "-n"
            | "--provider" | "--model" => {
                value(&a);
            }
            "--continue" | "-c" | "--no-session" => {}
            _ => usage(&format!("unknown option {a}")),
        }
    }
    o
}

/// Where the run is: what the reader of stdin and the streaming thread share.
#[derive(Default)]
struct Run {
    streaming: bool,
    /// Queued messages: (true for steering, text).
    queue: VecDeque<(bool, String)>,
    /// The ids of `abort` commands waiting for the run to settle.
    aborts: Vec<Value>,
    /// The conversation so far (user, assistant and toolResult messages).
    messages: Vec<Value>,
    session_name: Option<String>,
}

struct Fake {
    opts: Opts,
    out: Mutex<std::io::Stdout>,
    run: Mutex<Run>,
    abort: AtomicBool,
    session_file: String,
    session_id: String,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn zero_usage() -> Value {
    json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

fn model() -> Value {
    json!({"id": "fake-model", "name": "Fake", "api": "openai-completions", "provider": "fake",
        "baseUrl": "http://127.0.0.1:9/v1", "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 16384})
}

fn assistant(content: Value, stop: &str, timestamp: u64) -> Value {
    json!({"role": "assistant", "content": content, "api": "openai-completions",
        "provider": "fake", "model": "fake-model", "usage": zero_usage(),
        "stopReason": stop, "timestamp": timestamp})
}

/// The text of delta `i` (0-based): a few words, a newline every tenth.
fn delta_text(i: usize) -> String {
    let end = if i % 10 == 9 { "\n" } else { " " };
    format!("d{} lorem ipsum{end}", i + 1)
}

/// Waits until `deadline`: sleeps, then spins the last half millisecond. False if aborted.
fn pace(fake: &Fake, deadline: Instant) -> bool {
    loop {
        if fake.abort.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        let left = deadline - now;
        if left > Duration::from_micros(500) {
            std::thread::sleep((left - Duration::from_micros(500)).min(Duration::from_millis(5)));
        } else {
            std::hint::spin_loop();
        }
    }
}

impl Fake {
    /// Writes one record as one line. A client that closed our stdout ends us.
    fn emit(&self, v: &Value) {
        self.raw(&v.to_string());
    }

    fn raw(&self, line: &str) {
        let mut out = self.out.lock().unwrap();
        let ok = out
            .write_all(line.as_bytes())
            .and_then(|_| out.write_all(b"\n"))
            .and_then(|_| out.flush());
        if ok.is_err() {
            std::process::exit(0);
        }
    }

    fn respond(&self, id: &Value, command: &str, data: Option<Value>) {
        let mut r = json!({"type": "response", "command": command, "success": true});
        if !id.is_null() {
            r["id"] = id.clone();
        }
        if let Some(d) = data {
            r["data"] = d;
        }
        self.emit(&r);
    }

    fn fail(&self, id: &Value, command: &str, error: &str) {
        let mut r =
            json!({"type": "response", "command": command, "success": false, "error": error});
        if !id.is_null() {
            r["id"] = id.clone();
        }
        self.emit(&r);
    }

    fn queue_update(&self, run: &Run) {
        let (steering, follow): (Vec<_>, Vec<_>) = run.queue.iter().partition(|(s, _)| *s);
        let texts =
            |v: Vec<&(bool, String)>| v.into_iter().map(|(_, t)| t.clone()).collect::<Vec<_>>();
        self.emit(&json!({"type": "queue_update", "steering": texts(steering), "followUp": texts(follow)}));
    }

    fn state(&self) -> Value {
        let run = self.run.lock().unwrap();
        let mut s = json!({"model": model(), "thinkingLevel": "off", "isStreaming": run.streaming,
            "isCompacting": false, "steeringMode": "one-at-a-time", "followUpMode": "one-at-a-time",
            "sessionFile": self.session_file, "sessionId": self.session_id,
            "autoCompactionEnabled": true, "messageCount": run.messages.len(),
            "pendingMessageCount": run.queue.len()});
        if let Some(n) = &run.session_name {
            s["sessionName"] = json!(n);
        }
        s
    }

    fn stats(&self) -> Value {
        let run = self.run.lock().unwrap();
        let count = |role: &str| run.messages.iter().filter(|m| m["role"] == role).count();
        json!({"sessionFile": self.session_file, "sessionId": self.session_id,
            "userMessages": count("user"), "assistantMessages": count("assistant"),
            "toolCalls": count("toolResult"), "toolResults": count("toolResult"),
            "totalMessages": run.messages.len(),
            "tokens": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            "cost": 0, "contextUsage": {"tokens": 0, "contextWindow": 128000, "percent": 0}})
    }

    fn record(&self, message: &Value) {
        self.run.lock().unwrap().messages.push(message.clone());
    }

    /// One command line.
    fn command(self: &Arc<Self>, line: &str) {
        let cmd: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                self.fail(
                    &Value::Null,
                    "parse",
                    "Failed to parse command: not an object",
                );
                return;
            }
            Err(e) => {
                self.fail(
                    &Value::Null,
                    "parse",
                    &format!("Failed to parse command: {e}"),
                );
                return;
            }
        };
        let id = cmd["id"].clone();
        let kind = cmd["type"].as_str().unwrap_or("").to_owned();
        match kind.as_str() {
            "extension_ui_response" => {}
            "prompt" | "steer" | "follow_up" => {
                let text = cmd["message"].as_str().unwrap_or("").to_owned();
                let mut run = self.run.lock().unwrap();
                if run.streaming {
                    let steer = match (kind.as_str(), cmd["streamingBehavior"].as_str()) {
                        ("steer", _) | ("prompt", Some("steer")) => true,
                        ("follow_up", _) | ("prompt", Some("followUp")) => false,
                        _ => {
                            drop(run);
                            self.fail(&id, &kind, "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.");
                            return;
                        }
                    };
                    run.queue.push_back((steer, text));
                    self.queue_update(&run);
                    drop(run);
                    self.respond(&id, &kind, None);
                } else if kind == "prompt" {
                    run.streaming = true;
                    self.abort.store(false, Ordering::SeqCst);
                    drop(run);
                    self.respond(&id, &kind, None);
                    let me = self.clone();
                    std::thread::spawn(move || me.agent_run(text));
                } else {
                    // Pi queues a steer or follow-up when idle too; here it simply starts nothing.
                    drop(run);
                    self.respond(&id, &kind, None);
                }
            }
            "abort" => {
                let mut run = self.run.lock().unwrap();
                if run.streaming {
                    run.aborts.push(id);
                    self.abort.store(true, Ordering::SeqCst);
                } else {
                    drop(run);
                    self.respond(&id, &kind, None);
                }
            }
            "clear_queue" => {
                let mut run = self.run.lock().unwrap();
                let (steering, follow): (Vec<_>, Vec<_>) =
                    run.queue.drain(..).partition(|(s, _)| *s);
                let texts =
                    |v: Vec<(bool, String)>| v.into_iter().map(|(_, t)| t).collect::<Vec<_>>();
                let data = json!({"steering": texts(steering), "followUp": texts(follow)});
                self.queue_update(&run);
                drop(run);
                self.respond(&id, &kind, Some(data))
            }
            "get_state" => self.respond(&id, &kind, Some(self.state())),
            "get_messages" => {
                let messages = self.run.lock().unwrap().messages.clone();
                self.respond(&id, &kind, Some(json!({ "messages": messages })))
            }
            "get_available_models" => self.respond(&id, &kind, Some(json!({"models": [model()]}))),
            "get_available_thinking_levels" => {
                self.respond(&id, &kind, Some(json!({"levels": ["off"]})))
            }
            "get_session_stats" => self.respond(&id, &kind, Some(self.stats())),
            "get_commands" => self.respond(&id, &kind, Some(json!({"commands": []}))),
            "get_last_assistant_text" => {
                let run = self.run.lock().unwrap();
                let text = run
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m["role"] == "assistant")
                    .and_then(|m| m["content"][0]["text"].as_str())
                    .map(str::to_owned);
                drop(run);
                self.respond(&id, &kind, Some(json!({ "text": text })))
            }
            "export_html" => {
                let path = cmd["outputPath"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("pi-session-{}.html", self.session_id));
                self.respond(&id, &kind, Some(json!({ "path": path })))
            }
            "new_session" | "switch_session" => {
                if kind == "new_session" {
                    let mut run = self.run.lock().unwrap();
                    run.messages.clear();
                    run.session_name = None;
                }
                self.respond(&id, &kind, Some(json!({"cancelled": false})))
            }
            "set_session_name" => {
                let name = cmd["name"].as_str().unwrap_or("").to_owned();
                self.run.lock().unwrap().session_name = Some(name.clone());
                self.emit(&json!({"type": "session_info_changed", "name": name}));
                self.respond(&id, &kind, None)
            }
            _ => self.respond(&id, &kind, None),
        }
    }

    /// One run: the first prompt, then whatever was queued while it streamed.
    fn agent_run(self: Arc<Self>, first: String) {
        let mut generated: Vec<Value> = Vec::new();
        self.emit(&json!({"type": "agent_start"}));
        self.emit(&json!({"type": "turn_start"}));
        let mut text = first;
        let mut aborted;
        loop {
            let user = json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now_ms()});
            self.emit(&json!({"type": "message_start", "message": user}));
            self.emit(&json!({"type": "message_end", "message": user}));
            self.record(&user);
            generated.push(user);
            if self.opts.tool {
                self.tool_call(&mut generated);
            }
            let answer;
            (answer, aborted) = self.answer();
            self.record(&answer);
            generated.push(answer.clone());
            self.emit(&json!({"type": "turn_end", "message": answer, "toolResults": []}));
            if aborted {
                break;
            }
            let mut run = self.run.lock().unwrap();
            let Some((_, next)) = run.queue.pop_front() else {
                break;
            };
            self.emit(&json!({"type": "turn_start"}));
            self.queue_update(&run);
            drop(run);
            text = next;
        }
        self.emit(&json!({"type": "agent_end", "messages": generated, "willRetry": false}));
        // Settled and idle at once: a prompt read after this line starts a new run.
        let mut run = self.run.lock().unwrap();
        if aborted && !run.queue.is_empty() {
            // Unlike Pi (which goes on with them), an abort drops what was queued.
            run.queue.clear();
            self.queue_update(&run);
        }
        run.streaming = false;
        let aborts = std::mem::take(&mut run.aborts);
        self.emit(&json!({"type": "agent_settled"}));
        for id in aborts {
            self.respond(&id, "abort", None);
        }
    }

    /// The assistant's text, streamed. Returns the final message and whether it was aborted.
    fn answer(&self) -> (Value, bool) {
        let ts = now_ms();
        self.emit(
            &json!({"type": "message_start", "message": assistant(json!([]), "pending", ts)}),
        );
        if self.opts.malformed {
            self.raw("fake pi: this line is not JSON");
        }
        let update = |e: Value| json!({"type": "message_update", "usage": zero_usage(), "assistantMessageEvent": e});
        self.emit(&update(json!({"type": "text_start", "contentIndex": 0})));
        let mut full = String::new();
        let start = Instant::now();
        let mut aborted = false;
        for i in 0..self.opts.deltas {
            if self.opts.rate > 0.0 {
                let at = start + Duration::from_secs_f64(i as f64 / self.opts.rate);
                if !pace(self, at) {
                    aborted = true;
                    break;
                }
            } else if self.abort.load(Ordering::SeqCst) {
                aborted = true;
                break;
            }
            let d = delta_text(i);
            full.push_str(&d);
            self.emit(&update(
                json!({"type": "text_delta", "contentIndex": 0, "delta": d}),
            ));
            if self.opts.exit_after == Some(i + 1) {
                eprintln!("fake pi: crashed on purpose");
                std::process::exit(3);
            }
        }
        if !aborted && self.abort.load(Ordering::SeqCst) {
            aborted = true;
        }
        self.emit(&update(
            json!({"type": "text_end", "contentIndex": 0, "content": full}),
        ));
        let content = json!([{"type": "text", "text": full}]);
        let mut message = assistant(content, if aborted { "aborted" } else { "stop" }, ts);
        if aborted {
            message["errorMessage"] = json!("Request was aborted");
        }
        self.emit(&json!({"type": "message_end", "message": message}));
        (message, aborted)
    }

    /// One call of a `bash` tool, with 100 lines of output in 50 updates, and its turn's end.
    fn tool_call(&self, generated: &mut Vec<Value>) {
        let id = format!("call_fake_{}", now_ms());
        let args = json!({"command": "seq -f 'line %g' 1 100"});
        let call = json!({"type": "toolCall", "id": id, "name": "bash", "arguments": args});
        let ts = now_ms();
        self.emit(
            &json!({"type": "message_start", "message": assistant(json!([]), "pending", ts)}),
        );
        let update = |e: Value| json!({"type": "message_update", "usage": zero_usage(), "assistantMessageEvent": e});
        self.emit(&update(
            json!({"type": "toolcall_start", "contentIndex": 0, "id": id, "toolName": "bash"}),
        ));
        self.emit(&update(
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": args.to_string()}),
        ));
        self.emit(&update(
            json!({"type": "toolcall_end", "contentIndex": 0, "toolCall": call}),
        ));
        let message = assistant(json!([call]), "toolUse", ts);
        self.emit(&json!({"type": "message_end", "message": message}));
        self.record(&message);
        generated.push(message.clone());
        self.emit(&json!({"type": "tool_execution_start", "toolCallId": id, "toolName": "bash", "args": args}));
        let mut output = String::new();
        for u in 0..50 {
            for l in [2 * u + 1, 2 * u + 2] {
                output.push_str(&format!("line {l}\n"));
            }
            self.emit(&json!({"type": "tool_execution_update", "toolCallId": id, "toolName": "bash",
                "args": args, "partialResult": {"content": [{"type": "text", "text": output}], "details": {}}}));
        }
        let content = json!([{"type": "text", "text": output}]);
        self.emit(
            &json!({"type": "tool_execution_end", "toolCallId": id, "toolName": "bash",
            "result": {"content": content}, "isError": false}),
        );
        let result = json!({"role": "toolResult", "toolCallId": id, "toolName": "bash",
            "content": content, "isError": false, "timestamp": now_ms()});
        self.emit(&json!({"type": "message_start", "message": result}));
        self.emit(&json!({"type": "message_end", "message": result}));
        self.record(&result);
        generated.push(result.clone());
        self.emit(&json!({"type": "turn_end", "message": message, "toolResults": [result]}));
        self.emit(&json!({"type": "turn_start"}));
    }
}

fn main() {
    let opts = parse_opts();
    let pid = std::process::id();
    let fake = Arc::new(Fake {
        session_file: std::env::temp_dir()
            .join(format!("fake-pi-{pid}.jsonl"))
            .to_string_lossy()
            .into_owned(),
        session_id: format!("fake-{pid}"),
        opts,
        out: Mutex::new(std::io::stdout()),
        run: Mutex::new(Run::default()),
        abort: AtomicBool::new(false),
    });
    if fake.opts.startup_ms > 0 {
        std::thread::sleep(Duration::from_millis(fake.opts.startup_ms));
    }
    if let Some(path) = &fake.opts.start_when {
        while !std::path::Path::new(path).exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        fake.command(line);
    }
    // End of stdin: Pi shuts down; so do we.
    let _ = fake.out.lock().unwrap().flush();
    std::process::exit(0);
}
