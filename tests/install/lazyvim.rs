//! Inside the setup people actually run: LazyVim (lazy.nvim, blink.cmp, mini.pairs, noice,
//! snacks, which-key...) in a real TUI in a pseudo-terminal, with this plugin added by the
//! README's own lazy.nvim specs (see testkit/src/tui.rs). Keys go in with nvim_input, as the TUI
//! sends them, except where a test types bytes into the terminal itself.

use crate::harness::*;
use pi_ide_testkit::tui::{readme_lua_block, spec_for_checkout, LazyOptions};

/// LazyVim with the README's "## LazyVim" spec (blink.cmp source, LazyVim's <Tab>).
fn lazyvim(files: &[&str]) -> Nvim {
    Nvim::start_lazyvim(LazyOptions {
        spec: spec_for_checkout(&readme_lua_block("## LazyVim")),
        files: files.iter().map(|f| f.to_string()).collect(),
        ..Default::default()
    })
}

/// Every message the user was shown: noice's history and :messages.
fn messages(nvim: &Nvim) -> String {
    nvim.t("install.messages", json!([])).as_str().unwrap().to_owned()
}

/// Fails if any error reached the user or our log: an autocmd error, a Lua error, a traceback.
fn assert_no_errors(nvim: &Nvim) {
    let m = messages(nvim);
    for bad in [
        "E964",
        "E5108",
        "Error in",
        "stack traceback",
        "attempt to",
        "internal error",
    ] {
        assert!(!m.contains(bad), "{bad:?} was shown to the user:\n{m}");
    }
    assert_eq!(nvim.lua("return vim.v.errmsg"), json!(""), "{m}");
    let log = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
    assert!(
        !log.contains(" ERROR ") && !log.contains("failed"),
        "errors in the log:\n{log}"
    );
}

/// Enters Insert mode at the end of the buffer and waits for blink.cmp (loaded on InsertEnter)
/// to have mapped its keys in this buffer, so that what follows is typed into the full setup.
fn insert_at_end(nvim: &Nvim) {
    type_keys(nvim, "<Esc>Go");
    nvim.wait_for(
        "package.loaded['blink.cmp'] ~= nil and (vim.fn.maparg('<Tab>', 'i', false, true).desc or ''):find('^blink') ~= nil",
        PATIENCE,
    );
}

fn lines(nvim: &Nvim) -> Vec<String> {
    serde_json::from_value(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")).unwrap()
}

fn ghost_visible(nvim: &Nvim) -> bool {
    nvim.lua("return #vim.api.nvim_buf_get_extmarks(0, require('pi-ide.features.suggest.ghost').ns, 0, -1, {}) > 0")
        == json!(true)
}

fn menu_visible(nvim: &Nvim) -> bool {
    nvim.lua("return require('blink.cmp').is_menu_visible()") == json!(true)
}

/// The suggestion request sent with the cursor after `at` (its line up to the cursor, blanks
/// after it aside); answer it with `items`. One sent earlier, while the keys were still being
/// typed (a loaded machine lets the debounce run out between two keys), is left unanswered: an
/// answer to it would be stale and dropped.
fn answer_at(p: &mut Peer, at: &str, items: &[&str]) -> Value {
    loop {
        let r = p
            .wait_request("getSuggestions", PATIENCE)
            .expect("a getSuggestions request");
        let before = r["params"]["cursorBefore"].as_str().unwrap_or_default();
        if before.trim_end_matches([' ', '\t']).ends_with(at.trim_end_matches([' ', '\t'])) {
            p.respond(&r["id"], json!({ "suggestions": items })).unwrap();
            fence(p);
            return r;
        }
    }
}

fn open_diff(p: &mut Peer, id: &str, path: &str, contents: &str, tab: &str) {
    p.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": tab}}}))
        .unwrap();
}

#[test]
fn the_readme_spec_loads_it_and_reviews_accept_with_w_and_reject_with_q() {
    // The plain install spec from the README, as a LazyVim user would paste it.
    let nvim = Nvim::start_lazyvim(LazyOptions {
        files: vec!["a.lua".into()],
        ..Default::default()
    });
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(true));
    let path = nvim.cwd.join("a.lua");
    std::fs::write(&path, "local a = 1\n").unwrap();
    let path = path.to_string_lossy().to_string();
    nvim.t("record_events", json!(["PiIdeReviewOpened"]));
    let mut p = nvim.peer();
    // Accept: the user edits the proposal and types :w (through noice's command line).
    open_diff(&mut p, "w", &path, "local a = 2\n", "pi-edit:w");
    nvim.wait_for("require('pi_ide_test').count_events('PiIdeReviewOpened') == 1", PATIENCE);
    assert_eq!(nvim.lua("return vim.bo.buftype"), json!("acwrite"));
    type_accept(&nvim, "ggA -- mine<Esc>:w<CR>");
    let r = p.wait_response(&json!("w")).unwrap();
    assert_eq!(
        texts(&r),
        vec!["FILE_SAVED".to_string(), "local a = 2 -- mine\n".to_string()]
    );
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    // Reject: :q in the proposal.
    open_diff(&mut p, "q", &path, "local a = 3\n", "pi-edit:q");
    nvim.wait_for("require('pi_ide_test').count_events('PiIdeReviewOpened') == 2", PATIENCE);
    type_keys(&nvim, ":q<CR>");
    let r = p.wait_response(&json!("q")).unwrap();
    assert_eq!(
        texts(&r),
        vec!["DIFF_REJECTED".to_string(), "pi-edit:q".to_string()]
    );
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "local a = 1\n",
        "the plugin wrote the file"
    );
    assert_no_errors(&nvim);
}

/// A Lua condition: Select mode, with the selection starting at `text`.
fn selected_is(text: &str) -> String {
    format!(
        "(function() local a, b = vim.fn.getpos('v'), vim.fn.getpos('.') \
         local from = math.min(a[3], b[3]) \
         return vim.api.nvim_get_mode().mode == 's' and vim.fn.getline(a[2]):find({text:?}, from, true) == from end)()"
    )
}

#[test]
fn snippets_with_placeholders_raise_no_error_and_the_placeholder_is_the_selection() {
    let nvim = lazyvim(&["s.lua"]);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    insert_at_end(&nvim);
    // What blink.cmp does to expand a snippet in LazyVim (vim.snippet): the first placeholder
    // is selected in Select mode.
    type_keys(
        &nvim,
        "<Cmd>lua vim.snippet.expand('for ${1:i}, ${2:v} in ipairs(${3:list}) do\\n\\t$0\\nend')<CR>",
    );
    nvim.wait_for("vim.api.nvim_get_mode().mode == 's'", PATIENCE);
    nvim.lua("require('pi-ide.features.selection').flush()");
    let s = loop {
        let s = next_selection(&mut p);
        if s["text"] == "i" {
            break s;
        }
    };
    assert_eq!(s["selection"]["isEmpty"], false);
    // Type over the placeholders, jumping with LazyVim's <Tab> (blink.cmp may handle it on a
    // later turn of the loop: wait until the next placeholder is the selection).
    type_keys(&nvim, "k<Tab>");
    nvim.wait_for(&selected_is("v"), PATIENCE);
    type_keys(&nvim, "x<Tab>");
    nvim.wait_for(&selected_is("list"), PATIENCE);
    type_keys(&nvim, "items<Esc>");
    nvim.wait_for("vim.api.nvim_get_mode().mode == 'n'", PATIENCE);
    assert!(
        lines(&nvim).iter().any(|l| l == "for k, x in ipairs(items) do"),
        "{:?}",
        lines(&nvim)
    );
    nvim.lua("require('pi-ide.features.selection').flush()");
    assert_no_errors(&nvim);
}

#[test]
fn ghost_text_and_tab_with_blinks_menu_closed_then_the_suggestion_in_the_open_menu() {
    let mut nvim = lazyvim(&["g.lua"]);
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'local print_me = 1'})");
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    insert_at_end(&nvim);
    // Menu closed (no word being typed after "= "): ghost text, and <Tab> from the terminal.
    type_keys(&nvim, "local t = ");
    answer_at(&mut p, "local t = ", &["{ 1, 2 }"]);
    nvim.wait_for("require('pi-ide.features.suggest').visible()", PATIENCE);
    assert!(!menu_visible(&nvim));
    nvim.pty().unwrap().write(b"\t");
    nvim.wait_for(
        "vim.api.nvim_get_current_line() == 'local t = { 1, 2 }'",
        PATIENCE,
    );
    assert!(!ghost_visible(&nvim));
    // Menu open (a word with buffer matches): the answer arrives while it is shown. The ghost
    // text stays hidden; the suggestion is the menu's first item, and <C-y> takes it.
    type_keys(&nvim, "<CR>pri");
    nvim.wait_for("require('blink.cmp').is_menu_visible()", PATIENCE);
    answer_at(&mut p, "\npri", &["nt('hi')"]);
    nvim.wait_for(
        "(require('blink.cmp').get_items()[1] or {}).source_id == 'pi_ide'",
        PATIENCE,
    );
    assert!(!ghost_visible(&nvim), "ghost text drawn under the menu");
    assert_eq!(
        nvim.lua("return require('blink.cmp').get_items()[1].label"),
        json!("print('hi')")
    );
    type_keys(&nvim, "<C-y>");
    nvim.wait_for("vim.api.nvim_get_current_line() == \"print('hi')\"", PATIENCE);
    assert_eq!(
        nvim.lua("return require('pi-ide.features.suggest').stats().accepted"),
        json!(2)
    );
    // <C-e> closes the menu and the ghost text comes back.
    type_keys(&nvim, "<CR>pri");
    nvim.wait_for("require('blink.cmp').is_menu_visible()", PATIENCE);
    answer_at(&mut p, "\npri", &["nt('again')"]);
    nvim.wait_for("require('pi-ide.features.suggest').current() ~= nil", PATIENCE);
    type_keys(&nvim, "<C-e>");
    nvim.wait_for("require('pi-ide.features.suggest').visible()", PATIENCE);
    type_keys(&nvim, "<Tab>");
    nvim.wait_for("vim.api.nvim_get_current_line() == \"print('again')\"", PATIENCE);
    assert_no_errors(&nvim);
}

#[test]
fn closers_typed_by_mini_pairs_are_not_inserted_twice() {
    let nvim = lazyvim(&["m.lua"]);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    insert_at_end(&nvim);
    // `{` gives `{|}`; the suggestion ends with the closer again, on its own line.
    type_keys(&nvim, "local t = {");
    assert_eq!(
        nvim.lua("return vim.api.nvim_get_current_line()"),
        json!("local t = {}"),
        "mini.pairs is on"
    );
    answer_at(&mut p, "local t = {", &["\n    a = 1,\n  }"]);
    nvim.wait_for("require('pi-ide.features.suggest').visible()", PATIENCE);
    type_keys(&nvim, "<Tab>");
    let l = lines(&nvim);
    assert_eq!(&l[l.len() - 3..], ["local t = {", "    a = 1,", "  }"], "{l:?}");
    // `print(` gives `print(|)`.
    type_keys(&nvim, "<Esc>oprint(");
    answer_at(&mut p, "print(", &["\n    'x',\n  )"]);
    nvim.wait_for("require('pi-ide.features.suggest').visible()", PATIENCE);
    type_keys(&nvim, "<Tab>");
    let l = lines(&nvim);
    let tail: Vec<&str> = l[l.len() - 3..].iter().map(|s| s.trim()).collect();
    assert_eq!(tail, ["print(", "'x',", ")"], "{l:?}");
    // <CR> between a pair puts the closer on the next line; the suggestion repeats it.
    type_keys(&nvim, "<Esc>olocal u = {<CR>");
    answer_at(&mut p, "local u = {\n", &["b = 2,\n}"]);
    nvim.wait_for("require('pi-ide.features.suggest').visible()", PATIENCE);
    type_keys(&nvim, "<Tab>");
    let l = lines(&nvim);
    let tail: Vec<&str> = l[l.len() - 3..].iter().map(|s| s.trim()).collect();
    assert_eq!(tail, ["local u = {", "b = 2,", "}"], "{l:?}");
    assert_no_errors(&nvim);
}

/// The lines `keys` leave in a fresh buffer, with blink's menu open or not.
fn typed_result(nvim: &Nvim, keys: &str) -> Vec<String> {
    type_keys(nvim, "<Esc>ggdG");
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'local print_me = 1'})");
    insert_at_end(nvim);
    type_keys(nvim, keys);
    lines(nvim)
}

#[test]
fn tab_without_a_suggestion_does_what_it_does_in_lazyvim_alone() {
    let alone = Nvim::start_lazyvim(LazyOptions {
        spec: "return {}".into(),
        files: vec!["t.lua".into()],
        plugin: false,
        ..Default::default()
    });
    let with = lazyvim(&["t.lua"]);
    let _p = with.peer();
    for keys in ["a<Tab>b", "  x<Tab><Tab>y", "pri<Tab>z"] {
        assert_eq!(
            typed_result(&with, keys),
            typed_result(&alone, keys),
            "{keys}"
        );
    }
    assert_no_errors(&with);
}

#[test]
fn health_says_tab_reaches_pi_ide_through_blinks_fallback() {
    let nvim = lazyvim(&["h.lua"]);
    insert_at_end(&nvim);
    type_keys(&nvim, "<Esc>");
    nvim.command("checkhealth pi-ide").unwrap();
    let text = nvim
        .lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("<Tab> (accept): blink.cmp maps it in this buffer and falls back to pi-ide's mapping"),
        "{text}"
    );
    assert!(!text.contains("mapped by something else"), "{text}");
}

/// LazyVim in a folder holding a.lua, b.txt and sub/c.txt, and an agent connected to it (what
/// vim.notify shows is recorded from then on).
fn lazyvim_in_tree() -> (Nvim, Peer) {
    let nvim = Nvim::start_lazyvim(LazyOptions {
        files: vec!["a.lua".into()],
        ..Default::default()
    });
    std::fs::create_dir_all(nvim.cwd.join("sub")).unwrap();
    for f in ["b.txt", "sub/c.txt"] {
        std::fs::write(nvim.cwd.join(f), "x\n").unwrap();
    }
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    fence(&mut p);
    nvim.record_notify();
    (nvim, p)
}

/// What pi-ide.nvim showed with vim.notify since `record_notify` (noice may add a warning of
/// its own that vim.notify was replaced: the recorder is the replacement).
fn our_notes(nvim: &Nvim) -> Vec<String> {
    nvim.notes()
        .into_iter()
        .filter(|n| n.starts_with("pi-ide.nvim: "))
        .collect()
}

/// The paths of every at_mentioned sent to `p` so far, in order (a ping's answer comes after
/// every frame queued before it).
fn mentioned(p: &mut Peer) -> Vec<String> {
    let r = p.request("ping", json!({})).expect("ping");
    assert_eq!(r["result"], json!({}), "{r}");
    let mut out = Vec::new();
    p.inbox.retain(|f| {
        let mention = f["method"] == "at_mentioned";
        if mention {
            out.push(f["params"]["filePath"].as_str().unwrap().to_owned());
        }
        !mention
    });
    out
}

/// A Lua condition: the current buffer shows a line ending with `name` (an explorer's entry,
/// after its indent and icon).
fn shows(name: &str) -> String {
    format!(
        "(function() for _, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do \
         if vim.endswith(vim.trim(l), {name:?}) then return true end end return false end)()"
    )
}

/// Puts the cursor on the line of the entry `name`; returns the line number.
fn cursor_to_entry(nvim: &Nvim, name: &str) -> i64 {
    nvim.lua_with(
        "local name = ... for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do \
         if vim.endswith(vim.trim(l), name) then vim.api.nvim_win_set_cursor(0, { i, 0 }) return i end end \
         error('no entry ' .. name .. ' in ' .. vim.inspect(vim.api.nvim_buf_get_lines(0, 0, -1, false)))",
        vec![name.into()],
    )
    .as_i64()
    .unwrap()
}

#[test]
fn add_in_neo_tree_sends_the_entry_under_the_cursor_and_a_visual_range() {
    let (nvim, mut p) = lazyvim_in_tree();
    let abs = |rel: &str| format!("{}/{rel}", nvim.cwd.display());
    // This LazyVim profile enables the neo-tree extra (lazyvim.json): <leader>e opens it.
    type_keys(&nvim, "<Esc>:Neotree<CR>");
    nvim.wait_for(&format!("vim.bo.filetype == 'neo-tree' and {}", shows("b.txt")), PATIENCE);
    cursor_to_entry(&nvim, "b.txt");
    type_keys(&nvim, ":PiIde add<CR>");
    assert_eq!(mentioned(&mut p), [abs("b.txt")]);
    cursor_to_entry(&nvim, "sub");
    type_keys(&nvim, ":PiIde send<CR>");
    assert_eq!(mentioned(&mut p), [abs("sub/")]);
    // a.lua and b.txt, selected in Visual mode.
    let a = cursor_to_entry(&nvim, "a.lua");
    let b = cursor_to_entry(&nvim, "b.txt");
    assert_eq!(b, a + 1, "a.lua and b.txt are next to each other");
    cursor_to_entry(&nvim, "a.lua");
    type_keys(&nvim, "Vj:PiIde add<CR>");
    assert_eq!(mentioned(&mut p), [abs("a.lua"), abs("b.txt")]);
    assert_eq!(
        our_notes(&nvim),
        [
            "pi-ide.nvim: sent b.txt",
            "pi-ide.nvim: sent sub/",
            "pi-ide.nvim: sent 2 entries to the agent: a.lua, b.txt"
        ]
    );
    assert_no_errors(&nvim);
}

#[test]
fn add_in_snacks_explorer_sends_the_entry_under_the_cursor_picked_entries_and_a_range() {
    let (nvim, mut p) = lazyvim_in_tree();
    let abs = |rel: &str| format!("{}/{rel}", nvim.cwd.display());
    type_keys(&nvim, "<Esc>:lua Snacks.explorer()<CR>");
    nvim.wait_for(
        &format!("vim.bo.filetype == 'snacks_picker_list' and {}", shows("b.txt")),
        PATIENCE,
    );
    // snacks moves its own cursor on CursorMoved: wait until it is on the entry.
    let current_is = |name: &str| {
        format!(
            "vim.endswith(Snacks.picker.get({{ source = 'explorer' }})[1]:current().file or '', {name:?})"
        )
    };
    cursor_to_entry(&nvim, "b.txt");
    nvim.wait_for(&current_is("b.txt"), PATIENCE);
    type_keys(&nvim, ":PiIde add<CR>");
    assert_eq!(mentioned(&mut p), [abs("b.txt")]);
    cursor_to_entry(&nvim, "sub");
    nvim.wait_for(&current_is("sub"), PATIENCE);
    type_keys(&nvim, ":PiIde add<CR>");
    assert_eq!(mentioned(&mut p), [abs("sub/")]);
    // A Visual range: the entries on its lines.
    let a = cursor_to_entry(&nvim, "a.lua");
    nvim.wait_for(&current_is("a.lua"), PATIENCE);
    type_keys(&nvim, &format!(":{a},{}PiIde add<CR>", a + 1));
    assert_eq!(mentioned(&mut p), [abs("a.lua"), abs("b.txt")]);
    // Entries picked with <Tab> (snacks' own selection) win over the cursor.
    type_keys(&nvim, "<Tab>");
    nvim.wait_for(
        "#Snacks.picker.get({ source = 'explorer' })[1]:selected() == 1",
        PATIENCE,
    );
    cursor_to_entry(&nvim, "sub");
    type_keys(&nvim, "<Tab>");
    nvim.wait_for(
        "#Snacks.picker.get({ source = 'explorer' })[1]:selected() == 2",
        PATIENCE,
    );
    type_keys(&nvim, ":PiIde add<CR>");
    let mut got = mentioned(&mut p);
    got.sort();
    assert_eq!(got, [abs("a.lua"), abs("sub/")]);
    assert_eq!(
        our_notes(&nvim),
        [
            "pi-ide.nvim: sent b.txt",
            "pi-ide.nvim: sent sub/",
            "pi-ide.nvim: sent 2 entries to the agent: a.lua, b.txt",
            "pi-ide.nvim: sent 2 entries to the agent: a.lua, sub/"
        ]
    );
    assert_no_errors(&nvim);
}

#[test]
fn changes_behind_the_reviews_are_listed_taken_back_and_undone_in_lazyvim() {
    let nvim = Nvim::start_lazyvim(LazyOptions {
        files: vec!["a.lua".into()],
        ..Default::default()
    });
    let path = nvim.cwd.join("a.lua");
    std::fs::write(&path, "local a = 1\nreturn a\n").unwrap();
    nvim.command("edit!").unwrap();
    nvim.t("record_events", json!(["PiIdeCheckpoint", "PiIdeChanges", "PiIdeUndone"]));
    type_keys(&nvim, ":PiIde checkpoint<CR>");
    nvim.wait_for("require('pi_ide_test').count_events('PiIdeCheckpoint') == 1", PATIENCE);
    // An agent's shell writes behind the reviews.
    std::fs::write(&path, "local a = 2\nreturn a\n").unwrap();
    std::fs::write(nvim.cwd.join("b.lua"), "return 'b'\n").unwrap();
    type_keys(&nvim, ":PiIde changes<CR>");
    nvim.wait_for("require('pi_ide_test').count_events('PiIdeChanges') == 1 and vim.fn.getqflist({ winid = 0 }).winid ~= 0", PATIENCE);
    nvim.wait_for("vim.wo.diff and vim.api.nvim_buf_get_name(0):match('a.lua$') ~= nil", PATIENCE);
    type_accept(&nvim, "ggdo:w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "local a = 1\nreturn a\n");
    type_keys(&nvim, ":PiIde undo!<CR>");
    nvim.wait_for("require('pi_ide_test').count_events('PiIdeUndone') == 1", PATIENCE);
    assert!(!nvim.cwd.join("b.lua").exists(), "the created file is still there");
    assert_no_errors(&nvim);
}
