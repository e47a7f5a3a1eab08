//! openDiff end to end: a real client asks, a real Neovim shows the review, and every way it
//! can end is answered exactly once, before any Close frame.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

/// Records PiIdeReviewOpened/Closed (see tests/lua/pi_ide_test.lua).
fn record_events(nvim: &Nvim) {
    nvim.t("record_events", json!(["PiIdeReviewOpened", "PiIdeReviewClosed"]));
}

fn opened(nvim: &Nvim) -> u64 {
    nvim.t("count_events", json!(["PiIdeReviewOpened"])).as_u64().unwrap()
}

/// Sends openDiff (not waiting for the answer) and waits until the review is on screen.
fn open_diff(nvim: &Nvim, p: &mut Peer, id: &str, path: &str, contents: &str, tab: &str) {
    let before = opened(nvim);
    p.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": tab}}}))
        .unwrap();
    wait_until("the review on screen", PATIENCE, || opened(nvim) > before);
}

fn setup(nvim: &Nvim, name: &str, text: &str) -> String {
    let path = nvim.cwd.join(name);
    std::fs::write(&path, text).unwrap();
    record_events(nvim);
    path.to_string_lossy().to_string()
}

#[test]
fn accept_with_w_sends_the_users_edits_and_never_writes_the_file() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "a.rs", "fn a() {}\n");
    let mut p = nvim.peer();
    open_diff(
        &nvim,
        &mut p,
        "d1",
        &path,
        "fn a() { 1 }\nfn b() {}\n",
        "pi-edit:1",
    );
    // The proposal is the current window, editable; the user changes a line, then :w.
    assert_eq!(nvim.lua("return vim.bo.buftype"), json!("acwrite"));
    nvim.lua("vim.api.nvim_buf_set_lines(0, 1, 2, false, {'fn b() { 2 }'})");
    type_accept(&nvim, ":w<CR>");
    assert_eq!(
        review_answer(&mut p, "d1"),
        vec![
            "FILE_SAVED".to_string(),
            "fn a() { 1 }\nfn b() { 2 }\n".to_string()
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn a() {}\n",
        "the plugin wrote the file"
    );
    wait_until("the review accepted", PATIENCE, || {
        nvim.t("count_events", json!(["PiIdeReviewClosed", "result", "accepted"])) == json!(1)
    });
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
}

#[test]
fn the_old_event_names_fire_too_until_the_next_release() {
    let nvim = Nvim::start();
    let path = nvim.cwd.join("old.txt");
    std::fs::write(&path, "a\n").unwrap();
    let path = path.to_string_lossy().to_string();
    nvim.t("record_events", json!(["PiIdeReviewOpened", "PiIdeReviewClosed", "PiIdeDiffOpened", "PiIdeDiffClosed"]));
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "o1", &path, "b\n", "pi-edit:o");
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "o1"), vec!["FILE_SAVED".to_string(), "b\n".to_string()]);
    wait_until("the old name of the close", PATIENCE, || {
        nvim.t("count_events", json!(["PiIdeDiffClosed", "result", "accepted"])) == json!(1)
    });
    let recorded = nvim.t("recorded", json!([]));
    let names: Vec<&str> = recorded.as_array().unwrap().iter().map(|e| e[0].as_str().unwrap()).collect();
    assert_eq!(names, ["PiIdeReviewOpened", "PiIdeDiffOpened", "PiIdeReviewClosed", "PiIdeDiffClosed"]);
}

#[test]
fn accept_by_key_and_by_command() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.g.mapleader = ' '".into()),
        ..Default::default()
    });
    let path = setup(&nvim, "k.txt", "one\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "k", &path, "two\n", "pi-write:k");
    type_accept(&nvim, " pa");
    assert_eq!(review_answer(&mut p, "k")[0], "FILE_SAVED");
    open_diff(&nvim, &mut p, "c", &path, "three\n", "pi-write:c");
    // From the left pane too.
    nvim.command("wincmd h").unwrap();
    nvim.command("PiIde accept").unwrap();
    assert_eq!(
        review_answer(&mut p, "c"),
        vec!["FILE_SAVED".to_string(), "three\n".to_string()]
    );
}

#[test]
fn reject_by_q_key_command_tabclose_and_wipe() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "r.txt", "x\n");
    let mut p = nvim.peer();
    type Ending = Box<dyn Fn(&Nvim)>;
    let cases: Vec<(&str, Ending)> = vec![
        (
            "quit",
            Box::new(|n: &Nvim| {
                n.command("quit").unwrap();
            }),
        ),
        ("key", Box::new(|n: &Nvim| type_keys(n, "\\pr"))),
        (
            "command",
            Box::new(|n: &Nvim| {
                n.command("PiIde reject").unwrap();
            }),
        ),
        (
            "tabclose",
            Box::new(|n: &Nvim| {
                n.command("tabclose").unwrap();
            }),
        ),
        (
            "bwipe",
            Box::new(|n: &Nvim| {
                n.command("bwipeout!").unwrap();
            }),
        ),
        (
            "bdelete from elsewhere",
            Box::new(|n: &Nvim| {
                n.lua("local b = vim.api.nvim_get_current_buf() vim.cmd('tabfirst') vim.cmd('bdelete! ' .. b)");
            }),
        ),
    ];
    for (i, (what, end)) in cases.iter().enumerate() {
        let id = format!("r{i}");
        let tab = format!("pi-write:{i}");
        open_diff(&nvim, &mut p, &id, &path, "y\n", &tab);
        end(&nvim);
        assert_eq!(
            review_answer(&mut p, &id),
            vec!["DIFF_REJECTED".to_string(), tab.clone()],
            "{what}"
        );
        nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
        nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    }
    // Exactly one answer each: nothing else arrives.
    p.set_timeout(std::time::Duration::from_millis(300));
    assert!(p.recv().is_err());
}

#[test]
fn a_disconnect_mid_review_closes_it() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "dc.txt", "x\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "d", &path, "y\n", "pi-write:dc");
    p.kill();
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    assert_eq!(
        nvim.t("last_event", json!(["PiIdeReviewClosed"]))["result"],
        json!("abandoned")
    );
}

#[test]
fn stop_mid_review_rejects_before_the_close_frame() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "st.txt", "x\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "s", &path, "y\n", "pi-write:st");
    nvim.command("PiIde stop").unwrap();
    let (frames, end) = read_until_close(&mut p);
    let answers: Vec<&Value> = frames.iter().filter(|f| f["id"] == "s").collect();
    assert_eq!(answers.len(), 1, "{frames:?}");
    assert_eq!(
        texts(answers[0]),
        vec!["DIFF_REJECTED".to_string(), "pi-write:st".to_string()]
    );
    assert!(matches!(end, Received::Close { .. }), "{end:?}");
}

#[test]
fn quitting_mid_review_rejects_before_the_close_frame() {
    let mut nvim = Nvim::start();
    let path = setup(&nvim, "q.txt", "x\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "q", &path, "y\n", "pi-write:q");
    assert!(nvim.quit(PATIENCE));
    let (frames, end) = read_until_close(&mut p);
    let answers: Vec<&Value> = frames.iter().filter(|f| f["id"] == "q").collect();
    assert_eq!(answers.len(), 1, "{frames:?}");
    assert_eq!(texts(answers[0])[0], "DIFF_REJECTED");
    assert!(matches!(end, Received::Close { .. }), "{end:?}");
}

#[test]
fn the_core_rejects_a_review_lua_never_answered_when_stopping() {
    // Even if the Lua side never answered (a bug in the review's view), stopping answers
    // DIFF_REJECTED from the core, never an error that would let the write through.
    let nvim = Nvim::start();
    let path = setup(&nvim, "core.txt", "x\n");
    nvim.lua("require('pi-ide.features.review').open = function() end");
    let mut p = nvim.peer();
    p.send_json(&json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "y\n", "tab_name": "pi-write:core"}}})).unwrap();
    nvim.wait_for("require('pi-ide').info().parked == 1", PATIENCE);
    nvim.command("PiIde stop").unwrap();
    let (frames, _) = read_until_close(&mut p);
    assert_eq!(
        texts(&frames[0]),
        vec!["DIFF_REJECTED".to_string(), "pi-write:core".to_string()]
    );
}

#[test]
fn the_same_tab_name_twice_rejects_the_first() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "same.txt", "x\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "first", &path, "y\n", "pi-write:same");
    open_diff(&nvim, &mut p, "second", &path, "z\n", "pi-write:same");
    assert_eq!(
        review_answer(&mut p, "first"),
        vec!["DIFF_REJECTED".to_string(), "pi-write:same".to_string()]
    );
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 2", PATIENCE);
    type_accept(&nvim, ":w<CR>");
    assert_eq!(
        review_answer(&mut p, "second"),
        vec!["FILE_SAVED".to_string(), "z\n".to_string()]
    );
}

#[test]
fn an_id_that_waits_already_is_refused_at_once_and_each_review_keeps_its_own_file() {
    let nvim = Nvim::start();
    let a = setup(&nvim, "a.txt", "a\n");
    let b = setup(&nvim, "b.txt", "b\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "d1", &a, "A\n", "pi-edit:a");
    // Another call with the id that waits: refused at once (as a rejection: an error would let
    // the Pi extension write unreviewed), never shown.
    p.send_json(&json!({"jsonrpc": "2.0", "id": "d1", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": b, "new_file_path": b, "new_file_contents": "B\n", "tab_name": "pi-edit:b"}}}))
        .unwrap();
    assert_eq!(review_answer(&mut p, "d1"), vec!["DIFF_REJECTED".to_string(), "pi-edit:b".to_string()]);
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(1));
    assert!(nvim.lua("return require('pi-ide.features.review').list()[1].path").as_str().unwrap().ends_with("a.txt"));
    // A call of another tool with that id is refused too, with an error.
    p.send_json(&json!({"jsonrpc": "2.0", "id": "d1", "method": "tools/call", "params": {"name": "getWorkspaceFolders", "arguments": {}}}))
        .unwrap();
    let r = p.wait_response(&json!("d1")).unwrap();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "d1"), vec!["FILE_SAVED".to_string(), "A\n".to_string()]);
}

#[test]
fn close_tab_closes_an_open_review_and_is_a_no_op_otherwise() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "ct.txt", "x\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "o", &path, "y\n", "pi-write:ct");
    // Another agent's close_tab of the same name does nothing: each closes its own reviews.
    let mut other = nvim.peer();
    let r = other
        .call_tool("close_tab", json!({"tab_name": "pi-write:ct"}))
        .unwrap();
    assert_eq!(texts(&r), vec!["TAB_CLOSED".to_string()]);
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(1));
    // The agent that opened it closes it (as the Pi extension does after every answer).
    let r = p
        .call_tool("close_tab", json!({"tab_name": "pi-write:ct"}))
        .unwrap();
    assert_eq!(texts(&r), vec!["TAB_CLOSED".to_string()]);
    assert_eq!(
        review_answer(&mut p, "o"),
        vec!["DIFF_REJECTED".to_string(), "pi-write:ct".to_string()]
    );
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    let r = p
        .call_tool("close_tab", json!({"tab_name": "pi-write:gone"}))
        .unwrap();
    assert_eq!(texts(&r), vec!["TAB_CLOSED".to_string()]);
}

#[test]
fn close_all_diff_tabs_leaves_the_users_own_diff_alone() {
    let nvim = Nvim::start();
    let a = setup(&nvim, "u1.txt", "a\nb\n");
    std::fs::write(nvim.cwd.join("u2.txt"), "a\nc\n").unwrap();
    // The user's own diff, in its own tab.
    nvim.command(&format!("tabedit {a} | vertical diffsplit u2.txt"))
        .unwrap();
    nvim.command("tabfirst").unwrap();
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "1", &a, "x\n", "pi-write:1");
    open_diff(&nvim, &mut p, "2", &a, "y\n", "pi-write:2");
    // Another agent's closeAllDiffTabs leaves them; their own agent's closes both.
    let mut other = nvim.peer();
    let r = other.call_tool("closeAllDiffTabs", json!({})).unwrap();
    assert_eq!(texts(&r), vec!["CLOSED_0_DIFF_TABS".to_string()]);
    p.send_json(&json!({"jsonrpc": "2.0", "id": "all", "method": "tools/call", "params": {"name": "closeAllDiffTabs", "arguments": {}}}))
        .unwrap();
    assert_eq!(review_answer(&mut p, "1")[0], "DIFF_REJECTED");
    assert_eq!(review_answer(&mut p, "2")[0], "DIFF_REJECTED");
    assert_eq!(review_answer(&mut p, "all"), vec!["CLOSED_2_DIFF_TABS".to_string()]);
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 2", PATIENCE);
    let user_diff = nvim.t("diff_windows", json!([]));
    assert_eq!(user_diff, json!(2), "the user's diff windows were touched");
}

#[test]
fn a_new_file_is_reviewed_against_nothing() {
    let nvim = Nvim::start();
    record_events(&nvim);
    let path = nvim.cwd.join("brand/new.py").to_string_lossy().to_string();
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "n", &path, "print(1)\n", "pi-write:new");
    assert_eq!(
        nvim.lua(
            "return vim.api.nvim_buf_get_lines(vim.fn.winbufnr(vim.fn.winnr('h')), 0, -1, false)"
        ),
        json!([""])
    );
    assert!(nvim
        .lua("return vim.wo[vim.fn.win_getid(vim.fn.winnr('h'))].winbar")
        .as_str()
        .unwrap()
        .contains("new file"));
    // The numbers come from the core a moment after the review opens.
    nvim.wait_for("vim.wo.winbar:find('+1 −0', 1, true) ~= nil", PATIENCE);
    // Highlighting follows on the next turns of the loop, on both panes.
    nvim.wait_for("vim.bo.filetype == 'python' and vim.bo[vim.fn.winbufnr(vim.fn.winnr('h'))].filetype == 'python'", PATIENCE);
    assert_eq!(
        nvim.lua("return {vim.wo.foldmethod, vim.bo.modified}"),
        json!(["diff", false])
    );
    type_accept(&nvim, ":w<CR>");
    assert_eq!(
        review_answer(&mut p, "n"),
        vec!["FILE_SAVED".to_string(), "print(1)\n".to_string()]
    );
    assert!(
        !std::path::Path::new(&path).exists(),
        "the plugin created the file"
    );
}

#[test]
fn the_users_unsaved_edits_are_kept_and_warned_about() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "edits.txt", "disk\n");
    nvim.command(&format!("edit {path}")).unwrap();
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'my unsaved work'})");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "e", &path, "agent\n", "pi-edit:e");
    // The left pane is the disk, not the user's buffer.
    assert_eq!(
        nvim.lua(
            "return vim.api.nvim_buf_get_lines(vim.fn.winbufnr(vim.fn.winnr('h')), 0, -1, false)"
        ),
        json!(["disk"])
    );
    assert!(nvim
        .lua("return vim.wo.winbar")
        .as_str()
        .unwrap()
        .contains("unsaved edits"));
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "e")[0], "FILE_SAVED");
    // The agent writes the file; the user's modified buffer is left alone, with a warning.
    nvim.record_notify();
    std::fs::write(&path, "agent\n").unwrap();
    nvim.wait_t("any_note", json!([]), PATIENCE);
    assert!(
        nvim.notes().join("").contains("unsaved edits"),
        "{:?}",
        nvim.notes()
    );
    assert_eq!(
        nvim.lua_with(
            "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)",
            vec![path.clone().into()]
        ),
        json!(["my unsaved work"])
    );
}

#[test]
fn an_unmodified_buffer_reloads_when_the_agent_writes() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "reload.txt", "old\n");
    nvim.command(&format!("edit {path}")).unwrap();
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "w", &path, "new\n", "pi-edit:w");
    type_accept(&nvim, ":w<CR>");
    review_answer(&mut p, "w");
    std::fs::write(&path, "new\n").unwrap();
    nvim.wait_for(
        &format!("vim.api.nvim_buf_get_lines(vim.fn.bufnr('{path}'), 0, -1, false)[1] == 'new'"),
        PATIENCE,
    );
}

#[test]
fn the_layout_comes_back_and_splitright_does_not_flip_the_panes() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.o.splitright = false vim.o.splitbelow = true".into()),
        ..Default::default()
    });
    let path = setup(&nvim, "lay.txt", "a\nb\nc\nd\ne\nf\n");
    nvim.command(&format!("edit {path} | vsplit | tabnew | tabprevious"))
        .unwrap();
    nvim.lua("vim.api.nvim_win_set_cursor(0, {4, 0})");
    let before = nvim.t("layout", json!([]));
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "l", &path, "a\nb\nc\nD\ne\nf\n", "pi-edit:l");
    // Left pane: the disk; right pane: the proposal, current, cursor on the first hunk.
    let panes = nvim.lua("local l = vim.fn.win_getid(vim.fn.winnr('h')) return {vim.bo[vim.api.nvim_win_get_buf(l)].buftype, vim.bo.buftype, vim.api.nvim_win_get_cursor(0)[1], vim.wo.diff}");
    assert_eq!(panes, json!(["nofile", "acwrite", 4, true]));
    type_accept(&nvim, ":w<CR>");
    review_answer(&mut p, "l");
    nvim.wait_for(
        "#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 2",
        PATIENCE,
    );
    nvim.wait_for("vim.b.pi_ide_review == nil", PATIENCE);
    // The panes go, then the tab and window the user was in come back, each on a turn of the
    // loop of its own: waited for (a loaded machine spreads them out).
    wait_until("the layout as it was", PATIENCE, || nvim.t("layout", json!([])) == before);
}

#[test]
fn vsplit_layout_opens_in_the_current_tab() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({review = {layout = 'vsplit'}})".into()),
        ..Default::default()
    });
    let path = setup(&nvim, "vs.txt", "a\n");
    nvim.command(&format!("edit {path}")).unwrap();
    let origin = nvim.lua("return vim.api.nvim_get_current_win()");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "v", &path, "b\n", "pi-edit:v");
    assert_eq!(nvim.lua("return #vim.api.nvim_list_tabpages()"), json!(1));
    assert_eq!(
        nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)"),
        json!(3)
    );
    nvim.command("PiIde reject").unwrap();
    review_answer(&mut p, "v");
    nvim.wait_for("#vim.api.nvim_tabpage_list_wins(0) == 1", PATIENCE);
    assert_eq!(nvim.lua("return vim.api.nvim_get_current_win()"), origin);
}

#[test]
fn two_reviews_at_once_each_answered_once() {
    let nvim = Nvim::start();
    let a = setup(&nvim, "two_a.txt", "a\n");
    let b = nvim.cwd.join("two_b.txt");
    std::fs::write(&b, "b\n").unwrap();
    let b = b.to_string_lossy().to_string();
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "A", &a, "A\n", "pi-edit:A");
    open_diff(&nvim, &mut p, "B", &b, "B\n", "pi-edit:B");
    assert!(nvim
        .lua("return vim.wo.winbar")
        .as_str()
        .unwrap()
        .contains("2 of 2"));
    // Other requests are served while both wait.
    assert!(p
        .call_tool("getDiagnostics", json!({}))
        .unwrap()
        .get("result")
        .is_some());
    type_accept(&nvim, ":w<CR>"); // B, the current one
    assert_eq!(
        review_answer(&mut p, "B"),
        vec!["FILE_SAVED".to_string(), "B\n".to_string()]
    );
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    nvim.command("tabnext 2").unwrap();
    assert!(!nvim
        .lua("return vim.wo.winbar")
        .as_str()
        .unwrap()
        .contains("of 2"));
    nvim.command("PiIde reject").unwrap();
    assert_eq!(
        review_answer(&mut p, "A"),
        vec!["DIFF_REJECTED".to_string(), "pi-edit:A".to_string()]
    );
    p.set_timeout(std::time::Duration::from_millis(300));
    assert!(p.recv().is_err(), "a second answer arrived");
}

#[test]
fn crlf_and_missing_final_newline_round_trip_byte_exact() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "eol.txt", "x\r\n");
    let mut p = nvim.peer();
    for (i, text) in [
        "a\r\nb\r\n",
        "a\r\nb",
        "no newline at end",
        "",
        "\n",
        "mixed\r\nend\n",
        "tab\there\n\n\n",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("e{i}");
        open_diff(&nvim, &mut p, &id, &path, text, &format!("pi-write:{i}"));
        type_accept(&nvim, ":w<CR>");
        assert_eq!(
            review_answer(&mut p, &id),
            vec!["FILE_SAVED".to_string(), text.to_string()],
            "{text:?}"
        );
        nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    }
}

#[test]
fn a_large_file_is_reviewed_and_accepted_whole() {
    let nvim = Nvim::start();
    let old: String = (0..60_000)
        .map(|i| format!("line {i} of a large file\n"))
        .collect();
    let new = old
        .replace("line 30000 of", "LINE 30000 OF")
        .replace("line 59999 of", "changed");
    let path = setup(&nvim, "large.txt", &old);
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "big", &path, &new, "pi-edit:big");
    assert_eq!(
        nvim.lua("return vim.api.nvim_win_get_cursor(0)[1]"),
        json!(30001)
    );
    nvim.wait_for("vim.wo.winbar:find('+2 −2 ', 1, true) ~= nil and vim.wo.winbar:find('2 hunks', 1, true) ~= nil", PATIENCE);
    type_accept(&nvim, ":w<CR>");
    let t = review_answer(&mut p, "big");
    assert_eq!(t[1].len(), new.len());
    assert!(t[1] == new);
}

#[test]
fn review_false_accepts_at_once_without_showing_anything() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').stop() require('pi-ide').setup({review = {enabled = false}}) require('pi-ide').start()".into()),
        ..Default::default()
    });
    let path = setup(&nvim, "nr.txt", "x\n");
    let mut p = nvim.peer();
    let r = p.call_tool("openDiff", json!({"old_file_path": path, "new_file_path": path, "new_file_contents": "y\n", "tab_name": "t"})).unwrap();
    assert_eq!(texts(&r), vec!["FILE_SAVED".to_string(), "y\n".to_string()]);
    assert_eq!(nvim.lua("return #vim.api.nvim_list_tabpages()"), json!(1));
    // setup() while running turns reviews back on, without a restart...
    nvim.lua("require('pi-ide').setup({review = {enabled = true}})");
    p.send_json(&json!({"jsonrpc": "2.0", "id": "on", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "z\n", "tab_name": "on"}}})).unwrap();
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "on"), vec!["FILE_SAVED".to_string(), "z\n".to_string()]);
    // ...and off again.
    nvim.lua("require('pi-ide').setup({review = {enabled = false}})");
    let r = p.call_tool("openDiff", json!({"old_file_path": path, "new_file_path": path, "new_file_contents": "w\n", "tab_name": "off"})).unwrap();
    assert_eq!(texts(&r), vec!["FILE_SAVED".to_string(), "w\n".to_string()]);
}

#[test]
fn a_review_waits_while_the_user_types_in_insert_mode() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "ins.txt", "x\n");
    nvim.command(&format!("edit {path}")).unwrap();
    type_keys(&nvim, "ihello");
    let mut p = nvim.peer();
    p.send_json(&json!({"jsonrpc": "2.0", "id": "i", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "y\n", "tab_name": "pi-write:i"}}})).unwrap();
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    // Still typing in the same buffer: no keystroke went to the review.
    type_keys(&nvim, " world");
    assert_eq!(nvim.lua("return {vim.api.nvim_get_mode().mode, vim.api.nvim_get_current_line(), #vim.api.nvim_list_tabpages()}"), json!(["i", "hello worldx", 1]));
    type_keys(&nvim, "<Esc>");
    // It waited for them: it opens without taking the focus, and they go to it.
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 2", PATIENCE);
    assert_eq!(nvim.lua("return vim.fn.tabpagenr()"), json!(1));
    type_keys(&nvim, ":PiIde review<CR>");
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "i")[0], "FILE_SAVED");
}

#[test]
fn the_winbar_shows_only_whole_key_hints_and_follows_the_width() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "narrow.txt", "a\n");
    let mut p = nvim.peer();
    nvim.command("set columns=200").unwrap();
    open_diff(&nvim, &mut p, "w", &path, "b\n", "pi-edit:w");
    nvim.wait_for("vim.wo.winbar:find('1 hunk', 1, true) ~= nil", PATIENCE);
    let bar = || nvim.lua("return vim.wo.winbar").as_str().unwrap().to_string();
    let all = bar();
    for hint in [":w accept", "pa accept", "pr reject"] {
        assert!(all.contains(hint), "{hint} missing in a wide window: {all}");
    }
    // Narrow: the hints that do not fit are left out whole (never cut to "<t"), ":w accept" last.
    nvim.command("vertical resize 50").unwrap();
    nvim.wait_for("vim.wo.winbar:find('pr reject', 1, true) == nil", PATIENCE);
    let narrow = bar();
    assert!(narrow.contains(":w accept") && !narrow.contains("pa accept"), "{narrow}");
    assert!(!narrow.contains("%<"), "{narrow}");
    assert_eq!(
        nvim.lua("return vim.fn.strdisplaywidth(vim.wo.winbar) <= vim.api.nvim_win_get_width(0)"),
        json!(true),
        "{narrow}"
    );
    // Wide again: every hint is back.
    nvim.command("vertical resize 150").unwrap();
    nvim.wait_for("vim.wo.winbar:find('pa accept', 1, true) ~= nil", PATIENCE);
    nvim.command("PiIde reject").unwrap();
    assert_eq!(review_answer(&mut p, "w")[0], "DIFF_REJECTED");
}

#[test]
fn a_waiting_review_opens_once_when_the_user_leaves_two_modes_in_one_burst() {
    // `<Esc>:w<CR>` typed at once: Visual to Normal, then Command-line to Normal. Each return to
    // Normal mode wakes the waiting review; it must open once, and stay open for the user.
    let nvim = Nvim::start();
    let path = setup(&nvim, "burst.txt", "x\n");
    nvim.command(&format!("edit {path}")).unwrap();
    nvim.record_notify();
    type_keys(&nvim, "V");
    let mut p = nvim.peer();
    p.send_json(&json!({"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "y\n", "tab_name": "pi-write:b"}}})).unwrap();
    nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    type_keys(&nvim, "<Esc>:w<CR>");
    wait_until("the review on screen", PATIENCE, || opened(&nvim) == 1);
    // It waited for the user: it opened without the focus, and their :w wrote their file.
    assert_eq!(nvim.lua("return vim.bo.buftype"), json!(""));
    type_keys(&nvim, ":PiIde review<CR>");
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    // Whatever was still scheduled has run: a second opening would have failed by now.
    nvim.lua("return vim.fn.getchar(1)");
    nvim.lua("vim.wait(200)");
    let errors: Vec<String> = nvim.notes().into_iter().filter(|n| n.contains("cannot show")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(opened(&nvim), 1);
    assert_eq!(
        nvim.t("count_events", json!(["PiIdeReviewClosed"])),
        json!(0),
        "the review was closed before the user decided"
    );
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "b"), vec!["FILE_SAVED".to_string(), "y\n".to_string()]);
    nvim.wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    // Nothing of the review is left behind.
    assert_eq!(
        nvim.lua("local n = 0 for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.b[b].pi_ide_review then n = n + 1 end end return n"),
        json!(0)
    );
}

/// The names of a review's pane: [bufname(), full name].
fn pane_name(nvim: &Nvim, tab: &str, pane: &str) -> Value {
    nvim.t("pane_name", json!([tab, pane]))
}

/// Every file in a folder, by name.
fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn review_panes_have_names_people_read_that_are_never_files() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "hello.txt", "hello\n");
    std::fs::create_dir(nvim.cwd.join("sub")).unwrap();
    let mut p = nvim.peer();
    // The Copilot CLI's tab_name: it was part of the names, and the tabline showed "p//[/a.txt".
    let tab = "[Copilot CLI] - hello.txt (…)";
    open_diff(&nvim, &mut p, "h", &path, "hello, world\nand more\n", tab);
    let cwd = nvim.cwd.to_string_lossy().to_string();
    assert_eq!(
        pane_name(&nvim, tab, "proposal"),
        json!(["hello.txt (proposal)", format!("{cwd}/hello.txt (proposal)")])
    );
    assert_eq!(pane_name(&nvim, tab, "disk")[0], "hello.txt (on disk)");
    // The default tabline, the statusline's %f and :ls! read them whole.
    let tabline = nvim.t("tabline", json!([]));
    assert!(
        tabline.as_str().unwrap().contains(" 2 hello.txt (proposal) "),
        "{tabline}"
    );
    let looks = || {
        nvim.lua(
            "local l = vim.fn.win_getid(vim.fn.winnr('h'))
             local function f(win) return vim.api.nvim_eval_statusline('%f', { winid = win }).str end
             return { f(0), f(l), vim.fn.execute('ls!') }",
        )
    };
    let before = looks();
    assert_eq!(before[0], "hello.txt (proposal)");
    assert_eq!(before[1], "hello.txt (on disk)");
    let ls = before[2].as_str().unwrap();
    assert!(ls.contains("\"hello.txt (proposal)\"") && ls.contains("\"hello.txt (on disk)\""), "{ls}");
    // Unlisted: a session never brings them back as files, and :bnext never lands on them.
    let listed = nvim.lua("return vim.fn.execute('ls')");
    assert!(!listed.as_str().unwrap().contains("hello.txt ("), "{listed}");
    // Not files, for Neovim and for the plugin, whatever their 'buftype' becomes.
    let kinds = nvim.t("review.pane_kinds", json!([]));
    assert_eq!(kinds, json!(["acwrite", "nofile", false, false, false]));
    // :w in the left pane writes nothing.
    nvim.command("wincmd h").unwrap();
    assert!(nvim.command("write").unwrap_err().contains("E382"));
    nvim.command("wincmd l").unwrap();
    // Elsewhere with :cd, nothing changes: no name is turned into a path in another folder.
    nvim.command("cd sub").unwrap();
    assert_eq!(looks(), before);
    assert_eq!(nvim.t("tabline", json!([])), tabline);
    // A part of it is never a copy of that name in the new folder either.
    nvim.record_notify();
    type_keys(&nvim, ":1w!<CR>");
    nvim.wait_t("has_note", json!(["a part of the proposal cannot be accepted"]), PATIENCE);
    // :w there still accepts: the agent gets the proposal, and no file is written anywhere.
    type_accept(&nvim, ":w<CR>");
    assert_eq!(
        review_answer(&mut p, "h"),
        vec!["FILE_SAVED".to_string(), "hello, world\nand more\n".to_string()]
    );
    nvim.wait_for("#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 1", PATIENCE);
    assert_eq!(files_in(&nvim.cwd), vec!["hello.txt", "sub"]);
    assert!(files_in(&nvim.cwd.join("sub")).is_empty());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
    // And back again: a new review there is named the same way.
    nvim.command("cd ..").unwrap();
    open_diff(&nvim, &mut p, "h2", &path, "hi\n", "pi-edit:h2");
    assert_eq!(pane_name(&nvim, "pi-edit:h2", "proposal")[0], "hello.txt (proposal)");
    // :file (here or elsewhere) renames it only for a moment.
    for dir in ["sub", ".."] {
        nvim.command(&format!("cd {dir}")).unwrap();
        type_keys(&nvim, ":file other.txt<CR>");
        assert_eq!(pane_name(&nvim, "pi-edit:h2", "proposal")[0], "hello.txt (proposal)");
    }
    nvim.command("PiIde reject").unwrap();
    assert_eq!(review_answer(&mut p, "h2")[0], "DIFF_REJECTED");
}

#[test]
fn reviews_of_files_with_the_same_name_are_told_apart() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    record_events(&nvim);
    // Room for the four tabs' labels (the default tabline cuts long ones from the left).
    nvim.command("set columns=160").unwrap();
    let file = |rel: &str| {
        let path = nvim.cwd.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "old\n").unwrap();
        path.to_string_lossy().to_string()
    };
    let (src, lib) = (file("src/a.txt"), file("lib/a.txt"));
    open_diff(&nvim, &mut p, "s", &src, "src\n", "pi-edit:s");
    open_diff(&nvim, &mut p, "l", &lib, "lib\n", "pi-edit:l");
    // The same file again, from another call: a number.
    open_diff(&nvim, &mut p, "s2", &src, "src again\n", "pi-edit:s2");
    let names: Vec<Value> = ["pi-edit:s", "pi-edit:l", "pi-edit:s2"]
        .iter()
        .flat_map(|t| [pane_name(&nvim, t, "proposal")[0].clone(), pane_name(&nvim, t, "disk")[0].clone()])
        .collect();
    assert_eq!(
        names,
        json!([
            "a.txt (proposal)",
            "a.txt (on disk)",
            "lib/a.txt (proposal)",
            "lib/a.txt (on disk)",
            "a.txt (proposal 2)",
            "a.txt (on disk 2)"
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    // Side by side in the tabline (a folder is cut to its first letter there).
    let tabline = nvim.t("tabline", json!([]));
    let t = tabline.as_str().unwrap();
    for label in [" 2 a.txt (proposal) ", " 2 l/a.txt (proposal) ", " 2 a.txt (proposal 2)"] {
        assert!(t.contains(label), "{label} in {t}");
    }
    // Each :w accepts its own review, and writes nothing. Each accept puts the user back in the
    // review they came from.
    for (id, text) in [("s2", "src again\n"), ("l", "lib\n"), ("s", "src\n")] {
        nvim.wait_for(
            &format!("(vim.b.pi_ide_review or {{}}).tab_name == 'pi-edit:{id}' and vim.b.pi_ide_review.pane == 'proposal'"),
            PATIENCE,
        );
        type_accept(&nvim, ":w<CR>");
        assert_eq!(review_answer(&mut p, id), vec!["FILE_SAVED".to_string(), text.to_string()]);
    }
    nvim.wait_for("#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 1", PATIENCE);
    assert_eq!(files_in(&nvim.cwd), vec!["lib", "src"]);
    assert_eq!(files_in(&nvim.cwd.join("src")), vec!["a.txt"]);
    assert_eq!(files_in(&nvim.cwd.join("lib")), vec!["a.txt"]);
}

#[test]
fn a_new_files_left_pane_is_named_for_it() {
    let nvim = Nvim::start();
    record_events(&nvim);
    let path = nvim.cwd.join("new.py").to_string_lossy().to_string();
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "n", &path, "print(1)\n", "pi-write:new");
    assert_eq!(pane_name(&nvim, "pi-write:new", "disk")[0], "new.py (new file)");
    assert_eq!(pane_name(&nvim, "pi-write:new", "proposal")[0], "new.py (proposal)");
    nvim.command("PiIde reject").unwrap();
    assert_eq!(review_answer(&mut p, "n")[0], "DIFF_REJECTED");
    assert!(files_in(&nvim.cwd).is_empty());
}

#[test]
fn a_session_brings_a_review_back_as_empty_windows_never_as_files() {
    let nvim = Nvim::start();
    let path = setup(&nvim, "kept.txt", "kept\n");
    let mut p = nvim.peer();
    open_diff(&nvim, &mut p, "k", &path, "changed\n", "pi-edit:k");
    // With the default 'sessionoptions' ("blank"), Neovim writes "enew" and "file <name>" for
    // each pane: restored, those would be normal buffers that :w writes as files.
    let session = nvim.home.join("Session.vim");
    nvim.command(&format!("mksession! {}", session.display())).unwrap();
    let text = std::fs::read_to_string(&session).unwrap();
    assert!(text.contains("enew"), "{text}");
    assert!(!text.contains("kept.txt\\ ("), "{text}");
    nvim.command("PiIde reject").unwrap();
    assert_eq!(review_answer(&mut p, "k")[0], "DIFF_REJECTED");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 1", PATIENCE);
    // Sourced, the session has the review's tab back, with empty, unnamed windows.
    nvim.command(&format!("source {}", session.display())).unwrap();
    assert_eq!(
        nvim.lua(
            "local names = {}
             for _, b in ipairs(vim.api.nvim_list_bufs()) do
               if vim.api.nvim_buf_get_name(b):find('kept.txt (', 1, true) then table.insert(names, vim.api.nvim_buf_get_name(b)) end
             end
             return { #vim.api.nvim_list_tabpages(), names }"
        ),
        json!([2, []])
    );
    assert_eq!(files_in(&nvim.cwd), vec!["kept.txt"]);
}
