//! An agent in a terminal of ours that writes without calling Neovim (told not to ask, or its
//! own edits): the prompt typed in its terminal begins its turn, so what it wrote is listed
//! unreviewed and can be undone. Its answers within `idle_ms` begin none.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

/// A stand-in agent: it reads prompts and, at "write", writes `a.txt` asking nothing, once the
/// file `$GO` exists (a real agent asks its model first: the turn's checkpoint comes before).
const AGENT: &str = "while read l; do [ \"$l\" = write ] && { until [ -e \"$GO\" ]; do sleep 0.05; done; echo changed > a.txt; }; echo \"done:$l\"; done";

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

/// Types `line` and Enter in the agent's terminal (it has the focus, in Terminal mode).
fn type_prompt(nvim: &Nvim, line: &str) {
    nvim.wait_for("vim.api.nvim_get_mode().mode == 't'", PATIENCE);
    type_keys(nvim, &format!("{line}<CR>"));
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
