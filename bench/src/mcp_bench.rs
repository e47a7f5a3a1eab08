//! Any MCP client's numbers, through the real `pi-ide-mcp` on stdio: getDiagnostics round trip
//! against the WebSocket path measured in the same run, the program's start to its first
//! answer, its resident memory, and what serving MCP clients costs Neovim with none connected.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use pi_ide_testkit::nvim::{plugin_root, Nvim, Options};
use serde_json::{json, Value};

struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Program {
    fn start(nvim: &Nvim) -> Program {
        let mut child = Command::new(plugin_root().join("target/release/pi-ide-mcp"))
            .current_dir(&nvim.cwd)
            .env("XDG_RUNTIME_DIR", nvim.home.join("run"))
            .env_remove("PI_IDE_NVIM")
            .env_remove("NVIM")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("target/release/pi-ide-mcp runs (cargo build --release)");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Program { child, stdin, stdout }
    }

    fn ask(&mut self, line: &str) -> Value {
        self.stdin.write_all(line.as_bytes()).and_then(|()| self.stdin.write_all(b"\n")).unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    }

    fn initialize(&mut self) -> Value {
        self.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"getDiagnostics","arguments":{}}}"#;

fn p50_p99(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

/// getDiagnostics round trips through the program and through the WebSocket, interleaved in
/// rounds so that both see the same machine: ((bridge p50, p99), (websocket p50, p99)).
fn roundtrip(nvim: &Nvim, n: usize) -> ((f64, f64), (f64, f64)) {
    let mut program = Program::start(nvim);
    program.initialize();
    let mut ws = nvim.peer();
    for _ in 0..100 {
        assert!(program.ask(CALL).get("result").is_some());
        ws.call_tool("getDiagnostics", json!({})).unwrap();
    }
    let (mut bridge, mut socket) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        program.ask(CALL);
        bridge.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        ws.call_tool("getDiagnostics", json!({})).unwrap();
        socket.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (p50_p99(bridge), p50_p99(socket))
}

/// From spawning the program to its answer to `initialize`, and to its first tool answer (which
/// finds Neovim and connects): medians of `runs`, in ms.
fn start_to_answer(nvim: &Nvim, runs: usize) -> (f64, f64) {
    let (mut init, mut first) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let mut p = Program::start(nvim);
        p.initialize();
        init.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(p.ask(CALL).get("result").is_some());
        first.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (p50_p99(init).0, p50_p99(first).0)
}

/// The program's resident memory after `calls` round trips, in KiB.
fn program_rss(nvim: &Nvim, rss_kib: fn(u32) -> f64, calls: usize) -> f64 {
    let mut p = Program::start(nvim);
    p.initialize();
    for _ in 0..calls {
        p.ask(CALL);
    }
    rss_kib(p.child.id())
}

/// Neovim's resident memory with MCP clients served (none connected) and not, each with a Pi
/// client: median of 3 pairs, in KiB.
fn neovim_rss(rss_kib: fn(u32) -> f64) -> (f64, f64) {
    let mut pairs: Vec<(f64, f64)> = (0..3)
        .map(|_| {
            let off = Nvim::start_with(Options { after: Some("require('pi-ide').setup({ mcp = false })".into()), ..Default::default() });
            let on = Nvim::start();
            let (_p, _q) = (off.peer(), on.peer());
            for n in [&off, &on] {
                n.lua("collectgarbage('collect')");
            }
            (rss_kib(off.pid()), rss_kib(on.pid()))
        })
        .collect();
    pairs.sort_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)));
    pairs[1]
}

/// The table's rows.
pub fn mcp_numbers(quick: bool, rss_kib: fn(u32) -> f64) -> Vec<String> {
    let nvim = Nvim::start();
    let ((b50, b99), (w50, w99)) = roundtrip(&nvim, if quick { 200 } else { 1000 });
    let (init, first) = start_to_answer(&nvim, if quick { 5 } else { 20 });
    let rss = program_rss(&nvim, rss_kib, 200);
    drop(nvim);
    let (off, on) = neovim_rss(rss_kib);
    vec![
        format!("| MCP clients: getDiagnostics round trip through pi-ide-mcp on stdio / over the WebSocket, same run | p50 {b50:.3} / {w50:.3} ms = {:.2}x, p99 {b99:.3} / {w99:.3} ms | ≤ 1.5x the WebSocket (p50) |", b50 / w50),
        format!("| MCP clients: pi-ide-mcp from its start to its answer to initialize (median) | {init:.1} ms (to its first tool answer, finding and connecting to Neovim: {first:.1} ms) | ≤ 20 ms |"),
        format!("| MCP clients: pi-ide-mcp's resident memory after 200 calls | {:.2} MiB | |", rss / 1024.0),
        format!("| MCP clients: Neovim's resident memory, served with none connected vs mcp = false | {:+.2} MiB ({:.1} vs {:.1} MiB) | unchanged |", (on - off) / 1024.0, on / 1024.0, off / 1024.0),
    ]
}
