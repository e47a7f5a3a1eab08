//! The real Codex as an MCP client, run as users run it: `codex exec` (approval "never") with
//! the entry `:PiIde mcp codex` prints in its config.toml, offline (the Responses mock plays the
//! model). Codex starts pi-ide-mcp with a short environment; the entry passes on what finds
//! this Neovim. Two Neovims share one records folder: the one whose folder Codex runs in answers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::codex_cli::{agent_program, codex_env, codex_home, CODEX_PATIENCE};
use crate::harness::*;
use crate::responses_mock::{Reply, ResponsesMock, Turn};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

struct Rig {
    model: ResponsesMock,
    scratch: PathBuf,
    /// The records folder both Neovims (and Codex's shell) have as XDG_RUNTIME_DIR.
    runtime: PathBuf,
}

fn rig() -> Rig {
    let scratch = temp_dir("codex-exec");
    let runtime = scratch.join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    Rig { model: ResponsesMock::start(), scratch, runtime }
}

impl Rig {
    /// A Neovim in folder `name`, with a diagnostic only it has.
    fn nvim(&self, name: &str) -> (Nvim, PathBuf) {
        self.nvim_tagged(name, name)
    }

    /// A Neovim in folder `name`, with the diagnostic `only-in-<tag>`.
    fn nvim_tagged(&self, name: &str, tag: &str) -> (Nvim, PathBuf) {
        let dir = self.scratch.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let env = vec![("XDG_RUNTIME_DIR".to_owned(), self.runtime.display().to_string())];
        let nvim = Nvim::start_with(Options { cwd: Some(dir.clone()), env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() });
        nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
        let file = dir.join("d.txt");
        std::fs::write(&file, "x\n").unwrap();
        nvim.command(&format!("edit {}", file.display())).unwrap();
        nvim.lua(&format!("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ {{ lnum = 0, col = 0, message = 'only-in-{tag}' }} }})"));
        (nvim, dir)
    }

    /// `codex exec <prompt>` in `cwd`, its config the entry `nvim` prints, in a process group
    /// of its own; its environment is a shell's beside that Neovim (the same XDG_RUNTIME_DIR).
    fn exec(&self, nvim: &Nvim, cwd: &Path, prompt: &str) -> Child {
        self.exec_in_terminal_of(None, nvim, cwd, prompt)
    }

    /// The same, run in the terminal of Neovim `term` ($NVIM is its address) when given.
    fn exec_in_terminal_of(&self, term: Option<&Nvim>, nvim: &Nvim, cwd: &Path, prompt: &str) -> Child {
        let entry = nvim.lua("return require('pi-ide.agents.mcp.configs').for_program(require('pi-ide.agents.mcp').program())[1].text");
        let entry = entry.as_str().unwrap().to_owned();
        assert!(entry.starts_with("[mcp_servers.nvim]"), "the codex entry comes first: {entry}");
        let home = self.scratch.join("home");
        codex_home(&self.scratch.join("codex-home"), &self.model.base_url(), "", &entry);
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = Command::new(agent_program("codex"));
        cmd.args(["exec", "--skip-git-repo-check", prompt])
            .current_dir(cwd)
            .envs(codex_env(&home, &self.scratch.join("codex-home")))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env_remove("NVIM")
            .env_remove("PI_IDE_NVIM")
            .envs(term.map(|t| ("NVIM", t.lua("return vim.v.servername").as_str().unwrap().to_owned())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.spawn().expect("start codex exec")
    }

    fn output_of(&self, what: &str, tool_text: &str) -> String {
        self.model.wait_turn(what, CODEX_PATIENCE, |t| matches!(t, Turn::Output(s) if s.contains(tool_text)))
    }
}

fn finish(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn codex_exec_gets_the_diagnostics_of_the_neovim_whose_folder_it_runs_in() {
    let rig = rig();
    let (_a, _) = rig.nvim("alpha");
    let (b, b_dir) = rig.nvim("beta");
    rig.model.on_user("check", Reply::mcp("nvim", "getDiagnostics", json!({})));
    rig.model.after_output("", Reply::text("Checked."));
    let codex = rig.exec(&b, &b_dir, "check the diagnostics");
    let got = rig.model.wait_turn("getDiagnostics' output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    let said = finish(codex);
    assert!(got.contains("only-in-beta"), "beta's diagnostics, not refused:\n{got}\n{said}");
    assert!(!got.contains("only-in-alpha") && !got.contains("requires approval"), "{got}");
    assert!(said.contains("Checked."), "{said}");
}

#[test]
fn in_a_neovims_terminal_codex_exec_gets_that_neovims_diagnostics() {
    let rig = rig();
    let (a, a_dir) = rig.nvim_tagged("alpha", "first");
    // A second Neovim in the same folder, focused last: without $NVIM it would be picked.
    let (_b, _) = rig.nvim_tagged("alpha", "second");
    rig.model.on_user("check", Reply::mcp("nvim", "getDiagnostics", json!({})));
    let codex = rig.exec_in_terminal_of(Some(&a), &a, &a_dir, "check the diagnostics");
    let got = rig.model.wait_turn("getDiagnostics' output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    finish(codex);
    assert!(got.contains("only-in-first") && !got.contains("only-in-second"), "{got}");
}

#[test]
fn a_review_held_past_a_minute_answers_the_users_text() {
    let rig = rig();
    let (b, b_dir) = rig.nvim("beta");
    let file = b_dir.join("r.txt");
    std::fs::write(&file, "one\ntwo\n").unwrap();
    let args = json!({"new_file_path": file, "new_file_contents": "one\nTWO\n", "tab_name": "r.txt"});
    rig.model.on_user("review", Reply::mcp("nvim", "openDiff", args));
    rig.model.after_output("FILE_SAVED", Reply::text("Saved."));
    let codex = rig.exec(&b, &b_dir, "review this");
    wait_until("the review on screen", CODEX_PATIENCE, || {
        b.lua("return #require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil") == true
    });
    // Codex's own default would give up after 60 s; the entry's tool_timeout_sec holds it.
    std::thread::sleep(Duration::from_secs(65));
    type_accept(&b, "ggdd:w<CR>");
    let got = rig.output_of("FILE_SAVED", "FILE_SAVED");
    assert!(got.contains("TWO") && !got.contains("one"), "the user's text: {got}");
    assert!(finish(codex).contains("Saved."));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n", "the review writes nothing itself");
}

#[test]
fn ctrl_c_on_codex_exec_leaves_no_review() {
    let rig = rig();
    let (b, b_dir) = rig.nvim("beta");
    let file = b_dir.join("r.txt");
    std::fs::write(&file, "one\n").unwrap();
    let args = json!({"new_file_path": file, "new_file_contents": "ONE\n", "tab_name": "r.txt"});
    rig.model.on_user("review", Reply::mcp("nvim", "openDiff", args));
    let mut codex = rig.exec(&b, &b_dir, "review this");
    wait_until("the review on screen", CODEX_PATIENCE, || {
        b.lua("return #require('pi-ide.features.review').list() == 1") == true
    });
    // Ctrl-C in a terminal: SIGINT to the foreground process group.
    unsafe { libc::kill(-(codex.id() as i32), libc::SIGINT) };
    wait_until("the review gone", CODEX_PATIENCE, || b.lua("return #require('pi-ide.features.review').list() == 0") == true);
    let _ = codex.wait();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
}
