//! The first five minutes: installing as lazy.nvim does, building, lazy-loading,
//! :checkhealth, the statusline, events, :PiIde log.

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, Options};
use std::process::Command;

#[test]
fn installs_builds_and_rebuilds_like_lazy_nvim() {
    let dir = fresh_copy();
    assert!(!dir.join("target/release/libpi_ide.so").exists());
    // Dependencies come from the checkout's cache; this crate is compiled here from scratch.
    seed_cargo_cache(&dir);
    // Exactly the documented build step, in the fresh copy.
    let out = Command::new("cargo")
        .args(["build", "--release"])
        .current_dir(&dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo build --release failed in a fresh copy:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nvim = nvim_with_plugin_at(&dir);
    assert_eq!(
        nvim.lua("return require('pi-ide.core.native').path()"),
        json!(dir.join("target/release/libpi_ide.so").to_string_lossy()),
        "the library came from elsewhere"
    );
    let mut p = nvim.peer();
    assert!(p
        .call_tool("getDiagnostics", json!({}))
        .unwrap()
        .get("result")
        .is_some());

    // build.lua (what lazy.nvim runs without a `build` key) succeeds quietly when built...
    let ok = nvim.lua_with(
        "local ok, e = pcall(dofile, ...) return ok and 'ok' or e",
        vec![dir.join("build.lua").to_string_lossy().to_string().into()],
    );
    assert_eq!(ok, json!("ok"));
    // ...names the missing toolchain without one...
    let err = nvim.lua_with(
        "local path = vim.env.PATH vim.env.PATH = '/nonexistent' local ok, e = pcall(dofile, ...) vim.env.PATH = path return e",
        vec![dir.join("build.lua").to_string_lossy().to_string().into()],
    );
    assert!(
        err.as_str().unwrap().contains("cargo was not found"),
        "{err}"
    );
    assert!(!err.as_str().unwrap().contains("stack traceback"), "{err}");

    // :PiIde build while the library is loaded: it is rebuilt beside it, never over it in place
    // (that would crash Neovim), and the user is told to restart.
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, format!("{text}\n// touched by a test\n")).unwrap();
    nvim.command("PiIde build").unwrap();
    nvim.wait_for("require('pi_ide_test').has_note('built') or require('pi_ide_test').has_note('failed')", 300 * SECOND);
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("Restart Neovim"), "{notes}");
    assert_eq!(nvim.lua("return 1 + 1"), json!(2), "Neovim died");
    assert!(
        p.call_tool("getDiagnostics", json!({}))
            .unwrap()
            .get("result")
            .is_some(),
        "the loaded library stopped working"
    );

    // A broken build reports the compiler's words.
    std::fs::write(&lib, format!("{text}\nthis is not rust\n")).unwrap();
    let err = nvim.lua_with(
        "local ok, e = pcall(dofile, ...) return e",
        vec![dir.join("build.lua").to_string_lossy().to_string().into()],
    );
    let err = err.as_str().unwrap();
    assert!(
        err.contains("cargo build --release` failed") && err.contains("error"),
        "{err}"
    );
    drop(nvim);
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[test]
fn loaded_after_startup_as_lazy_loading_does() {
    // Not on the runtimepath at startup; added later, as lazy.nvim does on an event or command.
    let nvim = Nvim::start_with(Options {
        before: Some(format!("vim.opt.rtp:remove('{}')", plugin_root().display())),
        ..Default::default()
    });
    assert_eq!(nvim.lua("return vim.fn.exists(':PiIde')"), json!(0));
    assert!(lock::read_all(&nvim.lock_dir).is_empty());
    nvim.lua_with("vim.opt.rtp:prepend(...) vim.cmd('runtime! plugin/pi-ide.lua') require('pi-ide').setup({})", vec![plugin_root().to_string_lossy().to_string().into()]);
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    assert_eq!(nvim.lua("return vim.fn.exists(':PiIde')"), json!(2));
    let mut p = nvim.peer();
    assert!(p
        .request("ping", json!({}))
        .unwrap()
        .get("result")
        .is_some());
}

#[test]
fn checkhealth_reports_what_matters() {
    let nvim = Nvim::start();
    edit_file(&nvim, "h.lua", &["local x = 1"]);
    nvim.lua("vim.keymap.set('i', '<Tab>', 'TAB', { buffer = true })");
    let _p = nvim.peer();
    nvim.wait_for("#require('pi-ide').info().clients == 1", PATIENCE);
    let text = health(&nvim);
    for want in [
        "OK Neovim",
        "OK native library",
        "OK server on 127.0.0.1",
        "token matches",
        "writable by you alone",
        "client #",
        "pi-ide 0.1.0",
        "treesitter parser for lua",
        "<Tab> (accept) in Insert mode is mapped by something else (buffer-local)",
        "Claude Code compatibility off",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // A lockfile that went wrong is an error with the fix.
    let l = nvim.lockfile();
    std::fs::set_permissions(&l.path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let text = health(&nvim);
    assert!(text.contains("mode is 644, not 600"), "{text}");
    nvim.command("PiIde stop").unwrap();
    assert!(health(&nvim).contains("the server is not running"));
}

#[test]
fn statusline_text_follows_the_state() {
    let nvim = Nvim::start();
    let status = || {
        nvim.lua("return require('pi-ide').status()")
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(status(), "π no agent");
    // Written before an agent connects: the workspace as it was, no change of the agent's.
    let path = nvim.cwd.join("s.txt");
    std::fs::write(&path, "a\n").unwrap();
    let mut p = nvim.peer();
    nvim.wait_for("require('pi-ide').status() == 'π pi-ide'", PATIENCE);
    watching(&nvim);
    let path = path.to_string_lossy().to_string();
    p.send_json(&json!({"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "b\n", "tab_name": "t"}}})).unwrap();
    nvim.wait_for(
        "require('pi-ide').status() == 'π pi-ide · 1 to review'",
        PATIENCE,
    );
    // What the status promises can be acted on at once: the review is there to reject.
    nvim.command("PiIde reject").unwrap();
    assert_eq!(
        texts(&p.wait_response(&json!("d")).unwrap()),
        vec!["DIFF_REJECTED".to_string(), "t".to_string()]
    );
    nvim.wait_for("require('pi-ide').status() == 'π pi-ide'", PATIENCE);
    // A review that arrives while the user types waits, and says so, until they leave Insert.
    nvim.record_notify();
    type_keys(&nvim, "i");
    p.send_json(&json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": "c\n", "tab_name": "w"}}})).unwrap();
    nvim.wait_for("require('pi-ide').status() == 'π pi-ide · 1 waiting'", PATIENCE);
    assert!(
        nvim.notes().iter().any(|n| n.contains("waits until you leave Insert mode")),
        "{:?}",
        nvim.notes()
    );
    // Opened without the focus (they were typing): the status says how to go to it.
    type_keys(&nvim, "<Esc>");
    nvim.wait_for(
        "require('pi-ide').status() == 'π pi-ide · 1 to review (:PiIde review)'",
        PATIENCE,
    );
    type_keys(&nvim, ":PiIde review<CR>");
    nvim.wait_for("require('pi-ide').status() == 'π pi-ide · 1 to review'", PATIENCE);
    nvim.command("PiIde reject").unwrap();
    assert_eq!(texts(&p.wait_response(&json!("w")).unwrap())[0], "DIFF_REJECTED");
    nvim.wait_for("require('pi-ide').status() == 'π pi-ide'", PATIENCE);
    // (t.txt, written by the test while an agent is connected, is a pending change: said after.)
    edit_file(&nvim, "t.txt", &[""]);
    type_keys(&nvim, "ix");
    p.wait_request("getSuggestions", PATIENCE).unwrap();
    assert!(status().starts_with("π pi-ide · …"), "{}", status());
    type_keys(&nvim, "<Esc>");
    nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    type_keys(&nvim, ":PiIde changes keep<CR>");
    nvim.command("PiIde stop").unwrap();
    assert_eq!(status(), "");
    // Cheap enough for every redraw.
    let us = nvim.lua("require('pi-ide').start() local t = vim.uv.hrtime() for _ = 1, 1000 do require('pi-ide').status() end return (vim.uv.hrtime() - t) / 1000 / 1000");
    eprintln!("status(): {us} µs per call");
}

#[test]
fn a_waiting_message_fits_on_one_line_at_80_columns() {
    // Wider than the command line, it would stop the user at "Press ENTER" and eat a key.
    let nvim = Nvim::start();
    nvim.record_notify();
    nvim.lua("vim.o.columns = 80");
    type_keys(&nvim, "i");
    nvim.lua("require('pi-ide.core.typing').say_waiting('the review of ' .. string.rep('deep/', 30) .. 'hello.txt')");
    type_keys(&nvim, "<Esc>");
    let notes = nvim.notes();
    let note = notes.last().cloned().unwrap_or_default();
    let room = nvim.lua("return vim.v.echospace").as_u64().unwrap();
    let width = nvim.lua_with("return vim.fn.strdisplaywidth(...)", vec![note.clone().into()]);
    assert!(width.as_u64().unwrap() <= room, "{width} columns > {room}: {note}");
    assert!(note.ends_with("/hello.txt waits until you leave Insert mode"), "{note}");
    assert!(note.starts_with("pi-ide.nvim: …"), "{note}");
}

#[test]
fn every_event_fires() {
    let nvim = Nvim::start_with(Options {
        before: Some(
            "require('pi_ide_test').record_events('PiIdeStarted', 'PiIdeStopped', 'PiIdeClientConnected', 'PiIdeClientDisconnected')"
                .into(),
        ),
        ..Default::default()
    });
    let p = nvim.peer();
    nvim.wait_for("#require('pi_ide_test').recorded() >= 2", PATIENCE);
    p.close();
    nvim.wait_for("#require('pi_ide_test').recorded() >= 3", PATIENCE);
    nvim.command("PiIde stop").unwrap();
    let ev = nvim.t("recorded", json!([]));
    let names: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "PiIdeStarted",
            "PiIdeClientConnected",
            "PiIdeClientDisconnected",
            "PiIdeStopped"
        ]
    );
    assert!(ev[0][1]["port"].as_u64().is_some() && ev[0][1]["lockfile"].as_str().is_some());
    assert_eq!(ev[1][1]["name"], "pi-ide");
    assert_eq!(ev[2][1]["name"], "pi-ide");
}

#[test]
fn log_opens_the_log_file() {
    let nvim = Nvim::start();
    nvim.command("PiIde log").unwrap();
    let name = nvim.lua("return vim.api.nvim_buf_get_name(0)");
    assert!(name.as_str().unwrap().ends_with("pi-ide.log"), "{name}");
    assert!(nvim
        .lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
        .as_str()
        .unwrap()
        .contains("listening on 127.0.0.1"));
}
