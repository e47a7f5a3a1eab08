//! The rig the real ACP agents that Neovim's chat starts share (copilot_acp.rs, codex_acp.rs,
//! opencode_acp.rs): a real Neovim whose chat runs the agent, the agent's model a loopback mock,
//! and the steps every test takes in the chat: open it, send a prompt, read it, wait for a text,
//! a review, the turn's end. What differs per agent (how its model is told to edit, its
//! processes) stays in its own file.

use std::time::{Duration, Instant};

use crate::harness::*;
use crate::openai_mock::{self, OpenAiMock, Reply, Turn};
use pi_ide_testkit::nvim::Options;

/// Neovim with the chat agent `agent`, and `model`, the mock that plays its model.
pub struct Rig<M> {
    pub nvim: Nvim,
    pub model: M,
    agent: &'static str,
    /// How long anything the agent does may take (only a failing test waits this long).
    patience: Duration,
    /// The turns the model was asked, for a failing wait's message.
    turns: fn(&M) -> Vec<String>,
}

/// The setup that makes the chat agent `agent` run `cmd` with `env` added to Neovim's.
pub fn agent_setup(agent: &str, cmd: &[&str], env: &[(String, String)]) -> String {
    let cmd: Vec<String> = cmd.iter().map(|c| format!("{c:?}")).collect();
    let env: Vec<String> = env.iter().map(|(k, v)| format!("[{k:?}] = {v:?}")).collect();
    format!(
        "require('pi-ide').setup({{ chat = {{ agents = {{ {agent} = {{ cmd = {{ {} }}, env = {{ {} }} }} }} }} }})",
        cmd.join(", "),
        env.join(", ")
    )
}

/// What the file at `path` holds (or why it cannot be read).
pub fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("<{e}>"))
}

impl<M> Rig<M> {
    /// Starts Neovim with `options` (the plugin's setup in `after`) and waits for its server.
    pub fn start(agent: &'static str, patience: Duration, model: M, turns: fn(&M) -> Vec<String>, options: Options) -> Rig<M> {
        let nvim = Nvim::start_with(options);
        nvim.command("set columns=200").unwrap();
        nvim.record_notify();
        nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
        Rig { nvim, model, agent, patience, turns }
    }

    /// The chat of the agent, as a Lua expression.
    pub fn chat(&self) -> String {
        format!("require('pi-ide.features.chat.acp').get('{}')", self.agent)
    }

    /// `:PiIde chat <agent>`, once the agent's ACP session is there.
    pub fn open(&self) {
        self.nvim.command(&format!("PiIde chat {}", self.agent)).unwrap();
        self.nvim.command("stopinsert").unwrap();
        wait_until("the agent's ACP session", self.patience, || {
            self.nvim.lua(&format!("return {}.session ~= nil", self.chat())) == true
        });
    }

    pub fn send(&self, text: &str) {
        self.nvim.lua_with(&format!("{}:send(...)", self.chat()), vec![text.into()]);
    }

    /// The chat buffer's text.
    pub fn text(&self) -> String {
        let v = self.nvim.lua(&format!("return require('pi-ide.features.chat.view').of('{}').text()", self.agent));
        v.as_str().unwrap_or_default().to_owned()
    }

    /// Waits until the chat shows `part`; on timeout, fails with the chat, the model's turns and
    /// Neovim's notifications.
    pub fn wait_text(&self, part: &str) {
        let deadline = Instant::now() + self.patience;
        while !self.text().contains(part) {
            if Instant::now() > deadline {
                let (turns, notes) = ((self.turns)(&self.model), self.nvim.notes());
                panic!("no {part:?} in the chat:\n{}\nmodel turns: {turns:?}\nnotes: {notes:?}", self.text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn review_on_screen(&self) {
        wait_until("the review on screen", self.patience, || {
            self.nvim.lua("return #require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil") == true
        });
    }

    pub fn no_review(&self) {
        wait_until("no review", self.patience, || self.nvim.lua("return #require('pi-ide.features.review').list() == 0") == true);
    }

    pub fn idle(&self) {
        wait_until("the turn's end", self.patience, || self.nvim.lua(&format!("return {}.state == 'idle'", self.chat())) == true);
    }

    /// The pid of the agent's process, while the chat runs it.
    pub fn agent_pid(&self) -> Option<i32> {
        let chat = self.chat();
        let pid = self.nvim.lua(&format!("local c = {chat} return c.proc and require('pi-ide.core.native').get().chat_pid(c.proc.id)"));
        pid.as_i64().map(|p| p as i32)
    }
}

/// The steps of an agent whose model speaks OpenAI's chat completions (opencode, Kilo, Qwen).
impl Rig<OpenAiMock> {
    /// The model calls `tool` with `args` on a prompt that says `word`, and says `after` once it
    /// has the result.
    pub fn model_calls(&self, word: &str, tool: &str, args: serde_json::Value, after: &str) {
        self.model.on_user(word, Reply::tool(tool, args));
        self.model.after_tool(tool, Reply::text(after));
        self.send(&format!("{word} now"));
    }

    /// Closes the review on screen by `close` (`:q` typed, `:PiIde abort`) without a write: it
    /// goes, the turn ends with the file at `path` still `was`, and a next turn (on `word`) runs
    /// through, writing nothing either (whatever the agent would have done of the closed one is
    /// done by then).
    pub fn closed_unwritten(&self, close: impl FnOnce(&Nvim), word: &str, path: &str, was: &str) {
        close(&self.nvim);
        self.no_review();
        self.idle();
        assert_eq!(read(path), was, "{}", self.text());
        self.model.on_user(word, Reply::text("Still here."));
        self.send(word);
        self.wait_text("Still here.");
        self.idle();
        assert_eq!(read(path), was, "nothing written after it: {}", self.text());
    }

    /// The result of `tool` as the model got it.
    pub fn tool_result(&self, tool: &str) -> String {
        let body = self.model.wait_completion("the tool's result", self.patience, |b| {
            matches!(openai_mock::turn(b), Turn::ToolResult { name, .. } if name == tool)
        });
        match openai_mock::turn(&body) {
            Turn::ToolResult { content, .. } => content,
            other => panic!("{other:?}"),
        }
    }
}
