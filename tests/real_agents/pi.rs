//! The real Pi coding agent with the real pi-ide extension (the versions scripts/ensure-agents.sh
//! pins) against a real Neovim running this plugin, offline: a loopback OpenAI-compatible mock
//! plays the model (tests/support/openai_mock.rs) and Pi's TUI runs in a tmux server of its own
//! (tests/support/pi_cli.rs). The test types into both as a user would.
//!
//! Neovim and Pi share a lock folder private to the test (`PI_IDE_LOCK_DIR`) and a working
//! folder: the extension connects at start, by itself, when exactly one lockfile there matches.
//! A `write`/`edit` of the model's makes the extension call openDiff and wait: the review opens
//! in Neovim, `:w` in the proposal lets Pi write what was accepted, `:q` makes Pi block the call
//! and tell the model. The extension shows where the user is in Neovim below Pi's input
//! ("<ideName> · Lines 2-3 selected in sel.txt") and sends it to the model with every turn; it
//! answers Neovim's requests for ghost text by asking the model for `<SUGGESTION>` blocks.


use std::path::PathBuf;
use std::time::Instant;

use crate::harness::*;
use crate::{pi_cli, terminal};
use crate::openai_mock::{editor_context, system_prompt, turn, OpenAiMock, Reply, Turn, SUGGESTION_TAG};
use crate::pi_cli::{pi_env, Folders, PiTui, PI_PATIENCE};
use pi_ide_testkit::nvim::Options;

/// The name our Neovim gives itself in its lockfile: Pi shows it when it connects.
const OURS: &str = "nvim-under-test";

/// A Neovim in `work` named `name`, its server up, its lockfile in a lock folder of its own.
fn start_neovim(dirs: &Folders, name: &str) -> Nvim {
    start_neovim_with(dirs, name, "")
}

/// As `start_neovim`, with more fields for setup() (Lua, each followed by a comma).
fn start_neovim_with(dirs: &Folders, name: &str, setup: &str) -> Nvim {
    let nvim = Nvim::start_with(Options {
        cwd: Some(dirs.work.clone()),
        before: Some(format!(
            "require('pi-ide').setup({{ {setup} ide_name = '{name}' }})"
        )),
        ..Default::default()
    });
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    let lock = nvim.lockfile();
    assert_eq!(
        lock.workspace_folders,
        vec![dirs.work.to_string_lossy().into_owned()]
    );
    nvim
}

/// Neovim's own log (the plugin's, at its default level).
fn neovim_log(nvim: &Nvim) -> String {
    let text = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// The clients Neovim lists, by the name they introduced themselves with.
fn client_names(nvim: &Nvim) -> Vec<String> {
    let v = nvim.lua(
        "local t = {} for _, c in ipairs(require('pi-ide').info().clients or {}) do \
           table.insert(t, c.name or '(not initialized)') end return t",
    );
    serde_json::from_value(v).unwrap_or_default()
}

/// Everything one test needs; dropped in field order: Pi, Neovim, the model, the folders.
struct Rig {
    pi: Option<PiTui>,
    nvim: Nvim,
    model: OpenAiMock,
    dirs: Folders,
}

impl Rig {
    /// Neovim in a fresh folder; Pi not started yet.
    fn new() -> Rig {
        Rig::with_setup("")
    }

    /// As `new`, with more fields for setup() (as `start_neovim_with`).
    fn with_setup(setup: &str) -> Rig {
        let dirs = Folders::new();
        let model = OpenAiMock::start();
        let nvim = start_neovim_with(&dirs, OURS, setup);
        Rig {
            pi: None,
            nvim,
            model,
            dirs,
        }
    }

    /// Starts Pi in the same folder, seeing the same lock folder as our Neovim.
    fn start_pi(&mut self) {
        let mut env = pi_env(&self.dirs.pi, &self.model.base_url());
        env.push((
            "PI_IDE_LOCK_DIR".into(),
            self.nvim.lock_dir.to_string_lossy().into_owned(),
        ));
        self.pi = Some(PiTui::start(&self.dirs.pi, &self.dirs.work, &env));
    }

    fn pi(&self) -> &PiTui {
        self.pi.as_ref().expect("Pi is running")
    }

    /// Polls `cond` until it holds; on time-out (or if Pi died) fails with the state of every
    /// side.
    fn wait(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + PI_PATIENCE;
        while !cond() {
            let dead = self.pi.as_ref().is_some_and(PiTui::dead);
            if dead || Instant::now() > deadline {
                panic!(
                    "{} waiting for: {what}\n{}",
                    if dead { "Pi exited" } else { "timed out" },
                    self.report()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Waits until Pi's screen shows `text`; on failure, the state of every side.
    fn wait_pi_text(&self, text: &str) {
        self.wait(&format!("Pi to show {text:?}"), || {
            self.pi().screen().contains(text)
        });
    }

    /// Pi's terminal, the model's turns, Neovim's log and clients.
    fn report(&self) -> String {
        let turns = self.model.turns_report();
        format!(
            "--- Pi's terminal ---\n{}\n--- the turns the mock model got ---\n{}\n--- Neovim's clients ---\n{:?}\n--- pi-ide.log ---\n{}",
            self.pi.as_ref().map(PiTui::transcript).unwrap_or_default(),
            turns.join("\n"),
            client_names(&self.nvim),
            neovim_log(&self.nvim),
        )
    }

    /// Pi started and connected: it says so, and Neovim lists it.
    fn connect(&mut self) {
        self.start_pi();
        self.wait_pi_text(&format!("Auto-connected to {OURS}"));
        self.wait("Neovim to list Pi's extension among its clients", || {
            client_names(&self.nvim).iter().any(|n| n == "pi-ide")
        });
    }

    fn reviews_shown(&self) -> u64 {
        self.nvim.t("reviews_shown", json!([])).as_u64().unwrap()
    }

    /// Waits until `n` reviews are on Neovim's screen.
    fn wait_reviews(&self, n: u64) {
        self.wait(&format!("{n} review(s) on Neovim's screen"), || {
            self.reviews_shown() == n
        });
    }

    /// The one open review's tab name.
    fn review_tab(&self) -> String {
        let list = self.nvim.lua("return require('pi-ide.features.review').list()");
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
        list[0]["tab_name"].as_str().unwrap().to_owned()
    }

    /// Waits for a request to the model that satisfies `pred`; returns its body.
    fn model_got(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut found = None;
        self.wait(&format!("the model to get {what}"), || {
            found = self.model.completions().into_iter().find(|b| pred(b));
            found.is_some()
        });
        found.unwrap()
    }

    /// Waits until the model got a result of `tool` that contains `text`.
    fn wait_tool_result(&self, tool: &str, text: &str) {
        self.wait(
            &format!("the model to get a {tool} result saying {text:?}"),
            || {
                self.model
                    .tool_results(tool)
                    .iter()
                    .any(|r| r.contains(text))
            },
        );
    }

    fn closed(&self, result: &str) -> u64 {
        self.nvim
            .t("count_events", json!(["PiIdeReviewClosed", "result", result]))
            .as_u64()
            .unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dirs.work.join(name)
    }
}

fn read(path: &PathBuf) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// A Neovim and Pi in one folder, connected, the model's replies to come set by the test.
fn connected() -> Rig {
    connected_with("")
}

/// As `connected`, with more fields for setup() (as `start_neovim_with`).
fn connected_with(setup: &str) -> Rig {
    let mut rig = Rig::with_setup(setup);
    rig.nvim.t(
        "record_events",
        json!(["PiIdeReviewOpened", "PiIdeReviewClosed"]),
    );
    rig.connect();
    rig
}

#[test]
fn pi_connects_by_itself_to_the_one_neovim_whose_lockfile_it_sees() {
    let started = Instant::now();
    let mut rig = Rig::new();
    // Another Neovim in the same folder, its lockfile in a lock folder of its own: Pi, looking
    // in ours, must not see it (two candidates there, and it would connect to neither).
    let other = start_neovim(&rig.dirs, "nvim-other");
    assert_ne!(other.lock_dir, rig.nvim.lock_dir);
    assert_ne!(other.lockfile().port, rig.nvim.lockfile().port);
    rig.connect();
    let pi = rig.pi();
    // The extension's line above Pi's input names the editor it is connected to.
    let screen = pi.wait_screen("the name of our Neovim on a line of its own", |s| {
        s.lines().any(|l| l.trim() == OURS)
    });
    assert!(!screen.contains("nvim-other"), "{screen}");
    // As Neovim sees it: one client, the extension, initialized (`:PiIde` shows it).
    assert_eq!(client_names(&rig.nvim), vec!["pi-ide".to_string()]);
    let status = rig
        .nvim
        .lua("return require('pi-ide.core.status').lines()");
    let status: Vec<String> = serde_json::from_value(status).unwrap();
    assert!(
        status.iter().any(|l| l.contains("clients: 1")),
        "{status:?}"
    );
    assert!(
        status
            .iter()
            .any(|l| l.contains(" pi-ide 0.1.0, connected ")),
        "{status:?}"
    );
    assert_eq!(
        rig.nvim.lua("return require('pi-ide').status()"),
        json!("π pi-ide")
    );
    // The other Neovim never had a client.
    assert!(
        client_names(&other).is_empty(),
        "{:?}",
        client_names(&other)
    );
    let other_log = neovim_log(&other);
    assert!(
        !other_log.contains("connected"),
        "Pi reached the Neovim in another lock folder:\n{other_log}"
    );
    // And Pi works: a prompt reaches the model, its answer reaches the screen.
    rig.model
        .on_user("say-hello", Reply::text("Hello from the mock model."));
    pi.send_line("say-hello please");
    rig.wait_pi_text("Hello from the mock model.");
    eprintln!("took {:?}", started.elapsed());
}

#[test]
fn a_write_accepted_with_w_in_neovim_is_written_by_pi_with_the_users_edits() {
    let started = Instant::now();
    let rig = connected();
    let hello = rig.path("hello.txt");
    rig.model.on_user(
        "please-write",
        Reply::tool(
            "write",
            json!({"path": "hello.txt", "content": "hello from pi\n"}),
        ),
    );
    rig.model
        .after_tool("write", Reply::text("Mock model: the write is over."));
    rig.pi().send_line("please-write hello.txt");
    // The review: the extension's openDiff, two panes, the proposal current and editable.
    rig.wait_reviews(1);
    assert!(
        rig.review_tab().starts_with("pi-write:"),
        "{}",
        rig.review_tab()
    );
    come_to_review(&rig.nvim);
    rig.nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(
        rig.nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)"),
        json!(2),
        "two panes"
    );
    assert_eq!(
        rig.nvim
            .lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["hello from pi"])
    );
    // Pi waits on the review: nothing written yet.
    rig.wait_pi_text("Working");
    assert_eq!(read(&hello), None, "written before the review was decided");
    // The user adds a line to the proposal and accepts it.
    type_keys(&rig.nvim, "Goadded in the review<Esc>");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait("Pi to write the accepted text", || {
        read(&hello).as_deref() == Some("hello from pi\nadded in the review\n")
    });
    // Pi's write tool ran and told the model it succeeded; its turn went on.
    rig.wait_tool_result("write", "Successfully wrote");
    rig.wait_pi_text("Mock model: the write is over.");
    let transcript = rig.pi().transcript();
    assert!(!transcript.contains("rejected"), "{transcript}");
    assert!(!transcript.contains("IDE diff failed"), "{transcript}");
    rig.wait_reviews(0);
    assert_eq!((rig.closed("accepted"), rig.closed("rejected")), (1, 0));
    rig.nvim
        .wait_for("#vim.api.nvim_list_tabpages() == 1", PATIENCE);
    eprintln!("took {:?}", started.elapsed());
}

#[test]
fn edits_are_reviewed_in_neovim_accepted_with_w_and_rejected_with_q() {
    let started = Instant::now();
    let rig = connected();
    let notes = rig.path("notes.txt");
    std::fs::write(&notes, "one\ntwo\nthree\n").unwrap();
    let edit = |old: &str, new: &str| {
        Reply::tool(
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": old, "newText": new}]}),
        )
    };
    rig.model.on_user("please-change-two", edit("two", "TWO"));
    rig.model
        .on_user("please-change-three", edit("three", "THREE"));
    rig.model
        .after_tool("edit", Reply::text("Mock model: the edit is over."));

    // Accepted as proposed: Pi applies it.
    rig.pi().send_line("please-change-two in notes.txt");
    rig.wait_reviews(1);
    assert!(
        rig.review_tab().starts_with("pi-edit:"),
        "{}",
        rig.review_tab()
    );
    come_to_review(&rig.nvim);
    rig.nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(
        rig.nvim
            .lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["one", "TWO", "three"])
    );
    assert_eq!(read(&notes).as_deref(), Some("one\ntwo\nthree\n"));
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait("Pi to apply the accepted edit", || {
        read(&notes).as_deref() == Some("one\nTWO\nthree\n")
    });
    rig.wait_tool_result("edit", "Successfully");
    rig.wait_pi_text("Mock model: the edit is over.");
    rig.wait_reviews(0);

    // Rejected with :q in the proposal: the file stays, Pi blocks the call and says why.
    rig.pi().send_line("please-change-three in notes.txt");
    rig.wait_reviews(1);
    come_to_review(&rig.nvim);
    rig.nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert_eq!(
        rig.nvim
            .lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["one", "TWO", "THREE"])
    );
    type_keys(&rig.nvim, ":q<CR>");
    rig.wait_pi_text("user rejected the edit in IDE");
    rig.wait_tool_result("edit", "user rejected the edit in IDE");
    rig.wait_reviews(0);
    assert_eq!(read(&notes).as_deref(), Some("one\nTWO\nthree\n"));
    assert_eq!((rig.closed("accepted"), rig.closed("rejected")), (1, 1));
    eprintln!("took {:?}", started.elapsed());
}

/// Pi's edit of three lines, the middle hunk rejected in Neovim: `:w` lets Pi write exactly
/// the first and the last.
#[test]
fn part_of_pis_edit_accepted_hunk_by_hunk_is_what_pi_writes() {
    let rig = connected();
    let file = rig.path("h.txt");
    std::fs::write(&file, "a\nb\nc\nd\ne\nf\ng\n").unwrap();
    let edits = json!([
        {"oldText": "a\n", "newText": "A\n"},
        {"oldText": "d\n", "newText": "D\n"},
        {"oldText": "g\n", "newText": "G\n"},
    ]);
    rig.model.on_user(
        "please-change-three",
        Reply::tool("edit", json!({"path": "h.txt", "edits": edits})),
    );
    rig.model
        .after_tool("edit", Reply::text("Mock model: the edit is over."));
    rig.pi().send_line("please-change-three lines of h.txt");
    rig.wait_reviews(1);
    come_to_review(&rig.nvim);
    rig.nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    hunks_counted(&rig.nvim);
    type_keys(&rig.nvim, "gg]h:PiIde hunk reject<CR>");
    assert_eq!(
        rig.nvim
            .lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["A", "b", "c", "d", "e", "f", "G"])
    );
    assert_eq!(read(&file).as_deref(), Some("a\nb\nc\nd\ne\nf\ng\n"));
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait("Pi to write hunks 1 and 3", || {
        read(&file).as_deref() == Some("A\nb\nc\nd\ne\nf\nG\n")
    });
    rig.wait_tool_result("edit", "Successfully");
    rig.wait_pi_text("Mock model: the edit is over.");
    rig.wait_reviews(0);
    assert_eq!((rig.closed("accepted"), rig.closed("rejected")), (1, 0));
}

/// `review = { when = "after" }`: the extension's openDiff is answered at once, no review
/// shows, Pi writes its proposal itself, and the write is pending.
#[test]
fn with_review_after_pis_write_lands_at_once_and_is_pending() {
    let rig = connected_with("review = { when = 'after' },");
    watching(&rig.nvim);
    let hello = rig.path("hello.txt");
    rig.model.on_user(
        "please-write",
        Reply::tool("write", json!({"path": "hello.txt", "content": "hello from pi\n"})),
    );
    rig.model
        .after_tool("write", Reply::text("Mock model: the write is over."));
    rig.pi().send_line("please-write hello.txt");
    // Nothing typed in Neovim: the write lands by itself.
    rig.wait("Pi to write its proposal", || {
        read(&hello).as_deref() == Some("hello from pi\n")
    });
    rig.wait_tool_result("write", "Successfully wrote");
    rig.wait_pi_text("Mock model: the write is over.");
    let opened = rig.nvim.t("count_events", json!(["PiIdeReviewOpened"]));
    assert_eq!(opened, json!(0), "a review was shown");
    assert_eq!(rig.reviews_shown(), 0);
    // Pending, Pi's, a creation, to decide after.
    let change = wait_pending(&rig.nvim, &hello.to_string_lossy(), PI_PATIENCE);
    let seen = (&change["agent"], &change["kind"], &change["hunks"]);
    assert_eq!(seen, (&json!("pi"), &json!("created"), &json!(1)), "{change}");
}

#[test]
fn where_the_user_is_in_neovim_shows_in_pi_and_reaches_the_model() {
    let started = Instant::now();
    let rig = connected();
    let path = edit_file(&rig.nvim, "sel.txt", &["alpha", "beta", "gamma"]);
    rig.wait_pi_text(&format!("{OURS} · In sel.txt"));
    // Lines 2-3 selected, as the user selects them.
    type_keys(&rig.nvim, "jVj");
    rig.wait_pi_text(&format!("{OURS} · Lines 2-3 selected in sel.txt"));
    rig.model
        .on_user("what-is-selected", Reply::text("Mock model: noted."));
    rig.pi().send_line("what-is-selected here");
    let body = rig.model_got(
        "the prompt with the editor's state",
        |b| matches!(turn(b), Turn::User(s) if s.contains("what-is-selected")),
    );
    let context = editor_context(&body);
    assert!(
        context.contains(&format!("<file>{path}</file>"))
            && context.contains("<selection lines=\"2-3\">\nbeta\ngamma\n"),
        "{context}"
    );
    assert!(!context.contains("alpha"), "{context}");
    rig.wait_pi_text("Mock model: noted.");
    // Leaving Visual mode keeps the selection (so that `V…y` and a switch to Pi lose nothing)
    // until the cursor moves away: then Pi shows the file alone again.
    type_keys(&rig.nvim, "<Esc>");
    type_keys(&rig.nvim, "gg");
    rig.wait_pi_text(&format!("{OURS} · In sel.txt"));
    eprintln!("took {:?}", started.elapsed());
}

/// The ghost text on Neovim's screen: its inline part and virtual lines, joined with newlines.
fn ghost(nvim: &Nvim) -> Option<String> {
    nvim.t("ghost", json!([])).as_str().map(str::to_owned)
}

#[test]
fn ghost_text_in_neovim_comes_from_pis_model() {
    let started = Instant::now();
    let rig = connected();
    rig.model.on_suggestion(" = compute_answer();");
    edit_file(&rig.nvim, "main.rs", &["fn main() {", "    let answ", "}"]);
    // Typing asks Pi (after the debounce); Pi asks its model for an inline completion.
    type_keys(&rig.nvim, "2GA");
    type_keys(&rig.nvim, "er");
    let body = rig.model_got("a request for an inline completion after `let answer`", |b| {
        system_prompt(b).contains(SUGGESTION_TAG)
            && matches!(turn(b), Turn::User(s) if s.contains("    let answer]]></cursor_prefix>"))
    });
    let Turn::User(request) = turn(&body) else {
        unreachable!()
    };
    assert!(
        request.contains("main.rs") && request.contains("<language><![CDATA[rust]]>"),
        "{request}"
    );
    rig.wait("the suggestion as ghost text", || {
        ghost(&rig.nvim).as_deref() == Some(" = compute_answer();")
    });
    assert_eq!(
        rig.nvim.lua("return vim.api.nvim_get_current_line()"),
        json!("    let answer"),
        "ghost text is not buffer text"
    );
    assert_eq!(
        rig.nvim.lua("return require('pi-ide').accept()"),
        json!(true)
    );
    assert_eq!(
        rig.nvim.lua("return vim.api.nvim_get_current_line()"),
        json!("    let answer = compute_answer();")
    );
    eprintln!("took {:?}", started.elapsed());
}

/// `:PiIde open` in LazyVim at 80 columns, with a second Neovim serving the same folder through
/// the same lock folder (Pi started by hand there would see two editors and connect to
/// neither): Pi connects to the Neovim that launched it, its write is reviewed there, and
/// hiding and showing its terminal keeps the session.
#[test]
fn pi_launched_in_lazyvim_by_piide_open_connects_to_that_neovim_and_its_write_is_reviewed() {
    let dirs = Folders::new();
    let model = OpenAiMock::start();
    let nvim = Nvim::start_lazyvim(pi_ide_testkit::tui::LazyOptions { cols: 80, rows: 30, ..Default::default() });
    let other = Nvim::start_with(Options {
        cwd: Some(nvim.cwd.clone()),
        lock_dir: Some(nvim.lock_dir.clone()),
        before: Some("require('pi-ide').setup({ ide_name = 'nvim-other' })".into()),
        ..Default::default()
    });
    other.wait_for("require('pi-ide').info().running", PATIENCE);
    nvim.lua(&format!(
        "require('pi-ide').setup({{ ide_name = 'nvim-launcher', terminal = {{ agents = {{ pi = {{ cmd = {{ {} }}, env = {{ {} }} }} }} }} }})",
        terminal::lua_list(pi_cli::pi_command()),
        terminal::lua_fields(pi_env(&dirs.pi, &model.base_url()))
    ));
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    assert_eq!(lock::read_all(&nvim.lock_dir).len(), 2, "two editors serve this folder");
    nvim.t("record_events", json!(["PiIdeReviewOpened", "PiIdeReviewClosed"]));
    let wait = |what: &str, cond: &dyn Fn() -> bool| {
        let deadline = Instant::now() + PI_PATIENCE;
        while !cond() {
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for: {what}\n--- Pi in Neovim ---\n{}\n--- clients ---\n{:?}\n--- pi-ide.log ---\n{}",
                    terminal::text(&nvim, "pi"),
                    client_names(&nvim),
                    neovim_log(&nvim)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };

    nvim.command("PiIde open").unwrap();
    wait("Pi to connect to this Neovim", &|| terminal::text(&nvim, "pi").contains("Auto-connected to nvim-launcher"));
    wait("Neovim to list Pi", &|| client_names(&nvim) == vec!["pi-ide".to_string()]);
    let client = nvim.lua("return require('pi-ide').info().clients[1].id");

    // A write from the terminal in Neovim is reviewed in the same Neovim.
    let hello = nvim.cwd.join("hello.txt");
    model.on_user("please-write", Reply::tool("write", json!({"path": "hello.txt", "content": "hello from pi\n"})));
    model.after_tool("write", Reply::text("Mock model: the write is over."));
    terminal::type_text(&nvim, "pi", "please-write hello.txt");
    wait("the prompt typed", &|| terminal::text(&nvim, "pi").contains("please-write hello.txt"));
    terminal::type_text(&nvim, "pi", "\r");
    wait("the review on screen", &|| nvim.t("reviews_shown", json!([])) == json!(1));
    come_to_review(&nvim);
    nvim.wait_for("vim.bo.buftype == 'acwrite'", PATIENCE);
    assert!(!hello.exists(), "written before the review was decided");
    type_accept(&nvim, ":w<CR>");
    wait("Pi to write the accepted file", &|| read(&hello).as_deref() == Some("hello from pi\n"));
    wait("Pi to show the model's answer", &|| terminal::text(&nvim, "pi").contains("the write is over"));

    // Hidden and shown: the same process, still connected.
    let job = terminal::job(&nvim, "pi");
    nvim.command("PiIde close").unwrap();
    assert!(!terminal::shown(&nvim, "pi"));
    nvim.command("PiIde open").unwrap();
    assert_eq!(terminal::job(&nvim, "pi"), job);
    assert_eq!(nvim.lua("return require('pi-ide').info().clients[1].id"), client);
    assert!(terminal::text(&nvim, "pi").contains("the write is over"), "not the same session");
    // After all that, Pi never reached the other Neovim.
    assert!(client_names(&other).is_empty(), "Pi reached the other Neovim");
}
