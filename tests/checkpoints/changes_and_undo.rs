//! Checkpoints of agent turns (:PiIde changes, :PiIde undo) with the fake ACP agent
//! (testkit/src/bin/fake_acp_agent.rs), whose `shell` prompt changes files through `sh -c` as an
//! agent's shell tool does: nothing asked, nothing reviewed. The user's repository must come out
//! as it went in (HEAD, stash list, index); every change is listed, shown and put back.
//! tests/real_agents/pi_checkpoints.rs does the same with the real Pi's bash tool.

use std::path::Path;
use std::process::Command;

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, Options};

fn fake() -> String {
    plugin_root().join("target/release/fake_acp_agent").display().to_string()
}

/// A Neovim whose chat agent `fake` is the fake ACP agent; `extra`: more of setup's options.
fn rig(extra: &str) -> Nvim {
    rig_with(extra, Options::default())
}

pub(super) fn rig_with(extra: &str, opts: Options) -> Nvim {
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
pub(super) fn turn(nvim: &Nvim, prompt: &str, n: usize) {
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
    let left = nvim.lua("local w = vim.api.nvim_tabpage_list_wins(0)[1] return { vim.fn.bufname(vim.api.nvim_win_get_buf(w)), vim.wo[w].diff }");
    assert_eq!(left, serde_json::json!(["a.txt (turn 1)", true]));
    // Looked at: the statusline no longer warns.
    assert!(!nvim.lua("return require('pi-ide').status()").as_str().unwrap().contains("⚠"));
    // The hunk taken back with `do` in the file's window, and :w typed as the user does.
    type_keys(&nvim, "2Gdo");
    type_accept(&nvim, ":w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"one\ntwo\n");
    // :cnext: the view follows, the next file beside its checkpoint.
    type_keys(&nvim, ":cnext<CR>");
    nvim.wait_for("vim.fn.bufname(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1])) == 'gone.txt (turn 1)'", PATIENCE);
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
    type_accept(&nvim, "ccmine<Esc>:w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    nvim.lua("vim.fn.input = function() return '' end");
    nvim.command("PiIde undo!").unwrap();
    wait_until("the report", PATIENCE, || nvim.notes().iter().any(|n| n.contains("left as they are a.txt")));
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(dir.join("b.txt")).unwrap(), "bee\n");
}

#[test]
fn a_write_between_two_chat_turns_is_said_at_the_next_turns_start_and_listed_as_between_turns() {
    let nvim = rig("");
    let dir = nvim.cwd.clone();
    std::fs::write(dir.join("bg.txt"), "before\n").unwrap();
    std::fs::write(dir.join("mine.txt"), "mine\n").unwrap();
    turn(&nvim, "stream 3", 1);
    // After that turn's end the agent's background job writes bg.txt, and the user writes
    // mine.txt in Neovim: only the job's write is no one's.
    std::fs::write(dir.join("bg.txt"), "from the background\n").unwrap();
    nvim.command("wincmd p | edit mine.txt").unwrap();
    type_accept(&nvim, "ccedited<Esc>:w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    turn(&nvim, "stream 3", 2);
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().ends_with("⚠ 1 file changed without review between turns: :PiIde changes"), "{status}");
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 2 and vim.t.pi_ide_changes == true", PATIENCE);
    let qf = quickfix(&nvim);
    assert!(qf[0].0.ends_with("bg.txt") && qf[0].2 == "changed · turn 2 between turns · without review (+1 −1)", "{qf:?}");
    assert!(qf[1].0.ends_with("mine.txt") && qf[1].2 == "changed · turn 2 between turns · edited in Neovim (+1 −1)", "{qf:?}");
    // The turn after it is the chat's, which changed nothing.
    assert_eq!(nvim.lua("return _G.checked[2].turn"), json!(3));
}

#[test]
fn a_reviewed_change_is_not_counted_and_a_workspace_over_the_cap_skips_the_checkpoint_with_a_message() {
    let nvim = rig("");
    turn(&nvim, &format!("create {} hello", nvim.cwd.join("r.txt").display()), 0);
    nvim.wait_for("#require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil", PATIENCE);
    type_accept(&nvim, ":w<CR>");
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
    let shared = pi_ide_testkit::nvim::temp_dir("cp-restart");
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
    let work = pi_ide_testkit::nvim::temp_dir("cp-hung");
    let hung = work.canonicalize().unwrap().display().to_string();
    let opts = Options { cwd: Some(work.clone()), env: vec![("PI_IDE_FAILPOINTS".into(), format!("hang-under={hung}"))], ..Default::default() };
    let nvim = rig_with("", opts);
    nvim.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec!["stream 3".into()]);
    wait_until("the answer", PATIENCE, || chat_text(&nvim).contains("c3"));
    assert!(nvim.notes().iter().any(|n| n.contains("the checkpoint is taking long: the turn starts without waiting for it")), "{:?}", nvim.notes());
    // Neovim stayed responsive throughout (the worker hangs, not the main loop).
    responsive(&nvim, std::time::Duration::from_secs(5));
}

/// `git <args>` in `dir` for a test's setup, with no config of the machine's (nor the traps).
fn setup_git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Every hook git knows of.
const HOOKS: [&str; 29] = [
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
    "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change", "git-p4-pre-submit",
];

/// A folder of every hook, each leaving the marker `<scope>-hook-<name>` in `markers`.
fn hooks(dir: &Path, markers: &Path, scope: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    for h in HOOKS {
        let path = dir.join(h);
        std::fs::write(&path, format!("#!/bin/sh\ntouch '{}/{scope}-hook-{h}'\ncat >/dev/null 2>&1\nexit 0\n", markers.display())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Config naming a program for everything git may run (each leaves the marker `<scope>-<key>`,
/// and passes its input through, as a filter must), a hooks folder, and an included file that
/// names them all again.
fn trap_config(at: &Path, markers: &Path, scope: &str) -> String {
    let t = |key: &str| format!("\"sh -c 'touch {}/{scope}-{key}; cat'\"", markers.display());
    let hooks_dir = at.join(format!("{scope}-hooks"));
    hooks(&hooks_dir, markers, scope);
    let mut text = format!(
        "[core]\n\tfsmonitor = {}\n\thooksPath = {}\n\tpager = {}\n\teditor = {}\n\tsshCommand = {}\n\taskPass = {}\n\talternateRefsCommand = {}\n\
         [filter \"trap\"]\n\tclean = {}\n\tsmudge = {}\n\tprocess = {}\n\
         [diff \"trap\"]\n\ttextconv = {}\n\tcommand = {}\n[diff]\n\texternal = {}\n[merge \"trap\"]\n\tdriver = {}\n\
         [credential]\n\thelper = \"!sh -c 'touch {}/{scope}-credential'\"\n[sequence]\n\teditor = {}\n[gpg]\n\tprogram = {}\n\
         [uploadpack]\n\tpackObjectsHook = {}\n[status]\n\tsubmoduleSummary = true\n[diff]\n\tignoreSubmodules = none\n",
        t("fsmonitor"), hooks_dir.display(), t("pager"), t("editor"), t("ssh"), t("askpass"), t("alternate-refs"),
        t("clean"), t("smudge"), t("process"), t("textconv"), t("diff-command"), t("diff-external"), t("merge-driver"),
        markers.display(), t("sequence-editor"), t("gpg"), t("pack-objects-hook"),
    );
    if !scope.ends_with("included") {
        let included = at.join(format!("{scope}-included.gitconfig"));
        std::fs::write(&included, trap_config(at, markers, &format!("{scope}-included"))).unwrap();
        text.push_str(&format!("[include]\n\tpath = {}\n", included.display()));
    }
    text
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

#[test]
fn no_program_named_by_any_repositorys_config_attributes_or_hooks_runs_when_a_checkpoint_runs_git() {
    let traps = pi_ide_testkit::nvim::temp_dir("cp-traps");
    let markers = traps.join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let system = traps.join("system.gitconfig");
    let nvim = rig_with("", Options { env: vec![("GIT_CONFIG_SYSTEM".into(), system.display().to_string())], ..Default::default() });
    let ws = nvim.cwd.clone();
    // The workspace: a repository, a real submodule, and an untracked folder with its own .git.
    let source = traps.join("subsource");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join("f"), "sub\n").unwrap();
    setup_git(&source, &["init", "-q"]);
    setup_git(&source, &["add", "f"]);
    setup_git(&source, &["commit", "-qm", "s"]);
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    setup_git(&ws, &["init", "-q"]);
    setup_git(&ws, &["submodule", "add", "-q", &source.display().to_string(), "sub"]);
    setup_git(&ws, &["add", "a.txt"]);
    setup_git(&ws, &["commit", "-qm", "first"]);
    std::fs::create_dir_all(ws.join("nested")).unwrap();
    std::fs::write(ws.join("nested/f"), "nested\n").unwrap();
    setup_git(&ws.join("nested"), &["init", "-q"]);
    setup_git(&ws.join("nested"), &["add", "f"]);
    setup_git(&ws.join("nested"), &["commit", "-qm", "n"]);
    // The traps: in every config git could read (system, global, each repository's), the
    // repositories' own hooks folders, and attributes that name the trap drivers.
    std::fs::write(&system, trap_config(&traps, &markers, "system")).unwrap();
    std::fs::write(nvim.home.join(".gitconfig"), trap_config(&traps, &markers, "global")).unwrap();
    for (scope, git_dir, tree) in [("top", ws.join(".git"), ws.clone()), ("nested", ws.join("nested/.git"), ws.join("nested")), ("sub", ws.join(".git/modules/sub"), ws.join("sub"))] {
        append(&git_dir.join("config"), &trap_config(&traps, &markers, scope));
        hooks(&git_dir.join("hooks"), &markers, &format!("{scope}-own"));
        std::fs::write(tree.join(".gitattributes"), "* filter=trap diff=trap merge=trap\n").unwrap();
    }
    // Two turns (four snapshots: git would run `git status` in the nested ones from the second),
    // each changing files at the top, in the nested repository and in the submodule.
    turn(&nvim, "shell printf 'changed\\n' > a.txt && printf 'x\\n' >> nested/f && printf 'y\\n' >> sub/f && echo new > new.txt", 1);
    turn(&nvim, "shell printf 'again\\n' > a.txt && printf 'z\\n' >> nested/f && printf 'w\\n' >> sub/f", 2);
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() > 0 and vim.t.pi_ide_changes == true", PATIENCE);
    nvim.command("PiIde undo!").unwrap();
    wait_until("a.txt put back", PATIENCE, || std::fs::read(ws.join("a.txt")).unwrap() == b"changed\n");
    let ran: Vec<String> = std::fs::read_dir(&markers).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(ran.is_empty(), "programs named by a config ran: {ran:?}");
    // The traps are armed: git run as a user runs it in the nested repository sets them off.
    let status = Command::new("git").args(["status", "--short"]).current_dir(ws.join("nested")).env("HOME", &nvim.home).output().unwrap();
    let ran = std::fs::read_dir(&markers).unwrap().count();
    assert!(ran > 0, "the traps did not go off for a plain git status: {status:?}");
}

#[test]
fn a_file_whose_name_is_not_utf8_is_listed_shown_and_put_back_under_its_own_name() {
    use std::os::unix::ffi::OsStrExt;
    let nvim = rig("");
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(nvim.cwd.join(name), "before\n").unwrap();
    turn(&nvim, "shell printf 'after\\n' > \"$(printf 'caf\\351.txt')\"", 1);
    assert_eq!(std::fs::read(nvim.cwd.join(name)).unwrap(), b"after\n", "the agent's shell did not write it");
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 1 and vim.t.pi_ide_changes == true and vim.wo.diff", PATIENCE);
    let shown = nvim.lua(
        "local w = vim.api.nvim_tabpage_list_wins(0)[1] local b = vim.api.nvim_win_get_buf(w)
         return { vim.api.nvim_buf_get_lines(b, 0, -1, false), vim.fn.bufname(b) == 'caf\\233.txt (turn 1)',
                  vim.fn.bufname(vim.fn.getqflist()[1].bufnr):sub(-8) == 'caf\\233.txt' }",
    );
    assert_eq!(shown, json!([["before"], true, true]));
    nvim.command("PiIde undo!").unwrap();
    wait_until("the file put back", PATIENCE, || std::fs::read(nvim.cwd.join(name)).unwrap() == b"before\n");
    let names: Vec<Vec<u8>> = std::fs::read_dir(&nvim.cwd).unwrap().map(|e| e.unwrap().file_name().as_bytes().to_vec()).collect();
    assert_eq!(names, [b"caf\xe9.txt".to_vec()], "{:?}", names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect::<Vec<_>>());
}

#[test]
fn files_that_run_code_or_hold_secrets_are_listed_by_the_turns_check_not_undone_and_checkhealth_counts_the_disk() {
    let nvim = rig("");
    let ws = nvim.cwd.clone();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join(".gitignore"), ".env\n").unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=one\n").unwrap();
    setup_git(&ws, &["init", "-q"]);
    setup_git(&ws, &["add", "."]);
    setup_git(&ws, &["commit", "-qm", "first"]);
    let script = "printf 'TOKEN=two\\n' > .env && printf '[core]\\n\\tfsmonitor = ./watch\\n' >> .git/config \
                  && printf '#!/bin/sh\\n' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push && echo two > a.txt";
    turn(&nvim, &format!("shell {script}"), 1);
    let warning = "⚠ 4 files changed without review (3 not undoable: .env, .git/config, .git/hooks/pre-push): :PiIde changes";
    wait_until("the chat's warning", PATIENCE, || chat_text(&nvim).contains(warning));
    assert_eq!(nvim.lua("return _G.checked[1].guarded"), json!([".env", ".git/config", ".git/hooks/pre-push"]));
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 4 and vim.t.pi_ide_changes == true", PATIENCE);
    let qf: Vec<(String, String)> = quickfix(&nvim).into_iter().map(|(f, _, t)| (f.rsplit_once("/work/").map_or(f.clone(), |(_, r)| r.to_owned()), t)).collect();
    let want = [
        (".env", "changed · turn 1 fake · holds secrets: not undoable"),
        (".git/config", "changed · turn 1 fake · runs code: not undoable"),
        (".git/hooks/pre-push", "created · turn 1 fake · runs code: not undoable"),
        ("a.txt", "changed · turn 1 fake · without review (+1 −1)"),
    ];
    assert_eq!(qf, want.map(|(f, t)| (f.to_owned(), t.to_owned())));
    // Its left pane says why there is nothing to compare, not an empty file.
    let left = nvim.lua("return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1]), 0, -1, false)");
    assert!(left[0].as_str().unwrap().starts_with("(holds secrets: pi-ide keeps a fingerprint of it, not its text"), "{left}");
    nvim.command("PiIde undo!").unwrap();
    wait_until("the report", PATIENCE, || nvim.notes().iter().any(|n| n.starts_with("pi-ide.nvim: undid turn 1 (fake); put back a.txt; not undone .env (runs code or holds secrets")));
    assert_eq!(std::fs::read(ws.join(".env")).unwrap(), b"TOKEN=two\n");
    nvim.command("checkhealth pi-ide").unwrap();
    let health = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')").as_str().unwrap().to_owned();
    let said = health.lines().find(|l| l.contains("checkpoints use ")).unwrap_or_else(|| panic!("{health}"));
    assert!(said.contains(" MiB on disk, for 1 folder (the largest: ~/work, ") && said.ends_with("each keeps its last 50 turns (checkpoints.keep_turns)"), "{said}");
}

#[test]
fn a_checkpoint_that_lost_a_files_text_says_so_in_the_view_and_the_next_turn_works() {
    let nvim = rig("");
    std::fs::write(nvim.cwd.join("a.txt"), "one\n").unwrap();
    turn(&nvim, "shell echo two > a.txt", 1);
    // The shadow's packs go (a disk that lost them, or a user's gc under a shadow that borrowed).
    let shadows = nvim.home.join("state/nvim/pi-ide/checkpoints");
    for shadow in std::fs::read_dir(&shadows).unwrap() {
        for pack in std::fs::read_dir(shadow.unwrap().path().join("git/objects/pack")).unwrap() {
            std::fs::remove_file(pack.unwrap().path()).unwrap();
        }
    }
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 1 and vim.t.pi_ide_changes == true", PATIENCE);
    assert_eq!(quickfix(&nvim)[0].2, "changed · turn 1 fake · without review (the checkpoint lost its text)");
    let left = nvim.lua("return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1]), 0, -1, false)");
    assert!(left[0].as_str().unwrap().starts_with("(the checkpoint of turn 1 has lost a.txt's text: git object "), "{left}");
    // The next turn's checkpoints work (the index naming the lost blob is made again).
    nvim.command("tabclose").unwrap();
    turn(&nvim, "shell echo three > a.txt", 2);
    assert_eq!(nvim.lua("return _G.checked[2].changed"), json!(["a.txt"]));
}

#[test]
fn two_neovims_in_one_folder_racing_checkpoints_lose_no_turn() {
    let shared = pi_ide_testkit::nvim::temp_dir("cp-two");
    let (work, state) = (shared.join("work"), shared.join("state"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "one\n").unwrap();
    let start = || {
        let env = vec![("XDG_STATE_HOME".into(), state.display().to_string())];
        let nvim = Nvim::start_with(Options { cwd: Some(work.clone()), env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() });
        nvim.wait_for("require('pi-ide').info().running", PATIENCE);
        nvim.lua("_G.done = {}");
        nvim
    };
    let (one, two) = (start(), start());
    let each = 8;
    let queue = format!(
        "for i = 1, {each} do require('pi-ide.features.checkpoints').run({{ op = 'begin', agent = ... }}, function(ok, r) table.insert(_G.done, ok and r.turn.n or tostring(r)) end) end"
    );
    one.lua_with(&queue, vec!["one".into()]);
    two.lua_with(&queue, vec!["two".into()]);
    for nvim in [&one, &two] {
        nvim.wait_for(&format!("#_G.done == {each}"), PATIENCE);
    }
    let mut ns: Vec<Value> = [&one, &two].iter().flat_map(|n| n.lua("return _G.done").as_array().unwrap().clone()).collect();
    ns.sort_by_key(|v| v.as_i64().unwrap_or(-1));
    assert_eq!(ns, (1..=2 * each as i64).map(|n| json!(n)).collect::<Vec<_>>());
    let shadows: Vec<_> = std::fs::read_dir(state.join("nvim/pi-ide/checkpoints")).unwrap().map(|e| e.unwrap().path()).collect();
    let log: Value = serde_json::from_slice(&std::fs::read(shadows[0].join("turns.json")).unwrap()).unwrap();
    assert_eq!(log.as_array().unwrap().len(), 2 * each, "{log}");
}

#[test]
fn an_agent_that_writes_other_text_than_accepted_is_not_reviewed_and_is_undone_and_a_users_write_counts_for_its_own_file_only() {
    let nvim = rig("");
    let dir = nvim.cwd.clone();
    std::fs::write(dir.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(dir.join("c.txt"), "c\n").unwrap();
    // The agent is allowed one text and writes another: said at once, listed as not reviewed.
    let lie = format!("lie {} two 2 EVIL", dir.join("a.txt").display());
    nvim.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec![lie.into()]);
    nvim.wait_for("#require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil", PATIENCE);
    type_accept(&nvim, ":w<CR>");
    wait_until("the warning", PATIENCE, || chat_text(&nvim).contains("⚠ a.txt: Fake wrote other text than you accepted"));
    let status = nvim.lua("return require('pi-ide').status()");
    // Said at once: on its own ("⚠ a.txt: …"), or in the turn's warning if the turn ended first.
    assert!(status.as_str().unwrap().contains("a.txt: other text than you accepted"), "at once: {status}");
    nvim.wait_for("#_G.checked >= 1", PATIENCE);
    let first = nvim.lua("return _G.checked[1]");
    assert_eq!((first["unreviewed"].clone(), first["other_text"].clone()), (serde_json::json!(["a.txt"]), serde_json::json!(["a.txt"])), "{first}");
    // The statusline takes the turn's check on its own event, after the one recorded above.
    let said = "⚠ 1 file changed without review (a.txt: other text than you accepted)";
    wait_until("the statusline to say it", PATIENCE, || {
        nvim.lua("return require('pi-ide').status()").as_str().is_some_and(|s| s.contains(said))
    });
    // The chat's read-back of the write may be told after the turn's end (they race): the
    // end's warning, which names the file already, stands.
    nvim.lua_with("require('pi-ide.core.events').fire('PiIdeWroteOther', { path = ... })", vec![dir.join("a.txt").display().to_string().into()]);
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().contains(said), "after a late read-back: {status}");
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 1 and vim.t.pi_ide_changes == true", PATIENCE);
    let qf = quickfix(&nvim);
    assert!(qf[0].0.ends_with("a.txt") && qf[0].2.contains("other text than you accepted"), "{qf:?}");
    nvim.command("tabclose").unwrap();
    nvim.command("PiIde undo!").unwrap();
    wait_until("a.txt put back", PATIENCE, || std::fs::read_to_string(dir.join("a.txt")).unwrap() == "one\ntwo\n");
    // The agent's shell writes b.txt while the user writes c.txt (and a copy of it, d.txt): the
    // user's writes count for their own files only.
    nvim.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec!["stream 120 40".into()]);
    // Once the turn's checkpoint is taken (what is written before it is not the turn's).
    nvim.wait_for("require('pi-ide.features.checkpoints').chat_turn() ~= nil", PATIENCE);
    std::fs::write(dir.join("b.txt"), "agent\n").unwrap();
    nvim.command("tabnew c.txt").unwrap();
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'mine' })");
    type_accept(&nvim, ":w<CR>:w d.txt<CR>");
    nvim.wait_for("#_G.checked >= 2", PATIENCE);
    let second = nvim.lua("return _G.checked[2]");
    let mut changed: Vec<String> = serde_json::from_value(second["changed"].clone()).unwrap();
    changed.sort();
    assert_eq!(changed, ["b.txt", "c.txt", "d.txt"], "{second}");
    assert_eq!(second["unreviewed"], serde_json::json!(["b.txt"]), "{second}");
}

/// A Neovim where an agent in a terminal (played by a client of ours) has one turn until the
/// user's checkpoint: its first request begins it, the next come within idle_ms.
fn terminal_rig() -> Nvim {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ checkpoints = { idle_ms = 600000 } })".into()),
        ..Default::default()
    });
    nvim.lua("_G.started = {} vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeCheckpoint', callback = function(e) table.insert(_G.started, e.data) end })");
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim
}

/// The agent's review of `path` with `text` (call `id`), accepted with :w as the user does.
fn accepted(nvim: &Nvim, p: &mut pi_ide_testkit::Peer, id: u64, path: &Path, text: &str) {
    let args = json!({"old_file_path": path, "new_file_path": path, "new_file_contents": text, "tab_name": format!("t{id}")});
    p.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": args}})).unwrap();
    nvim.wait_for("#_G.started == 1 and require('pi-ide.features.review').count() == 1", PATIENCE);
    go_to_review(nvim);
    nvim.wait_for("vim.b.pi_ide_review ~= nil", PATIENCE);
    type_accept(nvim, ":w<CR>");
    assert_eq!(texts(&p.wait_response(&json!(id)).unwrap())[0], "FILE_SAVED");
}

#[test]
fn a_terminal_agent_that_writes_other_text_than_it_showed_is_not_reviewed_and_one_that_writes_what_it_showed_is() {
    let nvim = terminal_rig();
    let (a, b) = (nvim.cwd.join("a.txt"), nvim.cwd.join("b.txt"));
    std::fs::write(&a, "one\n").unwrap();
    std::fs::write(&b, "one\n").unwrap();
    let mut p = nvim.peer();
    // Its first request begins its turn. Its review of each file; it writes b.txt as shown,
    // a.txt otherwise.
    for (i, path) in [&a, &b].into_iter().enumerate() {
        accepted(&nvim, &mut p, i as u64, path, "shown\n");
    }
    std::fs::write(&a, "not what was shown\n").unwrap();
    std::fs::write(&b, "shown\n").unwrap();
    // The user's checkpoint ends that turn.
    nvim.command("PiIde checkpoint").unwrap();
    nvim.wait_for("#_G.started == 2", PATIENCE);
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().ends_with("⚠ 1 file changed without review (a.txt: other text than you accepted): :PiIde changes"), "{status}");
}

#[test]
fn a_shell_change_before_a_review_is_without_review_though_the_review_was_accepted_and_reviews_in_a_row_are_reviewed() {
    let nvim = terminal_rig();
    let (f, g) = (nvim.cwd.join("f.txt"), nvim.cwd.join("g.txt"));
    std::fs::write(&f, "1\n2\n3\n4\n").unwrap();
    std::fs::write(&g, "one\n").unwrap();
    let mut p = nvim.peer();
    p.call_tool("getDiagnostics", json!({})).unwrap();
    nvim.wait_for("#_G.started == 1", PATIENCE);
    // Its shell changes line 2 of f.txt; then it proposes the text on disk with line 4 changed:
    // the review shows line 4 only.
    std::fs::write(&f, "1\nSHELL\n3\n4\n").unwrap();
    accepted(&nvim, &mut p, 1, &f, "1\nSHELL\n3\nFOUR\n");
    std::fs::write(&f, "1\nSHELL\n3\nFOUR\n").unwrap();
    // g.txt reviewed twice, each written as shown: the second review starts from the first's text.
    for (id, text) in [(2, "two\n"), (3, "three\n")] {
        accepted(&nvim, &mut p, id, &g, text);
        std::fs::write(&g, text).unwrap();
    }
    nvim.command("PiIde checkpoint").unwrap();
    nvim.wait_for("#_G.started == 2", PATIENCE);
    let status = nvim.lua("return require('pi-ide').status()");
    assert!(status.as_str().unwrap().ends_with("⚠ 1 file changed without review: :PiIde changes"), "{status}");
    nvim.command("PiIde changes 1").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 2 and vim.t.pi_ide_changes == true", PATIENCE);
    let qf = quickfix(&nvim);
    assert!(qf[0].0.ends_with("f.txt") && qf[0].2 == "changed · turn 1 pi · without review (+2 −2)", "{qf:?}");
    assert!(qf[1].0.ends_with("g.txt") && !qf[1].2.contains("without review"), "{qf:?}");
}
