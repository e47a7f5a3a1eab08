//! The chat functions of the core (src/chat/, src/ffi/chat.rs) as Lua calls them in a real
//! Neovim, with `sh -c` scripts playing Pi: ops drained on the uv async wake, commands sent,
//! stop, and a write to a dead Pi that must not take Neovim with it. And once with the real Pi
//! in RPC mode, offline against the mock model of tests/support/openai_mock.rs.


use crate::harness::*;
use crate::pi_cli;
use crate::openai_mock::{OpenAiMock, Reply};

/// Starts a chat running `script`; every wake drains into `_G.chat_ops`, and `find(kind)` is
/// the first op of a kind.
fn start_chat(nvim: &Nvim, script: &str) {
    start_chat_with(nvim, json!({ "cmd": ["sh", "-c", script], "env": { "PI_CHAT_TEST": "yes" } }));
}

/// [`start_chat`] with chat_start's options as they are.
fn start_chat_with(nvim: &Nvim, opts: Value) {
    nvim.t("chat.start_core_chat", json!([opts]));
}

fn chat(nvim: &Nvim, call: &str) -> Value {
    nvim.lua(&format!("local n = require('pi-ide.core.native').get() return {call}"))
}

fn stop_chat(nvim: &Nvim, grace_ms: u64) -> Value {
    let exited = chat(nvim, &format!("n.chat_stop(_G.chat_id, {grace_ms})"));
    nvim.lua("_G.chat_async:close()");
    exited
}

#[test]
fn a_chat_streams_ops_into_lua() {
    let nvim = Nvim::start();
    let delta = |t: &str| format!(r#"printf '%s\n' '{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"{t}"}}}}'"#);
    let script = format!(
        r#"{}; {}; printf '%s\n' '{{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","isError":true,"result":{{"content":[{{"type":"text","text":"a\nb"}}]}}}}'
           printf '{{"type":"env","v":"%s"}}\n' "$PI_CHAT_TEST"
           while read -r l; do printf '%s\n' "$l"; done"#,
        delta("Hel"),
        delta("lo")
    );
    start_chat(&nvim, &script);
    nvim.wait_for("find('event')", PATIENCE);
    // The deltas may come in one drain or two: Lua appends either way.
    assert_eq!(
        nvim.lua("local text = '' for _, o in ipairs(_G.chat_ops) do if o.kind == 'text' then text = text .. o.text end end \
                  local t, e = find('tool_end'), find('event') return { text, find('text').index, t.is_error, t.lines, t.more, e.type, e.event.v }"),
        json!(["Hello", 0, true, ["a", "b"], 0, "env", "yes"])
    );
    // A table goes out as one JSON line (echoed back here as Pi's response).
    let sent = chat(&nvim, "n.chat_send(_G.chat_id, { type = 'response', id = 'r1', command = 'get_state', success = true, data = { n = 1 } })");
    assert_eq!(sent, json!(true));
    nvim.wait_for("find('response')", PATIENCE);
    assert_eq!(
        nvim.lua("local r = find('response') return { r.kind, r.id, r.command, r.success, r.data.n, r.error == nil }"),
        json!(["response", "r1", "get_state", true, 1, true])
    );
    let stats = chat(&nvim, "n.chat_stats(_G.chat_id)");
    assert_eq!(stats["text_deltas"], json!(2));
    assert!(stats["wakes"].as_u64().unwrap() >= 1, "{stats}");
    assert!(chat(&nvim, "n.chat_pid(_G.chat_id)").is_u64());
    assert_eq!(stop_chat(&nvim, 5000), json!(true), "exits when its stdin closes");
    assert_eq!(chat(&nvim, "n.chat_stop(_G.chat_id, 0)"), json!(false), "already stopped");
    assert_eq!(chat(&nvim, "n.chat_pid(_G.chat_id)"), Value::Null);
    assert_eq!(chat(&nvim, "n.chat_send(_G.chat_id, '{}')"), json!(false));
}

#[test]
fn writing_to_a_dead_pi_leaves_neovim_standing() {
    let nvim = Nvim::start();
    // Closes its stdin but lives on: every write meets a pipe without a reader.
    start_chat(&nvim, r#"exec 0<&-; printf '{"type":"deaf"}\n'; sleep 30"#);
    nvim.wait_for("#_G.chat_ops >= 1", PATIENCE);
    nvim.lua(
        "local n = require('pi-ide.core.native').get()
         for _ = 1, 200 do
           if not n.chat_send(_G.chat_id, { type = 'get_state' }) then break end
           vim.uv.sleep(5)
         end",
    );
    wait_until("send to notice the closed pipe", PATIENCE, || {
        chat(&nvim, "n.chat_send(_G.chat_id, { type = 'get_state' })") == json!(false)
    });
    assert_eq!(stop_chat(&nvim, 0), json!(false));

    // Killed: its exit op arrives, and a send after it is refused.
    start_chat(&nvim, "while read -r l; do :; done");
    nvim.lua("vim.uv.kill(require('pi-ide.core.native').get().chat_pid(_G.chat_id), 'sigkill')");
    nvim.wait_for("#_G.chat_ops >= 1", PATIENCE);
    assert_eq!(nvim.lua("local e = _G.chat_ops[1] return { e.kind, e.signal, e.code == nil }"), json!(["exit", 9, true]));
    assert_eq!(chat(&nvim, "n.chat_send(_G.chat_id, { type = 'get_state' })"), json!(false));
    assert_eq!(stop_chat(&nvim, 0), json!(true));
    assert_eq!(nvim.lua("return 1 + 1"), json!(2), "Neovim is alive");
}

#[test]
fn a_pi_that_cannot_start_is_one_sentence() {
    let nvim = Nvim::start();
    let err = nvim.lua(
        "local a = vim.uv.new_async(function() end)
         local ok, e = pcall(require('pi-ide.core.native').load().chat_start, { cmd = { '/nonexistent/pi' } }, a)
         a:close()
         return { ok, tostring(e) }",
    );
    assert_eq!(err[0], json!(false));
    let text = err[1].as_str().unwrap();
    assert!(text.contains("cannot start pi (`/nonexistent/pi`): No such file or directory"), "{text}");
    // A chat that does not exist drains to an empty list and sends nowhere.
    assert_eq!(chat(&nvim, "#n.chat_drain(12345)"), json!(0));
    assert_eq!(chat(&nvim, "n.chat_send(12345, '{}')"), json!(false));
}

#[test]
fn the_real_pi_streams_a_turn_with_a_tool() {
    let mock = OpenAiMock::start();
    mock.on_user("list them", Reply::tool("bash", json!({"command": "printf 'one\\ntwo\\n'"})));
    mock.after_tool("bash", Reply::text("Both are there."));
    let root = pi_ide_testkit::nvim::temp_dir("chat-real-pi");
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let env: serde_json::Map<String, Value> =
        pi_cli::pi_env(&root.join("pi"), &mock.base_url()).into_iter().map(|(k, v)| (k, v.into())).collect();
    let cmd = [pi_cli::node_binary(), pi_cli::pi_cli_js()]
        .map(|p| p.to_string_lossy().into_owned());
    let nvim = Nvim::start();
    start_chat_with(&nvim, json!({
        "cmd": [cmd[0], cmd[1], "--mode", "rpc", "--no-session"],
        "cwd": work, "env": env,
    }));
    let sent = chat(&nvim, "n.chat_send(_G.chat_id, { id = 'p1', type = 'prompt', message = 'list them' })");
    assert_eq!(sent, json!(true));
    let settled = "(function() for _, o in ipairs(_G.chat_ops) do \
                   if o.kind == 'event' and o.type == 'agent_settled' then return true end end end)()";
    wait_until("agent_settled", pi_cli::PI_PATIENCE, || nvim.lua(&format!("return {settled} or find('exit')")) != Value::Null);
    let seen = nvim.lua(
        "local text, r, s, e = '', find('response'), find('tool_start'), find('tool_end')
         for _, o in ipairs(_G.chat_ops) do if o.kind == 'text' then text = text .. o.text end end
         return { r.id, r.command, r.success, s.name, s.args.command, e.is_error, e.lines, text }",
    );
    assert_eq!(
        seen,
        json!(["p1", "prompt", true, "bash", "printf 'one\\ntwo\\n'", false, ["one", "two"], "Both are there."])
    );
    let stats = chat(&nvim, "n.chat_stats(_G.chat_id)");
    assert_eq!(stats["malformed"], json!(0), "{stats}");
    assert_eq!(stop_chat(&nvim, 10_000), json!(true), "Pi exits when its stdin closes");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn pi_ends_when_neovim_is_killed() {
    let nvim = Nvim::start();
    start_chat(&nvim, "while :; do sleep 0.05; done");
    let pid = chat(&nvim, "n.chat_pid(_G.chat_id)").as_i64().unwrap() as i32;
    // SAFETY: kill(2) of processes this test started (0: does it exist).
    let alive = |pid: i32| unsafe { libc::kill(pid, 0) } == 0 && !zombie(pid);
    assert!(alive(pid));
    unsafe { libc::kill(nvim.pid() as i32, libc::SIGKILL) };
    wait_until("Pi to get its SIGTERM", PATIENCE, || !alive(pid));
}

/// Reaped by nobody yet (this container's init may not reap orphans).
fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
}
