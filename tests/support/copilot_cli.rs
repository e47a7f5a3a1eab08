//! The real GitHub Copilot CLI (npm `@github/copilot`, pinned by scripts/ensure-agents.sh) as a
//! user runs it: its interactive TUI (the IDE bridge runs only there) in a tmux server of its
//! own, offline, with a loopback mock as its model. Keys go in with `send-keys`; the screen
//! comes back with `capture-pane`. Dropping it kills the tmux server and everything in the pane.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long anything the CLI does may take: it starts a 200 MB binary, and a loaded 2-core
/// machine runs two of them at once. Only a failing test waits this long.
pub const AGENT_PATIENCE: Duration = Duration::from_secs(60);

/// The folder holding the agent CLIs: `$PI_IDE_AGENTS`, else `.deps/agents/node_modules/.bin`
/// in this checkout (where scripts/ensure-agents.sh installs them).
pub fn agents_bin() -> PathBuf {
    std::env::var_os("PI_IDE_AGENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| pi_ide_testkit::nvim::plugin_root().join(".deps/agents/node_modules/.bin"))
}

/// The `copilot` command. Missing is a failure, never a skip: the suite installs it.
pub fn copilot_binary() -> PathBuf {
    let bin = agents_bin().join("copilot");
    assert!(
        bin.exists(),
        "the GitHub Copilot CLI is not installed at {}: run scripts/test (it installs the pinned \
         version with scripts/ensure-agents.sh), or set PI_IDE_AGENTS to a folder holding `copilot`",
        bin.display()
    );
    bin
}

/// The CLI unpacks its JavaScript (~235 MB) into a package cache on first start; one cache for
/// every test, outside their scratch folders, so that each start is quick. It unpacks into a
/// temporary folder and renames, so parallel starts are safe.
fn package_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-pkg-cache")
}

/// Where and how one CLI runs.
pub struct Launch<'a> {
    /// A scratch folder of the test's: the CLI's HOME and the tmux socket go in here.
    pub scratch: &'a Path,
    /// `COPILOT_HOME`: its config, logs and the `ide/` folder it finds editors' lock files in.
    pub copilot_home: &'a Path,
    /// Its working folder: an editor connects by itself only when a workspace folder of its
    /// lock file is exactly this.
    pub cwd: &'a Path,
    /// The mock model's base URL (`http://127.0.0.1:<port>/v1`).
    pub model_url: &'a str,
    /// More of its flags, e.g. `--allow-all-tools` (it then asks nobody before a write).
    pub flags: &'a [&'a str],
}

pub struct CopilotCli {
    socket: PathBuf,
    /// The pane's first process (a shell that runs the CLI), leader of the pane's process group.
    pane_pid: Option<i32>,
    copilot_home: PathBuf,
}

impl CopilotCli {
    /// Starts the CLI in a detached tmux session 200x50 (wide enough that paths do not wrap).
    pub fn start(l: Launch) -> CopilotCli {
        copilot_binary(); // a missing CLI fails here, saying where it should be
        let home = l.scratch.join("cli-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(l.copilot_home).unwrap();
        // remain-on-exit: if the CLI dies, its last words stay on screen for the failure message.
        let conf = l.scratch.join("tmux.conf");
        std::fs::write(&conf, "set -g remain-on-exit on\n").unwrap();
        // Made first, so that its Drop cleans up whatever fails below.
        let mut cli = CopilotCli {
            socket: l.scratch.join("tmux.sock"),
            pane_pid: None,
            copilot_home: l.copilot_home.to_path_buf(),
        };
        let mut cmd = cli.new_session(&l, &conf, &home);
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux (is it installed?): {e}"));
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            stderr(&out)
        );
        let pid = cli.tmux(&["display-message", "-p", "-t", "cli", "#{pane_pid}"]);
        cli.pane_pid = pid.expect("the pane's pid").trim().parse().ok();
        cli
    }

    /// `tmux new-session` running the CLI in `l.cwd`. The tmux server starts with it and hands
    /// its environment to the pane: only ours.
    fn new_session(&self, l: &Launch, conf: &Path, home: &Path) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket).arg("-f").arg(conf);
        cmd.args([
            "new-session",
            "-d",
            "-s",
            "cli",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
        ]);
        cmd.arg(l.cwd);
        cmd.arg(format!(
            "exec '{}' --log-level debug {}",
            copilot_binary().display(),
            l.flags.join(" ")
        ));
        cmd.env_clear()
            .envs(cli_env(home, l.copilot_home, l.model_url));
        cmd
    }

    fn tmux(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run tmux: {e}"))?;
        if !out.status.success() {
            return Err(format!("tmux {args:?} failed: {}", stderr(&out)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs a tmux command that must work (sending keys).
    fn tmux_ok(&self, args: &[&str]) {
        if let Err(e) = self.tmux(args) {
            panic!("{e}\n{}", self.diagnosis());
        }
    }

    /// What the terminal shows now (wrapped lines joined).
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "cli"])
            .unwrap_or_else(|e| format!("(no screen: {e})"))
    }

    /// Waits until the screen satisfies `pred`; returns that screen. On timeout, panics with
    /// the screen and the end of the CLI's log.
    pub fn wait_screen(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + AGENT_PATIENCE;
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for the CLI to show {what}\n{}",
                    self.diagnosis()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `text` is on screen.
    pub fn wait_text(&self, text: &str) -> String {
        self.wait_screen(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Types `text` into the input line and presses Enter.
    pub fn send_line(&self, text: &str) {
        self.tmux_ok(&["send-keys", "-t", "cli", "-l", text]);
        self.press("Enter");
    }

    /// Presses one key, by tmux's name for it ("Enter", "Escape", "1", "C-c").
    pub fn press(&self, key: &str) {
        self.tmux_ok(&["send-keys", "-t", "cli", key]);
    }

    /// Answers the folder trust prompt the CLI asks at start with "1. Yes" (this session only).
    pub fn trust_the_folder(&self) {
        self.wait_text("Do you trust the files in this folder?");
        self.press("1");
        self.wait_screen("the trust prompt gone", |s| {
            !s.contains("Do you trust the files in this folder?")
        });
    }

    /// The screen and the end of the CLI's own log ($COPILOT_HOME/logs), for failure messages.
    pub fn diagnosis(&self) -> String {
        let screen = self.screen();
        format!(
            "--- the CLI's screen ---\n{screen}\n--- the end of its log ---\n{}",
            self.log_tail(60)
        )
    }

    /// The last `n` lines of the CLI's newest log file about editors, and its errors and
    /// warnings (the rest, at debug level, is mostly its own machinery).
    pub fn log_tail(&self, n: usize) -> String {
        let text = match newest_log(&self.copilot_home) {
            Ok(text) => text,
            Err(e) => return e,
        };
        let keep = ["IDE", "lock file", "[ERROR]", "[WARNING]"];
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| keep.iter().any(|k| l.contains(k)))
            .collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Whether the CLI's log says it is connected to an editor now (see [`log_says_connected`]).
    pub fn log_says_connected(&self) -> bool {
        log_says_connected(&self.copilot_home)
    }
}

/// Whether the log of the CLI whose `COPILOT_HOME` is `copilot_home` says it is connected to an
/// editor now: its last line about the connection is "Connected to IDE MCP server".
pub fn log_says_connected(copilot_home: &Path) -> bool {
    let Ok(text) = newest_log(copilot_home) else { return false };
    let connected = text.rfind("Connected to IDE MCP server");
    let lost = ["Connecting to IDE MCP server", "Disconnecting from IDE MCP server", "Disconnected from IDE MCP server"]
        .iter()
        .filter_map(|l| text.rfind(l))
        .max();
    matches!((connected, lost), (Some(c), l) if l.is_none_or(|l| c > l))
}

/// The CLI's newest log file ($COPILOT_HOME/logs/*.log), or why there is none.
fn newest_log(copilot_home: &Path) -> Result<String, String> {
    let logs = copilot_home.join("logs");
    let newest = std::fs::read_dir(&logs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    let path = newest.ok_or_else(|| format!("(no log in {})", logs.display()))?;
    Ok(std::fs::read_to_string(&path).unwrap_or_default())
}

/// The CLI's whole environment: offline, its model the mock, its folders the test's, no
/// automatic update, and nothing of the terminal the tests run in.
pub fn cli_env(home: &Path, copilot_home: &Path, model_url: &str) -> Vec<(String, String)> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ("HOME".into(), s(home)),
        ("COPILOT_HOME".into(), s(copilot_home)),
        ("COPILOT_PKG_CACHE_HOME".into(), s(&package_cache())),
        ("COPILOT_OFFLINE".into(), "true".into()),
        ("COPILOT_PROVIDER_BASE_URL".into(), model_url.into()),
        ("COPILOT_MODEL".into(), "mock".into()),
        ("COPILOT_AUTO_UPDATE".into(), "false".into()),
        ("TERM".into(), "xterm-256color".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

impl Drop for CopilotCli {
    fn drop(&mut self) {
        if let Some(pid) = self.pane_pid {
            // SAFETY: kill(2) of the process group this test started (the pane's, still held
            // by tmux): the CLI and its loader are in it, whatever they do with SIGHUP.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
