//! Qwen Code's IDE mode (src/agents/qwen.rs: Gemini CLI's companion protocol, renamed) through a
//! plain HTTP client on its loopback port (gemini_ide.rs's), against a real headless Neovim:
//! the lock file in `${QWEN_HOME:-~/.qwen}/ide` (private, naming Neovim's pid, gone on quit), the
//! Bearer token, the variables Neovim's terminals get, and an answer in its terminal that it
//! does not take from us (said, and its write pending).

use std::path::{Path, PathBuf};

use crate::gemini_ide::{propose, request, temp_dir, token_of_ours, wait_shown, Client};
use crate::harness::{self, *};
use pi_ide_testkit::nvim::Options;
use pi_ide_testkit::Nvim;
use serde_json::{json, Value};

fn start(env: Vec<(String, String)>) -> Nvim {
    Nvim::start_with(Options {
        before: Some("require('pi_ide_test').record_notify()".into()),
        after: Some("require('pi-ide').setup({ qwen = true })".into()),
        env,
        ..Default::default()
    })
}

/// `nvim`'s lock file in `dir` (the one naming its pid), once written.
fn lock_file(dir: &Path, nvim: &Nvim) -> (PathBuf, Value) {
    let mut found = None;
    wait_until("the lock file", PATIENCE, || {
        let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
        found = entries.map(|e| e.path()).find_map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            (v["ppid"] == nvim.pid()).then_some((p, v))
        });
        found.is_some()
    });
    found.unwrap()
}

#[test]
fn the_lock_file_names_neovims_pid_is_private_and_only_the_bearer_gets_in() {
    let mut nvim = start(vec![]);
    let dir = nvim.home.join(".qwen/ide");
    let (path, file) = lock_file(&dir, &nvim);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o077, 0, "a private folder");
    let port = file["port"].as_u64().unwrap();
    assert_eq!(path.file_name().unwrap().to_string_lossy(), format!("{port}.lock"));
    let token = token_of_ours(&file, &nvim);
    let cwd = nvim.cwd.canonicalize().unwrap();

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
    let host = ("Host", format!("127.0.0.1:{port}"));
    assert_eq!(request(port, "POST", &[host.clone()], &init).status, 401, "no token");
    assert_eq!(request(port, "POST", &[host, ("Authorization", "Bearer nope".into())], &init).status, 401);
    let c = Client::connect(port, &token);
    let tools = c.post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<String> = serde_json::from_str::<Value>(&tools.body).unwrap()["result"]["tools"]
        .as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["openDiff", "closeDiff"], "both, or it shows no diff");

    // Neovim's terminals pick this Neovim: its port, and the workspace.
    let env = nvim.lua("return { vim.env.QWEN_CODE_IDE_SERVER_PORT, vim.env.QWEN_CODE_IDE_WORKSPACE_PATH }");
    assert_eq!(env[0], port.to_string());
    assert!(env[1].as_str().is_some_and(|w| w.split(':').any(|f| Path::new(f).canonicalize().ok().as_deref() == Some(&cwd))), "{env}");
    let status = nvim.lua("return table.concat(require('pi-ide.core.status').lines(), '\\n')");
    assert!(status.as_str().unwrap().contains(&format!("qwen: http://127.0.0.1:{port}/mcp, lock file {}", path.display())), "{status}");
    assert!(harness::health(&nvim).contains("Qwen Code's IDE mode served"));

    nvim.command("PiIde stop").unwrap();
    wait_until("the lock file removed on stop", PATIENCE, || !path.exists());
    assert!(nvim.lua("return vim.env.QWEN_CODE_IDE_SERVER_PORT").is_null(), "not exported once stopped");
    assert!(nvim.quit(PATIENCE));
}

/// QWEN_HOME names the folder; one of another user's there is refused (the CLI checks no
/// owner: anyone who can write there could send it elsewhere), said, and the rest served.
#[test]
fn qwen_home_is_where_the_lock_file_goes_and_another_users_folder_is_refused() {
    let tmp = temp_dir("qwen-home");
    let home = tmp.join("qh");
    let mut nvim = start(vec![("QWEN_HOME".into(), home.to_string_lossy().into())]);
    let (path, _) = lock_file(&home.join("ide"), &nvim);
    assert!(nvim.quit(PATIENCE));
    assert!(!path.exists(), "the lock file is removed on quit");

    // SAFETY: geteuid has no preconditions.
    let theirs = if unsafe { libc::geteuid() } == 0 {
        let theirs = tmp.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        theirs
    } else {
        PathBuf::from("/usr/share")
    };
    let mut nvim = start(vec![("QWEN_HOME".into(), theirs.to_string_lossy().into())]);
    nvim.wait_t("has_note", json!(["not serving Qwen Code"]), PATIENCE);
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(true), "the rest is served");
    assert!(!theirs.join("ide").exists(), "nothing written there");
    assert!(nvim.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Qwen Code writes its own proposal after a yes in its terminal, whatever closeDiff answers:
/// a hunk declined (or a line edited) in our review first is lost on its side. One line says so
/// (80 columns), and its write is a pending change (the close is no accept), decided again.
/// Nothing declined, nothing is said.
#[test]
fn a_yes_in_its_terminal_after_a_declined_hunk_is_said_and_its_write_is_pending() {
    let mut nvim = start(vec![]);
    nvim.command("set columns=80").unwrap();
    // The workspace's files, there before the agent came (its snapshot has them).
    let h = file_with(&nvim, "h.txt", "one\ntwo\n");
    let o = file_with(&nvim, "o.txt", "old\n");
    let (_, file) = lock_file(&nvim.home.join(".qwen/ide"), &nvim);
    let c = Client::of(&file);
    watching(&nvim);
    propose(&c, &nvim, 2, &h, "four\ntwo\nsix\n");
    hunks_counted(&nvim);
    type_keys(&nvim, "G:PiIde hunk reject<CR>");
    nvim.wait_for("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') == 'four|two'", PATIENCE);
    c.call(3, "closeDiff", json!({"filePath": h, "suppressNotification": true}));
    wait_shown(&nvim, 0, "the review closed");
    let said = "Qwen ignores your review of h.txt: its write is pending";
    nvim.wait_t("has_note", json!([said]), PATIENCE);
    // Qwen Code writes its whole proposal.
    std::fs::write(&h, "four\ntwo\nsix\n").unwrap();
    let change = wait_pending(&nvim, &h, PATIENCE);
    assert_eq!(change["agent"], "qwen", "{change}");
    assert_eq!(change["hunks"], 2, "both hunks to decide again: {change}");
    for note in nvim.notes() {
        assert!(note.chars().count() < 80, "one line at 80 columns: {note}");
    }

    // Allowed as proposed: nothing lost, nothing said (before the review goes).
    let before = nvim.notes().len();
    propose(&c, &nvim, 4, &o, "new\n");
    c.call(5, "closeDiff", json!({"filePath": o, "suppressNotification": true}));
    wait_shown(&nvim, 0, "the second review closed");
    assert!(nvim.notes()[before..].iter().all(|n| !n.contains("ignores your review")), "{:?}", nvim.notes());
    assert!(nvim.quit(PATIENCE));
}

/// Started elsewhere (a tmux pane) with no port given, it takes the newest lock file holding
/// its folder: the Neovim that got the focus last rewrites its own, so it is that one.
#[test]
fn the_neovim_focused_last_has_the_newest_lock_file() {
    let tmp = temp_dir("qwen-focus");
    let env = vec![("QWEN_HOME".into(), tmp.to_string_lossy().into_owned())];
    let mut first = start(env.clone());
    let (ours, _) = lock_file(&tmp.join("ide"), &first);
    let mut second = start(env);
    let (theirs, _) = lock_file(&tmp.join("ide"), &second);
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    wait_until("the second's lock file newer", PATIENCE, || mtime(&theirs) > mtime(&ours));
    // The event its terminal's focus report fires (an embedded Neovim has no terminal to get one).
    first.command("doautocmd FocusGained").unwrap();
    wait_until("the first's lock file the newest once it has the focus", PATIENCE, || mtime(&ours) > mtime(&theirs));
    assert!(first.quit(PATIENCE) && second.quit(PATIENCE));
    let _ = std::fs::remove_dir_all(&tmp);
}
