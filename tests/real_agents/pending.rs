//! What the real agents' tests check of a write an agent made by itself (pending changes, issue
//! 50): no review opens, the file's entry in `info().pending` and its `User PiIdeChangePending`
//! event, and the decisions typed in the file's own window.

use std::time::Duration;

use crate::harness::*;
use serde_json::{json, Value};

/// Records the `User PiIdeChangePending` events from now on: call it before the agent writes.
pub fn record_pending_events(nvim: &Nvim) {
    nvim.t("record_events", json!(["PiIdeChangePending"]));
}

/// The entry of `info().pending` for `path`, once there and naming `agent`, with at least one
/// hunk and its event told (the agent's `screen` in the failure message).
pub fn wait_pending(nvim: &Nvim, path: &str, agent: &str, patience: Duration, screen: impl Fn() -> String) -> Value {
    let entry = || nvim.t("pending.entry", json!([path]));
    let about = || format!("pending: {}\nevents: {}\n{}", pending(nvim), nvim.t("recorded", json!([])), screen());
    wait_until_or(&format!("{path} pending for {agent}"), patience, || entry()["agent"] == agent, about);
    let told = || nvim.t("count_events", json!(["PiIdeChangePending", "path", path])).as_u64() > Some(0);
    wait_until_or("its PiIdeChangePending event", PATIENCE, told, about);
    let event = nvim.t("last_event", json!(["PiIdeChangePending"]));
    assert_eq!(event["agent"], agent, "{event}");
    let entry = entry();
    assert!(entry["hunks"].as_u64().unwrap_or(0) >= 1, "{entry}");
    entry
}

/// Waits until `path` has left `info().pending`.
pub fn wait_decided(nvim: &Nvim, path: &str) {
    wait_until_or(&format!("{path} decided"), PATIENCE, || nvim.t("pending.entry", json!([path])).is_null(), || pending(nvim).to_string());
}

/// Everything `info().pending` holds, for failure messages.
pub fn pending(nvim: &Nvim) -> Value {
    nvim.lua("return require('pi-ide').info().pending")
}

/// Types, as a user would from wherever they are (an agent's terminal too), `command` in the
/// window showing `path`, its cursor on line `line` (a hunk).
pub fn type_in_window_of(nvim: &Nvim, path: &str, line: usize, command: &str) {
    type_keys(nvim, &format!("<C-\\><C-n>:drop {path}<CR>{line}G:{command}<CR>"));
}

/// No review was opened for the agent's write.
pub fn no_review(nvim: &Nvim) {
    assert_eq!(nvim.t("reviews_shown", json!([])), json!(0), "a review opened for a write the agent made by itself");
}

/// Polls `cond` until it holds; on timeout fails naming `what`, with `about()`.
fn wait_until_or(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool, about: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + timeout;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}\n{}", about());
        std::thread::sleep(Duration::from_millis(50));
    }
}
