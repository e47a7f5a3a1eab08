//! The real codex-acp (Zed's ACP adapter for Codex) in the chat (:PiIde chat codex), offline:
//! the Responses mock plays the model. Neovim starts it by its default command from PATH, as a
//! user's does; the folder is trusted in Codex, so codex-acp starts in `auto` (edits without
//! asking) and the chat must put it back in read-only. It writes files itself after a
//! permission that carries the whole file; what the user accepted is set over its write.

use std::path::{Path, PathBuf};

use crate::acp_rig::Rig;
use crate::codex_cli::{trusted_work, CODEX_PATIENCE};
use crate::harness::*;
use crate::responses_mock::{Reply, ResponsesMock, Turn};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

/// The folder trusted in Codex: codex-acp starts in `auto`.
fn rig() -> Rig<ResponsesMock> {
    rig_with("")
}

/// With `top` first in Codex's config.toml.
fn rig_with(top: &str) -> Rig<ResponsesMock> {
    rig_in(top, None)
}

/// With `top` first in Codex's config.toml and `first` (a folder) first on PATH.
fn rig_in(top: &str, first: Option<&Path>) -> Rig<ResponsesMock> {
    let model = ResponsesMock::start();
    let (dir, mut env) = trusted_work(&temp_dir("codex-acp"), &model.base_url(), top);
    if let Some(first) = first {
        for (_, v) in env.iter_mut().filter(|(k, _)| k == "PATH") {
            *v = format!("{}:{v}", first.display());
        }
    }
    let options = Options { cwd: Some(dir), env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() };
    Rig::start("codex", CODEX_PATIENCE, model, ResponsesMock::turns_report, options)
}

impl Rig<ResponsesMock> {
    /// `:PiIde chat codex`, once the chat has put codex-acp in read-only.
    fn open_read_only(&self) {
        self.open();
        wait_until("codex-acp's session in read-only", CODEX_PATIENCE, || {
            self.nvim.lua(&format!("return {}.info.mode", self.chat())) == json!("read-only")
        });
    }

    /// A file `name` with `text` in Neovim's (and codex-acp's) working folder.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.nvim.cwd.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The model patches `path` (apply_patch), after "please-edit".
    fn model_patches(&self, patch: String) {
        self.model.on_user("please-edit", Reply::patch(&patch));
        self.model.after_output("", Reply::text("The edit is done."));
        self.send("please-edit the file");
        self.review_on_screen();
    }

    /// The process group the chat's agent runs in (its pid).
    fn group(&self) -> i32 {
        self.agent_pid().expect("the chat's pid")
    }
}

fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Live processes in group `pgid`, or started for this Neovim's tools (`--nvim <pid>`).
fn left_running(pgid: i32, nvim_pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let fields: Vec<&str> = rest.split(' ').collect();
        let cmdline = String::from_utf8_lossy(&std::fs::read(entry.path().join("cmdline")).unwrap_or_default()).replace('\0', " ");
        let ours = fields.get(2) == Some(&pgid.to_string().as_str()) || cmdline.contains(&format!("--nvim {nvim_pid} "));
        if ours && fields[0] != "Z" {
            out.push(cmdline);
        }
    }
    out
}

#[test]
fn a_prompt_streams_in_read_only_mode_even_in_a_trusted_folder() {
    let rig = rig();
    rig.model.on_user("hello", Reply::text("Hello from the mock model"));
    rig.open_read_only();
    rig.send("hello there");
    rig.wait_text("Hello from the mock model");
    rig.idle();
}

#[test]
fn its_shell_commands_run_in_its_read_only_sandbox() {
    // No bwrap on this machine's PATH: the chat gives codex-acp the one the Codex CLI bundles.
    let rig = rig();
    let cmd = json!({"cmd": "echo sandboxed-ok"}).to_string();
    rig.model.on_user("run", Reply::Item(json!({"type": "function_call", "name": "exec_command", "arguments": cmd})));
    rig.open_read_only();
    rig.send("run it");
    let got = rig.model.wait_turn("the command's output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    assert!(got.contains("sandboxed-ok") && !got.contains("bubblewrap"), "{got}");
}

/// The bubblewrap the Codex CLI bundles (0.9 or later: it takes --argv0).
fn bundled_bwrap() -> PathBuf {
    let vendor = crate::copilot_cli::agents_bin().join("../@openai/codex-linux-x64/vendor");
    let triple = std::fs::read_dir(&vendor).unwrap().flatten().next().expect("the Codex CLI's vendor folder");
    triple.path().join("codex-resources/bwrap")
}

/// A folder with a `bwrap` older than 0.9 (no --argv0), as Debian 12 and Ubuntu 22.04 ship: the
/// one $PI_IDE_OLD_BWRAP names (Debian's 0.8.0, extracted: `apt-get download bubblewrap &&
/// dpkg -x`), else the bundled one with --argv0 taken away (its help hides it, and it is refused).
fn old_bwrap_dir() -> PathBuf {
    let dir = temp_dir("old-bwrap");
    let bwrap = dir.join("bwrap");
    match std::env::var_os("PI_IDE_OLD_BWRAP") {
        Some(real) => std::os::unix::fs::symlink(real, &bwrap).unwrap(),
        None => {
            let script = format!(
                "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --argv0 ] && {{ echo 'bwrap: Unknown option --argv0' >&2; exit 1; }}; done\n\
                 [ \"$1\" = --help ] && {{ {0:?} --help 2>&1 | grep -v -- --argv0; exit 0; }}\nexec {0:?} \"$@\"\n",
                bundled_bwrap()
            );
            std::fs::write(&bwrap, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let help = std::process::Command::new(&bwrap).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_string() + &String::from_utf8_lossy(&help.stderr);
    assert!(help.contains("--perms") && !help.contains("--argv0"), "not a bwrap older than 0.9: {help}");
    dir
}

/// The model runs a shell command with `first` first on PATH: its output reaches the model.
fn shell_runs_with(first: &Path) {
    let rig = rig_in("", Some(first));
    let cmd = json!({"cmd": "echo sandboxed-ok"}).to_string();
    rig.model.on_user("run", Reply::Item(json!({"type": "function_call", "name": "exec_command", "arguments": cmd})));
    rig.open_read_only();
    rig.send("run it");
    let got = rig.model.wait_turn("the command's output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    assert!(got.contains("sandboxed-ok") && !got.contains("bwrap"), "{got}");
}

/// A bubblewrap older than 0.9 on PATH (Debian 12's, Ubuntu 22.04's): codex-acp would run its
/// sandbox helper by a name it does not put on PATH when its home is in the temp folder
/// ("bwrap: execvp codex-linux-sandbox"); the chat gives it the Codex CLI's instead.
#[test]
fn its_shell_commands_run_with_a_bwrap_older_than_0_9_on_path() {
    shell_runs_with(&old_bwrap_dir());
}

/// A bubblewrap that takes --argv0 on PATH is the one used, and it runs.
#[test]
fn its_shell_commands_run_with_a_current_bwrap_on_path() {
    let dir = temp_dir("new-bwrap");
    std::os::unix::fs::symlink(bundled_bwrap(), dir.join("bwrap")).unwrap();
    shell_runs_with(&dir);
}

/// A bubblewrap older than 0.9, no Codex CLI to lend a newer one, and Codex's home in the temp
/// folder (its helper links refused): the chat says at once that its shell commands fail.
#[test]
fn an_old_bwrap_with_no_codex_cli_beside_is_said_at_once() {
    let acp_only = temp_dir("acp-only");
    let bin = crate::copilot_cli::agents_bin();
    std::os::unix::fs::symlink(bin.join("codex-acp"), acp_only.join("codex-acp")).unwrap();
    let path = format!("{}:{}:{}", old_bwrap_dir().display(), acp_only.display(), std::env::var("PATH").unwrap());
    let path = path.split(':').filter(|d| !Path::new(d).join("codex").exists()).collect::<Vec<_>>().join(":");
    let model = ResponsesMock::start();
    let (dir, mut env) = trusted_work(&temp_dir("codex-acp"), &model.base_url(), "");
    env.retain(|(k, _)| k != "PATH");
    env.push(("PATH".into(), path));
    let options = Options { cwd: Some(dir), env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() };
    let rig = Rig::start("codex", CODEX_PATIENCE, model, ResponsesMock::turns_report, options);
    rig.open();
    rig.nvim.wait_t("has_note", json!(["older than 0.9 and CODEX_HOME is in"]), PATIENCE);
}

#[test]
fn an_edit_is_reviewed_whole_and_the_users_text_lands_after_w() {
    let rig = rig();
    let path = rig.file("a.txt", "one\ntwo\nthree\n");
    rig.open_read_only();
    rig.model_patches(format!("*** Begin Patch\n*** Update File: {}\n@@\n one\n-two\n+TWO\n three\n*** End Patch", path.display()));
    let pane = rig.nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|')");
    assert_eq!(pane, json!("one|TWO|three"), "the whole file as it will be");
    assert_eq!(read(&path), "one\ntwo\nthree\n", "nothing written before the :w");
    // The user changes the proposal, then accepts it.
    type_accept(&rig.nvim, "Gccthree!<Esc>:w<CR>");
    wait_until("the user's text on disk", CODEX_PATIENCE, || read(&path) == "one\nTWO\nthree!\n");
    rig.wait_text("The edit is done.");
    rig.idle();
    assert_eq!(read(&path), "one\nTWO\nthree!\n");
}

#[test]
fn full_access_in_codexs_config_is_put_back_in_read_only_and_edits_are_reviewed() {
    let rig = rig_with("sandbox_mode = \"danger-full-access\"\napproval_policy = \"never\"");
    let path = rig.file("a.txt", "one\n");
    rig.open_read_only();
    rig.model_patches(format!("*** Begin Patch\n*** Update File: {}\n@@\n-one\n+ONE\n*** End Patch", path.display()));
    assert_eq!(read(&path), "one\n", "nothing written before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    wait_until("the accepted text", CODEX_PATIENCE, || read(&path) == "ONE\n");
    rig.wait_text("The edit is done.");
}

#[test]
fn q_rejects_the_edit_and_leaves_the_file() {
    let rig = rig();
    let path = rig.file("a.txt", "one\ntwo\n");
    rig.open_read_only();
    rig.model_patches(format!("*** Begin Patch\n*** Update File: {}\n@@\n one\n-two\n+TWO\n*** End Patch", path.display()));
    type_keys(&rig.nvim, ":q<CR>");
    rig.idle();
    assert_eq!(read(&path), "one\ntwo\n");
    assert!(!rig.text().contains("The edit is done."), "a reject ends the turn:\n{}", rig.text());
    // :PiIde chat stop ends codex-acp, though it ignores EOF on its stdin.
    let (group, nvim_pid) = (rig.group(), rig.nvim.pid());
    assert!(!left_running(group, nvim_pid).is_empty(), "the agent runs in its group");
    rig.nvim.command("PiIde chat stop").unwrap();
    wait_until("nothing of codex-acp left", CODEX_PATIENCE, || left_running(group, nvim_pid).is_empty());
}

#[test]
fn a_new_file_is_reviewed_and_created_after_w() {
    let rig = rig();
    let path = rig.nvim.cwd.join("new.txt");
    rig.open_read_only();
    rig.model_patches(format!("*** Begin Patch\n*** Add File: {}\n+hello\n*** End Patch", path.display()));
    assert!(!path.exists(), "nothing written before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    wait_until("the new file", CODEX_PATIENCE, || read(&path) == "hello\n");
    rig.wait_text("The edit is done.");
}

#[test]
fn codex_reaches_this_neovims_tools_with_its_short_environment() {
    let rig = rig();
    let path = rig.file("d.txt", "x\n");
    rig.nvim.command(&format!("edit {}", path.display())).unwrap();
    rig.nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 0, col = 0, message = 'only-in-this-neovim' } })");
    rig.model.on_user("check", Reply::mcp("nvim", "getDiagnostics", json!({})));
    rig.model.after_output("", Reply::text("Checked."));
    rig.open_read_only();
    rig.send("check the diagnostics");
    let got = rig.model.wait_turn("getDiagnostics' output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    assert!(got.contains("only-in-this-neovim"), "{got}");
    rig.wait_text("Checked.");
}

#[test]
fn abort_with_a_review_open_then_quit_leaves_the_file_and_nothing_running() {
    let mut rig = rig();
    let path = rig.file("a.txt", "one\ntwo\n");
    rig.open_read_only();
    rig.model_patches(format!("*** Begin Patch\n*** Update File: {}\n@@\n one\n-two\n+TWO\n*** End Patch", path.display()));
    let (group, nvim_pid) = (rig.group(), rig.nvim.pid());
    assert!(!left_running(group, nvim_pid).is_empty(), "the agent runs in its group");
    rig.nvim.command("PiIde abort").unwrap();
    wait_until("the review gone", CODEX_PATIENCE, || rig.nvim.lua("return #require('pi-ide.features.review').list() == 0") == true);
    rig.idle();
    assert_eq!(read(&path), "one\ntwo\n");
    // codex-acp ignores EOF on stdin, and its npm launcher leaves the native binary when killed.
    assert!(rig.nvim.quit(CODEX_PATIENCE), "Neovim quits");
    wait_until("nothing of codex-acp left", CODEX_PATIENCE, || left_running(group, nvim_pid).is_empty());
    assert_eq!(read(&path), "one\ntwo\n", "a late allow never lands");
}

#[test]
fn neovim_killed_leaves_nothing_of_codex_acp_running() {
    let rig = rig();
    rig.open_read_only();
    let (group, nvim_pid) = (rig.group(), rig.nvim.pid());
    let running = left_running(group, nvim_pid);
    assert!(!running.is_empty() && !running.iter().any(|c| c.starts_with("node ")), "the native program, no npm launcher: {running:?}");
    // SAFETY: a plain kill(2) of the Neovim this test started.
    unsafe { libc::kill(nvim_pid as i32, libc::SIGKILL) };
    wait_until("nothing of codex-acp left", CODEX_PATIENCE, || left_running(group, nvim_pid).is_empty());
}
