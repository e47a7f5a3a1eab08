//! What cannot crash, starve or bypass the editor: garbage, load, a long soak, hostile
//! processes and unlucky conditions.

#[path = "../support/harness.rs"]
mod harness;

mod hostile;
mod load_and_soak;
