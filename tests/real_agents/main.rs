//! The real agent programs (the versions scripts/ensure-agents.sh pins) against a real
//! Neovim, offline: a loopback mock of each model API plays the model (tests/support/).

#[path = "../support/harness.rs"]
mod harness;
#[path = "../support/anthropic_mock.rs"]
mod anthropic_mock;
#[path = "../support/copilot_cli.rs"]
mod copilot_cli;
#[path = "../support/gemini_mock.rs"]
mod gemini_mock;
#[path = "../support/http_body.rs"]
mod http_body;
#[path = "../support/openai_mock.rs"]
mod openai_mock;
#[path = "../support/pi_cli.rs"]
mod pi_cli;
#[path = "../support/terminal.rs"]
mod terminal;

mod claude;
mod claude_acp;
mod copilot;
mod copilot_acp;
mod gemini;
mod gemini_acp;
mod mcporter;
mod pi;
mod pi_chat;
mod pi_checkpoints;
