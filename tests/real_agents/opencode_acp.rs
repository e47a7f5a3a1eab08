//! The real opencode (npm `opencode-ai`, pinned by scripts/ensure-agents.sh) in the chat, as a
//! user runs it: `:PiIde chat opencode` starts `opencode acp` from a real Neovim, with the
//! plugin's own entry (lua/pi-ide/agents/opencode.lua: the environment that makes it ask before
//! every edit and command) and only what runs it offline added: a scratch HOME whose opencode
//! config names a loopback OpenAI-compatible provider (tests/support/openai_mock.rs), and the
//! XDG folders that HOME's defaults (as when they are unset).
//!
//! opencode writes files itself after a permission that carries the whole file before and
//! after, and mirrors that write as fs/write_text_file without waiting for the answer: the
//! review is the permission; the mirror is answered at once (no second review); what the user
//! accepted is set over opencode's own write. Keys into Neovim are typed (`type_keys`).
//!
//! Kilo Code (kilo_acp.rs), an opencode fork, is the same in the chat: these cases run for both,
//! each with its own program, config folder and environment ([`Fork`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::acp_rig::{agent_setup, read, Rig};
use crate::harness::*;
use crate::openai_mock::{OpenAiMock, Reply};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

/// How long anything opencode does may take (it starts a server of its own, reads a 180 MB
/// binary), on a loaded 2-core machine. Only a failing test waits this long.
const AGENT_PATIENCE: Duration = Duration::from_secs(90);

/// opencode, or a fork of it: its chat agent's name and label, the name of its program, config
/// folder and file (`~/.config/<name>/<name>.json`), the prefix of its environment's switches,
/// and what else runs it offline.
pub struct Fork {
    pub name: &'static str,
    pub label: &'static str,
    pub env_prefix: &'static str,
    pub extra_env: &'static [(&'static str, &'static str)],
}

pub const OPENCODE: Fork = Fork { name: "opencode", label: "opencode", env_prefix: "OPENCODE", extra_env: &[] };

/// Its program in the agents' folder (`$PI_IDE_AGENTS`, else .deps/agents/node_modules/.bin):
/// missing is a failure, never a skip (the suite installs it).
pub fn fork_binary(fork: &Fork) -> PathBuf {
    let program = crate::copilot_cli::agents_bin().join(fork.name);
    assert!(program.exists(), "{} is not installed at {}: run scripts/test (scripts/ensure-agents.sh)", fork.name, program.display());
    program
}

pub fn opencode_binary() -> PathBuf {
    fork_binary(&OPENCODE)
}

/// A scratch HOME whose config has the mock as its only model, and the environment that runs
/// the program offline in it (the XDG folders at HOME's defaults).
pub fn fork_home(fork: &Fork, home: &Path, base_url: &str) -> Vec<(String, String)> {
    let config = home.join(".config").join(fork.name);
    std::fs::create_dir_all(&config).unwrap();
    let provider = json!({"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": base_url, "apiKey": "x"},
        "models": {"mock-model": {"tool_call": true}}});
    let settings = json!({"provider": {"mock": provider}, "model": "mock/mock-model", "small_model": "mock/mock-model",
        "autoupdate": false, "share": "disabled"});
    std::fs::write(config.join(format!("{}.json", fork.name)), settings.to_string()).unwrap();
    let at = |p: &str| home.join(p).display().to_string();
    let mut env: Vec<(String, String)> = vec![
        ("HOME".into(), home.display().to_string()),
        ("XDG_CONFIG_HOME".into(), at(".config")),
        ("XDG_DATA_HOME".into(), at(".local/share")),
        ("XDG_STATE_HOME".into(), at(".local/state")),
        ("XDG_CACHE_HOME".into(), at(".cache")),
    ];
    for switch in ["DISABLE_MODELS_FETCH", "DISABLE_AUTOUPDATE", "DISABLE_LSP_DOWNLOAD"] {
        env.push((format!("{}_{switch}", fork.env_prefix), "1".into()));
    }
    env.extend(fork.extra_env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

pub fn opencode_home(home: &Path, base_url: &str) -> Vec<(String, String)> {
    fork_home(&OPENCODE, home, base_url)
}

/// A Neovim whose chat agent is the real program, offline, its model the mock: only the
/// program's path and what runs it offline are configured (the plugin's entry does the rest).
pub fn fork_rig(fork: &'static Fork) -> Rig<OpenAiMock> {
    let model = OpenAiMock::start();
    // Its title request (no tools) first: a title, whatever the prompt.
    model.on_system("title generator", Reply::text("A title"));
    let home = temp_dir(&format!("{}-acp", fork.name)).join("home");
    let env = fork_home(fork, &home, &model.base_url());
    let setup = agent_setup(fork.name, &[&fork_binary(fork).display().to_string(), "acp"], &env);
    Rig::start(fork.name, AGENT_PATIENCE, model, OpenAiMock::turns_report, Options { after: Some(setup), ..Default::default() })
}

impl Rig<OpenAiMock> {
    /// opencode's pid and every process under it, while the chat runs it.
    fn processes(&self) -> Vec<i32> {
        let Some(pid) = self.agent_pid() else { return Vec::new() };
        let mut all = vec![pid];
        let mut i = 0;
        while i < all.len() {
            all.extend(children(all[i]));
            i += 1;
        }
        all
    }
}

/// The processes whose parent is `pid`.
fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let ppid = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1)).and_then(|s| s.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn streams_and_leaves_nothing_running(fork: &'static Fork) {
    let rig = fork_rig(fork);
    rig.model.on_user("hello", Reply::slow_text("Hello from the mock model", 5, Duration::from_millis(20)));
    rig.open();
    rig.send("hello there");
    rig.wait_text("Hello from the mock model");
    rig.idle();
    assert!(rig.text().contains(&format!("## ❯ You\nhello there\n\n## {}", fork.label)), "{}", rig.text());
    let running = rig.processes();
    assert!(!running.is_empty());
    rig.nvim.command("PiIde chat stop").unwrap();
    wait_until("the agent and all under it gone", AGENT_PATIENCE, || running.iter().all(|p| !alive(*p)));
}

pub fn edit_reviewed_once_users_text_stays(fork: &'static Fork) {
    let rig = fork_rig(fork);
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\nthree\n");
    rig.open();
    rig.model_calls("please-edit", "edit", json!({"filePath": path, "oldString": "two", "newString": "TWO"}), "The edit is done.");
    rig.review_on_screen();
    let pane = rig.nvim.lua("return { vim.bo.modifiable, table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') }");
    assert_eq!(pane, json!([true, "one|TWO|three"]), "the whole file as it will be, editable");
    assert_eq!(read(&path), "one\ntwo\nthree\n", "nothing written before the :w");
    type_accept(&rig.nvim, "Gomine<Esc>:w<CR>");
    rig.wait_text("The edit is done.");
    rig.idle();
    wait_until("the user's text over the agent's write", AGENT_PATIENCE, || read(&path) == "one\nTWO\nthree\nmine\n");
    rig.wait_text("your accepted text was written over it");
    assert!(rig.tool_result("edit").contains("applied"), "{}", rig.tool_result("edit"));
    let t = rig.text();
    assert_eq!(t.matches("⚖ review").count(), 1, "one review, none for its mirrored write: {t}");
    assert!(!t.contains("not the change the user allowed"), "{t}");
    rig.no_review();
    assert_eq!(read(&path), "one\nTWO\nthree\nmine\n");
}

/// A rejection ends the agent's turn (its model never hears of the call again).
pub fn q_rejects_file_left(fork: &'static Fork) {
    let rig = fork_rig(fork);
    let path = file_with(&rig.nvim, "b.txt", "alpha\nbeta\n");
    rig.open();
    rig.model_calls("please-edit", "edit", json!({"filePath": path, "oldString": "beta", "newString": "BETA"}), "Left as it was.");
    rig.review_on_screen();
    rig.closed_unwritten(|n| type_keys(n, ":q<CR>"), "after-reject", &path, "alpha\nbeta\n");
    assert!(rig.text().contains("The user rejected permission"), "{}", rig.text());
}

pub fn new_file_created_after_w(fork: &'static Fork) {
    let rig = fork_rig(fork);
    let path = rig.nvim.lua("return vim.fn.getcwd() .. '/new.txt'").as_str().unwrap().to_owned();
    rig.open();
    rig.model_calls("please-create", "write", json!({"filePath": path, "content": "fresh\n"}), "Created.");
    rig.review_on_screen();
    assert!(!std::path::Path::new(&path).exists(), "nothing before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("Created.");
    rig.idle();
    assert_eq!(read(&path), "fresh\n");
    assert_eq!(rig.text().matches("⚖ review").count(), 1, "{}", rig.text());
}

pub fn abort_with_review_open_nothing_lands(fork: &'static Fork) {
    let rig = fork_rig(fork);
    let path = file_with(&rig.nvim, "c.txt", "keep\n");
    rig.open();
    // First, so that it wins: Kilo Code at times folds the cancelled turn's prompt into the
    // next one's message, which then holds both words (a loaded CI run).
    rig.model.on_user("after-abort", Reply::text("Still here."));
    rig.model_calls("please-edit", "edit", json!({"filePath": path, "oldString": "keep", "newString": "LOST"}), "Should not matter.");
    rig.review_on_screen();
    rig.closed_unwritten(|n| drop(n.command("PiIde abort").unwrap()), "after-abort", &path, "keep\n");
}

#[test]
fn a_prompt_streams_into_the_chat_and_nothing_is_left_running_after_stop() {
    streams_and_leaves_nothing_running(&OPENCODE);
}

#[test]
fn an_edit_is_reviewed_once_and_the_users_text_is_what_stays() {
    edit_reviewed_once_users_text_stays(&OPENCODE);
}

#[test]
fn q_rejects_and_the_file_is_left() {
    q_rejects_file_left(&OPENCODE);
}

#[test]
fn a_new_file_is_reviewed_and_created_after_w() {
    new_file_created_after_w(&OPENCODE);
}

#[test]
fn abort_with_a_review_open_leaves_the_file_and_nothing_lands_after() {
    abort_with_review_open_nothing_lands(&OPENCODE);
}
