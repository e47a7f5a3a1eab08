//! :checkhealth of the agents served on request (an option, or a launch from Neovim): the Copilot
//! CLI and Gemini CLI's IDE mode say alike why they are not served, when they are not.

use crate::harness::*;
use pi_ide_testkit::Nvim;

/// The line of `text` that says `what`, with its level (OK, WARNING, ...).
fn line_with<'a>(text: &'a str, what: &str) -> &'a str {
    text.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what:?} in:\n{text}"))
}

#[test]
fn checkhealth_says_why_an_agent_served_on_request_is_not_served() {
    let nvim = Nvim::start();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let text = health(&nvim);
    line_with(&text, "Copilot CLI off (option copilot; :PiIde open copilot serves it for its launch)");
    line_with(&text, "Gemini CLI's IDE mode off (option gemini; :PiIde open gemini serves it for its launch)");
    // Turned on while an agent is connected: the server runs on without them until restarted.
    let _peer = nvim.peer();
    nvim.wait_for("#require('pi-ide').info().clients == 1", PATIENCE);
    nvim.lua("require('pi-ide').setup({ copilot = true, gemini = true })");
    let text = health(&nvim);
    let restart = "on, but the running server was started without it: :PiIde stop, then :PiIde start";
    assert!(line_with(&text, &format!("Copilot CLI {restart}")).contains("WARNING"), "{text}");
    assert!(line_with(&text, &format!("Gemini CLI's IDE mode {restart}")).contains("WARNING"), "{text}");
    nvim.command("PiIde stop").unwrap();
    let text = health(&nvim);
    line_with(&text, "Copilot CLI on; the server is not running");
    line_with(&text, "Gemini CLI's IDE mode on; the server is not running");
}
