//! Checkpoints' numbers: a generated git repository (2,000 and 20,000 files, committed, ~1%
//! modified, a few untracked) checkpointed by a real Neovim with the plugin — the folder's first
//! checkpoint, one after 10 files changed, and `:PiIde changes` after 10 more — timed inside
//! Neovim, with the main loop's stalls measured while keys are typed, as chat_bench does. Then
//! more turns of 10 files each, until one of them prunes (keep.rs repacks the shadow every dozen
//! checkpoints or so): its time, and the disk the shadow takes against the repository's own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pi_ide_testkit::nvim::{temp_dir, Nvim, Options};
use serde_json::json;

/// One run's numbers (ms): wall time, and the 1 ms timer's longest and p99 lateness.
#[derive(Clone, Copy, Default)]
pub(crate) struct Timed {
    pub wall: f64,
    pub longest: f64,
    pub p99: f64,
    /// The main thread's CPU time across the longest gap.
    pub longest_cpu: f64,
}

struct Run {
    first: Timed,
    again: Timed,
    changes: Timed,
    entries: u64,
    /// The slowest of the later checkpoints (the one that repacked), and their median (ms).
    pruning: f64,
    later: f64,
    /// The shadow's disk use after them, and the repository's `.git` (bytes).
    shadow_bytes: u64,
    repo_bytes: u64,
}

/// Stops the timer: its longest and p99 lateness, and the main thread's CPU time across the
/// longest (ms).
pub(crate) fn stalls(nvim: &Nvim) -> (f64, f64, f64) {
    let v = nvim.lua("__s.timer:stop() __s.timer:close() table.sort(__s.gaps) return { __s.gaps[#__s.gaps], __s.gaps[math.max(1, math.floor(#__s.gaps * 0.99))], __s.worst_cpu }");
    let f = |i: usize| v[i].as_f64().unwrap_or(0.0).max(0.0);
    (f(0), f(1), f(2))
}

/// Types into the scratch window (as the user would) until `done` is true.
pub(crate) fn type_until(nvim: &Nvim, done: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !nvim.lua(&format!("return {done}")).as_bool().unwrap_or(false) {
        assert!(Instant::now() < deadline, "timed out waiting for: {done}");
        nvim.request("nvim_input", vec!["ihello world<Esc>".into()]).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// `git <args>` in `dir`, away from the user's and the system's git config.
fn git(dir: &Path, args: &[&str]) {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    let out = c
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false", "-c", "gc.auto=0"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A text file of 1–4 KB, its lines varied by `seed`.
fn contents(seed: usize) -> String {
    let mut x = (seed as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let lines = 20 + (x >> 33) as usize % 60;
    let mut s = String::with_capacity(lines * 52);
    for j in 0..lines {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        s.push_str(&format!("fn item_{seed}_{j}() -> u64 {{ {} }} // generated line\n", x >> 40));
    }
    s
}

/// The repository: `n` files in nested folders, committed; ~1% modified, 5 untracked.
pub(crate) fn generate(n: usize) -> (PathBuf, Vec<String>) {
    let dir = temp_dir(&format!("ckpt-{n}"));
    let paths: Vec<String> = (0..n).map(|i| format!("src/m{:02}/d{:02}/f{i:05}.rs", i / 400, (i / 20) % 20)).collect();
    for (i, p) in paths.iter().enumerate() {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents(i)).unwrap();
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "generated"]);
    // Packed, as a repository that has lived is (and no gc of its own starts mid-measure).
    git(&dir, &["gc", "-q"]);
    for p in paths.iter().step_by(100) {
        append(&dir.join(p), "// modified, not committed\n");
    }
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    for k in 0..5 {
        std::fs::write(dir.join(format!("notes/untracked{k}.txt")), contents(n + k)).unwrap();
    }
    (dir, paths)
}

fn append(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(line.as_bytes()).unwrap();
}

/// Changes 10 files spread over the repository (a different 10 for each `salt`).
pub(crate) fn change_ten(dir: &Path, paths: &[String], salt: usize) {
    let step = paths.len() / 10;
    for j in 0..10 {
        let i = (j * step + 37 * salt + 1) % paths.len();
        append(&dir.join(&paths[i]), &format!("// bench edit {salt}.{j}\n"));
    }
}

/// A checkpoint (`begin`), started and answered on Neovim's clock, keys typed meanwhile.
pub(crate) fn checkpoint(nvim: &Nvim) -> Timed {
    nvim.t("bench.stall_timer_with_cpu", json!([]));
    nvim.lua(
        r#"_G.__j = { t0 = vim.uv.hrtime(), t1 = 0 }
        require("pi-ide.features.checkpoints").run({ op = "begin", agent = "bench" }, function(ok, v)
          __j.t1, __j.ok, __j.err = vim.uv.hrtime(), ok, not ok and tostring(v) or nil
        end)"#,
    );
    type_until(nvim, "__j.t1 > 0");
    let (longest, p99, longest_cpu) = stalls(nvim);
    let v = nvim.lua("return { (__j.t1 - __j.t0) / 1e6, __j.ok, __j.err }");
    assert_eq!(v[1], json!(true), "checkpoint failed: {}", v[2]);
    Timed { wall: v[0].as_f64().unwrap(), longest, p99, longest_cpu }
}

/// `:PiIde changes` -> the quickfix list has its first entry (PiIdeChanges fires right after
/// setqflist); stalls until its tab has opened. Also the entries' count.
pub(crate) fn changes(nvim: &Nvim) -> (Timed, u64) {
    nvim.t("bench.stall_timer_with_cpu", json!([]));
    nvim.t("bench.time_changes", json!([]));
    type_until(nvim, "__c.t1 > 0");
    // The first entry's tab opens next: its cost is the main loop's too.
    nvim.wait_for("#vim.api.nvim_list_tabpages() > 1", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(200));
    let (longest, p99, longest_cpu) = stalls(nvim);
    let v = nvim.lua("return { (__c.t1 - __c.t0) / 1e6, __c.n }");
    (Timed { wall: v[0].as_f64().unwrap(), longest, p99, longest_cpu }, v[1].as_u64().unwrap())
}

/// Checkpoints taken after the first two, 10 files changed before each: enough for one to
/// repack the shadow (it has then gathered a pack per checkpoint).
const LATER: usize = 14;

/// Bytes `dir` takes on disk (its files' blocks, as du counts them).
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match std::fs::symlink_metadata(e.path()) {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// A fresh Neovim (its own XDG_STATE_HOME: nothing cached) in the repository.
fn one_run(dir: &Path, paths: &[String], salt: usize) -> Run {
    let nvim = Nvim::start_with(Options { cwd: Some(dir.to_path_buf()), ..Default::default() });
    nvim.command("edit typed.txt").unwrap();
    let first = checkpoint(&nvim);
    change_ten(dir, paths, 100 * salt);
    let again = checkpoint(&nvim);
    change_ten(dir, paths, 100 * salt + 1);
    let (changes, entries) = changes(&nvim);
    let later: Vec<f64> = (0..LATER)
        .map(|k| {
            change_ten(dir, paths, 100 * salt + 2 + k);
            checkpoint(&nvim).wall
        })
        .collect();
    let pruning = later.iter().copied().fold(0.0, f64::max);
    let shadow_bytes = disk_bytes(&nvim.home.join("state/nvim/pi-ide/checkpoints"));
    Run { first, again, changes, entries, pruning, later: median(later), shadow_bytes, repo_bytes: disk_bytes(&dir.join(".git")) }
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The run with the longest stall, as "longest X ms (Y on the main thread's CPU), p99 Z ms"
/// (p99: the runs' median; the CPU time spans the tick's whole interval, so at most X is shown).
fn stall_text(r: &[Run], f: fn(&Run) -> Timed) -> String {
    let worst = r.iter().map(f).max_by(|a, b| a.longest.total_cmp(&b.longest)).unwrap_or_default();
    let p99 = median(r.iter().map(|x| f(x).p99).collect());
    format!("longest {:.1} ms ({:.1} ms of it on the main thread's CPU), p99 {p99:.1} ms", worst.longest, worst.longest_cpu.min(worst.longest))
}

/// Rows for one repository of `n` files: medians of `runs` runs, stalls the worst of them.
fn rows_for(n: usize, runs: usize) -> Vec<String> {
    let (dir, paths) = generate(n);
    let r: Vec<Run> = (0..runs).map(|k| one_run(&dir, &paths, k)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    let med = |f: fn(&Run) -> f64| median(r.iter().map(f).collect());
    let files = format!("{},{:03}", n / 1000, n % 1000);
    let of = format!("median of {runs}");
    vec![
        format!("| checkpoint, first ({files} files): job started -> its callback, nothing cached ({of}) | {:.1} ms | |", med(|r| r.first.wall)),
        format!("| checkpoint, again ({files} files, 10 changed) ({of}) | {:.1} ms | |", med(|r| r.again.wall)),
        format!(
            "| main thread while they run, keys typed ({files} files; a 1 ms timer's lateness, worst of {runs} runs) | first: {}; again: {} | |",
            stall_text(&r, |r| r.first),
            stall_text(&r, |r| r.again)
        ),
        format!(
            "| :PiIde changes -> quickfix list has its first entry ({files} files, 10 changed; {} entries) ({of}) | {:.1} ms; until its tab is open: {} | |",
            r[0].entries,
            med(|r| r.changes.wall),
            stall_text(&r, |r| r.changes)
        ),
        format!(
            "| checkpoint that prunes (the slowest of {LATER} later ones, 10 files changed before each: the shadow repacked) ({of}) | {:.1} ms (the others: median {:.1} ms) | |",
            med(|r| r.pruning),
            med(|r| r.later)
        ),
        format!(
            "| disk the checkpoints take after {} turns ({files} files) ({of}) | {:.1} MiB (the repository's own .git: {:.1} MiB) | |",
            LATER + 2,
            med(|r| r.shadow_bytes as f64) / 1048576.0,
            med(|r| r.repo_bytes as f64) / 1048576.0
        ),
    ]
}

/// `n` ignored files of an installed `node_modules/` (100 a package), made after the commit.
fn install_node_modules(dir: &Path, n: usize) {
    for i in 0..n {
        let pkg = dir.join(format!("node_modules/pkg{:03}/lib", i / 100));
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join(format!("m{}.js", i % 100)), format!("module.exports = {i};\n")).unwrap();
    }
}

/// The row for a repository of 2,000 files with a `node_modules/` of 30,000 ignored ones, whose
/// changes each checkpoint counts (checkpoint/ignored.rs): a checkpoint after 10 files changed.
fn node_modules_row(runs: usize) -> String {
    let (dir, paths) = generate(2_000);
    install_node_modules(&dir, 30_000);
    let again: Vec<f64> = (0..runs)
        .map(|k| {
            let nvim = Nvim::start_with(Options { cwd: Some(dir.clone()), ..Default::default() });
            nvim.command("edit typed.txt").unwrap();
            checkpoint(&nvim);
            change_ten(&dir, &paths, 100 * k);
            checkpoint(&nvim).wall
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    format!("| checkpoint, again (2,000 files, 10 changed; node_modules/ of 30,000 ignored files) (median of {runs}) | {:.1} ms | |", median(again))
}

/// The table's rows: 2,000 files, then 20,000 (one run each with `quick`), then 2,000 beside a
/// large `node_modules/`.
pub fn rows(quick: bool) -> Vec<String> {
    let runs = if quick { 1 } else { 3 };
    let mut out = rows_for(2_000, runs);
    out.extend(rows_for(20_000, runs));
    out.push(node_modules_row(runs));
    out
}
