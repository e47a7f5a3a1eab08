//! The real Pi coding agent (npm `@earendil-works/pi-coding-agent`, on Node 22) with the real
//! pi-ide extension, as scripts/ensure-agents.sh installs them into .deps/agents, run offline
//! against a loopback mock model (tests/support/openai_mock.rs).
//!
//! Two parts: what runs Pi ([`pi_command`], its argv, and [`pi_env`], its environment but for
//! `PI_IDE_LOCK_DIR`), which any launcher can use (a test's tmux here; Neovim's `:terminal`
//! through `setup({ terminal = { agents = { pi = { cmd = ..., env = ... } } } })`), and
//! [`PiTui`], Pi's interactive TUI in a tmux server of its own (keys in with `send-keys`, the
//! screen back with `capture-pane`), killed when dropped.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long anything Pi does may take: starting Node and Pi, connecting, answering. A loaded
/// 2-core machine runs other builds beside it; only a failing test waits this long.
pub const PI_PATIENCE: Duration = Duration::from_secs(90);

/// The agents' install folder: the one above `node_modules/.bin`, which `$PI_IDE_AGENTS` names
/// (else `.deps/agents` in this checkout, where scripts/ensure-agents.sh installs).
pub fn agents_dir() -> PathBuf {
    match std::env::var_os("PI_IDE_AGENTS") {
        Some(bin) => {
            let bin = PathBuf::from(bin);
            bin.parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or(bin)
        }
        None => pi_ide_testkit::nvim::plugin_root().join(".deps/agents"),
    }
}

/// The version of the pi-ide extension the suite pins (scripts/ensure-agents.sh).
pub const EXTENSION_VERSION: &str = "0.2.4";

/// Node 22 (the npm package `node`): Pi needs it; the system's Node may be older.
pub fn node_binary() -> PathBuf {
    installed(
        agents_dir().join("node_modules/node/bin/node"),
        "node@22.23.3",
    )
}

/// Pi's command-line entry point.
pub fn pi_cli_js() -> PathBuf {
    installed(
        agents_dir().join("node_modules/@earendil-works/pi-coding-agent/dist/cli.js"),
        "@earendil-works/pi-coding-agent@0.87.1",
    )
}

/// The pi-ide extension's folder (loaded with `-e`); its imports resolve from the
/// `node_modules` of the agents' folder above it.
pub fn pi_extension() -> PathBuf {
    installed(
        agents_dir()
            .join("pi-ide-extension")
            .join(EXTENSION_VERSION),
        &format!("the pi-ide extension {EXTENSION_VERSION}"),
    )
}

/// Missing is a failure, never a skip: the suite installs it.
fn installed(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed at {}: run scripts/test (it installs the pinned Pi with \
         scripts/ensure-agents.sh), or set PI_IDE_AGENTS to the node_modules/.bin of such an install",
        path.display()
    );
    path
}

/// The argv that runs Pi with the pi-ide extension: Node 22, Pi's cli.js, `-e <extension>`.
pub fn pi_command() -> Vec<String> {
    [node_binary(), pi_cli_js()]
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .chain([
            "-e".to_owned(),
            pi_extension().to_string_lossy().into_owned(),
        ])
        .collect()
}

/// The argv that runs Pi headless, in RPC mode (`--mode rpc`: JSON lines on stdin and stdout),
/// with the pi-ide extension and then each of `extensions` (`-e` each), e.g. [`ui_extension`].
pub fn pi_rpc_command(extensions: &[PathBuf]) -> Vec<String> {
    let mut argv = pi_command();
    for e in extensions {
        argv.push("-e".to_owned());
        argv.push(e.to_string_lossy().into_owned());
    }
    argv.extend(["--mode".to_owned(), "rpc".to_owned()]);
    argv
}

/// tests/support/ui_extension.ts: a Pi extension whose commands (`/ui-test`, `/ui-timeout`,
/// `/ui-fire`, `/ui-notify <text>`) and tool (`ui_ask`) send every kind of
/// `extension_ui_request`, and which tells what the client answered in a `notify`
/// (`ui-test: confirm=true select="beta" input="..." editor="..."`).
pub fn ui_extension() -> PathBuf {
    pi_ide_testkit::nvim::plugin_root().join("tests/support/ui_extension.ts")
}

/// Writes Pi's configuration into `config_dir` (its agent folder: the mock at `model_url` as
/// its one provider and default model, project files never trusted, a quiet start) and returns
/// the environment Pi needs, all of it but `PI_IDE_LOCK_DIR`: its agent folder, offline, no
/// version check, no telemetry, Node 22 first on PATH, and a HOME of its own
/// (`config_dir/home`), so that nothing of the developer's (~/.pi, skills) is picked up.
/// No TERM: a terminal sets its own.
pub fn pi_env(config_dir: &Path, model_url: &str) -> Vec<(String, String)> {
    let home = config_dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let models = serde_json::json!({"providers": {"mock": {
        "baseUrl": model_url, "api": "openai-completions", "apiKey": "x",
        "models": [{"id": "mock-coder", "name": "Mock"}]}}});
    let settings = serde_json::json!({"defaultProvider": "mock", "defaultModel": "mock-coder",
        "defaultProjectTrust": "never", "quietStartup": true});
    std::fs::write(config_dir.join("models.json"), models.to_string()).unwrap();
    std::fs::write(config_dir.join("settings.json"), settings.to_string()).unwrap();
    let node_bin = node_binary().parent().unwrap().to_path_buf();
    let path = match std::env::var("PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", node_bin.display()),
        _ => format!("{}:/usr/bin:/bin", node_bin.display()),
    };
    let s = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        ("PI_CODING_AGENT_DIR".into(), s(config_dir)),
        ("PI_OFFLINE".into(), "1".into()),
        ("PI_SKIP_VERSION_CHECK".into(), "1".into()),
        ("PI_TELEMETRY".into(), "0".into()),
        ("PATH".into(), path),
        ("HOME".into(), s(&home)),
    ]
}

/// Pi's TUI in a detached tmux session of a tmux server of its own (`TMUX_TMPDIR` in the test's
/// scratch folder). Dropping it kills Pi and the server.
pub struct PiTui {
    tmux_dir: PathBuf,
    /// The pane's process (Pi's Node, exec'd by `env`), leader of the pane's process group.
    pane_pid: Option<i32>,
}

const SESSION: &str = "pi";

impl PiTui {
    /// Starts `pi_command()` in `cwd` with exactly `env` (plus TERM and LANG), in a terminal
    /// 160x50. `scratch` holds the tmux server's socket and configuration.
    pub fn start(scratch: &Path, cwd: &Path, env: &[(String, String)]) -> PiTui {
        let argv = pi_command(); // a missing Pi fails here, saying where it should be
        let tmux_dir = scratch.join("tmux");
        std::fs::create_dir_all(&tmux_dir).unwrap();
        std::fs::set_permissions(
            &tmux_dir,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        // remain-on-exit: if Pi dies, its last words stay on screen for the failure message.
        let conf = tmux_dir.join("tmux.conf");
        std::fs::write(
            &conf,
            "set -g remain-on-exit on\nset -g status off\nset -g history-limit 5000\n",
        )
        .unwrap();
        // Made first, so that its Drop cleans up whatever fails below.
        let mut tui = PiTui {
            tmux_dir,
            pane_pid: None,
        };
        let mut args: Vec<String> = vec!["-f".into(), conf.to_string_lossy().into_owned()];
        args.extend(
            [
                "new-session",
                "-d",
                "-s",
                SESSION,
                "-x",
                "160",
                "-y",
                "50",
                "-c",
            ]
            .map(String::from),
        );
        args.push(cwd.to_string_lossy().into_owned());
        // Several arguments: tmux runs them without a shell; `env -i` leaves nothing of the
        // test's own environment (an API key, a TMUX, a PI_IDE_LOCK_DIR of the developer's).
        args.extend(["env", "-i"].map(String::from));
        args.extend(["TERM=xterm-256color".to_owned(), "LANG=C.UTF-8".to_owned()]);
        args.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        args.extend(argv);
        let out = tui.tmux(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pid = tui.tmux(&["display-message", "-p", "-t", SESSION, "#{pane_pid}"]);
        tui.pane_pid = String::from_utf8_lossy(&pid.stdout).trim().parse().ok();
        tui
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-u")
            .arg("-L")
            .arg("pi")
            .args(args)
            .env("TMUX_TMPDIR", &self.tmux_dir)
            .env("LANG", "C.UTF-8")
            .env_remove("TMUX")
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux (needed to drive Pi's TUI): {e}"))
    }

    fn tmux_ok(&self, args: &[&str]) {
        let out = self.tmux(args);
        if !out.status.success() {
            panic!(
                "tmux {args:?} failed: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                self.transcript()
            );
        }
    }

    /// What the terminal shows now, wrapped lines joined.
    pub fn screen(&self) -> String {
        self.capture(&["capture-pane", "-p", "-J", "-t", SESSION])
    }

    /// Everything Pi printed (the screen and what scrolled off it), for failure messages.
    pub fn transcript(&self) -> String {
        self.capture(&["capture-pane", "-p", "-J", "-S", "-", "-t", SESSION])
    }

    fn capture(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        if !out.status.success() {
            return format!("(no screen: {})", String::from_utf8_lossy(&out.stderr));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether Pi has exited (its pane stays, dead, for the failure message).
    pub fn dead(&self) -> bool {
        let out = self.tmux(&["display-message", "-p", "-t", SESSION, "#{pane_dead}"]);
        String::from_utf8_lossy(&out.stdout).trim() != "0"
    }

    /// Waits until the screen satisfies `pred`; returns that screen. Fails at once if Pi
    /// exited, and after [`PI_PATIENCE`], with everything Pi printed.
    pub fn wait_screen(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PI_PATIENCE;
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            let dead = self.dead();
            if dead || Instant::now() > deadline {
                panic!(
                    "{} waiting for Pi to show {what}\n--- Pi's terminal ---\n{}",
                    if dead { "Pi exited" } else { "timed out" },
                    self.transcript()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `text` is on screen.
    pub fn wait_text(&self, text: &str) -> String {
        self.wait_screen(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Types `text` into Pi's input and, once it shows there, presses Enter (a burst with the
    /// Enter inside could be taken for a paste). `text` should be new to the screen.
    pub fn send_line(&self, text: &str) {
        self.tmux_ok(&["send-keys", "-t", SESSION, "-l", text]);
        self.wait_text(text);
        self.press("Enter");
    }

    /// Presses one key, by tmux's name for it ("Enter", "Escape", "C-c").
    pub fn press(&self, key: &str) {
        self.tmux_ok(&["send-keys", "-t", SESSION, key]);
    }
}

impl Drop for PiTui {
    fn drop(&mut self) {
        if let Some(pid) = self.pane_pid {
            // SAFETY: kill(2) of the process group of the pane this test started (tmux makes
            // each pane's process a session leader): Pi and whatever it ran.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.tmux(&["kill-server"]);
    }
}

/// One test's folders: `work` (the working folder of Neovim and Pi) and `pi` (Pi's agent
/// folder: its settings, models, sessions, HOME, tmux). Removed when dropped.
pub struct Folders {
    pub root: PathBuf,
    pub work: PathBuf,
    pub pi: PathBuf,
}

impl Folders {
    pub fn new() -> Folders {
        // Canonical: the extension compares Pi's cwd (a real path) with the lockfile's
        // workspace folders as strings.
        let root = pi_ide_testkit::nvim::temp_dir("pi").canonicalize().unwrap();
        let (work, pi) = (root.join("work"), root.join("pi"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&pi).unwrap();
        Folders { root, work, pi }
    }
}

impl Drop for Folders {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
