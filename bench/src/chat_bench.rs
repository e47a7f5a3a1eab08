//! The chat's numbers (issue: Pi inside Neovim): while Pi streams 2,000 text deltas a second
//! into the chat, and keys are typed into another window, how long is the main loop ever
//! stalled, and what does one drawn delta cost it. Pi is played by `fake_pi_rpc` (the test
//! kit's fake, pacing its deltas on a clock). Compared with the way a pure-Lua plugin reads Pi:
//! jobstart's on_stdout, vim.json.decode per line, one nvim_buf_set_text per delta.

use std::path::Path;
use std::time::Duration;

use pi_ide_testkit::nvim::{plugin_root, Nvim, Options};
use serde_json::json;

/// One run's numbers: longest stall and p99 of the 1 ms timer's lateness (ms), main-thread
/// time per delta (µs), draws, deltas.
pub struct Stream {
    pub longest_ms: f64,
    pub p99_ms: f64,
    pub per_delta_us: f64,
    pub draws: u64,
    pub deltas: u64,
    /// The longest single drain-and-draw of ours (ms); 0 for the pure-Lua way.
    pub longest_draw_ms: f64,
}

fn stalls(nvim: &Nvim) -> (f64, f64) {
    let v = nvim.lua("__s.timer:stop() __s.timer:close() table.sort(__s.gaps) return { __s.gaps[#__s.gaps], __s.gaps[math.floor(#__s.gaps * 0.99)] }");
    (v[0].as_f64().unwrap_or(0.0).max(0.0), v[1].as_f64().unwrap_or(0.0).max(0.0))
}

/// The numbers of a stream our core carried: the stalls, then the chat process's own counts
/// (`process` a Lua expression for it).
fn ours_of(nvim: &Nvim, process: &str) -> Stream {
    let (longest_ms, p99_ms) = stalls(nvim);
    let s = nvim.lua(&format!("return require('pi-ide.features.chat.process').stats({process})"));
    let deltas = s["text_deltas"].as_u64().unwrap();
    Stream {
        longest_ms,
        p99_ms,
        per_delta_us: s["busy_ns"].as_f64().unwrap() / 1e3 / deltas as f64,
        draws: s["lua_drains"].as_u64().unwrap(),
        deltas,
        longest_draw_ms: s["longest_ns"].as_f64().unwrap() / 1e6,
    }
}

/// Types into the other window while Pi streams (as the user would), until `done` is true.
fn type_until(nvim: &Nvim, done: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !nvim.lua(&format!("return {done}")).as_bool().unwrap_or(false) {
        assert!(std::time::Instant::now() < deadline, "the stream did not end");
        nvim.request("nvim_input", vec!["ihello world<Esc>".into()]).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn neovim(fake: &Path, deltas: u64, rate: u64) -> Nvim {
    let setup = format!(
        "require('pi-ide').setup({{ terminal = {{ agents = {{ pi = {{ cmd = {{ {:?}, '--deltas', '{deltas}', '--rate', '{rate}' }} }} }} }} }})",
        fake.display().to_string()
    );
    let nvim = Nvim::start_with(Options { after: Some(setup), ..Default::default() });
    nvim.command("edit typed.txt").unwrap();
    nvim
}

/// Ours: the core reads and parses, coalesces deltas, wakes Lua at most once a frame.
pub fn ours(fake: &Path, deltas: u64, rate: u64) -> Stream {
    let nvim = neovim(fake, deltas, rate);
    nvim.command("PiIde chat").unwrap();
    nvim.command("stopinsert | wincmd t").unwrap();
    nvim.wait_for("require('pi-ide.features.chat').running() and require('pi-ide.features.chat').info().model ~= nil", Duration::from_secs(30));
    nvim.t("bench.stall_timer", json!([]));
    nvim.lua("require('pi-ide.features.chat').send('go')");
    type_until(&nvim, &format!("require('pi-ide.features.chat.view').text():find('d{deltas} ') ~= nil and require('pi-ide.features.chat').status() == ''"));
    ours_of(&nvim, "require('pi-ide.features.chat.process').current()")
}

/// The pure-Lua way, for comparison: every line decoded and every delta drawn on the main loop.
pub fn pure_lua(fake: &Path, deltas: u64, rate: u64) -> Stream {
    let nvim = neovim(fake, deltas, rate);
    nvim.t("bench.pure_lua_chat", json!([fake.display().to_string(), deltas.to_string(), rate.to_string()]));
    nvim.t("bench.stall_timer", json!([]));
    nvim.lua(r#"vim.fn.chansend(__p.job, vim.json.encode({ type = "prompt", message = "go", id = "1" }) .. "\n")"#);
    type_until(&nvim, "__p.done");
    let (longest_ms, p99_ms) = stalls(&nvim);
    let v = nvim.lua("return { __p.busy, __p.n, __p.draws }");
    let n = v[1].as_u64().unwrap();
    Stream {
        longest_ms,
        p99_ms,
        per_delta_us: v[0].as_f64().unwrap() / 1e3 / n as f64,
        draws: v[2].as_u64().unwrap(),
        deltas: n,
        longest_draw_ms: 0.0,
    }
}

/// An ACP agent streaming `chunks` agent_message_chunks at `rate` a second into its chat (the
/// fake `fake_acp_agent`), keys typed in another window meanwhile. Also the Neovim's RSS
/// added by opening the chat (KiB), its agent's memory being its own process's.
pub fn acp(fake: &Path, chunks: u64, rate: u64) -> (Stream, f64) {
    let setup = format!(
        "require('pi-ide').setup({{ chat = {{ agents = {{ fake = {{ cmd = {{ {:?} }}, label = 'Fake' }} }} }} }})",
        fake.display().to_string()
    );
    let nvim = Nvim::start_with(Options { after: Some(setup), ..Default::default() });
    nvim.command("edit typed.txt").unwrap();
    nvim.wait_for("require('pi-ide.core.server').running()", Duration::from_secs(30));
    let before = rss_after_gc(&nvim);
    nvim.command("PiIde chat fake").unwrap();
    nvim.command("stopinsert | wincmd t").unwrap();
    let chat = "require('pi-ide.features.chat.acp').get('fake')";
    nvim.wait_for(&format!("{chat}.session ~= nil"), Duration::from_secs(30));
    let added = rss_after_gc(&nvim) - before;
    nvim.t("bench.stall_timer", json!([]));
    nvim.lua(&format!("{chat}:send('stream {chunks} {rate}')"));
    let text = "require('pi-ide.features.chat.view').of('fake').text()";
    type_until(&nvim, &format!("{text}:find('c{chunks}%s') ~= nil and {chat}.state == 'idle'"));
    (ours_of(&nvim, &format!("{chat}.proc")), added)
}

/// Neovim's VmRSS (KiB) after a full garbage collection.
fn rss_after_gc(nvim: &Nvim) -> f64 {
    nvim.lua("collectgarbage('collect')");
    std::thread::sleep(Duration::from_millis(300));
    let status = std::fs::read_to_string(format!("/proc/{}/status", nvim.pid())).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

pub fn fake_acp() -> std::path::PathBuf {
    plugin_root().join("target/release/fake_acp_agent")
}

pub fn fake_pi() -> std::path::PathBuf {
    plugin_root().join("target/release/fake_pi_rpc")
}
