//! Pending changes (features/pending/): what an agent writes by itself, no review asked, is
//! seen the moment it lands while an agent is connected, drawn in the file's window and kept
//! or undone hunk by hunk on disk. Neovim's own writes never are. The agent here is a connected
//! client (the pi-ide wire) whose writes are a shell's, as an agent's own edit tool writes.

use std::path::Path;

use serde_json::json;

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

const SIX: &str = "one\ntwo\nthree\nfour\nfive\nsix\n";
const TWO_HUNKS: &str = "ONE\ntwo\nthree\nfour\nFIVE\nsix\n";

/// A Neovim with an agent connected (so the workspace is watched), `a.txt` open in its window.
fn rig() -> (Nvim, pi_ide_testkit::Peer) {
    rig_with(Options::default(), SIX)
}

/// The same with `opts` (its `after` is the rig's), `a.txt` holding `a` first.
fn rig_with(opts: Options, a: &str) -> (Nvim, pi_ide_testkit::Peer) {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ checkpoints = { idle_ms = 600000 } })".into()),
        ..opts
    });
    nvim.command("set columns=80").unwrap();
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    std::fs::write(nvim.cwd.join("a.txt"), a).unwrap();
    nvim.command("edit a.txt").unwrap();
    nvim.lua("_G.pending_events = {} vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeChangePending', callback = function(e) table.insert(_G.pending_events, e.data) end })");
    let p = nvim.peer();
    nvim.wait_for("require('pi-ide.features.pending').health():find('^watching') ~= nil", PATIENCE);
    (nvim, p)
}

fn pending(nvim: &Nvim) -> Vec<serde_json::Value> {
    nvim.lua("return require('pi-ide').info().pending").as_array().cloned().unwrap_or_default()
}

/// Waits until the pending store under `state` (XDG_STATE_HOME) names each of `names`.
fn stored(state: &Path, names: &[&str]) {
    wait_until("the pending changes stored", PATIENCE, || {
        let index = std::fs::read_dir(state.join("nvim/pi-ide/pending")).into_iter().flatten().flatten().next();
        index.and_then(|d| std::fs::read_to_string(d.path().join("index.json")).ok()).is_some_and(|t| names.iter().all(|n| t.contains(n)))
    });
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

#[test]
fn a_write_no_review_showed_is_pending_at_once_drawn_in_its_window_and_decided_hunk_by_hunk() {
    let (nvim, _p) = rig();
    let (a, new) = (nvim.cwd.join("a.txt"), nvim.cwd.join("new.txt"));
    std::fs::write(&a, TWO_HUNKS).unwrap();
    std::fs::write(&new, "made\n").unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 2", PATIENCE);
    let list = pending(&nvim);
    let of = |name: &str| list.iter().find(|e| e["path"].as_str().unwrap().ends_with(name)).cloned().unwrap();
    assert_eq!((of("a.txt")["kind"].clone(), of("a.txt")["hunks"].clone()), (json!("changed"), json!(2)), "{list:?}");
    assert_eq!(of("new.txt")["kind"], json!("created"), "{list:?}");
    assert!(nvim.lua("return #_G.pending_events").as_i64().unwrap() >= 2);
    // Its window shows the file as the agent left it, the old lines drawn above the new.
    nvim.wait_for("vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'ONE'", PATIENCE);
    let marks = nvim.lua("return #vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('pi_ide_pending'), 0, -1, {})");
    assert!(marks.as_i64().unwrap() >= 4, "{marks}");
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().contains("⚠ 2 changes to review"), "{status}");

    // The first hunk undone on disk, the second kept.
    type_keys(&nvim, "gg:PiIde hunk reject<CR>");
    nvim.wait_for("vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'one'", PATIENCE);
    assert_eq!(read(&a).as_deref(), Some("one\ntwo\nthree\nfour\nFIVE\nsix\n"));
    type_keys(&nvim, "gg]h");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(5));
    type_keys(&nvim, ":PiIde hunk accept<CR>");
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    assert_eq!(read(&a).as_deref(), Some("one\ntwo\nthree\nfour\nFIVE\nsix\n"));

    // The created file undone whole: it is gone.
    type_keys(&nvim, ":edit new.txt<CR>:PiIde reject<CR>");
    nvim.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    assert!(!new.exists(), "the created file was not removed");
    assert_eq!(pending(&nvim).len(), 0);
}

#[test]
fn neovims_own_write_is_never_pending_and_a_later_agent_write_is_judged_against_it() {
    let (nvim, _p) = rig();
    let a = nvim.cwd.join("a.txt");
    type_keys(&nvim, "ggcwuno<Esc>:w<CR>");
    assert_eq!(read(&a).as_deref(), Some("uno\ntwo\nthree\nfour\nfive\nsix\n"));
    // The agent writes after the user's save: only its own line is pending, and undoing it keeps the save.
    std::fs::write(&a, "uno\ntwo\nthree\nfour\nfive\nSIX\n").unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    assert_eq!(pending(&nvim)[0]["hunks"], json!(1), "{:?}", pending(&nvim));
    nvim.wait_for("vim.api.nvim_buf_get_lines(0, 5, 6, false)[1] == 'SIX'", PATIENCE);
    type_keys(&nvim, ":PiIde reject<CR>");
    nvim.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    assert_eq!(read(&a).as_deref(), Some("uno\ntwo\nthree\nfour\nfive\nsix\n"));
}

#[test]
fn an_undo_never_overwrites_a_write_that_came_after_the_change_was_shown() {
    let (nvim, _p) = rig();
    let a = nvim.cwd.join("a.txt");
    std::fs::write(&a, TWO_HUNKS).unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    nvim.wait_for("vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'ONE'", PATIENCE);
    // The user's unsaved edit in the buffer: nothing is written under it.
    type_keys(&nvim, "Gox<Esc>:PiIde hunk reject<CR>");
    assert_eq!(read(&a).as_deref(), Some(TWO_HUNKS));
    assert!(nvim.notes().iter().any(|n| n.contains("unsaved edits")), "{:?}", nvim.notes());
    type_keys(&nvim, "u");
}



fn rig_at(opts: Options) -> (Nvim, pi_ide_testkit::Peer) {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ checkpoints = { idle_ms = 600000 } })".into()),
        ..opts
    });
    nvim.command("set columns=80").unwrap();
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let p = nvim.peer();
    nvim.wait_for("require('pi-ide.features.pending').health():find('^watching') ~= nil", PATIENCE);
    (nvim, p)
}

#[test]
fn an_undecided_change_stays_across_a_restart_and_an_undone_deletion_puts_the_file_back() {
    let shared = pi_ide_testkit::nvim::temp_dir("pending-restart");
    let (work, state) = (shared.join("work"), shared.join("state"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), SIX).unwrap();
    std::fs::write(work.join("gone.txt"), "keep me\n").unwrap();
    let opts = || Options { cwd: Some(work.clone()), env: vec![("XDG_STATE_HOME".into(), state.display().to_string())], ..Default::default() };
    let (first, p) = rig_at(opts());
    std::fs::write(work.join("a.txt"), TWO_HUNKS).unwrap();
    std::fs::remove_file(work.join("gone.txt")).unwrap();
    first.wait_for("#require('pi-ide').info().pending == 2", PATIENCE);
    // Stored as they come (a crash right after loses nothing): the index names both.
    stored(&state, &["a.txt", "gone.txt"]);
    drop(p);
    drop(first);
    // No agent yet: what was left undecided is there at once.
    let again = Nvim::start_with(Options { after: Some("require('pi-ide').setup({})".into()), ..opts() });
    again.wait_for("#require('pi-ide').info().pending == 2", PATIENCE);
    let kinds: Vec<String> = pending(&again).iter().map(|e| e["kind"].as_str().unwrap().to_owned()).collect();
    assert!(kinds.contains(&"deleted".to_owned()) && kinds.contains(&"changed".to_owned()), "{kinds:?}");
    again.command("edit a.txt").unwrap();
    again.wait_for("#vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('pi_ide_pending'), 0, -1, {}) > 0", PATIENCE);
    type_keys(&again, ":PiIde reject<CR>");
    again.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    assert_eq!(read(&work.join("a.txt")).as_deref(), Some(SIX));
    type_keys(&again, ":PiIde changes undo<CR>");
    again.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    assert_eq!(read(&work.join("gone.txt")).as_deref(), Some("keep me\n"));
    // Nothing left to keep: the store is gone, so a start has nothing to look for.
    wait_until("the store removed", PATIENCE, || !state.join("nvim/pi-ide/pending").exists());
}

#[test]
fn an_empty_index_an_older_version_left_is_removed_at_start_so_that_nothing_kept_costs_nothing() {
    let shared = pi_ide_testkit::nvim::temp_dir("pending-empty");
    let (work, state) = (shared.join("work"), shared.join("state"));
    std::fs::create_dir_all(&work).unwrap();
    // Two folders' indexes that keep nothing (this folder's and another's), and one that keeps
    // a change of a third folder: only the empty ones go.
    let store = state.join("nvim/pi-ide/pending");
    for (name, index) in [("0123456789abcdef", "{\"entries\":[]}"), ("fedcba9876543210", "{\"entries\":[]}"), ("00000000000000aa", "{\"entries\":[{\"path\":\"/nowhere/x\",\"agent\":\"pi\",\"kind\":\"created\"}]}")] {
        std::fs::create_dir_all(store.join(name)).unwrap();
        std::fs::write(store.join(name).join("index.json"), index).unwrap();
    }
    let opts = || Options { cwd: Some(work.clone()), env: vec![("XDG_STATE_HOME".into(), state.display().to_string())], after: Some("require('pi-ide').setup({})".into()), ..Default::default() };
    let nvim = Nvim::start_with(opts());
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    wait_until("the empty indexes removed", PATIENCE, || !store.join("0123456789abcdef").exists() && !store.join("fedcba9876543210").exists());
    assert!(store.join("00000000000000aa/index.json").exists(), "a kept change of another folder was removed");
    assert_eq!(nvim.lua("return #require('pi-ide').info().pending"), json!(0));
    // Only an empty index left: the store goes whole, and the next start looks for nothing.
    drop(nvim);
    std::fs::remove_dir_all(store.join("00000000000000aa")).unwrap();
    std::fs::create_dir_all(store.join("0123456789abcdef")).unwrap();
    std::fs::write(store.join("0123456789abcdef/index.json"), "{\"entries\":[]}").unwrap();
    let again = Nvim::start_with(opts());
    again.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    wait_until("the store removed", PATIENCE, || !store.exists());
}

#[test]
fn a_storm_keeps_ignored_files_out_caps_what_is_listed_and_binary_files_are_named_not_diffed() {
    let (nvim, _p) = rig();
    let ws = nvim.cwd.clone();
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE); // .gitignore itself
    type_keys(&nvim, ":edit .gitignore<CR>:PiIde accept<CR>");
    nvim.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    std::fs::write(ws.join("logo.png"), b"\x89PNG\0\0binary").unwrap();
    nvim.wait_for("require('pi-ide.features.pending').entry(vim.fn.getcwd() .. '/logo.png') ~= nil", PATIENCE);
    for dir in ["node_modules/pkg", "build", "src"] {
        std::fs::create_dir_all(ws.join(dir)).unwrap();
    }
    for i in 0..300 {
        std::fs::write(ws.join(format!("node_modules/pkg/{i}.js")), "x").unwrap();
        std::fs::write(ws.join(format!("build/{i}.o")), "x").unwrap();
        std::fs::write(ws.join(format!("src/{i}.txt")), format!("{i}\n")).unwrap();
    }
    nvim.wait_for("#require('pi-ide').info().pending == 200", PATIENCE);
    wait_until("the storm told", PATIENCE, || nvim.notes().iter().any(|n| n.contains("more)")));
    let list = pending(&nvim);
    assert!(list.len() <= 205 && list.len() >= 100, "{}", list.len());
    assert!(list.iter().all(|e| !e["path"].as_str().unwrap().contains("node_modules") && !e["path"].as_str().unwrap().contains("/build/")));
    assert!(nvim.notes().iter().any(|n| n.contains("more)")), "{:?}", nvim.notes());
    assert!(nvim.notes().iter().all(|n| n.chars().count() <= 80), "{:?}", nvim.notes());
    type_keys(&nvim, ":edit logo.png<CR>:PiIde hunk reject<CR>");
    assert!(nvim.notes().iter().any(|n| n.contains("binary, decided as a whole")), "{:?}", nvim.notes());
    type_keys(&nvim, ":PiIde reject<CR>");
    wait_until("logo.png undone (it was created)", PATIENCE, || !ws.join("logo.png").exists());
}

#[test]
fn past_the_systems_watch_limit_it_says_so_once_and_checkhealth_shows_it() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({})".into()),
        env: vec![("PI_IDE_FAILPOINTS".into(), "watch-limit=2".into())],
        ..Default::default()
    });
    for d in ["a", "b", "c"] {
        std::fs::create_dir_all(nvim.cwd.join(d)).unwrap();
    }
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let _p = nvim.peer();
    nvim.wait_for("require('pi-ide.features.pending').health():find('^gave up') ~= nil", PATIENCE);
    let notes = nvim.notes();
    assert_eq!(notes.iter().filter(|n| n.contains("max_user_watches")).count(), 1, "{notes:?}");
    nvim.command("checkhealth pi-ide").unwrap();
    let health = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    assert!(health.as_str().unwrap().contains("agents' own writes: gave up"), "{health}");
}

#[test]
fn a_link_swapped_in_for_a_file_is_named_and_undone_without_following_it() {
    let (nvim, _p) = rig();
    let outside = pi_ide_testkit::nvim::temp_dir("pending-outside").join("profile.sh");
    std::fs::write(&outside, "outside\n").unwrap();
    let a = nvim.cwd.join("a.txt");
    std::fs::remove_file(&a).unwrap();
    std::os::unix::fs::symlink(&outside, &a).unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    type_keys(&nvim, ":PiIde hunk reject<CR>");
    assert!(nvim.notes().iter().any(|n| n.contains("a symlink, decided as a whole")), "{:?}", nvim.notes());
    type_keys(&nvim, ":PiIde reject<CR>");
    wait_until("a.txt a file again", PATIENCE, || std::fs::symlink_metadata(&a).is_ok_and(|m| m.is_file()));
    assert_eq!(read(&a).as_deref(), Some(SIX));
    assert_eq!(read(&outside).as_deref(), Some("outside\n"), "the link's target was written");
}

#[test]
fn a_kept_change_is_the_baseline_of_the_agents_next_write_to_that_file() {
    let (nvim, _p) = rig();
    let a = nvim.cwd.join("a.txt");
    std::fs::write(&a, TWO_HUNKS).unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    nvim.wait_for("vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'ONE'", PATIENCE);
    type_keys(&nvim, ":PiIde accept<CR>");
    nvim.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    std::fs::write(&a, "ONE\ntwo\nthree\nfour\nFIVE\nSIX\n").unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    assert_eq!(pending(&nvim)[0]["hunks"], json!(1), "the kept hunks came back: {:?}", pending(&nvim));
    nvim.wait_for("vim.api.nvim_buf_get_lines(0, 5, 6, false)[1] == 'SIX'", PATIENCE);
    type_keys(&nvim, ":PiIde reject<CR>");
    nvim.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    assert_eq!(read(&a).as_deref(), Some(TWO_HUNKS));
}

#[test]
fn the_line_that_tells_a_change_keeps_its_hint_at_80_columns_whatever_the_name() {
    let (nvim, _p) = rig();
    let deep = "a/very/deep/folder/of/the/project/with/a/name/longer/than/the/line";
    std::fs::create_dir_all(nvim.cwd.join(deep)).unwrap();
    nvim.wait_for("true", PATIENCE);
    std::fs::write(nvim.cwd.join(deep).join("naïve-file-name.txt"), "x\n").unwrap();
    wait_until("told", PATIENCE, || nvim.notes().iter().any(|n| n.contains("changed")));
    let note = nvim.notes().into_iter().find(|n| n.contains("changed")).unwrap();
    assert!(note.ends_with(" · :PiIde changes") && note.contains("…") && note.contains("naïve-file-name.txt"), "{note}");
    assert!(note.chars().count() <= 80 - 12, "{note}: {} columns", note.chars().count());
}

#[test]
fn an_undecided_change_outlives_a_crash_of_neovim_and_is_undone_to_its_baseline_after_the_restart() {
    let shared = pi_ide_testkit::nvim::temp_dir("pending-restart");
    let (work, state) = (shared.join("work"), shared.join("state"));
    std::fs::create_dir_all(&work).unwrap();
    let opts = || Options { cwd: Some(work.clone()), env: vec![("XDG_STATE_HOME".into(), state.display().to_string())], ..Default::default() };
    let (first, p) = rig_with(opts(), SIX);
    std::fs::write(work.join("a.txt"), TWO_HUNKS).unwrap();
    std::fs::write(work.join("new.txt"), "made\n").unwrap();
    first.wait_for("#require('pi-ide').info().pending == 2", PATIENCE);
    stored(&state, &["a.txt", "new.txt"]);
    // Killed, as a crash: nothing runs at exit.
    drop(p);
    drop(first);
    let (again, _p) = rig_with(opts(), TWO_HUNKS);
    again.wait_for("#require('pi-ide').info().pending == 2", PATIENCE);
    type_keys(&again, ":PiIde reject<CR>");
    wait_until("a.txt put back", PATIENCE, || read(&work.join("a.txt")).as_deref() == Some(SIX));
    type_keys(&again, ":edit new.txt<CR>:PiIde reject<CR>");
    wait_until("new.txt removed", PATIENCE, || !work.join("new.txt").exists());
    again.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
}

#[test]
fn a_temporary_file_seen_before_it_was_renamed_over_its_file_is_pending_no_more_once_gone() {
    let (nvim, _p) = rig();
    let tmp = nvim.cwd.join("a.txt.tmp.1234.abcdef");
    std::fs::write(&tmp, TWO_HUNKS).unwrap();
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    // Renamed over a.txt, as an agent's atomic write does: only a.txt stays, changed.
    std::fs::rename(&tmp, nvim.cwd.join("a.txt")).unwrap();
    wait_until("only a.txt pending", PATIENCE, || {
        let list = pending(&nvim);
        list.len() == 1 && list[0]["path"].as_str().unwrap().ends_with("/a.txt") && list[0]["kind"] == json!("changed")
    });
}
