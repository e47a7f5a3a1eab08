//! The editor tools (pi-ide's and Claude Code's) and at_mentioned, end to end.

use crate::harness::*;

fn json_text(resp: &Value) -> Value {
    let t = texts(resp);
    assert_eq!(t.len(), 1, "{resp}");
    serde_json::from_str(&t[0]).unwrap_or_else(|_| panic!("not JSON: {}", t[0]))
}

#[test]
fn every_tool_is_listed_with_a_schema() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let r = p.request("tools/list", json!({})).unwrap();
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for want in [
        "getDiagnostics",
        "getOpenEditorTabs",
        "getOpenEditors",
        "getWorkspaceFolders",
        "getCurrentSelection",
        "getLatestSelection",
        "openFile",
        "checkDocumentDirty",
        "saveDocument",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let open = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "openFile")
        .unwrap();
    assert_eq!(open["inputSchema"]["required"], json!(["filePath"]));
    assert_eq!(
        open["inputSchema"]["properties"]["startLine"]["type"],
        "integer"
    );
    assert_eq!(
        open["inputSchema"]["properties"]["makeFrontmost"]["type"],
        "boolean"
    );
}

#[test]
fn open_editor_tabs_and_open_editors_list_file_buffers() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    // None open: an empty JSON array, not an object.
    assert_eq!(
        texts(&p.call_tool("getOpenEditorTabs", json!({})).unwrap()),
        vec!["[]".to_string()]
    );
    let a = edit_file(&nvim, "a.rs", &["fn a() {}"]);
    let b = edit_file(&nvim, "b c.py", &["x = 1"]);
    nvim.command("enew").unwrap(); // a scratch buffer: not listed as an editor
    nvim.command(&format!("buffer {}", b.replace(' ', "\\ ")))
        .unwrap();
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, 0, false, {'# edited'})");
    let tabs = json_text(&p.call_tool("getOpenEditorTabs", json!({})).unwrap());
    let tabs = tabs.as_array().unwrap();
    assert_eq!(tabs.len(), 2, "{tabs:?}");
    let tb = tabs
        .iter()
        .find(|t| t["uri"] == "file://".to_string() + &b.replace(' ', "%20"))
        .unwrap();
    assert_eq!(tb["isActive"], true);
    assert_eq!(tb["isDirty"], true);
    assert_eq!(tb["languageId"], "python");
    let ta = tabs
        .iter()
        .find(|t| t["uri"] == format!("file://{a}"))
        .unwrap();
    assert_eq!(
        (
            ta["isActive"].clone(),
            ta["isDirty"].clone(),
            ta["languageId"].clone()
        ),
        (json!(false), json!(false), json!("rust"))
    );

    let eds = json_text(&p.call_tool("getOpenEditors", json!({})).unwrap());
    let tabs = eds["tabs"].as_array().unwrap();
    assert_eq!(tabs.len(), 2);
    let eb = tabs.iter().find(|t| t["fileName"] == b).unwrap();
    assert_eq!(eb["label"], "b c.py");
    assert_eq!(eb["isActive"], true);
    assert_eq!(eb["lineCount"], 2);
    assert_eq!(eb["isDirty"], true);
}

#[test]
fn workspace_folders() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let w = json_text(&p.call_tool("getWorkspaceFolders", json!({})).unwrap());
    let cwd = nvim.cwd.to_string_lossy().to_string();
    assert_eq!(w["success"], true);
    assert_eq!(w["rootPath"], cwd);
    assert_eq!(w["folders"][0]["path"], cwd);
    assert_eq!(w["folders"][0]["uri"], format!("file://{cwd}"));
    assert_eq!(w["folders"][0]["name"], "work");
}

#[test]
fn current_and_latest_selection() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    // Nothing open yet.
    let cur = json_text(&p.call_tool("getCurrentSelection", json!({})).unwrap());
    assert_eq!(
        cur,
        json!({"success": false, "message": "No active editor found"})
    );
    let latest = json_text(&p.call_tool("getLatestSelection", json!({})).unwrap());
    assert_eq!(
        latest,
        json!({"success": false, "message": "No selection available"})
    );
    let path = edit_file(&nvim, "s.txt", &["héllo", "world"]);
    type_keys(&nvim, "vl");
    // getCurrentSelection reads the editor now, without waiting for the debounce.
    let cur = json_text(&p.call_tool("getCurrentSelection", json!({})).unwrap());
    assert_eq!(cur["success"], true);
    assert_eq!(cur["text"], "hé");
    assert_eq!(cur["filePath"], path);
    assert_eq!(cur["selection"]["end"], json!({"line": 0, "character": 2}));
    type_keys(&nvim, "<Esc>");
    nvim.lua("require('pi-ide.features.selection').flush()");
    let latest = json_text(&p.call_tool("getLatestSelection", json!({})).unwrap());
    assert_eq!(latest["filePath"], path);
    assert!(latest.get("success").is_none(), "{latest}");
}

#[test]
fn open_file_shows_and_selects_lines_or_text() {
    let nvim = Nvim::start();
    let path = nvim.cwd.join("o.rs");
    std::fs::write(&path, "fn one() {}\nfn two() {}\nfn three() {}\n").unwrap();
    let path = path.to_string_lossy().to_string();
    let mut p = nvim.peer();
    let r = p.call_tool("openFile", json!({"filePath": path})).unwrap();
    assert_eq!(texts(&r), vec![format!("Opened file: {path}")]);
    assert_eq!(nvim.lua("return vim.api.nvim_buf_get_name(0)"), json!(path));
    let r = p
        .call_tool(
            "openFile",
            json!({"filePath": path, "startLine": 2, "endLine": 3}),
        )
        .unwrap();
    assert_eq!(
        texts(&r),
        vec!["Opened file and selected lines 2 to 3".to_string()]
    );
    assert_eq!(nvim.lua("return vim.api.nvim_get_mode().mode"), json!("V"));
    assert_eq!(
        nvim.lua("return {vim.fn.line('v'), vim.fn.line('.')}"),
        json!([2, 3])
    );
    type_keys(&nvim, "<Esc>");
    let r = p
        .call_tool(
            "openFile",
            json!({"filePath": path, "startText": "two", "endText": "three"}),
        )
        .unwrap();
    assert_eq!(
        texts(&r),
        vec![r#"Opened file and selected text from "two" to "three""#.to_string()]
    );
    assert_eq!(nvim.lua("return table.concat(vim.fn.getregion(vim.fn.getpos('v'), vim.fn.getpos('.'), {type = 'v'}), '\\n')"), json!("two() {}\nfn three"));
    type_keys(&nvim, "<Esc>");
    let r = p
        .call_tool(
            "openFile",
            json!({"filePath": path, "startText": "nowhere"}),
        )
        .unwrap();
    assert_eq!(
        texts(&r),
        vec![r#"Opened file, but text "nowhere" not found"#.to_string()]
    );
    // A missing file is an error that names it.
    let r = p
        .call_tool("openFile", json!({"filePath": "/no/such/file.rs"}))
        .unwrap();
    assert_eq!(error_code(&r), -32603);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/no/such/file.rs"),
        "{r}"
    );
}

#[test]
fn open_file_without_make_frontmost_disturbs_no_window() {
    let nvim = Nvim::start();
    let shown = edit_file(&nvim, "shown.txt", &["a", "b", "c"]);
    nvim.command("vsplit").unwrap();
    nvim.lua("vim.api.nvim_win_set_cursor(0, {2, 0})");
    let before = nvim.lua("return {vim.api.nvim_get_current_win(), vim.fn.winlayout(), vim.api.nvim_win_get_cursor(0), vim.api.nvim_get_mode().mode}");
    let hidden = nvim.cwd.join("hidden.py");
    std::fs::write(&hidden, "x = 1\ny = 2\n").unwrap();
    let hidden = hidden.to_string_lossy().to_string();
    let mut p = nvim.peer();
    let r = json_text(
        &p.call_tool(
            "openFile",
            json!({"filePath": hidden, "makeFrontmost": false}),
        )
        .unwrap(),
    );
    assert_eq!(
        r,
        json!({"success": true, "filePath": hidden, "languageId": "python", "lineCount": 2})
    );
    let after = nvim.lua("return {vim.api.nvim_get_current_win(), vim.fn.winlayout(), vim.api.nvim_win_get_cursor(0), vim.api.nvim_get_mode().mode}");
    assert_eq!(before, after);
    assert_eq!(
        nvim.lua("return vim.api.nvim_buf_get_name(0)"),
        json!(shown)
    );
    // The file is loaded and listed, with its filetype, for when the user goes to it.
    assert_eq!(nvim.lua_with("local b = vim.fn.bufnr(...) return {vim.api.nvim_buf_is_loaded(b), vim.bo[b].buflisted, vim.bo[b].filetype}", vec![hidden.clone().into()]), json!([true, true, "python"]));
}

#[test]
fn open_file_from_a_terminal_window_uses_a_file_window() {
    let nvim = Nvim::start();
    edit_file(&nvim, "f.txt", &["x"]);
    nvim.command("botright split | terminal").unwrap();
    let term_win = nvim.lua("return vim.api.nvim_get_current_win()");
    let target = nvim.cwd.join("g.txt");
    std::fs::write(&target, "y\n").unwrap();
    let mut p = nvim.peer();
    p.call_tool("openFile", json!({"filePath": target.to_string_lossy()}))
        .unwrap();
    assert_eq!(
        nvim.lua_with(
            "return vim.bo[vim.api.nvim_win_get_buf(...)].buftype",
            vec![rmpv::Value::from(term_win.as_u64().unwrap())]
        ),
        json!("terminal"),
        "the terminal window still shows the terminal"
    );
    assert_eq!(
        nvim.lua("return vim.api.nvim_buf_get_name(0)"),
        json!(target.to_string_lossy())
    );
}

#[test]
fn check_dirty_and_save_find_buffers_by_exact_path() {
    let nvim = Nvim::start();
    let path = edit_file(&nvim, "doc.txt", &["one"]);
    // A buffer whose name merely contains the other's: bufnr() patterns would confuse them.
    edit_file(&nvim, "doc.txt.bak", &["other"]);
    let mut p = nvim.peer();
    let r = json_text(
        &p.call_tool("checkDocumentDirty", json!({"filePath": path}))
            .unwrap(),
    );
    assert_eq!(
        r,
        json!({"success": true, "filePath": path, "isDirty": false, "isUntitled": false})
    );
    nvim.lua_with(
        "vim.api.nvim_buf_set_lines(vim.fn.bufnr(...), 0, -1, false, {'changed'})",
        vec![format!("^{path}$").into()],
    );
    let r = json_text(
        &p.call_tool("checkDocumentDirty", json!({"filePath": path}))
            .unwrap(),
    );
    assert_eq!(r["isDirty"], true);
    let r = json_text(
        &p.call_tool("saveDocument", json!({"filePath": path}))
            .unwrap(),
    );
    assert_eq!(
        r,
        json!({"success": true, "filePath": path, "saved": true, "message": "Document saved successfully"})
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed\n");
    let r = json_text(
        &p.call_tool("checkDocumentDirty", json!({"filePath": path}))
            .unwrap(),
    );
    assert_eq!(r["isDirty"], false);
    let missing = nvim.cwd.join("doc").to_string_lossy().to_string();
    for tool in ["checkDocumentDirty", "saveDocument"] {
        let r = json_text(&p.call_tool(tool, json!({"filePath": missing})).unwrap());
        assert_eq!(
            r,
            json!({"success": false, "message": format!("Document not open: {missing}")}),
            "{tool}"
        );
    }
    let r = p.call_tool("saveDocument", json!({})).unwrap();
    assert_eq!(error_code(&r), -32602);
}

#[test]
fn send_and_add_mention_files_and_lines() {
    let nvim = Nvim::start();
    let path = edit_file(&nvim, "m.rs", &["1", "2", "3", "4", "5"]);
    nvim.record_notify();
    // Without a client, the user is told.
    nvim.command("PiIde send").unwrap();
    assert!(
        nvim.notes()
            .iter()
            .any(|n| n.contains("no agent is connected")),
        "{:?}",
        nvim.notes()
    );
    let mut p = nvim.peer();
    nvim.command("2,4PiIde send").unwrap();
    let m = p.wait_notification("at_mentioned", PATIENCE).unwrap();
    assert_eq!(
        m["params"],
        json!({"filePath": path, "lineStart": 1, "lineEnd": 3})
    );
    nvim.command("PiIde send").unwrap();
    let m = p.wait_notification("at_mentioned", PATIENCE).unwrap();
    assert_eq!(m["params"], json!({"filePath": path}));
    // From visual mode through the <Plug> map.
    nvim.command("xmap gs <Plug>(PiIdeSend)").unwrap();
    type_keys(&nvim, "ggjVjgs");
    let m = p.wait_notification("at_mentioned", PATIENCE).unwrap();
    assert_eq!(
        m["params"],
        json!({"filePath": path, "lineStart": 1, "lineEnd": 2})
    );
    // :PiIde add with one-based lines, relative paths, folders.
    nvim.command("PiIde add m.rs 5 3").unwrap();
    let m = p.wait_notification("at_mentioned", PATIENCE).unwrap();
    assert_eq!(
        m["params"],
        json!({"filePath": path, "lineStart": 2, "lineEnd": 4})
    );
    nvim.command("PiIde add m.rs 2").unwrap();
    let m = p.wait_notification("at_mentioned", PATIENCE).unwrap();
    assert_eq!(
        m["params"],
        json!({"filePath": path, "lineStart": 1, "lineEnd": 1})
    );
    std::fs::create_dir_all(nvim.cwd.join("sub")).unwrap();
    nvim.command("PiIde add sub").unwrap();
    let m = p.wait_notification("at_mentioned", PATIENCE).unwrap();
    assert_eq!(
        m["params"],
        json!({"filePath": format!("{}/sub/", nvim.cwd.display())})
    );
    nvim.record_notify();
    nvim.command("PiIde add nope.rs").unwrap();
    nvim.command("PiIde add m.rs x").unwrap();
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("no such file or folder: nope.rs"), "{notes}");
    assert!(notes.contains("whole numbers"), "{notes}");
    // From a terminal there is no file to send.
    nvim.command("terminal").unwrap();
    nvim.command("PiIde send").unwrap();
    assert!(nvim.notes().join("\n").contains("not a file"));
}

#[test]
fn add_completes_file_names() {
    let nvim = Nvim::start();
    std::fs::write(nvim.cwd.join("alpha.rs"), "").unwrap();
    let c = nvim.lua("return vim.fn.getcompletion('PiIde add al', 'cmdline')");
    assert_eq!(c, json!(["alpha.rs"]));
    assert!(nvim
        .lua("return vim.fn.getcompletion('PiIde ', 'cmdline')")
        .as_array()
        .unwrap()
        .contains(&json!("send")));
}
