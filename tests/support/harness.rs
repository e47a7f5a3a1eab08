//! Helpers shared by the integration tests: a real Neovim (pi_ide_testkit::Nvim) and a real
//! WebSocket peer (pi_ide_testkit::Peer).
#![allow(dead_code, unused_imports)]

use std::time::Duration;

pub use pi_ide_testkit::peer::{texts, Received};
pub use pi_ide_testkit::{lock, Nvim, Peer};
pub use serde_json::{json, Value};

pub const SECOND: Duration = Duration::from_secs(1);

/// Reads frames until the socket closes; returns what came before the close, and the close.
pub fn read_until_close(peer: &mut Peer) -> (Vec<Value>, Received) {
    let mut frames = Vec::new();
    loop {
        match peer.recv() {
            Ok(Received::Json(v)) => frames.push(v),
            Ok(other) => return (frames, other),
            Err(e) => panic!("no close frame: {e}; got {frames:?}"),
        }
    }
}

pub fn error_code(resp: &Value) -> i64 {
    resp["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {resp}"))
}

/// Types keys as a user would (nvim_input), then waits until Neovim has processed them.
pub fn type_keys(nvim: &Nvim, keys: &str) {
    nvim.request("nvim_input", vec![keys.into()]).unwrap();
    // An RPC request is handled after pending input, so this returns once the keys ran.
    nvim.lua("return vim.fn.getchar(1)");
}

/// Types an accept (`:w<CR>`, `ZZ`, the accept key) as a user would: once the review they are in
/// has been on screen long enough to be seen (`review.seen_ms`: an accept typed sooner was aimed
/// elsewhere and accepts nothing). Outside a review, at once.
pub fn type_accept(nvim: &Nvim, keys: &str) {
    nvim.wait_t("review.takes_accept", json!([]), PATIENCE);
    type_keys(nvim, keys);
}

/// Opens a file with the given lines in the current window; returns its absolute path.
pub fn edit_file(nvim: &Nvim, name: &str, lines: &[&str]) -> String {
    let path = nvim.cwd.join(name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    nvim.lua_with(
        "vim.cmd.edit(vim.fn.fnameescape(...))",
        vec![path.to_string_lossy().to_string().into()],
    );
    path.to_string_lossy().to_string()
}

/// An openDiff call as the Pi extension sends it.
pub fn open_diff_call(id: &str, path: &str, contents: &str, tab: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": tab}}})
}

/// Sends openDiff (not waiting for the answer) and waits until `shown` reviews are on screen.
pub fn open_review(nvim: &Nvim, p: &mut Peer, id: &str, path: &str, contents: &str, tab: &str, shown: u64) {
    p.send_json(&open_diff_call(id, path, contents, tab)).unwrap();
    wait_until("the review on screen", PATIENCE, || {
        nvim.t("reviews_shown", json!([])).as_u64() == Some(shown)
    });
    go_to_review(nvim);
}

/// A review that opened while the user had just typed in a buffer of theirs does not take the
/// focus, and says so: they go to it (`:PiIde review`), as a user would. In one already, nothing.
pub fn go_to_review(nvim: &Nvim) {
    if nvim.lua("return require('pi-ide.features.review').current() == nil") == json!(true) {
        // As a command, not keys: the user may be in a terminal's Terminal mode.
        nvim.command("PiIde review").unwrap();
    }
}

/// Waits for an agent's review, then goes to it if it did not take the focus (`go_to_review`;
/// one still being built opens with the focus then).
pub fn come_to_review(nvim: &Nvim) {
    nvim.wait_for("#require('pi-ide.features.review').list() > 0", PATIENCE);
    go_to_review(nvim);
}

/// The texts of the answer to review `id` (FILE_SAVED and the text, or DIFF_REJECTED); never
/// an error, which would let the agent write unreviewed.
pub fn review_answer(p: &mut Peer, id: &str) -> Vec<String> {
    let r = p.wait_response(&json!(id)).unwrap();
    assert!(r.get("error").is_none(), "an error answer lets the agent write unreviewed: {r}");
    texts(&r)
}

/// The core counts a review's hunks on a worker: waits until they are placed in the review the
/// user is in.
pub fn hunks_counted(nvim: &Nvim) {
    nvim.wait_for("(require('pi-ide.features.review').current() or {}).hunks ~= nil", PATIENCE);
}

/// Waits until the workspace is watched for agents' writes (an agent connected or running): a
/// write before its snapshot is taken is part of it, not a change (features/pending/).
pub fn watching(nvim: &Nvim) {
    nvim.wait_for("require('pi-ide.features.pending').health():find('^watching') ~= nil", PATIENCE);
}

/// The current window's winbar.
pub fn winbar(nvim: &Nvim) -> String {
    nvim.lua("return vim.wo.winbar").as_str().unwrap().to_string()
}

/// A file in Neovim's folder with these contents; returns its absolute path.
pub fn file_with(nvim: &Nvim, name: &str, text: &str) -> String {
    let path = nvim.cwd.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().to_string()
}

/// The pending change of `path` (absolute) in `info().pending`, if there is one (Null).
pub fn pending_change(nvim: &Nvim, path: &str) -> Value {
    nvim.lua_with(
        "for _, p in ipairs(require('pi-ide').info().pending or {}) do if p.path == ... then return p end end",
        vec![path.into()],
    )
}

/// Waits until `path` has a pending change; returns it.
pub fn wait_pending(nvim: &Nvim, path: &str, patience: Duration) -> Value {
    let mut found = Value::Null;
    wait_until(&format!("{path} to be pending"), patience, || {
        found = pending_change(nvim, path);
        !found.is_null()
    });
    found
}

/// The texts of the answer with this id among `frames`, if there is one.
pub fn answer_in(frames: &[Value], id: &str) -> Option<Vec<String>> {
    frames
        .iter()
        .find(|f| f["id"] == id && f.get("method").is_none())
        .map(texts)
}

/// Waits for the next selection_changed and returns its params.
pub fn next_selection(peer: &mut Peer) -> Value {
    peer.wait_notification("selection_changed", PATIENCE)
        .expect("selection_changed")["params"]
        .clone()
}

/// Asserts that no selection_changed arrives within `ms`.
pub fn no_selection_within(peer: &mut Peer, ms: u64) {
    if let Ok(v) = peer.wait_notification("selection_changed", std::time::Duration::from_millis(ms)) {
        panic!("unexpected selection_changed: {v}");
    }
}

/// Number of UTF-16 code units in `s[..byte]`.
pub fn utf16(s: &str, byte: usize) -> usize {
    s[..byte].encode_utf16().count()
}

/// A Neovim with the plugin loaded from `dir` instead of this checkout (a copy, an install),
/// recording vim.notify from before VimEnter.
pub fn nvim_with_plugin_at(dir: &std::path::Path) -> Nvim {
    use pi_ide_testkit::nvim::{plugin_root, Options};
    Nvim::start_with(Options {
        before: Some(format!(
            "vim.opt.rtp:remove('{}') vim.opt.rtp:prepend('{}') require('pi_ide_test').record_notify()",
            plugin_root().display(),
            dir.display()
        )),
        ..Default::default()
    })
}

/// Makes the peer quiet: sends the current selection state now (if it changed), then waits
/// until every frame Neovim queued for this peer before that has arrived (a ping's answer is
/// written after them), and forgets them. Later frames are caused by what the test does next.
pub fn settle(nvim: &Nvim, p: &mut Peer) {
    nvim.lua("require('pi-ide.features.selection').flush()");
    let r = p.request("ping", json!({})).expect("ping");
    assert_eq!(r["result"], json!({}), "{r}");
    p.inbox.clear();
}

/// Returns once Neovim's Lua side has handled every frame this peer sent before: a tool call
/// answered by Lua goes through the same queue, after them.
pub fn fence(p: &mut Peer) {
    let r = p.call_tool("getWorkspaceFolders", json!({})).expect("fence");
    assert!(r.get("result").is_some(), "{r}");
}

/// What `:checkhealth pi-ide` shows, as text (its buffer is wiped afterwards).
pub fn health(nvim: &Nvim) -> String {
    nvim.command("checkhealth pi-ide").unwrap();
    let text = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    nvim.command("bwipeout").unwrap();
    text.as_str().unwrap().to_owned()
}

/// Asserts Neovim answers an RPC call within `bound` (a liveness bound, not a speed target).
pub fn responsive(nvim: &Nvim, bound: Duration) {
    let rx = nvim.request_async("nvim_eval", vec!["1+1".into()]);
    match rx.recv_timeout(bound) {
        Ok(Ok(v)) => assert_eq!(v.as_i64(), Some(2)),
        other => panic!("Neovim did not answer within {bound:?}: {other:?}"),
    }
}

/// A generous deadline for anything that waits on Neovim: it only costs time when a test fails,
/// and a loaded 2-core machine can hold the main loop up for seconds.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Polls a condition of the test's own until it holds.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A whole masked client frame, written by hand (see [`pi_ide_testkit::peer::raw_frame`]).
pub fn raw_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    pi_ide_testkit::peer::raw_frame(true, opcode, payload)
}

/// The repository's tracked files copied to a fresh folder, as a plugin manager's clone.
pub fn fresh_copy() -> std::path::PathBuf {
    let root = pi_ide_testkit::nvim::plugin_root();
    let dest = pi_ide_testkit::nvim::temp_dir("install").join("pi-ide.nvim");
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .output()
        .unwrap();
    assert!(out.status.success(), "git ls-files failed");
    for rel in out.stdout.split(|b| *b == 0).filter(|s| !s.is_empty()) {
        let rel = std::str::from_utf8(rel).unwrap();
        let (from, to) = (root.join(rel), dest.join(rel));
        if from.is_file() {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
    dest
}

/// Seeds `dest`'s target/release with the checkout's compiled dependencies (hard links, or
/// copies across file systems), so that a `cargo build --release` there compiles only this
/// crate: seconds, where a cold build of every dependency takes minutes. Our own crates'
/// artifacts are left out, so the build of the fresh copy is real. Nothing to seed: a cold build.
pub fn seed_cargo_cache(dest: &std::path::Path) {
    fn link_tree(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        if from.is_dir() {
            std::fs::create_dir_all(to)?;
            for e in std::fs::read_dir(from)? {
                let e = e?;
                link_tree(&e.path(), &to.join(e.file_name()))?;
            }
            return Ok(());
        }
        std::fs::hard_link(from, to).or_else(|_| std::fs::copy(from, to).map(|_| ()))
    }
    let release = pi_ide_testkit::nvim::plugin_root().join("target/release");
    for sub in ["deps", "build", ".fingerprint"] {
        let Ok(entries) = std::fs::read_dir(release.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains("pi_ide") || name.contains("pi-ide") {
                continue;
            }
            let to = dest.join("target/release").join(sub).join(&name);
            let _ = link_tree(&e.path(), &to);
        }
    }
}

/// Neovim's main loop held busy (as a hit-enter prompt, a blocking `input()` or a long
/// `:!command` hold it: scheduled work waits) until [`Held::release`].
pub struct Held {
    release: std::path::PathBuf,
    busy: std::sync::mpsc::Receiver<Result<rmpv::Value, String>>,
}

/// Holds `nvim`'s main loop; returns once it is held.
pub fn hold_main_loop(nvim: &Nvim) -> Held {
    let started = nvim.home.join("held");
    let release = nvim.home.join("release");
    let _ = std::fs::remove_file(&release);
    let _ = std::fs::remove_file(&started);
    let busy = nvim.request_async(
        "nvim_exec_lua",
        vec![
            "local started, release = ... io.open(started, 'w'):close() \
             local t = vim.uv.hrtime() \
             while not vim.uv.fs_stat(release) and vim.uv.hrtime() - t < 60e9 do vim.uv.sleep(5) end"
                .into(),
            rmpv::Value::Array(vec![started.to_string_lossy().to_string().into(), release.to_string_lossy().to_string().into()]),
        ],
    );
    wait_until("the main loop held", PATIENCE, || started.exists());
    Held { release, busy }
}

impl Held {
    /// Whether the loop is still held (nothing ran meanwhile).
    pub fn still_held(&self) -> bool {
        self.busy.try_recv().is_err()
    }

    /// Lets the loop go, and waits until it is free.
    pub fn release(self) {
        std::fs::write(&self.release, "").unwrap();
        self.busy.recv().unwrap().unwrap();
    }
}
