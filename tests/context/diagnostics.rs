//! getDiagnostics end to end: a real diagnostic set in a real buffer, read by a real client.

use crate::harness::*;

fn setup_buffer(nvim: &Nvim, name: &str, lines: &[&str]) -> String {
    let path = nvim.cwd.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    nvim.command(&format!("edit {}", path.display())).unwrap();
    path.to_string_lossy().to_string()
}

/// A Neovim whose Lua always gets to answer getDiagnostics itself: on a loaded machine the
/// main loop can take longer than the default 500 ms, and then the core answers from the last
/// known diagnostics instead (that fallback has a test of its own below).
fn patient_nvim() -> Nvim {
    Nvim::start_with(pi_ide_testkit::nvim::Options {
        before: Some("require('pi-ide').setup({ diagnostics_timeout_ms = 600000 })".into()),
        ..Default::default()
    })
}

fn diagnostics(resp: &Value) -> Value {
    let t = texts(resp);
    assert_eq!(t.len(), 1, "{resp}");
    serde_json::from_str(&t[0]).unwrap()
}

#[test]
fn reports_every_buffer_keyed_by_uri_in_the_protocol_shape() {
    let nvim = patient_nvim();
    let path = setup_buffer(
        &nvim,
        "main file.rs",
        &["fn main() {", "  let x = \"héllo\"; y", "}"],
    );
    nvim.t("context.four_diagnostics", json!([]));
    let mut p = nvim.peer();
    let d = diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap());
    let uri = format!("file://{}", path.replace(' ', "%20"));
    let list = d[&uri]
        .as_array()
        .unwrap_or_else(|| panic!("no entry for {uri} in {d}"));
    assert_eq!(list.len(), 4);
    let err = list.iter().find(|x| x["severity"] == "Error").unwrap();
    assert_eq!(err["message"], "cannot find value `y`");
    assert_eq!(err["source"], "rustc");
    assert_eq!(err["code"], "E0425");
    // Byte column 19 on a line with one two-byte character is UTF-16 character 18.
    assert_eq!(
        err["range"],
        json!({"start": {"line": 1, "character": 18}, "end": {"line": 1, "character": 19}})
    );
    let warn = list.iter().find(|x| x["severity"] == "Warning").unwrap();
    assert_eq!(warn["range"]["start"], json!({"line": 0, "character": 3}));
    assert!(list.iter().any(|x| x["severity"] == "Hint"));
    assert!(list
        .iter()
        .any(|x| x["severity"] == "Information" && x["code"] == 12));
}

#[test]
fn uri_argument_selects_one_file_and_an_unopened_file_is_empty() {
    let nvim = patient_nvim();
    let a = setup_buffer(&nvim, "a.lua", &["x = 1"]);
    let b = setup_buffer(&nvim, "b.lua", &["y = 2"]);
    nvim.lua(
        r#"
        local ns = vim.api.nvim_create_namespace("test")
        for _, buf in ipairs(vim.api.nvim_list_bufs()) do
          vim.diagnostic.set(ns, buf, {{ lnum = 0, col = 0, severity = 1, message = vim.fs.basename(vim.api.nvim_buf_get_name(buf)) }})
        end
        "#,
    );
    let mut p = nvim.peer();
    let all = diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap());
    assert_eq!(all.as_object().unwrap().len(), 2, "{all}");
    let only_b = diagnostics(
        &p.call_tool("getDiagnostics", json!({"uri": format!("file://{b}")}))
            .unwrap(),
    );
    assert_eq!(only_b.as_object().unwrap().len(), 1);
    assert_eq!(only_b[format!("file://{b}")][0]["message"], "b.lua");
    // A plain path works as well.
    let only_a = diagnostics(
        &p.call_tool("getDiagnostics", json!({"uri": a.clone()}))
            .unwrap(),
    );
    assert_eq!(only_a[format!("file://{a}")][0]["message"], "a.lua");
    // Not open: an empty object, not an error.
    let none = p
        .call_tool(
            "getDiagnostics",
            json!({"uri": "file:///nowhere/at/all.rs"}),
        )
        .unwrap();
    assert!(none.get("error").is_none(), "{none}");
    assert_eq!(diagnostics(&none), json!({}));
}

#[test]
fn no_diagnostics_is_an_empty_object() {
    let nvim = patient_nvim();
    let mut p = nvim.peer();
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert_eq!(texts(&r), vec!["{}".to_string()]);
}

#[test]
fn diagnostics_of_non_file_buffers_are_left_out() {
    let nvim = patient_nvim();
    nvim.lua(
        r#"
        local buf = vim.api.nvim_create_buf(true, true)
        vim.diagnostic.set(vim.api.nvim_create_namespace("t"), buf, {{ lnum = 0, col = 0, message = "scratch" }})
        "#,
    );
    let mut p = nvim.peer();
    assert_eq!(
        texts(&p.call_tool("getDiagnostics", json!({})).unwrap()),
        vec!["{}".to_string()]
    );
}

#[test]
fn a_failing_handler_answers_an_error_instead_of_stalling_the_agent() {
    let nvim = patient_nvim();
    // The core answers from its snapshot unless that is behind a change: make it behind (a
    // change announced, never converted), so that the call goes to Lua's handler.
    nvim.lua("require('pi-ide.features.tools.diagnostics').getDiagnostics = function() error('boom') end \
              require('pi-ide.core.native').get().diagnostics_touch()");
    let mut p = nvim.peer();
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert_eq!(error_code(&r), -32603);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("boom"),
        "{r}"
    );
    // An answer that cannot be JSON is an error too, not silence.
    nvim.lua("require('pi-ide.features.tools.diagnostics').getDiagnostics = function() return { f = function() end } end");
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert_eq!(error_code(&r), -32603);
}

#[test]
fn a_blocked_main_loop_does_not_stall_the_agent() {
    // A hit-enter prompt, a blocking input() or a long :!command keep scheduled work from
    // running; the agent waits on getDiagnostics without a timeout, so Rust answers from the
    // last known diagnostics after a short deadline.
    let nvim = Nvim::start();
    let path = setup_buffer(&nvim, "a.rs", &["x"]);
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ lnum = 0, col = 0, severity = 1, message = 'known' }})");
    let mut p = nvim.peer();
    let uri = format!("file://{path}");
    // Until Lua has answered once, the fallback has nothing to give but `{}` (a loaded machine
    // may take longer than the deadline): ask until Lua's answer is in.
    let deadline = std::time::Instant::now() + PATIENCE;
    while diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap())[&uri][0]["message"]
        != "known"
    {
        assert!(std::time::Instant::now() < deadline, "Lua never answered");
    }
    let held = hold_main_loop(&nvim);
    let r = p.call_tool("getDiagnostics", json!({})).unwrap();
    assert!(held.still_held(), "the answer waited for the main loop to be free");
    assert_eq!(diagnostics(&r)[&uri][0]["message"], "known");
    // Narrowed to a uri, from the same last answer.
    let r = p
        .call_tool("getDiagnostics", json!({"uri": uri.clone()}))
        .unwrap();
    assert_eq!(diagnostics(&r).as_object().unwrap().len(), 1);
    assert!(held.still_held());
    held.release();
    // Once the loop is free, answers come from Neovim again (and the late ones were dropped).
    nvim.lua("vim.diagnostic.reset()");
    let deadline = std::time::Instant::now() + PATIENCE;
    while diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap()) != json!({}) {
        assert!(std::time::Instant::now() < deadline, "Lua never answered again");
    }
}

#[test]
fn getdiagnostics_never_wakes_the_main_loop_and_is_fresh_at_once() {
    let nvim = Nvim::start();
    let path = setup_buffer(&nvim, "w.rs", &["x", "y"]);
    let uri = format!("file://{path}");
    let mut p = nvim.peer();
    nvim.wait_for("require('pi-ide.core.server').agent_name() ~= nil", PATIENCE);
    // Fresh: a diagnostic set in Neovim is in the very next answer.
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ lnum = 1, col = 0, severity = 1, message = 'now' }})");
    let d = diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap());
    assert_eq!(d[&uri][0]["message"], "now", "{d}");
    nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ lnum = 0, col = 0, severity = 2, message = 'changed' }})");
    let d = diagnostics(&p.call_tool("getDiagnostics", json!({"uri": uri.clone()})).unwrap());
    assert_eq!(d[&uri][0]["message"], "changed", "{d}");
    assert_eq!(d[&uri][0]["severity"], "Warning");
    // Once the snapshot has caught up, 1,000 calls wake Neovim's main loop 0 times.
    wait_until("the snapshot caught up", PATIENCE, || {
        nvim.lua("local n = require('pi-ide.core.native').get() return n.diagnostics_generation()") != json!(0)
            && nvim.lua("return require('pi-ide').info().wakes") == nvim.lua("return require('pi-ide').info().wakes")
    });
    // (Wait until a call is answered without Lua: no wake between two reads.)
    wait_until("answered by the core", PATIENCE, || {
        let before = nvim.lua("return require('pi-ide').info().wakes");
        p.call_tool("getDiagnostics", json!({})).unwrap();
        nvim.lua("return require('pi-ide').info().wakes") == before
    });
    let before = nvim.lua("return require('pi-ide').info().wakes").as_u64().unwrap();
    for i in 0..1000 {
        let args = if i % 2 == 0 { json!({}) } else { json!({"uri": uri.clone()}) };
        let d = diagnostics(&p.call_tool("getDiagnostics", args).unwrap());
        assert_eq!(d[&uri][0]["message"], "changed");
    }
    let after = nvim.lua("return require('pi-ide').info().wakes").as_u64().unwrap();
    eprintln!("1,000 getDiagnostics calls: {} main-loop wake-ups", after - before);
    assert_eq!(after, before, "getDiagnostics woke the main loop");
    // Wiped and renamed buffers leave the snapshot.
    nvim.command("file renamed.rs").unwrap();
    let d = diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap());
    assert!(d.get(&uri).is_none(), "{d}");
    assert!(d.as_object().unwrap().keys().any(|k| k.ends_with("/renamed.rs")), "{d}");
    nvim.command("bwipeout!").unwrap();
    assert_eq!(diagnostics(&p.call_tool("getDiagnostics", json!({})).unwrap()), json!({}));
}
