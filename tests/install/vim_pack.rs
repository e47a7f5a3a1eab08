//! Installing with Neovim's own plugin manager (vim.pack, 0.12): a user's init.lua is the
//! README's own "Install with vim.pack" block, the plugin is cloned from a local git remote with
//! release tags, and the release's prebuilt core comes from the local release server of
//! prebuilt_library.rs. These run on a Neovim that has vim.pack whichever Neovim the suite is on
//! (testkit's `nvim_with_pack`): never skipped, never passed without it.

use crate::harness::*;
use crate::prebuilt_library::{
    built_library, clone_at_tag, git, installed, release, release_at, serve, TAG,
};
use pi_ide_testkit::nvim::nvim_with_pack;
use pi_ide_testkit::tui::readme_lua_block;
use std::path::{Path, PathBuf};

/// The release after TAG.
const NEXT: &str = "v0.2.0";

/// Git (vim.pack's) and curl, and no cargo.
const GIT_NO_CARGO: &str = "/usr/local/bin:/usr/bin:/bin";

/// A bare repository of this plugin, as the one vim.pack clones: `work` (a copy of this
/// checkout's files, committed and tagged TAG) pushes to `bare`.
struct Remote {
    work: PathBuf,
    bare: PathBuf,
}

fn remote_at_tag() -> Remote {
    let work = clone_at_tag();
    let bare = work.parent().unwrap().join("remote/pi-ide.nvim");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare"]);
    let remote = Remote { work, bare };
    remote.push();
    remote
}

impl Remote {
    fn push(&self) {
        git(&self.work, &["push", "-q", &self.bare.to_string_lossy(), "HEAD:refs/heads/main", "--tags"]);
    }

    /// A new release `tag`: a commit outside the Rust sources (the library checks their stamp),
    /// tagged and pushed.
    fn release(&self, tag: &str) {
        let readme = self.work.join("README.md");
        let text = std::fs::read_to_string(&readme).unwrap() + &format!("\n{tag}\n");
        std::fs::write(&readme, text).unwrap();
        git(&self.work, &["commit", "-qam", tag]);
        git(&self.work, &["tag", tag]);
        self.push();
    }

    fn url(&self) -> String {
        format!("file://{}", self.bare.display())
    }
}

/// The README's vim.pack block, installing from `remote` instead of GitHub.
fn init_lua(remote: &Remote) -> String {
    let block = readme_lua_block("## Install with vim.pack (Neovim 0.12)");
    let ours = block.replace("\"https://github.com/<owner>/pi-ide.nvim\"", &format!("{:?}", remote.url()));
    assert_ne!(ours, block, "the README's vim.pack block names no \"https://github.com/<owner>/pi-ide.nvim\"");
    ours
}

/// A user's Neovim (with vim.pack) starting with the README's config: PATH `path`, releases at
/// `releases` (none: where the clone's origin says, a local path here, so none).
fn start(remote: &Remote, path: &str, releases: Option<&str>) -> Nvim {
    let mut env = vec![("PATH".to_string(), path.to_string()), ("GIT_CONFIG_NOSYSTEM".into(), "1".into())];
    if let Some(url) = releases {
        env.push(("PI_IDE_RELEASES_URL".into(), url.into()));
    }
    Nvim::start_as_user(&nvim_with_pack(), &init_lua(remote), &env)
}

/// Where vim.pack put the plugin.
fn plugin_dir(nvim: &Nvim) -> PathBuf {
    nvim.home.join("data/nvim/site/pack/core/opt/pi-ide.nvim")
}

/// The tag vim.pack checked out.
fn checked_out(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["describe", "--tags", "--exact-match", "HEAD"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The tag the installed library's record names.
fn installed_tag(dir: &Path) -> Value {
    let record = std::fs::read_to_string(dir.join("target/release/libpi_ide.so.source.json")).unwrap();
    serde_json::from_str::<Value>(&record).unwrap()["tag"].clone()
}

/// The errors pi-ide.nvim showed.
fn our_errors(nvim: &Nvim) -> Vec<String> {
    let errors: Vec<String> = serde_json::from_value(nvim.t("notes_at", json!([4]))).unwrap();
    errors.into_iter().filter(|e| e.starts_with("pi-ide.nvim")).collect()
}

#[test]
fn installed_at_a_release_tag_its_prebuilt_core_is_in_place_and_the_server_starts() {
    let remote = remote_at_tag();
    let server = serve(release(None, None));
    let nvim = start(&remote, GIT_NO_CARGO, Some(&server.url()));
    let plugin = plugin_dir(&nvim);
    assert_eq!(checked_out(&plugin), TAG);
    assert_eq!(std::fs::read(installed(&plugin)).unwrap(), built_library(), "{:?}", nvim.notes());
    assert_eq!(installed_tag(&plugin), TAG);
    // The server started with it (setup() in the config), and an agent connects.
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    let mut p = nvim.peer();
    assert!(p.call_tool("getDiagnostics", json!({})).unwrap().get("result").is_some());
    let status = nvim.lua("return vim.fn.execute('PiIde status')");
    assert!(status.as_str().unwrap().contains("running on 127.0.0.1:"), "{status}");
    let notes = nvim.notes().join("\n");
    assert!(notes.contains(&format!("installed the prebuilt library for {TAG}")), "{notes}");
    // Told once (vim.pack 0.12-dev runs the hook twice for an install).
    assert!(!notes.contains("in place already"), "{notes}");
    assert!(our_errors(&nvim).is_empty(), "{notes}");
}

#[test]
fn a_new_tag_is_updated_to_by_vim_pack_update_and_its_core_installed_beside_the_loaded_one() {
    let remote = remote_at_tag();
    let releases = release(None, None);
    let server = serve(releases.clone());
    let nvim = start(&remote, GIT_NO_CARGO, Some(&server.url()));
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    let plugin = plugin_dir(&nvim);
    // v0.2.0: its own library (other bytes than v0.1.0's; trailing bytes load all the same).
    let mut next = built_library();
    next.extend_from_slice(NEXT.as_bytes());
    release_at(&releases, NEXT, Some(next.clone()), Some(next.clone()));
    remote.release(NEXT);
    // Without the confirmation buffer (force): what `:w` in it does.
    nvim.lua("vim.schedule(function() vim.pack.update(nil, { force = true }) end)");
    nvim.wait_t("has_note", json!([format!("installed the prebuilt library for {NEXT}")]), PATIENCE * 2);
    assert_eq!(checked_out(&plugin), NEXT);
    assert_eq!(std::fs::read(installed(&plugin)).unwrap(), next);
    assert_eq!(installed_tag(&plugin), NEXT);
    // The loaded library was not replaced in place: the server still serves, and a restart is asked for.
    let mut p = nvim.peer();
    assert!(p.call_tool("getDiagnostics", json!({})).unwrap().get("result").is_some());
    nvim.wait_t("has_note", json!(["Restart Neovim to use it"]), PATIENCE);
    assert!(our_errors(&nvim).is_empty(), "{:?}", nvim.notes());
}

#[test]
fn a_tampered_download_is_refused_with_a_clear_message_and_nothing_installed() {
    let remote = remote_at_tag();
    let mut evil = built_library();
    let mid = evil.len() / 2;
    evil[mid] ^= 0xff;
    let server = serve(release(Some(evil), None));
    let nvim = start(&remote, GIT_NO_CARGO, Some(&server.url()));
    let plugin = plugin_dir(&nvim);
    assert_eq!(checked_out(&plugin), TAG, "vim.pack installed the plugin");
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("does not match its checksum") && notes.contains("it was not installed"), "{notes}");
    assert!(!installed(&plugin).exists(), "a tampered library was installed");
    // One message: why, and what to do (no cargo here to build it instead).
    let errors = our_errors(&nvim);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].contains("does not match its checksum") && errors[0].contains("rustup.rs"), "{errors:#?}");
    let left: Vec<_> = std::fs::read_dir(plugin.join("target/release"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(false));
}

#[test]
fn without_cargo_or_a_release_one_message_says_what_to_do() {
    let remote = remote_at_tag();
    let nvim = start(&remote, GIT_NO_CARGO, None);
    let plugin = plugin_dir(&nvim);
    assert_eq!(checked_out(&plugin), TAG, "vim.pack installed the plugin");
    assert!(!installed(&plugin).exists());
    // The server's start at VimEnter (over once Nvim::start_as_user returns) said no more.
    let errors = our_errors(&nvim);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert!(e.contains("cannot tell where its releases are"), "{e}");
    assert!(e.contains("install a Rust toolchain (https://rustup.rs), then run :PiIde build"), "{e}");
    assert!(!e.contains('\n') && !e.contains("stack traceback"), "{e}");
}
