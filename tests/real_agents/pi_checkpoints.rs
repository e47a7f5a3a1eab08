//! Checkpoints with the real Pi in `:PiIde chat` (as tests/real_agents/pi_chat.rs runs it: the pinned
//! Pi in RPC mode with the pi-ide extension, a loopback OpenAI mock as its model). The model has
//! Pi's `bash` tool change files behind any review; the chat and the statusline then say so,
//! `:PiIde changes` lists and shows them, and `:PiIde undo!` puts the workspace back — in a git
//! repository without touching the user's HEAD, index or stash, and in a folder git knows not.
//!
//! Neovim's state folder (where the shadow repositories live) is the private one
//! pi_ide_testkit::nvim gives each Neovim (`XDG_STATE_HOME` under its temp home).


use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::*;
use crate::{pi_cli, terminal};
use crate::openai_mock::{OpenAiMock, Reply};
use crate::pi_cli::{pi_env, Folders, PI_PATIENCE};
use pi_ide_testkit::nvim::Options;

const OURS: &str = "nvim-checkpoints-under-test";

/// Dropped in field order: Neovim (and its Pi), the model, the folders.
struct Rig {
    nvim: Nvim,
    model: OpenAiMock,
    dirs: Folders,
}

impl Rig {
    /// A Neovim in a fresh folder, which `prepare` fills first (before Neovim or Pi look at
    /// it); its chat runs Pi with the pi-ide extension against the mock.
    fn new(prepare: impl FnOnce(&Path)) -> Rig {
        let dirs = Folders::new();
        prepare(&dirs.work);
        let model = OpenAiMock::start();
        let env = pi_env(&dirs.pi, &model.base_url());
        let nvim = Nvim::start_with(Options {
            cwd: Some(dirs.work.clone()),
            after: Some(format!(
                "require('pi-ide').setup({{ ide_name = '{OURS}', terminal = {{ agents = {{ pi = {{ cmd = {{ {} }}, env = {{ {} }} }} }} }} }})",
                terminal::lua_list(pi_cli::pi_command()),
                terminal::lua_fields(env)
            )),
            ..Default::default()
        });
        nvim.wait_for("require('pi-ide').info().running", PATIENCE);
        nvim.record_notify();
        nvim.t("record_events", json!(["PiIdeCheckpoint", "PiIdeChanges", "PiIdeUndone"]));
        // An undo asking for a file's name would block a headless Neovim: answer "", keep asks.
        nvim.lua("_G.asked = {} vim.fn.input = function(p) table.insert(_G.asked, p) return '' end");
        Rig { nvim, model, dirs }
    }

    fn text(&self) -> String {
        let t = self.nvim.lua("return require('pi-ide.features.chat.view').text()");
        t.as_str().unwrap_or_default().to_owned()
    }

    /// What the statusline shows.
    fn statusline(&self) -> String {
        let s = self.nvim.lua("return require('pi-ide').status()");
        s.as_str().unwrap_or_default().to_owned()
    }

    /// Polls `cond` until it holds; on time-out, fails with the state of every side.
    fn wait(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + PI_PATIENCE;
        while !cond() {
            if Instant::now() > deadline {
                panic!("timed out waiting for: {what}\n{}", self.report());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_text(&self, part: &str) -> String {
        let mut seen = String::new();
        self.wait(&format!("the conversation to show {part:?}"), || {
            seen = self.text();
            seen.contains(part)
        });
        seen
    }

    fn wait_event(&self, event: &str) -> Value {
        self.wait(&format!("User {event}"), || self.nvim.t("has_event", json!([event])) == json!(true));
        self.nvim.t("last_event", json!([event]))
    }

    /// Opens the chat, sends `prompt` (the model answers with `bash` running `command`, then a
    /// text) and waits until the turn is over and its warning `warning` is in the chat.
    fn bash_turn(&self, prompt: &str, command: &str, warning: &str) {
        self.model.on_user(prompt, Reply::tool("bash", json!({ "command": command })));
        self.model.after_tool("bash", Reply::text("Mock model: the files are changed."));
        self.nvim.command("PiIde chat").unwrap();
        type_keys(&self.nvim, "<Esc>");
        self.wait("get_state to name the model", || {
            self.nvim.lua("return require('pi-ide.features.chat').info().model").is_string()
        });
        let sent = self.nvim.lua_with("return require('pi-ide.features.chat').send(...)", vec![prompt.into()]);
        assert_eq!(sent, json!(true), "the chat refused {prompt:?}\n{}", self.report());
        self.wait_text("Mock model: the files are changed.");
        let t = self.wait_text(warning);
        assert_eq!(t.matches(warning).count(), 1, "{t}");
        self.wait("the statusline to warn", || self.statusline().contains(warning));
        // The turn's start checkpoint was recorded once, as turn 1 of Pi.
        assert_eq!(self.nvim.t("count_events", json!(["PiIdeCheckpoint"])), json!(1));
        assert_eq!(self.nvim.t("last_event", json!(["PiIdeCheckpoint"])), json!({"turn": 1, "agent": "pi"}));
        self.shadow_is_in_neovims_state();
    }

    /// The shadow repository is under Neovim's private stdpath("state"), for this folder.
    fn shadow_is_in_neovims_state(&self) {
        let state = self.nvim.home.join("state/nvim");
        assert_eq!(self.nvim.lua("return vim.fn.stdpath('state')"), json!(state.to_string_lossy()));
        let dirs: Vec<PathBuf> = std::fs::read_dir(state.join("pi-ide/checkpoints"))
            .expect("no checkpoints in Neovim's state folder")
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let folder = std::fs::read_to_string(dirs[0].join("folder")).unwrap();
        assert_eq!(Path::new(&folder), self.dirs.work);
        assert!(dirs[0].join("git/HEAD").exists(), "no shadow repository in {}", dirs[0].display());
    }

    /// `:PiIde changes`: its quickfix list's title and (file relative to the folder, lnum,
    /// text) of each entry, once the list is set and the review tab open.
    fn changes(&self) -> (String, Vec<(String, i64, String)>) {
        self.nvim.command("PiIde changes").unwrap();
        let fired = self.wait_event("PiIdeChanges");
        self.wait("the review tab", || self.nvim.lua("return vim.t.pi_ide_changes == true") == json!(true));
        // And the list's window in it, once the first file is shown.
        self.wait("the quickfix window", || self.nvim.lua("return vim.fn.getqflist({ winid = 0 }).winid ~= 0") == json!(true));
        let qf = self.nvim.lua(
            "local l = vim.fn.getqflist({ title = 1, items = 1 }) local out = {}
             for _, it in ipairs(l.items) do table.insert(out, { vim.api.nvim_buf_get_name(it.bufnr), it.lnum, it.text }) end
             return { l.title, out }",
        );
        let work = format!("{}/", self.dirs.work.display());
        let items: Vec<(String, i64, String)> = qf[1]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let name = i[0].as_str().unwrap();
                let rel = name.strip_prefix(&work).unwrap_or(name).to_owned();
                (rel, i[1].as_i64().unwrap(), i[2].as_str().unwrap().to_owned())
            })
            .collect();
        assert_eq!(fired, json!({"turn": 1, "count": items.len()}));
        (qf[0].as_str().unwrap().to_owned(), items)
    }

    /// `:PiIde undo!`: the data of its PiIdeUndone, once done.
    fn undo(&self) -> Value {
        self.nvim.command("PiIde undo!").unwrap();
        let data = self.wait_event("PiIdeUndone");
        assert_eq!(self.nvim.lua("return _G.asked"), json!([]), "undo asked for a file's name");
        data
    }

    fn notes(&self) -> Vec<String> {
        self.nvim.notes()
    }

    /// The lines of the chat's prompt area.
    fn prompt_area(&self) -> Value {
        self.nvim.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('Pi prompt'), 0, -1, false)")
    }

    fn report(&self) -> String {
        let log = std::fs::read_to_string(self.nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
        let log: Vec<&str> = log.lines().collect();
        format!(
            "--- the conversation ---\n{}\n--- statusline {:?} ---\n--- tab {} of {}: its windows ---\n{:?}\n--- notes ---\n{:?}\n--- the turns the mock model got ---\n{}\n--- pi-ide.log ---\n{}",
            self.text(),
            self.statusline(),
            self.nvim.lua("return vim.fn.tabpagenr()"),
            self.nvim.lua("return vim.fn.tabpagenr('$')"),
            tab_windows(&self.nvim),
            self.notes(),
            self.model.turns_report().join("\n"),
            log[log.len().saturating_sub(60)..].join("\n"),
        )
    }
}

/// The windows of the current tab: (buffer name, 'diff', the buffer's lines, 'modifiable').
fn tab_windows(nvim: &Nvim) -> Vec<(String, bool, Value, bool)> {
    let wins = nvim.t("real_agents.tab_windows", json!([]));
    wins.as_array()
        .unwrap()
        .iter()
        .map(|w| (w[0].as_str().unwrap().to_owned(), w[1] == json!(true), w[2].clone(), w[3] == json!(true)))
        .collect()
}

/// `git <args>` in `dir` as a user's read-only look runs it: no config of the machine's, no
/// optional locks (a status does not refresh the index); its stdout, trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_command(dir, args).output().expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}

fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    c
}

/// What the user's repository is, as far as a checkpoint must leave it alone.
#[derive(Debug, PartialEq)]
struct Repo {
    head: String,
    stash: String,
    staged: String,
    status: String,
    index_sha1: String,
}

fn repo_state(dir: &Path) -> Repo {
    let sha1 = Command::new("sha1sum").arg(".git/index").current_dir(dir).output().expect("sha1sum");
    Repo {
        head: git(dir, &["rev-parse", "HEAD"]),
        stash: git(dir, &["stash", "list"]),
        staged: git(dir, &["ls-files", "-s"]),
        status: git(dir, &["status", "--porcelain"]),
        index_sha1: String::from_utf8_lossy(&sha1.stdout).trim().to_owned(),
    }
}

/// Every file under `.git`, with its bytes: nothing in there may change.
fn dot_git(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(at: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(at).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&dir.join(".git"), &mut out);
    out
}

/// gone.txt: no newline at its end and a CR inside, so "byte for byte" means something.
const GONE: &[u8] = b"going\r\naway";

/// A repository with a.txt committed, a stash entry, a staged b.txt and an untracked gone.txt.
fn user_repository(dir: &Path) {
    git(dir, &["init", "--quiet"]);
    std::fs::write(dir.join("a.txt"), "one\ntwo\n").unwrap();
    git(dir, &["add", "a.txt"]);
    git(dir, &["commit", "--quiet", "-m", "first"]);
    std::fs::write(dir.join("a.txt"), "stashed\n").unwrap();
    git(dir, &["stash", "push", "--quiet", "-m", "kept aside"]);
    std::fs::write(dir.join("b.txt"), "staged\n").unwrap();
    git(dir, &["add", "b.txt"]);
    std::fs::write(dir.join("gone.txt"), GONE).unwrap();
    assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"one\ntwo\n");
}

fn read(dir: &Path, name: &str) -> Option<Vec<u8>> {
    std::fs::read(dir.join(name)).ok()
}

#[test]
fn a_turns_shell_changes_are_listed_shown_and_undone_leaving_the_users_repository_alone() {
    let rig = Rig::new(user_repository);
    let work = rig.dirs.work.clone();
    let before = repo_state(&work);
    let dot_git_before = dot_git(&work);
    assert_eq!(before.stash.lines().count(), 1, "{before:?}");
    assert!(before.staged.contains("b.txt"), "{before:?}");

    let prompt = "shell-edit the files please";
    let command = "printf 'one\\nTWO\\n' > a.txt && printf 'made\\n' > new.txt && rm -f gone.txt";
    rig.bash_turn(prompt, command, "⚠ 3 files changed without review: :PiIde changes");
    assert_eq!(read(&work, "a.txt").as_deref(), Some(&b"one\nTWO\n"[..]), "Pi's bash did not run");
    assert_eq!(read(&work, "new.txt").as_deref(), Some(&b"made\n"[..]));
    assert!(!work.join("gone.txt").exists());

    let (title, items) = rig.changes();
    assert_eq!(title, "PiIde changes since turn 1 (pi)");
    let by_name: BTreeMap<String, (i64, String)> = items.into_iter().map(|(f, l, t)| (f, (l, t))).collect();
    let want: BTreeMap<String, (i64, String)> = [
        ("a.txt", 2, "changed · turn 1 pi · without review (+1 −1)"),
        ("gone.txt", 1, "deleted · turn 1 pi · without review (+0 −2)"),
        ("new.txt", 1, "created · turn 1 pi · without review (+1 −0)"),
    ]
    .into_iter()
    .map(|(f, l, t)| (f.to_owned(), (l, t.to_owned())))
    .collect();
    assert_eq!(by_name, want, "{}", rig.report());
    review_tab_shows_a_txt(&rig);
    // Looked at: the statusline no longer warns of the turn (its files stay pending changes,
    // to keep or undo, until the undo below puts them back).
    assert!(!rig.statusline().contains("without review"), "{}", rig.statusline());

    let undone = rig.undo();
    assert_eq!(undone, json!({"turn": 1, "restored": ["a.txt", "gone.txt"], "deleted": ["new.txt"]}));
    assert_eq!(read(&work, "a.txt").as_deref(), Some(&b"one\ntwo\n"[..]));
    assert_eq!(read(&work, "gone.txt").as_deref(), Some(GONE));
    assert!(!work.join("new.txt").exists(), "new.txt is still there");
    let said = "pi-ide.nvim: undid turn 1 (pi); put back a.txt, gone.txt; deleted new.txt";
    assert!(rig.notes().iter().any(|n| n == said), "{:?}", rig.notes());
    assert_eq!(rig.prompt_area(), json!([prompt]));
    // The open a.txt shows the file as it is again.
    let a = format!("{}/a.txt", work.display());
    let lines = rig.nvim.lua_with("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", vec![a.into()]);
    assert_eq!(lines, json!(["one", "two"]));

    assert_eq!(repo_state(&work), before, "the user's repository changed");
    let after = dot_git(&work);
    let touched: Vec<&PathBuf> = after.keys().chain(dot_git_before.keys()).filter(|p| after.get(*p) != dot_git_before.get(*p)).collect();
    assert!(touched.is_empty(), "files in .git changed: {touched:?}");
}

/// The review tab: turn 1's a.txt (read-only) beside the file itself, both in diff mode.
fn review_tab_shows_a_txt(rig: &Rig) {
    let a = format!("{}/a.txt", rig.dirs.work.display());
    let mut wins = Vec::new();
    rig.wait("the two panes of a.txt in diff mode", || {
        wins = tab_windows(&rig.nvim);
        let find = |name: &str| wins.iter().find(|w| w.0 == name).cloned();
        let turn = wins.iter().find(|w| w.0.ends_with("/a.txt (turn 1)")).cloned();
        matches!((turn, find(&a)), (Some(l), Some(r)) if l.1 && r.1)
    });
    let left = wins.iter().find(|w| w.0.ends_with("/a.txt (turn 1)")).unwrap();
    let right = wins.iter().find(|w| w.0 == a).unwrap();
    assert_eq!((left.2.clone(), left.3), (json!(["one", "two"]), false), "{wins:?}");
    assert_eq!((right.2.clone(), right.3), (json!(["one", "TWO"]), true), "{wins:?}");
}

#[test]
fn a_turns_shell_change_in_a_folder_git_does_not_know_is_listed_and_undone() {
    let rig = Rig::new(|dir| {
        std::fs::write(dir.join("notes.txt"), "before\n").unwrap();
        // The premise: no repository holds the folder (the temp dir is not in one).
        let inside = git_command(dir, &["rev-parse", "--git-dir"]).output().unwrap();
        assert!(!inside.status.success(), "{} is inside a git repository", dir.display());
    });
    let work = rig.dirs.work.clone();
    let prompt = "shell-edit the notes";
    rig.bash_turn(prompt, "printf 'after\\n' > notes.txt", "⚠ 1 file changed without review: :PiIde changes");
    assert_eq!(read(&work, "notes.txt").as_deref(), Some(&b"after\n"[..]), "Pi's bash did not run");

    let (title, items) = rig.changes();
    assert_eq!(title, "PiIde changes since turn 1 (pi)");
    let want = vec![("notes.txt".to_owned(), 1, "changed · turn 1 pi · without review (+1 −1)".to_owned())];
    assert_eq!(items, want, "{}", rig.report());

    let undone = rig.undo();
    assert_eq!(undone, json!({"turn": 1, "restored": ["notes.txt"], "deleted": []}));
    assert_eq!(read(&work, "notes.txt").as_deref(), Some(&b"before\n"[..]));
    let said = "pi-ide.nvim: undid turn 1 (pi); put back notes.txt";
    assert!(rig.notes().iter().any(|n| n == said), "{:?}", rig.notes());
    assert_eq!(rig.prompt_area(), json!([prompt]));
    // The folder got no repository of ours: it holds only the user's file.
    let names: Vec<String> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec!["notes.txt"]);
}
