//! `:PiIde add` (and `:PiIde send`) with no path in a file explorer: the entry under the cursor,
//! or every entry of a range, reaches the agent as at_mentioned. netrw is built in and tested
//! for real; oil.nvim, mini.files and nvim-tree are not installed here, so they are played by
//! fakes (tests/fakes/) that implement exactly the documented API functions the plugin
//! calls. snacks.nvim's explorer and neo-tree run for real in LazyVim (tests/install/lazyvim.rs).

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, Options};

/// A Neovim with the fake explorers on its runtimepath, in a folder holding a.txt, b.lua
/// and sub/c.txt.
fn nvim_in_tree() -> Nvim {
    let nvim = Nvim::start_with(Options {
        before: Some(format!(
            "vim.opt.rtp:append('{}')",
            plugin_root().join("tests/fakes").display()
        )),
        ..Default::default()
    });
    std::fs::create_dir_all(nvim.cwd.join("sub")).unwrap();
    for f in ["a.txt", "b.lua", "sub/c.txt"] {
        std::fs::write(nvim.cwd.join(f), "x\n").unwrap();
    }
    nvim
}

/// A connected agent, once Neovim has said so; what vim.notify shows is recorded from then on.
fn agent(nvim: &Nvim) -> Peer {
    let mut p = nvim.peer();
    settle(nvim, &mut p);
    // Answered by Lua: the connection's own message has been shown before it.
    fence(&mut p);
    nvim.record_notify();
    p
}

/// An absolute path under Neovim's folder.
fn abs(nvim: &Nvim, rel: &str) -> String {
    format!("{}/{rel}", nvim.cwd.display())
}

/// Puts the cursor on the line that reads exactly `text`; fails when there is none.
fn cursor_on(nvim: &Nvim, text: &str) {
    let found = nvim.lua_with(
        "return vim.fn.search('\\\\V\\\\^' .. vim.fn.escape(..., '\\\\') .. '\\\\$', 'cw')",
        vec![text.into()],
    );
    assert!(
        found.as_i64().unwrap_or(0) > 0,
        "no line {text:?} in {:?}",
        nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    );
}

/// The line number of the line that reads exactly `text`.
fn line_of(nvim: &Nvim, text: &str) -> i64 {
    cursor_on(nvim, text);
    nvim.lua("return vim.fn.line('.')").as_i64().unwrap()
}

/// The paths of every at_mentioned Neovim sent this peer so far, in order: the answer to a ping
/// is written after every frame queued before it.
fn mentioned(p: &mut Peer) -> Vec<String> {
    let r = p.request("ping", json!({})).expect("ping");
    assert_eq!(r["result"], json!({}), "{r}");
    let mut out = Vec::new();
    p.inbox.retain(|f| {
        if f["method"] == "at_mentioned" {
            assert_eq!(f["params"].as_object().unwrap().len(), 1, "lines sent: {f}");
            out.push(f["params"]["filePath"].as_str().unwrap().to_owned());
            false
        } else {
            true
        }
    });
    out
}

/// Runs an Ex command; a Lua error in it would fail here.
fn ex(nvim: &Nvim, cmd: &str) {
    nvim.command(cmd)
        .unwrap_or_else(|e| panic!(":{cmd} failed: {e}"));
}

/// Opens Neovim's folder in netrw and waits until it lists it.
fn open_netrw(nvim: &Nvim) {
    ex(nvim, "edit .");
    nvim.wait_for(
        "vim.bo.filetype == 'netrw' and vim.fn.search('\\\\V\\\\^b.lua\\\\$', 'cnw') > 0",
        PATIENCE,
    );
}

#[test]
fn netrw_adds_the_entry_under_the_cursor_and_every_entry_of_a_visual_range() {
    let nvim = nvim_in_tree();
    let mut p = agent(&nvim);
    open_netrw(&nvim);
    cursor_on(&nvim, "a.txt");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "a.txt")]);
    cursor_on(&nvim, "sub/");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "sub/")]);
    // `:PiIde send` in an explorer does the same.
    cursor_on(&nvim, "b.lua");
    ex(&nvim, "PiIde send");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "b.lua")]);
    let notes = nvim.notes();
    assert_eq!(notes, ["pi-ide.nvim: sent a.txt", "pi-ide.nvim: sent sub/", "pi-ide.nvim: sent b.lua"]);
    // The parent entry is skipped: nothing is sent, and the user is told.
    nvim.record_notify();
    cursor_on(&nvim, "../");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), Vec::<String>::new());
    assert_eq!(
        nvim.notes(),
        ["pi-ide.nvim: netrw: no file or folder under the cursor"]
    );
    // A Visual selection of two entries, through <Plug>(PiIdeAdd): both, and one message.
    nvim.record_notify();
    ex(&nvim, "xmap <F7> <Plug>(PiIdeAdd)");
    cursor_on(&nvim, "a.txt");
    type_keys(&nvim, "Vj<F7>");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "a.txt"), abs(&nvim, "b.lua")]);
    assert_eq!(
        nvim.notes(),
        ["pi-ide.nvim: sent 2 entries to the agent: a.txt, b.lua"]
    );
    // A range with no entry on its lines.
    nvim.record_notify();
    ex(&nvim, "1,3PiIde add");
    assert_eq!(mentioned(&mut p), Vec::<String>::new());
    assert_eq!(
        nvim.notes(),
        ["pi-ide.nvim: netrw: no file or folder on these lines"]
    );
    // A range over the banner, "../" and "./" too: only the real entries, once each.
    let last = line_of(&nvim, "b.lua");
    ex(&nvim, &format!("1,{last}PiIde add"));
    assert_eq!(
        mentioned(&mut p),
        [abs(&nvim, "sub/"), abs(&nvim, "a.txt"), abs(&nvim, "b.lua")]
    );
    // The cursor is where it was.
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(last));
}

#[test]
fn netrw_tree_listing_adds_entries_of_open_subfolders() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.g.netrw_liststyle = 3".into()),
        ..Default::default()
    });
    std::fs::create_dir_all(nvim.cwd.join("sub")).unwrap();
    std::fs::write(nvim.cwd.join("sub/c.txt"), "x\n").unwrap();
    let mut p = agent(&nvim);
    ex(&nvim, "edit .");
    nvim.wait_for(
        "vim.bo.filetype == 'netrw' and vim.fn.search('\\\\V\\\\^| sub/\\\\$', 'cw') > 0",
        PATIENCE,
    );
    // Open sub/ as the user would (<CR> on it), then point at the file inside.
    type_keys(&nvim, "<CR>");
    nvim.wait_for("vim.fn.search('\\\\V\\\\^| | c.txt\\\\$', 'cw') > 0", PATIENCE);
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "sub/c.txt")]);
    cursor_on(&nvim, "| sub/");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "sub/")]);
}

#[test]
fn add_with_no_path_outside_an_explorer_adds_the_current_file_or_says_how() {
    let nvim = nvim_in_tree();
    let mut p = agent(&nvim);
    ex(&nvim, "edit a.txt");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "a.txt")]);
    // <Plug>(PiIdeAdd) in Normal mode, in a file.
    ex(&nvim, "nmap <F7> <Plug>(PiIdeAdd)");
    type_keys(&nvim, "<F7>");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "a.txt")]);
    // A scratch buffer is neither a file nor an explorer.
    nvim.record_notify();
    ex(&nvim, "enew");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), Vec::<String>::new());
    let notes = nvim.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("usage: :PiIde add <path>"), "{notes:?}");
}

/// Opens Neovim's folder with a fake (`open`: Lua, given the folder), then checks the entry
/// under the cursor (`file`, `folder`: the lines that show a.txt and sub) and a range of two.
fn check_fake(open: &str, file: &str, folder: &str) {
    let nvim = nvim_in_tree();
    let mut p = agent(&nvim);
    nvim.lua_with(open, vec![nvim.cwd.display().to_string().into()]);
    cursor_on(&nvim, file);
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "a.txt")]);
    cursor_on(&nvim, folder);
    ex(&nvim, "PiIde send");
    assert_eq!(mentioned(&mut p), [abs(&nvim, "sub/")]);
    // Lines of a.txt and b.lua (sorted: one after the other).
    nvim.record_notify();
    let a = line_of(&nvim, file);
    ex(&nvim, &format!("{a},{}PiIde add", a + 1));
    assert_eq!(mentioned(&mut p), [abs(&nvim, "a.txt"), abs(&nvim, "b.lua")]);
    assert_eq!(
        nvim.notes(),
        ["pi-ide.nvim: sent 2 entries to the agent: a.txt, b.lua"]
    );
    assert_eq!(nvim.lua("return vim.fn.line('.')"), json!(a));
}

#[test]
fn oil_through_its_documented_api() {
    check_fake("require('oil').open(...)", "a.txt", "sub/");
}

#[test]
fn oil_parent_and_unsaved_entries_are_skipped() {
    let nvim = nvim_in_tree();
    let mut p = agent(&nvim);
    nvim.lua_with("require('oil').open(...)", vec![nvim.cwd.display().to_string().into()]);
    cursor_on(&nvim, "../");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), Vec::<String>::new());
    assert_eq!(
        nvim.notes(),
        ["pi-ide.nvim: oil.nvim: no file or folder under the cursor"]
    );
    // A line typed in oil's buffer is a file only once oil has saved it.
    nvim.record_notify();
    nvim.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, { 'new.txt' })");
    cursor_on(&nvim, "new.txt");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), Vec::<String>::new());
    assert_eq!(
        nvim.notes(),
        [format!("pi-ide.nvim: oil.nvim: not on disk: {}", abs(&nvim, "new.txt"))]
    );
}

#[test]
fn mini_files_through_its_documented_api() {
    check_fake("require('mini.files').open(...)", "a.txt", "sub");
}

#[test]
fn nvim_tree_through_its_documented_api() {
    check_fake(
        "require('nvim-tree.api').tree.open({ path = ... })",
        "a.txt",
        "sub",
    );
}

#[test]
fn nvim_tree_root_parent_line_is_skipped() {
    let nvim = nvim_in_tree();
    let mut p = agent(&nvim);
    nvim.lua_with(
        "require('nvim-tree.api').tree.open({ path = ... })",
        vec![nvim.cwd.display().to_string().into()],
    );
    cursor_on(&nvim, "..");
    ex(&nvim, "PiIde add");
    assert_eq!(mentioned(&mut p), Vec::<String>::new());
    assert_eq!(
        nvim.notes(),
        ["pi-ide.nvim: nvim-tree: no file or folder under the cursor"]
    );
}

#[test]
fn an_explorer_whose_api_fails_says_so_in_one_message_and_sends_nothing() {
    let nvim = nvim_in_tree();
    let mut p = agent(&nvim);
    let dir = nvim.cwd.display().to_string();
    nvim.lua_with("require('oil').open(...)", vec![dir.clone().into()]);
    cursor_on(&nvim, "a.txt");
    // Each way an explorer's API can break: how, and what the one message says.
    let cases = [
        (
            "require('oil').get_cursor_entry = function() error('the entry cache is gone') end",
            &["oil.nvim: oil.get_cursor_entry() failed: ", "the entry cache is gone"][..],
        ),
        (
            "require('oil').get_cursor_entry = nil",
            &["oil.nvim: oil.get_cursor_entry() is missing (a changed API?)"],
        ),
        (
            "require('oil').get_cursor_entry = function() return 42 end",
            &["oil.nvim: ", "attempt to index"],
        ),
        (
            "require('oil').get_current_dir = function() return nil end",
            &["oil.nvim: this oil buffer is not a local folder"],
        ),
        (
            "package.loaded.oil = nil package.preload.oil = function() error('gone') end",
            &["oil.nvim: require('oil') failed: is it installed and loaded?"],
        ),
    ];
    for (how, says) in cases {
        nvim.lua(how);
        nvim.record_notify();
        ex(&nvim, "PiIde add");
        let notes = nvim.notes();
        assert_eq!(notes.len(), 1, "{how}: {notes:?}");
        assert!(notes[0].starts_with("pi-ide.nvim: oil.nvim: "), "{how}: {notes:?}");
        for piece in says {
            assert!(notes[0].contains(piece), "{how}: {piece:?} not in {notes:?}");
        }
        assert!(!notes[0].contains('\n'), "one line: {notes:?}");
        assert_eq!(mentioned(&mut p), Vec::<String>::new(), "{how}");
    }
    assert_eq!(nvim.lua("return vim.v.errmsg"), json!(""));
}
