//! Agents launched from Neovim (`:PiIde open`): each provider, the environment that connects the
//! agent to this Neovim only, hide and show keeping the session, exit, errors. The agent here is
//! a small shell script that reports what it was given; tests/real_agents/pi.rs, claude.rs and
//! copilot.rs run the real ones.

use crate::harness::{self, *};
use pi_ide_testkit::nvim::{temp_dir, Options};
use std::path::{Path, PathBuf};

/// Writes what it got (cwd, the variables that connect it, its arguments) to `$1`, then echoes
/// each line typed into `$1.typed`; a line `exit N` ends it with status N.
const FAKE_AGENT: &str = r#"#!/bin/sh
out="$1"; shift
{ echo "cwd=$PWD"; echo "PI_IDE_LOCK_DIR=$PI_IDE_LOCK_DIR"; echo "CLAUDE_CODE_SSE_PORT=$CLAUDE_CODE_SSE_PORT"
  echo "EXTRA=$EXTRA"; echo "args=$*"; } > "$out.tmp" && mv "$out.tmp" "$out"
while read -r line; do
  case "$line" in exit*) exit "${line#exit }";; esac
  echo "$line" >> "$out.typed"
done
"#;

struct Rig {
    nvim: Nvim,
    /// Where the fake agent of each name reports.
    dir: PathBuf,
}

fn fake_agent(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("agent.sh");
    std::fs::write(&script, FAKE_AGENT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// setup() with every agent being the fake one (reporting to `<dir>/<name>.out`), plus `extra`
/// terminal options (Lua table fields; the provider is "split" unless they name one).
fn setup_lua(dir: &Path, extra: &str) -> String {
    let extra = if extra.contains("provider") { extra.to_owned() } else { format!("provider = 'split', {extra}") };
    let script = fake_agent(dir);
    let agent = |name: &str| {
        format!(
            "{name} = {{ cmd = {{ {:?}, {:?} }}, env = {{ EXTRA = 'x' }} }}",
            script.display().to_string(),
            dir.join(format!("{name}.out")).display().to_string()
        )
    };
    format!(
        "require('pi-ide').setup({{ terminal = {{ {extra} agents = {{ {}, {}, {} }} }} }})",
        agent("pi"),
        agent("claude"),
        agent("copilot")
    )
}

fn rig_with(extra: &str, env: Vec<(String, String)>) -> Rig {
    let dir = temp_dir("agents");
    let nvim = Nvim::start_with(Options { after: Some(setup_lua(&dir, extra)), env, ..Default::default() });
    nvim.record_notify();
    nvim.command("edit a.txt").unwrap();
    Rig { nvim, dir }
}

fn rig() -> Rig {
    rig_with("", vec![])
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Rig {
    /// What the fake agent `name` reported, once it has.
    fn report(&self, name: &str) -> std::collections::HashMap<String, String> {
        let path = self.dir.join(format!("{name}.out"));
        let deadline = std::time::Instant::now() + 30 * SECOND;
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return text
                    .lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
            }
            assert!(std::time::Instant::now() < deadline, "{name} never started; notes: {:?}", self.nvim.notes());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn typed(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.out.typed"))).unwrap_or_default()
    }

    /// The agent's terminal: its buffer, job, and the window showing it in this tab (0: none).
    fn term(&self, name: &str) -> Value {
        self.nvim.t("agents.terminal", json!([name]))
    }

    fn type_line(&self, name: &str, line: &str) {
        let job = self.term(name)["job"].as_i64().unwrap();
        self.nvim.lua(&format!("vim.api.nvim_chan_send({job}, {:?})", format!("{line}\n")));
    }
}

fn wait_note(nvim: &Nvim, part: &str) -> String {
    let deadline = std::time::Instant::now() + 30 * SECOND;
    loop {
        if let Some(n) = nvim.notes().into_iter().find(|n| n.contains(part)) {
            return n;
        }
        assert!(std::time::Instant::now() < deadline, "no note with {part:?}: {:?}", nvim.notes());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn pi_opens_in_a_split_in_neovims_folder_with_a_lock_folder_of_its_own() {
    let r = rig();
    let nvim = &r.nvim;
    nvim.command("PiIde open pi --model x").unwrap();
    let got = r.report("pi");
    assert_eq!(got["cwd"], nvim.cwd.display().to_string());
    assert_eq!(got["args"], "--model x");
    assert_eq!(got["EXTRA"], "x");
    // Its lock folder holds exactly this Neovim's lockfile, byte for byte.
    let private = PathBuf::from(&got["PI_IDE_LOCK_DIR"]);
    assert_ne!(private, nvim.lock_dir);
    let ours = nvim.lockfile();
    let there = lock::read_all(&private);
    assert_eq!(there.len(), 1, "{there:?}");
    assert_eq!(there[0].raw, ours.raw);
    // A split on the right, with the cursor in it: 40% of the 80 columns would be 32, too
    // narrow for an agent's TUI; it gets 40.
    let t = r.term("pi");
    assert_eq!(t["width"], 40, "{t}");
    assert_eq!(t["current"], true);
    assert_eq!(nvim.lua("return vim.fn.winnr() == vim.fn.winnr('$')"), true);
    // At 200 columns, 40% of them.
    nvim.command("PiIde close").unwrap();
    nvim.command("set columns=200").unwrap();
    nvim.command("PiIde open").unwrap();
    assert_eq!(r.term("pi")["width"], 80);
}

#[test]
fn close_hides_and_open_brings_back_the_same_session() {
    let r = rig();
    let nvim = &r.nvim;
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    let before = r.term("pi");
    nvim.command("PiIde close").unwrap();
    let hidden = r.term("pi");
    assert_eq!(hidden["win"], -1, "{hidden}");
    assert_eq!(hidden["running"], true);
    nvim.command("PiIde open").unwrap();
    let after = r.term("pi");
    assert_eq!(after["buf"], before["buf"]);
    assert_eq!(after["job"], before["job"]);
    assert_eq!(after["current"], true);
    // The same process: what is typed now reaches the one started first.
    r.type_line("pi", "hello");
    let deadline = std::time::Instant::now() + 30 * SECOND;
    while !r.typed("pi").contains("hello") {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The toggle: in the agent's window it hides it; elsewhere it shows and focuses it.
    nvim.lua("require('pi-ide.features.terminal').toggle()");
    assert_eq!(r.term("pi")["win"], -1);
    nvim.lua("require('pi-ide.features.terminal').toggle()");
    assert_eq!(r.term("pi")["current"], true);
    nvim.command("wincmd p").unwrap();
    nvim.lua("require('pi-ide.features.terminal').toggle()");
    assert_eq!(r.term("pi")["current"], true);
    assert_eq!(r.term("pi")["job"], before["job"]);
}

#[test]
fn the_only_window_left_hides_by_showing_another_buffer() {
    let r = rig();
    let nvim = &r.nvim;
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    nvim.command("only").unwrap();
    nvim.command("PiIde close").unwrap();
    let t = r.term("pi");
    assert_eq!(t["win"], -1, "{t}");
    assert_eq!(t["running"], true);
    assert_eq!(nvim.lua("return vim.fn.winnr('$')"), 1);
}

#[test]
fn an_agent_that_exits_cleanly_takes_its_window_along_one_that_fails_stays() {
    let r = rig();
    let nvim = &r.nvim;
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    r.type_line("pi", "exit 0");
    nvim.wait_for("not require('pi-ide.features.terminal').buffer('pi')", 30 * SECOND);
    assert_eq!(nvim.lua("return vim.fn.winnr('$')"), 1);
    std::fs::remove_file(r.dir.join("pi.out")).unwrap();
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    r.type_line("pi", "exit 3");
    wait_note(nvim, "Pi exited with status 3");
    // Still on screen, so the error can be read.
    assert!(r.term("pi")["win"].as_i64().unwrap() > 0);
}

#[test]
fn claude_code_is_given_our_port_and_served_though_claude_code_is_off() {
    let claude_dir = temp_dir("claude");
    let r = rig_with("", vec![("CLAUDE_CONFIG_DIR".into(), claude_dir.display().to_string())]);
    let nvim = &r.nvim;
    assert!(lock::read_all(&claude_dir.join("ide")).is_empty());
    nvim.command("PiIde open claude").unwrap();
    let got = r.report("claude");
    let ours = nvim.lockfile();
    assert_eq!(got["CLAUDE_CODE_SSE_PORT"], ours.port.to_string());
    assert_eq!(got["PI_IDE_LOCK_DIR"], nvim.lock_dir.display().to_string(), "Pi's variable is left alone");
    let claude = lock::read_all(&claude_dir.join("ide"));
    assert_eq!(claude.len(), 1);
    assert_eq!(claude[0].raw, ours.raw);
    // Its header is accepted now.
    let peer = Peer::connect_with_headers(ours.port, &[("x-claude-code-ide-authorization", &ours.auth_token)]);
    assert!(peer.is_ok(), "the Claude header was refused");
    // On stop, its lockfile goes with ours.
    nvim.command("PiIde stop").unwrap();
    assert!(lock::read_all(&claude_dir.join("ide")).is_empty());
    std::fs::remove_dir_all(&claude_dir).ok();
}

#[test]
fn copilot_is_served_on_open_and_another_editor_of_the_folder_is_named() {
    let copilot_home = temp_dir("copilot");
    let r = rig_with("", vec![("COPILOT_HOME".into(), copilot_home.display().to_string())]);
    let nvim = &r.nvim;
    let ide = copilot_home.join("ide");
    std::fs::create_dir_all(&ide).unwrap();
    // Another editor, alive (this test's pid), serving the same folder.
    let other = json!({"socketPath": "/nonexistent", "scheme": "unix+http", "headers": {}, "pid": std::process::id(),
        "timestamp": 0, "workspaceFolders": [nvim.cwd.display().to_string()], "ideName": "Other Editor"});
    std::fs::write(ide.join("other.lock"), other.to_string()).unwrap();
    nvim.command("PiIde open copilot").unwrap();
    r.report("copilot");
    let note = wait_note(nvim, "Other Editor");
    assert!(note.contains("/ide"), "{note}");
    let ours: Vec<_> = pi_ide_testkit::copilot::locks_in(&ide)
        .into_iter()
        .filter(|l| l.json["ideName"] != "Other Editor")
        .collect();
    assert_eq!(ours.len(), 1);
    let mut client = pi_ide_testkit::copilot::CopilotClient::new(&ours[0], "s1");
    assert_eq!(client.initialize().status, 200);
    nvim.command("PiIde stop").unwrap();
    assert_eq!(pi_ide_testkit::copilot::locks_in(&ide).len(), 1, "ours is removed, the other stays");
    std::fs::remove_dir_all(&copilot_home).ok();
}

#[test]
fn a_missing_agent_says_what_to_install_and_opens_nothing() {
    let r = rig_with("", vec![]);
    let nvim = &r.nvim;
    nvim.lua("require('pi-ide').setup({ terminal = { agents = { claude = { cmd = { 'no-such-agent-here' } } } } })");
    nvim.command("PiIde open claude").unwrap();
    let note = wait_note(nvim, "not found on PATH");
    assert!(note.contains("no-such-agent-here") && note.contains("@anthropic-ai/claude-code"), "{note}");
    assert_eq!(nvim.lua("return vim.fn.winnr('$')"), 1);
    nvim.command("PiIde open nobody").unwrap();
    wait_note(nvim, "no agent \"nobody\"");
    // snacks asked for where it is not installed.
    nvim.lua(&setup_lua(&r.dir, "provider = 'snacks',"));
    nvim.command("PiIde open").unwrap();
    wait_note(nvim, "snacks.nvim is not installed");
    assert_eq!(nvim.lua("return vim.fn.winnr('$')"), 1);
}

#[test]
fn wiping_the_agents_buffer_ends_it_quietly() {
    let r = rig();
    let nvim = &r.nvim;
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    let buf = r.term("pi")["buf"].as_i64().unwrap();
    nvim.t("record_events", json!(["PiIdeAgentExited"]));
    nvim.command(&format!("bwipeout! {buf}")).unwrap();
    wait_until("its end handled", PATIENCE, || nvim.t("count_events", json!(["PiIdeAgentExited"])) == json!(1));
    assert!(!nvim.notes().iter().any(|n| n.contains("exited")), "{:?}", nvim.notes());
    // And it starts afresh.
    std::fs::remove_file(r.dir.join("pi.out")).unwrap();
    nvim.command("PiIde open").unwrap();
    r.report("pi");
}

#[test]
fn open_starts_the_server_and_the_private_lockfile_follows_restarts() {
    let r = rig();
    let nvim = &r.nvim;
    nvim.command("PiIde stop").unwrap();
    nvim.command("PiIde open").unwrap();
    let got = r.report("pi");
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), true);
    let private = PathBuf::from(&got["PI_IDE_LOCK_DIR"]);
    assert_eq!(lock::read_all(&private).len(), 1);
    nvim.command("PiIde stop").unwrap();
    assert!(!private.exists(), "the private folder is removed on stop");
    nvim.command("PiIde start").unwrap();
    // The running Pi reads the same folder: the new server's lockfile is there.
    let there = lock::read_all(&private);
    assert_eq!(there.len(), 1);
    assert_eq!(there[0].raw, nvim.lockfile().raw);
}

#[test]
fn float_provider_opens_a_centred_float() {
    let r = rig_with("provider = 'float',", vec![]);
    r.nvim.command("PiIde open").unwrap();
    r.report("pi");
    let t = r.term("pi");
    assert_eq!(t["float"], true, "{t}");
    r.nvim.command("PiIde close").unwrap();
    assert_eq!(r.term("pi")["win"], -1);
    r.nvim.command("PiIde open").unwrap();
    assert_eq!(r.term("pi")["float"], true);
}

#[test]
fn external_provider_runs_the_template_with_the_whole_command() {
    let r = rig_with("provider = 'external', external = 'sh -c %s',", vec![]);
    let nvim = &r.nvim;
    nvim.command("PiIde open pi 'it''s'").unwrap();
    let got = r.report("pi");
    assert_eq!(got["cwd"], nvim.cwd.display().to_string());
    assert_eq!(got["args"], "'it''s'");
    assert!(lock::read_all(Path::new(&got["PI_IDE_LOCK_DIR"])).len() == 1);
    assert_eq!(nvim.lua("return vim.fn.winnr('$')"), 1, "nothing opens in Neovim");
    // A template that fails says so.
    nvim.lua(&setup_lua(&r.dir, "provider = 'external', external = 'false %s',"));
    nvim.command("PiIde open claude").unwrap();
    wait_note(nvim, "external terminal command failed");
}

#[test]
fn send_focuses_the_agent_unless_told_not_to() {
    let r = rig();
    let nvim = &r.nvim;
    edit_file(nvim, "a.txt", &["one", "two"]);
    let mut peer = nvim.peer();
    peer.initialize().unwrap();
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    nvim.command("PiIde close").unwrap();
    nvim.command("PiIde send").unwrap();
    assert_eq!(r.term("pi")["current"], true, "the agent's terminal has the cursor after send");
    // The terminal is never the file the agent sees as the user's.
    assert_eq!(nvim.lua("return require('pi-ide.features.selection').compute()"), Value::Null);
    nvim.lua("require('pi-ide.features.selection').flush()");
    let last = nvim.lua("return require('pi-ide.core.native').get().selection_last()");
    assert!(last.to_string().contains("a.txt"), "{last}");
    nvim.command("wincmd p").unwrap();
    nvim.lua(&setup_lua(&r.dir, "focus_after_send = false,"));
    nvim.command("PiIde send").unwrap();
    assert_eq!(r.term("pi")["current"], false);
}

/// The file the user launches from is the first selection of an agent that connects from its
/// terminal, though no client was there to take the file's state before, and the terminal, the
/// current window by then, never replaces it.
#[test]
fn an_agent_launched_from_a_file_first_hears_of_that_file() {
    let r = rig();
    let nvim = &r.nvim;
    edit_file(nvim, "a.txt", &["one", "two"]);
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    assert_eq!(r.term("pi")["current"], true);
    let mut peer = nvim.peer();
    peer.initialize().unwrap();
    let first = next_selection(&mut peer);
    assert!(first["filePath"].as_str().is_some_and(|p| p.ends_with("a.txt")), "{first}");
}

#[test]
fn a_review_waits_while_the_user_types_in_the_agents_terminal() {
    let r = rig();
    let nvim = &r.nvim;
    let path = file_with(nvim, "w.txt", "old\n");
    let mut peer = nvim.peer();
    peer.initialize().unwrap();
    nvim.command("PiIde open").unwrap();
    r.report("pi");
    assert_eq!(nvim.lua("return vim.api.nvim_get_mode().mode"), "t");
    // Keys typed are seen (every key, whatever the mode).
    type_keys(nvim, "x");
    assert_eq!(nvim.lua("return require('pi-ide.core.typing').within(60000)"), true);
    // While the keyboard is busy in the terminal the review waits, and the keys stay there.
    nvim.lua("_G.real_within = require('pi-ide.core.typing').within \
              require('pi-ide.core.typing').within = function() return true end");
    peer.send_json(&open_diff_call("1", &path, "new\n", "t1")).unwrap();
    wait_until("the review held", PATIENCE, || {
        nvim.lua("local shown, waiting = require('pi-ide.features.review').count() return { shown, waiting }") == json!([0, 1])
    });
    // Held, not being built: no pane exists, through two quiet-timer periods.
    let no_pane = "for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.b[b].pi_ide_review then return false end end return true";
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(1500) {
        assert_eq!(nvim.lua(no_pane), true, "the review was built while the user typed");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    type_keys(nvim, "yz<CR>");
    assert_eq!(nvim.lua("return vim.api.nvim_get_mode().mode"), "t");
    wait_until("the keys reached the agent", PATIENCE, || r.typed("pi").contains("xyz"));
    // Quiet: it opens.
    nvim.lua("require('pi-ide.core.typing').within = _G.real_within");
    wait_until("the review on screen", PATIENCE, || nvim.t("reviews_shown", json!([])) == json!(1));
}

#[test]
fn a_failed_try_to_serve_copilot_does_not_spoil_the_next() {
    let copilot_home = temp_dir("copilot");
    let r = rig_with("", vec![("COPILOT_HOME".into(), copilot_home.display().to_string())]);
    let nvim = &r.nvim;
    let err = nvim.lua_err("require('pi-ide.core.native').get().serve_copilot({ socket_dir = '/proc/no/such/folder' })");
    assert!(err.is_some(), "a socket folder that cannot be made was accepted");
    nvim.command("PiIde open copilot").unwrap();
    r.report("copilot");
    let locks = pi_ide_testkit::copilot::locks_in(&copilot_home.join("ide"));
    assert_eq!(locks.len(), 1);
    let mut client = pi_ide_testkit::copilot::CopilotClient::new(&locks[0], "s1");
    assert_eq!(client.initialize().status, 200);
    std::fs::remove_dir_all(&copilot_home).ok();
}

#[test]
fn pi_sees_only_this_neovims_lockfile_even_after_a_crash_left_one() {
    let r = rig();
    let nvim = &r.nvim;
    // A Neovim that crashed with our pid left its lockfile in the private folder.
    let dir = PathBuf::from(nvim.lua("return require('pi-ide.agents.pi').lock_dir()").as_str().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let stale = nvim.lockfile().raw.to_string();
    std::fs::write(dir.join("1.lock"), stale).unwrap();
    nvim.command("PiIde open").unwrap();
    let got = r.report("pi");
    let there = lock::read_all(Path::new(&got["PI_IDE_LOCK_DIR"]));
    assert_eq!(there.len(), 1, "{there:?}");
    assert_eq!(there[0].raw, nvim.lockfile().raw);
}

/// setup() for `provider` with every agent being the fake one and no environment of the user's,
/// as a new user has them (only the program is named).
fn setup_without_env(dir: &Path, provider: &str) -> String {
    let script = fake_agent(dir);
    let agents: Vec<String> = ["pi", "claude", "copilot", "opencode"]
        .iter()
        .map(|name| {
            let out = dir.join(format!("{name}.out"));
            format!("{name} = {{ cmd = {{ {:?}, {:?} }} }}", script.display().to_string(), out.display().to_string())
        })
        .collect();
    format!(
        "require('pi-ide').setup({{ terminal = {{ provider = '{provider}', external = 'sh -c %s', agents = {{ {} }} }} }})",
        agents.join(", ")
    )
}

/// Every provider starts every agent in a bare Neovim with nothing in `terminal.agents.*.env`:
/// an agent given no variable (the Copilot CLI: nothing selects an editor for it) once reached
/// jobstart with an empty table, which it refuses (E475: Invalid argument: env).
#[test]
fn every_provider_starts_every_agent_with_no_environment_of_the_users() {
    let snacks = std::path::PathBuf::from(std::env::var("PI_IDE_LAZYVIM").expect("scripts/test sets PI_IDE_LAZYVIM"))
        .join("nvim-lazy/snacks.nvim");
    assert!(snacks.is_dir(), "no snacks.nvim at {}", snacks.display());
    for provider in ["split", "float", "external", "snacks"] {
        let dir = temp_dir("agents-bare");
        let before = (provider == "snacks").then(|| format!("vim.opt.rtp:prepend({:?})", snacks.display().to_string()));
        let nvim = Nvim::start_with(Options { before, after: Some(setup_without_env(&dir, provider)), ..Default::default() });
        nvim.record_notify();
        let r = Rig { nvim, dir };
        for agent in ["pi", "claude", "copilot", "opencode"] {
            r.nvim.command(&format!("PiIde open {agent}")).unwrap();
            let got = r.report(agent);
            assert_eq!(got["cwd"], r.nvim.cwd.display().to_string(), "{provider} {agent}");
            assert_eq!(r.nvim.notes(), Vec::<String>::new(), "{provider} {agent}: nothing to say");
            if provider != "external" {
                assert_eq!(r.term(agent)["running"], true, "{provider} {agent}");
            }
        }
        if provider == "split" {
            // With their options off, :checkhealth says the launches are served, not "off".
            let text = harness::health(&r.nvim);
            for want in ["Claude Code served for :PiIde open claude: ", "Copilot CLI served for :PiIde open copilot: socket "] {
                assert!(text.contains(want), "{want}\n{text}");
            }
        }
    }
}

#[test]
fn codex_is_given_this_neovims_tools_on_its_command_line() {
    let r = rig();
    let script = fake_agent(&r.dir);
    let out = r.dir.join("codex.out");
    r.nvim.lua(&format!(
        "require('pi-ide').setup({{ terminal = {{ provider = 'split', agents = {{ codex = {{ cmd = {{ {:?}, {:?} }} }} }} }} }})",
        script.display().to_string(),
        out.display().to_string()
    ));
    r.nvim.command("PiIde open codex --search").unwrap();
    let args = &r.report("codex")["args"];
    let program = r.nvim.lua("return require('pi-ide.agents.mcp').program()");
    let pid = r.nvim.pid();
    let want = format!(
        "-c mcp_servers.nvim.command=\"{}\" -c mcp_servers.nvim.args=[\"--nvim\",\"{pid}\"] -c mcp_servers.nvim.tool_timeout_sec=3600 -c mcp_servers.nvim.env_vars=[\"XDG_RUNTIME_DIR\"] --search",
        program.as_str().unwrap()
    );
    assert_eq!(args, &want, "the server named by pid, then the user's arguments");
}

/// Qwen Code's default mode edits without asking: `:PiIde open qwen` runs it in the mode that
/// asks (a review of each edit), unless the user named a mode (qwen refuses two, or one beside
/// --yolo).
#[test]
fn qwen_is_launched_in_its_mode_that_asks_unless_the_user_named_one() {
    for (typed, want) in [("", "--approval-mode default"), (" --approval-mode auto-edit", "--approval-mode auto-edit"), (" -y", "-y")] {
        let r = rig();
        let script = fake_agent(&r.dir);
        let out = r.dir.join("qwen.out");
        r.nvim.lua(&format!(
            "require('pi-ide').setup({{ terminal = {{ provider = 'split', agents = {{ qwen = {{ cmd = {{ {:?}, {:?} }} }} }} }} }})",
            script.display().to_string(),
            out.display().to_string()
        ));
        r.nvim.command(&format!("PiIde open qwen{typed}")).unwrap();
        assert_eq!(&r.report("qwen")["args"], want, ":PiIde open qwen{typed}");
    }
}

/// opencode's TUI finds this Neovim through our lockfile in ~/.claude/ide alone (never
/// $CLAUDE_CONFIG_DIR): given a port it would dial without the lockfile's token.
#[test]
fn piide_open_opencode_serves_it_in_claude_codes_home_folder_and_gives_it_no_port() {
    let dir = temp_dir("agents-opencode");
    let config = dir.join("claude-config");
    let env = vec![("CLAUDE_CONFIG_DIR".to_owned(), config.display().to_string())];
    let nvim = Nvim::start_with(Options { after: Some(setup_without_env(&dir, "split")), env, ..Default::default() });
    nvim.record_notify();
    let r = Rig { nvim, dir };
    r.nvim.command("PiIde open opencode").unwrap();
    let got = r.report("opencode");
    assert_eq!(got["CLAUDE_CODE_SSE_PORT"], "", "{got:?}");
    let home = r.nvim.lua("return vim.env.HOME").as_str().unwrap().to_owned();
    let there = lock::read_all(&Path::new(&home).join(".claude/ide"));
    assert_eq!(there.len(), 1, "{there:?}");
    assert_eq!(there[0].raw["authToken"], r.nvim.lockfile().raw["authToken"]);
    assert!(lock::read_all(&config.join("ide")).is_empty(), "not in $CLAUDE_CONFIG_DIR");
}

/// :checkhealth lists each agent's program found on PATH (the terminal's and the chat's), and
/// whether it is served; one not on PATH is not listed.
#[test]
fn checkhealth_lists_the_agents_found_on_path_and_whether_each_is_served() {
    use std::os::unix::fs::PermissionsExt;
    let bin = temp_dir("agents-path");
    for name in ["claude", "claude-agent-acp", "opencode"] {
        std::fs::write(bin.join(name), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ claude_code = true })".into()),
        env: vec![("PATH".to_owned(), path)],
        ..Default::default()
    });
    nvim.wait_for("require('pi-ide.core.server').running()", PATIENCE);
    let text = harness::health(&nvim);
    let lockfile = nvim.lua("return require('pi-ide').info().served.claude.lockfile").as_str().unwrap().to_owned();
    for want in [
        format!("claude (:PiIde open claude; served ({lockfile}), not connected): {}", bin.join("claude").display()),
        format!("claude-agent-acp (:PiIde chat claude): {}", bin.join("claude-agent-acp").display()),
        format!("opencode (:PiIde open opencode; served ({lockfile}), not connected): {}", bin.join("opencode").display()),
    ] {
        assert!(text.contains(&want), "missing {want:?} in:\n{text}");
    }
    assert!(!text.contains("copilot (:PiIde open copilot"), "not on PATH: {text}");
}
