//! The side-by-side run (`scripts/bench --only compare`): the same measures for ldelossa's
//! pi-ide.nvim (Lua), coder's claudecode.nvim (Lua) and this plugin, in one run, each in its own
//! headless Neovim, through the same client and the same probes (bench/compare.lua), so that the
//! README's table compares like with like. The two Lua plugins come from checkouts named by
//! PI_IDE_COMPARE_PIIDE_LUA and PI_IDE_COMPARE_CLAUDECODE; a column without one is "not measured".

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_ide_testkit::nvim::{nvim_binary, plugin_root, private_kib, temp_dir, Nvim, Options};
use serde_json::json;

use crate::{diff_files, median};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    PiIdeLua,
    ClaudeCode,
    Ours,
}

/// One column of the table: a plugin and where its code is.
struct Plugin {
    kind: Kind,
    name: &'static str,
    root: Option<PathBuf>,
}

impl Plugin {
    /// The three, in the README's column order; a Lua plugin's root from its variable.
    fn all() -> Vec<Plugin> {
        let from_env = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.join("lua").is_dir());
        vec![
            Plugin { kind: Kind::PiIdeLua, name: "pi-ide.nvim (Lua)", root: from_env("PI_IDE_COMPARE_PIIDE_LUA") },
            Plugin { kind: Kind::ClaudeCode, name: "claudecode.nvim (Lua)", root: from_env("PI_IDE_COMPARE_CLAUDECODE") },
            Plugin { kind: Kind::Ours, name: "this plugin", root: Some(plugin_root()) },
        ]
    }

    /// The line that says how to measure a missing column.
    fn missing(&self) -> String {
        let (var, url) = match self.kind {
            Kind::PiIdeLua => ("PI_IDE_COMPARE_PIIDE_LUA", "https://github.com/ldelossa/pi-ide.nvim"),
            Kind::ClaudeCode => ("PI_IDE_COMPARE_CLAUDECODE", "https://github.com/coder/claudecode.nvim"),
            Kind::Ours => unreachable!("this plugin is always measured"),
        };
        format!("{}: not measured (git clone {url} and set {var} to its folder)", self.name)
    }

    /// The Lua that starts its server, as its README says (ldelossa's `setup` defers the start
    /// to the loop, so it is started at once here, as `:PiStart` does).
    fn start_lua(&self) -> &'static str {
        match self.kind {
            Kind::PiIdeLua => "require('pi-ide').setup({ auto_start = false }) require('pi-ide').start()",
            Kind::ClaudeCode => "require('claudecode').setup({})",
            Kind::Ours => "assert(require('pi-ide').start())",
        }
    }

    /// A Neovim with this plugin alone on the runtimepath, its server started.
    fn start(&self) -> Nvim {
        if self.kind == Kind::Ours {
            let nvim = Nvim::start();
            nvim.wait_for("require('pi-ide.core.server').running()", Duration::from_secs(30));
            return nvim;
        }
        let root = self.root.as_ref().unwrap().display().to_string();
        Nvim::start_with(Options {
            before: Some(format!("vim.opt.rtp:remove('{}') vim.opt.rtp:prepend('{root}')", plugin_root().display())),
            after: Some(self.start_lua().to_string()),
            ..Default::default()
        })
    }

    /// Its lock file: ~/.claude/ide for claudecode.nvim, $PI_IDE_LOCK_DIR for the other two.
    fn lock(&self, nvim: &Nvim) -> pi_ide_testkit::LockFile {
        let dir = match self.kind {
            Kind::ClaudeCode => nvim.home.join(".claude/ide"),
            _ => nvim.lock_dir.clone(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(l) = pi_ide_testkit::lock::read_all(&dir).into_iter().next() {
                return l;
            }
            assert!(Instant::now() < deadline, "{}: no lock file in {}", self.name, dir.display());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The header its agent sends the token in.
    fn auth_header(&self) -> &'static str {
        match self.kind {
            Kind::ClaudeCode => "x-claude-code-ide-authorization",
            _ => pi_ide_testkit::peer::AUTH_HEADER,
        }
    }

    /// A client connected and initialized, as an agent is.
    fn connect(&self, nvim: &Nvim) -> pi_ide_testkit::Peer {
        let l = self.lock(nvim);
        let mut p = pi_ide_testkit::Peer::connect_with_headers(l.port, &[(self.auth_header(), l.auth_token.as_str())])
            .unwrap_or_else(|e| panic!("{}: cannot connect: {e:?}", self.name));
        let r = p.initialize().unwrap();
        assert!(r.get("result").is_some(), "{}: {r}", self.name);
        p
    }
}

/// A Neovim without any of the three: what each is measured against.
fn bare() -> Nvim {
    Nvim::start_with(Options {
        before: Some(format!("vim.opt.rtp:remove('{}')", plugin_root().display())),
        ..Default::default()
    })
}

/// Calls a probe of bench/compare.lua in `nvim`.
fn probe(nvim: &Nvim, name: &str, args: serde_json::Value) -> serde_json::Value {
    let file = plugin_root().join("bench/compare.lua").to_string_lossy().to_string();
    nvim.lua_with(
        "local file, name, args = ... return dofile(file)[name](unpack(vim.json.decode(args)))",
        vec![file.into(), name.into(), args.to_string().into()],
    )
}

fn edit(nvim: &Nvim, path: &Path) {
    nvim.lua_with("vim.cmd.edit(...)", vec![path.to_string_lossy().to_string().into()]);
}

/// The Python `websockets` client (bench/roundtrip.py) on `nvim`'s server: `n` getDiagnostics
/// calls after 100 of warm-up, p50 and p99 (ms).
fn python_client(plugin: &Plugin, nvim: &Nvim, n: usize) -> Option<(f64, f64)> {
    let l = plugin.lock(nvim);
    let py = std::env::var_os("PI_IDE_BENCH_PY").map(PathBuf::from).unwrap_or_else(|| plugin_root().join(".deps/py"));
    let out = Command::new("python3")
        .arg(plugin_root().join("bench/roundtrip.py"))
        .args([l.port.to_string(), l.auth_token.clone(), n.to_string(), plugin.auth_header().to_string()])
        .env("PYTHONPATH", py)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("{}: python client failed: {}", plugin.name, String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some((v["p50"].as_f64()?, v["p99"].as_f64()?))
}

/// The medians of each of two numbers over rounds; None without a round.
fn medians(v: Vec<(f64, f64)>) -> Option<(f64, f64)> {
    (!v.is_empty()).then(|| (median(v.iter().map(|x| x.0).collect()), median(v.iter().map(|x| x.1).collect())))
}

/// The round trip of each plugin: 5 rounds of `n` / 5 calls, the plugins taking turns so that
/// the machine's load hits all alike; medians of the rounds' p50 and p99 (ms).
fn roundtrips(plugins: &[&Plugin], n: usize) -> Vec<Option<(f64, f64)>> {
    let nvims: Vec<Nvim> = plugins.iter().map(|p| p.start()).collect();
    let mut got = vec![Vec::new(); plugins.len()];
    for _ in 0..5 {
        for (i, p) in plugins.iter().enumerate() {
            got[i].extend(python_client(p, &nvims[i], n / 5));
        }
    }
    got.into_iter().map(medians).collect()
}

/// A file of 200 lines with multibyte text, for the cursor to move in.
fn cursor_file(dir: &Path) -> PathBuf {
    let lines: Vec<String> = (0..200).map(|i| format!("    let value_{i} = compute(\"héllo\", {i}); // wörld")).collect();
    let path = dir.join("cursor.rs");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// A Neovim with the plugin and its agent connected; without a plugin, a second bare Neovim (so
/// that the method's noise is measured by the same code).
fn subject(plugin: Option<&Plugin>) -> (Nvim, Option<pi_ide_testkit::Peer>) {
    match plugin {
        Some(p) => {
            let nvim = p.start();
            let client = p.connect(&nvim);
            (nvim, Some(client))
        }
        None => (bare(), None),
    }
}

/// Main-thread CPU a plugin adds to each CursorMoved with a client connected (µs): `n` moves
/// (bench/compare.lua's probe) timed by the main thread's CPU time, which a loaded machine does
/// not stretch as it does a clock, less the same in a Neovim without it; the two take turns, 10
/// rounds of `n` / 10 moves.
fn cursor_cost(plugin: Option<&Plugin>, n: usize) -> f64 {
    let ((nvim, _client), alone) = (subject(plugin), bare());
    for v in [&nvim, &alone] {
        edit(v, &cursor_file(&v.cwd));
    }
    let (mut with, mut without) = (0.0, 0.0);
    for round in 0..10 {
        let mut both = [(&nvim, &mut with), (&alone, &mut without)];
        // Each first half the time (see told_cost).
        if round % 2 == 1 {
            both.reverse();
        }
        for (v, into) in both {
            let t0 = main_thread_ns(v.pid());
            probe(v, "cursor_moved", json!([n / 10]));
            *into += main_thread_ns(v.pid()) - t0;
        }
    }
    (with - without) / n as f64 / 1e3
}

/// CPU time Neovim's main thread has run (ns): the first field of its schedstat.
fn main_thread_ns(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).unwrap_or_default();
    s.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// A cursor move made over RPC, as the probes make them.
fn move_to(nvim: &Nvim, line: u64) {
    nvim.lua_with("vim.api.nvim_win_set_cursor(0, { ..., 3 }) vim.api.nvim_exec_autocmds('CursorMoved', {})", vec![line.into()]);
}

/// What a plugin's main thread spends per cursor move until its agent is told (the autocmd, the
/// debounced read of the selection, the notification sent), in µs: `n` moves, each followed by
/// its selection_changed, less the same moves in a Neovim without it, made in turn with them.
fn told_cost(plugin: Option<&Plugin>, n: usize) -> f64 {
    let ((nvim, mut client), alone) = (subject(plugin), bare());
    for v in [&nvim, &alone] {
        edit(v, &cursor_file(&v.cwd));
    }
    let mut told_of_one = |timeout: Duration| match client.as_mut() {
        Some(c) => c.wait_notification("selection_changed", timeout).is_ok(),
        // No plugin (the method's noise): past the debounce all the same.
        None => {
            std::thread::sleep(Duration::from_millis(110));
            true
        }
    };
    if plugin.is_some() {
        while told_of_one(Duration::from_millis(300)) {}
    }
    let mut told = |lines: std::ops::Range<usize>| {
        for i in lines {
            let line = (i % 150 + 20) as u64;
            // Each first half the time: the one moved second finds Neovim's code warm in the
            // caches (the same binary, just run), which alone made ~170 µs of difference.
            let both = if i % 2 == 0 { [&nvim, &alone] } else { [&alone, &nvim] };
            for v in both {
                move_to(v, line);
            }
            assert!(told_of_one(Duration::from_secs(5)), "no selection_changed after a move");
        }
    };
    // A few first, so that what the first move loads is not counted as every move's.
    told(0..5);
    let (with0, without0) = (main_thread_ns(nvim.pid()), main_thread_ns(alone.pid()));
    told(5..n + 5);
    let with = main_thread_ns(nvim.pid()) - with0;
    let without = main_thread_ns(alone.pid()) - without0;
    (with - without) / n as f64 / 1e3
}

/// A Neovim with a plugin, its agent connected, the probes' timer running, and the two
/// reviews' files: 1 KiB / 2 hunks and 5 MiB / 50 hunks (path, proposal).
struct Rig {
    nvim: Nvim,
    peer: pi_ide_testkit::Peer,
    small: (String, String),
    big: (String, String),
}

fn rig(plugin: &Plugin) -> Rig {
    let nvim = plugin.start();
    let small = diff_files(&nvim.cwd, "small.rs", 16, 2);
    let big = diff_files(&nvim.cwd, "big.rs", 5 * 1024 * 1024 / 66, 50);
    let peer = plugin.connect(&nvim);
    probe(&nvim, "watch", json!([]));
    Rig { nvim, peer, small, big }
}

/// One openDiff of `file` (path, proposal), closed again with close_tab (the agent's way: every
/// plugin serves it), the tab named as Claude Code names it (claudecode.nvim closes only tabs so
/// named): frame sent -> both panes in diff mode, and the longest stall meanwhile and 100 ms after.
fn review_once(plugin: &Plugin, rig: &mut Rig, big: bool, i: usize) -> (f64, f64) {
    let (nvim, p) = (&rig.nvim, &mut rig.peer);
    let (path, contents) = if big { &rig.big } else { &rig.small };
    let tab = format!("✻ [Claude Code] {} (bench-{i}) ⧉", Path::new(path).file_name().unwrap().to_string_lossy());
    probe(nvim, "arm", json!([]));
    let frame = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": tab}}})
    .to_string();
    let sent = crate::monotonic_ns();
    p.send_text(&frame).unwrap();
    nvim.wait_for("__cmp.opened > 0", Duration::from_secs(120));
    // A stall right after the panes are up is felt too.
    std::thread::sleep(Duration::from_millis(100));
    let v = nvim.lua("return { __cmp.opened, __cmp.max }");
    let close = json!({"jsonrpc": "2.0", "id": format!("close-{i}"), "method": "tools/call",
        "params": {"name": "close_tab", "arguments": {"tab_name": tab}}});
    p.send_text(&close.to_string()).unwrap();
    p.wait_response(&json!(i)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe(nvim, "closed", json!([path])) != json!(true) {
        assert!(Instant::now() < deadline, "{}: the review's panes stayed after close_tab", plugin.name);
        std::thread::sleep(Duration::from_millis(20));
    }
    ((v[0].as_f64().unwrap() - sent) / 1e6, v[1].as_f64().unwrap() / 1e6 - 2.0)
}

/// Both reviews for each plugin, `runs` of each (small, big), the plugins taking turns: medians
/// (ms; a median stall, as the worst on a loaded machine is the scheduler's).
fn reviews(plugins: &[&Plugin], runs: (usize, usize)) -> Vec<((f64, f64), (f64, f64))> {
    let mut rigs: Vec<Rig> = plugins.iter().map(|p| rig(p)).collect();
    let mut got = vec![(Vec::new(), Vec::new()); plugins.len()];
    for (big, n) in [(false, runs.0), (true, runs.1)] {
        for i in 0..n {
            for (k, p) in plugins.iter().enumerate() {
                let r = review_once(p, &mut rigs[k], big, i + if big { runs.0 } else { 0 });
                if big { got[k].1.push(r) } else { got[k].0.push(r) }
            }
        }
    }
    for r in &rigs {
        probe(&r.nvim, "stop", json!([]));
    }
    got.into_iter().map(|(s, b)| (medians(s).unwrap(), medians(b).unwrap())).collect()
}

/// Private memory a plugin adds with an agent connected (KiB): the same file opened, the same
/// cursor moves and diagnostics read in a Neovim without it, the client told of the moves and
/// asking for the diagnostics as an agent does before each model call.
fn memory_once(plugin: &Plugin) -> f64 {
    let (without, with) = (bare(), plugin.start());
    let mut p = plugin.connect(&with);
    let path = cursor_file(&with.cwd);
    for n in [&without, &with] {
        edit(n, &path);
        n.lua("vim.diagnostic.get()");
    }
    for line in [10u64, 40, 70, 20] {
        for n in [&without, &with] {
            n.lua_with("vim.api.nvim_win_set_cursor(0, { ..., 2 }) vim.api.nvim_exec_autocmds('CursorMoved', {})", vec![line.into()]);
        }
        // Past every plugin's debounce (claudecode.nvim's 100 ms, ours 100 ms), so it was told.
        std::thread::sleep(Duration::from_millis(250));
        let r = p.call_tool("getDiagnostics", json!({})).unwrap();
        assert!(r.get("result").is_some(), "{}: {r}", plugin.name);
    }
    std::thread::sleep(Duration::from_millis(700));
    for n in [&without, &with] {
        n.lua("collectgarbage('collect')");
    }
    private_kib(with.pid()) as f64 - private_kib(without.pid()) as f64
}

/// Each plugin's memory, median of `rounds` taken in turns (KiB).
fn memory(plugins: &[&Plugin], rounds: usize) -> Vec<f64> {
    let mut got = vec![Vec::new(); plugins.len()];
    for _ in 0..rounds {
        for (i, p) in plugins.iter().enumerate() {
            got[i].push(memory_once(p));
        }
    }
    got.into_iter().map(median).collect()
}

/// `nvim --headless --clean <extra> +qa` in a home of its own (the lock files go there): ms.
fn headless(extra: &[String], home: &Path) -> f64 {
    let t = Instant::now();
    let mut cmd = Command::new(nvim_binary());
    cmd.args(["--headless", "--clean"]).args(extra).arg("+qa");
    for (k, v) in [("HOME", home.to_path_buf()), ("XDG_STATE_HOME", home.join("state")), ("XDG_DATA_HOME", home.join("data")), ("XDG_RUNTIME_DIR", home.join("run")), ("PI_IDE_LOCK_DIR", home.join("locks"))] {
        cmd.env(k, v);
    }
    // Their messages on quitting ("pi-ide stopped") are not the table's.
    let status = cmd.env_remove("CLAUDE_CONFIG_DIR").stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
    t.elapsed().as_secs_f64() * 1e3
}

/// Startup time each plugin adds, its server started and stopped (its lock file written and
/// removed) in that run: median of `runs`, interleaved with bare runs so that noise hits all.
fn startup(plugins: &[&Plugin], runs: usize) -> Vec<f64> {
    let home = temp_dir("compare-home");
    std::fs::create_dir_all(home.join("run")).unwrap();
    let args = |p: &Plugin| {
        vec!["--cmd".to_string(), format!("set rtp^={}", p.root.as_ref().unwrap().display()), "-c".to_string(), format!("lua {}", p.start_lua())]
    };
    for p in plugins {
        headless(&args(p), &home);
    }
    let mut base = Vec::new();
    let mut each: Vec<Vec<f64>> = vec![Vec::new(); plugins.len()];
    for _ in 0..runs {
        base.push(headless(&[], &home));
        for (i, p) in plugins.iter().enumerate() {
            each[i].push(headless(&args(p), &home));
        }
    }
    for dir in [home.join(".claude/ide"), home.join("locks")] {
        let left = pi_ide_testkit::lock::read_all(&dir).len();
        if left > 0 {
            eprintln!("note: {left} lock file(s) left behind in {}", dir.display());
        }
    }
    let _ = std::fs::remove_dir_all(&home);
    let b = median(base);
    each.into_iter().map(|v| median(v) - b).collect()
}

/// The load averages from /proc/loadavg: "1.23 0.98 0.87".
fn load() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The table's rows, one column per plugin ("not measured" where its checkout is missing), and
/// the lines around it: when, the machine's load before and after, what was left out. Each
/// measure runs for all plugins before the next, in turns where it takes several runs.
pub fn rows(quick: bool) -> Vec<String> {
    let plugins = Plugin::all();
    let measured: Vec<&Plugin> = plugins.iter().filter(|p| p.root.is_some()).collect();
    let load_before = load();
    let (n, moves_n, told_n, runs) = if quick { (200, 10_000, 20, 10) } else { (1000, 50_000, 200, 40) };
    let review_runs = if quick { (5, 2) } else { (20, 5) };
    let mem_rounds = if quick { 1 } else { 3 };
    // The measured plugins' cells, then one per column.
    let cells = |v: Vec<String>| -> String {
        let mut v = v.into_iter();
        plugins.iter().map(|p| if p.root.is_some() { v.next().unwrap() } else { "not measured".into() }).collect::<Vec<_>>().join(" | ")
    };
    let rt = roundtrips(&measured, n).into_iter().map(|r| match r {
        Some((a, b)) => format!("p50 {a:.3} ms, p99 {b:.3} ms"),
        None => "not measured (the Python client failed)".into(),
    });
    let rt = cells(rt.collect());
    let cur = cells(measured.iter().map(|p| format!("{:.1} µs", cursor_cost(Some(p), moves_n))).collect());
    let told = cells(measured.iter().map(|p| format!("{:.0} µs", told_cost(Some(p), told_n))).collect());
    let (cur_noise, told_noise) = (cursor_cost(None, moves_n), told_cost(None, told_n));
    let rev = reviews(&measured, review_runs);
    let small = cells(rev.iter().map(|(s, _)| format!("{:.1} ms (stall {:.1} ms)", s.0, s.1)).collect());
    let big = cells(rev.iter().map(|(_, b)| format!("{:.0} ms, longest stall {:.0} ms", b.0, b.1)).collect());
    let mem = cells(memory(&measured, mem_rounds).iter().map(|k| format!("{:.2} MiB", k / 1024.0)).collect());
    let start = cells(startup(&measured, runs).iter().map(|ms| format!("{ms:.1} ms")).collect());
    let mut out = vec![
        format!(
            "Side-by-side run{}, {}, {} cores, load average {load_before} before, {} after",
            if quick { " (--quick)" } else { "" },
            crate::utc_now(),
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            load()
        ),
        String::new(),
        format!("| measure | {} |", plugins.iter().map(|p| p.name).collect::<Vec<_>>().join(" | ")),
        "|---|---|---|---|".into(),
        format!("| tools/call getDiagnostics round trip, Python `websockets` client, {n} calls (5 rounds in turns: medians) | {rt} |"),
        format!("| main-thread CPU per CursorMoved, client connected ({moves_n} moves; a Neovim without the plugin subtracted) | {cur} |"),
        format!("| main-thread CPU per cursor move until the client has its selection_changed (the debounced work included; {told_n} moves, a Neovim without the plugin making the same moves in turn subtracted) | {told} |"),
        format!("| openDiff 5 MiB / 50 hunks: frame sent -> both panes in diff mode, diff computed; longest main-thread stall (medians of {}) | {big} |", review_runs.1),
        format!("| openDiff 1 KiB / 2 hunks: the same (medians of {}) | {small} |", review_runs.0),
        format!("| private memory added, an agent connected (cursor followed, diagnostics asked; median of {mem_rounds}) | {mem} |"),
        format!("| startup time added: on the runtimepath, server started and stopped in `nvim --headless --clean +qa` (median of {runs}) | {start} |"),
    ];
    out.push(String::new());
    out.push(format!("The CPU rows' noise, two Neovims without a plugin measured by the same code: {cur_noise:.1} µs per CursorMoved, {told_noise:.0} µs per move told."));
    for p in plugins.iter().filter(|p| p.root.is_none()) {
        out.push(p.missing());
    }
    out
}
