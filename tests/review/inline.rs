//! The inline layout (review.layout = "inline"): a review drawn in the file's own window, its
//! removed lines highlighted and its added ones as virtual lines, decided with the same commands
//! and keys; the file's buffer is never modified. What it cannot show goes to two panes, said why.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

// Seven lines; the proposal changes lines 1, 4 and 7: three one-line hunks.
const LINES: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];
const PROPOSAL: &str = "A\nb\nc\nD\ne\nf\nG\n";

fn inline_nvim() -> Nvim {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.g.mapleader = ' '".into()),
        after: Some("require('pi-ide').setup({review = {layout = 'inline'}})".into()),
        ..Default::default()
    });
    nvim.record_notify();
    nvim
}

fn marks(nvim: &Nvim) -> Value {
    nvim.t("review.inline_marks", json!([]))
}

fn untouched(nvim: &Nvim) -> Value {
    nvim.t("review.inline_untouched", json!([]))
}

fn no_review_left(nvim: &Nvim) {
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
}

/// The buffer-local map on `lhs` in the current buffer, or "" when there is none.
fn local_map(nvim: &Nvim, lhs: &str) -> Value {
    nvim.lua_with("local m = vim.fn.maparg(..., 'n', false, true) return m.buffer == 1 and (m.rhs or m.desc) or ''", vec![lhs.into()])
}

fn all_kept() -> Value {
    json!([[1, "removed"], [1, "A"], [4, "removed"], [4, "D"], [7, "removed"], [7, "G"]])
}

#[test]
fn the_middle_hunk_rejected_inline_accept_sends_hunks_1_and_3() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "h.txt", &LINES);
    nvim.lua("vim.wo.winbar = 'MINE'");
    let before = untouched(&nvim);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "h", &path, PROPOSAL, "pi-edit:h", 1);
    assert_eq!(marks(&nvim), all_kept());
    assert_eq!(nvim.lua("return #vim.api.nvim_list_wins()"), json!(1), "no pane was opened");
    assert!(winbar(&nvim).starts_with(" h.txt  ·  3 hunks  ·  "), "{}", winbar(&nvim));
    // ]h from the first line goes to the middle hunk; the key rejects it there.
    type_keys(&nvim, "gg]h");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(4));
    type_keys(&nvim, " hr");
    assert_eq!(
        marks(&nvim),
        json!([[1, "removed"], [1, "A"], [4, "D  ✗ rejected"], [7, "removed"], [7, "G"]])
    );
    assert!(winbar(&nvim).contains("2 of 3 hunks kept"), "{}", winbar(&nvim));
    // Accepted again, it is back; rejected again with the command.
    type_keys(&nvim, " ha");
    assert_eq!(marks(&nvim), all_kept());
    type_keys(&nvim, ":PiIde hunk reject<CR>");
    assert_eq!(untouched(&nvim), before, "the file's buffer is never modified");
    nvim.request("nvim_input", vec![":PiIde accept<CR>".into()]).unwrap();
    assert_eq!(review_answer(&mut p, "h"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nd\ne\nf\nG\n".to_string()]);
    no_review_left(&nvim);
    assert_eq!(marks(&nvim), json!([]));
    assert_eq!(winbar(&nvim), "MINE", "the user's winbar is back");
    assert_eq!(local_map(&nvim, "]h"), json!(""), "the review's keys are gone");
    assert_eq!(untouched(&nvim), before);
}

#[test]
fn reject_answers_a_rejection_and_a_users_own_key_comes_back_after() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "k.txt", &LINES);
    // The user's own ]h in that buffer, as gitsigns sets one: the review's while it is up.
    nvim.lua("vim.keymap.set('n', ']h', '<Cmd>let g:mine = 1<CR>', { buffer = 0 })");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "k", &path, PROPOSAL, "pi-edit:k", 1);
    type_keys(&nvim, "gg]h");
    assert_eq!(nvim.lua("return vim.g.mine"), json!(null), "]h is the review's while it is up");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(4));
    // The command moves as the keys do.
    type_keys(&nvim, ":PiIde hunk prev<CR>");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(1));
    type_keys(&nvim, ":PiIde hunk next<CR>");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(4));
    type_keys(&nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(&mut p, "k"), vec!["DIFF_REJECTED".to_string(), "pi-edit:k".to_string()]);
    no_review_left(&nvim);
    assert_eq!(local_map(&nvim, "]h"), json!("<Cmd>let g:mine = 1<CR>"));
    type_keys(&nvim, "]h");
    assert_eq!(nvim.lua("return vim.g.mine"), json!(1), "]h is the user's again");
    assert_eq!(marks(&nvim), json!([]));
}

/// Sends a review that cannot be shown inline: it opens in two panes, and the user is told why.
fn goes_to_two_panes(nvim: &Nvim, p: &mut Peer, id: &str, path: &str, contents: &str, why: &str) {
    open_review(nvim, p, id, path, contents, &format!("pi-edit:{id}"), 1);
    nvim.wait_t("has_note", json!([format!("in two panes: {why}")]), PATIENCE);
    assert_eq!(nvim.lua("return vim.wo.diff and #vim.api.nvim_list_tabpages()"), json!(2));
    type_keys(nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(p, id)[0], "DIFF_REJECTED");
    no_review_left(nvim);
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
}

#[test]
fn a_buffer_left_behind_by_the_disk_away_from_the_hunks_is_never_drawn_as_the_review() {
    // The file is open and unmodified; another program rewrote line 2 behind Neovim. The agent
    // changes line 1 of the disk's text: drawn inline, the stale line 2 would be shown while the
    // answer carries the disk's. It goes to two panes, which show the disk, and says why.
    let nvim = inline_nvim();
    let mut p = nvim.peer();
    let path = edit_file(&nvim, "stale.txt", &["a", "b", "c"]);
    std::fs::write(&path, "a\nrm -rf ~  # EVIL\nc\n").unwrap();
    goes_to_two_panes(&nvim, &mut p, "stale", &path, "A\nrm -rf ~  # EVIL\nc\n", "your buffer differs from the disk");
    // Only the final newline differs: two panes too.
    let eol = edit_file(&nvim, "eol.txt", &["a", "b"]);
    std::fs::write(&eol, "a\nb").unwrap();
    goes_to_two_panes(&nvim, &mut p, "eol", &eol, "A\nb", "your buffer differs from the disk");
}

#[test]
fn what_cannot_be_shown_inline_goes_to_two_panes_and_says_why() {
    let nvim = inline_nvim();
    let mut p = nvim.peer();
    let closed = file_with(&nvim, "closed.txt", "a\n");
    goes_to_two_panes(&nvim, &mut p, "closed", &closed, "b\n", "not open in this tab");
    let new = nvim.cwd.join("new.txt").to_string_lossy().to_string();
    goes_to_two_panes(&nvim, &mut p, "new", &new, "b\n", "a new file");
    let edited = edit_file(&nvim, "edited.txt", &LINES);
    nvim.lua("vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'mine' })");
    goes_to_two_panes(&nvim, &mut p, "edited", &edited, PROPOSAL, "your buffer has unsaved edits");
    let lines: Vec<String> = (0..2000).map(|i| format!("line {i}")).collect();
    let big = edit_file(&nvim, "big.txt", &lines.iter().map(String::as_str).collect::<Vec<_>>());
    let changed = lines.iter().map(|l| l.to_uppercase() + "\n").collect::<String>();
    goes_to_two_panes(&nvim, &mut p, "big", &big, &changed, "4000 lines change (inline: up to 3000)");
}

#[test]
fn the_file_edited_meanwhile_moves_the_review_to_two_panes_with_its_decisions() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "m.txt", &LINES);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "m", &path, PROPOSAL, "pi-edit:m", 1);
    type_keys(&nvim, "4G hr");
    // Typed in the file: no mark is left behind, the review waits for Normal mode, then moves.
    type_keys(&nvim, "ggix");
    nvim.wait_for("#require('pi_ide_test.review').inline_marks() == 0", PATIENCE);
    assert_eq!(nvim.lua("return #vim.api.nvim_list_tabpages()"), json!(1));
    type_keys(&nvim, "<Esc>");
    // It waited for them: the panes open without taking the focus; they go there.
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 2", PATIENCE);
    nvim.wait_t("has_note", json!(["in two panes: the file was edited"]), PATIENCE);
    assert_eq!(nvim.lua("return vim.fn.tabpagenr()"), json!(1));
    type_keys(&nvim, ":PiIde review<CR>");
    nvim.wait_for("vim.wo.diff", PATIENCE);
    assert!(winbar(&nvim).contains("2 of 3 hunks kept"), "{}", winbar(&nvim));
    assert!(winbar(&nvim).contains("unsaved edits"), "{}", winbar(&nvim));
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "m"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nd\ne\nf\nG\n".to_string()]);
    no_review_left(&nvim);
    assert_eq!(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]"), json!("xa"), "the edit is kept");
}

#[test]
fn piide_panes_moves_it_to_two_panes_on_request() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "p.txt", &LINES);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "p", &path, PROPOSAL, "pi-edit:p", 1);
    type_keys(&nvim, ":PiIde panes<CR>");
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 2 and vim.wo.diff", PATIENCE);
    assert_eq!(nvim.lua("return vim.b.pi_ide_review.pane"), json!("proposal"));
    type_accept(&nvim, "Gcwmine<Esc>:w<CR>");
    assert_eq!(review_answer(&mut p, "p"), vec!["FILE_SAVED".to_string(), "A\nb\nc\nD\ne\nf\nmine\n".to_string()]);
}

#[test]
fn the_agent_closing_it_disconnecting_or_a_stop_leaves_nothing_behind() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "c.txt", &LINES);
    nvim.lua("vim.wo.winbar = 'MINE'");
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "c", &path, PROPOSAL, "pi-edit:c", 1);
    p.call_tool("close_tab", json!({"tab_name": "pi-edit:c"})).unwrap();
    no_review_left(&nvim);
    let clean = || {
        assert_eq!(marks(&nvim), json!([]));
        assert_eq!(winbar(&nvim), "MINE");
        assert_eq!(local_map(&nvim, " hr"), json!(""));
    };
    clean();
    let mut q = nvim.peer();
    open_review(&nvim, &mut q, "d", &path, PROPOSAL, "pi-edit:d", 1);
    assert_eq!(marks(&nvim), all_kept());
    q.close();
    no_review_left(&nvim);
    clean();
    let mut s = nvim.peer();
    open_review(&nvim, &mut s, "s", &path, PROPOSAL, "pi-edit:s", 1);
    nvim.command("PiIde stop").unwrap();
    assert_eq!(review_answer(&mut s, "s")[0], "DIFF_REJECTED");
    clean();
}

/// With <Space> as leader, the editing hint gives way to "2 of 3 hunks kept" at 80 columns.
#[test]
fn in_an_80_column_window_the_winbar_fits_and_says_where_editing_is() {
    let nvim = inline_nvim();
    nvim.lua("vim.o.columns = 80");
    let path = edit_file(&nvim, "w.txt", &LINES);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "w", &path, PROPOSAL, "pi-edit:w", 1);
    let fits = "return vim.fn.strdisplaywidth(vim.wo.winbar) <= vim.api.nvim_win_get_width(0)";
    assert_eq!(nvim.lua(fits), json!(true), "{}", winbar(&nvim));
    let bar = winbar(&nvim);
    assert!(bar.contains("<Space>pa accept  <Space>pr reject  edit: :PiIde panes"), "{bar}");
    type_keys(&nvim, "4G hr");
    assert_eq!(nvim.lua(fits), json!(true), "{}", winbar(&nvim));
    assert!(winbar(&nvim).contains("2 of 3 hunks kept"), "{}", winbar(&nvim));
    type_keys(&nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(&mut p, "w")[0], "DIFF_REJECTED");
}

#[test]
fn the_winbar_follows_the_file_and_never_comes_back_once_the_review_ended() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "f.txt", &LINES);
    let other = file_with(&nvim, "other.txt", "x\n");
    nvim.lua("vim.wo.winbar = 'MINE'");
    // What Neovim itself shows there, going to the other file and back, without a review.
    let away_and_back = || {
        nvim.lua_with("vim.cmd.edit(...)", vec![other.clone().into()]);
        let away = winbar(&nvim);
        type_keys(&nvim, ":b#<CR>");
        (away, winbar(&nvim))
    };
    let (away, back) = away_and_back();
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "f", &path, PROPOSAL, "pi-edit:f", 1);
    // A split of the file's window does not copy the review's bar.
    type_keys(&nvim, ":split<CR>");
    assert_eq!(winbar(&nvim), "MINE");
    type_keys(&nvim, ":close<CR>");
    assert!(winbar(&nvim).contains("3 hunks"), "{}", winbar(&nvim));
    // Another file in its window: the window's own bar; the file back: the review's.
    let (away_now, back_now) = away_and_back();
    assert_eq!(away_now, away);
    assert!(back_now.contains("3 hunks"), "{back_now}");
    assert_eq!(marks(&nvim), all_kept());
    type_keys(&nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(&mut p, "f")[0], "DIFF_REJECTED");
    no_review_left(&nvim);
    assert_eq!(winbar(&nvim), back);
    // Neovim remembers a window's options per buffer: the review's bar is not among them.
    assert_eq!(away_and_back(), (away, back));
    assert_eq!(marks(&nvim), json!([]));
    assert_eq!(nvim.t("has_note", json!(["internal error"])), json!(false), "{:?}", nvim.notes());
}

#[test]
fn lines_put_before_the_first_are_drawn_above_it_and_scrolled_into_view() {
    let nvim = inline_nvim();
    let path = edit_file(&nvim, "t.txt", &LINES);
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "t", &path, "top\na\nb\nc\nd\ne\nf\ng\n", "pi-edit:t", 1);
    assert_eq!(marks(&nvim), json!([[1, "^top"]]));
    assert_eq!(nvim.lua("return vim.fn.winsaveview().topfill"), json!(1));
    type_keys(&nvim, " hr");
    assert_eq!(marks(&nvim), json!([[1, "^top  ✗ rejected"]]));
    type_keys(&nvim, ":PiIde accept<CR>");
    assert_eq!(review_answer(&mut p, "t"), vec!["DIFF_REJECTED".to_string(), "pi-edit:t".to_string()]);
}
