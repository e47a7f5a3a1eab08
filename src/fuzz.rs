//! A fuzzer for the path from raw frame bytes to a dispatched request or an error: UTF-8,
//! JSON-RPC framing, MCP dispatch, tool argument checks, and openDiff's line splitting and
//! diffing. It needs no nightly toolchain: a seeded mutator over a corpus of nasty inputs,
//! run for a bounded time. `cargo test --lib fuzz` runs it briefly; `scripts/fuzz SECONDS`
//! runs it longer. It fails on a panic (the test harness catches it) or a hang (time bound).
#![cfg(test)]

use std::time::{Duration, Instant};


use crate::jsonrpc::{self, Incoming};
use crate::mcp::{self, Dispatch, Session};

/// Everything the server does with one frame before Lua sees it.
fn one_frame(bytes: &[u8], session: &mut Session) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match jsonrpc::parse(text) {
        Incoming::Request { id, method, params } => {
            let _ = id.to_value();
            match mcp::handle_request(session, &method, params) {
                Dispatch::Reply(outcome) => {
                    let frame = jsonrpc::outcome_frame(&id, &outcome);
                    if let Err(e) = serde_json::from_str::<&serde_json::value::RawValue>(&frame) {
                        panic!("not JSON ({e}): {frame:.300}");
                    }
                }
                Dispatch::Park { tool, args } => {
                    let _ = tool.abandon_context(&args);
                    let _ = tool.shape_result(args.clone());
                    if tool.name == "openDiff" {
                        let contents = args["new_file_contents"].as_str().unwrap_or_default();
                        let _ = crate::diff::stats_for(b"", contents);
                        let _ = crate::diff::endings(contents.as_bytes());
                    }
                }
            }
        }
        Incoming::Notification { method, .. } => {
            mcp::handle_notification(session, &method);
        }
        Incoming::Response { id, outcome } => {
            let _ = id.raw().parse::<u64>();
            let _ = jsonrpc::outcome_frame(&id, &outcome);
        }
        Incoming::Invalid { id, error } => {
            let frame = jsonrpc::error_frame(id.as_ref(), &error);
            if let Err(e) = serde_json::from_str::<&serde_json::value::RawValue>(&frame) {
                panic!("not JSON ({e}): {frame:.300}");
            }
        }
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
    let mut session = Session::default();
    for input in &corpus {
        one_frame(input, &mut session);
    }
    while start.elapsed() < budget {
        let base = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base);
        let t = Instant::now();
        one_frame(&input, &mut session);
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
