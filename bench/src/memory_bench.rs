//! What the plugin adds to Neovim's memory: with the server idle and with one agent connected as
//! Pi is (it has seen the cursor move and asked for the diagnostics). Private memory first, what
//! a user pays (pi_ide_testkit::nvim::private_kib); beside it the resident set, split into anonymous
//! memory and pages mapped from files (the library's code and read-only data, page cache the
//! kernel drops and reads again at will).

use std::time::Duration;

use pi_ide_testkit::nvim::{plugin_root, Nvim, Options};

/// KiB: private memory (what a user pays: pi_ide_testkit::nvim::private_kib), and the resident
/// set from `/proc/<pid>/status`, split into anonymous pages and pages mapped from files.
#[derive(Clone, Copy, Default)]
pub struct Rss {
    pub private: f64,
    pub total: f64,
    pub anon: f64,
    pub file: f64,
}

impl Rss {
    pub fn of(pid: u32) -> Rss {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = |key: &str| {
            let line = status.lines().find(|l| l.starts_with(key)).unwrap_or_default();
            line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        };
        let private = pi_ide_testkit::nvim::private_kib(pid) as f64;
        Rss { private, total: kib("VmRSS:"), anon: kib("RssAnon:"), file: kib("RssFile:") }
    }

    fn minus(self, o: Rss) -> Rss {
        Rss {
            private: self.private - o.private,
            total: self.total - o.total,
            anon: self.anon - o.anon,
            file: self.file - o.file,
        }
    }

    /// "private 0.71 MiB; RSS 1.02 MiB (anonymous 0.70, from files 0.32)"
    pub fn mib(&self) -> String {
        let mib = |kib: f64| kib / 1024.0;
        format!(
            "private {:.2} MiB; RSS {:.2} MiB (anonymous {:.2}, from files {:.2})",
            mib(self.private),
            mib(self.total),
            mib(self.anon),
            mib(self.file)
        )
    }
}

pub struct Added {
    /// Neovim without the plugin.
    pub base: Rss,
    /// The server up, no agent.
    pub idle: Rss,
    /// One agent connected as Pi does; the cursor moved in a file and it was told, and it asked
    /// for the diagnostics.
    pub client: Rss,
}

fn settled(nvims: [&Nvim; 2]) -> [Rss; 2] {
    std::thread::sleep(Duration::from_millis(500));
    for n in nvims {
        n.lua("collectgarbage('collect')");
    }
    [Rss::of(nvims[0].pid()), Rss::of(nvims[1].pid())]
}

/// One measure, Neovim with the plugin against Neovim without it.
pub fn added() -> Added {
    let without = Nvim::start_with(Options {
        before: Some(format!("vim.opt.rtp:remove('{}')", plugin_root().display())),
        ..Default::default()
    });
    let with = Nvim::start();
    with.wait_for("require('pi-ide.core.server').running()", Duration::from_secs(30));
    let [base, idle] = settled([&without, &with]);
    with.lua("vim.g.pi_ide_bench_turns = 0 vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeCheckpoint', callback = function() vim.g.pi_ide_bench_turns = vim.g.pi_ide_bench_turns + 1 end })");
    let mut p = pi_like_client(&with);
    let path = with.cwd.join("moved.rs");
    let lines: Vec<String> = (0..100).map(|i| format!("fn f{i}() -> u32 {{ {i} }}")).collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    // The same file opened, the same moves and the diagnostics read in both: Neovim's own share
    // (filetype detection, its vim.diagnostic module, which LSP loads anyway) is not the plugin's.
    for n in [&without, &with] {
        n.lua_with("vim.cmd.edit(...)", vec![path.to_string_lossy().to_string().into()]);
        n.lua("vim.diagnostic.get()");
    }
    let mut round = |line: u64| {
        for n in [&without, &with] {
            n.lua_with("vim.api.nvim_win_set_cursor(0, { ..., 2 }) vim.api.nvim_exec_autocmds('CursorMoved', {})", vec![line.into()]);
        }
        p.wait_notification("selection_changed", Duration::from_secs(5)).unwrap();
        // Pi asks for the diagnostics before every model call.
        let r = p.call_tool("getDiagnostics", serde_json::json!({})).unwrap();
        assert!(r.get("result").is_some(), "{r}");
    };
    for line in [10u64, 40, 70] {
        round(line);
    }
    // Its first request began a turn: the checkpoint is measured after it, with the cursor
    // followed and diagnostics asked once more.
    with.wait_for("vim.g.pi_ide_bench_turns > 0", Duration::from_secs(30));
    round(20);
    let [base2, client] = settled([&without, &with]);
    Added { base, idle: idle.minus(base), client: client.minus(base2) }
}

/// A client that connects as the Pi extension does (src/agents/pi.rs): it offers permessage-deflate
/// (declined), initializes, and then only calls tools.
fn pi_like_client(nvim: &Nvim) -> pi_ide_testkit::Peer {
    let l = nvim.lockfile();
    let headers = [
        (pi_ide_testkit::peer::AUTH_HEADER, l.auth_token.as_str()),
        ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),
    ];
    let mut p = pi_ide_testkit::Peer::connect_with_headers(l.port, &headers).expect("connect");
    let r = p.initialize().expect("initialize");
    assert!(r.get("result").is_some(), "{r}");
    p
}

/// The median of three measures, by private memory with one agent connected.
pub fn median_added() -> Added {
    let mut v: Vec<Added> = (0..3).map(|_| added()).collect();
    v.sort_by(|a, b| a.client.private.total_cmp(&b.client.private));
    v.swap_remove(1)
}

/// The library's size on disk, in KiB.
pub fn library_kib() -> f64 {
    let lib = plugin_root().join("target/release/libpi_ide.so");
    std::fs::metadata(&lib).map(|m| m.len() as f64 / 1024.0).unwrap_or(0.0)
}

/// Rows of the benchmark table.
pub fn rows() -> Vec<String> {
    let a = median_added();
    let lib = library_kib();
    vec![
        format!("| memory added, server up, no agent (median of 3) | {} | |", a.idle.mib()),
        format!("| memory added, one agent connected as Pi is (cursor followed, diagnostics asked; median of 3; Neovim alone: private {:.1} MiB, RSS {:.1} MiB) | {} | private ≤ 0.75 MiB |", a.base.private / 1024.0, a.base.total / 1024.0, a.client.mib()),
        format!("| the library's size | {lib:.0} KiB | |"),
        format!("| memory claude_code adds, Claude Code connected (vs off, a Pi client; median of 3) | {} | |", claude_code_adds()),
    ]
}

/// Neovim with `claude_code` on and Claude Code connected (its header, the mcp subprotocol, its
/// initialize and tools/list) against `claude_code` off with a Pi client: median of 3, by
/// private memory.
pub fn claude_code_adds() -> String {
    let mut v: Vec<Rss> = (0..3).map(|_| claude_code_once()).collect();
    v.sort_by(|a, b| a.private.total_cmp(&b.private));
    format!("private {:+.2} MiB, RSS {:+.2} MiB", v[1].private / 1024.0, v[1].total / 1024.0)
}

fn claude_code_once() -> Rss {
    let claude_dir = pi_ide_testkit::nvim::temp_dir("claude");
    let start = |on: bool| {
        Nvim::start_with(Options {
            env: vec![("CLAUDE_CONFIG_DIR".into(), claude_dir.to_string_lossy().into())],
            after: Some(format!("require('pi-ide').stop() require('pi-ide').setup({{claude_code = {on}}}) require('pi-ide').start()")),
            ..Default::default()
        })
    };
    let (off, on) = (start(false), start(true));
    let _pi = off.peer();
    let l = on.lockfile();
    let headers = [("x-claude-code-ide-authorization", l.auth_token.as_str()), ("sec-websocket-protocol", "mcp")];
    let mut c = pi_ide_testkit::Peer::connect_with_headers(l.port, &headers).expect("claude connects");
    let init = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "2.1.330"}});
    c.request("initialize", init).unwrap();
    c.notify("notifications/initialized", serde_json::json!({})).unwrap();
    c.notify("ide_connected", serde_json::json!({"pid": 4242})).unwrap();
    c.request("tools/list", serde_json::json!({})).unwrap();
    let [a, b] = settled([&off, &on]);
    std::fs::remove_dir_all(&claude_dir).ok();
    b.minus(a)
}
