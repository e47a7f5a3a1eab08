//! `:PiIde chat` with the real Pi (`pi --mode rpc`, the versions scripts/ensure-agents.sh pins)
//! and the real pi-ide extension, offline: a loopback OpenAI-compatible mock plays the model
//! (tests/support/openai_mock.rs). Neovim runs Pi as `terminal.agents.pi` says (setup's `cmd` and
//! `env`), adding "--mode rpc" and the private `PI_IDE_LOCK_DIR` by itself, so the extension
//! inside connects to this Neovim: its writes come to our review.
//!
//! The test reads what the user reads (the conversation buffer, the statusline's state, the
//! header) and acts as the user does (`:PiIde chat`, `:PiIde abort`, `:w` in a review or an
//! editor dialog, vim.ui answered by overriding it). tests/chat/fake_pi.rs covers what only a fake Pi
//! can be made to do on cue.


use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::*;
use crate::{pi_cli, terminal};
use crate::openai_mock::{user_texts, OpenAiMock, Reply};
use crate::pi_cli::{pi_env, Folders, PI_PATIENCE};
use pi_ide_testkit::nvim::Options;

/// The name our Neovim gives itself in its lockfile: the extension says it connected to it.
const OURS: &str = "nvim-chat-under-test";

/// How the chat runs Pi.
enum PiCmd {
    /// Pi with the pi-ide extension and tests/support/ui_extension.ts.
    WithExtension,
    /// Pi alone: nothing reviews its writes.
    WithoutExtension,
    /// Pi with the pi-ide extension and Pi's MCP adapter (npm `pi-mcp-adapter`).
    WithMcpAdapter,
}

/// Everything one test needs; dropped in field order: Neovim (and the Pi it runs), the model,
/// the folders.
struct Rig {
    nvim: Nvim,
    model: OpenAiMock,
    dirs: Folders,
}

impl Rig {
    fn new() -> Rig {
        Rig::with(PiCmd::WithExtension, |_| {})
    }

    /// A Neovim in a fresh folder whose `terminal.agents.pi` runs Pi as `how` says against the
    /// mock; `configure` may rewrite Pi's agent folder after pi_env wrote it. Pi not started.
    fn with(how: PiCmd, configure: impl FnOnce(&Path)) -> Rig {
        let dirs = Folders::new();
        let model = OpenAiMock::start();
        let env = pi_env(&dirs.pi, &model.base_url());
        configure(&dirs.pi);
        let cmd = match how {
            PiCmd::WithExtension => {
                let mut c = pi_cli::pi_command();
                c.push("-e".into());
                c.push(pi_cli::ui_extension().to_string_lossy().into_owned());
                c
            }
            PiCmd::WithMcpAdapter => {
                let adapter = pi_cli::agents_dir().join("node_modules/pi-mcp-adapter");
                assert!(adapter.join("index.ts").exists(), "no {} (scripts/ensure-agents.sh installs it)", adapter.display());
                let mut c = pi_cli::pi_command();
                c.extend(["-e".into(), adapter.to_string_lossy().into_owned()]);
                c
            }
            PiCmd::WithoutExtension => [pi_cli::node_binary(), pi_cli::pi_cli_js()]
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
        };
        let nvim = Nvim::start_with(Options {
            cwd: Some(dirs.work.clone()),
            after: Some(format!(
                "require('pi-ide').setup({{ ide_name = '{OURS}', terminal = {{ agents = {{ pi = {{ cmd = {{ {} }}, env = {{ {} }} }} }} }} }})",
                terminal::lua_list(cmd),
                terminal::lua_fields(env)
            )),
            ..Default::default()
        });
        nvim.wait_for("require('pi-ide').info().running", PATIENCE);
        nvim.record_notify();
        nvim.t("record_events", json!(["PiIdeReviewOpened", "PiIdeReviewClosed"]));
        Rig { nvim, model, dirs }
    }

    /// The conversation buffer's text.
    fn text(&self) -> String {
        self.nvim
            .lua("return require('pi-ide.features.chat.view').text()")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn status(&self) -> String {
        self.nvim
            .lua("return require('pi-ide.features.chat').status()")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn running(&self) -> bool {
        self.nvim.lua("return require('pi-ide.features.chat').running()") == json!(true)
    }

    fn info(&self) -> Value {
        self.nvim.lua("return require('pi-ide.features.chat').info()")
    }

    /// Pi's pid, while the chat runs it.
    fn pi_pid(&self) -> Option<i32> {
        self.nvim
            .lua(
                "local p = require('pi-ide.features.chat.process').current() \
                 return p and p.id and require('pi-ide.core.native').get().chat_pid(p.id)",
            )
            .as_i64()
            .map(|p| p as i32)
    }

    /// Sends a prompt as the prompt area does.
    fn send(&self, text: &str) {
        let sent = self
            .nvim
            .lua_with("return require('pi-ide.features.chat').send(...)", vec![text.into()]);
        assert_eq!(sent, json!(true), "the chat refused {text:?}\n{}", self.report());
    }

    /// Polls `cond` until it holds; on time-out, fails with the state of every side.
    fn wait(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + PI_PATIENCE;
        while !cond() {
            if Instant::now() > deadline {
                panic!("timed out waiting for: {what}\n{}", self.report());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the conversation shows `part`; returns the conversation then.
    fn wait_text(&self, part: &str) -> String {
        let mut seen = String::new();
        self.wait(&format!("the conversation to show {part:?}"), || {
            seen = self.text();
            seen.contains(part)
        });
        seen
    }

    /// `:PiIde chat` (the chat opens, the cursor in its prompt, Insert mode), back to Normal
    /// mode; then waits until Pi answered get_state (its model's name is known).
    fn open_chat(&self) {
        self.nvim.command("PiIde chat").unwrap();
        type_keys(&self.nvim, "<Esc>");
        assert!(self.running(), "Pi did not start\n{}", self.report());
        self.wait("get_state to name the model", || {
            self.info()["model"].as_str().is_some()
        });
    }

    /// The banner saying the extension in the chat's Pi connected to this Neovim.
    fn wait_connected(&self) {
        self.wait_text(&format!("✓ Auto-connected to {OURS}: Pi's writes open a review here."));
    }

    fn notes(&self) -> Vec<String> {
        self.nvim.notes()
    }

    /// The chat's header (its winbar); empty when the chat is not shown.
    fn header(&self) -> String {
        self.nvim.t("chat_header", json!([])).as_str().unwrap_or_default().to_owned()
    }

    fn report(&self) -> String {
        let turns = self.model.turns_report();
        let log = std::fs::read_to_string(self.nvim.home.join("state/nvim/pi-ide.log"))
            .unwrap_or_default();
        let log: Vec<&str> = log.lines().collect();
        format!(
            "--- the conversation ---\n{}\n--- status {:?}, running {}, info {} ---\n--- notes ---\n{:?}\n--- the turns the mock model got ---\n{}\n--- pi-ide.log ---\n{}",
            self.text(),
            self.status(),
            self.running(),
            self.info(),
            self.notes(),
            turns.join("\n"),
            log[log.len().saturating_sub(60)..].join("\n"),
        )
    }
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The parent of `pid` (Pi sets its process title, so its command line does not tell it).
fn parent(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|p| p.trim().parse().ok())
}

/// Whether the body asks the model with every user message so far containing `text`.
fn user_said(body: &Value, text: &str) -> bool {
    user_texts(body).iter().any(|t| t.contains(text))
}

#[test]
fn a_prompt_streams_the_models_answer_into_the_conversation() {
    let rig = Rig::new();
    rig.model
        .on_user("stream-please", Reply::slow_words(40, Duration::from_millis(100)));
    rig.open_chat();
    // The chat shows: the conversation in a window, its header naming Pi's model.
    assert_eq!(rig.info()["model"], json!("Mock"), "{}", rig.report());
    assert_eq!(rig.info()["model_key"], json!("mock/mock-coder"));
    rig.wait("the header to name the model", || rig.header().starts_with("π Mock"));
    assert_eq!(rig.status(), "");

    rig.send("stream-please tell me");
    // Part of the answer shows while the rest is still coming, and Pi is working.
    let mut partial = String::new();
    let mut state = String::new();
    rig.wait("part of the answer before its end", || {
        partial = rig.text();
        state = rig.status();
        partial.contains("w1 w2 w3") && !partial.contains("w20")
    });
    assert_eq!(state, "π working", "{partial}");
    assert!(partial.contains("## ❯ You\nstream-please tell me"), "{partial}");
    assert!(rig.header().contains("working"), "{}", rig.header());
    // Then all of it, in order, once; and Pi is idle.
    let whole: String = (1..=40).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    let t = rig.wait_text(&whole);
    assert!(t.contains(&format!("## π\n\n{whole}")), "{t}");
    assert_eq!(t.matches("w17 ").count(), 1, "{t}");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    rig.wait("the header to lose 'working'", || {
        let h = rig.header();
        h.starts_with("π Mock") && !h.contains("working")
    });
    let body = rig.model.wait_completion("the prompt", PI_PATIENCE, |b| {
        user_said(b, "stream-please tell me")
    });
    assert_eq!(body["model"], json!("mock-coder"));
}

#[test]
fn a_write_of_pis_is_reviewed_in_neovim_and_accepted_with_w() {
    let rig = Rig::new();
    let hello = rig.dirs.work.join("hello.txt");
    rig.model.on_user(
        "please-write",
        Reply::tool("write", json!({"path": "hello.txt", "content": "hello from the chat\n"})),
    );
    rig.model
        .after_tool("write", Reply::text("Mock model: the write is over."));
    rig.open_chat();
    rig.wait_connected();
    rig.send("please-write hello.txt");
    // The review: the extension's openDiff, the proposal current; nothing written yet.
    rig.wait("a review in Neovim", || {
        rig.nvim.lua("return #require('pi-ide.features.review').list()") == json!(1)
    });
    let tab = rig.nvim.lua("return require('pi-ide.features.review').list()[1].tab_name");
    assert!(tab.as_str().unwrap().starts_with("pi-write:"), "{tab}");
    come_to_review(&rig.nvim);
    rig.nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(
        rig.nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["hello from the chat"])
    );
    assert!(!hello.exists(), "written before the review was decided");
    assert_eq!(rig.status(), "π waiting for you");
    let t = rig.wait_text("⚙ write hello.txt …");
    assert!(!t.contains("Mock model: the write is over."), "{t}");
    // Accepted: Pi writes it, its tool block says so, the model hears of it and goes on.
    type_keys(&rig.nvim, "<Esc>");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait("Pi to write the accepted file", || {
        std::fs::read_to_string(&hello).ok().as_deref() == Some("hello from the chat\n")
    });
    rig.wait_text("⚙ write hello.txt ✓");
    rig.wait("the model to get the write's result", || {
        rig.model
            .tool_results("write")
            .iter()
            .any(|r| r.contains("Successfully wrote"))
    });
    let t = rig.wait_text("Mock model: the write is over.");
    assert!(!t.contains("✗"), "{t}");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    assert_eq!(
        rig.nvim
            .t("count_events", json!(["PiIdeReviewClosed", "result", "accepted"])),
        json!(1)
    );
    assert_eq!(rig.nvim.lua("return #require('pi-ide.features.review').list()"), json!(0));
}

#[test]
fn abort_stops_a_streaming_answer() {
    let rig = Rig::new();
    rig.model
        .on_user("long-answer", Reply::slow_words(300, Duration::from_millis(100)));
    rig.open_chat();
    rig.send("long-answer please");
    rig.wait_text("w1 w2 w3");
    assert_eq!(rig.status(), "π working");
    rig.nvim.command("PiIde abort").unwrap();
    let t = rig.wait_text("⏹ aborted");
    assert!(!t.contains("w300"), "{t}");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    // Pi closed its request to the model: the mock's stream was cut.
    rig.wait("the mock to see its stream cut", || rig.model.streams_cut() >= 1);
    // Nothing more streams in after the abort.
    let after = rig.text();
    let words = |s: &str| s.matches(" w").count();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(words(&rig.text()), words(&after), "{}", rig.text());
    assert!(rig.running(), "Pi goes on after an abort");
}

/// The chat knows its Pi by the token it handed it (its lockfile), not by which client came
/// last: another agent that connects after it keeps its review when the chat aborts.
#[test]
fn abort_rejects_the_review_of_the_chats_pi_and_no_other_agents() {
    let rig = Rig::new();
    rig.model.on_user(
        "please-write",
        Reply::tool("write", json!({"path": "mine.txt", "content": "from the chat\n"})),
    );
    rig.model.after_tool("write", Reply::text("Mock model: done."));
    rig.open_chat();
    rig.wait_connected();
    // Another agent connects after the chat's Pi, and asks for a review of its own.
    let mut other = rig.nvim.peer();
    let theirs = rig.dirs.work.join("theirs.txt").to_string_lossy().into_owned();
    other.send_json(&open_diff_call("o1", &theirs, "from another agent\n", "other-tab")).unwrap();
    rig.wait("the other agent's review", || {
        rig.nvim.lua("return #require('pi-ide.features.review').list()") == json!(1)
    });
    rig.send("please-write mine.txt");
    rig.wait("the chat's Pi's review too", || {
        rig.nvim.lua("return #require('pi-ide.features.review').list()") == json!(2)
    });
    rig.nvim.command("PiIde abort").unwrap();
    rig.wait("the chat's review to go", || {
        rig.nvim.lua("return #require('pi-ide.features.review').list()") == json!(1)
    });
    assert_eq!(rig.nvim.lua("return require('pi-ide.features.review').list()[1].tab_name"), json!("other-tab"));
    rig.wait_text("⏹ aborted");
    assert!(!rig.dirs.work.join("mine.txt").exists(), "written though rejected");
    // The other agent's review still waits for the user: nothing answered it (a ping's answer
    // comes after anything queued before it).
    assert_eq!(other.request("ping", json!({})).unwrap()["result"], json!({}));
    assert!(answer_in(other.inbox.make_contiguous(), "o1").is_none(), "{:?}", other.inbox);
}

#[test]
fn a_prompt_sent_while_pi_works_steers_it() {
    let rig = Rig::new();
    rig.model
        .on_user("long-answer", Reply::slow_words(50, Duration::from_millis(100)));
    rig.model
        .on_user("steer-now", Reply::text("Mock model: steered."));
    rig.open_chat();
    rig.send("long-answer please");
    rig.wait_text("w1 w2 w3");
    assert_eq!(rig.status(), "π working");
    rig.send("steer-now and shorter");
    let t = rig.wait_text("## ❯ You (steering)\nsteer-now and shorter");
    assert!(!t.contains("w50"), "the steer was sent after the answer: {t}");
    // The model gets the steer in a later request, after the answer it interrupted.
    let body = rig.model.wait_completion("the steer", PI_PATIENCE, |b| {
        user_said(b, "steer-now and shorter")
    });
    let texts = user_texts(&body);
    let first = texts.iter().position(|t| t.contains("long-answer please"));
    let steer = texts.iter().position(|t| t.contains("steer-now and shorter"));
    assert!(first.is_some() && first < steer, "{texts:?}");
    rig.wait_text("Mock model: steered.");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
}

/// Overrides vim.ui.select and vim.ui.input: each answers (on the next tick, as a picker
/// would) `answers[kind]` (nil: cancelled), Yes/No questions with `answers.confirm`; what was
/// asked is kept in `_G.asked`.
fn answer_dialogs(nvim: &Nvim, answers: Value) {
    nvim.t("real_agents.answer_dialogs", json!([answers]));
}

/// The editor dialog's buffer (`Pi editor <id>`), once it shows.
fn editor_buffer(rig: &Rig) -> i64 {
    let find = "for _, b in ipairs(vim.api.nvim_list_bufs()) do \
                  if vim.fn.bufname(b):match('^Pi editor ') and vim.fn.bufwinid(b) ~= -1 then return b end \
                end";
    let mut buf = Value::Null;
    rig.wait("the editor dialog", || {
        buf = rig.nvim.lua(find);
        buf.is_i64()
    });
    buf.as_i64().unwrap()
}

#[test]
fn extension_dialogs_are_answered_in_neovim() {
    let rig = Rig::new();
    rig.open_chat();
    answer_dialogs(&rig.nvim, json!({"confirm": "Yes", "select": "beta", "input": "typed in nvim"}));
    rig.send("/ui-test");
    // confirm, select and input went through vim.ui; the editor is a buffer that :w sends.
    let buf = editor_buffer(&rig);
    assert_eq!(rig.status(), "π waiting for you");
    assert_eq!(
        rig.nvim.lua_with(
            "return vim.api.nvim_buf_get_lines(..., 0, -1, false)",
            vec![buf.into()]
        ),
        json!(["prefilled line 1", "prefilled line 2"])
    );
    assert_eq!(
        rig.nvim.lua("return _G.asked"),
        json!([
            "ui-test confirm: Proceed with the test?",
            "ui-test select",
            "ui-test input: "
        ])
    );
    rig.nvim.lua_with(
        "local b = ... vim.api.nvim_buf_set_lines(b, 0, -1, false, { 'edited line 1', 'edited line 2' }) \
         vim.api.nvim_set_current_win(vim.fn.bufwinid(b))",
        vec![buf.into()],
    );
    type_accept(&rig.nvim, ":w<CR>");
    let said = r#"Pi: ui-test: confirm=true select="beta" input="typed in nvim" editor="edited line 1\nedited line 2""#;
    rig.wait("Pi's notify of what was answered", || {
        rig.notes().iter().any(|n| n == said)
    });
    rig.wait("the editor window to close", || {
        rig.nvim.lua(&format!("return vim.fn.bufexists({buf}) == 0")) == json!(true)
    });
    rig.wait("the state to go back to idle", || rig.status().is_empty());

    // Every dialog cancelled: Escape in the pickers, the editor closed unsent.
    answer_dialogs(&rig.nvim, json!({}));
    rig.send("/ui-test");
    let buf = editor_buffer(&rig);
    rig.nvim.command(&format!("bwipeout! {buf}")).unwrap();
    let said = "Pi: ui-test: confirm=false select=undefined input=undefined editor=undefined";
    rig.wait("Pi's notify of the cancelled dialogs", || {
        rig.notes().iter().any(|n| n == said)
    });
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    assert!(rig.running());
}

#[test]
fn a_dialog_waits_while_the_user_types_and_shows_on_esc() {
    let rig = Rig::new();
    rig.open_chat();
    answer_dialogs(&rig.nvim, json!({"confirm": "Yes", "select": "beta", "input": "later"}));
    // Typing in the prompt area: Pi's question must not take the keys.
    rig.nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(vim.fn.bufnr('Pi prompt')))");
    type_keys(&rig.nvim, "iwhat I type");
    rig.send("/ui-test");
    rig.wait("the note that Pi's question waits", || {
        rig.notes().iter().any(|n| n.contains("Pi's question waits until you leave Insert mode"))
    });
    assert_eq!(rig.nvim.lua("return #_G.asked"), json!(0));
    assert_eq!(rig.status(), "π waiting for you");
    type_keys(&rig.nvim, "<Esc>");
    // In Normal mode the questions show, one after another; the editor is cancelled.
    let buf = editor_buffer(&rig);
    assert_eq!(
        rig.nvim.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('Pi prompt'), 0, -1, false)"),
        json!(["what I type"])
    );
    rig.nvim.command(&format!("bwipeout! {buf}")).unwrap();
    let said = r#"Pi: ui-test: confirm=true select="beta" input="later" editor=undefined"#;
    rig.wait("Pi's notify of what was answered", || {
        rig.notes().iter().any(|n| n == said)
    });
    rig.wait("the state to go back to idle", || rig.status().is_empty());
}

#[test]
fn the_model_picker_switches_pis_model() {
    let rig = Rig::with(PiCmd::WithExtension, |pi| {
        let models: Value =
            serde_json::from_str(&std::fs::read_to_string(pi.join("models.json")).unwrap()).unwrap();
        let mut models = models;
        models["providers"]["mock"]["models"] = json!([
            {"id": "mock-coder", "name": "Mock"},
            {"id": "mock-second", "name": "Mock Second"}
        ]);
        std::fs::write(pi.join("models.json"), models.to_string()).unwrap();
    });
    rig.model.on_user("which-model", Reply::text("Mock model: noted."));
    rig.open_chat();
    assert_eq!(rig.info()["model_key"], json!("mock/mock-coder"), "{}", rig.report());
    // The picker lists both, the current one marked; the user picks the second.
    rig.nvim.t("real_agents.pick_model", json!(["mock-second"]));
    rig.nvim.command("PiIde chat model").unwrap();
    let listed = rig.nvim.lua("return _G.listed");
    assert_eq!(
        listed,
        json!(["● Mock (mock/mock-coder)", "  Mock Second (mock/mock-second)"]),
        "{}",
        rig.report()
    );
    assert_eq!(rig.info()["model_key"], json!("mock/mock-second"));
    assert_eq!(rig.info()["model"], json!("Mock Second"));
    // Pi itself says so, and asks the new model.
    let state = rig
        .nvim
        .lua("local r = require('pi-ide.features.chat').request({ type = 'get_state' }) return r and r.data.model");
    assert_eq!((state["provider"].clone(), state["id"].clone()), (json!("mock"), json!("mock-second")));
    rig.send("which-model now");
    let body = rig
        .model
        .wait_completion("the prompt", PI_PATIENCE, |b| user_said(b, "which-model now"));
    assert_eq!(body["model"], json!("mock-second"));
    rig.wait_text("Mock model: noted.");
    rig.wait("the header to name the new model", || rig.header().starts_with("π Mock Second"));
}

#[test]
fn pi_killed_mid_turn_is_shown_and_the_next_prompt_starts_it_again() {
    let rig = Rig::new();
    // First: after the crash the unanswered "long-answer" is still the user's input (it was in
    // the session), and the first matching rule wins.
    rig.model
        .on_user("after-the-crash", Reply::text("Mock model: back again."));
    rig.model
        .on_user("long-answer", Reply::slow_words(300, Duration::from_millis(100)));
    rig.model
        .on_user("remember-this", Reply::text("Mock model: remembered."));
    rig.open_chat();
    // A whole turn first: Pi writes its session file once an answer is in it.
    rig.send("remember-this word");
    rig.wait_text("Mock model: remembered.");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    rig.send("long-answer please");
    rig.wait_text("w1 w2 w3");
    let pid = rig.pi_pid().expect("Pi's pid");
    assert_eq!(parent(pid), Some(rig.nvim.pid()), "not Neovim's child");
    // SAFETY: kill(2) of the Pi this test's Neovim started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    rig.wait_text("✗ Pi killed by signal 9; the next prompt starts it again.");
    rig.wait("the chat to know Pi is gone", || {
        !rig.running() && rig.status().is_empty()
    });
    // Reaped by Neovim: no zombie.
    rig.wait("Pi to be reaped", || !Path::new(&format!("/proc/{pid}")).exists());

    rig.send("after-the-crash hello");
    rig.wait_text("Mock model: back again.");
    assert!(rig.running());
    let again = rig.pi_pid().expect("Pi's pid");
    assert_ne!(again, pid);
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    // The same session goes on (`--session`): the model gets the turn from before the crash.
    let body = rig.model.wait_completion("the prompt after the crash", PI_PATIENCE, |b| {
        user_said(b, "after-the-crash hello")
    });
    assert!(user_said(&body, "remember-this word"), "{:?}", user_texts(&body));
    let t = rig.text();
    assert!(t.contains("Mock model: remembered.") && t.contains("w1 w2 w3"), "the conversation stays: {t}");
    // Its extension's socket was dropped without a Close: gone, not a protocol breach.
    let notes = rig.nvim.notes();
    assert!(!notes.iter().any(|n| n.contains("protocol")), "{notes:?}");
}

#[test]
fn quitting_neovim_leaves_no_pi_behind() {
    let mut rig = Rig::new();
    rig.open_chat();
    let pid = rig.pi_pid().expect("Pi's pid");
    assert!(alive(pid), "Pi {pid} is not running");
    assert_eq!(parent(pid), Some(rig.nvim.pid()), "not Neovim's child");
    assert!(rig.nvim.quit(PATIENCE), "Neovim did not quit");
    // Neovim ended Pi and reaped it before it exited (VimLeavePre): not even a zombie is left,
    // and nothing was left for the kernel's parent-death signal or for init to clean up.
    if Path::new(&format!("/proc/{pid}")).exists() {
        let (was_alive, was_parent) = (alive(pid), parent(pid));
        // SAFETY: kill(2) of the Pi this test's Neovim started, so that it does not linger.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("Pi {pid} outlived Neovim (alive: {was_alive}, parent {was_parent:?})");
    }
}

#[test]
fn without_the_extension_the_chat_says_writes_are_not_reviewed() {
    let rig = Rig::with(PiCmd::WithoutExtension, |_| {});
    rig.open_chat();
    let t = rig.wait_text("⚠ **Writes are not reviewed**");
    assert!(t.contains("pi install npm:@ldelossa/pi-ide"), "{t}");
    assert!(!t.contains("Auto-connected"), "{t}");
    rig.wait("the header to warn", || rig.header().contains("writes NOT reviewed"));
}

/// Pi without the extension: its write tool writes the file itself, nothing asked, the file
/// open in a window of Neovim's beside the chat. The write is pending at once; `:PiIde reject`
/// typed in the file's window undoes it, and the next prompt tells Pi so (chat/undone.lua).
#[test]
fn without_the_extension_pis_write_is_pending_and_its_undoing_is_told_with_the_next_prompt() {
    let rig = Rig::with(PiCmd::WithoutExtension, |_| {});
    let notes = edit_file(&rig.nvim, "notes.txt", &["one", "two", "three"]);
    rig.model.on_user(
        "please-write",
        Reply::tool("write", json!({"path": "notes.txt", "content": "one\nTWO\nthree\n"})),
    );
    rig.model
        .after_tool("write", Reply::text("Mock model: the write is over."));
    rig.model.on_user("and-now", Reply::text("Mock model: noted."));
    rig.model.on_user("say-hello", Reply::text("Mock model: hello."));
    rig.open_chat();
    // A chat is watched once it has worked (its first prompt).
    rig.send("say-hello");
    rig.wait_text("Mock model: hello.");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    watching(&rig.nvim);
    rig.send("please-write notes.txt");
    rig.wait("Pi to write the file by itself", || {
        std::fs::read_to_string(&notes).ok().as_deref() == Some("one\nTWO\nthree\n")
    });
    rig.wait_text("Mock model: the write is over.");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    assert_eq!(rig.nvim.lua("return #require('pi-ide.features.review').list()"), json!(0));
    let change = wait_pending(&rig.nvim, &notes, PI_PATIENCE);
    let seen = (&change["agent"], &change["kind"], &change["hunks"]);
    assert_eq!(seen, (&json!("pi"), &json!("changed"), &json!(1)), "{change}");
    // Undone in the file's window: the file as it was, nothing pending.
    rig.nvim.lua_with("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", vec![notes.clone().into()]);
    type_keys(&rig.nvim, ":PiIde reject<CR>");
    rig.wait("the write undone on disk", || {
        std::fs::read_to_string(&notes).ok().as_deref() == Some("one\ntwo\nthree\n")
    });
    rig.wait("nothing pending", || pending_change(&rig.nvim, &notes).is_null());
    // The next prompt tells Pi what was undone, once.
    rig.send("and-now go on");
    let asked = |text: &str| {
        let body = rig.model.wait_completion(text, PI_PATIENCE, |b| user_said(b, text));
        user_texts(&body).last().cloned().unwrap_or_default()
    };
    let told = asked("and-now go on");
    assert!(told.contains("notes.txt: your line 2 (undone by the user)"), "{told}");
    rig.wait_text("↺ Pi is told: [pi-ide: since your last prompt the user undid");
    rig.wait_text("Mock model: noted.");
    rig.wait("the state to go back to idle", || rig.status().is_empty());
    rig.send("and-now again");
    let again = asked("and-now again");
    assert!(!again.contains("undone"), "told twice: {again}");
}

/// Pi's MCP adapter runs `pi-ide-mcp` as the project's `.mcp.json` (as :PiIde mcp pi gives it)
/// says; the model calls a tool of this Neovim through the adapter's `mcp` tool, and the
/// answer reaches the model.
#[test]
fn pi_with_its_mcp_adapter_reaches_this_neovim_through_pi_ide_mcp() {
    let rig = Rig::with(PiCmd::WithMcpAdapter, |_| {});
    rig.nvim.command("PiIde mcp pi").unwrap();
    let config = rig.nvim.lua("return vim.fn.getreg('\"')");
    std::fs::write(rig.dirs.work.join(".mcp.json"), config.as_str().unwrap()).unwrap();
    rig.model.on_user("ask-nvim", Reply::tool("mcp", json!({"tool": "nvim_getWorkspaceFolders", "args": {}})));
    rig.model.after_tool("mcp", Reply::text("Mock model: I know the folders."));
    rig.open_chat();
    rig.send("ask-nvim for its folders");
    let work = rig.dirs.work.to_string_lossy().into_owned();
    // (Neovim 0.10's vim.json.encode escapes slashes.)
    rig.wait("the folders to reach the model", || rig.model.tool_results("mcp").iter().any(|r| r.replace("\\/", "/").contains(&work)));
    rig.wait_text("Mock model: I know the folders.");
    // Neovim shows the adapter's session under the name it gave.
    let status = rig.nvim.lua("return table.concat(require('pi-ide.core.status').lines(), '\\n')");
    assert!(status.as_str().unwrap().contains("mcp: socket"), "{status}");
}
