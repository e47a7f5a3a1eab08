//! An agent launched by `:PiIde open`, as its user reads and types into it: its terminal buffer
//! in Neovim (what the terminal shows, row by row) and its pty.
#![allow(dead_code)]

use pi_ide_testkit::Nvim;

fn rows(nvim: &Nvim, agent: &str, joiner: &str) -> String {
    let lua = format!(
        "local b = require('pi-ide.features.terminal').buffer('{agent}') \
         return b and table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), {joiner:?}) or ''"
    );
    nvim.lua(&lua).as_str().unwrap_or_default().to_owned()
}

/// What the agent's terminal shows, one line per row.
pub fn screen(nvim: &Nvim, agent: &str) -> String {
    rows(nvim, agent, "\n")
}

/// The rows joined with nothing between them: text the agent wrapped at the window's width
/// reads whole.
pub fn text(nvim: &Nvim, agent: &str) -> String {
    rows(nvim, agent, "")
}

/// Types into the agent's terminal (bytes to its pty), as a user would.
pub fn type_text(nvim: &Nvim, agent: &str, text: &str) {
    let lua = format!(
        "local b = require('pi-ide.features.terminal').buffer('{agent}') \
         vim.api.nvim_chan_send(vim.b[b].terminal_job_id, {text:?})"
    );
    nvim.lua(&lua);
}

/// The job of the agent's terminal, to tell one process from another.
pub fn job(nvim: &Nvim, agent: &str) -> serde_json::Value {
    nvim.lua(&format!("return vim.b[require('pi-ide.features.terminal').buffer('{agent}')].terminal_job_id"))
}

/// Whether the agent's terminal is in a window of this tab page.
pub fn shown(nvim: &Nvim, agent: &str) -> bool {
    nvim.lua(&format!("return vim.fn.bufwinid(require('pi-ide.features.terminal').buffer('{agent}')) ~= -1"))
        == serde_json::json!(true)
}

/// Lua table fields for setup(): `["K"] = "V", ...` (ASCII values: paths, URLs, keys).
pub fn lua_fields<K: std::fmt::Debug, V: std::fmt::Debug>(pairs: impl IntoIterator<Item = (K, V)>) -> String {
    pairs.into_iter().map(|(k, v)| format!("[{k:?}] = {v:?}")).collect::<Vec<_>>().join(", ")
}

/// Lua list items: `"a", "b"`.
pub fn lua_list<T: std::fmt::Debug>(items: impl IntoIterator<Item = T>) -> String {
    items.into_iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ")
}
