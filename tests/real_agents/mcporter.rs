//! The real mcporter (npm `mcporter` 0.9.0, on the suite's Node 22) as an MCP client of a real
//! Neovim through `pi-ide-mcp`, configured as `:PiIde mcp mcporter` says: it lists the tools,
//! calls getDiagnostics, gets FILE_SAVED after `:w` is typed and DIFF_REJECTED after `:q`, and
//! when its own timeout cuts a review short (it closes the program's stdin, then kills it) the
//! review goes away in Neovim and nothing is written.


use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use crate::harness::*;
use crate::pi_cli;
use pi_ide_testkit::nvim::{plugin_root, Options};

fn mcporter_js() -> PathBuf {
    let p = pi_cli::agents_dir().join("node_modules/mcporter/dist/cli.js");
    assert!(p.exists(), "no mcporter at {} (scripts/ensure-agents.sh installs mcporter@0.9.0)", p.display());
    p
}

/// A Neovim, and mcporter's config in its folder (mcporter 0.9.0 runs a stdio server in the
/// folder of its config file), as :PiIde mcp mcporter gives it.
fn setup() -> (Nvim, PathBuf) {
    let nvim = Nvim::start_with(Options::default());
    nvim.command("PiIde mcp mcporter").unwrap();
    let copied: Value = serde_json::from_str(nvim.lua("return vim.fn.getreg('\"')").as_str().unwrap()).unwrap();
    let mut config = copied.clone();
    // The test's Neovim keeps its records under its own runtime folder.
    config["mcpServers"]["nvim"]["env"] = json!({"XDG_RUNTIME_DIR": nvim.home.join("run")});
    assert_eq!(config["mcpServers"]["nvim"]["command"], json!(plugin_root().join("target/release/pi-ide-mcp")));
    let path = nvim.cwd.join("mcporter.json");
    std::fs::write(&path, config.to_string()).unwrap();
    (nvim, path)
}

fn mcporter(nvim: &Nvim, config: &PathBuf, args: &[&str]) -> Command {
    let mut cmd = Command::new(pi_cli::node_binary());
    cmd.arg(mcporter_js()).args(args).args(["--config", &config.to_string_lossy()]);
    cmd.current_dir(&nvim.cwd)
        .env("HOME", &nvim.home)
        .env_remove("PI_IDE_NVIM")
        .env_remove("NVIM")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn run(nvim: &Nvim, config: &PathBuf, args: &[&str]) -> String {
    let out: Output = mcporter(nvim, config, args).output().expect("mcporter runs");
    // Its exit status is 0 even when the call failed: the output says.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.is_empty(), "no output; stderr: {}", String::from_utf8_lossy(&out.stderr));
    text
}

fn start_review(nvim: &Nvim, config: &PathBuf, path: &str, contents: &str, timeout_ms: &str) -> Child {
    let args = [
        "call",
        "nvim.openDiff",
        &format!("new_file_path={path}"),
        &format!("new_file_contents={contents}"),
        "tab_name=review",
        "--output",
        "json",
        "--timeout",
        timeout_ms,
    ];
    let child = mcporter(nvim, config, &args).spawn().expect("mcporter runs");
    wait_until("the review on screen", PATIENCE * 3, || nvim.t("reviews_shown", json!([])).as_u64() == Some(1));
    child
}

fn output_of(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}; stderr: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn mcporter_lists_the_tools_and_gets_diagnostics() {
    let (nvim, config) = setup();
    let list: Value = serde_json::from_str(&run(&nvim, &config, &["list", "nvim", "--json"])).unwrap();
    assert_eq!(list["status"], "ok", "{list}");
    let names: Vec<&str> = list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"openDiff") && names.contains(&"getDiagnostics"), "{names:?}");
    let path = edit_file(&nvim, "broken.lua", &["local x = "]);
    nvim.lua("local ns = vim.api.nvim_create_namespace('t') vim.diagnostic.set(ns, 0, {{ lnum = 0, col = 0, message = 'unexpected end', severity = 1 }})");
    let diags = run(&nvim, &config, &["call", "nvim.getDiagnostics", "--output", "json"]);
    assert!(diags.contains("unexpected end") && diags.contains("broken.lua"), "{diags}");
    let _ = path;
}

#[test]
fn mcporter_gets_file_saved_after_w_and_diff_rejected_after_q() {
    let (nvim, config) = setup();
    let path = file_with(&nvim, "hello.txt", "hello\n");
    let child = start_review(&nvim, &config, &path, "hello mcporter", "600000");
    type_accept(&nvim, ":w<CR>");
    let out = output_of(child);
    assert_eq!(out["content"][0]["text"], "FILE_SAVED", "{out}");
    assert_eq!(out["content"][1]["text"], "hello mcporter", "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n", "the editor never writes it");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    let child = start_review(&nvim, &config, &path, "no", "600000");
    type_keys(&nvim, ":q<CR>");
    assert_eq!(output_of(child)["content"][0]["text"], "DIFF_REJECTED");
}

#[test]
fn mcporters_timeout_takes_the_review_away_and_nothing_is_written() {
    let (nvim, config) = setup();
    nvim.record_notify();
    let path = file_with(&nvim, "slow.txt", "slow\n");
    // mcporter's timeout: it closes the program's stdin, then SIGTERM, then SIGKILL.
    let child = start_review(&nvim, &config, &path, "too late", "15000");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    let _ = child.wait_with_output();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "slow\n");
    assert!(nvim.notes().iter().any(|n| n.contains("slow.txt")), "{:?}", nvim.notes());
    nvim.wait_for("#require('pi-ide').info().clients == 0", PATIENCE);
}
