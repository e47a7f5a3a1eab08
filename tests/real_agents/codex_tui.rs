//! The real Codex TUI started by `:PiIde open codex` in Neovim's terminal, offline: with no
//! entry of ours in its config, it gets this Neovim's tools from its command line, and what the
//! user types in it reaches the mock model, which calls one of them.

use crate::codex_cli::{trusted_work, CODEX_PATIENCE};
use crate::harness::*;
use crate::responses_mock::{Reply, ResponsesMock, Turn};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

#[test]
fn piide_open_codex_runs_codex_with_this_neovims_tools() {
    let model = ResponsesMock::start();
    // Trusted, so that it asks nothing before the prompt.
    let (dir, env) = trusted_work(&temp_dir("codex-tui"), &model.base_url(), "");
    let nvim = Nvim::start_with(Options { cwd: Some(dir.clone()), env, after: Some("require('pi-ide').setup({})".into()), ..Default::default() });
    nvim.command("set columns=160 lines=50").unwrap();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let file = dir.join("d.txt");
    std::fs::write(&file, "x\n").unwrap();
    nvim.command(&format!("edit {}", file.display())).unwrap();
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 0, col = 0, message = 'only-in-this-neovim' } })");
    model.on_user("check", Reply::mcp("nvim", "getDiagnostics", json!({})));
    nvim.command("PiIde open codex").unwrap();
    let screen = || {
        let lines = nvim.lua("local b = require('pi-ide.features.terminal').buffer('codex') return b and table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n') or ''");
        lines.as_str().unwrap_or_default().to_owned()
    };
    wait_until("Codex's prompt", CODEX_PATIENCE, || screen().contains("Mock model"));
    let job = nvim.lua("return vim.b[require('pi-ide.features.terminal').buffer('codex')].terminal_job_id");
    let job = job.as_i64().unwrap();
    nvim.lua(&format!("vim.api.nvim_chan_send({job}, 'check the diagnostics')"));
    wait_until("the prompt typed", CODEX_PATIENCE, || screen().contains("check the diagnostics"));
    nvim.lua(&format!("vim.api.nvim_chan_send({job}, '\\r')"));
    let got = model.wait_turn("getDiagnostics' output", CODEX_PATIENCE, |t| matches!(t, Turn::Output(_)));
    assert!(got.contains("only-in-this-neovim"), "{got}\n{}", screen());
    // :checkhealth tells Codex served and connected, through pi-ide-mcp, by its client's name.
    nvim.command("checkhealth pi-ide").unwrap();
    let health = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    let health = health.as_str().unwrap_or_default();
    assert!(health.contains("codex (:PiIde open codex; served, connected (client #1 codex-mcp-client))"), "{health}");
    assert!(health.contains("codex-acp (:PiIde chat codex)"), "{health}");
    nvim.command("PiIde close codex").unwrap();
}
