//! Checkpoints of agent turns: `:PiIde changes` and `:PiIde undo`, with a fake ACP agent.

#[path = "../support/harness.rs"]
mod harness;

mod changes_and_undo;
mod hunks;
mod pending;
mod terminal_prompts;
