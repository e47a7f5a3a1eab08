//! The chat (:PiIde chat) with `fake_pi_rpc` playing Pi (testkit/src/bin/fake_pi_rpc.rs): what the
//! real Pi cannot be made to do on cue — a malformed line, a crash with words on stderr, a
//! stream at a fixed rate. tests/real_agents/pi_chat.rs drives the real Pi.

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, Options};

fn fake_pi() -> String {
    plugin_root().join("target/release/fake_pi_rpc").display().to_string()
}

/// A Neovim whose `pi` is the fake with `args`, notifications recorded.
fn neovim(args: &[&str]) -> Nvim {
    let mut cmd = vec![format!("{:?}", fake_pi())];
    cmd.extend(args.iter().map(|a| format!("{a:?}")));
    let nvim = Nvim::start_with(Options {
        after: Some(format!(
            "require('pi-ide').setup({{ terminal = {{ agents = {{ pi = {{ cmd = {{ {} }} }} }} }} }})",
            cmd.join(", ")
        )),
        ..Default::default()
    });
    nvim.record_notify();
    nvim
}

fn text(nvim: &Nvim) -> String {
    nvim.lua("return require('pi-ide.features.chat.view').text()").as_str().unwrap_or_default().to_owned()
}

fn wait_text(nvim: &Nvim, part: &str) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !text(nvim).contains(part) {
        assert!(std::time::Instant::now() < deadline, "no {part:?} in the chat:\n{}", text(nvim));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_streamed_answer_is_drawn_in_few_draws_and_a_malformed_line_is_skipped() {
    let nvim = neovim(&["--deltas", "400", "--rate", "2000", "--malformed"]);
    nvim.command("PiIde chat").unwrap();
    nvim.lua("require('pi-ide.features.chat').send('hello')");
    wait_text(&nvim, "d400 lorem ipsum");
    let t = text(&nvim);
    assert!(t.contains("## ❯ You\nhello"), "{t}");
    // Every delta, in order, once.
    let order: Vec<usize> = (1..=400).map(|i| t.find(&format!("d{i} lorem")).expect("each delta")).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "deltas out of order");
    nvim.wait_for("require('pi-ide.features.chat').status() == ''", PATIENCE);
    let stats = nvim.lua("return require('pi-ide.features.chat.process').stats(require('pi-ide.features.chat.process').current())");
    assert_eq!(stats["malformed"], 1, "{stats}");
    assert_eq!(stats["text_deltas"], 400, "{stats}");
    assert!(stats["lua_drains"].as_u64().unwrap() < 200, "deltas are coalesced: {stats}");
    let log = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
    assert!(log.contains("malformed"), "{log}");
}

#[test]
fn pi_crashing_is_shown_with_its_stderr_and_the_next_prompt_starts_it_again() {
    let nvim = neovim(&["--deltas", "50", "--rate", "500", "--exit-after-deltas", "5"]);
    nvim.command("PiIde chat").unwrap();
    let pid = nvim.lua("return require('pi-ide.core.native').get().chat_pid(require('pi-ide.features.chat.process').current().id)");
    nvim.lua("require('pi-ide.features.chat').send('one')");
    wait_text(&nvim, "✗ Pi exited with status 3");
    wait_text(&nvim, "fake pi: crashed on purpose");
    nvim.wait_for("not require('pi-ide.features.chat').running() and require('pi-ide.features.chat').status() == ''", PATIENCE);
    // Reaped: no zombie.
    let gone = std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(!gone, "Pi {pid} is still in the process table");
    nvim.lua("require('pi-ide.features.chat').send('two')");
    wait_text(&nvim, "## ❯ You\ntwo");
    nvim.wait_for("require('pi-ide.features.chat').running()", PATIENCE);
}

#[test]
fn hidden_the_chat_says_when_pi_finishes_and_the_statusline_follows_pi() {
    let nvim = neovim(&["--deltas", "100", "--rate", "200"]);
    nvim.command("PiIde chat").unwrap();
    nvim.command("PiIde chat").unwrap(); // hidden again
    assert_eq!(nvim.lua("return require('pi-ide.features.chat').visible()"), false);
    nvim.command("PiIde ask what now").unwrap();
    nvim.wait_for("require('pi-ide').status():find('π working') ~= nil", PATIENCE);
    // ask shows the chat and leaves the cursor where it was.
    assert_eq!(nvim.lua("return require('pi-ide.features.chat').visible()"), true);
    assert_eq!(nvim.lua("return vim.b.pi_ide_chat == nil and vim.bo.filetype ~= 'markdown'"), true);
    nvim.command("PiIde chat").unwrap();
    nvim.wait_for("require('pi-ide.features.chat').status() == ''", PATIENCE);
    let deadline = std::time::Instant::now() + PATIENCE;
    while !nvim.notes().iter().any(|n| n.contains("Pi finished")) {
        assert!(std::time::Instant::now() < deadline, "{:?}", nvim.notes());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The chat open, its Pi (the fake) reading nothing until `release` (`--start-when`).
struct HeldStart {
    nvim: Nvim,
    dir: std::path::PathBuf,
}

impl HeldStart {
    fn open() -> HeldStart {
        let dir = pi_ide_testkit::nvim::temp_dir("chat-held");
        let go = dir.join("go");
        let nvim = neovim(&["--start-when", go.to_str().unwrap(), "--deltas", "3"]);
        nvim.command("PiIde chat").unwrap();
        HeldStart { nvim, dir }
    }

    fn release(&self) {
        std::fs::write(self.dir.join("go"), "").unwrap();
    }
}

impl Drop for HeldStart {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn until_pi_answers_the_header_and_statusline_say_it_is_starting() {
    let held = HeldStart::open();
    let nvim = &held.nvim;
    // Pi reads nothing until `go` exists: it is starting for as long as the test wants.
    assert_eq!(nvim.lua("return require('pi-ide').status()"), "π starting");
    let header = || nvim.t("chat_header", json!([])).as_str().unwrap_or_default().to_owned();
    assert!(header().contains("starting"), "{}", header());
    held.release();
    // Pi's first answers are responses only (get_commands, get_state): they end the start.
    nvim.wait_for("require('pi-ide.features.chat').status() == ''", PATIENCE);
    assert!(!header().contains("starting"), "{}", header());
}

#[test]
fn two_prompts_sent_before_pi_is_up_are_both_answered() {
    let held = HeldStart::open();
    let nvim = &held.nvim;
    nvim.lua("require('pi-ide.features.chat').send('one') require('pi-ide.features.chat').send('two')");
    held.release();
    // Pi starts the first and is streaming when the second comes: it queues it (a prompt
    // without streamingBehavior would be refused then), and answers both.
    let deadline = std::time::Instant::now() + PATIENCE;
    while text(nvim).matches("d3 lorem ipsum").count() < 2 {
        assert!(std::time::Instant::now() < deadline, "{}", text(nvim));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!text(nvim).contains("already processing"), "{}", text(nvim));
}

#[test]
fn the_chat_comes_back_whole_after_q_in_one_of_its_windows_or_bd() {
    let nvim = neovim(&["--deltas", "3"]);
    let wins = "local c, p = require('pi-ide.features.chat.window').windows(require('pi-ide.features.chat.view').buf(), \
                vim.fn.bufnr('Pi prompt')) return { c ~= nil, p ~= nil }";
    nvim.command("PiIde chat").unwrap();
    type_keys(&nvim, "<Esc>");
    assert_eq!(nvim.lua(wins), json!([true, true]));
    // :q in the prompt leaves the conversation alone; i there brings the prompt back.
    nvim.command("q").unwrap();
    assert_eq!(nvim.lua(wins), json!([true, false]));
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(require('pi-ide.features.chat.view').buf()))");
    type_keys(&nvim, "i");
    assert_eq!(nvim.lua(wins), json!([true, true]));
    assert_eq!(nvim.lua("return vim.api.nvim_buf_get_name(0):match('Pi prompt$') ~= nil"), true);
    type_keys(&nvim, "<Esc>");
    // :only in the conversation, then :PiIde chat shows the whole chat instead of hiding.
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(require('pi-ide.features.chat.view').buf()))");
    nvim.command("only").unwrap();
    nvim.command("PiIde chat").unwrap();
    type_keys(&nvim, "<Esc>");
    assert_eq!(nvim.lua(wins), json!([true, true]));
    // :bd of the prompt and of the conversation: the chat starts afresh, keys and all.
    nvim.lua("vim.cmd('bdelete! ' .. vim.fn.bufnr('Pi prompt'))");
    nvim.lua("vim.cmd('bdelete! ' .. require('pi-ide.features.chat.view').buf())");
    nvim.command("PiIde chat").unwrap();
    assert_eq!(nvim.lua(wins), json!([true, true]));
    type_keys(&nvim, "hello<C-s>");
    wait_text(&nvim, "d3 lorem ipsum");
    assert!(text(&nvim).contains("## ❯ You\nhello"), "{}", text(&nvim));
    let err = nvim.lua("return vim.v.errmsg");
    assert_eq!(err, json!(""), "{err}");
}

#[test]
fn ask_with_a_range_quotes_the_lines_and_their_file() {
    let nvim = neovim(&["--deltas", "5", "--rate", "0"]);
    std::fs::write(nvim.cwd.join("a.py"), "one\ntwo ``` x\nthree\n").unwrap();
    nvim.command("edit a.py").unwrap();
    nvim.command("2,3PiIde ask why").unwrap();
    wait_text(&nvim, "why");
    let t = text(&nvim);
    assert!(t.contains("In a.py, lines 2-3:\n````python\ntwo ``` x\nthree\n````\n\nwhy"), "{t}");
    // No text: the quote waits in the prompt, the cursor there.
    nvim.command("1PiIde ask").unwrap();
    let prompt = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    assert_eq!(prompt, "In a.py, lines 1-1:\n```python\none\n```\n\n");
    // A second quote goes after what the prompt holds.
    nvim.command("wincmd p").unwrap();
    nvim.command("3PiIde ask").unwrap();
    let prompt = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
    assert_eq!(
        prompt,
        "In a.py, lines 1-1:\n```python\none\n```\n\nIn a.py, lines 3-3:\n```python\nthree\n```\n\n"
    );
}

#[test]
fn without_pi_on_path_one_message_says_what_to_install() {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ terminal = { agents = { pi = { cmd = { 'no-such-pi-here' } } } } })".into()),
        ..Default::default()
    });
    nvim.record_notify();
    nvim.command("PiIde chat").unwrap();
    let notes = nvim.notes();
    assert!(notes.iter().any(|n| n.contains("no-such-pi-here not found on PATH; install it")), "{notes:?}");
    assert_eq!(nvim.lua("return #vim.api.nvim_list_wins()"), 1, "no chat window without Pi");
}

#[test]
fn a_question_of_pis_with_the_id_of_one_that_waits_is_cancelled_at_once_and_never_shown() {
    let nvim = neovim(&[]);
    // Pi's extension asks twice with one id: the answer to the first must never be taken for
    // the second (a "Yes" meant for a harmless question would allow another).
    nvim.t("chat.ask_twice_with_one_id", json!([]));
    assert_eq!(nvim.lua("return _G.shown"), json!(["Format a.txt?"]));
    assert_eq!(nvim.lua("return _G.replies"), json!([{"type": "extension_ui_response", "id": "q1", "cancelled": true}]));
    nvim.lua("_G.pick('Yes')");
    let replies = nvim.lua("return _G.replies");
    assert_eq!(replies[1], json!({"type": "extension_ui_response", "id": "q1", "confirmed": true}), "{replies}");
}
