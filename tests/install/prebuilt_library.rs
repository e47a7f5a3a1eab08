//! Installing without a Rust toolchain: at a release tag, the release's prebuilt library is
//! downloaded, its SHA-256 checked before anything is placed where Neovim loads it, and
//! installed by rename; anything wrong falls back to cargo, or says what to install. Offline:
//! a release server on 127.0.0.1, started here, serves a release built from this checkout
//! (vim_pack.rs installs through it too).

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, temp_dir, Options};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) const TAG: &str = "v0.1.0";

/// A plain HTTP/1.1 file server: GET /<path> serves `dir/<path>`; `truncate` cuts each body in
/// half (the connection drops mid-download).
pub(crate) struct ReleaseServer {
    pub(crate) port: u16,
    truncate: Arc<AtomicBool>,
}

impl ReleaseServer {
    /// Its base URL, for PI_IDE_RELEASES_URL.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

pub(crate) fn serve(dir: PathBuf) -> ReleaseServer {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let truncate = Arc::new(AtomicBool::new(false));
    let cut = truncate.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut s = stream;
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&req).lines().next().unwrap_or("").to_owned();
            let path = line.split_whitespace().nth(1).unwrap_or("/").trim_start_matches('/');
            let file = dir.join(path);
            match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let n = if cut.load(Ordering::Relaxed) { body.len() / 2 } else { body.len() };
                    let _ = s.write_all(&body[..n]);
                }
                _ => {
                    let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                }
            }
        }
    });
    ReleaseServer { port, truncate }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let dir = temp_dir("sum");
    let f = dir.join("f");
    std::fs::write(&f, bytes).unwrap();
    let out = std::process::Command::new("sha256sum").arg(&f).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

fn this_target() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    }
}

/// This checkout's built library.
pub(crate) fn built_library() -> Vec<u8> {
    std::fs::read(plugin_root().join("target/release/libpi_ide.so")).unwrap()
}

/// A release layout: <dir>/v0.1.0/libpi_ide-<target>.so and its .sha256, from this checkout's
/// build (`lib` replaces the library's bytes, `sum_of` the bytes the checksum is made from).
pub(crate) fn release(lib: Option<Vec<u8>>, sum_of: Option<Vec<u8>>) -> PathBuf {
    let dir = temp_dir("release");
    release_at(&dir, TAG, lib, sum_of);
    dir
}

/// Release `tag` added to the release layout at `dir` (see [`release`]).
pub(crate) fn release_at(dir: &Path, tag: &str, lib: Option<Vec<u8>>, sum_of: Option<Vec<u8>>) {
    let built = built_library();
    let tag_dir = dir.join(tag);
    std::fs::create_dir_all(&tag_dir).unwrap();
    let name = format!("libpi_ide-{}.so", this_target());
    let sum = sha256_hex(sum_of.as_ref().unwrap_or(&built));
    std::fs::write(tag_dir.join(&name), lib.unwrap_or(built)).unwrap();
    std::fs::write(tag_dir.join(format!("{name}.sha256")), format!("{sum}  {name}\n")).unwrap();
    // The MCP clients' program, beside it.
    let program = std::fs::read(plugin_root().join("target/release/pi-ide-mcp")).unwrap();
    let name = format!("pi-ide-mcp-{}", this_target());
    std::fs::write(tag_dir.join(format!("{name}.sha256")), format!("{}  {name}\n", sha256_hex(&program))).unwrap();
    std::fs::write(tag_dir.join(&name), program).unwrap();
}

/// Git in `dir`, as a machine without an identity or a config of its own runs it.
pub(crate) fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A clone of this plugin at the release tag, as lazy.nvim leaves it with `version = "*"`.
pub(crate) fn clone_at_tag() -> PathBuf {
    let dir = fresh_copy();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "release"]);
    git(&dir, &["tag", TAG]);
    dir
}

/// A Neovim with the plugin at `dir` on its runtimepath, a PATH of `path`, and releases at
/// `releases`.
fn nvim_at(dir: &Path, path: &str, releases: &str) -> Nvim {
    Nvim::start_with(Options {
        before: Some(format!(
            "vim.opt.rtp:remove('{}') vim.opt.rtp:prepend('{}') require('pi_ide_test').record_notify()",
            plugin_root().display(),
            dir.display()
        )),
        env: vec![
            ("PATH".into(), path.into()),
            ("PI_IDE_RELEASES_URL".into(), releases.into()),
        ],
        ..Default::default()
    })
}

/// What lazy.nvim runs without a `build` key: "ok", or the error it shows.
fn lazy_build(nvim: &Nvim, dir: &Path) -> String {
    nvim.lua_with(
        "local ok, e = pcall(dofile, ...) return ok and 'ok' or e",
        vec![dir.join("build.lua").to_string_lossy().to_string().into()],
    )
    .as_str()
    .unwrap()
    .to_owned()
}

/// No cargo anywhere on it.
pub(crate) const NO_CARGO: &str = "/usr/bin:/bin";

pub(crate) fn installed(dir: &Path) -> PathBuf {
    dir.join("target/release/libpi_ide.so")
}

#[test]
fn at_a_release_tag_the_prebuilt_library_is_downloaded_verified_and_loads_without_cargo() {
    let dir = clone_at_tag();
    let server = serve(release(None, None));
    let url = format!("http://127.0.0.1:{}", server.port);
    let nvim = nvim_at(&dir, NO_CARGO, &url);
    assert_eq!(nvim.lua("return vim.fn.executable('cargo')"), json!(0));
    assert_eq!(lazy_build(&nvim, &dir), "ok");
    let built = built_library();
    assert_eq!(std::fs::read(installed(&dir)).unwrap(), built);
    // Where it came from is recorded beside it.
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("target/release/libpi_ide.so.source.json")).unwrap())
            .unwrap();
    assert_eq!(record["tag"], TAG);
    assert_eq!(record["sha256"], sha256_hex(&built));
    assert!(record["url"].as_str().unwrap().starts_with(&url), "{record}");
    // The MCP clients' program came with it, verified, and runs.
    let program = dir.join("target/release/pi-ide-mcp");
    assert_eq!(std::fs::read(&program).unwrap(), std::fs::read(plugin_root().join("target/release/pi-ide-mcp")).unwrap());
    let version = std::process::Command::new(&program).arg("--version").output().unwrap();
    assert!(version.status.success() && String::from_utf8_lossy(&version.stdout).starts_with("pi-ide-mcp "), "{version:?}");
    // No temporary files left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.join("target/release"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    drop(nvim);
    // A fresh Neovim loads it and serves; :checkhealth says where it came from.
    let nvim = nvim_at(&dir, NO_CARGO, &url);
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    let mut p = nvim.peer();
    assert!(p.call_tool("getDiagnostics", json!({})).unwrap().get("result").is_some());
    nvim.command("checkhealth pi-ide").unwrap();
    let health = nvim
        .lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(health.contains("the prebuilt library of v0.1.0"), "{health}");
    assert!(health.contains("SHA-256 verified against http://127.0.0.1"), "{health}");
    assert!(health.contains(".so.sha256"), "{health}");
    assert!(!health.contains("WARNING cargo"), "{health}");
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}

#[test]
fn a_tampered_or_truncated_download_is_refused_and_nothing_is_installed() {
    let dir = clone_at_tag();
    // Tampered: other bytes than the checksum was made from.
    let mut evil = built_library();
    let mid = evil.len() / 2;
    evil[mid] ^= 0xff;
    let server = serve(release(Some(evil), None));
    let nvim = nvim_at(&dir, NO_CARGO, &format!("http://127.0.0.1:{}", server.port));
    let err = lazy_build(&nvim, &dir);
    assert!(err.contains("does not match its checksum") && err.contains("was not installed"), "{err}");
    assert!(err.contains("cargo was not found"), "{err}");
    assert!(!installed(&dir).exists(), "a tampered library was installed");
    // Truncated: the connection drops halfway.
    let server = serve(release(None, None));
    server.truncate.store(true, Ordering::Relaxed);
    let nvim = nvim_at(&dir, NO_CARGO, &format!("http://127.0.0.1:{}", server.port));
    let err = lazy_build(&nvim, &dir);
    assert!(err.contains("failed") || err.contains("checksum"), "{err}");
    assert!(!installed(&dir).exists(), "a truncated library was installed");
    let left: Vec<_> = std::fs::read_dir(dir.join("target/release"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}

#[test]
fn without_a_release_server_it_builds_with_cargo_and_without_cargo_it_says_what_to_install() {
    let dir = clone_at_tag();
    // Nothing listens on this port: no network, as far as the download can tell.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{down}");
    // No cargo either: one clear message with what to install.
    let nvim = nvim_at(&dir, NO_CARGO, &url);
    let err = lazy_build(&nvim, &dir);
    assert!(err.contains("install a Rust toolchain (https://rustup.rs)"), "{err}");
    assert!(err.contains("the download of"), "{err}");
    assert!(!err.contains("stack traceback"), "{err}");
    // With cargo: the fallback builds. (A fake cargo that records its call; the real build
    // of a fresh copy is tested in first_five_minutes.rs.)
    let (bin, marker) = fake_cargo();
    let nvim = nvim_at(&dir, &format!("{}:{NO_CARGO}", bin.display()), &url);
    assert_eq!(lazy_build(&nvim, &dir), "ok");
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "build --release");
    assert!(installed(&dir).exists());
    assert!(!dir.join("target/release/libpi_ide.so.source.json").exists());
    // Not at a tag (a branch checkout): straight to cargo, without a download.
    std::fs::remove_file(&marker).unwrap();
    let server = serve(release(None, None));
    let out = std::process::Command::new("git").arg("-C").arg(&dir).args(["tag", "-d", TAG]).output().unwrap();
    assert!(out.status.success());
    let nvim = nvim_at(&dir, &format!("{}:{NO_CARGO}", bin.display()), &format!("http://127.0.0.1:{}", server.port));
    nvim.command("PiIde build").unwrap();
    nvim.wait_t("has_note", json!(["built from source"]), PATIENCE);
    assert!(marker.exists());
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("not at a release tag"), "{notes}");
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
    std::fs::remove_dir_all(&bin).ok();
}

#[test]
fn piide_build_downloads_in_the_background_with_progress() {
    let dir = clone_at_tag();
    let server = serve(release(None, None));
    let nvim = nvim_at(&dir, NO_CARGO, &format!("http://127.0.0.1:{}", server.port));
    nvim.command("PiIde build").unwrap();
    nvim.wait_for(
        "require('pi_ide_test').has_note('SHA-256 verified')",
        PATIENCE,
    );
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("downloading libpi_ide-"), "{notes}");
    // The library was missing: it is loaded at once and the server starts.
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    // `:PiIde build source` skips the download (and here, with no cargo, says so).
    nvim.command("PiIde build source").unwrap();
    nvim.wait_t("has_note", json!(["cargo was not found"]), PATIENCE);
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}

/// A fake cargo on a PATH of its own: it records its arguments in `called` and "builds"
/// by copying this checkout's library.
pub(crate) fn fake_cargo() -> (PathBuf, PathBuf) {
    let bin = temp_dir("bin");
    let marker = bin.join("called");
    let real = plugin_root().join("target/release/libpi_ide.so");
    std::fs::write(
        bin.join("cargo"),
        format!(
            "#!/bin/sh\necho \"$@\" > {}\nmkdir -p target/release && cp {} target/release/libpi_ide.so\n",
            marker.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("cargo"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (bin, marker)
}

#[test]
fn at_a_release_tag_with_local_changes_to_the_sources_it_builds_from_source_at_once() {
    let dir = clone_at_tag();
    // The user patched the Rust core: the release's library was not built from this.
    let lib = dir.join("src/lib.rs");
    let patched = std::fs::read_to_string(&lib).unwrap() + "\n// a local change\n";
    std::fs::write(&lib, patched).unwrap();
    let server = serve(release(None, None));
    let (bin, marker) = fake_cargo();
    let nvim = nvim_at(&dir, &format!("{}:{NO_CARGO}", bin.display()), &format!("http://127.0.0.1:{}", server.port));
    nvim.command("PiIde build").unwrap();
    nvim.wait_t("has_note", json!(["built from source", "local changes"]), PATIENCE);
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "build --release");
    assert!(
        !dir.join("target/release/libpi_ide.so.source.json").exists(),
        "the release's library was not downloaded"
    );
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
    std::fs::remove_dir_all(&bin).ok();
}

#[test]
fn a_checksum_over_plain_http_is_refused() {
    let dir = clone_at_tag();
    for url in ["http://releases.example.invalid", "ftp://releases.example.invalid"] {
        let nvim = nvim_at(&dir, NO_CARGO, url);
        let err = lazy_build(&nvim, &dir);
        assert!(err.contains("proves nothing") && err.contains("https"), "{url}: {err}");
        assert!(err.contains("cargo was not found"), "{err}");
        assert!(!installed(&dir).exists());
    }
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}

#[test]
fn the_lua_build_function_for_a_managers_hook_returns_how_it_went_and_tells_it() {
    // What a rocks.nvim hook or a plain packadd user's config calls.
    let dir = clone_at_tag();
    let server = serve(release(None, None));
    let nvim = nvim_at(&dir, NO_CARGO, &server.url());
    let build = |args: &str| nvim.lua(&format!("return {{ require('pi-ide').build({args}) }}"));
    let r = build("");
    assert_eq!(r[0], json!(true), "{r}");
    assert!(r[1].as_str().unwrap().contains("installed the prebuilt library for v0.1.0"), "{r}");
    assert!(nvim.t("has_note", json!(["installed the prebuilt library for v0.1.0"])) == json!(true));
    assert_eq!(std::fs::read(installed(&dir)).unwrap(), built_library());
    // It loads at once: the server starts.
    assert_eq!(nvim.lua("return require('pi-ide').start()"), json!(true));
    // Asked again for the same release: nothing to do, said in the answer only.
    let r = build("");
    assert_eq!(r[0], json!(true), "{r}");
    assert!(r[1].as_str().unwrap().contains("in place already"), "{r}");
    // From source without cargo: false and what to install; bad options: false and why.
    let r = build("{ source = true }");
    assert_eq!(r[0], json!(false), "{r}");
    assert!(r[1].as_str().unwrap().contains("install a Rust toolchain"), "{r}");
    let r = build("'source'");
    assert_eq!(r[0], json!(false), "{r}");
    assert!(r[1].as_str().unwrap().contains("takes a table of options"), "{r}");
    // :PiIde build completes its argument.
    assert_eq!(nvim.lua("return vim.fn.getcompletion('PiIde build ', 'cmdline')"), json!(["source"]));
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}
