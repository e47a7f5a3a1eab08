//! A fuzzer for everything a frame goes through before and after Lua: the real frame handler
//! (`dispatch::handle_text`: UTF-8, JSON-RPC framing, MCP dispatch, tool argument checks,
//! openDiff's staging and diffing, answers from the agent to our requests), then Lua's side
//! played with random answers (`Shared::respond`, well-formed or not). Every frame sent back
//! must be JSON, and an openDiff must never be answered with an error. It needs no nightly
//! toolchain: a seeded mutator over a corpus of nasty inputs, run for a bounded time.
//! `cargo test --lib fuzz` runs it briefly; `scripts/fuzz SECONDS` runs it longer. It fails on
//! a panic (the test harness catches it) or a hang (time bound).
#![cfg(test)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::state::{Settings, Shared};
use crate::protocol::tools::Verdict;
use crate::state::events::Event;
use crate::mcp::dispatch::handle_text;
use crate::mcp::methods::Session;
use crate::state::outbox::Outbound;

const CLIENT: u64 = 1;

/// The server's side of one client, as the connection task has it.
struct Harness {
    runtime: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    outbox: Arc<crate::state::outbox::Outbox>,
    session: Session,
    stage: std::path::PathBuf,
}

impl Harness {
    fn new() -> Harness {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let stage = std::env::temp_dir().join(format!("pi-ide-fuzz-{}", std::process::id()));
        let shared = Arc::new(Shared::new(Settings {
            max_message_size: 1 << 20,
            stage_dir: stage.clone(),
            ..Settings::default()
        }));
        let outbox = shared.clients.add(CLIENT, &crate::agents::pi::AGENT, None);
        shared.clients.mark_initialized(CLIENT, None, None);
        Harness {
            runtime,
            shared,
            outbox,
            session: Session::default(),
            stage,
        }
    }

    /// One frame through the real handler, then Lua's turn with `answer`; checks every frame
    /// that goes back to the client.
    fn frame(&mut self, bytes: &[u8], answer: Value) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        // Now and then a request of ours is in flight, so that answers from the agent match.
        let _ = self.shared.request("getSuggestions", &json!({}), None);
        // A call of openDiff is never answered with an error (it would let the write through).
        let open_diff = serde_json::from_str::<Value>(text).is_ok_and(|v| {
            v["method"] == "tools/call" && v["params"]["name"] == "openDiff" && v.get("id").is_some()
        });
        let check = |f: &str| check(f, open_diff);
        let replies = self.runtime.block_on(handle_text(
            text,
            CLIENT,
            &self.shared,
            &mut self.session,
        ));
        for r in &replies {
            check(r);
        }
        for event in self.shared.events.drain() {
            match event {
                Event::ToolCall { req, .. } => {
                    self.shared.respond(req, Ok(answer.clone()));
                }
                // The user decides: an accept of whatever text, or a rejection.
                Event::ReviewOpened(r) => {
                    let verdict = match answer[1].as_str() {
                        Some(text) if answer[0] == "FILE_SAVED" => Verdict::Accepted(text.to_owned(), None),
                        _ => Verdict::Rejected,
                    };
                    self.shared.decide(r.req, verdict);
                }
                _ => {}
            }
        }
        while let Some(out) = self.outbox.take(true) {
            if let Outbound::Frame(f) = out {
                check(&f);
            }
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.stage);
    }
}

/// A frame we send: JSON, and never an error for an openDiff (it would let the write through).
fn check(frame: &str, open_diff: bool) {
    // JSON by the grammar (an id is echoed byte for byte, so 1e999999 stays as it came).
    if let Err(e) = serde_json::from_str::<&serde_json::value::RawValue>(frame) {
        panic!("not JSON ({e}): {frame:.300}");
    }
    // An error that names the call (an id that is not null): the agent takes it as the answer.
    let is_error = serde_json::from_str::<Value>(frame)
        .map(|v| v.get("error").is_some() && !v["id"].is_null())
        .unwrap_or_else(|_| frame.contains("\"error\""));
    assert!(
        !(open_diff && is_error),
        "an openDiff answered with an error: {frame:.300}"
    );
}

/// What Lua might answer: the right shapes and wrong ones.
fn lua_answer(rng: &mut Rng) -> Value {
    match rng.below(7) {
        0 => json!(["FILE_SAVED", "x\n"]),
        1 => json!(["DIFF_REJECTED", "t"]),
        2 => json!({"file:///a": [{"message": "m"}]}),
        3 => json!("TAB_CLOSED"),
        4 => json!([1, {"x": null}]),
        5 => json!(null),
        _ => json!({}),
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let deep_obj = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"getDiagnostics","arguments":{{"uri":"x","n":{}1{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let texts: Vec<String> = vec![
        r#"{"jsonrpc":"2.0","id":"5f0c","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"pi-ide","version":"0.1.0"}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"getDiagnostics","arguments":{"uri":"file:///a%20b"}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"openDiff","arguments":{"old_file_path":"/x","new_file_path":"/x","new_file_contents":"a\r\nb\nc","tab_name":"t"}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"openFile","arguments":{"filePath":"/x","startLine":1e308,"endLine":-1}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"result":{"suggestions":["a"]}}"#.into(),
        r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32800,"message":"cancelled"}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        r#"{"jsonrpc":"2.0","id":null,"method":"nope"}"#.into(),
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1e999999,"method":"ping"}"#.into(),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\ud800\"}".into(),
        deep,
        deep_obj,
        String::new(),
    ];
    let mut out: Vec<Vec<u8>> = texts.into_iter().map(String::into_bytes).collect();
    out.push(vec![0xff, 0xfe, 0x7b]);
    out.push(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\x00\"}".to_vec());
    out
}

/// xorshift64*: a fixed seed makes a failure reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"true",
    b"-1",
    b"1e400",
    b"\\u0000",
    b"\\ud83d",
    b"\"jsonrpc\":\"2.0\"",
    b"\"id\":",
    b"\"method\":",
    b"\"params\":",
    b"\"tools/call\"",
    b"\"openDiff\"",
    b"\"arguments\":{}",
    b"\"name\":",
    b"\xf0\x9f\x98",
    b"\r\n",
    b"18446744073709551616",
];

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(5) {
            0 if !v.is_empty() => {
                let end = (at + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            _ => {
                let n = rng.below(8);
                let from = rng.below(v.len().max(1));
                let chunk: Vec<u8> = v.iter().skip(from).take(n).copied().collect();
                v.splice(at..at, chunk);
            }
        }
    }
    v
}

/// Runs for `budget`; returns how many inputs were tried.
pub fn run(budget: Duration, seed: u64) -> u64 {
    let corpus = corpus();
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let mut n = 0u64;
    let mut h = Harness::new();
    for input in &corpus {
        let answer = lua_answer(&mut rng);
        h.frame(input, answer);
    }
    while start.elapsed() < budget {
        let base = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base);
        let answer = lua_answer(&mut rng);
        let t = Instant::now();
        h.frame(&input, answer);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "hang on {:?}",
            String::from_utf8_lossy(&input)
        );
        n += 1;
    }
    n
}

#[test]
fn fuzz_frames_briefly() {
    let secs = std::env::var("PI_IDE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let seed = std::env::var("PI_IDE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let n = run(Duration::from_secs(secs), seed);
    eprintln!("fuzz: {n} inputs in {secs} s, seed {seed}, no panic, no hang");
    assert!(n > 1000, "the fuzzer barely ran ({n} inputs)");
}
