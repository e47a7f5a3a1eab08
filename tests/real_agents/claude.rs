//! The real Claude Code CLI (the version scripts/ensure-agents.sh pins) against a real Neovim
//! running this plugin with `claude_code = true`, offline: a loopback mock of Anthropic's
//! Messages API plays the model (tests/support/anthropic_mock.rs), Claude Code's interactive TUI
//! runs in a tmux server of its own, and the test types into both as a user would.
//!
//! Claude Code has no editor bridge in print mode (`-p`, even with `--ide`), hence the TUI.
//! It finds Neovim through the lockfile the plugin writes to `$CLAUDE_CONFIG_DIR/ide/` (it reads
//! the port's auth token there) and connects at start because `CLAUDE_CODE_SSE_PORT` names that
//! port. While a review is open in Neovim, Claude Code's TUI shows its own permission question
//! ("Opened changes in Neovim ⧉ … Do you want to create hello.txt?"); the test leaves it alone:
//! the decision made in Neovim (`:w` / `:q`) answers it, as it does for a user.


use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::anthropic_mock::{result_of, system_texts, turn_of, Mock, Reply, Turn};
use crate::harness::*;
use crate::terminal;
use pi_ide_testkit::nvim::{plugin_root, temp_dir, Options};

/// Claude Code starts, renders and calls the editor in well under this, even on a loaded
/// 2-core machine; it only costs time when something is broken.
const WAIT: Duration = Duration::from_secs(60);

/// Longer than 20 characters: Claude Code remembers an approved key by its last 20.
const API_KEY: &str = "sk-ant-api03-offline-mock-key-for-tests";

const ASK: &str = "What did I select";
const CREATE: &str = "Create hello.txt";
const CHANGE: &str = "Change hello to goodbye in hello.txt";
const WHY: &str = "Why did the change not happen";
const THREE: &str = "Change three lines of h.txt";
/// h.txt before and after THREE's Write: three one-line hunks.
const H_BEFORE: &str = "a\nb\nc\nd\ne\nf\ng\n";
const H_PROPOSED: &str = "A\nb\nc\nD\ne\nf\nG\n";
const PROPOSED: &str = "hello from claude\n";
const CREATE_NEW: &str = "Create new.txt";
const TWO: &str = "Change two lines of two.txt";
/// two.txt before and after TWO's Write: two one-line hunks, neither on the first line.
const TWO_BEFORE: &str = "a\nb\nc\nd\ne\nf\ng\n";
const TWO_PROPOSED: &str = "a\nB\nc\nd\ne\nF\ng\n";
const NEW_TEXT: &str = "written without asking\n";
const USER_LINE: &str = "added in the review";

/// The pinned CLI: `$PI_IDE_AGENTS/claude`, else `.deps/agents/node_modules/.bin/claude`.
fn claude_binary() -> PathBuf {
    let bin = std::env::var_os("PI_IDE_AGENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| plugin_root().join(".deps/agents/node_modules/.bin"));
    let claude = bin.join("claude");
    assert!(
        claude.is_file(),
        "Claude Code is not installed at {} (scripts/test installs @anthropic-ai/claude-code@2.1.330 \
         there through scripts/ensure-agents.sh; or point PI_IDE_AGENTS at a bin folder holding `claude`)",
        claude.display()
    );
    claude
}

/// Claude Code's own folders (HOME, CLAUDE_CONFIG_DIR, TMPDIR, the tmux socket): removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let s = Scratch(temp_dir("claude"));
        for d in ["home", "config", "tmp", "tmux"] {
            std::fs::create_dir_all(s.0.join(d)).unwrap();
        }
        s
    }
    fn path(&self, sub: &str) -> PathBuf {
        self.0.join(sub)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The config that lets Claude Code start straight into its prompt: onboarding done (else it
/// checks api.anthropic.com and stops there), the key approved (else it asks), the folder trusted
/// (else the trust dialog), and manual permissions: in auto mode (its default) an edit is never
/// shown for review; `disableAutoMode` also hides its "make auto mode your default?" offer.
fn write_claude_config(config: &Path, cwd: &Path) {
    let project = json!({"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true});
    let mut projects = serde_json::Map::new();
    for p in [cwd.to_path_buf(), cwd.canonicalize().unwrap()] {
        projects.insert(p.display().to_string(), project.clone());
    }
    let key_tail = &API_KEY[API_KEY.len() - 20..];
    let state = json!({"hasCompletedOnboarding": true, "theme": "dark", "numStartups": 1,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []}, "projects": projects});
    std::fs::write(config.join(".claude.json"), state.to_string()).unwrap();
    let settings = json!({"permissions": {"defaultMode": "default", "disableAutoMode": "disable"}});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
}

/// Claude Code's whole environment (it starts from an empty one): its folders, the mock model,
/// the editor's port, and everything that would reach the internet switched off. The proxy
/// variables point at the mock, which refuses and records whatever tries to leave anyway.
fn claude_env(s: &Scratch, mock: &Mock, ide_port: u16) -> Vec<(String, String)> {
    let path = |d: &str| s.path(d).display().to_string();
    let mut env: Vec<(&str, String)> = vec![
        (
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        ),
        ("HOME", path("home")),
        ("CLAUDE_CONFIG_DIR", path("config")),
        ("TMPDIR", path("tmp")),
        ("TERM", "xterm-256color".into()),
        ("LANG", "C.UTF-8".into()),
        ("ANTHROPIC_BASE_URL", mock.url()),
        ("ANTHROPIC_API_KEY", API_KEY.into()),
        ("CLAUDE_CODE_SSE_PORT", ide_port.to_string()),
        ("CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        // Else it fetches its plugin marketplace (downloads.claude.ai, then a git clone from GitHub).
        (
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
            "1".into(),
        ),
    ];
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        env.push((var, mock.url()));
    }
    for var in ["NO_PROXY", "no_proxy"] {
        env.push((var, "127.0.0.1,localhost".into()));
    }
    env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Claude Code's TUI in a tmux server of its own (`-L`, socket in the scratch folder).
struct Tui {
    socket: String,
    dir: PathBuf,
    pid: Option<i32>,
}

impl Tui {
    fn start(
        s: &Scratch,
        cwd: &Path,
        env: &[(String, String)],
        program: &Path,
        args: &[String],
    ) -> Tui {
        let conf = s.path("tmux.conf");
        // A dead pane stays, so a crash is still on screen for the failure message.
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        let mut tui = Tui {
            socket: format!("pi-ide-claude-{}", std::process::id()),
            dir: s.path("tmux"),
            pid: None,
        };
        let mut cmd: Vec<String> = [
            "-f",
            conf.to_str().unwrap(),
            "new-session",
            "-d",
            "-s",
            "claude",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        cmd.extend(["-x", "120", "-y", "40", "-c"].map(String::from));
        cmd.push(cwd.display().to_string());
        // Several arguments: tmux runs them without a shell; `env -i` drops the test's own
        // environment (an ANTHROPIC_API_KEY of the developer's, a TMUX, ...).
        cmd.extend(["env", "-i"].map(String::from));
        cmd.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        cmd.push(program.display().to_string());
        cmd.extend(args.iter().cloned());
        let out = tui.tmux(&cmd.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pid = tui.tmux(&["display-message", "-p", "-t", "claude", "#{pane_pid}"]);
        tui.pid = String::from_utf8_lossy(&pid.stdout).trim().parse().ok();
        tui
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-u")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TMUX_TMPDIR", &self.dir)
            .env("LANG", "C.UTF-8")
            .env_remove("TMUX")
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux (needed to drive Claude Code's TUI): {e}"))
    }

    /// What the terminal shows now, wrapped lines joined.
    fn screen(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-J", "-t", "claude"])
                .stdout,
        )
        .into_owned()
    }

    fn dead(&self) -> bool {
        let out = self.tmux(&["display-message", "-p", "-t", "claude", "#{pane_dead}"]);
        String::from_utf8_lossy(&out.stdout).trim() != "0"
    }

    /// Types a prompt; presses Enter once it is in the input box (a burst with Enter inside
    /// could be taken for a paste).
    fn type_prompt(&self, rig: &Rig, text: &str) {
        assert!(self
            .tmux(&["send-keys", "-t", "claude", "-l", text])
            .status
            .success());
        // (The input line may start with a chip such as "[⧉ 2 lines selected]".)
        let typed = || {
            self.screen()
                .lines()
                .any(|l| l.starts_with('❯') && l.trim_end().ends_with(text))
        };
        rig.wait(&format!("the prompt {text:?} typed"), typed);
        assert!(self
            .tmux(&["send-keys", "-t", "claude", "Enter"])
            .status
            .success());
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // Claude Code first (it is tmux's child, not ours), then the server.
        if let Some(pid) = self.pid {
            // SAFETY: a plain kill(2) of the process this test started in the pane.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.tmux(&["kill-server"]);
    }
}

/// Everything one run needs; dropped in field order: Claude Code, Neovim, the mock, the folders.
struct Rig {
    tui: Option<Tui>,
    nvim: Nvim,
    mock: Mock,
    scratch: Scratch,
}

impl Rig {
    fn tui(&self) -> &Tui {
        self.tui.as_ref().expect("Claude Code is running")
    }

    /// Waits until Claude Code is connected, shows its prompt in manual mode, and its IDE client
    /// is set up. It shows the prompt before that: a prompt sent then gets Claude Code's own diff
    /// instead of Neovim's (seen in loaded runs, ~0.4 s after it connected). Its log's last word
    /// on the IDE's connection (2.1.330) says it is set up.
    fn wait_ready(&self) {
        self.wait_ready_in("manual mode on");
    }

    /// wait_ready, for Claude Code started in the mode whose line on its screen is `mode`.
    fn wait_ready_in(&self, mode: &str) {
        let nvim = &self.nvim;
        self.wait("Claude Code connected to Neovim", || claude_connected(nvim));
        self.wait(&format!("Claude Code's prompt, {mode:?}"), || {
            self.tui().screen().contains(mode)
        });
        let debug = self.scratch.path("claude-debug.txt");
        self.wait("Claude Code's IDE client set up", || {
            std::fs::read_to_string(&debug)
                .is_ok_and(|log| log.contains("MCP server \"ide\": Channel notifications"))
        });
    }

    /// Polls `cond` until it holds; on time-out (or if Claude Code died) fails with the state of
    /// every side.
    fn wait(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !cond() {
            let dead = self.tui.as_ref().is_some_and(Tui::dead);
            if dead || Instant::now() > deadline {
                panic!(
                    "{} waiting for: {what}\n{}",
                    if dead {
                        "Claude Code exited"
                    } else {
                        "timed out"
                    },
                    self.report()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until Claude Code's turn is over and `text` is on its screen.
    fn wait_idle_with(&self, text: &str) {
        self.wait(&format!("Claude Code idle, showing {text:?}"), || {
            let s = self.tui().screen();
            // Its footer's hint, or in acceptEdits mode that mode's line.
            let footer = s.contains("? for shortcuts") || s.contains("accept edits on");
            s.contains(text) && footer && !s.contains("esc to interrupt")
        });
    }

    /// The screen, the mock's requests, and the tails of Claude Code's and the plugin's logs.
    fn report(&self) -> String {
        let tail = |p: PathBuf| {
            let t = std::fs::read_to_string(&p).unwrap_or_default();
            let lines: Vec<&str> = t.lines().collect();
            lines[lines.len().saturating_sub(40)..].join("\n")
        };
        format!(
            "--- Claude Code's screen ---\n{}{}\n--- the mock model's requests ---\n{}--- Claude Code's debug log ---\n{}\n--- pi-ide.log ---\n{}",
            self.tui.as_ref().map(Tui::screen).unwrap_or_default(),
            terminal::screen(&self.nvim, "claude"),
            self.mock.summary(),
            tail(self.scratch.path("claude-debug.txt")),
            tail(self.nvim.home.join("state/nvim/pi-ide.log")),
        )
    }

    /// The latest turn the mock model got whose last user block is `prompt`.
    fn turn_for(&self, prompt: &str) -> Value {
        let want = Turn::Prompt(prompt.to_owned());
        let mut found = None;
        self.wait(&format!("the model asked about {prompt:?}"), || {
            found = self
                .mock
                .turns()
                .into_iter()
                .rev()
                .find(|t| turn_of(t) == want);
            found.is_some()
        });
        found.unwrap()
    }

    /// The latest turn carrying a result for the model's `name` call.
    fn turn_for_result(&self, name: &str) -> Value {
        let mut found = None;
        self.wait(&format!("the model got the {name} result"), || {
            found = self
                .mock
                .turns()
                .into_iter()
                .rev()
                .find(|t| result_of(t, name).is_some());
            found.is_some()
        });
        found.unwrap()
    }
}

/// What the model does: a Write for CREATE, an Edit for CHANGE, a short text for the rest.
fn script(hello: PathBuf) -> impl Fn(&Turn) -> Reply + Send + Sync + 'static {
    move |turn| match turn {
        Turn::Prompt(p) if p == CREATE => Reply::Tool {
            name: "Write".into(),
            input: json!({"file_path": hello, "content": PROPOSED}),
        },
        Turn::Prompt(p) if p == CHANGE => Reply::Tool {
            name: "Edit".into(),
            input: json!({"file_path": hello, "old_string": "hello", "new_string": "goodbye"}),
        },
        Turn::Prompt(p) if p == THREE => Reply::Tool {
            name: "Write".into(),
            input: json!({"file_path": hello.with_file_name("h.txt"), "content": H_PROPOSED}),
        },
        Turn::Prompt(p) if p == CREATE_NEW => Reply::Tool {
            name: "Write".into(),
            input: json!({"file_path": hello.with_file_name("new.txt"), "content": NEW_TEXT}),
        },
        Turn::Prompt(p) if p == TWO => Reply::Tool {
            name: "Write".into(),
            input: json!({"file_path": hello.with_file_name("two.txt"), "content": TWO_PROPOSED}),
        },
        Turn::Prompt(p) if p == ASK => Reply::Text("Noted your selection.".into()),
        Turn::ToolResult { text, .. } if text.contains("two.txt") => Reply::Text("Two lines changed.".into()),
        Turn::ToolResult { .. } => Reply::Text("The file is written.".into()),
        _ => Reply::Text("Understood.".into()),
    }
}

/// Whether a client that calls itself Claude Code is connected to Neovim.
fn claude_connected(nvim: &Nvim) -> bool {
    nvim.lua(
        "for _, c in ipairs(require('pi-ide').info().clients) do \
           if (c.name or ''):find('claude', 1, true) then return true end end return false",
    ) == json!(true)
}

/// The pending changes (`info().pending`): `{ path, agent, turn, hunks, kind }` each.
fn pending(nvim: &Nvim) -> Vec<Value> {
    let list = nvim.lua("return require('pi-ide').info().pending or {}");
    list.as_array().cloned().unwrap_or_default()
}

/// The pending change of `file`, if it is one.
fn pending_of(nvim: &Nvim, file: &Path) -> Option<Value> {
    // As Neovim names it, or through the links on the way (a temporary folder's).
    let names = [file.to_path_buf(), file.canonicalize().unwrap_or_else(|_| file.to_path_buf())];
    let named = |p: &Value| names.iter().any(|n| p["path"] == json!(n.display().to_string()));
    pending(nvim).into_iter().find(named)
}

/// How many `PiIdeChangePending` events named `file`.
fn change_pending_events(nvim: &Nvim, file: &Path) -> u64 {
    let path = file.display().to_string();
    nvim.t("count_events", json!(["PiIdeChangePending", "path", path])).as_u64().unwrap()
}

fn read(file: &Path) -> Option<String> {
    std::fs::read_to_string(file).ok()
}

fn cursor_line(nvim: &Nvim) -> Value {
    nvim.lua("return vim.fn.line('.')")
}

fn review_closed(nvim: &Nvim, result: &str) -> u64 {
    nvim.t("count_events", json!(["PiIdeReviewClosed", "result", result]))
        .as_u64()
        .unwrap()
}

/// Neovim with the plugin set up as a user would (`setup` in their config, before it loads), and
/// Claude Code started against it (its TUI may still be coming up).
fn start_rig() -> Rig {
    start_rig_with("", &[])
}

/// start_rig, with more options for setup() (Lua table fields, after `claude_code = true`) and
/// more arguments for Claude Code.
fn start_rig_with(options: &str, claude_args: &[&str]) -> Rig {
    let claude = claude_binary();
    let scratch = Scratch::new();
    let config = scratch.path("config");
    let nvim = Nvim::start_with(Options {
        before: Some(format!("require('pi-ide').setup({{ claude_code = true, {options} }})")),
        env: vec![("CLAUDE_CONFIG_DIR".into(), config.display().to_string())],
        ..Default::default()
    });
    wait_until("the plugin's Claude lockfile", WAIT, || {
        lock::read_all(&config.join("ide")).len() == 1
    });
    let port = lock::read_all(&config.join("ide"))[0].port;
    assert_eq!(
        port,
        nvim.lockfile().port,
        "one server for Pi and Claude Code"
    );
    write_claude_config(&config, &nvim.cwd);
    nvim.t(
        "record_events",
        json!(["PiIdeReviewOpened", "PiIdeReviewClosed", "PiIdeChangePending"]),
    );
    let mock = Mock::start(script(nvim.cwd.join("hello.txt")));
    let env = claude_env(&scratch, &mock, port);
    let debug = scratch.path("claude-debug.txt").display().to_string();
    let mut rig = Rig {
        tui: None,
        nvim,
        mock,
        scratch,
    };
    let mut args = vec!["--debug-file".to_string(), debug];
    args.extend(claude_args.iter().map(|a| a.to_string()));
    rig.tui = Some(Tui::start(
        &rig.scratch,
        &rig.nvim.cwd,
        &env,
        &claude,
        &args,
    ));
    rig
}

#[test]
fn real_claude_code_writes_through_a_review_in_neovim_and_hears_a_rejection() {
    let started = Instant::now();
    let rig = start_rig();
    let (nvim, tui, mock) = (&rig.nvim, rig.tui(), &rig.mock);

    // (1) It connects by itself (CLAUDE_CODE_SSE_PORT + our lockfile's token), in manual mode.
    rig.wait_ready();

    // The selection in Neovim reaches the model. (The state sent with the handshake is not
    // shown by Claude Code: it listens only once its UI has the connection, so select after.)
    let notes = edit_file(nvim, "notes.txt", &["alpha", "beta", "gamma"]);
    type_keys(nvim, "jVj");
    // Twice in ~10 CI runs Claude Code did not show a selection sent while its UI was still
    // booting (seconds after it connected); not root-caused. Then the user selects again, as a
    // person would: the cursor alone, then the same lines (each sent at once with flush()).
    let shown = || tui.screen().contains("2 lines selected");
    let first_look = Instant::now() + Duration::from_secs(15);
    while !shown() && Instant::now() < first_look {
        std::thread::sleep(Duration::from_millis(100));
    }
    if !shown() {
        eprintln!("Claude Code did not show the first selection: selecting again");
        type_keys(nvim, "<Esc>");
        nvim.lua("require('pi-ide.features.selection').flush()");
        type_keys(nvim, "gv");
        nvim.lua("require('pi-ide.features.selection').flush()");
    }
    rig.wait("Claude Code shows the selection", shown);
    tui.type_prompt(&rig, ASK);
    let turn = rig.turn_for(ASK);
    let context = system_texts(&turn).join("\n");
    assert!(
        context.contains(&notes)
            && context.contains("lines 2 to 3")
            && context.contains("beta\ngamma"),
        "the selection did not reach the model:\n{context}"
    );
    assert!(
        context.contains("mcp__ide__getDiagnostics"),
        "the editor's tools were not offered to the model"
    );
    rig.wait_idle_with("Noted your selection.");
    type_keys(nvim, "<Esc>");

    // (2) A Write is reviewed in Neovim: two panes, the user adds a line and types :w; Claude
    // Code writes what was accepted, and tells the model the user changed it.
    let hello = nvim.cwd.join("hello.txt");
    tui.type_prompt(&rig, CREATE);
    rig.wait("the review on screen", || {
        nvim.t("reviews_shown", json!([])) == json!(1)
    });
    come_to_review(nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(
        nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)"),
        json!(2),
        "two panes"
    );
    // Claude Code asks too, in its TUI; the answer comes from Neovim.
    rig.wait("Claude Code's question beside the diff in Neovim", || {
        let s = tui.screen();
        s.contains("Opened changes in Neovim") && s.contains("Do you want to create hello.txt?")
    });
    assert!(!hello.exists(), "written before the review was decided");
    type_keys(nvim, &format!("Go{USER_LINE}<Esc>"));
    type_accept(nvim, ":w<CR>");
    let accepted = format!("{PROPOSED}{USER_LINE}\n");
    rig.wait("Claude Code wrote the accepted contents", || {
        std::fs::read_to_string(&hello).ok().as_deref() == Some(accepted.as_str())
    });
    let after_write = rig.turn_for_result("Write");
    let written = result_of(&after_write, "Write").unwrap();
    assert_ne!(written["is_error"], json!(true), "{written}");
    assert!(
        written.to_string().contains("modified"),
        "the model was not told of the user's change: {written}"
    );
    rig.wait_idle_with("The file is written.");
    assert_eq!(review_closed(nvim, "accepted"), 1);

    // (3) An Edit rejected with :q in the proposal: the file stays, and the model hears of it
    // with the next prompt (Claude Code ends the turn on a rejection without calling it).
    tui.type_prompt(&rig, CHANGE);
    rig.wait("the second review on screen", || {
        nvim.t("reviews_shown", json!([])) == json!(1)
    });
    come_to_review(nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    rig.wait("Claude Code waiting on the second review", || {
        tui.screen()
            .contains("Do you want to make this edit to hello.txt?")
    });
    assert_eq!(
        review_closed(nvim, "rejected"),
        0,
        "rejected before the user decided"
    );
    type_keys(nvim, ":q<CR>");
    rig.wait("the review closed as rejected", || {
        review_closed(nvim, "rejected") == 1
    });
    rig.wait_idle_with("Rejected update to hello.txt");
    tui.type_prompt(&rig, WHY);
    let turn = rig.turn_for(WHY);
    let refused = result_of(&turn, "Edit")
        .unwrap_or_else(|| panic!("no result for the Edit\n{}", rig.report()));
    assert_eq!(refused["is_error"], json!(true), "{refused}");
    assert!(refused.to_string().contains("rejected"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(&hello).unwrap(),
        accepted,
        "a rejected edit was written"
    );
    rig.wait_idle_with("Understood.");

    assert_eq!(review_closed(nvim, "accepted"), 1);
    assert!(
        mock.outside().is_empty(),
        "Claude Code tried to reach the internet:\n{}",
        mock.summary()
    );
    eprintln!("real Claude Code flow took {:?}", started.elapsed());
}


/// Claude Code's Write of three changed lines, the middle hunk rejected in Neovim: `:w` lets it
/// write exactly the first and the last, and it tells the model the user changed its proposal.
#[test]
fn real_claude_code_writes_only_the_hunks_accepted_in_neovim() {
    let rig = start_rig();
    let (nvim, tui) = (&rig.nvim, rig.tui());
    let file = nvim.cwd.join("h.txt");
    std::fs::write(&file, H_BEFORE).unwrap();
    rig.wait_ready();
    tui.type_prompt(&rig, THREE);
    rig.wait("the review on screen", || {
        nvim.t("reviews_shown", json!([])) == json!(1)
    });
    come_to_review(nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    hunks_counted(&nvim);
    type_keys(nvim, "gg]h:PiIde hunk reject<CR>");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), H_BEFORE, "written before :w");
    type_accept(nvim, ":w<CR>");
    rig.wait("Claude Code wrote hunks 1 and 3", || {
        std::fs::read_to_string(&file).ok().as_deref() == Some("A\nb\nc\nd\ne\nf\nG\n")
    });
    let written = result_of(&rig.turn_for_result("Write"), "Write").unwrap();
    assert_ne!(written["is_error"], json!(true), "{written}");
    assert!(
        written.to_string().contains("modified"),
        "the model was not told of the user's change: {written}"
    );
    rig.wait_idle_with("The file is written.");
    assert_eq!(review_closed(nvim, "accepted"), 1);
}

/// Claude Code in acceptEdits mode writes by itself: no openDiff, no review. Each write is a
/// pending change at once, both together (a file created, a file open in Neovim changed in two
/// hunks); in the open file's window `]h` and `:PiIde hunk reject` put one hunk's lines back on
/// disk, `:PiIde hunk accept` keeps the other, and `:PiIde reject` in the created file's window
/// deletes it.
#[test]
fn real_claude_code_in_accept_edits_writes_by_itself_and_each_write_is_decided_after_hunk_by_hunk() {
    let rig = start_rig_with("", &["--permission-mode", "acceptEdits"]);
    let (nvim, tui) = (&rig.nvim, rig.tui());
    let (two, created) = (nvim.cwd.join("two.txt"), nvim.cwd.join("new.txt"));
    edit_file(nvim, "two.txt", &["a", "b", "c", "d", "e", "f", "g"]);
    assert_eq!(read(&two).as_deref(), Some(TWO_BEFORE));
    rig.wait_ready_in("accept edits on");
    watching(nvim);

    tui.type_prompt(&rig, CREATE_NEW);
    rig.wait("Claude Code created new.txt by itself", || read(&created).as_deref() == Some(NEW_TEXT));
    rig.wait_idle_with("The file is written.");
    tui.type_prompt(&rig, TWO);
    rig.wait("Claude Code changed two.txt by itself", || read(&two).as_deref() == Some(TWO_PROPOSED));
    rig.wait_idle_with("Two lines changed.");
    assert_eq!(nvim.t("count_events", json!(["PiIdeReviewOpened"])), json!(0), "Claude Code asked for a review");

    // Both pending at once, each said by its event.
    rig.wait("both writes pending", || pending_of(nvim, &two).is_some() && pending_of(nvim, &created).is_some());
    let changed = pending_of(nvim, &two).unwrap();
    assert_eq!((&changed["agent"], &changed["kind"], &changed["hunks"]), (&json!("claude"), &json!("changed"), &json!(2)), "{changed}");
    let made = pending_of(nvim, &created).unwrap();
    assert_eq!((&made["agent"], &made["kind"]), (&json!("claude"), &json!("created")), "{made}");
    assert!(change_pending_events(nvim, &two) >= 1 && change_pending_events(nvim, &created) >= 1);

    // In two.txt's window (still the current one): the first hunk undone, the second kept.
    assert_eq!(nvim.lua("return vim.api.nvim_buf_get_name(0)"), json!(two.display().to_string()));
    type_keys(nvim, "gg]h");
    assert_eq!(cursor_line(nvim), json!(2), "]h goes to the first hunk");
    type_keys(nvim, ":PiIde hunk reject<CR>");
    let first_undone = "a\nb\nc\nd\ne\nF\ng\n";
    rig.wait("the first hunk undone on disk", || read(&two).as_deref() == Some(first_undone));
    type_keys(nvim, "]h");
    assert_eq!(cursor_line(nvim), json!(6), "]h goes to the second hunk");
    type_keys(nvim, ":PiIde hunk accept<CR>");
    rig.wait("two.txt decided", || pending_of(nvim, &two).is_none());
    assert_eq!(read(&two).as_deref(), Some(first_undone), "the kept hunk stays, the undone one stays undone");

    // The created file undone in its window: gone.
    type_keys(nvim, ":edit new.txt<CR>");
    type_keys(nvim, ":PiIde reject<CR>");
    rig.wait("new.txt undone: deleted", || !created.exists());
    rig.wait("nothing pending", || pending(nvim).is_empty());
    assert!(rig.mock.outside().is_empty(), "Claude Code tried to reach the internet:\n{}", rig.mock.summary());
}

/// With `review.when = "after"` for Claude Code alone (per agent), its openDiff in its default
/// mode is answered at once as accepted, its proposal unchanged: no review opens, Claude Code
/// writes its proposal as it sent it, and that write is its pending change.
#[test]
fn real_claude_code_with_review_when_after_is_answered_at_once_and_its_write_is_pending() {
    let rig = start_rig_with("review = { when = { default = 'before', claude = 'after' } }", &[]);
    let (nvim, tui) = (&rig.nvim, rig.tui());
    let hello = nvim.cwd.join("hello.txt");
    rig.wait_ready();
    watching(nvim);
    tui.type_prompt(&rig, CREATE);
    rig.wait("Claude Code wrote its proposal, answered at once", || read(&hello).as_deref() == Some(PROPOSED));
    let written = result_of(&rig.turn_for_result("Write"), "Write").unwrap();
    assert_ne!(written["is_error"], json!(true), "{written}");
    assert!(!written.to_string().contains("modified"), "the proposal was answered changed: {written}");
    rig.wait_idle_with("The file is written.");
    assert_eq!(nvim.t("count_events", json!(["PiIdeReviewOpened"])), json!(0), "a review was shown");
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(0), "a review is open");
    assert_eq!(nvim.lua("return #vim.api.nvim_list_tabpages()"), json!(1), "a review's tab opened");
    rig.wait("its write pending", || pending_of(nvim, &hello).is_some());
    let p = pending_of(nvim, &hello).unwrap();
    assert_eq!((&p["agent"], &p["kind"]), (&json!("claude"), &json!("created")), "{p}");
    assert!(change_pending_events(nvim, &hello) >= 1);
    assert!(rig.mock.outside().is_empty(), "Claude Code tried to reach the internet:\n{}", rig.mock.summary());
}

/// `:PiIde open claude` in LazyVim (200 columns, so snacks.nvim's terminal), with
/// `claude_code` off and a second Neovim serving Claude Code in the same folder: Claude Code
/// connects to the Neovim that launched it, its write is reviewed there, and hiding and showing
/// its terminal keeps the session.
#[test]
fn real_claude_code_launched_in_lazyvim_by_piide_open_connects_to_that_neovim_only() {
    let claude = claude_binary();
    let scratch = Scratch::new();
    let config = scratch.path("config");
    let claude_dir = ("CLAUDE_CONFIG_DIR".to_string(), config.display().to_string());
    let nvim = Nvim::start_lazyvim(pi_ide_testkit::tui::LazyOptions {
        env: vec![claude_dir.clone()],
        cols: 200,
        rows: 50,
        ..Default::default()
    });
    let other = Nvim::start_with(Options {
        before: Some("require('pi-ide').setup({ claude_code = true })".into()),
        env: vec![claude_dir],
        cwd: Some(nvim.cwd.clone()),
        ..Default::default()
    });
    wait_until("the other Neovim's Claude lockfile", WAIT, || lock::read_all(&config.join("ide")).len() == 1);
    write_claude_config(&config, &nvim.cwd);
    nvim.t("record_events", json!(["PiIdeReviewOpened", "PiIdeReviewClosed"]));
    let mock = Mock::start(script(nvim.cwd.join("hello.txt")));
    let env: Vec<_> = claude_env(&scratch, &mock, 0)
        .into_iter()
        .filter(|(k, _)| k != "CLAUDE_CODE_SSE_PORT")
        .collect();
    let debug = scratch.path("claude-debug.txt").display().to_string();
    nvim.lua(&format!(
        "require('pi-ide').setup({{ terminal = {{ agents = {{ claude = {{ cmd = {{ {:?}, '--debug-file', {debug:?} }}, env = {{ {} }} }} }} }} }})",
        claude.display().to_string(),
        terminal::lua_fields(env)
    ));
    let rig = Rig { tui: None, nvim, mock, scratch };
    let nvim = &rig.nvim;
    let screen = || terminal::screen(nvim, "claude");

    nvim.command("PiIde open claude").unwrap();
    rig.wait("Claude Code to connect to the Neovim that launched it", || claude_connected(nvim));
    assert_eq!(nvim.lua("return vim.bo[require('pi-ide.features.terminal').buffer('claude')].filetype"), json!("snacks_terminal"));
    let client = nvim.lua("return require('pi-ide').info().clients[1].id");

    // A write from the terminal in Neovim is reviewed in the same Neovim. Claude Code shows its
    // prompt before its IDE client is set up: a prompt sent then gets its own diff, not Neovim's
    // (once in a loaded run, 0.45 s after it connected). Its log's last word on the IDE's
    // connection (2.1.330) says it is set up.
    rig.wait("Claude Code's prompt", || screen().contains("manual mode on"));
    rig.wait("Claude Code's IDE client set up", || {
        std::fs::read_to_string(&debug).is_ok_and(|log| log.contains("MCP server \"ide\": Channel notifications"))
    });
    terminal::type_text(nvim, "claude", CREATE);
    rig.wait("the prompt typed", || screen().lines().any(|l| l.starts_with('❯') && l.trim_end().ends_with(CREATE)));
    terminal::type_text(nvim, "claude", "\r");
    rig.wait("the review on screen", || nvim.t("reviews_shown", json!([])) == json!(1));
    come_to_review(nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    let hello = nvim.cwd.join("hello.txt");
    assert!(!hello.exists(), "written before the review was decided");
    type_accept(nvim, ":w<CR>");
    rig.wait("Claude Code wrote the accepted contents", || {
        std::fs::read_to_string(&hello).ok().as_deref() == Some(PROPOSED)
    });
    rig.wait("Claude Code heard it", || screen().contains("The file is written."));

    // Hidden and shown: the same process, still connected.
    let job = terminal::job(nvim, "claude");
    nvim.command("PiIde close").unwrap();
    assert!(!terminal::shown(nvim, "claude"));
    nvim.command("PiIde open claude").unwrap();
    assert_eq!(terminal::job(nvim, "claude"), job);
    assert_eq!(nvim.lua("return require('pi-ide').info().clients[1].id"), client);
    assert!(screen().contains("The file is written."), "the session is not the same");
    // After all that, Claude Code never reached the other Neovim.
    assert!(!claude_connected(&other), "Claude Code connected to the other Neovim too");
    assert!(rig.mock.outside().is_empty(), "Claude Code tried to reach the internet:\n{}", rig.mock.summary());
}
