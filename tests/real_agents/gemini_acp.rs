//! The real Gemini CLI (npm `@google/gemini-cli`, pinned by scripts/ensure-agents.sh) in the
//! chat, as a user runs it: `:PiIde chat gemini` starts `gemini --acp` (the Agent Client
//! Protocol: JSON-RPC on its stdio) from a real Neovim, configured through `setup({ chat = {
//! agents = { gemini = … } } })` with only what runs it offline: Node 22 first on PATH, a scratch
//! HOME, and a loopback mock of Gemini's REST API as its model (tests/support/gemini_mock.rs,
//! also its proxy, so that nothing leaves the machine unseen). The mock's script plays the
//! model: a text, or a call of one of the CLI's tools (`write_file`, `replace`, or the Neovim
//! tools of pi-ide-mcp, which the chat gives the CLI in session/new).
//!
//! The CLI reads and writes files through the chat (fs/read_text_file, fs/write_text_file) and
//! asks before each change (session/request_permission carrying the whole file before and
//! after): that question is the review, two panes in Neovim, and keys into Neovim are typed
//! (`type_keys`), since reviews accept only what the user typed.


use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::harness::*;
use crate::gemini_mock::{tool_names, turn_of, GeminiMock, Reply, Turn};
use pi_ide_testkit::nvim::{temp_dir, Options};

/// How long anything the CLI does may take: it loads ~20 MB of JavaScript and asks the model
/// twice a turn (its router, then the turn), on a loaded 2-core machine that runs several tests
/// at once. Only a failing test waits this long.
const AGENT_PATIENCE: Duration = Duration::from_secs(60);

/// `gemini` (a Node script) and the folder of the Node 22 it needs first on PATH. Missing is
/// a failure, never a skip: the suite installs both.
pub fn gemini_and_node() -> (PathBuf, PathBuf) {
    let bin = crate::copilot_cli::agents_bin();
    let (gemini, node_dir) = (bin.join("gemini"), bin.join("../node/bin"));
    for (what, path) in [("the Gemini CLI", &gemini), ("Node 22", &node_dir.join("node"))] {
        assert!(
            path.exists(),
            "{what} is not installed at {}: run scripts/test (it installs the pinned versions with \
             scripts/ensure-agents.sh), or set PI_IDE_AGENTS to such a node_modules/.bin",
            path.display()
        );
    }
    (gemini, node_dir)
}

/// One test's folders, removed when dropped: `work`, Neovim's (and so the CLI's) working
/// folder, and `home`, the CLI's HOME (its `~/.gemini`: settings, trusted folders, sessions).
struct Folders {
    root: PathBuf,
    home: PathBuf,
    work: PathBuf,
}

impl Folders {
    /// `trusted`: `work` is in the CLI's trusted folders (it starts the MCP servers it is given
    /// only there).
    fn new(trusted: bool) -> Folders {
        // Canonical: the CLI matches its cwd against the trusted folders exactly.
        let root = temp_dir("gemini").canonicalize().unwrap();
        let (home, work) = (root.join("home"), root.join("work"));
        let gemini = home.join(".gemini");
        std::fs::create_dir_all(&gemini).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        // Usage statistics off: otherwise it posts them to play.googleapis.com (seen through
        // the proxy) and the run is not offline.
        let settings = json!({"privacy": {"usageStatisticsEnabled": false}});
        std::fs::write(gemini.join("settings.json"), settings.to_string()).unwrap();
        if trusted {
            let mut trust = serde_json::Map::new();
            trust.insert(work.to_string_lossy().into_owned(), json!("TRUST_FOLDER"));
            std::fs::write(gemini.join("trustedFolders.json"), Value::Object(trust).to_string()).unwrap();
        }
        Folders { root, home, work }
    }
}

impl Drop for Folders {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Neovim with the chat agent `gemini` run offline against `mock`. Fields drop in order:
/// Neovim first (the CLI, its child, sees its stdin close), then the mock, then the folders.
struct World {
    nvim: Nvim,
    mock: GeminiMock,
    dirs: Folders,
}

fn world(trusted: bool, script: impl Fn(&Turn) -> Reply + Send + Sync + 'static) -> World {
    let dirs = Folders::new(trusted);
    let mock = GeminiMock::start(script);
    let nvim = Nvim::start_with(Options {
        cwd: Some(dirs.work.clone()),
        ..Default::default()
    });
    let (gemini, node_dir) = gemini_and_node();
    let path = format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default());
    let url = mock.url();
    // The built-in agent `gemini` (lua/pi-ide/agents/gemini.lua), its command and environment
    // changed: the rest (its label, pi-ide-mcp in session/new) is the plugin's own.
    let agent = json!({
        "cmd": [gemini, "--acp"],
        "env": {
            "PATH": path,
            "HOME": dirs.home,
            "GOOGLE_GEMINI_BASE_URL": url,
            "GEMINI_API_KEY": "dummy",
            // It would relaunch itself under a new Node with more memory: one process, ours.
            "GEMINI_CLI_NO_RELAUNCH": "true",
            // Anything bound elsewhere reaches the mock instead, which records it (both
            // spellings: which one wins differs between Node's HTTP clients).
            "HTTPS_PROXY": url, "HTTP_PROXY": url, "https_proxy": url, "http_proxy": url,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        },
    });
    nvim.lua_with(
        "require('pi-ide').setup({ chat = { agents = { gemini = vim.json.decode(...) } } })",
        vec![agent.to_string().into()],
    );
    nvim.command("set columns=200").unwrap();
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    World { nvim, mock, dirs }
}

impl World {
    /// Polls `cond` until it holds; on timeout, fails with the chat and what the model got.
    fn wait(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + AGENT_PATIENCE;
        while !cond() {
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}\n--- the chat ---\n{}\n--- the model got ---\n{}--- notes ---\n{:?}",
                    self.text(),
                    self.mock.summary(),
                    self.nvim.notes()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lua_true(&self, expr: &str) -> bool {
        self.nvim.lua(&format!("return ({expr}) and true or false")) == json!(true)
    }

    /// `:PiIde chat gemini`, then waits until the CLI has opened its session.
    fn open(&self) {
        self.nvim.command("PiIde chat gemini").unwrap();
        self.wait("the session to open", || {
            self.lua_true("require('pi-ide.features.chat.acp').get('gemini').session ~= nil")
        });
        self.nvim.command("stopinsert").unwrap();
    }

    fn send(&self, text: &str) {
        self.nvim.lua_with(
            "require('pi-ide.features.chat.acp').get('gemini'):send(...)",
            vec![text.into()],
        );
    }

    /// The chat buffer's text.
    fn text(&self) -> String {
        let v = self
            .nvim
            .lua("return require('pi-ide.features.chat.view').of('gemini').text()");
        v.as_str().unwrap_or_default().to_owned()
    }

    fn wait_text(&self, part: &str) {
        self.wait(&format!("{part:?} in the chat"), || self.text().contains(part));
    }

    fn wait_idle(&self) {
        self.wait("the turn to end", || {
            self.lua_true("require('pi-ide.features.chat.acp').get('gemini').state == 'idle'")
        });
    }

    fn wait_review(&self) {
        self.wait("a review on screen", || {
            self.lua_true("#require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil")
        });
    }

    fn wait_no_review(&self) {
        self.wait("the review to close", || {
            self.lua_true("#require('pi-ide.features.review').list() == 0")
        });
    }

    /// The panes of the review on screen: (modifiable, lines joined by `|`) each.
    fn review_panes(&self) -> Vec<(bool, String)> {
        let panes = self.nvim.lua(
            "local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do \
               local b = vim.api.nvim_win_get_buf(w) \
               if vim.b[b].pi_ide_review then table.insert(out, { vim.bo[b].modifiable, \
                 table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '|') }) end end return out",
        );
        let panes = panes.as_array().cloned().unwrap_or_default();
        panes
            .iter()
            .map(|p| (p[0] == true, p[1].as_str().unwrap_or_default().to_owned()))
            .collect()
    }

    /// Waits for the model's request that answers its call of `tool`; returns that answer
    /// (`{"output": …}` or `{"error": …}`).
    fn tool_result(&self, tool: &str) -> Value {
        let mut found = None;
        self.wait(&format!("the model to get the result of {tool}"), || {
            found = self.mock.turns().iter().find_map(|t| match turn_of(&t.body) {
                Turn::ToolResult { name, response } if name == tool => Some(response),
                _ => None,
            });
            found.is_some()
        });
        found.unwrap()
    }

    /// A file in the working folder with this text; its absolute path.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.dirs.work.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("<{e}>"))
}

/// The argument after `verb ` in a prompt such as "rewrite /path/a.txt".
fn arg<'a>(prompt: &'a str, verb: &str) -> Option<&'a str> {
    prompt.strip_prefix(verb)?.strip_prefix(' ')
}

#[test]
fn a_prompt_streams_into_the_chat() {
    let w = world(false, |turn| match turn {
        Turn::Prompt(p) if p == "hello gemini" => Reply::pieces(&["Hello ", "from ", "the mock ", "model."]),
        _ => Reply::text("unexpected turn"),
    });
    w.open();
    w.send("hello gemini");
    w.wait_text("Hello from the mock model.");
    w.wait_idle();
    let t = w.text();
    let (asked, answered) = (t.find("## ❯ You\nhello gemini"), t.find("## Gemini"));
    assert!(
        matches!((asked, answered), (Some(a), Some(b)) if a < b),
        "the prompt, then Gemini's answer: {t}"
    );
    assert!(t[answered.unwrap()..].contains("Hello from the mock model."), "{t}");
    // The prompt reached the model as typed, in one turn.
    let turns = w.mock.turns();
    assert_eq!(turns.len(), 1, "{}", w.mock.summary());
    assert_eq!(turn_of(&turns[0].body), Turn::Prompt("hello gemini".into()));
    assert!(turns[0].model.starts_with("gemini-"), "{}", w.mock.summary());
    // In a folder it does not trust, the CLI starts none of the MCP servers it is given: the
    // model gets no Neovim tools (see the last test for a trusted one).
    let tools = tool_names(&turns[0].body);
    assert!(tools.contains(&"write_file".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("mcp_")), "{tools:?}");
    assert!(
        w.mock.outside().is_empty(),
        "Gemini tried to reach the internet:\n{}",
        w.mock.summary()
    );
}

#[test]
fn a_change_is_reviewed_and_the_users_edit_of_it_is_written() {
    let w = world(false, |turn| match turn {
        Turn::Prompt(p) if arg(p, "rewrite").is_some() => Reply::call(
            "write_file",
            json!({"file_path": arg(p, "rewrite"), "content": "one\nTWO\nthree\n"}),
        ),
        Turn::ToolResult { name, .. } if name == "write_file" => Reply::text("The file is written."),
        _ => Reply::text("unexpected turn"),
    });
    let path = w.file("a.txt", "one\ntwo\nthree\n");
    w.open();
    w.send(&format!("rewrite {path}"));
    w.wait_review();
    // The whole file as it is and as it will be; the proposal (where the cursor is) editable,
    // since the CLI writes through the chat what the user accepts.
    let panes = w.review_panes();
    assert_eq!(panes.len(), 2, "both panes are the review's: {panes:?}");
    assert!(panes.iter().any(|p| p.1 == "one|two|three"), "{panes:?}");
    let proposal = w
        .nvim
        .lua("return { vim.bo.modifiable, table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') }");
    assert_eq!(proposal, json!([true, "one|TWO|three"]));
    assert_eq!(read(&path), "one\ntwo\nthree\n", "nothing written before the :w");
    // The user makes it their own: still nothing on disk until :w.
    type_keys(&w.nvim, "Gomine<Esc>");
    assert_eq!(read(&path), "one\ntwo\nthree\n", "an edit of the proposal is not a :w");
    type_accept(&w.nvim, ":w<CR>");
    w.wait(&format!("{path} to hold the user's text"), || {
        read(&path) == "one\nTWO\nthree\nmine\n"
    });
    let result = w.tool_result("write_file");
    assert!(result.get("error").is_none(), "{result}");
    assert!(
        result["output"].as_str().unwrap_or_default().contains("Successfully"),
        "{result}"
    );
    w.wait_text("The file is written.");
    w.wait_idle();
    w.wait_no_review();
    let t = w.text();
    assert!(
        t.contains("⚖ review: a.txt") && t.contains("✎ wrote a.txt with your edits (Gemini is told at your next prompt)"),
        "{t}"
    );
    assert_eq!(
        read(&path),
        "one\nTWO\nthree\nmine\n",
        "and nothing else wrote it after"
    );
}

/// A write of three changed lines, the middle hunk rejected: what is accepted is what is written,
/// and the next prompt tells Gemini the file differs from its proposal.
#[test]
fn part_of_a_change_accepted_hunk_by_hunk_is_what_is_written_and_gemini_is_told() {
    let w = world(false, |turn| match turn {
        Turn::Prompt(p) if arg(p, "rewrite").is_some() => Reply::call(
            "write_file",
            json!({"file_path": arg(p, "rewrite"), "content": "A\nb\nc\nD\ne\nf\nG\n"}),
        ),
        Turn::ToolResult { name, .. } if name == "write_file" => Reply::text("The file is written."),
        _ => Reply::text("Noted."),
    });
    let path = w.file("h.txt", "a\nb\nc\nd\ne\nf\ng\n");
    w.open();
    w.send(&format!("rewrite {path}"));
    w.wait_review();
    w.wait("the review's hunks counted", || {
        w.lua_true("(require('pi-ide.features.review').current() or {}).hunks ~= nil")
    });
    type_keys(&w.nvim, "gg]h:PiIde hunk reject<CR>");
    assert_eq!(read(&path), "a\nb\nc\nd\ne\nf\ng\n", "nothing written before the :w");
    type_accept(&w.nvim, ":w<CR>");
    w.wait(&format!("{path} to hold hunks 1 and 3"), || {
        read(&path) == "A\nb\nc\nd\ne\nf\nG\n"
    });
    w.wait_text("The file is written.");
    w.wait_idle();
    w.wait_no_review();
    w.send("what now");
    w.wait_text("Noted.");
    let told = w.mock.turns().iter().any(|t| {
        let body = t.body.to_string();
        body.contains("Note from the editor") && body.contains("h.txt") && body.contains("hunk 2 of 3 (your line 4) was declined")
    });
    assert!(told, "the next prompt did not tell Gemini: {}", w.mock.summary());
    assert_eq!(read(&path), "A\nb\nc\nd\ne\nf\nG\n", "nothing else wrote it after");
}

#[test]
fn q_rejects_the_change_and_the_model_is_told() {
    let w = world(false, |turn| match turn {
        Turn::Prompt(p) if arg(p, "capitalise").is_some() => Reply::call(
            "replace",
            json!({"file_path": arg(p, "capitalise"), "old_string": "beta", "new_string": "BETA",
                   "instruction": "Capitalise the word beta."}),
        ),
        Turn::ToolResult { name, .. } if name == "replace" => Reply::text("Left as it was."),
        _ => Reply::text("unexpected turn"),
    });
    let path = w.file("b.txt", "alpha\nbeta\n");
    w.open();
    w.send(&format!("capitalise {path}"));
    w.wait_review();
    let proposal = w
        .nvim
        .lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|')");
    assert_eq!(proposal, "alpha|BETA", "the whole file as the replace leaves it");
    type_keys(&w.nvim, ":q<CR>");
    let result = w.tool_result("replace");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("canceled by the user"),
        "the model hears it was refused: {result}"
    );
    w.wait_text("Left as it was.");
    w.wait_idle();
    w.wait_no_review();
    assert_eq!(read(&path), "alpha\nbeta\n");
}

#[test]
fn the_neovim_tools_reach_this_neovim_in_a_trusted_folder() {
    const MESSAGE: &str = "fake diagnostic: x is never used";
    let w = world(true, |turn| match turn {
        Turn::Prompt(p) if p == "what is wrong?" => Reply::call("mcp_nvim_getDiagnostics", json!({})),
        Turn::ToolResult { name, .. } if name == "mcp_nvim_getDiagnostics" => Reply::text("One thing."),
        _ => Reply::text("unexpected turn"),
    });
    // A diagnostic only this Neovim knows: the tool's answer can come from nowhere else.
    let path = w.file("c.lua", "local x = 1\n");
    w.nvim.command(&format!("edit {path}")).unwrap();
    w.nvim.lua_with(
        "local ns = vim.api.nvim_create_namespace('fakelsp') \
         vim.diagnostic.set(ns, 0, { { lnum = 0, col = 6, message = ..., severity = vim.diagnostic.severity.WARN } })",
        vec![MESSAGE.into()],
    );
    // A tool call that changes nothing is asked in vim.ui.select (whose default, inputlist,
    // would hold Neovim's RPC): the user picks "Allow", as they would in a picker.
    w.nvim.lua(
        "_G.asked = nil vim.ui.select = function(items, opts, cb) \
           _G.asked = vim.tbl_map(opts.format_item, items) \
           for _, o in ipairs(items) do if o.kind == 'allow_once' then return cb(o) end end cb(nil) end",
    );
    w.open();
    w.send("what is wrong?");
    let result = w.tool_result("mcp_nvim_getDiagnostics");
    // The chat gave the CLI pi-ide-mcp in session/new (its settings name no MCP server), and
    // in this trusted folder it started it: the model is offered its tools.
    let tools = tool_names(&w.mock.turns()[0].body);
    assert!(tools.contains(&"mcp_nvim_getDiagnostics".to_owned()), "{tools:?}");
    assert!(result.get("error").is_none(), "{result}");
    assert!(
        result.to_string().contains(MESSAGE),
        "the answer is this Neovim's: {result}"
    );
    let asked = w.nvim.lua("return _G.asked");
    assert!(
        asked
            .as_array()
            .is_some_and(|a| a.contains(&json!("Allow (allow once)"))),
        "{asked}"
    );
    w.wait_text("One thing.");
    w.wait_idle();
    assert!(w.text().contains("❓ Gemini asks: getDiagnostics"), "{}", w.text());
    assert!(
        w.mock.outside().is_empty(),
        "Gemini tried to reach the internet:\n{}",
        w.mock.summary()
    );
}
