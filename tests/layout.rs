//! The house as a newcomer walks it, checked on the sources themselves: an agent's name only in
//! its own modules, functions short enough to read at once, layers of the core and of the Lua
//! that never use each other in a circle, and no comment that points at a file that is not there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the root) whose name ends with `ext`, sorted.
fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, ext, out);
            } else if p.to_string_lossy().ends_with(ext) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), ext, &mut out);
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap().to_string_lossy().into_owned()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// What is not a test: a Rust file without its `#[cfg(test)] mod tests`.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests").map_or(text, |i| &text[..i])
}

const AGENTS_ELSEWHERE: [&str; 6] = ["claude", "cline", "copilot", "gemini", "opencode", "qwen"];

/// Whether `line` names `agent` (a word that begins so: "declined" does not name Cline).
fn names(line: &str, agent: &str) -> bool {
    line.match_indices(agent).any(|(i, _)| !line[..i].chars().next_back().is_some_and(char::is_alphabetic))
}

#[test]
fn an_agents_name_appears_only_in_its_modules_and_the_registries() {
    let mut found = Vec::new();
    let sources = files("src", ".rs").into_iter().chain(files("lua", ".lua")).chain(files("plugin", ".lua"));
    for f in sources {
        let path = rel(&f);
        if path.starts_with("src/agents/") || path.starts_with("lua/pi-ide/agents/") {
            continue;
        }
        for (n, line) in read(&f).lines().enumerate() {
            // The annotations of the options name them: their names are the user's words.
            if path == "lua/pi-ide/core/config.lua" && line.starts_with("---@field") {
                continue;
            }
            let lower = line.to_lowercase();
            if AGENTS_ELSEWHERE.iter().any(|a| names(&lower, a)) {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "an agent named outside its modules:\n{}", found.join("\n"));
}

/// Each function's length in lines: from its first line to the line that closes it at the same
/// indentation (the code is formatted: rustfmt's and stylua's layouts).
fn function_lengths(text: &str, lua: bool) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let starts = |l: &str| {
        let t = l.trim_start();
        if lua {
            t.contains("function") && t.contains('(') && !l.trim_end().ends_with("end") && !l.trim_end().ends_with("end,") && !l.trim_end().ends_with("end)")
                && (t.starts_with("function") || t.starts_with("local function") || t.contains("= function") || t.contains("(function"))
        } else {
            let t = t.trim_start_matches("pub ").trim_start_matches("pub(crate) ").trim_start_matches("pub(super) ");
            let t = t.trim_start_matches("async ").trim_start_matches("unsafe ");
            t.starts_with("fn ") && !l.trim_end().ends_with(';')
        }
    };
    let closes = |l: &str| if lua { l.trim_start().starts_with("end") } else { l.trim_start().starts_with('}') };
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !starts(l) || (!lua && l.trim_end().ends_with('}')) {
            continue;
        }
        let end = lines[i + 1..].iter().position(|m| !m.trim().is_empty() && indent(m) == indent(l) && closes(m));
        if let Some(j) = end {
            out.push((j + 2, i + 1, l.trim().to_owned()));
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_80_lines() {
    let mut long = Vec::new();
    let sources = files("src", ".rs").into_iter().chain(files("lua", ".lua")).chain(files("plugin", ".lua"));
    for f in sources {
        let lua = f.extension().is_some_and(|e| e == "lua");
        for (len, line, head) in function_lengths(&read(&f), lua) {
            if len > 80 {
                long.push(format!("{}:{line}: {len} lines: {head}", rel(&f)));
            }
        }
    }
    assert!(long.is_empty(), "functions over 80 lines:\n{}", long.join("\n"));
    // The measure measures: a long one is found.
    let body = "fn f() {\n".to_owned() + &"    x();\n".repeat(90) + "}\n";
    assert_eq!(function_lengths(&body, false)[0].0, 92);
    let body = "local function f()\n".to_owned() + &"  x()\n".repeat(90) + "end\n";
    assert_eq!(function_lengths(&body, true)[0].0, 92);
}

/// A crate's modules (below `dir`: src/, bridge/src/, testkit/src/) as paths of names, and
/// which others each uses (`crate::` and `super::` paths, tests left out). Programs of their
/// own (bin/) are other crates, left out.
fn module_graph(dir: &str) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = root().join(dir);
    let module_of = |p: &Path| -> Vec<String> {
        let rel = p.strip_prefix(&src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        let root_file = parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main");
        if root_file || matches!(parts.last().map(String::as_str), Some("mod")) {
            parts.pop();
        }
        parts
    };
    let files: Vec<PathBuf> = files(dir, ".rs").into_iter().filter(|f| !f.strip_prefix(&src).unwrap().starts_with("bin")).collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f)).collect();
    let resolve = |path: Vec<String>| -> Option<Vec<String>> {
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p))
    };
    let mut graph = BTreeMap::new();
    for f in &files {
        let m = module_of(f);
        let text = read(f);
        let code: String = without_tests(&text).lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let mut uses = BTreeSet::new();
        for (prefix, base) in [("crate::", Vec::new()), ("super::", m[..m.len().saturating_sub(1)].to_vec())] {
            for (i, _) in code.match_indices(prefix) {
                let rest = &code[i + prefix.len()..];
                let path: Vec<String> = rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .next()
                    .unwrap_or("")
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                let mut full = base.clone();
                full.extend(path);
                if let Some(target) = resolve(full) {
                    if target != m {
                        uses.insert(target);
                    }
                }
            }
        }
        graph.insert(m, uses);
    }
    graph
}

/// The cycles among the modules directly under `parent` (each module counted as the child of
/// `parent` it is in).
fn cycles_under(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>, parent: &[String]) -> Vec<Vec<String>> {
    let child = |m: &Vec<String>| (m.len() > parent.len() && m[..parent.len()] == *parent).then(|| m[parent.len()].clone());
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, uses) in graph {
        let Some(a) = child(m) else { continue };
        for b in uses.iter().filter_map(child).filter(|b| *b != a) {
            edges.entry(a.clone()).or_default().insert(b);
        }
    }
    // A module is in a cycle when it reaches itself.
    let reaches = |from: &String| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(n) = todo.pop() {
            for next in edges.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let mut cycles: Vec<Vec<String>> = Vec::new();
    for a in edges.keys() {
        if reaches(a).contains(a) {
            let mut cycle: Vec<String> = edges.keys().filter(|b| reaches(a).contains(*b) && reaches(b).contains(a)).cloned().collect();
            cycle.sort();
            if !cycles.contains(&cycle) {
                cycles.push(cycle);
            }
        }
    }
    cycles
}

/// The circles among the modules of the crate below `dir`, one line each.
fn circles_in(dir: &str) -> Vec<String> {
    let graph = module_graph(dir);
    let parents: BTreeSet<Vec<String>> = graph.keys().filter(|m| !m.is_empty()).map(|m| m[..m.len() - 1].to_vec()).collect();
    let mut found = Vec::new();
    for parent in &parents {
        for cycle in cycles_under(&graph, parent) {
            let under: PathBuf = std::iter::once(dir.to_owned()).chain(parent.iter().cloned()).collect();
            found.push(format!("under {}: {}", under.display(), cycle.join(" <-> ")));
        }
    }
    found
}

#[test]
fn no_modules_of_the_core_the_bridge_or_the_testkit_use_each_other_in_a_circle() {
    let found: Vec<String> = ["src", "bridge/src", "testkit/src"].into_iter().flat_map(circles_in).collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
    let graph = module_graph("src");
    // The layers, top to bottom: each uses only those below it.
    let layers = ["ffi", "server", "transport", "mcp", "state", "agents", "protocol", "support"];
    let top = |m: &Vec<String>| m.first().cloned().unwrap_or_default();
    for (m, uses) in &graph {
        let Some(at) = layers.iter().position(|l| *l == top(m)) else { continue };
        for u in uses {
            if let Some(to) = layers.iter().position(|l| *l == top(u)) {
                assert!(to >= at, "src/{} uses src/{}, a layer above it", m.join("/"), u.join("/"));
            }
        }
    }
}

/// The Lua layers, bottom to top, by the first name under lua/pi-ide/: a module requires only
/// its own layer and those below. core/ reaches the agents and the features above it through
/// the parts the top layer declares (core/parts.lua, wiring.lua).
const LUA_LAYERS: [(&str, &[&str]); 4] = [
    ("core", &["core"]),
    ("agents", &["agents"]),
    ("features", &["features"]),
    ("entry points", &["init", "health", "blink", "wiring", "install"]),
];

/// The layer of a module (`pi-ide.core.log`, `pi-ide` for init.lua, or a prefix of one:
/// `pi-ide.agents.`), if it is one of ours.
fn lua_layer_of_module(module: &str) -> Option<usize> {
    let first = match module.strip_prefix("pi-ide") {
        Some("") => "init",
        Some(rest) => rest.strip_prefix('.')?.split('.').next()?,
        None => return None,
    };
    let looks_like_one = module.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_.-".contains(&c));
    LUA_LAYERS.iter().position(|(_, names)| names.contains(&first)).filter(|_| looks_like_one)
}

/// Where a Lua long bracket (`[[`, `[==[`) opens at `at`: its closing bracket and where its text
/// begins.
fn long_bracket(b: &[u8], at: usize) -> Option<(Vec<u8>, usize)> {
    if b.get(at) != Some(&b'[') {
        return None;
    }
    let level = b[at + 1..].iter().take_while(|&&c| c == b'=').count();
    (b.get(at + 1 + level) == Some(&b'[')).then(|| ([b"]".to_vec(), vec![b'='; level], b"]".to_vec()].concat(), at + 2 + level))
}

/// The string literals of a Lua file, each with its line; comments are left out.
fn lua_strings(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let find = |from: usize, what: &[u8]| b[from.min(b.len())..].windows(what.len()).position(|w| w == what).map_or(b.len(), |p| from + p);
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let start = i;
        if b[i..].starts_with(b"--") {
            i = match long_bracket(b, i + 2) {
                Some((close, from)) => (find(from, &close) + close.len()).min(b.len()),
                None => find(i, b"\n"),
            };
        } else if let Some((close, from)) = long_bracket(b, i) {
            let end = find(from, &close);
            out.push((line, String::from_utf8_lossy(&b[from..end]).into_owned()));
            i = (end + close.len()).min(b.len());
        } else if b[i] == b'"' || b[i] == b'\'' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b[i] && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push((line, String::from_utf8_lossy(&b[i + 1..j.min(b.len())]).into_owned()));
            i = j + 1;
        } else {
            i += 1;
        }
        line += b[start..i.min(b.len())].iter().filter(|&&c| c == b'\n').count();
    }
    out
}

/// The modules of ours a Lua file names in its code, by line: in require("x"), require "x",
/// package.loaded["x"], a path handed on, or as the start of one ("pi-ide.agents." .. name).
fn lua_modules_named(text: &str) -> Vec<(usize, String)> {
    lua_strings(text).into_iter().filter(|(_, s)| lua_layer_of_module(s).is_some()).collect()
}

#[test]
fn luas_layers_require_only_their_own_and_those_below() {
    let mut upward = Vec::new();
    for f in files("lua", ".lua") {
        let path = rel(&f);
        let first = path.trim_start_matches("lua/pi-ide/").split('/').next().unwrap().trim_end_matches(".lua");
        let Some(at) = LUA_LAYERS.iter().position(|(_, names)| names.contains(&first)) else {
            panic!("{path} is in no layer: add it to LUA_LAYERS");
        };
        for (line, module) in lua_modules_named(&read(&f)) {
            let to = lua_layer_of_module(&module).unwrap();
            if to > at {
                upward.push(format!("{path}:{line}: {} -> {} ({module})", LUA_LAYERS[at].0, LUA_LAYERS[to].0));
            }
        }
    }
    assert!(upward.is_empty(), "Lua modules that require a layer above their own:\n{}", upward.join("\n"));
    // The reading reads: a lazy require, `require "x"`, a prefix, a long string; no comment and
    // no message.
    let sample = "-- require('pi-ide.features.x')\nlocal function f(n)\n  return require \"pi-ide.features.review\", \
                  require('pi-ide.agents.' .. n)\nend\nlog('pi-ide.nvim: x', \"it's\") --[[ require(\"pi-ide\")\n]] x = [==[pi-ide]==]\n";
    let named: Vec<(usize, String)> = [(3, "pi-ide.features.review"), (3, "pi-ide.agents."), (6, "pi-ide")].map(|(l, m)| (l, m.to_owned())).into();
    assert_eq!(lua_modules_named(sample), named);
}

/// The names of files (with a folder, ending in .rs or .lua), of documents (.md) and of our
/// folders (src/, lua/, tests/ and below) in a comment or a document.
fn referenced_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'/' || c == b'.';
    let mut i = 0;
    while i < bytes.len() {
        if !word(bytes[i]) || (i > 0 && word(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && word(bytes[i]) {
            i += 1;
        }
        let w = text[start..i].trim_end_matches('.');
        // An absolute path or a URL (file:///x.rs, https://rustup.rs) is not one of ours.
        if w.starts_with('/') || text[..start].ends_with(':') {
            continue;
        }
        let is_file = (w.ends_with(".rs") || w.ends_with(".lua")) && w.contains('/') || w.ends_with(".md") && !w.starts_with('.');
        let is_folder = w.ends_with('/') && ["src/", "lua/", "tests/", "testkit/", "bench/"].iter().any(|r| w.starts_with(r));
        if is_file || is_folder {
            out.push(w.to_owned());
        }
    }
    out
}

#[test]
fn no_comment_or_document_names_a_file_that_is_not_there() {
    let all: Vec<String> = ["src", "lua", "tests", "testkit", "bench", "bridge", "plugin", "scripts", "doc"]
        .iter()
        .flat_map(|d| files(d, ""))
        .map(|f| rel(&f))
        .chain(std::fs::read_dir(root()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    let exists = |r: &str| all.iter().any(|f| f == r || f.ends_with(&format!("/{r}")) || f.starts_with(r) || f.contains(&format!("/{r}")));
    let mut stale = Vec::new();
    let texts = files("src", ".rs").into_iter().chain(files("lua", ".lua")).chain(files("tests", ".rs"))
        .chain(files("testkit", ".rs")).chain(files("bench", ".rs")).chain(files("bridge", ".rs"))
        .chain(["README.md", "ARCHITECTURE.md", "HARDENING.md", "BENCHMARKS.md", "doc/pi-ide.txt"].map(|d| root().join(d)));
    for f in texts {
        let lua = f.extension().is_some_and(|e| e == "lua");
        let doc = f.extension().is_some_and(|e| e == "md" || e == "txt");
        for (n, line) in read(&f).lines().enumerate() {
            let marker = if lua { "--" } else { "//" };
            let comment = if doc { Some(line) } else { line.find(marker).map(|i| &line[i..]) };
            for r in comment.map(referenced_paths).unwrap_or_default() {
                // Examples of the user's own files are not ours.
                if r.starts_with("lua/plugins/") || r.starts_with("lua/config/") || exists(&r) {
                    continue;
                }
                stale.push(format!("{}:{}: {r}", rel(&f), n + 1));
            }
        }
    }
    assert!(stale.is_empty(), "references to files that are not there:\n{}", stale.join("\n"));
    assert_eq!(referenced_paths("see src/x/y.rs, and lua/pi-ide/core/ too."), ["src/x/y.rs", "lua/pi-ide/core/"]);
    assert_eq!(referenced_paths("(NOTES.md says)"), ["NOTES.md"]);
}

/// The string literals of Rust source (normal and raw, byte strings too), each with the line it
/// starts on and the text before it; comments and character literals are skipped.
fn string_literals(text: &str) -> Vec<(usize, &str, &str)> {
    let b = text.as_bytes();
    let ident = |i: usize| i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_');
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        let rest = &text[i..];
        let raw_start = b[i] == b'r' && (i == 0 || !ident(i - 1) || (b[i - 1] == b'b' && (i < 2 || !ident(i - 2))));
        let hashes = rest[1..].bytes().take_while(|&c| c == b'#').count();
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if raw_start && rest[1 + hashes..].starts_with('"') {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            let end = rest[body..].find(&close).map_or(rest.len(), |e| body + e);
            out.push((text[..i].matches('\n').count() + 1, &text[..i], &rest[body..end]));
            i += end + close.len();
        } else if b[i] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            out.push((text[..i].matches('\n').count() + 1, &text[..i], &rest[1..j.min(rest.len())]));
            i += j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '"'), or a lifetime ('a), which has no end.
            let c = rest[1..].chars().next().map_or(0, char::len_utf8);
            let len = if rest[1..].starts_with('\\') { rest[2..].find('\'').map_or(1, |e| e + 3) } else if rest[1 + c..].starts_with('\'') { c + 2 } else { 1 };
            i += len;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// Where a Lua program of more than five lines sits in a Rust string: a string handed to a call
/// that runs Lua in Neovim, or one that reads as Lua (it uses `vim.` or `require(`).
fn long_lua_in_strings(text: &str) -> Vec<usize> {
    let runs_lua = [".lua(", ".lua_with(", ".lua_err(", ".lua_through_prompts(", ".wait_for(", "exec_lua(", "before: Some(", "after: Some("];
    let mut found = Vec::new();
    for (line, before, body) in string_literals(text) {
        let lines = body.lines().filter(|l| !matches!(l.trim(), "" | "\\")).count();
        let head = before.trim_end().trim_end_matches(['&', 'r', '#', 'b']).trim_end();
        let head = head.trim_end_matches("format!(").trim_end_matches('&').trim_end();
        let handed = runs_lua.iter().any(|call| head.ends_with(call));
        let reads_as_lua = body.contains("require(") || body.match_indices("vim.").any(|(i, _)| i == 0 || !body.as_bytes()[i - 1].is_ascii_alphanumeric());
        if lines > 5 && (handed || reads_as_lua) {
            found.push(line);
        }
    }
    found
}

#[test]
fn no_lua_program_of_more_than_five_lines_hides_in_a_rust_string() {
    let mut found = Vec::new();
    for f in files("tests", ".rs").into_iter().chain(files("testkit", ".rs")).chain(files("bench", ".rs")) {
        for line in long_lua_in_strings(&read(&f)) {
            found.push(format!("{}:{line}", rel(&f)));
        }
    }
    assert!(found.is_empty(), "Lua of more than five lines in a Rust string (move it to a module of tests/lua/ and call it by name):\n{}", found.join("\n"));
    // The check checks: a long program handed to Neovim, or kept in a constant, is found; a
    // short one, a long string of another language, and a comment are not.
    let lua = "local a = 1\nlocal b = 2\nlocal c = 3\nlocal d = 4\nlocal e = 5\nreturn a";
    let handed = format!("fn f() {{\n    nvim.lua(\n        r#\"{lua}\"#,\n    );\n}}\n");
    assert_eq!(long_lua_in_strings(&handed), [3]);
    assert_eq!(long_lua_in_strings(&format!("// it's\nlet x = 'x';\nnvim.lua_with(\"{lua}\", vec![]);\n")), [3]);
    let kept = "const T: &str = r#\"\n  _G.s = {}\n  s.t = vim.uv.new_timer()\n  s.t:start(1, 1, function()\n    s.n = 1\n    s.m = 2\n  end)\n\"#;";
    assert_eq!(long_lua_in_strings(kept), [1]);
    let short = "nvim.lua(\"local a = 1\nlocal b = 2\nreturn a + b\");";
    let shell = "let script = r#\"#!/bin/sh\na\nb\nc\nd\ne\nf\"#;";
    let comment = format!("// nvim.lua(r#\"{lua}\"#)\n");
    assert!(long_lua_in_strings(short).is_empty() && long_lua_in_strings(shell).is_empty() && long_lua_in_strings(&comment).is_empty());
}
