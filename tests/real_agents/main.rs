//! The real agent programs (the versions scripts/ensure-agents.sh pins) against a real
//! Neovim, offline: a loopback mock of each model API plays the model (tests/support/).

#[path = "../support/harness.rs"]
mod harness;
#[path = "../support/anthropic_mock.rs"]
mod anthropic_mock;
#[path = "../support/codex_cli.rs"]
mod codex_cli;
#[path = "../support/copilot_cli.rs"]
mod copilot_cli;
#[path = "../support/gemini_mock.rs"]
mod gemini_mock;
#[path = "../support/mock_http.rs"]
mod mock_http;
#[path = "../support/openai_mock.rs"]
mod openai_mock;
#[path = "../support/pi_cli.rs"]
mod pi_cli;
#[path = "../support/responses_mock.rs"]
mod responses_mock;
#[path = "../support/terminal.rs"]
mod terminal;

mod acp_rig;
mod claude;
mod claude_acp;
mod cline_acp;
mod codex_acp;
mod codex_exec;
mod codex_tui;
mod copilot;
mod copilot_acp;
mod gemini;
mod gemini_acp;
mod kilo_acp;
mod mcporter;
mod opencode;
mod opencode_acp;
mod pending;
mod pi;
mod pi_chat;
mod pi_checkpoints;
mod qwen;
mod qwen_acp;
