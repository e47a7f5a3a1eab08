//! Pending changes' numbers (features/pending/, src/watch/): a generated repository (20,000 and
//! 100,000 files, checkpoint_bench's) opened by a real Neovim with an agent connected, so that
//! the workspace is watched. What the watch costs to set up (time, private memory) and to keep
//! while nothing happens (the main loop's turns, Neovim's CPU time), how soon another process's
//! write is shown, beside the turn-end scan (`:PiIde changes`) that found it before; the main
//! thread's share of drawing one change, and of a storm of 10,000 files written at once.
//! Writes are stamped on CLOCK_MONOTONIC here, their arrival with vim.uv.hrtime (the same clock).

use std::path::Path;
use std::time::{Duration, Instant};

use pi_ide_testkit::nvim::{private_kib, Nvim, Options};
use serde_json::{json, Value};

use crate::checkpoint_bench::{change_ten, changes, checkpoint, generate, stalls};
use crate::{cpu_ticks, monotonic_ns, percentile_of};

const IDLE: Duration = Duration::from_secs(10);
const PATIENCE: Duration = Duration::from_secs(300);

/// A Neovim in `dir`, its watch probed (bench.pending_probe), no agent yet.
fn editor(dir: &Path) -> Nvim {
    let nvim = Nvim::start_with(Options {
        cwd: Some(dir.to_path_buf()),
        // No turn ends by itself while the benchmark waits; messages recorded, not shown.
        // 100,000 files (and a few more, ~264 MiB): over the default max_files and max_new_mb,
        // with which the watch refuses the workspace (its snapshot is not taken).
        after: Some("require('pi-ide').setup({ checkpoints = { idle_ms = 600000, max_files = 200000, max_new_mb = 1024 } })".into()),
        ..Default::default()
    });
    nvim.command("set columns=300").unwrap();
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim.t("bench.pending_probe", json!([]));
    nvim
}

/// Private memory (KiB) once the collector ran and the threads settled.
fn settled_private(nvim: &Nvim) -> f64 {
    std::thread::sleep(Duration::from_millis(500));
    nvim.lua("collectgarbage('collect')");
    private_kib(nvim.pid()) as f64
}

/// The main loop's turns and Neovim's CPU time (ms) over IDLE, nothing asked of it meanwhile.
fn idle(nvim: &Nvim) -> (u64, f64) {
    std::thread::sleep(Duration::from_millis(500));
    nvim.t("bench.count_loop_turns", json!([]));
    let cpu0 = cpu_ticks(nvim.pid());
    std::thread::sleep(IDLE);
    let cpu1 = cpu_ticks(nvim.pid());
    let turns = nvim.t("bench.loop_turns", json!([])).as_u64().unwrap();
    // Clock ticks are 1/100 s on Linux.
    (turns, (cpu1 - cpu0) as f64 * 10.0)
}

/// Setting the watch up: connect -> watching (ms, wall: the bench's stamp before the connection
/// to the watch's answer), what health() says it took (ms), its folders.
struct Setup {
    wall: f64,
    setup_ms: f64,
    folders: u64,
}

fn connect(nvim: &Nvim) -> (pi_ide_testkit::Peer, Setup) {
    let before = monotonic_ns();
    let p = nvim.peer();
    nvim.wait_for("__w.ready ~= 0", PATIENCE);
    assert_eq!(nvim.lua("return __w.error"), Value::Null, "the watch failed");
    let v = nvim.lua("local h = require('pi-ide.features.pending').health() return { __w.ready, h:match('set up in (%d+) ms'), h:match('%((%d+) folders') }");
    let num = |x: &Value| x.as_str().and_then(|s| s.parse().ok()).unwrap_or(-1.0);
    let setup = Setup { wall: (v[0].as_f64().unwrap() - before) / 1e6, setup_ms: num(&v[1]), folders: num(&v[2]) as u64 };
    (p, setup)
}

/// `n` writes of one file (open in the window) by this process, one at a time: write ->
/// PiIdeChangePending (ms), p50 and p99.
fn write_to_shown(nvim: &Nvim, dir: &Path, rel: &str, n: usize) -> (f64, f64) {
    nvim.command(&format!("edit {rel}")).unwrap();
    let path = dir.join(rel);
    let base = std::fs::read_to_string(&path).unwrap();
    let mut ms = Vec::new();
    for k in 0..n {
        let seen = nvim.lua("return #__w.events").as_u64().unwrap();
        let at = monotonic_ns();
        std::fs::write(&path, format!("{base}// written by another process, {k}\n")).unwrap();
        nvim.wait_for(&format!("#__w.events > {seen}"), PATIENCE);
        let shown = nvim.lua(&format!("return __w.events[{}]", seen + 1)).as_f64().unwrap();
        ms.push((shown - at) / 1e6);
        // The next write is a batch of its own.
        std::thread::sleep(Duration::from_millis(150));
    }
    (percentile_of(ms.clone(), 0.5), percentile_of(ms, 0.99))
}

/// One repository's rows: setup, memory, idle, write -> shown against `:PiIde changes`.
struct Watched {
    files: usize,
    setup: Setup,
    private_kib: f64,
    idle_off: (u64, f64),
    idle_on: (u64, f64),
    shown: (f64, f64),
    scan: f64,
}

fn watched(n: usize, writes: usize, storm: bool) -> (Watched, Option<Storm>) {
    let (dir, paths) = generate(n);
    let nvim = editor(&dir);
    let idle_off = idle(&nvim);
    let before = settled_private(&nvim);
    let (_agent, setup) = connect(&nvim);
    let private_kib = settled_private(&nvim) - before;
    let idle_on = idle(&nvim);
    let shown = write_to_shown(&nvim, &dir, &paths[0], writes);
    // Today's way to see such a write: the turn-end scan, :PiIde changes after a turn.
    nvim.command("edit typed.txt").unwrap();
    checkpoint(&nvim);
    change_ten(&dir, &paths, 7);
    let (scan, _) = changes(&nvim);
    let storm = storm.then(|| self::storm(&nvim, &dir, &paths));
    drop(nvim);
    let _ = std::fs::remove_dir_all(&dir);
    (Watched { files: n, setup, private_kib, idle_off, idle_on, shown, scan: scan.wall }, storm)
}

/// A storm: 10,000 files written at once by this process, half in `node_modules/` (never
/// watched), half new files beside the repository's; the 1 ms timer's longest and p99 lateness
/// meanwhile, the longest batch's handling on the main thread, what became pending and what
/// was only counted (past MAX_SHOWN in a batch), and in how many batches.
struct Storm {
    longest: f64,
    p99: f64,
    longest_batch: f64,
    pending: u64,
    more: u64,
    batches: usize,
    wrote_ms: f64,
}

const STORM: usize = 10_000;

fn storm(nvim: &Nvim, dir: &Path, paths: &[String]) -> Storm {
    let before = nvim.lua("return #require('pi-ide').info().pending").as_u64().unwrap();
    let batches0 = nvim.lua("return #__w.batches").as_u64().unwrap() as usize;
    nvim.t("bench.stall_timer_with_cpu", json!([]));
    let t = Instant::now();
    for i in 0..STORM / 2 {
        let pkg = dir.join(format!("node_modules/pkg{:03}/lib", i / 50));
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join(format!("m{}.js", i % 50)), format!("module.exports = {i};\n")).unwrap();
        let beside = Path::new(&paths[i * paths.len() / (STORM / 2)]).with_file_name(format!("storm{i}.rs"));
        std::fs::write(dir.join(beside), format!("pub const STORM: u32 = {i};\n")).unwrap();
    }
    let wrote_ms = t.elapsed().as_secs_f64() * 1e3;
    // Settled: no batch for 2 s.
    let (mut last, mut quiet_since) = (batches0, Instant::now());
    while quiet_since.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(100));
        let now = nvim.lua("return #__w.batches").as_u64().unwrap() as usize;
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
    }
    let (longest, p99, _) = stalls(nvim);
    let v = nvim.lua(&format!(
        "local ms, more = 0, 0 for i = {} + 1, #__w.batches do local b = __w.batches[i] ms, more = math.max(ms, b.ms), more + b.more end return {{ ms, more, #require('pi-ide').info().pending }}",
        batches0
    ));
    Storm {
        longest,
        p99,
        longest_batch: v[0].as_f64().unwrap(),
        more: v[1].as_u64().unwrap(),
        pending: v[2].as_u64().unwrap() - before,
        batches: last - batches0,
        wrote_ms,
    }
}

/// A pending change of a 1,000-line file, ~20 hunks, drawn in its window: the main thread's
/// time for the view alone and for the whole change (ms, p50 and p99 of `runs`).
fn draw(runs: usize) -> Value {
    let nvim = Nvim::start();
    let base: Vec<String> = (0..1000).map(|i| format!("    let value_{i:04} = compute_something(input, {i}); // a comment")).collect();
    let mut text = base.clone();
    for h in 0..20 {
        let i = h * 50 + 25;
        text[i] = format!("    let value_{i:04} = changed_by_the_agent(input, {i});");
        if h % 4 == 0 {
            text.insert(i + 1, "    // a line the agent added".into());
        }
    }
    let (base, text) = (base.join("\n") + "\n", text.join("\n") + "\n");
    let path = nvim.cwd.join("thousand.rs");
    std::fs::write(&path, &text).unwrap();
    nvim.command("edit thousand.rs").unwrap();
    let p = path.to_string_lossy().to_string();
    nvim.t("bench.time_pending_draw", json!([p, base, text, runs]))
}

fn thousands(n: usize) -> String {
    format!("{},{:03}", n / 1000, n % 1000)
}

fn watched_rows(w: &Watched) -> Vec<String> {
    let files = thousands(w.files);
    let s = &w.setup;
    vec![
        format!("| pending: another process writes a file (open in a window), agent connected ({files} files): write -> PiIdeChangePending | p50 {:.0} ms, p99 {:.0} ms (the watch waits 60 ms of quiet); today's turn-end scan, :PiIde changes after a turn -> first entry: {:.0} ms | |", w.shown.0, w.shown.1, w.scan),
        format!("| pending: watch setup ({files} files, {} folders watched): health's setup_ms; agent connected -> watching (its snapshot taken) | {:.0} ms; {:.0} ms | |", s.folders, s.setup_ms, s.wall),
        format!("| pending: private memory the watch adds, agent connected ({files} files; its snapshot's worker included) | {:.2} MiB | |", w.private_kib / 1024.0),
        format!("| pending: main-loop turns idle {} s, agent connected, watching ({files} files) | {} (before the agent connected, no watch: {}); nvim CPU {:.0} ms (before: {:.0} ms) | 0 added |", IDLE.as_secs(), w.idle_on.0, w.idle_off.0, w.idle_on.1, w.idle_off.1),
    ]
}

fn storm_row(s: &Storm) -> String {
    // A batch is taken in chunks with the loop free between: the timer's lateness is the stall.
    format!(
        "| pending: a storm of {} files written at once ({:.0} ms), half in node_modules/ (not watched), half new in src/ (20,000 files): longest main-thread stall (a 1 ms timer's lateness; p99) | {:.1} ms (p99 {:.1}); the longest stream callback {:.1} ms; pending: {} in {} batches, {} more counted (200 at most) | ≤ 20 ms{} |",
        STORM, s.wrote_ms, s.longest, s.p99, s.longest_batch, s.pending, s.batches, s.more,
        if s.longest > 20.0 { ": missed" } else { "" }
    )
}

/// The table's rows: 20,000 files (with the storm), 100,000 (not with `quick`), the draw.
pub fn rows(quick: bool) -> Vec<String> {
    let writes = if quick { 10 } else { 50 };
    let (w, storm) = watched(20_000, writes, true);
    let mut out = watched_rows(&w);
    out.extend(storm.iter().map(storm_row));
    // Progress on stderr: a full run takes minutes.
    out.iter().for_each(|r| eprintln!("{r}"));
    if !quick {
        let big = watched_rows(&watched(100_000, writes, false).0);
        big.iter().for_each(|r| eprintln!("{r}"));
        out.extend(big);
    }
    let d = draw(if quick { 20 } else { 100 });
    let ms = |side: &str, q: &str| d[side][q].as_f64().unwrap_or(-1.0);
    out.push(format!(
        "| pending: drawing a change of a 1,000-line file ({} hunks) in its window, main thread: view.show; the whole change (counted, drawn, stored, told) | p50 {:.2} ms, p99 {:.2} ms; p50 {:.2} ms, p99 {:.2} ms | ≤ 2 ms |",
        d["hunks"], ms("show", "p50"), ms("show", "p99"), ms("changed", "p50"), ms("changed", "p99")
    ));
    out
}
