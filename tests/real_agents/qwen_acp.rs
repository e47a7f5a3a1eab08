//! The real Qwen Code (npm `@qwen-code/qwen-code`, pinned by scripts/ensure-agents.sh) in the
//! chat, as a user runs it: `:PiIde chat qwen` starts `qwen --acp` with the plugin's own entry
//! (lua/pi-ide/agents/qwen.lua) and only what runs it offline added: Node 22 first on PATH, a
//! scratch HOME whose settings pick the OpenAI auth (no dialog), and a loopback chat-completions
//! mock as its model (tests/support/openai_mock.rs).
//!
//! Its session starts in mode `auto` (edits without asking): the chat puts it in `default`,
//! where each edit asks with a permission carrying the whole file, and qwen then has the client
//! write it (fs/write_text_file). Its edit tool reads the file first (through the chat); a new
//! file is never read before its permission. Keys into Neovim are typed (`type_keys`).

use std::time::Duration;

use crate::acp_rig::{agent_setup, read, Rig};
use crate::harness::*;
use crate::openai_mock::{OpenAiMock, Reply};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

/// How long anything qwen does may take (it loads a large bundle of JavaScript), on a loaded
/// 2-core machine. Only a failing test waits this long.
const AGENT_PATIENCE: Duration = Duration::from_secs(90);

/// A Neovim whose chat agent `qwen` is the real program, offline, its model the mock.
fn rig() -> Rig<OpenAiMock> {
    let model = OpenAiMock::start();
    let bin = crate::copilot_cli::agents_bin();
    let (qwen, node_dir) = (bin.join("qwen"), bin.join("../node/bin"));
    assert!(qwen.exists(), "qwen is not installed at {}: run scripts/test (scripts/ensure-agents.sh)", qwen.display());
    let home = temp_dir("qwen-acp").join("home");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    let settings = json!({"security": {"auth": {"selectedType": "openai"}}, "general": {"enableAutoUpdate": false},
        "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}});
    std::fs::write(home.join(".qwen/settings.json"), settings.to_string()).unwrap();
    let path = format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
    let env: Vec<(String, String)> = [
        ("PATH", path),
        ("HOME", home.display().to_string()),
        ("OPENAI_BASE_URL", model.base_url()),
        ("OPENAI_API_KEY", "sk-dummy".into()),
        ("OPENAI_MODEL", "mock-model".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let setup = agent_setup("qwen", &[&qwen.display().to_string(), "--acp"], &env);
    Rig::start("qwen", AGENT_PATIENCE, model, OpenAiMock::turns_report, Options { after: Some(setup), ..Default::default() })
}

impl Rig<OpenAiMock> {
    /// On a prompt that says `word`, the model reads `path` (qwen edits only a file it has
    /// read), replaces `old` with `new`, and says `after`.
    fn qwen_edits(&self, word: &str, path: &str, old: &str, new: &str, after: &str) {
        self.model.on_user(word, Reply::tool("read_file", json!({"file_path": path})));
        self.model.after_tool("read_file", Reply::tool("edit", json!({"file_path": path, "old_string": old, "new_string": new})));
        self.model.after_tool("edit", Reply::text(after));
        self.send(&format!("{word} now"));
    }
}

fn new_path(rig: &Rig<OpenAiMock>, name: &str) -> String {
    rig.nvim.lua(&format!("return vim.fn.getcwd() .. '/{name}'")).as_str().unwrap().to_owned()
}

#[test]
fn qwen_streams_into_the_chat_in_a_mode_that_asks() {
    let rig = rig();
    rig.model.on_user("hello", Reply::slow_text("Hello from the mock model", 5, Duration::from_millis(20)));
    rig.open();
    wait_until("qwen put in its asking mode", AGENT_PATIENCE, || rig.nvim.lua(&format!("return {}.info.mode", rig.chat())) == json!("default"));
    rig.send("hello there");
    rig.wait_text("Hello from the mock model");
    rig.idle();
    let t = rig.text();
    assert!(t.contains("## ❯ You\nhello there\n\n## Qwen"), "{t}");
    assert!(!t.contains("⚠"), "no warning (its own requests and notifications are taken quietly): {t}");
}

#[test]
fn qwen_asks_before_an_edit_and_the_users_text_is_what_lands() {
    let rig = rig();
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\nthree\n");
    rig.open();
    rig.qwen_edits("please-edit", &path, "two", "TWO", "The edit is done.");
    rig.review_on_screen();
    let pane = rig.nvim.lua("return { vim.bo.modifiable, table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') }");
    assert_eq!(pane, json!([true, "one|TWO|three"]), "the whole file as it will be, editable");
    assert_eq!(read(&path), "one\ntwo\nthree\n", "nothing written before the :w");
    type_accept(&rig.nvim, "Gomine<Esc>:w<CR>");
    rig.wait_text("The edit is done.");
    rig.idle();
    assert_eq!(read(&path), "one\nTWO\nthree\nmine\n", "{}", rig.text());
    assert_eq!(rig.text().matches("⚖ review").count(), 1, "{}", rig.text());
    rig.no_review();
}

#[test]
fn qwen_q_rejects_and_the_file_is_left() {
    let rig = rig();
    let path = file_with(&rig.nvim, "b.txt", "alpha\nbeta\n");
    rig.open();
    rig.qwen_edits("please-edit", &path, "beta", "BETA", "Left as it was.");
    rig.review_on_screen();
    rig.closed_unwritten(|n| type_keys(n, ":q<CR>"), "after-reject", &path, "alpha\nbeta\n");
}

/// The lost new file: qwen never reads a file it creates before asking, and after the allow
/// has the client write it (fs/write_text_file): that is the write, not a mirror of its own.
#[test]
fn qwen_a_new_file_accepted_with_w_is_created() {
    let rig = rig();
    let path = new_path(&rig, "new.txt");
    rig.open();
    rig.model_calls("please-create", "write_file", json!({"file_path": path, "content": "fresh\n"}), "Created.");
    rig.review_on_screen();
    assert!(!std::path::Path::new(&path).exists(), "nothing before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("Created.");
    rig.idle();
    assert_eq!(read(&path), "fresh\n", "{}", rig.text());
    assert_eq!(rig.text().matches("⚖ review").count(), 1, "{}", rig.text());
}

/// A new file the user changed in its review lands byte for byte as they saved it.
#[test]
fn qwen_a_new_file_edited_in_its_review_lands_as_the_user_saved_it() {
    let rig = rig();
    let path = new_path(&rig, "made.txt");
    rig.open();
    rig.model_calls("please-create", "write_file", json!({"file_path": path, "content": "first\nsecond\n"}), "Created.");
    rig.review_on_screen();
    type_accept(&rig.nvim, "ggddGomine<Esc>:w<CR>");
    rig.wait_text("Created.");
    rig.idle();
    assert_eq!(read(&path), "second\nmine\n", "{}", rig.text());
    rig.wait_text("is told at your next prompt");
}

#[test]
fn qwen_abort_with_a_review_open_leaves_the_file_and_ends_the_turn() {
    let rig = rig();
    let path = file_with(&rig.nvim, "c.txt", "keep\n");
    rig.open();
    rig.qwen_edits("please-edit", &path, "keep", "LOST", "Should not matter.");
    rig.review_on_screen();
    rig.closed_unwritten(|n| drop(n.command("PiIde abort").unwrap()), "after-abort", &path, "keep\n");
}
