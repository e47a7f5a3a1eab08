//! The real GitHub Copilot CLI against a real Neovim. `setup({ copilot = true })` makes Neovim
//! write a lock file into `$COPILOT_HOME/ide/`, a folder the CLI shares; the CLI, started in
//! the same working folder, connects by itself. Its model is a loopback mock
//! (tests/support/openai_mock.rs) that calls the tools a real model would: `ide-get_diagnostics`,
//! and `edit`/`create`, for which the CLI asks Neovim to show the change (`open_diff`) while
//! its own "do you want to edit?" question waits. The CLI runs offline in tmux
//! (tests/support/copilot_cli.rs). Keys into Neovim are typed (`type_keys`): reviews only
//! accept what the user typed.


use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::*;
use crate::{copilot_cli, openai_mock, terminal};
use crate::copilot_cli::{CopilotCli, Launch, AGENT_PATIENCE};
use crate::openai_mock::{turn, user_input, OpenAiMock, Reply, Turn};
use pi_ide_testkit::nvim::{temp_dir, Options};

/// One test's folders: `copilot_home` (COPILOT_HOME for Neovim and the CLI both) and `work`
/// (the working folder of both). Removed when dropped.
struct Folders {
    root: PathBuf,
    copilot_home: PathBuf,
    work: PathBuf,
}

impl Folders {
    fn new() -> Folders {
        // Canonical: the CLI compares its cwd (a real path) with the lock file's folders exactly.
        let root = temp_dir("copilot").canonicalize().unwrap();
        let (copilot_home, work) = (root.join("copilot-home"), root.join("work"));
        std::fs::create_dir_all(&copilot_home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        Folders {
            root,
            copilot_home,
            work,
        }
    }
}

impl Drop for Folders {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Neovim in `work`, with Copilot on (setup() after the automatic start, so start again).
fn start_neovim(dirs: &Folders) -> Nvim {
    Nvim::start_with(Options {
        cwd: Some(dirs.work.clone()),
        env: vec![("COPILOT_HOME".into(), dirs.copilot_home.to_string_lossy().into())],
        after: Some(
            "require('pi-ide').stop() require('pi-ide').setup({ copilot = true }) require('pi-ide').start()"
                .into(),
        ),
        ..Default::default()
    })
}

fn start_cli(dirs: &Folders, model: &OpenAiMock, flags: &[&str]) -> CopilotCli {
    CopilotCli::start(Launch {
        scratch: &dirs.root,
        copilot_home: &dirs.copilot_home,
        cwd: &dirs.work,
        model_url: &model.base_url(),
        flags,
    })
}

/// The lock files in `$COPILOT_HOME/ide`, parsed, with their paths.
fn copilot_locks(dirs: &Folders) -> Vec<(PathBuf, Value)> {
    let locks = pi_ide_testkit::copilot::locks_in(&dirs.copilot_home.join("ide"));
    locks.into_iter().map(|l| (l.path, l.json)).collect()
}

/// Waits for Neovim's one Copilot lock file; if none comes, fails with Neovim's messages.
fn neovim_lock(nvim: &Nvim, dirs: &Folders) -> (PathBuf, Value) {
    let deadline = Instant::now() + AGENT_PATIENCE;
    while copilot_locks(dirs).is_empty() {
        if Instant::now() > deadline {
            let messages = nvim.lua("return vim.fn.execute('messages')");
            panic!("Neovim wrote no lock file into $COPILOT_HOME/ide with setup({{ copilot = true }}); its messages: {messages}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut locks = copilot_locks(dirs);
    assert_eq!(locks.len(), 1, "{locks:?}");
    locks.pop().unwrap()
}

/// Polls `cond` until it holds; on timeout, panics with the CLI's screen and log.
fn wait(cli: &CopilotCli, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + AGENT_PATIENCE;
    while !cond() {
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}\n{}", cli.diagnosis());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether Neovim lists a client that introduced itself as the Copilot CLI.
fn copilot_listed(nvim: &Nvim) -> bool {
    nvim.lua(
        "for _, c in ipairs(require('pi-ide').info().clients or {}) do \
           if c.name == 'copilot-cli' then return true end end return false",
    ) == json!(true)
}

/// Waits until the connection is up on both sides. The CLI connects at start, and again once
/// the folder is trusted: it notes "MCP Servers reloaded" when it lets go of the editor and
/// again when it is back, "1 server connected". Under load its lock-file watcher and its folder
/// scan may both connect then, the second replacing the first, and the second note reads
/// "0 servers" though the CLI ends connected (seen in CI): then its log is the witness. Before
/// the trust's reconnection is over, a review may be asked for twice (close_diff between).
fn wait_connected(nvim: &Nvim, cli: &CopilotCli) {
    wait(cli, "the CLI to connect again after the trust", || {
        let screen = cli.screen();
        screen.contains("1 server connected")
            || (screen.matches("MCP Servers reloaded").count() >= 2 && cli.log_says_connected())
    });
    wait(cli, "Neovim to list copilot-cli among its clients", || {
        copilot_listed(nvim)
    });
}

/// Neovim and the CLI in one folder, connected, the folder trusted, the CLI ready for input.
/// Fields drop in order: the CLI first, then Neovim, the model, the folders.
struct World {
    cli: CopilotCli,
    nvim: Nvim,
    model: OpenAiMock,
    dirs: Folders,
}

fn connected() -> World {
    connected_with(&[], &[])
}

/// As `connected`, the CLI run with these flags, and these files (name, text) in the folder
/// before it starts (the project's own: what it writes is judged against them).
fn connected_with(flags: &[&str], files: &[(&str, &str)]) -> World {
    let dirs = Folders::new();
    for (name, text) in files {
        std::fs::write(dirs.work.join(name), text).unwrap();
    }
    let model = OpenAiMock::start();
    let nvim = start_neovim(&dirs);
    neovim_lock(&nvim, &dirs);
    let cli = start_cli(&dirs, &model, flags);
    cli.trust_the_folder();
    wait_connected(&nvim, &cli);
    World {
        cli,
        nvim,
        model,
        dirs,
    }
}

impl World {
    /// Waits for a request to the model whose newest turn satisfies `pred`; returns its body.
    fn model_got(&self, what: &str, pred: impl Fn(&Turn) -> bool) -> Value {
        let mut found = None;
        wait(&self.cli, &format!("the model to get {what}"), || {
            found = self
                .model
                .completions()
                .into_iter()
                .find(|b| pred(&turn(b)));
            found.is_some()
        });
        found.unwrap()
    }

    fn reviews_shown(&self) -> u64 {
        self.nvim.t("reviews_shown", json!([])).as_u64().unwrap()
    }

    /// Waits until Neovim shows `n` reviews.
    fn wait_reviews(&self, n: u64) {
        wait(
            &self.cli,
            &format!("{n} review(s) on Neovim's screen"),
            || self.reviews_shown() == n,
        );
    }

    /// A file in the working folder with this text; its absolute path.
    fn file(&self, name: &str, text: &str) -> String {
        file_with(&self.nvim, name, text)
    }

    /// Has the model edit `path` (replace `old` by `new`) and waits until Neovim shows the
    /// review, while the CLI asks its own question.
    fn model_edits(&self, path: &str, old: &str, new: &str) {
        let args = json!({"path": path, "old_str": old, "new_str": new});
        self.model.on_user("please-edit", Reply::tool("edit", args));
        self.model
            .after_tool("edit", Reply::text("The edit is done."));
        self.cli.send_line("please-edit the file");
        self.cli.wait_text(&format!("Do you want to edit {path}?"));
        self.wait_reviews(1);
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[test]
fn the_cli_connects_to_neovim_by_its_lock_file_in_the_shared_folder() {
    let dirs = Folders::new();
    let model = OpenAiMock::start();
    let nvim = start_neovim(&dirs);
    let (path, lock) = neovim_lock(&nvim, &dirs);
    // What the CLI requires of a lock file (a schema check, then pid, socket, folder).
    assert_eq!(lock["scheme"], "unix", "{lock}");
    assert_eq!(lock["pid"], json!(nvim.pid()), "{lock}");
    let folders = lock["workspaceFolders"]
        .as_array()
        .expect("workspaceFolders");
    assert!(folders.contains(&json!(dirs.work)), "{lock}");
    assert!(lock["ideName"].is_string(), "{lock}");
    assert!(lock["timestamp"].is_u64(), "{lock}");
    let headers = lock["headers"].as_object().expect("headers");
    assert!(
        !headers.is_empty() && headers.values().all(Value::is_string),
        "{lock}"
    );
    // Trust is the user's to give: the CLI's own prompt must come (answered below).
    assert_ne!(lock["isTrusted"], json!(true), "{lock}");
    // Its headers are the key to the socket: for the user's eyes only.
    let socket = Path::new(lock["socketPath"].as_str().expect("socketPath"));
    assert!(std::os::unix::fs::FileTypeExt::is_socket(
        &std::fs::metadata(socket).unwrap().file_type()
    ));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "lock file mode {mode:o}");

    let cli = start_cli(&dirs, &model, &[]);
    cli.trust_the_folder();
    wait_connected(&nvim, &cli);
    // The model is offered Neovim's two tools for it, under the CLI's names.
    cli.send_line("hello there");
    wait(&cli, "a first request to the model", || {
        !model.completions().is_empty()
    });
    let tools = model.offered_tools();
    for t in ["ide-get_diagnostics", "ide-get_selection"] {
        assert!(tools.iter().any(|n| n == t), "{t} not offered: {tools:?}");
    }
    cli.wait_text(openai_mock::DEFAULT_TEXT);
}

#[test]
fn the_cli_connects_to_a_neovim_started_after_it() {
    let dirs = Folders::new();
    let model = OpenAiMock::start();
    let cli = start_cli(&dirs, &model, &[]);
    cli.trust_the_folder();
    cli.wait_text("0 servers connected");
    // While unconnected, the CLI watches its lock file folder.
    let nvim = start_neovim(&dirs);
    cli.wait_text("Connected to ");
    wait(&cli, "Neovim to list copilot-cli among its clients", || {
        copilot_listed(&nvim)
    });
}

#[test]
fn the_models_get_diagnostics_reaches_neovim_and_neovims_answer_reaches_the_model() {
    let w = connected();
    let path = edit_file(
        &w.nvim,
        "main.rs",
        &["fn main() {", "    let unused = 1;", "}"],
    );
    w.nvim.lua(
        "vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, {{ lnum = 1, col = 8, end_col = 14, \
         severity = vim.diagnostic.severity.ERROR, message = 'unused variable: `unused`', source = 'rustc' }})",
    );
    w.model.on_user(
        "check-diagnostics",
        Reply::tool("ide-get_diagnostics", json!({})),
    );
    w.model.after_tool(
        "ide-get_diagnostics",
        Reply::text("I read the diagnostics."),
    );
    w.cli.send_line("check-diagnostics please");
    let body = w.model_got(
        "the result of ide-get_diagnostics",
        |t| matches!(t, Turn::ToolResult { name, .. } if name == "ide-get_diagnostics"),
    );
    let Turn::ToolResult { content, .. } = turn(&body) else {
        unreachable!()
    };
    let files: Value = serde_json::from_str(&content).unwrap_or_else(|e| panic!("{e}: {content}"));
    let file = files
        .as_array()
        .and_then(|a| a.iter().find(|f| f["filePath"] == path.as_str()))
        .unwrap_or_else(|| panic!("no entry for {path}: {files}"));
    let d = &file["diagnostics"][0];
    assert_eq!(d["message"], "unused variable: `unused`", "{files}");
    assert_eq!(d["severity"], "Error", "{files}");
    assert_eq!(
        d["range"]["start"],
        json!({"line": 1, "character": 8}),
        "{files}"
    );
    // The CLI read the same answer for its own summary (it counts severities by these names).
    w.cli.wait_text("1 error");
    w.cli.wait_text("I read the diagnostics.");
}

#[test]
fn an_edit_shows_in_neovim_and_w_there_makes_the_cli_write_it() {
    let w = connected();
    let path = w.file("hello.txt", "hello\n");
    w.model_edits(&path, "hello", "hello world");
    // The CLI writes the file itself, once Neovim says SAVED; nothing before.
    assert_eq!(read(&path).as_deref(), Some("hello\n"));
    type_accept(&w.nvim, ":w<CR>");
    wait(&w.cli, "the CLI to write the file", || {
        read(&path).as_deref() == Some("hello world\n")
    });
    w.model_got(
        "the result of the edit",
        |t| matches!(t, Turn::ToolResult { name, .. } if name == "edit"),
    );
    w.cli.wait_text("The edit is done.");
    w.wait_reviews(0);
}

/// The middle of three hunks rejected: the CLI writes its whole proposal, then Neovim sets the
/// file to hunks 1 and 3. What its model gets back is the CLI's own tool result: the answer's
/// message naming the declined hunk never reaches it (CLI 1.0.102), and Neovim says so.
#[test]
fn a_partial_acceptance_is_set_over_the_clis_write_and_its_model_is_not_told() {
    let w = connected();
    w.nvim.record_notify();
    let path = w.file("p.txt", "a\nb\nc\nd\ne\nf\ng\n");
    w.model_edits(&path, "a\nb\nc\nd\ne\nf\ng", "A\nb\nc\nD\ne\nf\nG");
    wait(&w.cli, "the hunks counted", || {
        w.nvim.lua("return (require('pi-ide.features.review').current() or {}).hunks ~= nil") == json!(true)
    });
    type_accept(&w.nvim, "4G:PiIde hunk reject<CR>:w<CR>");
    wait(&w.cli, "hunks 1 and 3 only", || read(&path).as_deref() == Some("A\nb\nc\nd\ne\nf\nG\n"));
    let result = w.model_got("the result of the edit", |t| matches!(t, Turn::ToolResult { name, .. } if name == "edit"));
    assert!(!result.to_string().contains("declined"), "the model was told after all: {result}");
    wait(&w.cli, "the notice", || w.nvim.notes().iter().any(|n| n.contains("written over it") && n.contains("Its model is not told")));
    w.cli.wait_text("The edit is done.");
    assert_eq!(read(&path).as_deref(), Some("A\nb\nc\nd\ne\nf\nG\n"));
}

/// With `--allow-all-tools` the CLI asks nobody (no open_diff): its edit of three hunks lands
/// on disk by itself, the file open in Neovim, and is pending at once; `:PiIde hunk reject`
/// typed in the file's window on the middle hunk undoes that hunk alone, on disk.
#[test]
fn with_allow_all_tools_the_clis_edit_lands_unreviewed_and_is_pending_hunk_by_hunk() {
    let w = connected_with(&["--allow-all-tools"], &[("p.txt", "a\nb\nc\nd\ne\nf\ng\n")]);
    w.nvim.t("record_events", json!(["PiIdeChangePending"]));
    w.nvim.command("edit p.txt").unwrap();
    let path = w.dirs.work.join("p.txt").to_string_lossy().into_owned();
    watching(&w.nvim);
    let args = json!({"path": path, "old_str": "a\nb\nc\nd\ne\nf\ng", "new_str": "A\nb\nc\nD\ne\nf\nG"});
    w.model.on_user("please-edit", Reply::tool("edit", args));
    w.model.after_tool("edit", Reply::text("The edit is done."));
    w.cli.send_line("please-edit the file");
    wait(&w.cli, "the CLI to write the file by itself", || {
        read(&path).as_deref() == Some("A\nb\nc\nD\ne\nf\nG\n")
    });
    w.cli.wait_text("The edit is done.");
    assert_eq!(w.reviews_shown(), 0, "a review was asked for");
    assert!(!w.cli.screen().contains("Do you want to edit"), "{}", w.cli.screen());
    // Pending, the CLI's, three hunks; the window shows what landed.
    let change = wait_pending(&w.nvim, &path, AGENT_PATIENCE);
    let seen = (&change["agent"], &change["kind"], &change["hunks"]);
    assert_eq!(seen, (&json!("copilot"), &json!("changed"), &json!(3)), "{change}");
    let told = w.nvim.t("count_events", json!(["PiIdeChangePending", "agent", "copilot"]));
    assert_ne!(told, json!(0), "no PiIdeChangePending");
    w.nvim.wait_for("vim.api.nvim_buf_get_lines(0, 0, -1, false)[4] == 'D'", PATIENCE);
    type_keys(&w.nvim, "gg]h:PiIde hunk reject<CR>");
    wait(&w.cli, "the middle hunk undone on disk", || {
        read(&path).as_deref() == Some("A\nb\nc\nd\ne\nf\nG\n")
    });
    wait(&w.cli, "two hunks left pending", || {
        pending_change(&w.nvim, &path)["hunks"] == json!(2)
    });
}

#[test]
fn q_in_the_proposal_rejects_the_edit_and_the_file_stays_as_it_was() {
    let w = connected();
    let path = w.file("keep.txt", "keep me\n");
    w.model_edits(&path, "keep me", "lost");
    type_keys(&w.nvim, ":q<CR>");
    // A rejection ends the CLI's turn: it says so, and asks the model nothing more.
    w.cli.wait_text("The user rejected this tool call.");
    w.wait_reviews(0);
    assert_eq!(read(&path).as_deref(), Some("keep me\n"));
    assert!(
        w.model.tool_results("edit").is_empty(),
        "{:?}",
        w.model.tool_results("edit")
    );
}

#[test]
fn a_new_file_accepted_in_neovim_is_created_by_the_cli() {
    let w = connected();
    let path = w.dirs.work.join("new.txt").to_string_lossy().into_owned();
    let args = json!({"path": path, "file_text": "brand new\n"});
    w.model
        .on_user("please-create", Reply::tool("create", args));
    w.model
        .after_tool("create", Reply::text("The file is created."));
    w.cli.send_line("please-create a file");
    w.cli.wait_text(&format!("Do you want to create {path}?"));
    w.wait_reviews(1);
    assert_eq!(read(&path), None, "created before the review was answered");
    type_accept(&w.nvim, ":w<CR>");
    wait(&w.cli, "the CLI to create the file", || {
        read(&path).as_deref() == Some("brand new\n")
    });
    w.cli.wait_text("The file is created.");
}

#[test]
fn answering_in_the_terminal_first_closes_the_review_in_neovim() {
    let w = connected();
    let path = w.file("term.txt", "one\n");
    w.model_edits(&path, "one", "two");
    // "1. Yes" in the CLI: it writes the file and tells Neovim to close its view (close_diff).
    w.cli.press("1");
    wait(&w.cli, "the CLI to write the file", || {
        read(&path).as_deref() == Some("two\n")
    });
    w.wait_reviews(0);
    w.cli.wait_text("The edit is done.");
}

#[test]
fn the_selection_in_neovim_reaches_the_cli_and_its_model() {
    let w = connected();
    edit_file(&w.nvim, "sel.txt", &["alpha", "beta", "gamma"]);
    // Line 2 selected, as the user selects it.
    type_keys(&w.nvim, "jV");
    // The CLI shows the selection beside its input line (1-based lines).
    w.cli.wait_text("@sel.txt:2");
    w.cli.send_line("what-is-selected here");
    let body = w.model_got(
        "the prompt with the selection",
        |t| matches!(t, Turn::User(s) if s.contains("what-is-selected")),
    );
    let input = user_input(&body);
    assert!(
        input.contains("<ide_selection>") && input.contains("beta"),
        "{input}"
    );
    assert!(
        !input.contains("alpha") && !input.contains("gamma"),
        "{input}"
    );
}

#[test]
fn the_workspace_folders_changing_keeps_the_cli_connected() {
    // The CLI watches the lockfile it connected through: a rewrite by rename reads to it as
    // the editor going away. New folders are written into the same file.
    let w = connected();
    let cwd = w.nvim.cwd.canonicalize().unwrap().to_string_lossy().into_owned();
    let wrote = w.nvim.lua_with(
        "return require('pi-ide.core.native').get().set_workspace_folders({ ..., '/tmp' })",
        vec![cwd.clone().into()],
    );
    assert_eq!(wrote, json!(true));
    let (_, lock) = neovim_lock(&w.nvim, &w.dirs);
    assert_eq!(lock["workspaceFolders"], json!([cwd, "/tmp"]));
    // Still connected: a tool call of the model's goes through, and no loss was shown.
    w.model.on_user("check-again", Reply::tool("ide-get_diagnostics", json!({})));
    w.model.after_tool("ide-get_diagnostics", Reply::text("Checked again."));
    w.cli.send_line("check-again please");
    w.cli.wait_text("Checked again.");
    assert!(!w.cli.screen().contains("connection lost"), "{}", w.cli.screen());
}

/// `:PiIde open copilot` in LazyVim at 80 columns (a float), with `copilot` off: the CLI starts
/// in Neovim's folder, Neovim serves it from then on, the CLI connects by itself, its edit is
/// reviewed in Neovim, and hiding and showing its terminal keeps the session.
#[test]
fn the_cli_launched_in_lazyvim_by_piide_open_connects_and_its_edit_is_reviewed() {
    let dirs = Folders::new();
    let model = OpenAiMock::start();
    let copilot_home = ("COPILOT_HOME".to_string(), dirs.copilot_home.display().to_string());
    let nvim = Nvim::start_lazyvim(pi_ide_testkit::tui::LazyOptions {
        env: vec![copilot_home],
        cols: 80,
        rows: 30,
        ..Default::default()
    });
    assert!(copilot_locks(&dirs).is_empty(), "copilot is off until the CLI is launched");
    let home = dirs.root.join("cli-home");
    std::fs::create_dir_all(&home).unwrap();
    let env = terminal::lua_fields(copilot_cli::cli_env(&home, &dirs.copilot_home, &model.base_url()));
    nvim.lua(&format!(
        "require('pi-ide').setup({{ terminal = {{ provider = 'float', agents = {{ copilot = {{ cmd = {{ {:?}, '--log-level', 'debug' }}, env = {{ {} }} }} }} }} }})",
        copilot_cli::copilot_binary().display().to_string(),
        env
    ));
    // Rows joined: the CLI wraps its lines at the float's width.
    let screen = || terminal::text(&nvim, "copilot");
    let wait_for = |what: &str, cond: &dyn Fn() -> bool| {
        let deadline = Instant::now() + AGENT_PATIENCE;
        while !cond() {
            if Instant::now() > deadline {
                let state = nvim.lua("local s, w = require('pi-ide.features.review').count() return { shown = s, waiting = w, mode = vim.api.nvim_get_mode().mode, messages = vim.fn.execute('messages') }");
                let log = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                panic!("timed out waiting for {what}\n--- the CLI in Neovim ---\n{}\n--- Neovim ---\n{state}\n{}", terminal::screen(&nvim, "copilot"), tail.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    nvim.command("PiIde open copilot").unwrap();
    assert_eq!(copilot_locks(&dirs).len(), 1, "Neovim serves the CLI it launched");
    wait_for("the trust question", &|| screen().contains("Do you trust the files in this folder?"));
    terminal::type_text(&nvim, "copilot", "1");
    // It connects at start and again once the folder is trusted; "1 server connected" says the
    // second connection's tools are registered, or, when its two connections raced (under
    // load), a second reload note and its log (as wait_connected).
    wait_for("the CLI's note that Neovim's tools are registered", &|| {
        let screen = screen();
        screen.contains("1 server connected")
            || (screen.matches("MCP Servers reloaded").count() >= 2 && copilot_cli::log_says_connected(&dirs.copilot_home))
    });
    wait_for("Neovim to list copilot-cli", &|| copilot_listed(&nvim));

    // An edit from the terminal in Neovim is reviewed in the same Neovim.
    let path = file_with(&nvim, "launched.txt", "hello\n");
    nvim.command("wincmd p").unwrap();
    model.on_user("please-edit", Reply::tool("edit", json!({"path": path, "old_str": "hello", "new_str": "hello world"})));
    model.after_tool("edit", Reply::text("The edit is done."));
    nvim.command("PiIde open copilot").unwrap();
    terminal::type_text(&nvim, "copilot", "please-edit the file");
    wait_for("the prompt typed", &|| screen().contains("please-edit the file"));
    terminal::type_text(&nvim, "copilot", "\r");
    wait_for("the review", &|| nvim.t("reviews_shown", json!([])) == json!(1));
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(read(&path).as_deref(), Some("hello\n"));
    type_accept(&nvim, ":w<CR>");
    wait_for("the CLI to write the file", &|| read(&path).as_deref() == Some("hello world\n"));
    wait_for("the CLI to hear it", &|| screen().contains("The edit is done."));

    // Hidden and shown: the same process, still connected.
    let job = terminal::job(&nvim, "copilot");
    nvim.command("PiIde close").unwrap();
    assert!(!terminal::shown(&nvim, "copilot"));
    nvim.command("PiIde open copilot").unwrap();
    assert_eq!(terminal::job(&nvim, "copilot"), job);
    assert!(copilot_listed(&nvim));
    assert!(screen().contains("The edit is done."), "not the same session");
}
