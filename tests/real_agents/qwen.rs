//! The real Qwen Code TUI (npm `@qwen-code/qwen-code`, pinned by scripts/ensure-agents.sh) in
//! its IDE mode against a real Neovim with `setup({ qwen = true })`: it finds Neovim by the lock
//! file in `~/.qwen/ide` (src/agents/qwen.rs), run beside Neovim in tmux or launched by
//! `:PiIde open qwen` in Neovim's own terminal. Its model is a loopback chat-completions mock
//! (tests/support/openai_mock.rs). It asks in its own terminal ("Apply this change?") while the
//! change is reviewed in Neovim (openDiff); keys into Neovim are typed. Run in its asking mode
//! (`--approval-mode default`): its default, `auto`, writes without asking (pending changes).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::copilot_cli::agents_bin;
use crate::gemini::{a_persons_terminal, wait_agent, Folders, InNeovim, Screen, Tui};
use crate::harness::*;
use crate::openai_mock::{OpenAiMock, Reply};
use crate::terminal;
use pi_ide_testkit::nvim::Options;

/// Its input line's hint, on screen once it takes input.
const READY: &str = "Type your message";

/// One test's folders (gemini.rs): its `~/.qwen` holds its settings and the lock files.
impl Folders {
    fn for_qwen() -> Folders {
        let f = Folders::make("qwen-ide", ".qwen");
        // IDE mode on as its user turns it on; the OpenAI key chosen (no sign-in dialog); the
        // update check and statistics off (they would leave the machine).
        let settings = json!({"ide": {"enabled": true}, "security": {"auth": {"selectedType": "openai"}},
                              "general": {"enableAutoUpdate": false}, "privacy": {"usageStatisticsEnabled": false},
                              "telemetry": {"enabled": false}});
        std::fs::write(f.home.join(".qwen/settings.json"), settings.to_string()).unwrap();
        f
    }

    /// Neovim `nvim`'s lock file (the one naming its pid), once written.
    fn lock_of(&self, nvim: &Nvim) -> PathBuf {
        let mut found = None;
        wait_until("the lock file", PATIENCE, || {
            let entries = std::fs::read_dir(self.home.join(".qwen/ide")).into_iter().flatten().flatten();
            found = entries.map(|e| e.path()).find(|p| {
                let v: Option<Value> = std::fs::read_to_string(p).ok().and_then(|t| serde_json::from_str(&t).ok());
                v.is_some_and(|v| v["ppid"] == nvim.pid())
            });
            found.is_some()
        });
        found.unwrap()
    }
}

fn qwen() -> (PathBuf, PathBuf) {
    let bin = agents_bin();
    let (qwen, node_dir) = (bin.join("qwen"), bin.join("../node/bin"));
    assert!(qwen.exists(), "Qwen Code is not installed at {}: run scripts/test (scripts/ensure-agents.sh)", qwen.display());
    (qwen, node_dir)
}

/// Its command: asking before each edit.
fn command() -> Vec<String> {
    vec![qwen().0.display().to_string(), "--approval-mode".into(), "default".into()]
}

/// Its whole environment: offline, its model the mock, its HOME the test's.
fn cli_env(dirs: &Folders, mock: &OpenAiMock) -> Vec<(String, String)> {
    let (_, node_dir) = qwen();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut env = vec![
        ("PATH".into(), format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default())),
        ("HOME".into(), s(&dirs.home)),
        ("OPENAI_BASE_URL".into(), mock.base_url()),
        ("OPENAI_API_KEY".into(), "sk-dummy".into()),
        ("OPENAI_MODEL".into(), "mock-model".into()),
    ];
    env.extend(a_persons_terminal());
    env
}

/// The model: `what-is-selected` answered plainly; `please-write-<name>` writes a new file
/// `<name>.txt` ("new\n"); `please-change-h` reads h.txt and writes it anew; each write ends
/// with "Done with write_file.".
fn model(dirs: &Folders) -> OpenAiMock {
    let mock = OpenAiMock::start();
    let at = |name: &str| dirs.work.join(name).to_string_lossy().into_owned();
    mock.on_user("what-is-", Reply::text("Hello from the mock."));
    for name in ["new", "lost", "made"] {
        mock.on_user(&format!("please-write-{name}"), Reply::tool("write_file", json!({"file_path": at(&format!("{name}.txt")), "content": "new\n"})));
    }
    mock.on_user("please-change-h", Reply::tool("read_file", json!({"file_path": at("h.txt")})));
    mock.after_tool("read_file", Reply::tool("write_file", json!({"file_path": at("h.txt"), "content": "four\ntwo\nsix\n"})));
    mock.after_tool("write_file", Reply::text("Done with write_file."));
    mock
}

/// Types `text` and presses Enter (apart: a pasted Enter is a new line), again while the text
/// stays in the input line (an Enter typed while it starts up is dropped). Keys typed while a
/// turn ends are dropped too: typed again while the input line stays empty.
fn send_line(cli: &dyn Screen, text: &str) {
    let typed = || input_line(&cli.screen()).is_some_and(|l| l.contains(text));
    let empty = || input_line(&cli.screen()).is_some_and(|l| l.contains(READY));
    let mut last = std::time::Instant::now() - Duration::from_secs(5);
    wait_agent("the prompt typed", || cli.screen(), || {
        if !typed() && empty() && last.elapsed() > Duration::from_secs(3) {
            cli.type_text(text);
            last = std::time::Instant::now();
        }
        typed()
    });
    wait_agent("the prompt taken", || cli.screen(), || {
        cli.press_enter();
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while typed() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        !typed()
    });
}

/// The input line: the last line starting with ">" between the rules above its footer, or,
/// while a slash command's suggestions hide the footer (typed in pieces on a loaded machine),
/// the last such line right above the input box's lower rule.
fn input_line(screen: &str) -> Option<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let is_input = |l: &str| l.trim_start().starts_with('>');
    let Some(footer) = lines.iter().rposition(|l| l.contains("mock-model") && l.contains('➜')) else {
        let above_rule = lines.windows(2).rev().find(|w| is_input(w[0]) && w[1].starts_with('─'))?;
        return Some(above_rule[0].to_string());
    };
    let above = &lines[footer.saturating_sub(4)..footer];
    above.iter().rev().find(|l| is_input(l)).map(|l| l.to_string())
}

/// `/ide status` until it says it is connected to Neovim: its connect is a task deferred after
/// startup, and a slash command typed before its commands load goes to the model.
fn ide_status_says_connected(cli: &dyn Screen, about: &dyn Fn() -> String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let connected = || cli.screen().contains("Connected to Neovim");
    while !connected() {
        assert!(std::time::Instant::now() < deadline, "never connected to Neovim\n{}", about());
        send_line(cli, "/ide status");
        let asked = std::time::Instant::now();
        while !connected() && asked.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Its screen and the end of Neovim's log, for failure messages.
fn diagnosis(cli: &dyn Screen, nvim: &Nvim, mock: &OpenAiMock) -> String {
    let log = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    format!("{}\n--- the model's turns ---\n{:?}\n--- Neovim's log ---\n{}", cli.screen(), mock.turns_report(), tail.join("\n"))
}

/// A Neovim in the test's folder serving it (`qwen = true`), `more` added to its setup.
fn start_neovim(dirs: &Folders, more: &str) -> Nvim {
    let nvim = Nvim::start_with(Options {
        cwd: Some(dirs.work.clone()),
        // The same ~/.qwen as the CLI's.
        env: vec![("QWEN_HOME".into(), dirs.home.join(".qwen").to_string_lossy().into())],
        before: Some("require('pi_ide_test').record_notify()".into()),
        after: Some(format!("require('pi-ide').setup({{ qwen = true, log_level = 'debug'{more} }})")),
        ..Default::default()
    });
    nvim.command("set columns=200 lines=50").unwrap();
    nvim
}

/// A Neovim as [`start_neovim`] whose `:PiIde open qwen` runs it offline in a wide split.
fn start_launcher(dirs: &Folders, mock: &OpenAiMock) -> Nvim {
    let agent = format!("cmd = {{ {} }}, env = {{ {} }}", terminal::lua_list(command()), terminal::lua_fields(cli_env(dirs, mock)));
    start_neovim(dirs, &format!(", terminal = {{ provider = 'split', width = 160, agents = {{ qwen = {{ {agent} }} }} }}"))
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn reviews(nvim: &Nvim) -> u64 {
    nvim.t("reviews_shown", json!([])).as_u64().unwrap()
}

/// The text the model got with the prompt containing `prompt` (its context reminders too).
fn sent_with(mock: &OpenAiMock, prompt: &str) -> Option<String> {
    mock.completions().into_iter().map(|b| b["messages"].to_string()).find(|m| m.contains(prompt))
}

/// A new file it writes, reviewed in Neovim while its own question waits: the user's edit
/// of the proposal, accepted with a typed `:w`, is what it writes.
fn accepted_with_w(cli: &dyn Screen, nvim: &Nvim, about: &dyn Fn() -> String, name: &str, path: &Path) {
    send_line(cli, &format!("please-write-{name}"));
    wait_agent("the review in Neovim", about, || reviews(nvim) == 1);
    wait_agent("its own question", about, || cli.screen().contains("Apply this change?"));
    assert_eq!(read(path), None);
    come_to_review(nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    type_keys(nvim, "ggAmine<Esc>");
    type_accept(nvim, ":w<CR>");
    wait_agent("it writes the accepted text", about, || read(path).as_deref() == Some("newmine\n"));
    wait_agent("the turn to end", about, || cli.screen().contains("Done with write_file."));
}

/// Beside Neovim in tmux: it connects through the lock file, the context (file, selection)
/// reaches its model in a `<system-reminder>`, an edit accepted with a typed `:w` lands as
/// the user left it, `:q` leaves the file as it was (not made), and a yes in its terminal
/// after a hunk declined in Neovim (which it does not take from us: it writes its whole
/// proposal) is said in one line and its write is pending. The lock file goes on quit.
#[test]
fn the_real_tui_beside_neovim_connects_sees_the_context_and_a_yes_in_its_terminal_is_pending() {
    let dirs = Folders::for_qwen();
    let mock = model(&dirs);
    let h = dirs.work.join("h.txt");
    std::fs::write(&h, "one\ntwo\n").unwrap();
    let mut nvim = start_neovim(&dirs, "");
    let lock = dirs.lock_of(&nvim);
    edit_file(&nvim, "ctx.txt", &["alpha", "beta gamma", "delta"]);
    type_keys(&nvim, "2G6|ve");

    let cmd = command().iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ");
    let tui = Tui::run(&dirs.root, &dirs.work, &cmd, cli_env(&dirs, &mock), READY);
    let about = || diagnosis(&tui, &nvim, &mock);
    ide_status_says_connected(&tui, &about);

    send_line(&tui, "what-is-selected here");
    wait_agent("the answer", about, || tui.screen().contains("Hello from the mock."));
    let sent = sent_with(&mock, "what-is-selected").unwrap_or_default();
    assert!(sent.contains("<system-reminder>"), "{sent}");
    assert!(sent.contains(&format!("Path: {}", dirs.work.join("ctx.txt").display())), "{sent}");
    assert!(sent.contains("gamma"), "the selection: {sent}");
    type_keys(&nvim, "<Esc>");

    accepted_with_w(&tui, &nvim, &about, "new", &dirs.work.join("new.txt"));

    // :q rejects: the file it proposed is not made.
    send_line(&tui, "please-write-lost");
    wait_agent("the second review", about, || reviews(&nvim) == 1);
    come_to_review(&nvim);
    type_keys(&nvim, ":q<CR>");
    wait_agent("the rejection heard", about, || reviews(&nvim) == 0 && !tui.screen().contains("Apply this change?"));
    assert_eq!(read(&dirs.work.join("lost.txt")), None);

    // A hunk declined in Neovim, then yes in its terminal: it writes its whole proposal. Said
    // in one line; the write is pending, its two hunks decided again.
    send_line(&tui, "please-change-h");
    wait_agent("the third review", about, || reviews(&nvim) == 1);
    wait_agent("its own question", about, || tui.screen().contains("Apply this change?"));
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    nvim.wait_for("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') == 'four|two'", PATIENCE);
    tui.press_enter();
    wait_agent("its own proposal written", about, || read(&h).as_deref() == Some("four\ntwo\nsix\n"));
    nvim.wait_t("has_note", json!(["Qwen ignores your review of h.txt: its write is pending"]), PATIENCE);
    let change = wait_pending(&nvim, &h.to_string_lossy(), Duration::from_secs(90));
    assert_eq!(change["agent"], "qwen", "{change}");
    assert_eq!(change["hunks"], 2, "{change}");

    assert!(nvim.quit(PATIENCE));
    assert!(!lock.exists(), "the lock file is removed on quit");
}

fn clients(nvim: &Nvim) -> u64 {
    nvim.lua("return #require('pi-ide').info().clients").as_u64().unwrap()
}

/// `:PiIde open qwen` in one of two Neovims serving one folder connects it to that Neovim
/// (QWEN_CODE_IDE_SERVER_PORT; else it takes the newest lock file: the other one, started
/// last): the context is its file, the edit is reviewed there and accepted with a typed `:w`,
/// and `:PiIde stop` removes its lock file while the other's stays until it quits.
#[test]
fn piide_open_qwen_in_one_of_two_neovims_in_one_folder_connects_to_that_one() {
    let dirs = Folders::for_qwen();
    let mock = model(&dirs);
    let mut launcher = start_launcher(&dirs, &mock);
    let ours = dirs.lock_of(&launcher);
    let mut other = start_launcher(&dirs, &mock);
    let theirs = dirs.lock_of(&other);
    edit_file(&launcher, "mine.txt", &["mine"]);
    edit_file(&other, "theirs.txt", &["theirs"]);
    launcher.command("PiIde open qwen").unwrap();
    let cli = InNeovim(&launcher, "qwen");
    let about = || diagnosis(&cli, &launcher, &mock);
    wait_agent("the input line", about, || cli.screen().contains(READY));
    ide_status_says_connected(&cli, &about);
    assert_eq!((clients(&launcher), clients(&other)), (1, 0), "connected to the launcher only\n{}", about());

    send_line(&cli, "what-is-open here");
    wait_agent("the answer", about, || cli.screen().contains("Hello from the mock."));
    let sent = sent_with(&mock, "what-is-open").unwrap_or_default();
    assert!(sent.contains(&format!("Path: {}", dirs.work.join("mine.txt").display())), "{sent}");

    accepted_with_w(&cli, &launcher, &about, "made", &dirs.work.join("made.txt"));
    assert_eq!(reviews(&other), 0);

    type_keys(&launcher, "<C-\\><C-n>:PiIde stop<CR>");
    wait_until("the launcher's lock file gone", PATIENCE, || !ours.exists());
    assert!(theirs.exists());
    assert!(launcher.quit(PATIENCE) && other.quit(PATIENCE));
    assert!(!theirs.exists(), "the lock file is removed on quit");
}
