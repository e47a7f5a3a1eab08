//! Deciding a review hunk by hunk: `:PiIde hunk accept|reject` (and its keys) on the hunk under
//! the cursor, from either pane; what `:w` then sends is exactly the hunks kept.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

// Seven lines; the proposal changes lines 1, 4 and 7: three one-line hunks.
const FILE: &str = "a\nb\nc\nd\ne\nf\ng\n";
const PROPOSAL: &str = "A\nb\nc\nD\ne\nf\nG\n";

fn marks(nvim: &Nvim) -> Value {
    nvim.t("review.hunk_marks", json!([]))
}

fn proposal_lines(nvim: &Nvim) -> Value {
    nvim.t("review.proposal_lines", json!([]))
}

fn with_leader(after: Option<&str>) -> Nvim {
    Nvim::start_with(Options {
        before: Some("vim.g.mapleader = ' '".into()),
        after: after.map(String::from),
        ..Default::default()
    })
}

/// The middle hunk rejected on its line, `:w`: the answer carries exactly hunks 1 and 3.
fn reject_the_middle_one(nvim: &Nvim) {
    let path = file_with(nvim, "h.txt", FILE);
    let mut p = nvim.peer();
    open_review(nvim, &mut p, "h", &path, PROPOSAL, "pi-edit:h", 1);
    hunks_counted(nvim);
    type_keys(nvim, "4G:PiIde hunk reject<CR>");
    assert_eq!(proposal_lines(nvim), json!(["A", "b", "c", "d", "e", "f", "G"]));
    assert_eq!(marks(nvim), json!([[4, "✗ rejected"]]));
    assert!(winbar(nvim).contains("  ·  2 of 3 hunks kept"), "{}", winbar(nvim));
    type_accept(nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "h"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nd\ne\nf\nG\n".to_string()]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), FILE, "the plugin wrote the file");
}

#[test]
fn the_middle_hunk_rejected_the_answer_carries_hunks_1_and_3() {
    reject_the_middle_one(&Nvim::start());
}

#[test]
fn the_vsplit_layout_decides_hunks_too() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({review = {layout = 'vsplit'}})".into()),
        ..Default::default()
    });
    reject_the_middle_one(&nvim);
    assert_eq!(nvim.lua("return #vim.api.nvim_list_tabpages()"), json!(1));
}

#[test]
fn rejected_then_accepted_again_from_the_left_pane_the_proposal_is_back() {
    let nvim = with_leader(None);
    let path = file_with(&nvim, "r.txt", FILE);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "r", &path, PROPOSAL, "pi-edit:r", 1);
    hunks_counted(&nvim);
    // The left pane: ]h goes from the first hunk to the second, the keys decide it there.
    type_keys(&nvim, "<C-w>h");
    assert_eq!(nvim.lua("return vim.b.pi_ide_review.pane"), json!("disk"));
    type_keys(&nvim, "gg]h");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(4));
    type_keys(&nvim, " hr");
    assert_eq!(proposal_lines(&nvim), json!(["A", "b", "c", "d", "e", "f", "G"]));
    type_keys(&nvim, ":PiIde hunk accept<CR>");
    assert_eq!(proposal_lines(&nvim), json!(["A", "b", "c", "D", "e", "f", "G"]));
    assert_eq!(marks(&nvim), json!([]));
    type_keys(&nvim, "<C-w>l");
    assert!(winbar(&nvim).contains("3 of 3 hunks kept"), "{}", winbar(&nvim));
    // [h goes back from the last hunk to the middle one, in the proposal too.
    type_keys(&nvim, "G[h");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(4));
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "r"), vec!["FILE_SAVED".to_string(), PROPOSAL.to_string()]);
}

#[test]
fn edits_elsewhere_do_not_move_a_decision_and_an_edited_hunk_is_left_as_typed() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "e.txt", FILE);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "e", &path, PROPOSAL, "pi-edit:e", 1);
    hunks_counted(&nvim);
    // Two lines typed between the first hunks: the middle hunk is on line 6 now.
    type_keys(&nvim, "2Gonew<CR>lines<Esc>6G:PiIde hunk reject<CR>");
    assert_eq!(proposal_lines(&nvim), json!(["A", "b", "new", "lines", "c", "d", "e", "f", "G"]));
    // The last hunk edited by hand: rejecting it leaves the edit and says so.
    type_keys(&nvim, "Gcwmine<Esc>:PiIde hunk reject<CR>");
    nvim.wait_t("has_note", json!(["edited by hand"]), PATIENCE);
    assert_eq!(proposal_lines(&nvim)[8], json!("mine"));
    assert_eq!(marks(&nvim), json!([[6, "✗ rejected"], [9, "✎ edited"]]));
    type_accept(&nvim, ":w<CR>");
    assert_eq!(
        review_answer(&mut p, "e"),
        vec!["FILE_SAVED".to_string(), "A\nb\nnew\nlines\nc\nd\ne\nf\nmine\n".to_string()]
    );
}

#[test]
fn every_hunk_rejected_answers_as_a_rejection() {
    let nvim = with_leader(None);
    let path = file_with(&nvim, "all.txt", FILE);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "all", &path, PROPOSAL, "pi-edit:all", 1);
    hunks_counted(&nvim);
    type_keys(&nvim, "gg hr]h hr]h hr");
    assert!(winbar(&nvim).contains("0 of 3 hunks kept"), "{}", winbar(&nvim));
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "all"), vec!["DIFF_REJECTED".to_string(), "pi-edit:all".to_string()]);
}

#[test]
fn outside_a_review_the_command_says_so_and_changes_nothing() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = edit_file(&nvim, "plain.txt", &["one", "two"]);
    type_keys(&nvim, ":PiIde hunk reject<CR>");
    nvim.wait_t("has_note", json!(["not in a review"]), PATIENCE);
    assert_eq!(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"), json!(["one", "two"]));
    assert_eq!(nvim.lua("return vim.bo.modified"), json!(false));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    assert_eq!(
        nvim.lua("return vim.fn.getcompletion('PiIde hunk ', 'cmdline')"),
        json!(["accept", "reject", "next", "prev"])
    );
}

#[test]
fn crlf_without_a_final_newline_partially_accepted_stays_byte_exact() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "crlf.txt", "a\r\nb\r\nc\r\nd\r\ne");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "c", &path, "A\r\nb\r\nC\r\nd\r\nE", "pi-edit:c", 1);
    hunks_counted(&nvim);
    // The middle and the last hunk (the line without a newline) rejected, the first kept.
    type_keys(&nvim, "3G:PiIde hunk reject<CR>5G:PiIde hunk reject<CR>");
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "c"), vec!["FILE_SAVED".to_string(), "A\r\nb\r\nc\r\nd\r\ne".to_string()]);
}

/// `:colorscheme` starts with `:hi clear`: the review's groups, default links, come back from it
/// (a plain link would not, and the marks would lose their colours).
#[test]
fn the_review_highlights_survive_a_change_of_colorscheme() {
    let nvim = Nvim::start();
    nvim.lua("require('pi-ide.features.review.hunks') require('pi-ide.features.review.inline')");
    nvim.command("colorscheme blue").unwrap();
    let link = |name: &str| nvim.lua(&format!("return vim.api.nvim_get_hl(0, {{ name = '{name}' }}).link"));
    assert_eq!(link("PiIdeHunkRejected"), json!("DiagnosticWarn"));
    assert_eq!(link("PiIdeInlineRemoved"), json!("DiffDelete"));
    assert_eq!(link("PiIdeInlineAdded"), json!("DiffAdd"));
}

#[test]
fn a_review_sent_again_under_its_name_keeps_the_decisions_on_hunks_that_did_not_change() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "again.txt", FILE);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "1", &path, PROPOSAL, "pi-edit:again", 1);
    hunks_counted(&nvim);
    // Hunks 2 and 3 rejected; then the agent sends its review of that name again, hunk 1 and
    // 2 unchanged, hunk 3 another change.
    type_keys(&nvim, "4G:PiIde hunk reject<CR>7G:PiIde hunk reject<CR>");
    p.send_json(&open_diff_call("2", &path, "A\nb\nc\nD\ne\nf\nNEW\n", "pi-edit:again")).unwrap();
    assert_eq!(review_answer(&mut p, "1")[0], "DIFF_REJECTED", "the first is taken over");
    nvim.wait_t("has_note", json!(["again.txt sent again: 1 decision kept, 1 lost"]), PATIENCE);
    go_to_review(&nvim);
    hunks_counted(&nvim);
    assert_eq!(marks(&nvim), json!([[4, "✗ rejected"]]));
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "2"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nd\ne\nf\nNEW\n".to_string()]);
}

#[test]
fn a_review_sent_again_keeps_each_of_two_same_changes_rejected_and_an_edit_typed_over_a_hunk() {
    let nvim = Nvim::start();
    nvim.record_notify();
    // The same line put in two places: two hunks that are the same change, both rejected.
    let path = file_with(&nvim, "twice.txt", FILE);
    let twice = "X\na\nb\nc\nX\nd\ne\nf\nG\n";
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "1", &path, twice, "pi-edit:twice", 1);
    hunks_counted(&nvim);
    type_keys(&nvim, "5G:PiIde hunk reject<CR>1G:PiIde hunk reject<CR>");
    p.send_json(&open_diff_call("2", &path, twice, "pi-edit:twice")).unwrap();
    assert_eq!(review_answer(&mut p, "1")[0], "DIFF_REJECTED");
    nvim.wait_t("has_note", json!(["twice.txt sent again: 2 decisions kept"]), PATIENCE);
    go_to_review(&nvim);
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "2"), vec!["FILE_SAVED".to_string(), "a\nb\nc\nd\ne\nf\nG\n".to_string()]);
    // A line typed over a hunk, never decided with a key: it comes along too.
    let edited = file_with(&nvim, "edited.txt", FILE);
    open_review(&nvim, &mut p, "3", &edited, PROPOSAL, "pi-edit:edited", 1);
    hunks_counted(&nvim);
    type_keys(&nvim, "4Gccmine<Esc>");
    p.send_json(&open_diff_call("4", &edited, PROPOSAL, "pi-edit:edited")).unwrap();
    assert_eq!(review_answer(&mut p, "3")[0], "DIFF_REJECTED");
    nvim.wait_t("has_note", json!(["edited.txt sent again: 1 decision kept"]), PATIENCE);
    go_to_review(&nvim);
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "4"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nmine\ne\nf\nG\n".to_string()]);
}
