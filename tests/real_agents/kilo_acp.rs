//! The real Kilo Code CLI (npm `@kilocode/cli`, pinned by scripts/ensure-agents.sh) in the
//! chat, as a user runs it: `:PiIde chat kilo` starts `kilo acp` with the plugin's own entry
//! (lua/pi-ide/agents/kilo.lua: KILO_PERMISSION, which makes it ask before every edit and
//! command; as installed it never asks) and only what runs it offline added. An opencode fork,
//! and the same in the chat: opencode's cases (opencode_acp.rs) run for it.

use crate::opencode_acp::*;

const KILO: Fork = Fork { name: "kilo", label: "Kilo", env_prefix: "KILO", extra_env: &[("KILO_TELEMETRY_LEVEL", "off")] };

#[test]
fn kilo_streams_into_the_chat_and_nothing_is_left_running_after_stop() {
    streams_and_leaves_nothing_running(&KILO);
}

#[test]
fn kilo_asks_before_an_edit_and_the_users_text_is_what_stays() {
    edit_reviewed_once_users_text_stays(&KILO);
}

#[test]
fn kilo_q_rejects_and_the_file_is_left() {
    q_rejects_file_left(&KILO);
}

#[test]
fn kilo_a_new_file_is_reviewed_and_created_after_w() {
    new_file_created_after_w(&KILO);
}

#[test]
fn kilo_abort_with_a_review_open_leaves_the_file_and_nothing_lands_after() {
    abort_with_review_open_nothing_lands(&KILO);
}
