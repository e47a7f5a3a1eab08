//! The chat with an ACP agent (:PiIde chat {agent}), played by `fake_acp_agent`
//! (testkit/src/bin/fake_acp_agent.rs): every shape of change the real agents propose goes through
//! the two-pane review and lands only after a typed `:w`; the faults a real agent cannot be made
//! to show on cue (a crash mid-review, malformed and over-long lines).

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, Options};

fn fake() -> String {
    plugin_root().join("target/release/fake_acp_agent").display().to_string()
}

struct Rig {
    nvim: Nvim,
    log: std::path::PathBuf,
}

/// A Neovim with the chat agent `fake` (the fake ACP agent, started with `args`), its messages logged.
fn rig(args: &[&str]) -> Rig {
    rig_with(args, "")
}

/// rig, with more options for setup() (Lua table fields).
fn rig_with(args: &[&str], options: &str) -> Rig {
    let dir = pi_ide_testkit::nvim::temp_dir("acp-log");
    let log = dir.join("agent.log");
    let mut cmd = vec![format!("{:?}", fake())];
    cmd.extend(args.iter().map(|a| format!("{a:?}")));
    let nvim = Nvim::start_with(Options {
        after: Some(format!(
            "require('pi-ide').setup({{ chat = {{ agents = {{ fake = {{ cmd = {{ {} }}, label = 'Fake', writes_itself = true, env = {{ FAKE_ACP_LOG = {:?} }} }} }} }}, {options} }})",
            cmd.join(", "),
            log.display().to_string()
        )),
        ..Default::default()
    });
    nvim.command("set columns=200").unwrap();
    nvim.record_notify();
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    Rig { nvim, log }
}

impl Rig {
    fn open(&self) {
        self.nvim.command("PiIde chat fake").unwrap();
        self.nvim.wait_for("require('pi-ide.features.chat.acp').get('fake').session ~= nil", PATIENCE);
        self.nvim.command("stopinsert").unwrap();
    }

    fn send(&self, text: &str) {
        self.nvim.lua_with("require('pi-ide.features.chat.acp').get('fake'):send(...)", vec![text.into()]);
    }

    fn text(&self) -> String {
        let v = self.nvim.lua("return require('pi-ide.features.chat.view').of('fake').text()");
        v.as_str().unwrap_or_default().to_owned()
    }

    fn wait_text(&self, part: &str) {
        wait_until(&format!("{part:?} in the chat"), PATIENCE, || self.text().contains(part));
    }

    fn idle(&self) {
        self.nvim.wait_for("require('pi-ide.features.chat.acp').get('fake').state == 'idle'", PATIENCE);
    }

    /// What the agent read, each line as JSON.
    fn received(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    fn review_on_screen(&self) {
        self.nvim.wait_for("#require('pi-ide.features.review').list() == 1 and vim.b.pi_ide_review ~= nil", PATIENCE);
    }

    fn no_review(&self) {
        self.nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    }
}

fn file(rig: &Rig, name: &str, text: &str) -> String {
    file_with(&rig.nvim, name, text)
}

#[test]
fn a_prompt_streams_and_an_agent_that_edits_without_asking_is_put_in_its_asking_mode() {
    let rig = rig(&["--mode", "auto"]);
    rig.open();
    rig.wait_text(""); // the chat exists
    rig.nvim.wait_for("require('pi-ide.features.chat.acp').get('fake').info.mode == 'default'", PATIENCE);
    let set = rig.received().into_iter().find(|m| m["method"] == "session/set_mode").expect("set_mode sent");
    assert_eq!(set["params"]["modeId"], "default");
    rig.send("stream 50 2000");
    rig.wait_text("c50\n");
    rig.idle();
    let t = rig.text();
    assert!(t.contains("## ❯ You\nstream 50 2000\n\n## Fake"), "{t}");
    let chunk = |k: usize| format!("c{k}{}", if k % 10 == 0 { "\n" } else { " " });
    let order: Vec<usize> = (1..=50).map(|k| t.find(&chunk(k)).expect("each chunk")).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "chunks in order: {t}");
    let winbar = rig.nvim.lua("return vim.wo[vim.fn.bufwinid(require('pi-ide.features.chat.view').of('fake').buf())].winbar");
    assert!(winbar.as_str().unwrap().contains("Fake%< · mode Default"), "{winbar}");
    // The agent has this Neovim's tools: pi-ide-mcp, told which Neovim.
    let new = rig.received().into_iter().find(|m| m["method"] == "session/new").unwrap();
    let server = &new["params"]["mcpServers"][0];
    assert!(server["command"].as_str().unwrap().ends_with("pi-ide-mcp"), "{new}");
    assert_eq!(server["args"][1].as_str().unwrap(), rig.nvim.lua("return tostring(vim.fn.getpid())").as_str().unwrap());
}

#[test]
fn a_change_opens_an_editable_review_and_lands_only_after_a_typed_w() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "one\ntwo\nthree\n");
    rig.open();
    rig.send(&format!("edit {path} two 2"));
    rig.review_on_screen();
    let panes = rig.nvim.lua(
        "local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do local b = vim.api.nvim_win_get_buf(w) \
         if vim.b[b].pi_ide_review then table.insert(out, { vim.bo[b].modifiable, table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '|') }) end end return out",
    );
    let panes = panes.as_array().unwrap();
    assert_eq!(panes.len(), 2, "both panes are the review's: {panes:?}");
    assert!(panes.iter().any(|p| p[1] == "one|2|three" && p[0] == true), "the whole file as it will be, editable: {panes:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nthree\n", "nothing written before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("[allowed]");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n2\nthree\n");
    let answer = rig.received().into_iter().find(|m| m["id"] == 1 && m.get("result").is_some()).unwrap();
    assert_eq!(answer["result"]["outcome"]["optionId"], "yes", "allow once, never always: {answer}");
    rig.no_review();
    assert!(rig.text().contains("⚖ review: "), "{}", rig.text());
}

// Seven lines; the proposal changes lines 1, 4 and 7: three one-line hunks.
const SEVEN: &str = "a\nb\nc\nd\ne\nf\ng\n";
const PROPOSAL: &str = "A|b|c|D|e|f|G|";
const HUNKS_1_AND_3: &str = "A\nb\nc\nd\ne\nf\nG\n";

impl Rig {
    /// The agent's whole-file change to `path` (then `then`), its middle hunk rejected, `:w`.
    fn accept_all_but_the_middle_hunk(&self, path: &str, then: &str) {
        self.send(&format!("rewrite {path} {PROPOSAL} {then}"));
        self.review_on_screen();
        self.nvim.wait_for("(require('pi-ide.features.review').current() or {}).hunks ~= nil", PATIENCE);
        assert_eq!(self.nvim.lua("return vim.bo.modifiable"), json!(true), "the review is editable");
        type_accept(&self.nvim, "4G:PiIde hunk reject<CR>:w<CR>");
        self.no_review();
    }
}

#[test]
fn a_partial_acceptance_is_set_over_the_agents_own_write_and_told_with_the_next_prompt() {
    let rig = rig(&[]);
    let path = file(&rig, "p.txt", SEVEN);
    rig.open();
    rig.accept_all_but_the_middle_hunk(&path, "");
    rig.wait_text("your accepted text was written over it (Fake is told at your next prompt)");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), HUNKS_1_AND_3);
    let answer = rig.received().into_iter().find(|m| m["id"] == 1 && m.get("result").is_some()).unwrap();
    assert_eq!(answer["result"]["outcome"]["optionId"], "yes", "allowed once: {answer}");
    rig.send("stream 1");
    rig.idle();
    let prompt = rig.received().into_iter().filter(|m| m["method"] == "session/prompt").last().unwrap();
    let said = prompt["params"]["prompt"].to_string();
    assert!(said.contains(&format!("The user accepted your change to {path} only in part: hunk 2 of 3 (your line 4) was declined")), "{said}");
}

#[test]
fn a_partial_acceptance_never_overwrites_what_the_agent_did_not_write_as_proposed() {
    let rig = rig(&[]);
    rig.open();
    // The call fails: nothing is written, by it or by us.
    let path = file(&rig, "f.txt", SEVEN);
    rig.accept_all_but_the_middle_hunk(&path, "fail");
    rig.wait_text("[allowed]");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SEVEN);
    assert!(!rig.text().contains("written over it"), "{}", rig.text());
    // Other text: left, and flagged.
    let path = file(&rig, "o.txt", SEVEN);
    rig.accept_all_but_the_middle_hunk(&path, "other");
    rig.wait_text("o.txt: Fake wrote other text than you accepted");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "other\n");
    // A link swapped in: refused and said; what it leads to is untouched.
    let path = file(&rig, "l.txt", SEVEN);
    rig.accept_all_but_the_middle_hunk(&path, "link");
    rig.wait_text("l.txt: Fake wrote other text than you accepted (it was replaced by a link)");
    rig.idle();
    assert_eq!(std::fs::read_to_string(format!("{path}.elsewhere")).unwrap(), PROPOSAL.replace('|', "\n"));
    // Every hunk rejected: a rejection, as before.
    let path = file(&rig, "r.txt", SEVEN);
    rig.send(&format!("rewrite {path} {PROPOSAL}"));
    rig.review_on_screen();
    rig.nvim.wait_for("(require('pi-ide.features.review').current() or {}).hunks ~= nil", PATIENCE);
    type_accept(&rig.nvim, "1G:PiIde hunk reject<CR>4G:PiIde hunk reject<CR>7G:PiIde hunk reject<CR>:w<CR>");
    rig.wait_text("[rejected]");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SEVEN);
}

#[test]
fn q_rejects_and_the_file_is_left_alone() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "one\ntwo\n");
    rig.open();
    rig.send(&format!("edit {path} two 2"));
    rig.review_on_screen();
    type_keys(&rig.nvim, ":q<CR>");
    rig.wait_text("[rejected]");
    rig.no_review();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
}

#[test]
fn a_new_file_and_a_unified_diff_are_reviewed_whole() {
    let rig = rig(&[]);
    let created = rig.nvim.cwd.join("new.txt").display().to_string();
    rig.open();
    rig.send(&format!("create {created} hello"));
    rig.review_on_screen();
    let proposal = rig.nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|')");
    assert_eq!(proposal, "hello");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("[allowed]");
    rig.idle();
    assert_eq!(std::fs::read_to_string(&created).unwrap(), "hello\n");
    let path = file(&rig, "u.txt", "one\ntwo\nthree\n");
    rig.send(&format!("unified {path}"));
    rig.review_on_screen();
    let proposal = rig.nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|')");
    assert_eq!(proposal, "one|TWO|three");
    type_keys(&rig.nvim, ":q<CR>");
    rig.wait_text("[rejected]");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nthree\n");
}

#[test]
fn a_change_that_does_not_apply_is_refused_and_said() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "one\n");
    rig.open();
    rig.send(&format!("edit {path} missing 2"));
    rig.wait_text("[rejected]");
    assert!(rig.text().contains("cannot be shown (the text it replaces is not in the file"), "{}", rig.text());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
}

#[test]
fn a_change_outside_the_workspace_says_so_in_the_winbar() {
    let rig = rig(&[]);
    let outside = pi_ide_testkit::nvim::temp_dir("acp-outside").join("o.txt");
    std::fs::write(&outside, "one\ntwo\n").unwrap();
    let path = outside.display().to_string();
    rig.open();
    rig.send(&format!("edit {path} two 2"));
    rig.review_on_screen();
    let bar = rig.nvim.lua("return vim.wo.winbar");
    assert!(bar.as_str().unwrap().contains("outside the workspace"), "{bar}");
    type_keys(&rig.nvim, ":q<CR>");
    rig.wait_text("[rejected]");
    let inside = file(&rig, "i.txt", "one\ntwo\n");
    rig.send(&format!("edit {inside} two 2"));
    rig.review_on_screen();
    let bar = rig.nvim.lua("return vim.wo.winbar");
    assert!(!bar.as_str().unwrap().contains("outside"), "{bar}");
}

#[test]
fn a_write_through_the_client_reads_unsaved_text_and_writes_the_users_edit() {
    let rig = rig(&[]);
    let path = file(&rig, "g.txt", "a\n");
    // Unsaved text in a buffer: the agent reads that, not the disk.
    rig.nvim.command(&format!("edit {path}")).unwrap();
    rig.nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'a', 'unsaved' })");
    rig.open();
    rig.send(&format!("gemini {path} b"));
    rig.review_on_screen();
    let proposal = rig.nvim.lua("return { vim.bo.modifiable, table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') }");
    assert_eq!(proposal[0], true, "editable: we write what the user accepts");
    assert_eq!(proposal[1], "a|unsaved|b");
    // The user makes it their own, then :w.
    type_keys(&rig.nvim, "Gomine<Esc>");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("allowed, write: null");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nunsaved\nb\nmine\n");
    let read = rig.received().into_iter().find(|m| m.pointer("/result/content").is_some()).unwrap();
    assert_eq!(read["result"]["content"], "a\nunsaved\n", "{read}");
    // The call it asked about has its block though no tool_call opened it.
    assert!(rig.text().contains("⚙ WriteFile"), "{}", rig.text());
    // The agent believes its own text was written: the next prompt tells it otherwise.
    rig.wait_text("with your edits (Fake is told at your next prompt)");
    rig.idle();
    rig.send("stream 1");
    rig.idle();
    let prompts: Vec<_> = rig.received().into_iter().filter(|m| m["method"] == "session/prompt").collect();
    let last = prompts.last().unwrap().to_string();
    assert!(last.contains("hunk 1 of 1 (your lines 2-3) was edited by the user") && last.contains("g.txt"), "{last}");
    assert!(!prompts[0].to_string().contains("Note from the editor"));
}

#[test]
fn fs_write_alone_is_an_editable_review_and_q_answers_an_error() {
    let rig = rig(&[]);
    let path = rig.nvim.cwd.join("w.txt").display().to_string();
    rig.open();
    rig.send(&format!("write {path} hi"));
    rig.review_on_screen();
    assert_eq!(rig.nvim.lua("return vim.bo.modifiable"), true);
    type_keys(&rig.nvim, ":q<CR>");
    rig.wait_text("write: {\"error\"");
    assert!(rig.text().contains("rejected this change"), "{}", rig.text());
    assert!(!std::path::Path::new(&path).exists());
    rig.send(&format!("write {path} hi"));
    rig.review_on_screen();
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("write: null");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hi\n");
}

/// With `review.when = "after"` for the chat's agent, its fs/write_text_file is written at once,
/// no review shown, the chat says so, and the write is that agent's pending change.
#[test]
fn with_review_when_after_an_fs_write_lands_at_once_and_is_the_chat_agents_pending_change() {
    let rig = rig_with(&[], "review = { when = { fake = 'after' } }");
    rig.nvim.t("record_events", json!(["PiIdeReviewOpened"]));
    let path = rig.nvim.cwd.join("w.txt").display().to_string();
    rig.open();
    // A chat is watched once it has worked (its first prompt).
    rig.send("stream 1 10");
    rig.wait_text("c1");
    rig.idle();
    watching(&rig.nvim);
    rig.send(&format!("write {path} hi"));
    rig.wait_text("write: null");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hi\n");
    assert!(rig.text().contains("accepted at once"), "{}", rig.text());
    assert_eq!(rig.nvim.t("count_events", json!(["PiIdeReviewOpened"])), json!(0), "a review was shown");
    let agent = || rig.nvim.lua_with("for _, p in ipairs(require('pi-ide').info().pending or {}) do if p.path == ... then return p.agent end end", vec![path.clone().into()]);
    wait_until("the write pending, the chat agent's", PATIENCE, || agent() == json!("fake"));
}

#[test]
fn a_permission_without_a_change_is_asked_with_the_agents_options() {
    let rig = rig(&[]);
    rig.nvim.lua(
        "_G.asked = nil vim.ui.select = function(items, opts, cb) _G.asked = vim.tbl_map(opts.format_item, items) \
         cb(items[2]) end",
    );
    rig.open();
    // Asked while the user types: it waits for Normal mode, taking none of their keys.
    rig.nvim.command("startinsert").unwrap();
    rig.send("ask");
    rig.wait_text("❓ Fake asks: Run make");
    assert_eq!(rig.nvim.lua("return _G.asked"), serde_json::Value::Null, "not asked while typing");
    type_keys(&rig.nvim, "<Esc>");
    rig.wait_text("[rejected]");
    // Never a standing "always" answer: the agent's once options only.
    let asked = rig.nvim.lua("return _G.asked");
    assert_eq!(asked, serde_json::json!(["Allow (allow once)", "Reject (reject)"]));
    assert!(rig.text().contains("❓ Fake asks: Run make"), "{}", rig.text());
}

#[test]
fn abort_with_a_question_pending_answers_cancelled_and_closes_the_review() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "one\ntwo\n");
    rig.open();
    rig.send(&format!("edit {path} two 2"));
    rig.review_on_screen();
    rig.nvim.command("PiIde abort").unwrap();
    rig.no_review();
    rig.wait_text("⏹ aborted");
    rig.wait_text("[cancelled]");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    let received = rig.received();
    assert!(received.iter().any(|m| m["method"] == "session/cancel"), "session/cancel sent");
    let answer = received.iter().find(|m| m["id"] == 1 && m.get("result").is_some()).unwrap();
    assert_eq!(answer["result"]["outcome"]["outcome"], "cancelled", "{answer}");
}

#[test]
fn a_question_the_agent_withdraws_takes_its_review_away() {
    let rig = rig(&[]);
    let path = rig.nvim.cwd.join("w.txt").display().to_string();
    rig.open();
    rig.send(&format!("withdraw {path}"));
    rig.wait_text("⚖ review: w.txt");
    // Withdrawn 0.8 s after it was asked: the review goes by itself, and the file stays unmade.
    rig.no_review();
    rig.wait_text("withdrawn, answered {\"error\"");
    assert!(rig.text().contains("-32800"), "answered as cancelled: {}", rig.text());
    assert!(!std::path::Path::new(&path).exists());
}

#[test]
fn a_crash_mid_review_closes_it_and_the_next_prompt_starts_the_agent_again() {
    let rig = rig(&[]);
    let path = rig.nvim.cwd.join("c.txt").display().to_string();
    rig.open();
    rig.send(&format!("crash {path}"));
    rig.wait_text("exited with status 3; the next prompt starts it again");
    rig.no_review();
    assert!(rig.text().contains("fake acp: crashed on purpose"), "{}", rig.text());
    assert!(!std::path::Path::new(&path).exists());
    rig.send("stream 3");
    rig.wait_text("c3 ");
}

#[test]
fn malformed_and_overlong_lines_are_skipped_and_the_turn_goes_on() {
    let rig = rig(&[]);
    rig.open();
    rig.send("malformed");
    rig.wait_text("[ok]");
    rig.idle();
    responsive(&rig.nvim, std::time::Duration::from_secs(5));
}

#[test]
fn with_the_server_off_the_chat_starts_it_for_its_reviews() {
    let nvim = Nvim::start_with(Options {
        after: Some(format!(
            "require('pi-ide').setup({{ chat = {{ agents = {{ fake = {{ cmd = {{ {:?} }} }} }} }} }})",
            fake()
        )),
        ..Default::default()
    });
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim.command("PiIde stop").unwrap();
    assert_eq!(nvim.lua("return require('pi-ide.core.server').running()"), false);
    nvim.command("PiIde chat fake").unwrap();
    assert_eq!(nvim.lua("return require('pi-ide.core.server').running()"), true);
}

#[test]
fn a_missing_agent_says_what_to_install() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ chat = { agents = { nope = { cmd = { '/no/such/agent' }, install = 'npm i nope' } } } })".into()),
        ..Default::default()
    });
    nvim.record_notify();
    nvim.command("PiIde chat nope").unwrap();
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("/no/such/agent not found; install it: npm i nope"), "{notes}");
    let notes_before = nvim.notes().len();
    nvim.command("PiIde chat nosuch").unwrap();
    let notes = nvim.notes();
    assert!(notes.len() > notes_before && notes.last().unwrap().contains("takes an agent or an action"), "{notes:?}");
}

/// The help's entries for the agents the tests cannot run (Cursor, Kiro, Goose, Augment), as a
/// user pastes them: setup takes them, and each starts its documented command (here a program of
/// that name on PATH: the fake agent) and opens a session, the chat named by its label.
#[test]
fn the_helps_untested_agent_entries_are_taken_and_each_starts_its_command() {
    let help = std::fs::read_to_string(plugin_root().join("doc/pi-ide.txt")).unwrap();
    let from = help.find("Entries for agents whose CLI the tests cannot run").expect("the help's entries");
    let block = &help[from..];
    let block = &block[block.find(">lua\n").unwrap() + 5..];
    let block = &block[..block.find("\n<\n").unwrap()];
    let bin = pi_ide_testkit::nvim::temp_dir("acp-untested").join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let nvim = Nvim::start_with(Options::default());
    nvim.command("set columns=200").unwrap();
    nvim.record_notify();
    nvim.lua_with("vim.env.PATH = ... .. ':' .. vim.env.PATH", vec![bin.display().to_string().into()]);
    nvim.lua(block);
    assert!(nvim.notes().is_empty(), "setup took them: {:?}", nvim.notes());
    for (name, program, label) in [("cursor", "agent", "Cursor"), ("kiro", "kiro-cli", "Kiro"), ("goose", "goose", "Goose"), ("augment", "auggie", "Augment")] {
        std::os::unix::fs::symlink(fake(), bin.join(program)).unwrap();
        nvim.command(&format!("PiIde chat {name}")).unwrap();
        nvim.wait_for(&format!("require('pi-ide.features.chat.acp').get('{name}').session ~= nil"), PATIENCE);
        assert_eq!(nvim.lua(&format!("return require('pi-ide.features.chat.acp').get('{name}'):label()")), label);
    }
}

#[test]
fn files_and_the_selection_go_with_the_prompt_and_completions_offer_them() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "alpha\nbeta\n");
    rig.nvim.command("edit a.txt").unwrap();
    type_keys(&rig.nvim, "Vj<Esc>");
    rig.nvim.wait_for("(require('pi-ide.core.native').get().selection_last() or {}).text == 'alpha\\nbeta'", PATIENCE);
    rig.open();
    rig.send("look at @a.txt and #selection");
    rig.idle();
    let prompt = rig.received().into_iter().find(|m| m["method"] == "session/prompt").unwrap();
    let blocks = &prompt["params"]["prompt"];
    assert_eq!(blocks[1]["type"], "resource_link", "{prompt}");
    assert_eq!(blocks[1]["uri"].as_str().unwrap().replace("\\/", "/"), format!("file://{path}"));
    assert!(blocks[2]["text"].as_str().unwrap().contains("```\nalpha\nbeta\n```"), "{prompt}");
    // In the prompt area: @ completes files, # the tags, a leading / the agent's commands.
    rig.nvim.lua("vim.api.nvim_set_current_buf(require('pi-ide.features.chat.acp').get('fake'):prompt_buf())");
    let words = |base: &str| {
        let v = rig.nvim.lua_with("return vim.tbl_map(function(c) return c.word end, require('pi-ide.features.chat.acp.context').omni(0, ...))", vec![base.into()]);
        v.as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert!(words("@a.").contains(&"@a.txt".to_owned()));
    assert_eq!(words("#sel"), ["#selection"]);
    assert_eq!(words("/re"), ["/review"]);
    // The header shows context use and cost.
    let winbar = rig.nvim.lua("return vim.wo[vim.fn.bufwinid(require('pi-ide.features.chat.view').of('fake').buf())].winbar");
    assert!(winbar.as_str().unwrap().contains("1.2k/200.0k tokens (0%%) · 0.01 USD"), "{winbar}");
}

#[test]
fn resume_lists_the_agents_sessions_and_loads_the_one_picked() {
    let rig = rig(&[]);
    rig.nvim.lua("vim.ui.select = function(items, opts, cb) _G.listed = vim.tbl_map(opts.format_item, items) cb(items[1]) end");
    rig.open();
    rig.send("stream 2");
    rig.wait_text("c2 ");
    rig.nvim.command("PiIde resume").unwrap();
    rig.wait_text("an earlier answer");
    assert_eq!(rig.nvim.lua("return _G.listed"), serde_json::json!(["Earlier work"]));
    let t = rig.text();
    assert!(t.contains("## ❯ You\nan earlier question") && !t.contains("c2 "), "the chat is the loaded session's:\n{t}");
    let load = rig.received().into_iter().find(|m| m["method"] == "session/load").unwrap();
    assert_eq!(load["params"]["sessionId"], "old1");
    rig.nvim.wait_for("require('pi-ide.features.chat.acp').get('fake').session == 'old1'", PATIENCE);
}

#[test]
fn ask_and_abort_go_to_the_chat_in_front() {
    let rig = rig(&[]);
    rig.open();
    rig.nvim.command("PiIde ask stream 2").unwrap();
    rig.wait_text("c2 ");
    // Names a tab label shows whole (no slash to shorten).
    let names = rig.nvim.lua(
        "local c = require('pi-ide.features.chat.acp').get('fake') return { vim.fn.bufname(c.view.buf()), vim.fn.bufname(c:prompt_buf()) }",
    );
    assert_eq!(names, serde_json::json!(["Fake chat", "Fake prompt"]));
    let complete = rig.nvim.lua("return vim.fn.getcompletion('PiIde chat ', 'cmdline')");
    let names: Vec<&str> = complete.as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    for want in ["pi", "claude", "copilot", "gemini", "fake", "mode", "model"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}

#[test]
fn a_change_whose_shape_is_unknown_is_asked_without_always_and_says_it_could_not_be_shown() {
    let rig = rig(&[]);
    // A picker that would take the agent's "always" if it were offered (or forged).
    rig.nvim.lua(
        "_G.prompts = {} vim.ui.select = function(items, opts, cb) table.insert(_G.prompts, { opts.prompt, #items }) \
         cb({ optionId = 'always', kind = 'allow_always' }) end",
    );
    rig.open();
    rig.send("ask_edit src/x.rs");
    rig.wait_text("[cancelled]");
    let prompts = rig.nvim.lua("return _G.prompts");
    assert!(prompts[0][0].as_str().unwrap().contains("the change could not be shown"), "{prompts}");
    assert_eq!(prompts[0][1], 2, "allow once and reject once, no always: {prompts}");
    assert!(rig.text().contains("the change could not be shown here"), "{}", rig.text());
    // The forged "always" never reached the agent: the core answered cancelled.
    let answer = rig.received().into_iter().find(|m| m["id"] == 1 && m.get("result").is_some()).unwrap();
    assert_eq!(answer["result"]["outcome"]["outcome"], "cancelled", "{answer}");
}

#[test]
fn an_id_reused_while_its_question_waits_is_refused_and_the_accepted_text_lands_in_its_own_file() {
    let rig = rig(&[]);
    let (first, second) = (rig.nvim.cwd.join("first.txt"), rig.nvim.cwd.join("second.txt"));
    rig.open();
    rig.send(&format!("twice {} {}", first.display(), second.display()));
    // The second write, with the id of the first that waits, is refused at once and shown nowhere.
    rig.wait_text("twice: {\"error\"");
    rig.review_on_screen();
    assert_eq!(rig.nvim.lua("return #require('pi-ide.features.review').list()"), 1, "one review: the first");
    assert!(rig.text().contains("first.txt") && !rig.text().contains("⚖ review: second.txt"), "{}", rig.text());
    type_accept(&rig.nvim, ":w<CR>");
    rig.no_review();
    wait_until("the accepted write", PATIENCE, || first.exists());
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "first\n");
    assert!(!second.exists(), "nothing lands in the other file");
    // The file is written before its answer is sent: the agent may not have read it yet.
    let answers = || rig.received().into_iter().filter(|m| m["id"] == 7777).collect::<Vec<_>>();
    wait_until("the agent to read the write's answer", PATIENCE, || answers().len() >= 2);
    let answers = answers();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], -32600, "{answers:?}");
    assert!(answers[1]["result"].is_null() && answers[1].get("error").is_none(), "{answers:?}");
}

#[test]
fn an_agent_that_writes_other_text_than_accepted_is_caught_when_its_call_ends_or_its_turn_does() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "one\ntwo\n");
    rig.nvim.lua("_G.other = {} vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeWroteOther', callback = function(e) table.insert(_G.other, e.data.path) end })");
    rig.open();
    // Honest: read back, and said to be as accepted.
    rig.send(&format!("edit {path} two 2"));
    rig.review_on_screen();
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("✎ Fake wrote a.txt, as you accepted it");
    rig.idle();
    // Lying, and saying so (its call completes): told at once.
    rig.send(&format!("lie {path} 2 3 EVIL"));
    rig.review_on_screen();
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("⚠ a.txt: Fake wrote other text than you accepted");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\nEVIL\n");
    rig.idle();
    // Lying, and never saying its call ended: told when its turn ends.
    rig.send(&format!("lie {path} EVIL 4 WORSE late"));
    rig.review_on_screen();
    type_accept(&rig.nvim, ":w<CR>");
    wait_until("two warnings", PATIENCE, || rig.text().matches("wrote other text than you accepted").count() == 2);
    assert_eq!(rig.nvim.lua("return #_G.other"), 2);
    assert_eq!(rig.text().matches("wrote other text").count(), 2, "the honest edit is not flagged: {}", rig.text());
}

#[test]
fn an_accept_is_refused_when_a_link_or_a_pipe_was_swapped_in_since_the_review() {
    // The review notices the file changed on disk and refuses the accept; the write itself
    // refuses them too, should one come between (support/reviewed_write.rs's unit tests).
    let rig = rig(&[]);
    rig.nvim.record_notify();
    let outside = pi_ide_testkit::nvim::temp_dir("acp-victim").join("victim.txt");
    std::fs::write(&outside, "precious\n").unwrap();
    let path = file(&rig, "w.txt", "old\n");
    rig.open();
    rig.send(&format!("write {path} hi"));
    rig.review_on_screen();
    rig.nvim.wait_for("(require('pi-ide.features.review').current() or {}).stats ~= nil", PATIENCE);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&outside, &path).unwrap();
    type_accept(&rig.nvim, ":w<CR>");
    rig.nvim.wait_t("has_note", json!(["w.txt changed on disk since this review opened"]), PATIENCE);
    type_keys(&rig.nvim, ":PiIde reject<CR>");
    rig.wait_text("write: {\"error\"");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
    rig.idle();
    // A named pipe: refused, never opened (a read or a write would block until someone is at
    // the other end).
    let fifo = file(&rig, "p.txt", "old\n");
    rig.send(&format!("write {fifo} hi"));
    rig.review_on_screen();
    rig.nvim.wait_for("(require('pi-ide.features.review').current() or {}).stats ~= nil", PATIENCE);
    std::fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.clone()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    type_accept(&rig.nvim, ":w<CR>");
    rig.nvim.wait_t("has_note", json!(["p.txt changed on disk since this review opened"]), PATIENCE);
    type_keys(&rig.nvim, ":PiIde reject<CR>");
    rig.idle();
    rig.send("stream 3");
    rig.wait_text("c3 ");
    // No temporary file is left beside them.
    let left: Vec<_> = std::fs::read_dir(&rig.nvim.cwd).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().contains("pi-ide")), "{left:?}");
}

/// How Neovim names `path` (the winbar's `:~:.`), with its links resolved.
fn shown_as(rig: &Rig, path: &std::path::Path) -> String {
    let real = std::fs::canonicalize(path).unwrap();
    rig.nvim.lua_with("return vim.fn.fnamemodify(..., ':~:.')", vec![real.to_string_lossy().into()]).as_str().unwrap().to_owned()
}

/// The agent's shell plants a link to a file outside the workspace, then asks to write the
/// link. The review names where it leads and warns that it is outside, as it warns an outside
/// path; only then does a typed `:w` write the file it leads to (the link stays a link).
#[test]
fn a_write_to_a_link_the_agent_planted_names_where_it_leads_and_warns_it_is_outside_before_the_w() {
    let rig = rig(&[]);
    let profile = pi_ide_testkit::nvim::temp_dir("acp-planted").join("profile.sh");
    std::fs::write(&profile, "export A=1\n").unwrap();
    rig.open();
    rig.send(&format!("shell ln -s {} notes.txt", profile.display()));
    rig.wait_text("shell: done");
    rig.idle();
    let notes = rig.nvim.cwd.join("notes.txt");
    rig.send(&format!("write {} hi", notes.display()));
    rig.review_on_screen();
    rig.nvim.wait_for("(require('pi-ide.features.review').current() or {}).stats ~= nil", PATIENCE);
    let named = format!("notes.txt → {}", shown_as(&rig, &profile));
    let bar = winbar(&rig.nvim);
    assert!(bar.contains(&named) && bar.contains("⚠ outside the workspace"), "{bar}");
    assert!(rig.text().contains(&format!("⚖ review: {named} ⚠ outside the workspace")), "{}", rig.text());
    assert_eq!(std::fs::read_to_string(&profile).unwrap(), "export A=1\n", "nothing written before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    rig.wait_text("write: null");
    assert_eq!(std::fs::read_to_string(&profile).unwrap(), "hi\n");
    assert!(std::fs::symlink_metadata(&notes).unwrap().file_type().is_symlink());
}

/// A link put in the file's place after its review opened (over a plain file, even one with
/// the same text, or where there was none) refuses the accept: the review says where the link
/// leads, and the file it leads to is never written.
#[test]
fn a_link_that_appeared_since_the_review_opened_refuses_the_accept() {
    let rig = rig(&[]);
    let victim = pi_ide_testkit::nvim::temp_dir("acp-appeared").join("victim.txt");
    std::fs::write(&victim, "same\n").unwrap();
    let plain = file(&rig, "plain.txt", "same\n");
    let absent = rig.nvim.cwd.join("absent.txt").display().to_string();
    rig.open();
    for (i, (path, name)) in [(&plain, "plain.txt"), (&absent, "absent.txt")].into_iter().enumerate() {
        rig.send(&format!("write {path} hi"));
        rig.review_on_screen();
        rig.nvim.wait_for("(require('pi-ide.features.review').current() or {}).stats ~= nil", PATIENCE);
        let _ = std::fs::remove_file(path);
        std::os::unix::fs::symlink(&victim, path).unwrap();
        type_accept(&rig.nvim, ":w<CR>");
        let said = format!("{name} changed on disk since this review opened: it is a link to {} now", shown_as(&rig, &victim));
        rig.nvim.wait_t("has_note", json!([said]), PATIENCE);
        type_keys(&rig.nvim, ":PiIde reject<CR>");
        wait_until("the agent told", PATIENCE, || rig.text().matches("write: {\"error\"").count() == i + 1);
        rig.idle();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "same\n");
    }
}

#[test]
fn a_prompt_sent_from_insert_mode_leaves_it_so_the_review_shows_and_a_waiting_review_says_why() {
    let rig = rig(&[]);
    let path = file(&rig, "a.txt", "one\ntwo\n");
    rig.open();
    let in_prompt = "vim.api.nvim_get_current_buf() == require('pi-ide.features.chat.acp').get('fake'):prompt_buf()";
    rig.nvim.wait_for(in_prompt, PATIENCE);
    rig.nvim.command("startinsert").unwrap();
    type_keys(&rig.nvim, &format!("edit {path} two 2<C-s>"));
    rig.review_on_screen();
    assert_eq!(rig.nvim.lua("return vim.api.nvim_get_mode().mode"), "n");
    assert!(!rig.text().contains("waiting until"), "{}", rig.text());
    type_keys(&rig.nvim, ":q<CR>");
    rig.wait_text("[rejected]");
    rig.idle();
    // Typing in a file meanwhile: the review waits, and the chat says so.
    rig.nvim.command("tabnew").unwrap();
    rig.nvim.command("startinsert").unwrap();
    rig.send(&format!("edit {path} two 2"));
    rig.wait_text("waiting until you leave Insert mode");
    // The chat's line and the review's entry come on turns of the loop of their own.
    rig.nvim.wait_for("#require('pi-ide.features.review').list() == 1", PATIENCE);
    type_keys(&rig.nvim, "<Esc>");
    // It waited for them in their file: it opens without the focus, and they go to it.
    rig.nvim.wait_for("require('pi-ide.features.review').count() == 1", PATIENCE);
    assert_eq!(rig.nvim.lua("return vim.b.pi_ide_review == nil and vim.api.nvim_get_mode().mode"), "n");
    type_keys(&rig.nvim, ":PiIde review<CR>");
    rig.review_on_screen();
}

/// An agent that writes its own change after an allow and mirrors it as fs/write_text_file
/// (opencode's way): the mirror is answered at once with no second review, and the hunks the
/// user kept are what stays, set over the agent's own write.
#[test]
fn the_mirror_of_an_allowed_change_is_answered_at_once_and_the_accepted_text_stays() {
    let rig = rig(&[]);
    let path = file(&rig, "m.txt", "a\nb\nc\nd\ne\nf\ng\n");
    rig.open();
    rig.send(&format!("mirror {path} A|b|c|d|e|f|G|"));
    rig.review_on_screen();
    rig.nvim.wait_for("(require('pi-ide.features.review').current() or {}).hunks ~= nil", PATIENCE);
    type_accept(&rig.nvim, "7G:PiIde hunk reject<CR>:w<CR>");
    rig.wait_text("allowed, mirror: null");
    rig.wait_text("your accepted text was written over it");
    rig.idle();
    wait_until("the accepted text over the agent's own write", PATIENCE, || {
        std::fs::read_to_string(&path).unwrap() == "A\nb\nc\nd\ne\nf\ng\n"
    });
    rig.no_review();
    let t = rig.text();
    assert_eq!(t.matches("⚖ review").count(), 1, "one review, none for the mirror: {t}");
}

/// An abort answers the waiting permission `cancelled` before it sends session/cancel (an
/// agent may apply an allow that comes after its cancel), and nothing is written after it.
#[test]
fn abort_answers_every_question_before_session_cancel_and_nothing_lands_after() {
    let rig = rig(&[]);
    let path = file(&rig, "n.txt", "one\n");
    rig.open();
    rig.send(&format!("mirror {path} ONE|"));
    rig.review_on_screen();
    rig.nvim.command("PiIde abort").unwrap();
    rig.no_review();
    rig.wait_text("⏹ aborted");
    rig.idle();
    let received = rig.received();
    let answered = received.iter().position(|m| m["id"] == 1 && m.get("result").is_some()).expect("the permission answered");
    let cancel = received.iter().position(|m| m["method"] == "session/cancel").expect("session/cancel sent");
    assert!(answered < cancel, "the answer first: {received:?}");
    assert_eq!(received[answered]["result"]["outcome"]["outcome"], "cancelled");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
}

#[test]
fn a_null_in_a_tools_arguments_is_shown_as_null() {
    let rig = rig(&[]);
    rig.open();
    rig.send("nulls");
    rig.idle();
    let t = rig.text();
    assert!(t.contains(r#""move_path":null"#), "{t}");
}

#[test]
fn a_write_the_agent_made_itself_and_the_user_undid_is_told_with_the_next_prompt() {
    let rig = rig(&[]);
    let path = file(&rig, "own.txt", "one\ntwo\n");
    rig.open();
    rig.send("stream 1 10");
    rig.idle();
    watching(&rig.nvim);
    // Its shell writes, nothing asked: a pending change of the chat's agent.
    rig.send(&format!("shell printf 'one\\nTWO\\n' > {path}"));
    rig.idle();
    rig.nvim.wait_for("#require('pi-ide').info().pending == 1", PATIENCE);
    assert_eq!(rig.nvim.lua("return require('pi-ide').info().pending[1].agent"), json!("fake"));
    rig.nvim.command(&format!("edit {path}")).unwrap();
    type_keys(&rig.nvim, ":PiIde reject<CR>");
    rig.nvim.wait_for("#require('pi-ide').info().pending == 0", PATIENCE);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    rig.send("stream 1");
    rig.idle();
    let prompts: Vec<_> = rig.received().into_iter().filter(|m| m["method"] == "session/prompt").collect();
    let last = prompts.last().unwrap().to_string();
    assert!(last.contains("Note from the editor") && last.contains("own.txt") && last.contains("undone by the user"), "{last}");
    assert!(rig.text().contains("Fake is told"), "{}", rig.text());
    // Told once.
    rig.send("stream 1");
    rig.idle();
    let again: Vec<_> = rig.received().into_iter().filter(|m| m["method"] == "session/prompt").collect();
    assert!(!again.last().unwrap().to_string().contains("undone by the user"));
}
