//! The real Gemini CLI's TUI (npm `@google/gemini-cli`, pinned by scripts/ensure-agents.sh) in
//! its IDE mode against a real Neovim with `setup({ gemini = true })`: the CLI finds Neovim by
//! the discovery file in the temp folder they share (src/agents/gemini.rs, companion/), as a user runs it
//! beside Neovim in tmux, or launched by `:PiIde open gemini` in Neovim's own terminal. Its
//! model is a loopback mock of Gemini's REST API (tests/support/gemini_mock.rs, also its proxy,
//! so that nothing leaves the machine unseen) that calls the CLI's `write_file`; the CLI shows
//! the change in Neovim (openDiff) while its own "Apply this change?" waits. Keys into Neovim
//! are typed (`type_keys`): reviews accept only what the user typed. In its auto-edit mode it
//! writes by itself (no openDiff): the write is pending.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::gemini_acp::gemini_and_node;
use crate::gemini_mock::{GeminiMock, Reply, Turn};
use crate::harness::*;
use crate::pending::{no_review, record_pending_events, type_in_window_of, wait_decided, wait_pending};
use crate::terminal;
use pi_ide_testkit::nvim::{temp_dir, Options};

/// How long anything the CLI does may take: it loads ~20 MB of JavaScript and asks the model
/// twice a turn, on a loaded 2-core machine. Only a failing test waits this long.
const AGENT_PATIENCE: Duration = Duration::from_secs(90);

/// One test's folders, removed when dropped: `work` (Neovim's and the CLI's folder), `home`
/// (the CLI's: its settings; Qwen Code's lock files), `tmp` (TMPDIR of both: Gemini's
/// discovery file's folder). Qwen Code's (qwen.rs) too.
pub struct Folders {
    pub root: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
    tmp: PathBuf,
}

impl Folders {
    /// Made under a temp folder named `name`, with `home/<cli_dir>` (the CLI's own folder).
    pub fn make(name: &str, cli_dir: &str) -> Folders {
        // Canonical: a CLI matches its cwd against workspacePath (and Gemini its trusted folders).
        let root = temp_dir(name).canonicalize().unwrap();
        let f = Folders { home: root.join("home"), work: root.join("work"), tmp: root.join("tmp"), root };
        for d in [&f.home.join(cli_dir), &f.work, &f.tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        f
    }

    /// Gemini's: IDE mode on in its settings, `work` trusted.
    fn new() -> Folders {
        let f = Folders::make("gemini-ide", ".gemini");
        // IDE mode on as its user turns it on; the API key chosen (no sign-in dialog); usage
        // statistics and the update check off (they would leave the machine).
        let settings = json!({"ide": {"enabled": true}, "security": {"auth": {"selectedType": "gemini-api-key"}},
                              "privacy": {"usageStatisticsEnabled": false},
                              "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}});
        std::fs::write(f.home.join(".gemini/settings.json"), settings.to_string()).unwrap();
        let mut trust = serde_json::Map::new();
        trust.insert(f.work.to_string_lossy().into_owned(), json!("TRUST_FOLDER"));
        std::fs::write(f.home.join(".gemini/trustedFolders.json"), Value::Object(trust).to_string()).unwrap();
        f
    }

    /// The discovery files in the shared temp folder.
    fn discovery_files(&self) -> Vec<PathBuf> {
        let entries = std::fs::read_dir(self.tmp.join("gemini/ide")).into_iter().flatten().flatten();
        entries.map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect()
    }

    /// Neovim `nvim`'s discovery file, once written.
    fn discovery_of(&self, nvim: &Nvim) -> PathBuf {
        let prefix = format!("gemini-ide-server-{}-", nvim.pid());
        let mut found = None;
        wait_until("the discovery file", PATIENCE, || {
            found = self.discovery_files().into_iter().find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix));
            found.is_some()
        });
        found.unwrap()
    }
}

impl Drop for Folders {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What a person's terminal has for a TUI talking to loopback mocks: no proxy for them, a
/// terminal and a UTF-8 locale, and no CI=true (or GITHUB_ACTIONS=true), which makes these CLIs
/// headless (no TUI; Gemini CLI exits 42 on an empty stdin). Set by a CI runner, it would reach
/// the CLI `:PiIde open` launched (Neovim's own environment plus these).
pub fn a_persons_terminal() -> Vec<(String, String)> {
    vec![
        ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
        ("no_proxy".into(), "127.0.0.1,localhost".into()),
        ("TERM".into(), "xterm-256color".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("CI".into(), String::new()),
        ("GITHUB_ACTIONS".into(), String::new()),
    ]
}

/// The CLI's whole environment: offline, its model the mock, its HOME and TMPDIR the test's.
fn cli_env(dirs: &Folders, mock: &GeminiMock) -> Vec<(String, String)> {
    let (_, node_dir) = gemini_and_node();
    let url = mock.url();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut env = vec![
        ("PATH".into(), format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default())),
        ("HOME".into(), s(&dirs.home)),
        ("TMPDIR".into(), s(&dirs.tmp)),
        ("GOOGLE_GEMINI_BASE_URL".into(), url.clone()),
        ("GEMINI_API_KEY".into(), "dummy".into()),
        // Its debug log (the IDE client's steps), for failure messages.
        ("GEMINI_DEBUG_LOG_FILE".into(), s(&dirs.root.join("gemini-debug.log"))),
        // It would relaunch itself under a new Node with more memory: one process, ours.
        ("GEMINI_CLI_NO_RELAUNCH".into(), "true".into()),
        // Where /.dockerenv exists (a CI container) it dials host.docker.internal instead of
        // 127.0.0.1, unless it is told it runs in a dev container.
        ("REMOTE_CONTAINERS".into(), "true".into()),
    ];
    env.extend(a_persons_terminal());
    for k in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        env.push((k.into(), url.clone()));
    }
    env
}

/// The script the model follows: `please-write <path>` makes it write `<path>` (the text
/// after "|"), then it says it is done; anything else gets a plain answer.
fn script() -> impl Fn(&Turn) -> Reply + Send + Sync + 'static {
    |turn: &Turn| match turn {
        Turn::Prompt(p) if p.contains("please-write ") => {
            let ask = p.split("please-write ").nth(1).unwrap_or_default();
            let (path, content) = ask.split_once('|').unwrap_or((ask, ""));
            let args = json!({"file_path": path.trim(), "content": content.replace("\\n", "\n")});
            Reply::call("write_file", args)
        }
        Turn::ToolResult { name, .. } => Reply::text(&format!("Done with {name}.")),
        _ => Reply::text("Hello from the mock."),
    }
}

/// Where the CLI's TUI runs, as its user reads and types into it: a tmux pane beside Neovim
/// ([`Tui`]) or Neovim's own terminal ([`InNeovim`]).
pub(crate) trait Screen {
    fn screen(&self) -> String;
    /// Bytes to the TUI, as typed.
    fn type_text(&self, text: &str);
    fn press_enter(&self);
}

/// Types `text` and presses Enter (apart: the TUI reads a pasted Enter as a new line), again
/// while the text stays in the input line: the TUI sometimes drops an Enter.
fn send_line(cli: &dyn Screen, text: &str) {
    let typed = || input_line(&cli.screen()).is_some_and(|l| l.contains(text));
    cli.type_text(text);
    wait_agent("the prompt typed", || cli.screen(), typed);
    wait_agent("the prompt taken", || cli.screen(), || {
        cli.press_enter();
        let deadline = Instant::now() + Duration::from_secs(3);
        while typed() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        !typed()
    });
}

/// The input line: the last "> " line above the footer naming the workspace. None while a
/// dialog hides them (then an Enter would answer the dialog).
fn input_line(screen: &str) -> Option<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let footer = lines.iter().rposition(|l| l.contains("workspace (/directory)"))?;
    let above = &lines[footer.saturating_sub(4)..footer];
    above.iter().rev().find(|l| l.trim_start().starts_with('>')).map(|l| l.to_string())
}

/// The CLI's TUI in a tmux server of its own (socket in the test's folder).
pub(crate) struct Tui {
    socket: PathBuf,
    pane_pid: Option<i32>,
}

impl Tui {
    fn start(dirs: &Folders, mock: &GeminiMock) -> Tui {
        let (gemini, _) = gemini_and_node();
        Tui::run(&dirs.root, &dirs.work, &format!("'{}'", gemini.display()), cli_env(dirs, mock), "Type your message")
    }

    /// `command` in `work` with only `env`, its tmux socket in `root`; once its screen shows
    /// `ready`.
    pub(crate) fn run(root: &Path, work: &Path, command: &str, env: Vec<(String, String)>, ready: &str) -> Tui {
        let conf = root.join("tmux.conf");
        std::fs::write(&conf, "set -g remain-on-exit on\n").unwrap();
        let mut tui = Tui { socket: root.join("tmux.sock"), pane_pid: None };
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&tui.socket).arg("-f").arg(&conf);
        cmd.args(["new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", "-c"]).arg(work);
        cmd.arg(format!("exec {command}"));
        cmd.env_clear().envs(env);
        let out = cmd.output().unwrap_or_else(|e| panic!("cannot run tmux: {e}"));
        assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
        let pid = tui.tmux(&["display-message", "-p", "-t", "cli", "#{pane_pid}"]);
        tui.pane_pid = String::from_utf8_lossy(&pid.stdout).trim().parse().ok();
        wait_agent("the input line", || tui.screen(), || tui.screen().contains(ready));
        tui
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().expect("tmux")
    }
}

impl Screen for Tui {
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-J", "-t", "cli"]).stdout).into_owned()
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "cli", "-l", text]);
    }

    fn press_enter(&self) {
        self.tmux(&["send-keys", "-t", "cli", "Enter"]);
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        if let Some(pid) = self.pane_pid {
            // SAFETY: kill(2) of the process group of the pane this test started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The CLI launched by `:PiIde open <agent>` in this Neovim's terminal (its pty gets the bytes).
pub(crate) struct InNeovim<'a>(pub(crate) &'a Nvim, pub(crate) &'static str);

impl Screen for InNeovim<'_> {
    fn screen(&self) -> String {
        terminal::screen(self.0, self.1)
    }

    fn type_text(&self, text: &str) {
        terminal::type_text(self.0, self.1, text);
    }

    fn press_enter(&self) {
        terminal::type_text(self.0, self.1, "\r");
    }
}

/// Polls `cond` until it holds; on timeout, or once Neovim's terminal says the CLI exited
/// (looked at each second), fails with `about()` (a screen).
pub(crate) fn wait_agent(what: &str, about: impl Fn() -> String, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + AGENT_PATIENCE;
    let mut next_look = Instant::now();
    while !cond() {
        let now = Instant::now();
        if now > next_look {
            let screen = about();
            assert!(!screen.contains("[Process exited"), "the CLI exited waiting for {what}\n--- the CLI's screen ---\n{screen}");
            next_look = now + Duration::from_secs(1);
        }
        if now > deadline {
            panic!("timed out waiting for {what}\n--- the CLI's screen ---\n{}", about());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `/ide status` until the CLI says it is connected to Neovim. The CLI takes slash commands only
/// once its own have loaded: typed earlier (a loaded machine), the line goes to the model as a
/// prompt, so it is asked again.
fn ide_status_says_connected(cli: &dyn Screen, about: &dyn Fn() -> String) {
    let deadline = Instant::now() + AGENT_PATIENCE;
    let connected = || cli.screen().contains("Connected to Neovim");
    while !connected() {
        if Instant::now() > deadline {
            panic!("timed out waiting for the CLI to say it is connected to Neovim\n--- the CLI's screen ---\n{}", about());
        }
        send_line(cli, "/ide status");
        let asked = Instant::now();
        while !connected() && asked.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The CLI's screen and the ends of its debug log and Neovim's log, for failure messages.
fn diagnosis(cli: &dyn Screen, dirs: &Folders, nvim: &Nvim) -> String {
    let cli_log = std::fs::read_to_string(dirs.root.join("gemini-debug.log")).unwrap_or_default();
    let ide: Vec<&str> = cli_log.lines().filter(|l| !l.contains("[LOG]")).collect();
    let ide = ide[ide.len().saturating_sub(30)..].join("\n");
    let log = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    format!("{}\n--- the CLI's log ---\n{ide}\n--- Neovim's log ---\n{}", cli.screen(), tail.join("\n"))
}

/// A Neovim in the test's folder serving the CLI (`gemini = true`), `more` added to its setup.
fn start_neovim(dirs: &Folders, more: &str) -> Nvim {
    Nvim::start_with(Options {
        cwd: Some(dirs.work.clone()),
        env: vec![("TMPDIR".into(), dirs.tmp.to_string_lossy().into())],
        after: Some(format!("require('pi-ide').setup({{ gemini = true, log_level = 'debug'{more} }})")),
        ..Default::default()
    })
}

/// A Neovim as [`start_neovim`] whose `:PiIde open gemini` runs the CLI offline in a split
/// wide enough for its footer.
fn start_launcher(dirs: &Folders, mock: &GeminiMock) -> Nvim {
    launcher_with(dirs, cli_env(dirs, mock))
}

fn launcher_with(dirs: &Folders, env: Vec<(String, String)>) -> Nvim {
    let (gemini, _) = gemini_and_node();
    let agent = format!("cmd = {{ {:?} }}, env = {{ {} }}", gemini.display().to_string(), terminal::lua_fields(env));
    let nvim = start_neovim(dirs, &format!(", terminal = {{ provider = 'split', width = 160, agents = {{ gemini = {{ {agent} }} }} }}"));
    nvim.command("set columns=240 lines=50").unwrap();
    nvim
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn reviews(nvim: &Nvim) -> u64 {
    nvim.t("reviews_shown", json!([])).as_u64().unwrap()
}

/// The editor context the CLI put before the prompt containing `prompt`: the JSON in its
/// "Here is the user's editor context" part.
fn context_sent(mock: &GeminiMock, prompt: &str) -> Option<Value> {
    let turn = mock.turns().into_iter().find(|r| r.body.to_string().contains(prompt))?;
    let text = turn.body["contents"].to_string();
    let start = text.find("editor context")?;
    let json_text = text[start..].split("```json").nth(1)?.split("```").next()?;
    let unescaped: String = serde_json::from_str(&format!("\"{json_text}\"")).ok()?;
    serde_json::from_str(&unescaped).ok()
}

/// The CLI connects through the discovery file (with REMOTE_CONTAINERS in a container), the
/// context (path, selection, 1-based cursor) reaches its model with the first prompt, and its
/// write_file opens our review while its own "Apply this change?" waits: a typed `:w` lands the
/// user's edit of the proposal (the CLI writes what ide/diffAccepted carries), `:q` leaves the
/// file. The review opens only in Normal mode: the test leaves Visual mode before the edit.
#[test]
fn the_real_tui_beside_neovim_connects_sees_the_context_and_writes_only_what_was_accepted() {
    let dirs = Folders::new();
    let mock = GeminiMock::start(script());
    let mut nvim = start_neovim(&dirs, "");
    let discovery = dirs.discovery_of(&nvim);
    edit_file(&nvim, "ctx.txt", &["alpha", "beta gamma", "delta"]);
    // Line 2, "gamma" selected (columns 6 to 10): the cursor is told after it, 1-based as the
    // companion spec says (the caret's column in VS Code, "Col 11"; the CLI passes it on as is).
    type_keys(&nvim, "2G6|ve");

    let tui = Tui::start(&dirs, &mock);
    let about = || diagnosis(&tui, &dirs, &nvim);
    ide_status_says_connected(&tui, &about);

    // The context reaches the model with the first prompt.
    send_line(&tui, "what-is-selected here");
    wait_agent("the model to get the prompt", about, || context_sent(&mock, "what-is-selected").is_some());
    wait_agent("the answer", about, || tui.screen().contains("Hello from the mock."));
    let ctx = context_sent(&mock, "what-is-selected").unwrap_or_else(|| panic!("no editor context:\n{}", mock.summary()));
    let active = &ctx["activeFile"];
    assert_eq!(active["path"], dirs.work.join("ctx.txt").to_string_lossy().as_ref(), "{ctx}");
    assert_eq!(active["selectedText"], "gamma", "{ctx}");
    assert_eq!(active["cursor"], json!({"line": 2, "character": 11}), "1-based: {ctx}");
    // Back to Normal mode: a review waits until the user stops selecting (review/show.lua).
    type_keys(&nvim, "<Esc>");

    // An edit, reviewed in Neovim; the user's own change to the proposal is what lands.
    let path = file_with(&nvim, "w.txt", "old\n");
    send_line(&tui, &format!("please-write {path}|new\\n"));
    wait_agent("the review in Neovim", about, || reviews(&nvim) == 1);
    wait_agent("the CLI's own question", about, || tui.screen().contains("Apply this change?"));
    assert_eq!(read(&path).as_deref(), Some("old\n"));
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    type_keys(&nvim, "ggAmine<Esc>");
    type_accept(&nvim, ":w<CR>");
    wait_agent("the CLI to write the accepted text", about, || read(&path).as_deref() == Some("newmine\n"));
    wait_agent("the turn to end", about, || tui.screen().contains("Done with write_file."));
    assert_eq!(reviews(&nvim), 0);

    // :q rejects: the file stays as it was.
    send_line(&tui, &format!("please-write {path}|lost\\n"));
    wait_agent("the second review", about, || reviews(&nvim) == 1);
    type_keys(&nvim, ":q<CR>");
    // Its turn ends with "Request cancelled.": keys typed before that (its question gone, the
    // turn not yet over) are dropped.
    let rejected = || tui.screen().contains("Request cancelled.") && !tui.screen().contains("Apply this change?");
    wait_agent("the CLI to hear the rejection", about, rejected);
    assert_eq!(read(&path).as_deref(), Some("newmine\n"));

    // Allowed in the terminal after a hunk was declined in Neovim: the CLI closes our review
    // (closeDiff) and writes what the review held, not its whole proposal.
    send_line(&tui, &format!("please-write {path}|term\\nnewmine\\nextra\\n"));
    wait_agent("the third review", about, || reviews(&nvim) == 1);
    wait_agent("the CLI's own question", about, || tui.screen().contains("Apply this change?"));
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    tui.press_enter();
    wait_agent("the CLI to write the text kept", about, || read(&path).as_deref() == Some("term\nnewmine\n"));
    wait_agent("the review closed", about, || reviews(&nvim) == 0);

    wait_agent("the turn to end", about, || tui.screen().matches("Done with write_file.").count() == 2 && input_line(&tui.screen()).is_some());

    // The same while Neovim is busy (a long :!command): the core knows the text kept, and the
    // CLI writes it without waiting for Neovim.
    send_line(&tui, &format!("please-write {path}|busy\\nterm\\nnewmine\\nmore\\n"));
    wait_agent("the fourth review", about, || reviews(&nvim) == 1);
    wait_agent("the CLI's own question", about, || tui.screen().contains("Apply this change?"));
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    nvim.wait_for("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') == 'busy|term|newmine'", PATIENCE);
    let held = hold_main_loop(&nvim);
    tui.press_enter();
    let kept = || read(&path).as_deref() == Some("busy\nterm\nnewmine\n");
    wait_until("the CLI to write the text kept while Neovim is busy", PATIENCE, kept);
    assert!(held.still_held(), "written while Neovim was busy");
    held.release();
    wait_agent("the review closed", about, || reviews(&nvim) == 0);

    assert!(mock.outside().is_empty(), "{:?}", mock.outside());
    assert!(nvim.quit(PATIENCE));
    assert!(!discovery.exists(), "the discovery file is removed on quit");
}

/// Clients connected to `nvim`.
fn clients(nvim: &Nvim) -> u64 {
    nvim.lua("return #require('pi-ide').info().clients").as_u64().unwrap()
}

/// Two Neovims serving one folder, the one whose `:PiIde open gemini` is tested first: the one
/// the CLI would not pick by scanning the discovery files (it prefers the higher pid among live
/// editors; its process walk never reaches Neovim), so only the environment the launch gives
/// it (GEMINI_CLI_IDE_PID / GEMINI_CLI_IDE_SERVER_PORT) connects it to the right one.
fn two_neovims(dirs: &Folders, mock: &GeminiMock) -> (Nvim, Nvim) {
    let (first, second) = (start_launcher(dirs, mock), start_launcher(dirs, mock));
    if first.pid() < second.pid() {
        (first, second)
    } else {
        (second, first)
    }
}

/// `:PiIde open gemini` in the second of two Neovims serving one folder connects the CLI in its
/// terminal to that Neovim: the context is its file, the model's edit is reviewed there (none
/// in the other), a typed `:w` lands the user's edit of the proposal, and `:PiIde stop` removes
/// its discovery file while the other Neovim's stays until it quits.
#[test]
fn piide_open_gemini_in_one_of_two_neovims_in_one_folder_connects_to_that_one() {
    let dirs = Folders::new();
    let mock = GeminiMock::start(script());
    let (mut launcher, mut other) = two_neovims(&dirs, &mock);
    let (ours, theirs) = (dirs.discovery_of(&launcher), dirs.discovery_of(&other));
    // Each one's file; the launcher's is the context of the CLI it launches, though the CLI's
    // terminal has the window by the time the CLI connects.
    edit_file(&launcher, "mine.txt", &["mine"]);
    edit_file(&other, "theirs.txt", &["theirs"]);
    launcher.command("PiIde open gemini").unwrap();
    let cli = InNeovim(&launcher, "gemini");
    let about = || diagnosis(&cli, &dirs, &launcher);
    wait_agent("the input line", about, || cli.screen().contains("Type your message"));
    ide_status_says_connected(&cli, &about);
    assert_eq!((clients(&launcher), clients(&other)), (1, 0), "connected to the launcher only\n{}", about());

    // Its context is the launcher's file.
    send_line(&cli, "what-is-open here");
    let asked = || mock.turns().iter().any(|r| r.body.to_string().contains("what-is-open"));
    wait_agent("the model to get the prompt", about, asked);
    let ctx = context_sent(&mock, "what-is-open").unwrap_or_else(|| panic!("no editor context:\n{}", mock.summary()));
    assert_eq!(ctx["activeFile"]["path"], dirs.work.join("mine.txt").to_string_lossy().as_ref(), "{ctx}");
    wait_agent("the answer", about, || cli.screen().contains("Hello from the mock."));

    // Its edit is reviewed in the launcher; the user's own change to the proposal lands.
    let path = file_with(&launcher, "w.txt", "old\n");
    send_line(&cli, &format!("please-write {path}|new\\n"));
    wait_agent("the review in the launcher", about, || reviews(&launcher) == 1);
    assert_eq!(reviews(&other), 0);
    come_to_review(&launcher);
    launcher.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(read(&path).as_deref(), Some("old\n"));
    type_keys(&launcher, "ggAmine<Esc>");
    type_accept(&launcher, ":w<CR>");
    wait_agent("the CLI to write the accepted text", about, || read(&path).as_deref() == Some("newmine\n"));
    wait_agent("the turn to end", about, || cli.screen().contains("Done with write_file."));
    assert!(mock.outside().is_empty(), "{:?}", mock.outside());

    // Stopped, the launcher's discovery file goes; the other Neovim's goes when it quits.
    type_keys(&launcher, "<C-\\><C-n>:PiIde stop<CR>");
    wait_until("the launcher's discovery file gone", PATIENCE, || !ours.exists());
    assert!(theirs.exists());
    assert!(launcher.quit(PATIENCE) && other.quit(PATIENCE));
    assert!(!theirs.exists(), "the discovery file is removed on quit");
}

/// With CI=true in Neovim's environment (a CI runner's, or a shell that exported it) the CLI
/// runs headless and exits at once: the note says so and what to do, not only its status.
#[test]
fn a_cli_made_headless_by_ci_true_says_why_it_exited() {
    let dirs = Folders::new();
    let mock = GeminiMock::start(script());
    let env = cli_env(&dirs, &mock).into_iter().filter(|(k, _)| k != "CI" && k != "GITHUB_ACTIONS").collect();
    let nvim = launcher_with(&dirs, env);
    nvim.command("lua vim.env.CI = 'true'").unwrap();
    nvim.record_notify();
    nvim.command("PiIde open gemini").unwrap();
    let deadline = Instant::now() + AGENT_PATIENCE;
    let note = loop {
        if let Some(n) = nvim.notes().into_iter().find(|n| n.contains("exited with status")) {
            break n;
        }
        assert!(Instant::now() < deadline, "no exit note: {:?}\n{}", nvim.notes(), diagnosis(&InNeovim(&nvim, "gemini"), &dirs, &nvim));
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(note.contains("Gemini CLI exited with status 42: CI=true makes it headless; :let $CI = ''"), "{note}");
}

/// `:PiIde open gemini --approval-mode auto_edit`: its write_file lands with no openDiff (no
/// review, its own question not asked), pending at once (Gemini's); `:PiIde hunk accept` typed
/// in the file's window keeps it, and the file leaves the pending changes.
#[test]
fn in_auto_edit_mode_its_write_is_pending_and_a_hunk_accept_keeps_it() {
    let dirs = Folders::new();
    let mock = GeminiMock::start(script());
    let nvim = start_launcher(&dirs, &mock);
    let path = edit_file(&nvim, "auto.txt", &["one", "two"]);
    nvim.command("PiIde open gemini --approval-mode auto_edit").unwrap();
    let cli = InNeovim(&nvim, "gemini");
    let about = || diagnosis(&cli, &dirs, &nvim);
    wait_agent("the input line", about, || cli.screen().contains("Type your message"));
    ide_status_says_connected(&cli, &about);
    record_pending_events(&nvim);
    send_line(&cli, &format!("please-write {path}|one\\nTWO\\n"));
    wait_agent("the CLI to write the file itself", about, || read(&path).as_deref() == Some("one\nTWO\n"));
    wait_agent("the turn to end", about, || cli.screen().contains("Done with write_file."));
    assert!(!cli.screen().contains("Apply this change?"), "{}", about());
    no_review(&nvim);

    let change = wait_pending(&nvim, &path, "gemini", AGENT_PATIENCE, about);
    assert_eq!(change["kind"], "changed", "{change}");
    type_in_window_of(&nvim, &path, 2, "PiIde hunk accept");
    wait_decided(&nvim, &path);
    assert_eq!(read(&path).as_deref(), Some("one\nTWO\n"));
    assert!(mock.outside().is_empty(), "{:?}", mock.outside());
}
