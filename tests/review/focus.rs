//! A review never takes a key the user aimed elsewhere: one that becomes ready while they type
//! opens without the focus (they go to it), and one that opens by itself takes a typed accept
//! only once it has been on screen `review.seen_ms`.

use crate::harness::*;
use std::time::Duration;

fn send_open_diff(p: &mut Peer, id: &str, path: &str, contents: &str) {
    p.send_json(&open_diff_call(id, path, contents, &format!("pi-write:{id}"))).unwrap();
}

#[test]
fn a_review_ready_as_the_user_leaves_insert_mode_leaves_their_w_to_their_file() {
    // `<Esc>`, then `:w` after these pauses (a person's): the review opened in between.
    for pause_ms in [0u64, 150, 300] {
        let nvim = Nvim::start();
        nvim.record_notify();
        let path = edit_file(&nvim, "mine.txt", &["x"]);
        type_keys(&nvim, "imine ");
        let mut p = nvim.peer();
        send_open_diff(&mut p, "d", &path, "EVIL\n");
        nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
        if pause_ms == 0 {
            type_keys(&nvim, "<Esc>:w<CR>");
        } else {
            type_keys(&nvim, "<Esc>");
            std::thread::sleep(Duration::from_millis(pause_ms)); // the user's pause, not a wait
            type_keys(&nvim, ":w<CR>");
        }
        wait_until("the user's file saved", PATIENCE, || {
            std::fs::read_to_string(&path).unwrap() == "mine x\n"
        });
        nvim.wait_for("require('pi-ide.features.review').count() == 1", PATIENCE);
        // They are where they were; the review is in a tab of its own, and says how to go there.
        assert_eq!(
            nvim.lua("return {vim.fn.tabpagenr(), vim.fn.tabpagenr('$'), vim.api.nvim_buf_get_name(0)}"),
            json!([1, 2, path]),
            "pause {pause_ms} ms"
        );
        assert!(nvim.lua("return require('pi-ide').status()").as_str().unwrap().contains("1 to review (:PiIde review)"));
        let said = nvim.notes().into_iter().find(|n| n.contains("waits in tab 2: :PiIde review"));
        assert!(said.is_some(), "pause {pause_ms} ms: {:?}", nvim.notes());
        // Unanswered: they go to it; their save changed the file it shows, so it can no longer be
        // accepted, and the first answer the agent gets is the rejection they give it.
        type_keys(&nvim, ":PiIde review<CR>");
        nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
        type_accept(&nvim, ":w<CR>");
        nvim.wait_t("has_note", json!(["mine.txt changed on disk since this review opened"]), PATIENCE);
        type_keys(&nvim, ":q<CR>");
        assert_eq!(review_answer(&mut p, "d")[0], "DIFF_REJECTED", "pause {pause_ms} ms");
    }
}

#[test]
fn a_review_opened_while_the_user_is_idle_takes_no_accept_before_it_was_seen() {
    let nvim = Nvim::start();
    nvim.record_notify();
    // Long enough that the first :w below is surely too soon.
    nvim.lua("require('pi-ide').setup({review = {seen_ms = 600000}})");
    let path = edit_file(&nvim, "f.txt", &["x"]);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "d", &path, "y\n", "pi-write:d", 1);
    assert_eq!(nvim.lua("return {vim.fn.tabpagenr(), vim.bo.buftype}"), json!([2, "acwrite"]), "idle: it takes the focus");
    type_keys(&nvim, ":w<CR>");
    nvim.wait_t("has_note", json!(["f.txt not accepted: it had only just opened"]), PATIENCE);
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(1));
    // Their own move out and back is a move, but they must still have seen it for seen_ms.
    type_keys(&nvim, "<C-w>h<C-w>l");
    type_keys(&nvim, ":w<CR>");
    wait_until("the second refusal", PATIENCE, || {
        nvim.t("count_notes", json!(["f.txt not accepted: it had only just opened"])) == json!(2)
    });
    // :PiIde review names it: deliberate, it counts at once.
    type_keys(&nvim, ":PiIde review<CR>");
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "d"), vec!["FILE_SAVED".to_string(), "y\n".to_string()]);
}
