//! Ghost-text completions end to end: a real Neovim asks a real peer (playing the Pi
//! extension) for suggestions while a user types, and shows, cycles, accepts and drops them.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// The ghost text on screen: the inline part, then virtual lines, joined with newlines.
fn ghost(nvim: &Nvim) -> Option<String> {
    nvim.t("ghost", json!([])).as_str().map(str::to_owned)
}

fn counter(nvim: &Nvim) -> Option<String> {
    nvim.lua(
        "local ns = require('pi-ide.features.suggest.ghost').ns for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do if m[4].virt_text_pos == 'eol' then return m[4].virt_text[1][1] end end",
    )
    .as_str()
    .map(str::to_owned)
}

fn line(nvim: &Nvim) -> String {
    nvim.lua("return vim.api.nvim_get_current_line()")
        .as_str()
        .unwrap()
        .to_owned()
}

/// A Neovim with a file open and a connected peer, everything quiet.
fn setup(opts: Options, name: &str, lines: &[&str]) -> (Nvim, Peer) {
    let nvim = Nvim::start_with(opts);
    edit_file(&nvim, name, lines);
    let mut p = nvim.peer();
    settle(&nvim, &mut p);
    (nvim, p)
}

fn suggestions_request(p: &mut Peer) -> Value {
    p.wait_request("getSuggestions", PATIENCE)
        .expect("a getSuggestions request")
}

fn answer(p: &mut Peer, req: &Value, items: &[&str]) {
    p.respond(&req["id"], json!({ "suggestions": items }))
        .unwrap();
}

fn wait_ghost(nvim: &Nvim, want: &str) {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if ghost(nvim).as_deref() == Some(want) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "ghost text is {:?}, wanted {want:?}",
            ghost(nvim)
        );
        std::thread::sleep(MS(10));
    }
}

fn no_request_within(p: &mut Peer, ms: u64) {
    if let Ok(r) = p.wait_request("getSuggestions", MS(ms)) {
        panic!("unexpected request: {r}");
    }
}

#[test]
fn typing_asks_once_after_the_debounce_with_the_context_and_shows_the_answer() {
    let (nvim, mut p) = setup(
        Options::default(),
        "main.rs",
        &["// top", "fn helper() {}", "", "fn after() {}"],
    );
    type_keys(&nvim, "3Ggi");
    type_keys(&nvim, "fn ma");
    let r = suggestions_request(&mut p);
    no_request_within(&mut p, 300); // five keystrokes, one request
    let params = &r["params"];
    assert!(
        params["cursorBefore"]
            .as_str()
            .unwrap()
            .ends_with("fn helper() {}\nfn ma"),
        "{params}"
    );
    assert!(
        params["cursorAfter"]
            .as_str()
            .unwrap()
            .starts_with("\nfn after() {}"),
        "{params}"
    );
    assert_eq!(
        params["filePath"],
        nvim.cwd.join("main.rs").to_string_lossy().as_ref()
    );
    assert_eq!(params["language"], "rust");
    assert_eq!(params["suggestionCount"], 3);
    answer(&mut p, &r, &["in() {\n    println!(\"hi\");\n}"]);
    wait_ghost(&nvim, "in() {\n    println!(\"hi\");\n}");
    assert_eq!(line(&nvim), "fn ma", "ghost text is not buffer text");
}

#[test]
fn manual_trigger_and_toggle() {
    let (nvim, mut p) = setup(
        Options {
            after: Some(
                "require('pi-ide').setup({ suggestion = { auto_trigger = false } })".into(),
            ),
            ..Default::default()
        },
        "m.lua",
        &[""],
    );
    type_keys(&nvim, "ilocal x");
    no_request_within(&mut p, 300);
    type_keys(&nvim, "<M-\\>");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &[" = 1"]);
    wait_ghost(&nvim, " = 1");
    // :PiIde toggle turns typing-triggers on.
    type_keys(&nvim, "<Esc>");
    nvim.command("PiIde toggle").unwrap();
    type_keys(&nvim, "A y");
    suggestions_request(&mut p);
    // ...and off for this buffer only.
    type_keys(&nvim, "<Esc>");
    nvim.command("PiIde toggle buffer").unwrap();
    type_keys(&nvim, "A z");
    no_request_within(&mut p, 300);
}

#[test]
fn a_newer_request_cancels_the_older_whose_late_answer_is_dropped() {
    let (nvim, mut p) = setup(Options::default(), "c.py", &[""]);
    type_keys(&nvim, "ipri");
    let first = suggestions_request(&mut p);
    type_keys(&nvim, "<BS><BS><BS>ret");
    let cancel = p
        .wait_notification("request_cancelled", PATIENCE)
        .unwrap();
    assert_eq!(cancel["params"]["id"], first["id"]);
    let second = suggestions_request(&mut p);
    answer(&mut p, &first, &["nt('stale')"]);
    fence(&mut p);
    assert_eq!(ghost(&nvim), None, "a stale answer was shown");
    answer(&mut p, &second, &["urn 1"]);
    wait_ghost(&nvim, "urn 1");
}

#[test]
fn an_event_that_changes_nothing_keeps_the_request_in_flight() {
    // A completion menu or an auto-pair plugin can fire TextChangedI/CursorMovedI with the
    // text and cursor as they were: the answer to the request already sent is the one wanted.
    // (Asking again dropped it, and a loaded machine showed nothing: seen with LazyVim.)
    let (nvim, mut p) = setup(Options::default(), "k.py", &[""]);
    type_keys(&nvim, "ipri");
    let first = suggestions_request(&mut p);
    nvim.lua(
        "vim.api.nvim_exec_autocmds('TextChangedI', {}) vim.api.nvim_exec_autocmds('CursorMovedI', {}) \
         require('pi-ide.features.suggest').trigger(false)",
    );
    let s = nvim.lua("return require('pi-ide.features.suggest').stats()");
    assert_eq!((s["requests"].clone(), s["cancelled"].clone()), (json!(1), json!(0)), "{s}");
    answer(&mut p, &first, &["nt('kept')"]);
    wait_ghost(&nvim, "nt('kept')");
    // Asked for by hand, it is asked again.
    nvim.lua("require('pi-ide.features.suggest').trigger(true)");
    let again = suggestions_request(&mut p);
    assert_ne!(again["id"], first["id"]);
}

#[test]
fn leaving_insert_mode_or_the_window_cancels() {
    let (nvim, mut p) = setup(Options::default(), "l.py", &["", ""]);
    for leave in ["<Esc>", "<C-c>", "<C-o>:wincmd v<CR>"] {
        type_keys(&nvim, "ggA");
        type_keys(&nvim, "x");
        let r = suggestions_request(&mut p);
        type_keys(&nvim, leave);
        let cancel = p
            .wait_notification("request_cancelled", PATIENCE)
            .unwrap_or_else(|e| panic!("{leave}: {e}"));
        assert_eq!(cancel["params"]["id"], r["id"], "{leave}");
        answer(&mut p, &r, &["late"]);
        fence(&mut p);
        assert_eq!(ghost(&nvim), None, "{leave}");
        type_keys(&nvim, "<Esc>");
        nvim.command("only").unwrap();
    }
}

#[test]
fn typeahead_consumes_the_ghost_text_without_new_requests() {
    let (nvim, mut p) = setup(Options::default(), "t.txt", &[""]);
    type_keys(&nvim, "ih");
    let r = suggestions_request(&mut p);
    let text = "ello wonderful world, a long twenty+ suggestion";
    answer(&mut p, &r, &[text]);
    wait_ghost(&nvim, text);
    let typed = "ello wonderful world";
    for (i, ch) in typed.chars().enumerate() {
        type_keys(&nvim, &ch.to_string());
        // Visible after every keystroke, always the rest of the suggestion.
        assert_eq!(
            ghost(&nvim).as_deref(),
            Some(&text[i + 1..]),
            "after {} keystrokes",
            i + 1
        );
    }
    no_request_within(&mut p, 400);
    // A keystroke that does not match drops it and asks again.
    type_keys(&nvim, "X");
    assert_eq!(ghost(&nvim), None);
    suggestions_request(&mut p);
}

#[test]
fn tab_accepts_everything_as_one_undo_step() {
    let (nvim, mut p) = setup(Options::default(), "a.txt", &["fn main() {", "", "}"]);
    type_keys(&nvim, "2GS    let x");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &[" = compute();\n    println!(\"{x}\");"]);
    wait_ghost(&nvim, " = compute();\n    println!(\"{x}\");");
    type_keys(&nvim, "<Tab>");
    assert_eq!(
        nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!([
            "fn main() {",
            "    let x = compute();",
            "    println!(\"{x}\");",
            "}"
        ])
    );
    assert_eq!(
        nvim.lua("return vim.api.nvim_win_get_cursor(0)"),
        json!([3, 20]),
        "cursor after the inserted text"
    );
    assert_eq!(ghost(&nvim), None);
    type_keys(&nvim, "<Esc>u");
    assert_eq!(
        nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["fn main() {", "    let x", "}"]),
        "one undo removes exactly the accepted text"
    );
}

#[test]
fn accept_word_and_line_are_multibyte_and_tab_safe_and_keep_the_rest() {
    let (nvim, mut p) = setup(
        Options {
            before: Some("vim.o.expandtab = false".into()),
            ..Default::default()
        },
        "w.txt",
        &[""],
    );
    type_keys(&nvim, "i");
    type_keys(&nvim, "s");
    let r = suggestions_request(&mut p);
    let text = "éance über\tdes ÄÖÜ\nnext line\nthird";
    answer(&mut p, &r, &[text]);
    // The tab is drawn to its tabstop: "s" + "éance über" end at column 11, so 5 spaces.
    wait_ghost(&nvim, "éance über     des ÄÖÜ\nnext line\nthird");
    type_keys(&nvim, "<M-Right>");
    assert_eq!(line(&nvim), "séance");
    wait_ghost(&nvim, " über     des ÄÖÜ\nnext line\nthird");
    type_keys(&nvim, "<M-Right>");
    assert_eq!(line(&nvim), "séance über");
    type_keys(&nvim, "<M-C-Right>");
    assert_eq!(line(&nvim), "séance über\tdes ÄÖÜ");
    wait_ghost(&nvim, "\nnext line\nthird");
    type_keys(&nvim, "<M-C-Right>");
    assert_eq!(
        nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["séance über\tdes ÄÖÜ", "next line"])
    );
    // Each accept was its own undo step.
    type_keys(&nvim, "<Esc>u");
    assert_eq!(
        nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        json!(["séance über\tdes ÄÖÜ"])
    );
    type_keys(&nvim, "u");
    assert_eq!(line(&nvim), "séance über");
}

#[test]
fn text_after_the_cursor_is_never_duplicated() {
    let (nvim, mut p) = setup(Options::default(), "o.py", &["print()"]);
    type_keys(&nvim, "0f)i");
    type_keys(&nvim, "'");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["hello')"]);
    wait_ghost(&nvim, "hello'");
    type_keys(&nvim, "<Tab>");
    assert_eq!(line(&nvim), "print('hello')");
}

#[test]
fn tab_without_a_suggestion_does_what_it_did_before() {
    // No mapping of its own: a literal Tab ('expandtab' respected).
    let (nvim, _p) = setup(
        Options { before: Some("vim.o.expandtab = true vim.o.shiftwidth = 4 vim.o.softtabstop = 4 vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() pcall(vim.keymap.del, 'i', '<Tab>') end })".into()), ..Default::default() },
        "p.txt",
        &[""],
    );
    nvim.lua("require('pi-ide').setup({ suggestion = { auto_trigger = false } })");
    type_keys(&nvim, "ia<Tab>b");
    assert_eq!(line(&nvim), "a   b");
    // With the user's own mapping made before the plugin's: that mapping.
    let (nvim, _p) = setup(
        Options { before: Some("vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() vim.keymap.set('i', '<Tab>', '<C-r>=\"[tab]\"<CR>') end })".into()), ..Default::default() },
        "q.txt",
        &[""],
    );
    nvim.lua("require('pi-ide').setup({ suggestion = { auto_trigger = false } })");
    type_keys(&nvim, "ia<Tab>b");
    assert_eq!(line(&nvim), "a[tab]b");
}

#[test]
fn the_ghost_hides_while_the_completion_menu_is_open() {
    let (nvim, mut p) = setup(
        Options::default(),
        "pum.txt",
        &["alphabet alphanumeric", ""],
    );
    type_keys(&nvim, "Gial");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["pha"]);
    wait_ghost(&nvim, "pha");
    type_keys(&nvim, "<C-x><C-n>");
    nvim.wait_for("vim.fn.pumvisible() == 1", PATIENCE);
    let deadline = std::time::Instant::now() + PATIENCE;
    while ghost(&nvim).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "ghost text shown over the menu"
        );
        std::thread::sleep(MS(10));
    }
    // <C-e> closes the menu and restores the original text: the suggestion comes back.
    type_keys(&nvim, "<C-e>");
    wait_ghost(&nvim, "pha");
}

#[test]
fn alternatives_cycle_with_a_counter() {
    let (nvim, mut p) = setup(Options::default(), "cy.txt", &[""]);
    type_keys(&nvim, "ix");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["1", "2", "3"]);
    wait_ghost(&nvim, "1");
    assert_eq!(counter(&nvim).as_deref(), Some(" [1/3]"));
    type_keys(&nvim, "<M-]>");
    assert_eq!(
        (ghost(&nvim).as_deref(), counter(&nvim).as_deref()),
        (Some("2"), Some(" [2/3]"))
    );
    type_keys(&nvim, "<M-[><M-[>");
    assert_eq!(
        (ghost(&nvim).as_deref(), counter(&nvim).as_deref()),
        (Some("3"), Some(" [3/3]"))
    );
    type_keys(&nvim, "<C-]>");
    assert_eq!((ghost(&nvim), counter(&nvim)), (None, None));
}

#[test]
fn the_model_picker_marks_the_current_model_and_says_when_the_cli_wins() {
    let (nvim, mut p) = setup(Options::default(), "mo.txt", &[""]);
    nvim.record_notify();
    nvim.lua("_G.__items = nil vim.ui.select = function(items, opts, cb) _G.__items = vim.tbl_map(opts.format_item, items) _G.__prompt = opts.prompt cb(items[2]) end");
    nvim.command("PiIde model").unwrap();
    let r = p.wait_request("listSuggestionModels", PATIENCE).unwrap();
    p.respond(&r["id"], json!({"cliOverride": "openai/gpt-x", "currentModel": "anthropic/small", "models": [
        {"provider": "anthropic", "id": "small", "name": "Small", "model": "anthropic/small"},
        {"provider": "deepseek", "id": "v4-flash", "name": "Flash", "model": "deepseek/v4-flash"}]})).unwrap();
    nvim.wait_for("_G.__items ~= nil", PATIENCE);
    assert_eq!(
        nvim.lua("return _G.__items"),
        json!([
            "anthropic/small · Small  (current)",
            "deepseek/v4-flash · Flash",
            "the agent's default"
        ])
    );
    assert!(nvim
        .lua("return _G.__prompt")
        .as_str()
        .unwrap()
        .contains("openai/gpt-x"));
    nvim.wait_t("any_note", json!([]), PATIENCE);
    let notes = nvim.notes().join("\n");
    assert!(
        notes.contains("deepseek/v4-flash") && notes.contains("wins"),
        "{notes}"
    );
    // The choice is sent from now on.
    type_keys(&nvim, "ia");
    assert_eq!(
        suggestions_request(&mut p)["params"]["model"],
        "deepseek/v4-flash"
    );
}

#[test]
fn errors_show_once_for_manual_triggers_and_never_for_typing() {
    let (nvim, mut p) = setup(Options::default(), "e.txt", &[""]);
    nvim.record_notify();
    type_keys(&nvim, "ia");
    let r = suggestions_request(&mut p);
    p.respond_error(&r["id"], -32603, "model not found: x/y")
        .unwrap();
    fence(&mut p);
    assert!(
        !nvim.notes().iter().any(|n| n.contains("model not found")),
        "{:?}",
        nvim.notes()
    );
    type_keys(&nvim, "<M-\\>");
    let r = suggestions_request(&mut p);
    p.respond_error(&r["id"], -32603, "model not found: x/y")
        .unwrap();
    wait_until("one note", PATIENCE, || nvim.t("count_notes", json!(["model not found"])) == json!(1));
}

#[test]
fn without_an_agent_a_manual_trigger_says_so() {
    let nvim = Nvim::start();
    edit_file(&nvim, "n.txt", &[""]);
    nvim.record_notify();
    type_keys(&nvim, "ia<M-\\>");
    nvim.wait_t("any_note", json!([]), PATIENCE);
    assert!(
        nvim.notes().join("").contains("no agent is connected"),
        "{:?}",
        nvim.notes()
    );
}

#[test]
fn an_answer_for_a_line_the_cursor_left_is_dropped() {
    let (nvim, mut p) = setup(Options::default(), "s.txt", &["", ""]);
    type_keys(&nvim, "ix");
    let r = suggestions_request(&mut p);
    // Move without leaving Insert mode.
    type_keys(&nvim, "<Down>");
    answer(&mut p, &r, &["stale"]);
    fence(&mut p);
    assert_eq!(ghost(&nvim), None);
}

#[test]
fn stats_and_events() {
    let (nvim, mut p) = setup(Options::default(), "st.txt", &[""]);
    nvim.lua("_G.__ev = {} for _, e in ipairs({'PiIdeSuggestionRequested', 'PiIdeSuggestionShown', 'PiIdeSuggestionAccepted'}) do vim.api.nvim_create_autocmd('User', { pattern = e, callback = function() table.insert(_G.__ev, e) end }) end");
    type_keys(&nvim, "ia");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["bc"]);
    wait_ghost(&nvim, "bc");
    // No new request after the accept (typing would ask again 75 ms later): the counts below
    // are exactly those of this one suggestion.
    nvim.lua("vim.b.pi_ide_suggest = false");
    type_keys(&nvim, "<Tab>");
    assert_eq!(
        nvim.lua("return _G.__ev"),
        json!([
            "PiIdeSuggestionRequested",
            "PiIdeSuggestionShown",
            "PiIdeSuggestionAccepted"
        ])
    );
    let s = nvim.lua("return require('pi-ide.features.suggest').stats()");
    assert_eq!(
        (
            s["requests"].clone(),
            s["shown"].clone(),
            s["accepted"].clone()
        ),
        (json!(1), json!(1), json!(1))
    );
    assert_eq!(s["total"]["n"], 1);
    assert!(s["debounce"]["p50"].as_f64().unwrap() >= 0.0);
    nvim.command("PiIde stats").unwrap();
}

#[test]
fn what_a_suggestion_repeats_after_the_cursor_is_cut_where_it_would_be_doubled() {
    // (suggestion, text after the cursor on its line, the next line, what is inserted)
    let nvim = Nvim::start();
    let cases = json!([
        ["'hello')", ")", null, "'hello'"],
        ["bar()", ")", null, "bar()"],
        ["\n    a = 1,\n  }", "}", null, "\n    a = 1,\n  "],
        ["\n  x\n  )", ")", null, "\n  x\n  "],
        ["a, b);", ");", null, "a, b"],
        ["hello\")", "\")", null, "hello"],
        ["hello\"", "\")", null, "hello"],
        ["a) b(", ")", null, "a) b("],
        ["a = 1,\n}", "", "}", "a = 1,"],
        ["a = 1,\n}\n", "  ", "}", "a = 1,"],
        ["a = 1,\n})", "", "})", "a = 1,"],
        ["a = 1,\n}", "", "  other", "a = 1,\n}"],
        ["x", "", null, "x"],
        ["a)\n  next()", ")", null, "a)\n  next("],
        ["1, 2 }", " }", null, "1, 2"],
        ["word", "x", null, "word"],
    ]);
    let got = nvim.lua_with(
        "local t = require('pi-ide.features.suggest.overlap').trim local out = {} \
         for i, c in ipairs(vim.json.decode((...))) do out[i] = t(c[1], c[2], c[3] ~= vim.NIL and c[3] or nil) end return out",
        vec![cases.to_string().into()],
    );
    for (c, g) in cases.as_array().unwrap().iter().zip(got.as_array().unwrap()) {
        assert_eq!(g, &c[3], "{c}");
    }
}

#[test]
fn the_accept_function_for_your_own_tab_logic() {
    let (nvim, mut p) = setup(Options::default(), "acc.txt", &[""]);
    // Nothing shown: false, and nothing changes.
    assert_eq!(nvim.lua("return require('pi-ide').accept()"), json!(false));
    // From an <expr> mapping (as blink.cmp's keymaps call it): true, inserted right after.
    nvim.lua("vim.keymap.set('i', '<F5>', function() _G.__accepted = require('pi-ide').accept() return '' end, { expr = true })");
    type_keys(&nvim, "ix");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["yz"]);
    wait_ghost(&nvim, "yz");
    type_keys(&nvim, "<F5>");
    nvim.wait_for("vim.api.nvim_get_current_line() == 'xyz'", PATIENCE);
    assert_eq!(nvim.lua("return _G.__accepted"), json!(true));
    // Called directly.
    type_keys(&nvim, " ");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["done"]);
    wait_ghost(&nvim, "done");
    assert_eq!(nvim.lua("return require('pi-ide').accept()"), json!(true));
    assert_eq!(line(&nvim), "xyz done");
}

#[test]
fn the_ghost_may_stay_over_the_completion_menu() {
    let (nvim, mut p) = setup(
        Options {
            after: Some("require('pi-ide').setup({ suggestion = { hide_during_completion = false } })".into()),
            ..Default::default()
        },
        "over.txt",
        &["alphabet alphanumeric", ""],
    );
    type_keys(&nvim, "Gial");
    let r = suggestions_request(&mut p);
    answer(&mut p, &r, &["pha"]);
    wait_ghost(&nvim, "pha");
    // A menu that leaves the text as it is: the ghost text stays, drawn over it.
    nvim.lua("vim.o.completeopt = 'menuone,noselect'");
    type_keys(&nvim, "<C-x><C-n>");
    nvim.wait_for("vim.fn.pumvisible() == 1", PATIENCE);
    fence(&mut p);
    assert_eq!(line(&nvim), "al");
    assert_eq!(ghost(&nvim).as_deref(), Some("pha"));
}
