//! `review.when = "after"` (features/review/after.lua): an agent's review is answered at once as
//! accepted, with its proposal exactly as sent, and no review is shown; the write that follows is
//! that agent's pending change. A write the pending changes' watch would not see (outside
//! Neovim's folder, through a link) is still reviewed before.

use crate::harness::*;
use pi_ide_testkit::nvim::{temp_dir, Options};

fn nvim_with_when(when: &str) -> Nvim {
    Nvim::start_with(Options {
        before: Some(format!("require('pi-ide').setup({{ review = {{ when = {when} }} }})")),
        ..Default::default()
    })
}

fn reviews_open(nvim: &Nvim) -> Value {
    nvim.lua("return #require('pi-ide.features.review').list()")
}

/// The pending change of `path` (`info().pending`), if there is one.
fn pending_of(nvim: &Nvim, path: &str) -> Option<Value> {
    let list = nvim.lua("return require('pi-ide').info().pending or {}");
    list.as_array().into_iter().flatten().find(|p| p["path"] == json!(path)).cloned()
}

#[test]
fn an_opendiff_with_review_when_after_is_answered_at_once_with_the_proposal_as_sent_and_its_write_is_pending() {
    let nvim = nvim_with_when("'after'");
    nvim.t("record_events", json!(["PiIdeReviewOpened", "PiIdeChangePending"]));
    let file = file_with(&nvim, "a.txt", "one\r\ntwo\r\n");
    let mut p = nvim.peer();
    watching(&nvim);
    // A byte order mark, CRLF, no final newline: answered byte for byte.
    let proposal = "\u{feff}one\r\nTWO\r\nthree";
    p.send_json(&open_diff_call("w1", &file, proposal, "a")).unwrap();
    assert_eq!(review_answer(&mut p, "w1"), ["FILE_SAVED", proposal]);
    assert_eq!(reviews_open(&nvim), json!(0), "a review is open");
    assert_eq!(nvim.t("count_events", json!(["PiIdeReviewOpened"])), json!(0), "a review was shown");
    // The agent writes its proposal, as Pi does on FILE_SAVED: Pi's pending change.
    std::fs::write(&file, proposal).unwrap();
    wait_until("the write pending", PATIENCE, || pending_of(&nvim, &file).is_some());
    let change = pending_of(&nvim, &file).unwrap();
    assert_eq!((&change["agent"], &change["kind"]), (&json!("pi"), &json!("changed")), "{change}");
    assert!(nvim.t("count_events", json!(["PiIdeChangePending", "path", file])).as_u64() >= Some(1));
}

#[test]
fn with_review_when_after_a_write_outside_neovims_folder_or_through_a_link_is_still_reviewed_before() {
    let nvim = nvim_with_when("{ default = 'after' }");
    let mut p = nvim.peer();
    let outside = temp_dir("after-outside").join("o.txt");
    std::fs::write(&outside, "o\n").unwrap();
    open_review(&nvim, &mut p, "o1", &outside.to_string_lossy(), "O\n", "o", 1);
    type_keys(&nvim, ":q<CR>");
    assert_eq!(review_answer(&mut p, "o1")[0], "DIFF_REJECTED");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "o\n");
    // A link in the folder, to a file in it: where the write lands is not what the agent named.
    file_with(&nvim, "b.txt", "b\n");
    std::os::unix::fs::symlink(nvim.cwd.join("b.txt"), nvim.cwd.join("a.txt")).unwrap();
    open_review(&nvim, &mut p, "l1", &nvim.cwd.join("a.txt").to_string_lossy(), "B\n", "a", 1);
    type_keys(&nvim, ":q<CR>");
    assert_eq!(review_answer(&mut p, "l1")[0], "DIFF_REJECTED");
}

#[test]
fn review_when_per_agent_leaves_the_other_agents_reviewed_before() {
    let nvim = nvim_with_when("{ default = 'after', pi = 'before' }");
    let file = file_with(&nvim, "c.txt", "c\n");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "c1", &file, "C\n", "c", 1);
    type_keys(&nvim, ":q<CR>");
    assert_eq!(review_answer(&mut p, "c1")[0], "DIFF_REJECTED");
}
