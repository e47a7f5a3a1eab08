//! Deciding hunks on bad input: line breaks and final newlines kept byte-exact through a partial
//! acceptance, a file that changed on disk while its review was open, hunks that overlap the
//! user's unsaved edits of the file.

use crate::harness::*;

/// `file` on disk, `proposal` for it, the hunk on line 4 rejected, `:w`: the answer's text.
fn middle_rejected(file: &str, proposal: &str) -> String {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "m.txt", file);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "m", &path, proposal, "pi-edit:m", 1);
    hunks_counted(&nvim);
    type_keys(&nvim, "4G:PiIde hunk reject<CR>");
    assert!(winbar(&nvim).contains("2 of 3 hunks kept"), "{}", winbar(&nvim));
    type_accept(&nvim, ":w<CR>");
    let texts = review_answer(&mut p, "m");
    assert_eq!(texts[0], "FILE_SAVED");
    texts[1].clone()
}

#[test]
fn a_crlf_file_with_the_middle_of_three_hunks_rejected_stays_crlf_byte_for_byte() {
    let saved = middle_rejected("a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\n", "A\r\nb\r\nc\r\nD\r\ne\r\nf\r\nG\r\n");
    assert_eq!(saved, "A\r\nb\r\nc\r\nd\r\ne\r\nf\r\nG\r\n");
}

#[test]
fn a_file_without_a_final_newline_partially_accepted_still_has_none() {
    let saved = middle_rejected("a\nb\nc\nd\ne\nf\ng", "A\nb\nc\nD\ne\nf\nG");
    assert_eq!(saved, "A\nb\nc\nd\ne\nf\nG");
}

/// A review of `FILE` with three hunks, the middle one rejected.
fn one_rejected(nvim: &Nvim, p: &mut Peer, name: &str) -> String {
    let path = file_with(nvim, name, "a\nb\nc\nd\ne\nf\ng\n");
    open_review(nvim, p, name, &path, "A\nb\nc\nD\ne\nf\nG\n", name, 1);
    hunks_counted(nvim);
    type_keys(nvim, "4G:PiIde hunk reject<CR>");
    path
}

#[test]
fn a_file_changed_on_disk_meanwhile_is_said_at_the_next_decision_and_its_accept_is_refused() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let mut p = nvim.peer();
    let path = one_rejected(&nvim, &mut p, "d.txt");
    // Another program writes the file: line 4 is no longer "d".
    std::fs::write(&path, "a\nb\nc\nX\ne\nf\ng\n").unwrap();
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    nvim.wait_t("has_note", json!(["d.txt changed on disk since this review opened"]), PATIENCE);
    assert!(winbar(&nvim).contains("⚠ changed on disk since it opened: cannot be accepted"), "{}", winbar(&nvim));
    // :w is refused: no answer, the review stays open; :PiIde reject rejects it.
    type_accept(&nvim, ":w<CR>");
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(1));
    assert_eq!(nvim.lua("return vim.bo.modified"), json!(true));
    type_keys(&nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(&mut p, "d.txt"), vec!["DIFF_REJECTED".to_string(), "d.txt".to_string()]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\nc\nX\ne\nf\ng\n");
}

#[test]
fn a_file_only_touched_meanwhile_is_accepted_as_decided() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let mut p = nvim.peer();
    let path = one_rejected(&nvim, &mut p, "t.txt");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    type_accept(&nvim, "G:PiIde hunk reject<CR>:w<CR>");
    assert_eq!(review_answer(&mut p, "t.txt"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nd\ne\nf\ng\n".to_string()]);
    assert!(!nvim.notes().iter().any(|n| n.contains("changed on disk")), "{:?}", nvim.notes());
}

#[test]
fn hunks_over_the_users_unsaved_edits_are_marked_and_the_edits_are_kept_after_the_accept() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "u.txt", "a\nb\nc\nd\ne\nf\ng\n");
    // Unsaved edits: line 4 (where the agent changes it too) and line 6 (where it does not).
    nvim.command(&format!("edit {path}")).unwrap();
    nvim.lua("vim.api.nvim_buf_set_lines(0, 3, 4, false, {'mine'}) vim.api.nvim_buf_set_lines(0, 5, 6, false, {'mine too'})");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "u", &path, "A\nb\nc\nD\ne\nf\nG\n", "pi-edit:u", 1);
    hunks_counted(&nvim);
    let marks = nvim.lua(
        "return vim.tbl_map(function(m) return { m[2] + 1, vim.trim(m[4].virt_text[1][1]) } end, \
         vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_get_namespaces().pi_ide_hunk_overlap, 0, -1, { details = true }))",
    );
    assert_eq!(marks, json!([[4, "⚠ overlaps your unsaved edits"]]));
    assert!(winbar(&nvim).contains("your buffer has unsaved edits (kept; this diff is against the disk); hunk 2 overlaps them"), "{}", winbar(&nvim));
    // The first hunk rejected, the rest accepted; the agent then writes the file.
    type_accept(&nvim, "gg:PiIde hunk reject<CR>:w<CR>");
    assert_eq!(review_answer(&mut p, "u"), vec!["FILE_SAVED".to_string(), "a\nb\nc\nD\ne\nf\nG\n".to_string()]);
    std::fs::write(&path, "a\nb\nc\nD\ne\nf\nG\n").unwrap();
    nvim.wait_t("has_note", json!(["but your buffer has unsaved edits: it is left as it is"]), PATIENCE);
    let mine = nvim.lua_with("return { vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false), vim.bo[vim.fn.bufnr(...)].modified }", vec![path.clone().into()]);
    assert_eq!(mine, json!([["a", "b", "c", "mine", "e", "mine too", "g"], true]));
}

fn proposal(nvim: &Nvim) -> Value {
    nvim.t("review.proposal_lines", json!([]))
}

#[test]
fn a_proposal_that_only_adds_the_final_newline_has_it_as_a_hunk_on_the_last_line() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "n.txt", "a\nb\nc");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "n", &path, "a\nb\nc\n", "pi-edit:n", 1);
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    assert_eq!(nvim.t("review.hunk_marks", json!([])), json!([[3, "✗ rejected (the final newline)"]]));
    assert!(winbar(&nvim).contains("0 of 1 hunk kept"), "{}", winbar(&nvim));
    // Rejected, then accepted again: the proposal's final newline is what is saved.
    type_accept(&nvim, ":PiIde hunk accept<CR>:w<CR>");
    assert_eq!(review_answer(&mut p, "n"), vec!["FILE_SAVED".to_string(), "a\nb\nc\n".to_string()]);
    // Rejected alone: nothing of the agent's is left, a rejection.
    let mut q = nvim.peer();
    open_review(&nvim, &mut q, "o", &path, "a\nb\nc\n", "pi-edit:o", 1);
    hunks_counted(&nvim);
    type_accept(&nvim, "G:PiIde hunk reject<CR>:w<CR>");
    assert_eq!(review_answer(&mut q, "o"), vec!["DIFF_REJECTED".to_string(), "pi-edit:o".to_string()]);
}

#[test]
fn the_final_newline_goes_with_the_hunk_that_ends_the_file_and_follows_its_undo() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "e.txt", "a\nb\nc");
    let mut p = nvim.peer();
    // Line 1 and the last line changed, a final newline added; the last hunk rejected.
    open_review(&nvim, &mut p, "e", &path, "A\nb\nC\n", "pi-edit:e", 1);
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    assert_eq!(proposal(&nvim), json!(["A", "b", "c"]));
    assert_eq!(nvim.lua("return vim.bo.eol"), json!(false));
    // u brings its line back, and the final newline with it.
    type_keys(&nvim, "u");
    assert_eq!(nvim.lua("return { vim.bo.eol, vim.fn.getline('$') }"), json!([true, "C"]));
    type_accept(&nvim, ":PiIde hunk reject<CR>:w<CR>");
    assert_eq!(review_answer(&mut p, "e"), vec!["FILE_SAVED".to_string(), "A\nb\nc".to_string()]);
}

#[test]
fn a_removed_final_newline_rejected_on_its_own_keeps_the_files() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "r.txt", "a\r\nb\r\nc\r\n");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "r", &path, "A\r\nb\r\nc", "pi-edit:r", 1);
    hunks_counted(&nvim);
    type_accept(&nvim, "G:PiIde hunk reject<CR>:w<CR>");
    assert_eq!(review_answer(&mut p, "r"), vec!["FILE_SAVED".to_string(), "A\r\nb\r\nc\r\n".to_string()]);
}
