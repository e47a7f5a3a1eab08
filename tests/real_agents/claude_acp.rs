//! `:PiIde chat claude` with the real Claude Code, offline: Neovim runs this plugin, the chat
//! starts the ACP adapter `@agentclientprotocol/claude-agent-acp` (the version
//! scripts/ensure-agents.sh pins; it runs the native Claude Code its SDK brings) on Node 22, and
//! a loopback mock of Anthropic's Messages API plays the model (tests/support/anthropic_mock.rs).
//! The test types into Neovim as a user would (`:w`, `:q`, `:PiIde abort`) and reads three
//! sides: the chat buffer, the file on disk, and what the model is told next (the mock's record
//! of each request: a tool's result reaches the model in the request after the call).
//!
//! The adapter is started by Neovim, so its environment is the chat agent's `env` (added to
//! Neovim's): a scratch HOME and config folder, the mock as the API and as every proxy (what
//! tries to leave the machine is refused and recorded, and each test asserts nothing did), and
//! `IS_SANDBOX=1` when running as root (else Claude Code exits before session/new answers).
//! The adapter starts in mode `auto` (edits without asking); the chat puts it in `default`, in
//! which every Edit/Write comes as a `session/request_permission` that carries a `diff`.


use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::anthropic_mock::{result_of, system_texts, turn_of, Mock, Reply, Turn};
use crate::harness::*;
use pi_ide_testkit::nvim::temp_dir;

/// Claude Code starts and answers in a few seconds; this only costs time when something is
/// broken (two shared cores, other suites running beside).
const WAIT: Duration = Duration::from_secs(90);

/// The chat agent: the built-in `claude` (lua/pi-ide/agents/claude.lua: its `acp` fields, e.g.
/// `mcp = "stdio"`), with the test's command and environment over it.
const AGENT: &str = "claude";

const HELLO: &str = "Say hello";
const HELLO_REPLY: &str = "Hello from the mock model, streamed.";
const CHANGE: &str = "Change two to 2 in a.txt";
const CREATE: &str = "Create new.txt";
const REWRITE: &str = "Change lines 1, 4 and 7 of p.txt";
const NEXT: &str = "What next?";
const DIAGNOSE: &str = "What does the editor report?";
/// What Claude Code puts after the result of a ToolSearch that loaded a tool (a text block, so
/// the mock sees it as the latest prompt).
const TOOL_LOADED: &str = "Tool loaded.";
const AFTER_TOOL: &str = "Done with the tool.";
const DIAGNOSTIC: &str = "pi-ide-test: an unused variable";

/// The adapter's command and the folder of the Node 22 that runs it (its `#!/usr/bin/env node`
/// must not find an older Node first). Missing is a failure, never a skip.
fn adapter() -> (PathBuf, PathBuf) {
    let bin = crate::copilot_cli::agents_bin();
    let acp = bin.join("claude-agent-acp");
    let node = bin.join("../node/bin");
    assert!(
        acp.exists() && node.join("node").exists(),
        "claude-agent-acp or Node 22 is not installed under {} (scripts/ensure-agents.sh installs \
         @agentclientprotocol/claude-agent-acp@0.101.0 and node@22 there; or point PI_IDE_AGENTS at a \
         .bin folder holding both)",
        bin.display()
    );
    (acp, node.canonicalize().unwrap())
}

/// Claude Code's folders (HOME, CLAUDE_CONFIG_DIR, TMPDIR): removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let s = Scratch(temp_dir("claude-acp"));
        for d in ["home", "config", "tmp"] {
            std::fs::create_dir_all(s.0.join(d)).unwrap();
        }
        s
    }
    fn path(&self, sub: &str) -> String {
        self.0.join(sub).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The adapter's environment, added to Neovim's. What would reach the internet is switched off;
/// the proxies point at the mock, which refuses and records whatever tries anyway. Variables of
/// the developer's that would send Claude Code elsewhere are blanked (empty is unset to it).
fn agent_env(s: &Scratch, mock: &Mock, node: &Path) -> Vec<(String, String)> {
    let path = format!("{}:{}", node.display(), std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
    let mut env: Vec<(&str, String)> = vec![
        ("PATH", path),
        ("HOME", s.path("home")),
        ("CLAUDE_CONFIG_DIR", s.path("config")),
        ("TMPDIR", s.path("tmp")),
        ("ANTHROPIC_BASE_URL", mock.url()),
        ("ANTHROPIC_API_KEY", "dummy".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL", "1".into()),
        // Its debug log (under the config folder), for the failure report.
        ("DEBUG_CLAUDE_AGENT_SDK", "1".into()),
        ("NO_PROXY", "127.0.0.1,localhost".into()),
        ("no_proxy", "127.0.0.1,localhost".into()),
    ];
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        env.push((var, mock.url()));
    }
    for var in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"] {
        env.push((var, String::new()));
    }
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // As root Claude Code refuses to start unless it is told it runs in a sandbox.
        env.push(("IS_SANDBOX", "1".into()));
    }
    env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The model: a tool call for each prompt that wants one, a short text for the rest.
fn script(cwd: PathBuf) -> impl Fn(&Turn) -> Reply + Send + Sync + 'static {
    move |turn| match turn {
        Turn::Prompt(p) if p == HELLO => Reply::Text(HELLO_REPLY.into()),
        Turn::Prompt(p) if p == CHANGE => Reply::Tool {
            name: "Edit".into(),
            input: json!({"file_path": cwd.join("a.txt"), "old_string": "two", "new_string": "2"}),
        },
        Turn::Prompt(p) if p == REWRITE => Reply::Tool {
            name: "Edit".into(),
            input: json!({"file_path": cwd.join("p.txt"), "old_string": "a\nb\nc\nd\ne\nf\ng", "new_string": "A\nb\nc\nD\ne\nf\nG"}),
        },
        Turn::Prompt(p) if p == CREATE => Reply::Tool {
            name: "Write".into(),
            input: json!({"file_path": cwd.join("new.txt"), "content": "created\n"}),
        },
        // Claude Code defers MCP tools: the model loads one with ToolSearch, then calls it.
        Turn::Prompt(p) if p == DIAGNOSE => Reply::Tool {
            name: "ToolSearch".into(),
            input: json!({"query": "select:mcp__nvim__getDiagnostics", "max_results": 1}),
        },
        Turn::Prompt(p) if p == TOOL_LOADED => Reply::Tool { name: "mcp__nvim__getDiagnostics".into(), input: json!({}) },
        Turn::ToolResult { .. } => Reply::Text(AFTER_TOOL.into()),
        _ => Reply::Text("Understood.".into()),
    }
}

/// Everything one test needs; dropped in field order: Neovim (the agent stopped first, in
/// Drop), the mock, the folders.
struct Rig {
    nvim: Nvim,
    mock: Mock,
    scratch: Scratch,
    started: Instant,
}

/// Neovim with the chat agent `claude` set to the pinned adapter against a fresh mock, and the
/// chat open with its session (the adapter has answered session/new).
fn start() -> Rig {
    let started = Instant::now();
    let (acp, node) = adapter();
    let nvim = Nvim::start();
    nvim.command("set columns=200").unwrap();
    let mock = Mock::start(script(nvim.cwd.clone()));
    let scratch = Scratch::new();
    let env: Vec<String> = agent_env(&scratch, &mock, &node).into_iter().map(|(k, v)| format!("[{k:?}] = {v:?}")).collect();
    nvim.lua(&format!(
        "require('pi-ide').setup({{ chat = {{ agents = {{ {AGENT} = {{ cmd = {{ {:?} }}, env = {{ {} }} }} }} }} }})",
        acp.display().to_string(),
        env.join(", ")
    ));
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let rig = Rig { nvim, mock, scratch, started };
    rig.nvim.command(&format!("PiIde chat {AGENT}")).unwrap();
    rig.wait("the adapter's session", || rig.lua_true(&format!("{}.session ~= nil", chat())));
    rig.nvim.command("stopinsert").unwrap();
    eprintln!("session open after {:?}", rig.started.elapsed());
    rig
}

/// The chat's Lua object.
fn chat() -> String {
    format!("require('pi-ide.features.chat.acp').get('{AGENT}')")
}

impl Rig {
    fn lua_true(&self, expr: &str) -> bool {
        self.nvim.lua(&format!("return ({expr}) and true or false")) == json!(true)
    }

    /// Polls `cond` until it holds; on time-out fails with the state of every side.
    fn wait(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !cond() {
            if Instant::now() > deadline {
                panic!("timed out waiting for: {what}\n{}", self.report());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&self, text: &str) {
        self.nvim.lua_with(&format!("{}:send(...)", chat()), vec![text.into()]);
    }

    fn text(&self) -> String {
        let v = self.nvim.lua(&format!("return require('pi-ide.features.chat.view').of('{AGENT}').text()"));
        v.as_str().unwrap_or_default().to_owned()
    }

    fn wait_text(&self, part: &str) {
        self.wait(&format!("{part:?} in the chat"), || self.text().contains(part));
    }

    /// The turn is over (the adapter answered session/prompt).
    fn idle(&self) {
        self.wait("the turn to end", || self.lua_true(&format!("{}.state == 'idle'", chat())));
    }

    /// One review open, its two panes in front.
    fn review_on_screen(&self) {
        self.wait("the review on screen", || {
            self.lua_true("#require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil")
        });
    }

    fn no_review(&self) {
        self.wait("no review open", || self.lua_true("#require('pi-ide.features.review').list() == 0"));
    }

    /// The review's panes in the current tab: `[modifiable, "line|line|…"]` each.
    fn panes(&self) -> Vec<Value> {
        let v = self.nvim.lua(
            "local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do local b = vim.api.nvim_win_get_buf(w) \
             if vim.b[b].pi_ide_review then table.insert(out, { vim.bo[b].modifiable, table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '|') }) end end return out",
        );
        v.as_array().cloned().unwrap_or_default()
    }

    /// The latest conversation request whose latest user block is `prompt`.
    fn turn_for(&self, prompt: &str) -> Value {
        let want = Turn::Prompt(prompt.to_owned());
        let mut found = None;
        self.wait(&format!("the model asked about {prompt:?}"), || {
            found = self.mock.turns().into_iter().rev().find(|t| turn_of(t) == want);
            found.is_some()
        });
        found.unwrap()
    }

    /// The result of the model's `name` call, from the first request that carries it.
    fn result_for(&self, name: &str) -> Value {
        let mut found = None;
        self.wait(&format!("the model got the {name} result"), || {
            found = self.mock.turns().iter().find_map(|t| result_of(t, name));
            found.is_some()
        });
        found.unwrap()
    }

    /// Nothing tried to leave the machine; the time the test took, and the chat as it ended
    /// (seen with --no-capture).
    fn finish(&self, test: &str) {
        assert!(self.mock.outside().is_empty(), "Claude Code tried to reach the internet:\n{}", self.mock.summary());
        eprintln!("{test}: {:?}\n--- the chat ---\n{}", self.started.elapsed(), self.text());
    }

    /// The chat, the mock's requests, and the tails of the plugin's and Claude Code's logs.
    fn report(&self) -> String {
        let tail = |p: &Path, n: usize| {
            let t = std::fs::read_to_string(p).unwrap_or_default();
            let lines: Vec<&str> = t.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        };
        // Claude Code's newest debug log, wherever its config folder put it.
        let debug = ["config/debug", "home/.claude/debug"]
            .iter()
            .filter_map(|d| std::fs::read_dir(self.scratch.0.join(d)).ok())
            .flatten()
            .filter_map(Result::ok)
            .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
            .map(|e| tail(&e.path(), 30))
            .unwrap_or_default();
        format!(
            "--- the chat ---\n{}\n--- the mock model's requests ---\n{}--- pi-ide.log ---\n{}\n--- Claude Code's debug log ---\n{debug}",
            self.text(),
            self.mock.summary(),
            tail(&self.nvim.home.join("state/nvim/pi-ide.log"), 30),
        )
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // The chat ends its agent (and with it Claude Code) before Neovim is killed.
        let _ = self.nvim.lua_err(&format!("local c = require('pi-ide.features.chat.acp').all()['{AGENT}'] if c then c:stop() end"));
    }
}

#[test]
fn a_prompt_streams_into_the_chat_and_claude_is_put_in_its_asking_mode() {
    let rig = start();
    // The adapter starts in `auto` (edits without asking): the chat switches it to Manual
    // (`default`) once session/set_mode is answered.
    assert_eq!(rig.nvim.lua(&format!("return {}.info.modes ~= nil", chat())), json!(true));
    rig.wait("mode default", || rig.lua_true(&format!("{}.info.mode == 'default'", chat())));
    let modes = rig.nvim.lua(&format!("return vim.tbl_map(function(m) return m.id end, {}.info.modes)", chat()));
    assert!(modes.as_array().unwrap().contains(&json!("auto")), "the adapter's modes: {modes}");
    rig.send(HELLO);
    rig.wait_text(HELLO_REPLY);
    rig.idle();
    // Still Manual after a turn (nothing the adapter said moved it back).
    assert_eq!(rig.nvim.lua(&format!("return {}.info.mode", chat())), json!("default"));
    let t = rig.text();
    assert!(t.contains(&format!("## ❯ You\n{HELLO}\n")), "{t}");
    assert!(t.find(HELLO).unwrap() < t.find(HELLO_REPLY).unwrap(), "the reply after the prompt: {t}");
    assert!(!t.contains('✗'), "no failure in the chat: {t}");
    let winbar = rig.nvim.lua("return vim.wo[vim.fn.bufwinid(require('pi-ide.features.chat.view').of('claude').buf())].winbar");
    assert!(winbar.as_str().unwrap().contains("mode Manual"), "{winbar}");
    rig.finish("prompt");
}

#[test]
fn an_edit_is_reviewed_whole_and_claude_writes_it_only_after_a_typed_w() {
    let rig = start();
    // Open in a buffer too: once Claude Code has written it, the buffer shows what it wrote.
    let path = edit_file(&rig.nvim, "a.txt", &["one", "two", "three"]);
    rig.send(CHANGE);
    rig.review_on_screen();
    let panes = rig.panes();
    assert_eq!(panes.len(), 2, "both panes are the review's: {panes:?}");
    assert!(
        panes.iter().any(|p| p[1] == "one|2|three" && p[0] == true),
        "the whole file as it will be, editable (Claude Code writes it, then we write the accepted text if it differs): {panes:?}"
    );
    assert!(panes.iter().any(|p| p[1] == "one|two|three"), "the file as it is: {panes:?}");
    // The chat says so (its own event, handled apart from the review's: it may come a moment later).
    rig.wait_text("⚖ review: a.txt");
    // Claude Code waits on the question: the file stays as it is, and the model has no result.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nthree\n", "written before the :w");
    assert!(rig.mock.turns().iter().all(|t| result_of(t, "Edit").is_none()), "the Edit ran before the :w");

    type_accept(&rig.nvim, ":w<CR>");
    rig.wait("Claude Code wrote the accepted change", || std::fs::read_to_string(&path).unwrap() == "one\n2\nthree\n");
    let result = rig.result_for("Edit");
    assert_ne!(result["is_error"], json!(true), "{result}");
    assert!(result.to_string().contains("updated successfully"), "{result}");
    rig.wait_text(AFTER_TOOL);
    rig.idle();
    // The call's block has the name the adapter gives it only after it began.
    assert!(rig.text().contains("⚙ Edit a.txt ✓"), "{}", rig.text());
    // What Claude Code wrote is read back when its call completes (or its turn ends): the accepted text.
    rig.wait_text("wrote a.txt, as you accepted it");
    assert!(!rig.text().contains("wrote other text"), "{}", rig.text());
    rig.no_review();
    rig.wait("the open buffer reloaded", || {
        let lines = rig.nvim.lua_with("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", vec![path.clone().into()]);
        lines == json!(["one", "2", "three"])
    });
    rig.finish("edit + :w");
}

#[test]
fn a_partial_acceptance_lands_as_accepted_and_the_next_prompt_tells_claude() {
    let rig = start();
    let path = file_with(&rig.nvim, "p.txt", "a\nb\nc\nd\ne\nf\ng\n");
    rig.send(REWRITE);
    rig.review_on_screen();
    rig.wait("the hunks counted", || rig.lua_true("(require('pi-ide.features.review').current() or {}).hunks ~= nil"));
    type_accept(&rig.nvim, "4G:PiIde hunk reject<CR>:w<CR>");
    rig.wait("hunks 1 and 3 only", || std::fs::read_to_string(&path).unwrap() == "A\nb\nc\nd\ne\nf\nG\n");
    rig.wait_text("your accepted text was written over it");
    rig.idle();
    rig.send(NEXT);
    let mut said = String::new();
    rig.wait("the next prompt sent to the model", || {
        said = rig.mock.turns().iter().map(|t| t.to_string()).find(|t| t.contains(NEXT)).unwrap_or_default();
        !said.is_empty()
    });
    assert!(said.contains("only in part: hunk 2 of 3 (your line 4) was declined"), "{said}");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "A\nb\nc\nd\ne\nf\nG\n");
    rig.finish("partial acceptance");
}

#[test]
fn q_on_a_new_file_leaves_it_uncreated_and_the_model_hears_the_refusal() {
    let rig = start();
    let path = rig.nvim.cwd.join("new.txt");
    rig.send(CREATE);
    rig.review_on_screen();
    let panes = rig.panes();
    assert!(panes.contains(&json!([true, "created"])), "the new file: {panes:?}");
    assert!(panes.iter().any(|p| p[1] == ""), "beside nothing (no file yet): {panes:?}");
    type_keys(&rig.nvim, ":q<CR>");
    let result = rig.result_for("Write");
    assert_eq!(result["is_error"], json!(true), "{result}");
    let said = result.to_string().to_lowercase();
    assert!(said.contains("refused") || said.contains("rejected") || said.contains("denied"), "{result}");
    rig.wait_text(AFTER_TOOL);
    rig.idle();
    rig.no_review();
    // The turn is over: Claude Code had every chance to write it.
    assert!(!path.exists(), "a rejected Write created {}", path.display());
    rig.finish("write + :q");
}

#[test]
fn abort_with_the_question_pending_closes_the_review_and_leaves_the_file() {
    let rig = start();
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\nthree\n");
    rig.send(CHANGE);
    rig.review_on_screen();
    rig.nvim.command("PiIde abort").unwrap();
    rig.no_review();
    rig.wait_text("⏹ aborted");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nthree\n", "an aborted edit was written");
    // The session goes on, and the model hears that the edit did not happen.
    rig.send(HELLO);
    rig.wait_text(HELLO_REPLY);
    let turn = rig.turn_for(HELLO);
    let refused = result_of(&turn, "Edit").unwrap_or_else(|| panic!("no result for the Edit\n{}", rig.report()));
    assert_eq!(refused["is_error"], json!(true), "{refused}");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nthree\n");
    rig.finish("abort");
}

#[test]
fn claude_reaches_this_neovims_tools_through_pi_ide_mcp() {
    let rig = start();
    // A diagnostic only this Neovim knows, on an open file.
    let path = edit_file(&rig.nvim, "d.lua", &["local x = 1"]);
    rig.nvim.lua(&format!(
        "vim.diagnostic.set(vim.api.nvim_create_namespace('pi-ide-test'), 0, {{ {{ lnum = 0, col = 6, message = {DIAGNOSTIC:?}, severity = vim.diagnostic.severity.WARN }} }})"
    ));
    // A permission that carries no change is asked with vim.ui.select: allow once, as a user would.
    rig.nvim.lua(
        "_G.asked = {} vim.ui.select = function(items, opts, cb) \
           table.insert(_G.asked, vim.tbl_map(opts.format_item, items)) \
           for _, o in ipairs(items) do if o.kind == 'allow_once' then return cb(o) end end cb(nil) end",
    );
    rig.send(DIAGNOSE);
    // The server the chat passed in session/new is running: Claude Code lists its tools to the
    // model (deferred, by name), and loads the schema of the one the model asks for.
    let first = rig.turn_for(DIAGNOSE);
    let listed = system_texts(&first).join("\n");
    assert!(listed.contains("mcp__nvim__getDiagnostics") && listed.contains("mcp__nvim__openDiff"), "pi-ide-mcp's tools are not offered:\n{listed}");
    let loaded = rig.turn_for(TOOL_LOADED);
    let tools: Vec<&str> = loaded["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"mcp__nvim__getDiagnostics"), "{tools:?}");
    // The call reaches this Neovim: its diagnostic comes back to the model.
    let result = rig.result_for("mcp__nvim__getDiagnostics");
    assert_ne!(result["is_error"], json!(true), "{result}");
    assert!(result.to_string().contains(DIAGNOSTIC), "not this Neovim's diagnostics: {result}");
    assert!(result.to_string().contains("d.lua"), "{result} ({path})");
    rig.wait_text(AFTER_TOOL);
    rig.idle();
    // In mode Manual, Claude Code asked before it called our tool: a question with no change in
    // it, asked once with its own options, and said in the chat.
    let asked = rig.nvim.lua("return _G.asked");
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{asked}");
    assert!(asked[0].as_array().unwrap().contains(&json!("Yes (allow once)")), "{asked}");
    assert!(rig.text().contains("❓ Claude asks: mcp__nvim__getDiagnostics"), "{}", rig.text());
    rig.finish("mcp");
}

