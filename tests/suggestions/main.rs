//! Ghost-text suggestions while the user types.

#[path = "../support/harness.rs"]
mod harness;

mod ghost_text;
