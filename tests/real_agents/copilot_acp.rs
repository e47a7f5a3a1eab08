//! The real GitHub Copilot CLI (the version scripts/ensure-agents.sh pins) in ACP mode
//! (`copilot --acp`) in the chat (:PiIde chat copilot), offline: a loopback OpenAI-compatible
//! mock plays the model (tests/support/openai_mock.rs). Neovim starts the CLI itself, as a user's
//! `:PiIde chat copilot` does; the test types into Neovim only.
//!
//! Copilot writes files itself once a permission is allowed; the permission carries a unified
//! diff and the tool call before it the fragment: the chat shows the whole file as it will be,
//! and `:w` / `:q` answer the permission; what the user accepted is set over Copilot's write.


use crate::acp_rig::{agent_setup, Rig};
use crate::harness::*;
use crate::openai_mock;
use crate::copilot_cli::{cli_env, copilot_binary, AGENT_PATIENCE};
use crate::openai_mock::{OpenAiMock, Reply, Turn};
use pi_ide_testkit::nvim::{temp_dir, Options};
use serde_json::json;

/// A Neovim whose chat agent `copilot` is the real CLI, offline, its model the mock.
fn rig() -> Rig<OpenAiMock> {
    let model = OpenAiMock::start();
    let scratch = temp_dir("copilot-acp");
    let (home, copilot_home) = (scratch.join("home"), scratch.join("copilot-home"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&copilot_home).unwrap();
    let env = cli_env(&home, &copilot_home, &model.base_url());
    let setup = agent_setup("copilot", &[&copilot_binary().display().to_string(), "--acp"], &env);
    Rig::start("copilot", AGENT_PATIENCE, model, OpenAiMock::turns_report, Options { after: Some(setup), ..Default::default() })
}

impl Rig<OpenAiMock> {
    fn model_edits(&self, path: &str, old: &str, new: &str) {
        let args = json!({"path": path, "old_str": old, "new_str": new});
        self.model.on_user("please-edit", Reply::tool("edit", args));
        self.model.after_tool("edit", Reply::text("The edit is done."));
        self.send("please-edit the file");
        self.review_on_screen();
    }

    /// The edit tool's result as the model got it.
    fn edit_result(&self) -> String {
        let body = self.model.wait_completion("the edit's result", AGENT_PATIENCE, |b| {
            matches!(openai_mock::turn(b), Turn::ToolResult { name, .. } if name == "edit")
        });
        match openai_mock::turn(&body) {
            Turn::ToolResult { content, .. } => content,
            other => panic!("{other:?}"),
        }
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_prompt_streams_into_the_chat() {
    let rig = rig();
    rig.model.on_user("hello", Reply::text("Hello from the mock model"));
    rig.open();
    rig.send("hello there");
    rig.wait_text("Hello from the mock model");
    rig.idle();
    assert!(rig.text().contains("## ❯ You\nhello there\n\n## Copilot"), "{}", rig.text());
}

#[test]
fn an_edit_is_reviewed_whole_and_lands_only_after_w() {
    let rig = rig();
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\nthree\n");
    rig.open();
    rig.model_edits(&path, "two", "TWO");
    let pane = rig.nvim.lua("return { vim.bo.modifiable, table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|') }");
    assert_eq!(pane, json!([true, "one|TWO|three"]), "the whole file as it will be, editable");
    assert_eq!(read(&path), "one\ntwo\nthree\n", "nothing written before the :w");
    type_accept(&rig.nvim, ":w<CR>");
    wait_until("Copilot's write", AGENT_PATIENCE, || read(&path) == "one\nTWO\nthree\n");
    rig.wait_text("The edit is done.");
    assert!(!rig.edit_result().to_lowercase().contains("denied"));
    // What Copilot wrote is read back when its call completes (or its turn ends): the accepted text.
    rig.wait_text("✎ Copilot wrote a.txt, as you accepted it");
    assert!(!rig.text().contains("wrote other text"), "{}", rig.text());
}

#[test]
fn a_partial_acceptance_lands_as_accepted_and_the_next_prompt_tells_copilot() {
    let rig = rig();
    let path = file_with(&rig.nvim, "p.txt", "a\nb\nc\nd\ne\nf\ng\n");
    rig.open();
    rig.model_edits(&path, "a\nb\nc\nd\ne\nf\ng", "A\nb\nc\nD\ne\nf\nG");
    wait_until("the hunks counted", AGENT_PATIENCE, || {
        rig.nvim.lua("return (require('pi-ide.features.review').current() or {}).hunks ~= nil") == true
    });
    type_accept(&rig.nvim, "4G:PiIde hunk reject<CR>:w<CR>");
    wait_until("hunks 1 and 3 only", AGENT_PATIENCE, || read(&path) == "A\nb\nc\nd\ne\nf\nG\n");
    rig.wait_text("your accepted text was written over it");
    rig.idle();
    rig.model.on_user("next-one", Reply::text("Noted."));
    rig.send("next-one please");
    let body = rig.model.wait_completion("the next prompt", AGENT_PATIENCE, |b| b.to_string().contains("next-one please"));
    let said = body.to_string();
    assert!(said.contains("only in part: hunk 2 of 3 (your line 4) was declined"), "{said}");
    rig.wait_text("Noted.");
    assert_eq!(read(&path), "A\nb\nc\nd\ne\nf\nG\n");
}

#[test]
fn q_rejects_the_edit_and_copilot_says_so() {
    let rig = rig();
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\n");
    rig.open();
    rig.model_edits(&path, "two", "TWO");
    type_keys(&rig.nvim, ":q<CR>");
    // Copilot ends the turn on a rejection and says so (the model is not asked again).
    rig.wait_text("cancelled by user");
    rig.idle();
    assert!(rig.text().contains(&format!("Editing {path} ✗")), "the edit failed:\n{}", rig.text());
    assert_eq!(read(&path), "one\ntwo\n");
}

#[test]
fn copilot_reaches_this_neovims_tools_through_pi_ide_mcp() {
    let rig = rig();
    // A diagnostic only this Neovim has; Copilot's question before the call is allowed once.
    let path = file_with(&rig.nvim, "d.txt", "x\n");
    rig.nvim.command(&format!("edit {path}")).unwrap();
    rig.nvim.lua("vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 0, col = 0, message = 'only-in-this-neovim' } })");
    rig.nvim.lua("vim.ui.select = function(items, _, cb) cb(items[1]) end");
    rig.model.on_user("check", Reply::tool("nvim-getDiagnostics", json!({})));
    rig.model.after_tool("nvim-getDiagnostics", Reply::text("Checked."));
    rig.open();
    rig.send("check the diagnostics");
    let body = rig.model.wait_completion("the tool's result", AGENT_PATIENCE, |b| {
        matches!(openai_mock::turn(b), Turn::ToolResult { name, .. } if name == "nvim-getDiagnostics")
    });
    let tools = body["tools"].to_string();
    assert!(tools.contains("nvim-getOpenEditors"), "this Neovim's tools are offered: {tools}");
    match openai_mock::turn(&body) {
        Turn::ToolResult { content, .. } => assert!(content.contains("only-in-this-neovim"), "{content}"),
        other => panic!("{other:?}"),
    }
    rig.wait_text("Checked.");
}

#[test]
fn abort_with_the_question_pending_closes_the_review_and_leaves_the_file() {
    let rig = rig();
    let path = file_with(&rig.nvim, "a.txt", "one\ntwo\n");
    rig.open();
    rig.model_edits(&path, "two", "TWO");
    rig.nvim.command("PiIde abort").unwrap();
    wait_until("the review gone", AGENT_PATIENCE, || {
        rig.nvim.lua("return #require('pi-ide.features.review').list() == 0") == true
    });
    rig.idle();
    assert_eq!(read(&path), "one\ntwo\n");
}
