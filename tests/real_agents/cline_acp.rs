//! The real Cline (npm `cline`, pinned by scripts/ensure-agents.sh) in the chat, as a user runs
//! it: `:PiIde chat cline` starts `cline --acp` from PATH with the plugin's own entry
//! (lua/pi-ide/agents/cline.lua), after the user signed in once with `cline auth` (here with a
//! loopback OpenAI-compatible provider, tests/support/openai_mock.rs, in a Cline folder of the
//! test's own: CLINE_DIR).
//!
//! Cline edits with `apply_patch`: a permission of kind "other" that carries only the patch
//! text. The chat reviews each file as the patch leaves it and allows only after `:w`; Cline
//! then writes the file itself, and what the user accepted is set over its write. Keys into
//! Neovim are typed (`type_keys`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::acp_rig::{read, Rig};
use crate::codex_cli::agents_path;
use crate::harness::*;
use crate::openai_mock::{OpenAiMock, Reply};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

/// How long anything Cline does may take (a 150 MB binary, on a loaded 2-core machine). Only a
/// failing test waits this long.
const AGENT_PATIENCE: Duration = Duration::from_secs(90);

/// `cline` in the agents' folder: missing is a failure, never a skip (the suite installs it).
fn cline_binary() -> PathBuf {
    let cline = crate::copilot_cli::agents_bin().join("cline");
    assert!(cline.exists(), "Cline is not installed at {}: run scripts/test (scripts/ensure-agents.sh)", cline.display());
    cline
}

/// `cline auth` as the user runs it once: the mock as an OpenAI-compatible provider, in the
/// Cline folder `dir`.
fn sign_in(dir: &Path, base_url: &str) {
    let out = std::process::Command::new(cline_binary())
        .args(["auth", "-p", "openai-compatible", "-k", "sk-dummy", "-m", "mock-model", "-b", base_url])
        .env("CLINE_DIR", dir)
        .env("HOME", dir.parent().unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "cline auth: {}", String::from_utf8_lossy(&out.stderr));
}

/// A Neovim whose chat runs Cline by its built-in entry, signed in with the mock as its model.
fn rig() -> (Rig<OpenAiMock>, PathBuf) {
    let model = OpenAiMock::start();
    let dir = temp_dir("cline-acp").join("cline");
    std::fs::create_dir_all(&dir).unwrap();
    sign_in(&dir, &model.base_url());
    let path = format!("{}:{}", agents_path(), std::env::var("PATH").unwrap_or_default());
    let env = vec![("CLINE_DIR".into(), dir.display().to_string()), ("PATH".into(), path)];
    let options = Options { env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() };
    (Rig::start("cline", AGENT_PATIENCE, model, OpenAiMock::turns_report, options), dir)
}

impl Rig<OpenAiMock> {
    /// The model sends `patch` (apply_patch) on a prompt that says "please-patch", and says it
    /// is done once it has the result.
    fn model_patches(&self, patch: &str) {
        self.model.on_user("please-patch", Reply::tool("apply_patch", json!({ "input": patch })));
        self.model.after_tool("apply_patch", Reply::text("The patch is done."));
        self.send("please-patch now");
    }

    /// The review's pane: the file as it will be.
    fn pane(&self) -> String {
        self.nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|')").as_str().unwrap_or_default().to_owned()
    }
}

/// Live Cline processes of this test (Cline's program, whose environment names the test's Cline
/// folder `dir`), by their command lines.
fn clines_of(dir: &Path) -> Vec<String> {
    let mine = format!("CLINE_DIR={}", dir.display());
    let program = std::fs::canonicalize(cline_binary()).unwrap();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat.rsplit_once(") ").is_none_or(|(_, rest)| rest.starts_with('Z')) {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&std::fs::read(entry.path().join("cmdline")).unwrap_or_default()).replace('\0', " ");
        let cline = std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == program);
        if cline && environ.split(|b| *b == 0).any(|v| v == mine.as_bytes()) {
            out.push(cmdline);
        }
    }
    out
}

#[test]
fn a_prompt_streams_into_the_chat() {
    let (rig, _) = rig();
    rig.model.on_user("hello", Reply::slow_text("Hello from the mock model", 5, Duration::from_millis(20)));
    rig.open();
    rig.send("hello there");
    rig.wait_text("Hello from the mock model");
    rig.idle();
    assert!(rig.text().contains("## ❯ You\nhello there\n\n## Cline"), "{}", rig.text());
}

#[test]
fn a_patch_is_reviewed_as_it_leaves_the_file_and_the_users_text_lands_after_w() {
    let (rig, _) = rig();
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\nthree\n");
    rig.open();
    rig.model_patches("*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch");
    rig.review_on_screen();
    assert_eq!(rig.pane(), "one|TWO|three", "the whole file as the patch leaves it");
    assert_eq!(read(&path), "one\ntwo\nthree\n", "nothing written before the :w");
    type_accept(&rig.nvim, "Gomine<Esc>:w<CR>");
    rig.wait_text("The patch is done.");
    rig.idle();
    wait_until("the user's text over Cline's write", AGENT_PATIENCE, || read(&path) == "one\nTWO\nthree\nmine\n");
    rig.wait_text("your accepted text was written over it");
    rig.no_review();
    let t = rig.text();
    assert_eq!(t.matches("⚖ review").count(), 1, "{t}");
    assert!(!t.contains("could not be shown"), "{t}");
}

#[test]
fn q_rejects_the_patch_and_the_file_stays() {
    let (rig, _) = rig();
    let path = file_with(&rig.nvim, "b.txt", "alpha\nbeta\n");
    rig.open();
    rig.model_patches("*** Begin Patch\n*** Update File: b.txt\n-beta\n+BETA\n*** End Patch");
    rig.review_on_screen();
    rig.closed_unwritten(|n| type_keys(n, ":q<CR>"), "after-reject", &path, "alpha\nbeta\n");
}

#[test]
fn a_file_the_patch_adds_is_reviewed_and_created_after_w() {
    let (rig, _) = rig();
    let path = rig.nvim.cwd.join("new.txt").display().to_string();
    rig.open();
    rig.model_patches("*** Begin Patch\n*** Add File: new.txt\n+fresh\n+\n*** End Patch");
    rig.review_on_screen();
    assert!(!Path::new(&path).exists(), "nothing before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("The patch is done.");
    rig.idle();
    wait_until("the new file", AGENT_PATIENCE, || read(&path) == "fresh\n");
    rig.wait_text("as you accepted it");
}

#[test]
fn a_patch_that_cannot_be_shown_is_asked_without_always_and_abort_ends_the_turn() {
    let (rig, _) = rig();
    let path = file_with(&rig.nvim, "gone.txt", "still here\n");
    rig.nvim.command("lua vim.ui.select = function(items) _G.asked = vim.tbl_map(function(o) return o.kind end, items) end").unwrap();
    rig.open();
    rig.model_patches("*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch");
    rig.wait_text("the change could not be shown here: the patch cannot be shown: it deletes gone.txt");
    wait_until("the question", AGENT_PATIENCE, || rig.nvim.lua("return _G.asked ~= nil") == true);
    assert_eq!(rig.nvim.lua("return _G.asked"), json!(["allow_once", "reject_once"]), "never an always");
    rig.nvim.command("PiIde abort").unwrap();
    rig.idle();
    assert_eq!(read(&path), "still here\n");
}

#[test]
fn abort_with_a_review_open_ends_the_turn_and_nothing_lands() {
    let (rig, _) = rig();
    let path = file_with(&rig.nvim, "c.txt", "keep\n");
    rig.open();
    rig.model_patches("*** Begin Patch\n*** Update File: c.txt\n-keep\n+LOST\n*** End Patch");
    rig.review_on_screen();
    rig.closed_unwritten(|n| drop(n.command("PiIde abort").unwrap()), "after-abort", &path, "keep\n");
}

#[test]
fn no_cline_process_is_left_after_the_chat_stops_or_neovim_quits() {
    let (rig, dir) = rig();
    rig.model.on_user("hello", Reply::text("Hello from the mock model"));
    rig.open();
    rig.send("hello there");
    rig.wait_text("Hello from the mock model");
    rig.idle();
    assert!(!clines_of(&dir).is_empty(), "Cline runs");
    rig.nvim.command("PiIde chat stop").unwrap();
    wait_until("no Cline process of the chat (stopped)", AGENT_PATIENCE, || clines_of(&dir).is_empty());
    // Started again, and Neovim quits.
    rig.send("hello again");
    rig.wait_text("## ❯ You\nhello again");
    wait_until("Cline again", AGENT_PATIENCE, || rig.text().matches("Hello from the mock model").count() == 2);
    rig.idle();
    let _ = rig.nvim.command("qa!");
    wait_until("no Cline process of the chat (Neovim quit)", AGENT_PATIENCE, || clines_of(&dir).is_empty());
}
