//! Hunks in the `:PiIde changes` view: `:PiIde hunk reject` (and its key) takes the hunk under
//! the cursor of the file back to the checkpoint's text, in the file's buffer, which the user's
//! `:w` writes; `]h`/`[h` move between hunks; the user's own keys come back when the view closes.

use super::changes_and_undo::{rig_with, turn};
use crate::harness::*;
use pi_ide_testkit::nvim::Options;
use serde_json::json;

fn rig() -> Nvim {
    rig_with("", Options { before: Some("vim.g.mapleader = ' '".into()), ..Default::default() })
}

fn lines(nvim: &Nvim) -> serde_json::Value {
    nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
}

/// `:PiIde changes` on the turn's only file, the cursor in the file's window.
fn open_changes(nvim: &Nvim) {
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("vim.t.pi_ide_changes == true and vim.wo.diff and vim.bo.buftype == ''", PATIENCE);
}

#[test]
fn a_shell_change_is_taken_back_hunk_by_hunk_and_written_by_the_users_w() {
    let nvim = rig();
    let dir = nvim.cwd.clone();
    std::fs::write(dir.join("a.txt"), "a\nb\nc\nd\ne\nf\ng\n").unwrap();
    // The user's own ]h on that file's buffer (as gitsigns sets one), before the view.
    nvim.command("edit a.txt | nnoremap <buffer> ]h <Cmd>let g:mine = 1<CR>").unwrap();
    turn(&nvim, "shell printf 'A\\nb\\nc\\nD\\ne\\nf\\nG\\n' > a.txt", 1);
    nvim.command("checktime").unwrap();
    open_changes(&nvim);
    // ]h from the first hunk goes to the second; the reject key takes it back, in the buffer.
    type_keys(&nvim, "gg]h");
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(4));
    type_keys(&nvim, " hr");
    assert_eq!(lines(&nvim), json!(["A", "b", "c", "d", "e", "f", "G"]));
    assert_eq!(nvim.lua("return vim.bo.modified"), json!(true));
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "A\nb\nc\nD\ne\nf\nG\n", "not written");
    // u undoes it; from the checkpoint's pane the command takes the same hunk back.
    type_keys(&nvim, "u");
    assert_eq!(lines(&nvim)[3], json!("D"));
    type_keys(&nvim, "<C-w>h4G:PiIde hunk reject<CR><C-w>l");
    assert_eq!(lines(&nvim), json!(["A", "b", "c", "d", "e", "f", "G"]));
    // Accepting says there is nothing to accept, and changes nothing.
    type_keys(&nvim, "G:PiIde hunk accept<CR>");
    nvim.wait_t("has_note", json!(["nothing to accept here: the file already holds this change"]), PATIENCE);
    assert_eq!(lines(&nvim)[6], json!("G"));
    type_accept(&nvim, ":w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "A\nb\nc\nd\ne\nf\nG\n");
    // Closed: the buffer has the user's ]h again, and none of the view's keys.
    nvim.command("tabclose").unwrap();
    nvim.command("cclose | buffer a.txt").unwrap();
    assert_eq!(nvim.lua("return vim.fn.maparg(']h', 'n')"), json!("<Cmd>let g:mine = 1<CR>"));
    assert_eq!(nvim.lua("return vim.fn.maparg(' hr', 'n')"), json!(""));
}

#[test]
fn crlf_lines_added_and_removed_are_taken_back_byte_exact() {
    let nvim = rig();
    let dir = nvim.cwd.clone();
    std::fs::write(dir.join("c.txt"), "a\r\nb\r\nc\r\nd\r\n").unwrap();
    // b removed, a line added after d.
    turn(&nvim, "shell printf 'a\\r\\nc\\r\\nd\\r\\nnew\\r\\n' > c.txt", 1);
    open_changes(&nvim);
    assert_eq!(nvim.lua("return vim.bo.fileformat"), json!("dos"));
    // The removed line: on the line before its filler lines; then the added one.
    type_keys(&nvim, "gg:PiIde hunk reject<CR>G:PiIde hunk reject<CR>");
    assert_eq!(lines(&nvim), json!(["a", "b", "c", "d"]));
    type_accept(&nvim, ":w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    assert_eq!(std::fs::read(dir.join("c.txt")).unwrap(), b"a\r\nb\r\nc\r\nd\r\n");
}
