//! What is accepted is exactly what the user saw and meant: the bytes round-trip whatever the
//! user's 'fileencodings' (a BOM, CRLF, no final newline, NULs included); only a deliberate
//! accept accepts (`:w` typed in the proposal, ZZ, the user's save key, the accept key), never
//! `:wall`, `:xa`, a write from another window or an autosave; `:w {file}` writes a copy; and
//! the left pane shows the file that will be written.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

/// A review of `path` with `contents` proposed, on screen; returns its id.
fn review(nvim: &Nvim, p: &mut Peer, n: u32, path: &str, contents: &str) -> String {
    let id = format!("d{n}");
    let shown = nvim.t("reviews_shown", json!([])).as_u64().unwrap();
    open_review(nvim, p, &id, path, contents, &format!("pi-edit:{n}"), shown + 1);
    id
}

/// Rejects the review the user is in, and says what the agent was answered: DIFF_REJECTED
/// proves that nothing before it accepted.
fn reject_and_answer(nvim: &Nvim, p: &mut Peer, id: &str) -> String {
    nvim.command("PiIde reject").unwrap();
    review_answer(p, id)[0].clone()
}

fn accepted_bytes(nvim: &Nvim, p: &mut Peer, id: &str, keys: &str) -> Vec<u8> {
    type_accept(nvim, keys);
    let a = review_answer(p, id);
    assert_eq!(a[0], "FILE_SAVED", "{keys}");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    a[1].as_bytes().to_vec()
}

#[test]
fn the_bytes_round_trip_whatever_the_users_fileencodings() {
    let proposals: [&str; 6] = [
        "\u{feff}été, 日本語\n",
        "a\r\nb\r\n",
        "no final newline",
        "mixed\r\nendings\nand a lone \r here\n",
        "nul \u{0} inside\n",
        "",
    ];
    for encodings in ["ucs-bom,utf-8,default,latin1", "latin1", "cp932,utf-8", "euc-jp,utf-8,latin1"] {
        let nvim = Nvim::start_with(Options {
            before: Some(format!("vim.o.fileencodings = '{encodings}'")),
            ..Default::default()
        });
        let path = file_with(&nvim, "f.txt", "old\n");
        let mut p = nvim.peer();
        for (n, contents) in proposals.iter().enumerate() {
            let id = review(&nvim, &mut p, n as u32, &path, contents);
            let got = accepted_bytes(&nvim, &mut p, &id, ":w<CR>");
            assert_eq!(got, contents.as_bytes(), "fileencodings={encodings}: {contents:?}");
        }
    }
}

#[test]
fn an_edit_that_is_not_utf8_is_refused_with_a_message_and_the_review_stays() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "f.txt", "old\n");
    let mut p = nvim.peer();
    let id = review(&nvim, &mut p, 1, &path, "one\ntwo\n");
    // Bytes pasted from a Latin-1 register.
    nvim.lua("vim.api.nvim_buf_set_lines(0, 1, 2, false, { 't\\233l\\233' })");
    type_accept(&nvim, ":w<CR>");
    nvim.wait_t("has_note", json!(["not valid UTF-8", "line 2"]), PATIENCE);
    assert_eq!(nvim.t("reviews_shown", json!([])), json!(1), "the review stays open");
    // Fixed, it is accepted.
    nvim.lua("vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'télé' })");
    assert_eq!(accepted_bytes(&nvim, &mut p, &id, ":w<CR>"), "one\ntélé\n".as_bytes());
}

#[test]
fn what_the_panes_cannot_show_is_named_in_the_winbar() {
    let nvim = Nvim::start();
    let path = file_with(&nvim, "f.txt", "\u{feff}a\r\nb\r\n");
    let mut p = nvim.peer();
    let id = review(&nvim, &mut p, 1, &path, "a\nb");
    let bar = nvim.lua("return vim.wo.winbar");
    let bar = bar.as_str().unwrap();
    for change in ["line breaks CRLF → LF", "no newline at end of file", "removes the byte order mark"] {
        assert!(bar.contains(change), "{bar}");
    }
    assert_eq!(reject_and_answer(&nvim, &mut p, &id), "DIFF_REJECTED");
}

#[test]
fn only_a_deliberate_write_in_the_proposals_window_accepts() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.g.mapleader = ' '".into()),
        ..Default::default()
    });
    nvim.record_notify();
    let path = file_with(&nvim, "f.txt", "old\n");
    let mut p = nvim.peer();
    let mut n = 0;
    let mut next = |nvim: &Nvim, p: &mut Peer| {
        n += 1;
        let id = review(nvim, p, n, &path, "new\n");
        // The user starts editing the proposal.
        nvim.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'half-edited' })");
        id
    };
    // None of these accepts: each leaves the review open with a hint, and the rejection that
    // follows is the one answer the agent gets.
    let refused: [(&str, &str); 5] = [
        (":wall<CR>", ":wall writes every buffer"),
        ("gT:wall<CR>gt", ":wall writes every buffer"),
        (":w ++enc=latin1<CR>", "changes what is sent"),
        (":lua vim.cmd('silent! update')<CR>", "written by a plugin"),
        (":lua vim.defer_fn(function() vim.cmd('silent! wall') end, 1)<CR>", "written by a plugin"),
    ];
    for (keys, why) in refused {
        let id = next(&nvim, &mut p);
        nvim.t("record_notify", json!([]));
        type_keys(&nvim, keys);
        nvim.wait_t("has_note", json!(["not accepted", why]), PATIENCE);
        nvim.command("tablast").unwrap();
        assert_eq!(reject_and_answer(&nvim, &mut p, &id), "DIFF_REJECTED", "{keys}");
        nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    }
    // An autosave plugin: `update` when leaving a window.
    nvim.lua("vim.api.nvim_create_autocmd('BufLeave', { group = vim.api.nvim_create_augroup('AutoSave', {}), command = 'silent! update' })");
    let id = next(&nvim, &mut p);
    type_keys(&nvim, "<C-w>h<C-w>l");
    assert_eq!(reject_and_answer(&nvim, &mut p, &id), "DIFF_REJECTED", "autosave on BufLeave");
    nvim.lua("vim.api.nvim_del_augroup_by_name('AutoSave')");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // :xa and :wqa with a half-edited proposal: Neovim stays, and so does the review.
    for keys in [":xa<CR>", ":wqa<CR>"] {
        let id = next(&nvim, &mut p);
        nvim.request("nvim_input", vec![keys.into()]).unwrap();
        nvim.lua_through_prompts("return true");
        assert_eq!(nvim.t("reviews_shown", json!([])), json!(1), "{keys}");
        assert_eq!(reject_and_answer(&nvim, &mut p, &id), "DIFF_REJECTED", "{keys}");
        nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    }
    // What accepts: typed in the proposal's window, or its keys.
    nvim.lua("vim.keymap.set({ 'n', 'i', 'x', 's' }, '<C-s>', '<cmd>w<cr><esc>', { desc = 'Save File' })");
    for keys in [":w<CR>", ":w!<CR>", ":x<CR>", ":wq<CR>", ":up<CR>", "ZZ", "<C-s>", "i<C-s>", " pa", ":silent w<CR>"] {
        let id = next(&nvim, &mut p);
        assert_eq!(accepted_bytes(&nvim, &mut p, &id, keys), b"half-edited\n", "{keys}");
    }
    // Everything deleted: an empty file, as Neovim would write it (not a line break).
    let id = next(&nvim, &mut p);
    assert_eq!(accepted_bytes(&nvim, &mut p, &id, "ggdG:w<CR>"), b"");
    // :x on a proposal left as it is accepts it too.
    n += 1;
    let id = review(&nvim, &mut p, n, &path, "as proposed\n");
    assert_eq!(accepted_bytes(&nvim, &mut p, &id, ":x<CR>"), b"as proposed\n");
}

#[test]
fn w_to_another_file_and_saveas_write_a_copy_and_keep_the_review() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "f.txt", "old\n");
    let mut p = nvim.peer();
    let id = review(&nvim, &mut p, 1, &path, "new\r\nline\r\n");
    let copy = nvim.cwd.join("copy.txt");
    type_keys(&nvim, &format!(":w {}<CR>", copy.display()));
    nvim.wait_t("has_note", json!(["copy.txt", "written", "a copy"]), PATIENCE);
    assert_eq!(std::fs::read(&copy).unwrap(), b"new\r\nline\r\n", "the copy, as Vim writes it");
    // Over an existing file only with !.
    std::fs::write(&copy, "keep").unwrap();
    type_keys(&nvim, &format!(":w {}<CR>", copy.display()));
    let err = nvim.lua("return vim.v.errmsg");
    assert!(err.as_str().unwrap().contains("E13"), "{err}");
    assert_eq!(std::fs::read(&copy).unwrap(), b"keep");
    type_keys(&nvim, &format!(":w! {}<CR>", copy.display()));
    assert_eq!(std::fs::read(&copy).unwrap(), b"new\r\nline\r\n");
    // :saveas writes the copy; the proposal keeps its name and stays a review.
    let saved = nvim.cwd.join("saved.txt");
    let name = nvim.lua("return vim.api.nvim_buf_get_name(0)");
    type_keys(&nvim, &format!(":saveas {}<CR>", saved.display()));
    assert_eq!(std::fs::read(&saved).unwrap(), b"new\r\nline\r\n");
    assert_eq!(nvim.lua("return vim.api.nvim_buf_get_name(0)"), name);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n", "never the file itself");
    // Still a review: :w accepts it.
    assert_eq!(accepted_bytes(&nvim, &mut p, &id, ":w<CR>"), b"new\r\nline\r\n");
}

#[test]
fn the_left_pane_shows_the_file_that_will_be_written() {
    let nvim = Nvim::start();
    let old = file_with(&nvim, "old.txt", "A\n");
    let new = file_with(&nvim, "new.txt", "B\n");
    let mut p = nvim.peer();
    p.send_json(&json!({"jsonrpc": "2.0", "id": "d1", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": old, "new_file_path": new, "new_file_contents": "B\nC\n", "tab_name": "pi-write:1"}}}))
        .unwrap();
    wait_until("the review on screen", PATIENCE, || nvim.t("reviews_shown", json!([])) == json!(1));
    assert_eq!(nvim.t("pane_lines", json!([null, "disk"])), json!(["B"]), "new_file_path on the left");
    let left_bar = nvim.lua("return vim.wo[vim.fn.win_getid(vim.fn.winnr('h'))].winbar");
    let left_bar = left_bar.as_str().unwrap();
    assert!(left_bar.contains("new.txt") && left_bar.contains("old.txt"), "{left_bar}");
    nvim.wait_for("vim.wo.winbar:find('+1 −0', 1, true) ~= nil", PATIENCE);
    assert_eq!(accepted_bytes(&nvim, &mut p, "d1", ":w<CR>"), b"B\nC\n");
}
