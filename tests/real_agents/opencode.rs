//! The real opencode's TUI (npm `opencode-ai`, pinned by scripts/ensure-agents.sh) launched by
//! `:PiIde open opencode`, offline: it finds this Neovim through Claude Code's lockfile in
//! ~/.claude/ide and the port in its environment, and shows the selection made in Neovim. Its
//! model is the loopback mock of opencode_acp.rs's config. It has no diff tools: its edits are
//! written by itself, and pending.

use std::time::Duration;

use crate::harness::*;
use crate::opencode_acp::{opencode_binary, opencode_home};
use crate::openai_mock::{OpenAiMock, Reply};
use crate::pending::{no_review, record_pending_events, type_in_window_of, wait_decided, wait_pending};
use crate::terminal;
use pi_ide_testkit::nvim::{temp_dir, Options};

const AGENT_PATIENCE: Duration = Duration::from_secs(90);

/// A Neovim whose `:PiIde open opencode` runs the real TUI offline, its model `model`, in a
/// scratch HOME (returned) under `scratch`.
fn neovim_for(model: &OpenAiMock, scratch: &str) -> (Nvim, std::path::PathBuf) {
    let home = temp_dir(scratch).join("home");
    let env = opencode_home(&home, &model.base_url());
    // `claude_code` stays off: the launch alone serves it.
    let nvim = Nvim::start_with(Options { ..Default::default() });
    nvim.lua(&format!(
        "require('pi-ide').setup({{ terminal = {{ provider = 'split', width = 120, agents = {{ opencode = {{ cmd = {{ {:?} }}, env = {{ {} }} }} }} }} }})",
        opencode_binary().display().to_string(),
        terminal::lua_fields(env)
    ));
    nvim.command("set columns=240 lines=50").unwrap();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    (nvim, home)
}

/// `:PiIde open opencode`, until its TUI is connected to this Neovim.
fn open_connected(nvim: &Nvim) {
    nvim.command("PiIde open opencode").unwrap();
    let connected = || nvim.lua("return #require('pi-ide').info().clients").as_u64() == Some(1);
    wait_until("opencode connected", AGENT_PATIENCE, connected);
}

#[test]
fn piide_open_opencode_connects_its_tui_and_it_shows_the_selection() {
    let model = OpenAiMock::start();
    let (nvim, home) = neovim_for(&model, "opencode-tui");
    let notes = edit_file(&nvim, "notes.txt", &["alpha", "beta", "gamma"]);
    open_connected(&nvim);
    // Our lockfile in the HOME it was given (~/.claude/ide), never $CLAUDE_CONFIG_DIR.
    let locks = home.join(".claude/ide");
    assert!(std::fs::read_dir(&locks).is_ok_and(|mut d| d.next().is_some()), "no lockfile in {}", locks.display());
    let screen = || terminal::screen(&nvim, "opencode");
    let client = nvim.lua("return require('pi-ide').info().clients[1]");
    // Back to the file, lines 2-3 selected.
    nvim.command("wincmd p").unwrap();
    nvim.command(&format!("edit {notes}")).unwrap();
    type_keys(&nvim, "jVj");
    nvim.lua("require('pi-ide.features.selection').flush()");
    // It shows the file and the lines Claude Code's wire carries (0-based: `#1-2` for lines 2-3).
    let deadline = std::time::Instant::now() + AGENT_PATIENCE;
    while !screen().contains("notes.txt#1-2") {
        assert!(std::time::Instant::now() < deadline, "opencode does not show the selection; client {client}\n{}", screen());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(nvim.lua("return require('pi-ide').info().clients[1].name"), serde_json::json!("opencode"));
    // :checkhealth lists it, served and connected, as opencode (not as Claude Code).
    nvim.command("checkhealth pi-ide").unwrap();
    let health = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    let health = health.as_str().unwrap_or_default();
    assert!(health.contains("opencode (:PiIde open opencode; served, connected (client #1 opencode))"), "{health}");
    assert!(!health.contains("connected (client #1 opencode)) claude"), "{health}");
}

/// Its edit, typed for in its TUI, is written by itself: no review opens, the change is pending
/// at once (opencode's), and `:PiIde reject` typed in the file's window undoes the whole file.
#[test]
fn an_edit_of_opencodes_tui_is_pending_and_piide_reject_undoes_the_file() {
    let model = OpenAiMock::start();
    // Its title request (no tools) first: a title, whatever the prompt.
    model.on_system("title generator", Reply::text("A title"));
    let (nvim, _) = neovim_for(&model, "opencode-tui-edit");
    let notes = edit_file(&nvim, "notes.txt", &["alpha", "beta", "gamma"]);
    model.on_user("please-edit", Reply::tool("edit", serde_json::json!({"filePath": notes, "oldString": "beta", "newString": "BETA"})));
    model.after_tool("edit", Reply::text("The edit is done."));
    record_pending_events(&nvim);
    open_connected(&nvim);
    let screen = || terminal::screen(&nvim, "opencode");
    terminal::type_text(&nvim, "opencode", "please-edit notes");
    wait_until("the prompt typed", AGENT_PATIENCE, || screen().contains("please-edit notes"));
    terminal::type_text(&nvim, "opencode", "\r");
    let read = || std::fs::read_to_string(&notes).unwrap();
    wait_until("opencode to write the file itself", AGENT_PATIENCE, || read() == "alpha\nBETA\ngamma\n");
    wait_until("the turn to end", AGENT_PATIENCE, || terminal::text(&nvim, "opencode").contains("The edit is done."));
    no_review(&nvim);

    let change = wait_pending(&nvim, &notes, "opencode", AGENT_PATIENCE, screen);
    assert_eq!(change["kind"], "changed", "{change}");
    type_in_window_of(&nvim, &notes, 2, "PiIde reject");
    wait_until("the whole file undone on disk", PATIENCE, || read() == "alpha\nbeta\ngamma\n");
    wait_decided(&nvim, &notes);
}
