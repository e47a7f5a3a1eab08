//! The real Codex (npm `@openai/codex`) and Zed's codex-acp (`@zed-industries/codex-acp`), pinned
//! by scripts/ensure-agents.sh, offline: a `$CODEX_HOME/config.toml` whose provider is the
//! Responses mock (tests/support/responses_mock.rs), with the model catalog that makes Codex
//! offer apply_patch and MCP tools to the mock model.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long anything Codex does may take on a loaded 2-core machine; only a failure waits this long.
pub const CODEX_PATIENCE: Duration = Duration::from_secs(60);

/// An installed program of the agents' folder. Missing is a failure, never a skip.
pub fn agent_program(name: &str) -> PathBuf {
    let bin = crate::copilot_cli::agents_bin().join(name);
    assert!(bin.exists(), "{name} is not installed at {}: run scripts/ensure-agents.sh", bin.display());
    bin
}

/// The model catalog (a copy of ../shared/codex/model-catalog.json, which the tests must not
/// depend on): one model, `mock-model`, with apply_patch and MCP tools offered directly.
const CATALOG: &str = r#"{"models": [{"slug": "mock-model", "display_name": "Mock model", "description": "loopback mock",
 "shell_type": "shell_command", "apply_patch_tool_type": "freeform", "supports_search_tool": false,
 "visibility": "list", "supported_in_api": true, "priority": 1,
 "supported_reasoning_levels": [{"effort": "low", "description": "low"}, {"effort": "medium", "description": "medium"}],
 "support_verbosity": true, "truncation_policy": {"mode": "tokens", "limit": 10000},
 "experimental_supported_tools": [], "base_instructions": "You are a coding agent.",
 "supports_reasoning_summaries": false, "supports_parallel_tool_calls": true}]}"#;

/// Makes `codex_home` (config.toml and the catalog) for the mock at `model_url`, with `top`
/// (settings such as `sandbox_mode = ...`) first and `extra` (tables, e.g. an
/// `[mcp_servers.nvim]` entry) at the end.
pub fn codex_home(codex_home: &Path, model_url: &str, top: &str, extra: &str) {
    std::fs::create_dir_all(codex_home).unwrap();
    let catalog = codex_home.join("model-catalog.json");
    std::fs::write(&catalog, CATALOG).unwrap();
    let config = format!(
        "{top}\nmodel = \"mock-model\"\nmodel_provider = \"mock\"\nmodel_catalog_json = {catalog:?}\n\
         check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n\
         [model_providers.mock]\nname = \"mock\"\nbase_url = {model_url:?}\nwire_api = \"responses\"\n\
         request_max_retries = 0\nstream_max_retries = 0\n\n{extra}\n"
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
}

/// The environment both programs run with: a scratch HOME, Node 22 first on PATH.
pub fn codex_env(home: &Path, codex_home: &Path) -> Vec<(String, String)> {
    let node_dir = crate::pi_cli::node_binary().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default());
    vec![
        ("HOME".into(), home.display().to_string()),
        ("CODEX_HOME".into(), codex_home.display().to_string()),
        ("OPENAI_API_KEY".into(), "dummy".into()),
        ("PATH".into(), path),
    ]
}

/// A working folder `work` under `scratch`, trusted in a Codex home made there for the mock at
/// `model_url` (with `top`, as in [`codex_home`]), and Neovim's environment as a user's shell
/// gives it: codex and codex-acp on PATH (Neovim keeps the HOME the harness gives it).
pub fn trusted_work(scratch: &Path, model_url: &str, top: &str) -> (PathBuf, Vec<(String, String)>) {
    let dir = scratch.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let trusted = format!("[projects.{:?}]\ntrust_level = \"trusted\"\n", dir.display().to_string());
    codex_home(&scratch.join("codex-home"), model_url, top, &trusted);
    let mut env = codex_env(&scratch.join("home"), &scratch.join("codex-home"));
    env.retain(|(k, _)| k != "HOME");
    for (k, v) in env.iter_mut() {
        if k == "PATH" {
            *v = format!("{}:{v}", agents_path());
        }
    }
    (dir, env)
}

/// The pids of live processes whose command line contains `needle` (ours, in /proc).
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // A zombie (state Z) is gone but for its parent's wait.
        let zombie = stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// The agents' folder of programs, for a PATH.
pub fn agents_path() -> String {
    crate::copilot_cli::agents_bin().display().to_string()
}
