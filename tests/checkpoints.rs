//! Checkpoints of agent turns (:PiIde changes, :PiIde undo) with the stand-in ACP agent
//! (peer/src/bin/fake_acp_agent.rs), whose `shell` prompt changes files through `sh -c` as an
//! agent's shell tool does: nothing asked, nothing reviewed. The user's repository must come out
//! as it went in (HEAD, stash list, index); every change is listed, shown and put back.
//! tests/checkpoints_real_pi.rs does the same with the real Pi's bash tool.

mod common;
use std::path::Path;
use std::process::Command;

use common::*;
use pi_ide_peer::nvim::{plugin_root, Options};

fn fake() -> String {
    plugin_root().join("target/release/fake_acp_agent").display().to_string()
}

/// A Neovim whose chat agent `fake` is the stand-in; `extra`: more of setup's options.
fn rig(extra: &str) -> Nvim {
    rig_with(extra, Options::default())
}

fn rig_with(extra: &str, opts: Options) -> Nvim {
    let nvim = Nvim::start_with(Options {
        after: Some(format!(
            "require('pi-ide').setup({{ chat = {{ agents = {{ fake = {{ cmd = {{ {:?} }}, label = 'Fake' }} }} }}, {extra} }})",
            fake()
        )),
        ..opts
    });
    nvim.command("set columns=200").unwrap();
    nvim.record_notify();
    nvim.lua("_G.checked = {} vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeTurnChecked', callback = function(e) table.insert(_G.checked, e.data) end })");
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim.command("PiIde chat fake").unwrap();
    nvim.wait_for("require('pi-ide.features.chat.acp').get('fake').session ~= nil", PATIENCE);
    nvim.command("stopinsert").unwrap();
    nvim
}

fn chat_text(nvim: &Nvim) -> String {
    nvim.lua("return require('pi-ide.features.chat.view').of('fake').text()").as_str().unwrap_or_default().to_owned()
}

/// Sends `prompt` and waits for its turn's end checkpoint (the `n`-th).
fn turn(nvim: &Nvim, prompt: &str, n: usize) {
    nvim.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec![prompt.into()]);
    nvim.wait_for(&format!("#_G.checked >= {n}"), PATIENCE);
}

fn sh(dir: &Path, script: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(script).current_dir(dir).env_remove("GIT_DIR").env_remove("GIT_INDEX_FILE").output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit, a stash entry and a staged change.
fn repository(dir: &Path) {
    sh(dir, "git init -q && printf 'one\\ntwo\\n' > a.txt && printf 'gone\\n' > gone.txt && git add . \
        && git -c user.email=t@t -c user.name=t commit -qm first && echo stash >> a.txt \
        && git -c user.email=t@t -c user.name=t stash -q && echo staged > s.txt && git add s.txt");
}

/// What must never change in the user's repository (status without refreshing the index).
fn repository_state(dir: &Path) -> String {
    sh(dir, "sha1sum .git/index; git rev-parse HEAD; git stash list; git ls-files -s; GIT_OPTIONAL_LOCKS=0 git status --porcelain")
}

fn quickfix(nvim: &Nvim) -> Vec<(String, i64, String)> {
    let v = nvim.lua("return vim.tbl_map(function(i) return { vim.fn.bufname(i.bufnr), i.lnum, i.text } end, vim.fn.getqflist())");
    v.as_array().unwrap().iter().map(|i| (i[0].as_str().unwrap().to_owned(), i[1].as_i64().unwrap(), i[2].as_str().unwrap().to_owned())).collect()
}

#[test]
fn a_shell_write_is_listed_taken_back_hunk_by_hunk_and_the_repository_is_untouched() {
    let nvim = rig("");
    let dir = nvim.cwd.clone();
    repository(&dir);
    let before = repository_state(&dir);
    turn(&nvim, "shell sed -i s/two/TWO/ a.txt && echo made > new.txt && rm gone.txt", 1);
    wait_until("the chat's warning", PATIENCE, || chat_text(&nvim).contains("⚠ 3 files changed without review: :PiIde changes"));
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().contains("⚠ 3 files changed without review"), "{status}");
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 3 and vim.t.pi_ide_changes == true and vim.wo.diff", PATIENCE);
    let qf = quickfix(&nvim);
    assert!(qf[0].0.ends_with("a.txt") && qf[0].1 == 2 && qf[0].2 == "changed · turn 1 fake · without review (+1 −1)", "{qf:?}");
    assert!(qf[1].0.ends_with("gone.txt") && qf[1].2.starts_with("deleted · turn 1 fake"), "{qf:?}");
    assert!(qf[2].0.ends_with("new.txt") && qf[2].2.starts_with("created · turn 1 fake"), "{qf:?}");
    let left = nvim.lua("local w = vim.api.nvim_tabpage_list_wins(0)[1] return { vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)), vim.wo[w].diff }");
    assert_eq!(left, serde_json::json!(["pi-ide://turn-1/a.txt", true]));
    // Looked at: the statusline no longer warns.
    assert!(!nvim.lua("return require('pi-ide').status()").as_str().unwrap().contains("⚠"));
    // The hunk taken back with `do` in the file's window, and :w typed as the user does.
    type_keys(&nvim, "2Gdo");
    type_keys(&nvim, ":w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"one\ntwo\n");
    // :cnext: the view follows, the next file beside its checkpoint.
    type_keys(&nvim, ":cnext<CR>");
    nvim.wait_for("vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1])) == 'pi-ide://turn-1/gone.txt'", PATIENCE);
    let shown = nvim.lua("return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1]), 0, -1, false)");
    assert_eq!(shown, serde_json::json!(["gone"]));
    sh(&dir, "printf 'gone\\n' > gone.txt && rm new.txt");
    assert_eq!(repository_state(&dir), before);
}

const PROMPT_AREA: &str = "return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('Fake prompt'), 0, -1, false), '\\n')";

#[test]
fn undo_in_a_folder_that_is_not_a_repository_puts_everything_back_and_gives_the_prompt_back() {
    let nvim = rig("");
    let dir = nvim.cwd.clone();
    std::fs::write(dir.join("a.txt"), b"one\r\ntwo\xff\n").unwrap();
    std::fs::write(dir.join("gone.bin"), b"\0\x01binary").unwrap();
    let prompt = "shell printf 'changed' > a.txt && echo made > new.txt && rm gone.bin";
    turn(&nvim, prompt, 1);
    // The confirmation lists the files; answered "Undo".
    nvim.lua("_G.asked = nil vim.fn.confirm = function(msg) _G.asked = msg return 1 end");
    nvim.command("PiIde undo").unwrap();
    nvim.wait_for("vim.fn.filereadable('new.txt') == 0 and vim.fn.filereadable('gone.bin') == 1", PATIENCE);
    // The files are written on the checkpoints' thread; the prompt comes back when Neovim hears of it.
    wait_until("the prompt back", PATIENCE, || nvim.lua(PROMPT_AREA).as_str() == Some(prompt));
    let asked = nvim.lua("return _G.asked").as_str().unwrap().to_owned();
    assert!(asked.contains("Undo turn 1 (fake)?") && asked.contains("put back a.txt") && asked.contains("delete (created by the turn) new.txt"), "{asked}");
    assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"one\r\ntwo\xff\n");
    assert_eq!(std::fs::read(dir.join("gone.bin")).unwrap(), b"\0\x01binary");
    // Undone: the next undo has nothing of that turn to do.
    nvim.command("PiIde undo!").unwrap();
    wait_until("the note", PATIENCE, || nvim.notes().iter().any(|n| n.contains("every turn of this folder is undone")));
}

#[test]
fn a_file_changed_after_the_turn_is_put_back_only_when_its_name_is_typed() {
    let nvim = rig("");
    let dir = nvim.cwd.clone();
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.join("b.txt"), "bee\n").unwrap();
    turn(&nvim, "shell echo agent > a.txt && echo agent > b.txt", 1);
    // The user edits a.txt in Neovim after the turn, and writes it as a person does.
    nvim.command("wincmd p | edit a.txt").unwrap();
    type_keys(&nvim, "ccmine<Esc>:w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    nvim.lua("vim.fn.input = function() return '' end");
    nvim.command("PiIde undo!").unwrap();
    wait_until("the report", PATIENCE, || nvim.notes().iter().any(|n| n.contains("left as they are a.txt")));
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(dir.join("b.txt")).unwrap(), "bee\n");
}

#[test]
fn a_reviewed_change_is_not_counted_and_a_workspace_over_the_cap_skips_the_checkpoint_with_a_message() {
    let nvim = rig("");
    turn(&nvim, &format!("create {} hello", nvim.cwd.join("r.txt").display()), 0);
    nvim.wait_for("#require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil", PATIENCE);
    type_keys(&nvim, ":w<CR>");
    nvim.wait_for("#_G.checked >= 1", PATIENCE);
    let checked = nvim.lua("return _G.checked[1]");
    assert_eq!((checked["changed"].clone(), checked["unreviewed"].clone()), (serde_json::json!(["r.txt"]), serde_json::json!([])));
    assert!(!chat_text(&nvim).contains("without review"));

    let capped = rig("checkpoints = { max_files = 1 }");
    std::fs::write(capped.cwd.join("x"), "1").unwrap();
    std::fs::write(capped.cwd.join("y"), "2").unwrap();
    capped.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec!["stream 3".into()]);
    wait_until("the answer", PATIENCE, || chat_text(&capped).contains("c3"));
    assert!(capped.notes().iter().any(|n| n.contains("checkpoint skipped: the workspace has more than 1 files (the cap)")), "{:?}", capped.notes());
}

#[test]
fn checkpoints_survive_a_crash_of_neovim_and_undo_after_the_restart() {
    let shared = pi_ide_peer::nvim::temp_dir("cp-restart");
    let (work, state) = (shared.join("work"), shared.join("state"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "before\n").unwrap();
    let opts = || Options { cwd: Some(work.clone()), env: vec![("XDG_STATE_HOME".into(), state.display().to_string())], ..Default::default() };
    let first = rig_with("", opts());
    turn(&first, "shell echo after > a.txt", 1);
    // Killed, as a crash: nothing runs at exit.
    drop(first);
    let again = rig_with("", opts());
    again.command("PiIde changes").unwrap();
    again.wait_for("#vim.fn.getqflist() == 1", PATIENCE);
    again.command("PiIde undo!").unwrap();
    wait_until("a.txt put back", PATIENCE, || std::fs::read_to_string(work.join("a.txt")).unwrap() == "before\n");
}

#[test]
fn an_agent_in_a_terminal_starts_a_turn_with_its_first_request_after_quiet() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ diagnostics_timeout_ms = 600000, checkpoints = { idle_ms = 0 } })".into()),
        ..Default::default()
    });
    nvim.lua("_G.started = {} vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeCheckpoint', callback = function(e) table.insert(_G.started, e.data) end })");
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    std::fs::write(nvim.cwd.join("a.txt"), "one\n").unwrap();
    let mut p = nvim.peer();
    p.call_tool("getDiagnostics", serde_json::json!({})).unwrap();
    nvim.wait_for("#_G.started == 1", PATIENCE);
    std::fs::write(nvim.cwd.join("a.txt"), "two\n").unwrap();
    // The next request (no quiet needed: idle_ms = 0) ends that turn with what it changed.
    p.call_tool("getDiagnostics", serde_json::json!({})).unwrap();
    nvim.wait_for("#_G.started == 2", PATIENCE);
    let started = nvim.lua("return _G.started[1]");
    assert_eq!(started["turn"], 1);
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().ends_with("⚠ 1 file changed without review: :PiIde changes"), "{status}");
    nvim.command("PiIde changes 1").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 1", PATIENCE);
    let qf = quickfix(&nvim);
    assert!(qf[0].2.starts_with("changed · turn 1 "), "{qf:?}");
}

#[test]
fn a_checkpoint_that_hangs_holds_the_turn_ten_seconds_at_most_and_says_so() {
    let work = pi_ide_peer::nvim::temp_dir("cp-hung");
    let hung = work.canonicalize().unwrap().display().to_string();
    let opts = Options { cwd: Some(work.clone()), env: vec![("PI_IDE_FAILPOINTS".into(), format!("hang-under={hung}"))], ..Default::default() };
    let nvim = rig_with("", opts);
    nvim.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec!["stream 3".into()]);
    wait_until("the answer", PATIENCE, || chat_text(&nvim).contains("c3"));
    assert!(nvim.notes().iter().any(|n| n.contains("the checkpoint is taking long: the turn starts without waiting for it")), "{:?}", nvim.notes());
    // Neovim stayed responsive throughout (the worker hangs, not the main loop).
    responsive(&nvim, std::time::Duration::from_secs(5));
}
