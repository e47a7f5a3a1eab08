//! What the user types and configures: :PiIde subcommands, setup() validation, and the
//! messages shown when the native library is missing or stale.

use crate::harness::*;
use pi_ide_testkit::nvim::{plugin_root, Options};
use std::path::Path;

#[test]
fn status_shows_port_lockfile_clients_and_parked() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let _p = nvim.peer();
    nvim.wait_for(
        "(require('pi-ide').info().clients[1] or {}).name ~= nil",
        PATIENCE,
    );
    let lines = nvim.lua("return require('pi-ide.core.status').lines()");
    let text = lines
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains(&format!("127.0.0.1:{}", l.port)), "{text}");
    assert!(
        text.contains(&l.path.to_string_lossy().to_string()),
        "{text}"
    );
    assert!(text.contains("clients: 1"), "{text}");
    assert!(text.contains("pi-ide 0.1.0"), "{text}");
    assert!(text.contains("parked requests: 0"), "{text}");
    // :PiIde with no argument and :PiIde status both run.
    nvim.command("PiIde").unwrap();
    nvim.command("PiIde status").unwrap();
    nvim.command("PiIde stop").unwrap();
    let lines = nvim.lua("return require('pi-ide.core.status').lines()");
    assert!(lines[0].as_str().unwrap().contains("not running"));
}

#[test]
fn subcommands_complete_and_unknown_ones_are_named() {
    let nvim = Nvim::start();
    let c = nvim.lua("return vim.fn.getcompletion('PiIde st', 'cmdline')");
    assert_eq!(c, json!(["start", "stats", "status", "stop"]));
    let c = nvim.lua("return vim.fn.getcompletion('PiIde ', 'cmdline')");
    assert!(c.as_array().unwrap().len() >= 4);
    nvim.record_notify();
    nvim.command("PiIde frobnicate").unwrap();
    let notes = nvim.notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("'frobnicate'") && n.contains("start")),
        "{notes:?}"
    );
    // start when running says so; stop twice says not running.
    nvim.command("PiIde start").unwrap();
    nvim.command("PiIde stop").unwrap();
    nvim.command("PiIde stop").unwrap();
    let notes = nvim.notes();
    assert!(
        notes.iter().any(|n| n.contains("already running")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("not running")), "{notes:?}");
}

#[test]
fn setup_names_unknown_and_ill_typed_options_and_keeps_the_rest() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.g.__x = 1".into()),
        ..Default::default()
    });
    nvim.record_notify();
    nvim.lua("require('pi-ide').setup({ auto_strat = false, log_level = 'loud', max_message_size = 'big', ide_name = 'Neovim · test' })");
    let notes = nvim.notes().join("\n");
    assert!(
        notes.contains("unknown option 'auto_strat' (did you mean 'auto_start'?)"),
        "{notes}"
    );
    assert!(
        notes.contains("option 'log_level' must be one of"),
        "{notes}"
    );
    assert!(
        notes.contains("option 'max_message_size' must be a number, got a string"),
        "{notes}"
    );
    assert_eq!(
        nvim.lua("return require('pi-ide.core.config').values.ide_name"),
        json!("Neovim · test")
    );
    assert_eq!(
        nvim.lua("return require('pi-ide.core.config').values.log_level"),
        json!("info")
    );
    // Nested options are named with their path.
    nvim.record_notify();
    nvim.lua("require('pi-ide').setup({ suggestion = { count = 5, keys = { accept = true }, filetypes = { lua = 'yes' } }, review = { layout = 'float', keyz = {}, when = 'later' } })");
    let notes = nvim.notes().join("\n");
    assert!(
        notes.contains("option 'suggestion.count' must be 1, 2 or 3"),
        "{notes}"
    );
    assert!(
        notes.contains("option 'suggestion.keys.accept' must be a key"),
        "{notes}"
    );
    assert!(
        notes.contains("option 'suggestion.filetypes' must map filetype names"),
        "{notes}"
    );
    assert!(
        notes.contains("option 'review.layout' must be one of tab, vsplit"),
        "{notes}"
    );
    assert!(
        notes.contains("unknown option 'review.keyz' (did you mean 'keys'?)"),
        "{notes}"
    );
    assert!(notes.contains("option 'review.when' must be one of before, after"), "{notes}");
    // review.when per agent: each agent's must be "before" or "after".
    nvim.record_notify();
    nvim.lua("require('pi-ide').setup({ review = { when = { default = 'after', pi = 'soon' } } })");
    let notes = nvim.notes().join("\n");
    assert!(notes.contains("option 'review.when' pi must be \"before\" or \"after\""), "{notes}");
    assert_eq!(nvim.lua("return require('pi-ide.core.config').values.review.when"), json!("before"));
    assert_eq!(
        nvim.lua("return require('pi-ide.core.config').values.suggestion.count"),
        json!(3)
    );
    nvim.record_notify();
    nvim.lua("require('pi-ide').setup('nope')");
    assert!(nvim.notes().join("").contains("takes a table"));
}

/// Records what vim.notify shows from now on, with its level, in `_G.shown`.
const RECORD_SHOWN: &str =
    "_G.shown = {} vim.notify = function(msg, level) table.insert(_G.shown, { msg = msg, level = level }) end";

/// The review options in force: enabled, layout, the accept key, the reject key.
const REVIEW_VALUES: &str =
    "local r = require('pi-ide.core.config').values.review return { r.enabled, r.layout, r.keys.accept, r.keys.reject }";

#[test]
fn the_review_option_sets_how_reviews_open() {
    let nvim = Nvim::start();
    nvim.lua(RECORD_SHOWN);
    nvim.lua("require('pi-ide').setup({ review = { enabled = false, layout = 'vsplit', keys = { accept = 'ga' } } })");
    assert_eq!(nvim.lua(REVIEW_VALUES), json!([false, "vsplit", "ga", "<leader>pr"]));
    assert_eq!(nvim.lua("return _G.shown"), json!([]));
}

#[test]
fn the_old_option_name_diff_still_works_with_one_warning_naming_review() {
    let nvim = Nvim::start();
    nvim.lua(RECORD_SHOWN);
    nvim.lua("require('pi-ide').setup({ diff = { review = false, layout = 'vsplit', keys = { accept = 'ga' } } })");
    assert_eq!(nvim.lua(REVIEW_VALUES), json!([false, "vsplit", "ga", "<leader>pr"]));
    // Told once, however often setup() runs with it.
    nvim.lua("require('pi-ide').setup({ diff = { layout = 'vsplit' } })");
    assert_eq!(nvim.lua(REVIEW_VALUES), json!([true, "vsplit", "<leader>pa", "<leader>pr"]));
    let warned = "pi-ide.nvim: the option `diff` is now `review`, its `review` now `enabled` (the old name works until the next release)";
    assert_eq!(nvim.lua("return _G.shown"), json!([{"msg": warned, "level": 3}]));
}

#[test]
fn given_both_diff_and_review_review_wins_and_the_warning_says_so() {
    let nvim = Nvim::start();
    nvim.lua(RECORD_SHOWN);
    nvim.lua("require('pi-ide').setup({ review = { layout = 'vsplit' }, diff = { review = false, layout = 'tab' } })");
    assert_eq!(nvim.lua(REVIEW_VALUES), json!([true, "vsplit", "<leader>pa", "<leader>pr"]));
    let warned = "pi-ide.nvim: the option `diff` is now `review`, its `review` now `enabled`; both are given: `review` is used, `diff` is ignored";
    assert_eq!(nvim.lua("return _G.shown"), json!([{"msg": warned, "level": 3}]));
}

#[test]
fn ide_name_option_reaches_the_lockfile() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.api.nvim_create_autocmd('VimEnter', {once = true, callback = function() end})".into()),
        after: Some("require('pi-ide').stop() require('pi-ide').setup({ide_name = function() return 'Neovim · api' end}) require('pi-ide').start()".into()),
        ..Default::default()
    });
    assert_eq!(nvim.lockfile().ide_name, "Neovim · api");
    // Inside tmux the default name says which pane.
    let nvim = Nvim::start_with(Options {
        env: vec![("TMUX_PANE".into(), "%7".into())],
        ..Default::default()
    });
    assert_eq!(nvim.lockfile().ide_name, "Neovim (tmux %7)");
}

#[test]
fn auto_start_false_does_not_start_and_start_works_later() {
    let nvim = Nvim::start_with(Options {
        before: Some("vim.api.nvim_create_autocmd('VimEnter', {once = true, callback = function() require('pi-ide').setup({auto_start = false}) end})".into()),
        ..Default::default()
    });
    // setup ran before the plugin's own VimEnter handler? Either way, check the outcome.
    nvim.wait_for("vim.v.vim_did_enter == 1", PATIENCE);
    let running = nvim.lua("return require('pi-ide').info().running");
    assert_eq!(running, json!(false), "auto_start = false still started");
    assert!(lock::read_all(&nvim.lock_dir).is_empty());
    nvim.command("PiIde start").unwrap();
    assert_eq!(nvim.lockfile().workspace_folders.len(), 1);
}

#[test]
fn workspace_folders_follow_the_current_directory() {
    let nvim = Nvim::start();
    let other = nvim.home.join("other project");
    std::fs::create_dir_all(&other).unwrap();
    nvim.command(&format!(
        "cd {}",
        other.display().to_string().replace(' ', "\\ ")
    ))
    .unwrap();
    let want = other.to_string_lossy().to_string();
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if nvim.lockfile().workspace_folders == vec![want.clone()] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "lockfile not rewritten: {:?}",
            nvim.lockfile().workspace_folders
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn lsp_workspace_folders_reach_the_lockfile_by_their_uri_not_their_display_name() {
    let nvim = Nvim::start();
    let folder = nvim.home.join("lsp project");
    std::fs::create_dir_all(&folder).unwrap();
    // An in-process language server: enough to attach with workspace folders.
    nvim.t("install.start_fake_lsp", json!([folder]));
    let want = folder.to_string_lossy().to_string();
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let folders = nvim.lockfile().workspace_folders;
        assert!(!folders.iter().any(|f| f.contains("A Display Name")), "{folders:?}");
        if folders.contains(&want) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{folders:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn suggest_from_normal_mode_says_where_suggestions_show_and_asks_nothing() {
    let nvim = Nvim::start();
    edit_file(&nvim, "n.txt", &["x"]);
    let mut p = nvim.peer();
    nvim.record_notify();
    nvim.command("PiIde suggest").unwrap();
    fence(&mut p);
    assert!(
        nvim.notes().iter().any(|n| n.contains("suggestions are shown in Insert mode")),
        "{:?}",
        nvim.notes()
    );
    assert!(
        !p.inbox.iter().any(|f| f["method"] == "getSuggestions"),
        "{:?}",
        p.inbox
    );
}

#[test]
fn remapping_the_keys_gives_the_users_own_mapping_back() {
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        before: Some(
            "vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() vim.keymap.set('i', '<Tab>', '<C-r>=\"[tab]\"<CR>') end })".into(),
        ),
        ..Default::default()
    });
    // pi-ide mapped <Tab> over the user's mapping (which it falls back to).
    nvim.wait_for("(vim.fn.maparg('<Tab>', 'i', false, true).desc or ''):find('^pi%-ide') ~= nil", PATIENCE);
    // Accept moves to another key: <Tab> is the user's again.
    nvim.lua("require('pi-ide').setup({ suggestion = { keys = { accept = '<C-l>' } } })");
    assert_eq!(
        nvim.lua("return vim.fn.maparg('<Tab>', 'i')"),
        json!("<C-R>=\"[tab]\"<CR>")
    );
    edit_file(&nvim, "k.txt", &[""]);
    type_keys(&nvim, "ia<Tab>b<Esc>");
    assert_eq!(nvim.lua("return vim.api.nvim_get_current_line()"), json!("a[tab]b"));
    // And back: pi-ide's again, still falling back to the user's.
    nvim.lua("require('pi-ide').setup({})");
    type_keys(&nvim, "oc<Tab>d<Esc>");
    assert_eq!(nvim.lua("return vim.api.nvim_get_current_line()"), json!("c[tab]d"));
}

/// A copy of the plugin's Lua files, without (or with a given) native library.
fn plugin_copy(tag: &str, with_lib: bool, version_override: Option<&str>) -> std::path::PathBuf {
    let dir = pi_ide_testkit::nvim::temp_dir(tag);
    let root = plugin_root();
    copy_tree(&root.join("lua"), &dir.join("lua"));
    copy_tree(&root.join("plugin"), &dir.join("plugin"));
    if with_lib {
        std::fs::create_dir_all(dir.join("target/release")).unwrap();
        std::fs::copy(
            root.join("target/release/libpi_ide.so"),
            dir.join("target/release/libpi_ide.so"),
        )
        .unwrap();
    }
    if let Some(v) = version_override {
        let p = dir.join("lua/pi-ide/core/native.lua");
        let text = std::fs::read_to_string(&p).unwrap();
        let re_line = text
            .lines()
            .find(|l| l.starts_with("M.VERSION ="))
            .unwrap()
            .to_owned();
        std::fs::write(&p, text.replace(&re_line, &format!("M.VERSION = \"{v}\""))).unwrap();
    }
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_missing_native_library_gives_one_message_naming_the_build_command() {
    let dir = plugin_copy("nolib", false, None);
    let nvim = nvim_with_plugin_at(&dir);
    nvim.wait_t("any_note", json!([]), PATIENCE);
    let notes = nvim.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("not built"), "{notes:?}");
    assert!(notes[0].contains("cargo build --release"), "{notes:?}");
    assert!(notes[0].contains(":Lazy build pi-ide.nvim"), "{notes:?}");
    assert!(!notes[0].contains("stack traceback"), "{notes:?}");
    assert_eq!(
        nvim.lua("return require('pi-ide').info().running"),
        json!(false)
    );
    // Commands still answer sensibly.
    nvim.command("PiIde status").unwrap();
    drop(nvim);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_library_built_from_other_sources_than_the_checkout_is_refused() {
    // A checkout with its Rust sources and the library built from them: loads.
    let dir = plugin_copy("stamp", true, None);
    let root = plugin_root();
    copy_tree(&root.join("src"), &dir.join("src"));
    for f in ["build.rs", "Cargo.toml", "Cargo.lock"] {
        std::fs::copy(root.join(f), dir.join(f)).unwrap();
    }
    // One cache for every start, as a user's: the stamp is kept there by the sources' key.
    let cache = dir.join("cache");
    let start = || {
        Nvim::start_with(Options {
            before: Some(format!(
                "vim.opt.rtp:remove('{}') vim.opt.rtp:prepend('{}') require('pi_ide_test').record_notify()",
                root.display(),
                dir.display()
            )),
            env: vec![("XDG_CACHE_HOME".into(), cache.display().to_string())],
            ..Default::default()
        })
    };
    for _ in 0..2 {
        let nvim = start();
        nvim.wait_for("require('pi-ide').info().running", PATIENCE);
        drop(nvim);
    }
    // Parsed, not searched: Neovim 0.10's vim.json.encode writes "/" as "\/".
    let kept: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(cache.join("nvim/pi-ide-stamps.json")).unwrap()).unwrap();
    assert!(kept[dir.display().to_string()]["stamp"].is_string(), "{kept}");
    // A `git pull` changes the Rust code (no version or ABI bump), the file's size the same,
    // and nothing is rebuilt: the kept stamp is not taken for it.
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let changed = format!("{}X\n", &text[..text.len() - 2]);
    assert_eq!(changed.len(), text.len());
    std::fs::write(&lib, changed).unwrap();
    let nvim = start();
    nvim.wait_t("any_note", json!([]), PATIENCE);
    let notes = nvim.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("built from other sources than this checkout"), "{notes:?}");
    assert!(notes[0].contains(":PiIde build"), "{notes:?}");
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(false));
    drop(nvim);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stale_native_library_is_refused_with_the_command_to_run() {
    let dir = plugin_copy("stale", true, Some("9.9.9"));
    let nvim = nvim_with_plugin_at(&dir);
    nvim.wait_t("any_note", json!([]), PATIENCE);
    let notes = nvim.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("stale"), "{notes:?}");
    assert!(notes[0].contains("needs 9.9.9"), "{notes:?}");
    assert!(notes[0].contains("cargo build --release"), "{notes:?}");
    assert!(lock::read_all(&nvim.lock_dir).is_empty());
    drop(nvim);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lua_and_rust_agree_on_abi_and_version() {
    let root = plugin_root();
    let lua = std::fs::read_to_string(root.join("lua/pi-ide/core/native.lua")).unwrap();
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let cargo_version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .unwrap()
        .trim_matches('"');
    let abi = lib
        .lines()
        .find_map(|l| l.strip_prefix("pub const ABI: u32 = "))
        .unwrap()
        .trim_end_matches(';');
    assert!(
        lua.contains(&format!("M.VERSION = \"{cargo_version}\"")),
        "native.lua VERSION differs from Cargo.toml"
    );
    assert!(
        lua.contains(&format!("M.ABI = {abi}\n")),
        "native.lua ABI differs from src/lib.rs"
    );
    // And the built library says the same.
    let nvim = Nvim::start();
    assert_eq!(
        nvim.lua("return require('pi-ide.core.native').get().version"),
        json!(cargo_version)
    );
}

#[test]
fn every_tool_served_has_its_handler_in_luas_registry() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let listed = p.request("tools/list", json!({})).unwrap()["result"]["tools"].clone();
    let names: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 12, "{names:?}");
    // Each tool entry (src/protocol/tools/, src/agents/) that Lua answers names its handler;
    // Lua's registry of handlers (features/tools/init.lua) has it.
    let missing = nvim.lua(
        "local out = {} for name, e in pairs(require('pi-ide.core.native').get().tools()) do \
           if e.handler and not require('pi-ide.features.tools').handler(e.handler) then \
             table.insert(out, name .. ': ' .. e.handler) end end \
         return out",
    );
    assert_eq!(missing, json!([]));
    // By agent: Pi's twelve, the Copilot CLI's five (tests/agents/copilot.rs lists them), the two
    // review tools of the ACP chat's in-process client (src/agents/chat.rs) and Gemini CLI's two
    // (src/agents/gemini.rs, companion/), whose openDiff shares its name with Pi's.
    let per_agent = nvim.lua(
        "local n = {} for key in pairs(require('pi-ide.core.native').get().tools()) do \
           local agent = key:match('^(%w+)%.') n[agent] = (n[agent] or 0) + 1 end return n",
    );
    assert_eq!(per_agent["pi"], json!(names.len()), "{per_agent}");
    assert_eq!((per_agent["copilot"].clone(), per_agent["chat"].clone(), per_agent["gemini"].clone()), (json!(5), json!(2), json!(2)));
}

#[test]
fn the_help_file_has_valid_unique_tags() {
    let nvim = Nvim::start();
    let dir = pi_ide_testkit::nvim::temp_dir("doc");
    std::fs::copy(plugin_root().join("doc/pi-ide.txt"), dir.join("pi-ide.txt")).unwrap();
    // :helptags raises E154 for a duplicate tag.
    nvim.command(&format!("helptags {}", dir.display()))
        .expect("helptags failed");
    let tags = std::fs::read_to_string(dir.join("tags")).unwrap();
    for tag in [
        ":PiIde",
        ":PiIde-status",
        ":PiIde-start",
        ":PiIde-stop",
        "pi-ide.setup()",
        "pi-ide-option-auto_start",
        "pi-ide-option-diagnostics_timeout_ms",
        "User_PiIdeStarted",
        "pi-ide-tool-getDiagnostics",
    ] {
        assert!(
            tags.lines().any(|l| l.starts_with(&format!("{tag}\t"))),
            "missing tag {tag}"
        );
    }
    // Every option in config.lua's defaults is documented.
    let opts = nvim.lua("return vim.tbl_keys(require('pi-ide.core.config').defaults)");
    for o in opts.as_array().unwrap() {
        let o = o.as_str().unwrap();
        assert!(
            tags.contains(&format!("pi-ide-option-{o}\t")),
            "option {o} has no help tag"
        );
    }
    // ide_name defaults to nil and is not a key of the table; it is documented all the same.
    assert!(tags.contains("pi-ide-option-ide_name\t"));
    // Every tool the server lists has its own entry.
    let mut p = nvim.peer();
    let list = p.request("tools/list", json!({})).unwrap();
    for t in list["result"]["tools"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        assert!(
            tags.contains(&format!("pi-ide-tool-{name}\t")),
            "tool {name} has no help tag"
        );
    }
    // Every Lua function, <Plug> map, User event, highlight group and the health check.
    for f in nvim.lua("local t = {} for k, v in pairs(require('pi-ide')) do if type(v) == 'function' then table.insert(t, k) end end return t").as_array().unwrap() {
        let f = f.as_str().unwrap();
        assert!(tags.contains(&format!("pi-ide.{f}()\t")), "Lua function {f} has no help tag");
    }
    let plugs = nvim.lua("local t = {} for _, mode in ipairs({'n', 'x', 'i'}) do for _, m in ipairs(vim.api.nvim_get_keymap(mode)) do if m.lhs:find('^<Plug>%(PiIde') and not m.lhs:find('Fallback') then t[m.lhs] = true end end end return vim.tbl_keys(t)");
    assert!(plugs.as_array().unwrap().len() >= 8, "{plugs}");
    for p in plugs.as_array().unwrap() {
        let p = p.as_str().unwrap();
        assert!(tags.contains(&format!("{p}\t")), "{p} has no help tag");
    }
    for e in [
        "PiIdeStarted",
        "PiIdeStopped",
        "PiIdeClientConnected",
        "PiIdeClientDisconnected",
        "PiIdeReviewOpened",
        "PiIdeReviewClosed",
        "PiIdeDiffOpened",
        "PiIdeDiffClosed",
        "PiIdeSuggestionRequested",
        "PiIdeSuggestionShown",
        "PiIdeSuggestionAccepted",
    ] {
        assert!(
            tags.contains(&format!("User_{e}\t")),
            "event {e} has no help tag"
        );
    }
    for t in [
        "hl-PiIdeSuggestion",
        "hl-PiIdeSuggestionCounter",
        "pi-ide-health",
        "pi-ide-keys",
        "pi-ide-statusline",
        "pi-ide-lazy",
    ] {
        assert!(tags.contains(&format!("{t}\t")), "missing tag {t}");
    }
    // And every subcommand.
    for sub in nvim
        .lua("return require('pi-ide.core.commands').names()")
        .as_array()
        .unwrap()
    {
        let sub = sub.as_str().unwrap();
        assert!(
            tags.contains(&format!(":PiIde-{sub}\t")),
            "subcommand {sub} has no help tag"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every option of the config spec (`require("pi-ide.core.config").spec`, nested ones
/// included) by its dotted path, groups too.
fn option_paths(nvim: &Nvim) -> Vec<String> {
    let paths = nvim.t("install.option_paths", json!([]));
    paths.as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_owned()).collect()
}

/// The LuaCATS classes of config.lua: class -> field -> the field's type (and description).
fn annotations() -> std::collections::HashMap<String, std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(plugin_root().join("lua/pi-ide/core/config.lua")).unwrap();
    let mut classes: std::collections::HashMap<String, std::collections::HashMap<String, String>> = Default::default();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(class) = line.strip_prefix("---@class ") {
            current = class.trim().to_owned();
        } else if let Some(field) = line.strip_prefix("---@field ") {
            let (name, ty) = field.split_once(' ').unwrap_or((field, ""));
            let name = name.trim_end_matches('?').to_owned();
            classes.entry(current.clone()).or_default().insert(name, ty.to_owned());
        }
    }
    classes
}

/// Whether `word` stands alone in `text` (not part of a longer name).
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[i + word.len()..].chars().next().is_none_or(|c| !ident(c));
        before && after
    })
}

/// The help's text about top-level option `top`: its section, and the sections it refers to.
fn help_about(help: &str, top: &str) -> String {
    let section = |tag: &str| -> String {
        let Some(start) = help.find(&format!("*{tag}*")) else { return String::new() };
        let rest = &help[start + tag.len() + 2..];
        let end = ["*pi-ide-option-", "\n=====", "*<Plug>"].iter().filter_map(|m| rest.find(m)).min().unwrap_or(rest.len());
        rest[..end].to_owned()
    };
    let own = section(&format!("pi-ide-option-{top}"));
    let referred: Vec<String> = own
        .split('|')
        .filter(|w| w.starts_with("pi-ide-") && !w.contains(' '))
        .map(|w| section(w))
        .collect();
    own + &referred.concat()
}

#[test]
fn every_option_is_in_the_annotations_and_the_help() {
    let nvim = Nvim::start();
    let paths = option_paths(&nvim);
    assert!(paths.len() > 40 && paths.contains(&"suggestion.context.scope_max_bytes".to_owned()), "{paths:?}");
    let classes = annotations();
    let help = std::fs::read_to_string(plugin_root().join("doc/pi-ide.txt")).unwrap();
    let mut missing = Vec::new();
    for path in &paths {
        let parts: Vec<&str> = path.split('.').collect();
        // Annotated: each part a field of the class its parent's type names, or a member of
        // the parent's inline table type.
        let (mut class, mut inline) = ("PiIde.Config".to_owned(), None::<String>);
        for part in &parts {
            let ty = match &inline {
                Some(t) if has_word(t, part) => Some(t.clone()),
                Some(_) => None,
                None => classes.get(&class).and_then(|c| c.get(*part)).cloned(),
            };
            let Some(ty) = ty else {
                missing.push(format!("{path}: no annotation for '{part}'"));
                break;
            };
            match ty.split_whitespace().next().filter(|t| t.starts_with("PiIde.")) {
                Some(named) => (class, inline) = (named.to_owned(), None),
                None => inline = Some(ty),
            }
        }
        // In the help: the top option's section (or one it refers to) names every part.
        let about = help_about(&help, parts[0]);
        if about.is_empty() {
            missing.push(format!("{path}: no *pi-ide-option-{}* in the help", parts[0]));
        } else if let Some(part) = parts[1..].iter().find(|p| !has_word(&about, p)) {
            missing.push(format!("{path}: the help of '{}' does not name '{part}'", parts[0]));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Runs scripts/gen-docs.lua in check mode on the plugin at `root`: its success, and what it said.
fn gen_docs_check(root: &Path) -> (bool, String) {
    let out = std::process::Command::new(pi_ide_testkit::nvim::nvim_binary())
        .arg("--clean")
        .arg("-l")
        .arg(plugin_root().join("scripts/gen-docs.lua"))
        .args(["--check", "--root"])
        .arg(root)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_helps_options_and_the_luacats_classes_are_what_the_schema_generates() {
    let (ok, said) = gen_docs_check(&plugin_root());
    assert!(ok, "scripts/gen-docs --check failed:\n{said}");
    // A description changed in the schema and not generated again: both outputs name it.
    let dir = plugin_copy("gen-docs", false, None);
    copy_tree(&plugin_root().join("doc"), &dir.join("doc"));
    let schema = dir.join("lua/pi-ide/core/schema.lua");
    let text = std::fs::read_to_string(&schema).unwrap();
    let drifted = text.replacen("-- Lines before the cursor.", "-- Lines before the cursor, at most.", 1);
    assert_ne!(text, drifted, "the description to change is not in the schema");
    std::fs::write(&schema, drifted).unwrap();
    let (ok, said) = gen_docs_check(&dir);
    assert!(!ok, "a drifted description passed the check");
    for file in ["lua/pi-ide/core/config.lua", "doc/pi-ide.txt"] {
        assert!(said.contains(&format!("{file} is out of date")), "{file} not named:\n{said}");
    }
    assert_eq!(said.matches("option suggestion.context.before_lines: its text differs").count(), 2, "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_help_links_only_to_tags_that_exist() {
    let nvim = Nvim::start();
    let help = std::fs::read_to_string(plugin_root().join("doc/pi-ide.txt")).unwrap();
    let runtime = nvim.lua("return vim.env.VIMRUNTIME");
    let theirs = std::fs::read_to_string(Path::new(runtime.as_str().unwrap()).join("doc/tags")).unwrap();
    let mut tags: std::collections::HashSet<&str> = theirs.lines().filter_map(|l| l.split('\t').next()).collect();
    // Ours: *tag* where a tag may stand (after a space or at the start of a line).
    for (i, _) in help.match_indices('*') {
        let rest = &help[i + 1..];
        let before = help[..i].chars().next_back();
        if let Some(end) = rest.find(['*', ' ', '\t', '\n']).filter(|&e| rest.as_bytes()[e] == b'*' && e > 0) {
            if before.is_none_or(|c| c.is_whitespace()) {
                tags.insert(&rest[..end]);
            }
        }
    }
    // Links as Vim's help syntax sees them: |x| with no space, quote, star or bar inside.
    let mut broken = Vec::new();
    for (n, line) in help.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find('|') {
            let after = &rest[i + 1..];
            let Some(j) = after.find('|') else { break };
            let w = &after[..j];
            if w.is_empty() || w.contains([' ', '"', '*', '\t']) {
                rest = after;
                continue;
            }
            if !tags.contains(w) {
                broken.push(format!("line {}: |{w}|", n + 1));
            }
            rest = &after[j + 1..];
        }
    }
    assert!(broken.is_empty(), "links to no tag in doc/pi-ide.txt:\n{}", broken.join("\n"));
}
