//! Installing and the first minutes: the prebuilt library, lazy-loading, :checkhealth, the
//! commands and setup() options, and LazyVim as people run it.

#[path = "../support/harness.rs"]
mod harness;

mod commands_and_config;
mod first_five_minutes;
mod lazyvim;
mod prebuilt_library;
mod vim_pack;
