//! What the editor tells the agent: the selection, diagnostics, the editor tools, and files
//! added from explorers.

#[path = "../support/harness.rs"]
mod harness;

mod diagnostics;
mod editor_tools;
mod explorers;
mod selection;
