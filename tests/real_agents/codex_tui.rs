//! The real Codex TUI started by `:PiIde open codex` in Neovim's terminal, offline: with no
//! entry of ours in its config, it gets this Neovim's tools from its command line, and what the
//! user types in it reaches the mock model, which calls one of them. Told to ask nothing, its
//! own apply_patch writes the file by itself: no review opens; the write is pending.

use std::path::PathBuf;

use crate::codex_cli::{trusted_work, CODEX_PATIENCE};
use crate::harness::*;
use crate::pending::{no_review, record_pending_events, type_in_window_of, wait_decided, wait_pending};
use crate::responses_mock::{Reply, ResponsesMock, Turn};
use crate::terminal;
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

/// A Neovim in a folder Codex trusts (so that it asks nothing before the prompt), its model
/// `model`, with `file` (holding `text`) in its window.
fn neovim_with(model: &ResponsesMock, scratch: &str, file: &str, text: &str) -> (Nvim, PathBuf) {
    let (dir, env) = trusted_work(&temp_dir(scratch), &model.base_url(), "");
    let nvim = Nvim::start_with(Options { cwd: Some(dir.clone()), env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() });
    nvim.command("set columns=160 lines=50").unwrap();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let file = dir.join(file);
    std::fs::write(&file, text).unwrap();
    nvim.command(&format!("edit {}", file.display())).unwrap();
    (nvim, file)
}

/// `:PiIde open codex <args>`, then `prompt` typed into it once its prompt shows, and sent.
fn open_and_send(nvim: &Nvim, args: &str, prompt: &str) {
    nvim.command(&format!("PiIde open codex {args}")).unwrap();
    let screen = || terminal::screen(nvim, "codex");
    wait_until("Codex's prompt", CODEX_PATIENCE, || screen().contains("Mock model"));
    terminal::type_text(nvim, "codex", prompt);
    wait_until("the prompt typed", CODEX_PATIENCE, || screen().contains(prompt));
    terminal::type_text(nvim, "codex", "\r");
}

#[test]
fn piide_open_codex_runs_codex_with_this_neovims_tools() {
    let model = ResponsesMock::start();
    let (nvim, _) = neovim_with(&model, "codex-tui", "d.txt", "x\n");
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 0, col = 0, message = 'only-in-this-neovim' } })");
    model.on_user("check", Reply::mcp("nvim", "getDiagnostics", json!({})));
    open_and_send(&nvim, "", "check the diagnostics");
    let got = model.wait_turn("getDiagnostics' output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    assert!(got.contains("only-in-this-neovim"), "{got}\n{}", terminal::screen(&nvim, "codex"));
    // :checkhealth tells Codex served and connected, through pi-ide-mcp, by its client's name.
    nvim.command("checkhealth pi-ide").unwrap();
    let health = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    let health = health.as_str().unwrap_or_default();
    assert!(health.contains("codex (:PiIde open codex; served, connected (client #1 codex-mcp-client))"), "{health}");
    assert!(health.contains("codex-acp (:PiIde chat codex)"), "{health}");
    nvim.command("PiIde close codex").unwrap();
}

/// Launched to ask nothing (`-a never`, its sandbox the workspace), Codex applies its own patch:
/// no review opens, the change is pending at once (Codex's, one hunk), and `:PiIde hunk reject`
/// typed in the file's window puts the old line back on disk.
#[test]
fn codex_applying_its_own_patch_is_pending_and_a_hunk_reject_puts_the_old_lines_back() {
    let model = ResponsesMock::start();
    let (nvim, file) = neovim_with(&model, "codex-tui-patch", "p.txt", "one\ntwo\nthree\n");
    let patch = format!("*** Begin Patch\n*** Update File: {}\n@@\n one\n-two\n+TWO\n three\n*** End Patch", file.display());
    model.on_user("patch", Reply::patch(&patch));
    record_pending_events(&nvim);
    open_and_send(&nvim, "--sandbox workspace-write --ask-for-approval never", "patch the file");
    let screen = || terminal::screen(&nvim, "codex");
    let output = model.wait_turn("apply_patch's output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    let read = || std::fs::read_to_string(&file).unwrap();
    assert_eq!(read(), "one\nTWO\nthree\n", "written by Codex itself: {output}\n{}", screen());
    no_review(&nvim);

    let path = file.display().to_string();
    let change = wait_pending(&nvim, &path, "codex", CODEX_PATIENCE, screen);
    assert_eq!(change["kind"], "changed", "{change}");
    type_in_window_of(&nvim, &path, 2, "PiIde hunk reject");
    wait_until("the old line back on disk", PATIENCE, || read() == "one\ntwo\nthree\n");
    wait_decided(&nvim, &path);
    nvim.command("PiIde close codex").unwrap();
}
