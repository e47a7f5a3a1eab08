//! Hostile and unlucky conditions: what another local process, a misbehaving agent or the
//! user's own config can do must never starve Neovim, hang the agent, or let a write through
//! unreviewed.

use crate::harness::*;
use pi_ide_testkit::nvim::Options;

/// Neovim's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap()
}

fn open_diff_frame(id: &str, old: &str, new: &str, contents: &str, tab: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": old, "new_file_path": new, "new_file_contents": contents, "tab_name": tab}}})
}

#[test]
fn open_diff_of_what_is_not_a_regular_file_is_refused_at_once() {
    let nvim = Nvim::start_with(Options {
        before: Some("require('pi-ide').setup({ max_message_size = 1048576 })".into()),
        ..Default::default()
    });
    nvim.record_notify();
    let dir = nvim.home.join("odd");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sock = dir.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let big = dir.join("big.txt");
    std::fs::write(&big, vec![b'x'; 2 * 1048576]).unwrap();
    let s = |p: &std::path::Path| p.to_string_lossy().to_string();
    let cases = [
        (s(&fifo), "named pipe"),
        ("/dev/zero".to_string(), "character device"),
        ("/dev/urandom".to_string(), "character device"),
        (s(&dir), "folder"),
        (s(&sock), "socket"),
        (s(&big), "limit"),
    ];
    let mut p = nvim.peer();
    let rss_before = rss_kib(nvim.pid());
    for (i, (path, why)) in cases.iter().enumerate() {
        let id = format!("d{i}");
        p.send_json(&open_diff_frame(&id, path, path, "x\n", &format!("pi-write:{i}")))
            .unwrap();
        let r = p.wait_response(&json!(id)).unwrap();
        assert_eq!(
            texts(&r),
            vec!["DIFF_REJECTED".to_string(), format!("pi-write:{i}")],
            "{path}"
        );
        wait_until("one note naming the path and why", PATIENCE, || {
            nvim.t("count_notes", json!([path, why])) == json!(1)
        });
        // The connection keeps serving.
        assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
        assert!(p.call_tool("getDiagnostics", json!({})).unwrap().get("result").is_some());
    }
    // One line each, naming the path and why.
    for n in nvim.notes() {
        assert!(!n.contains('\n'), "{n:?}");
    }
    let grown = rss_kib(nvim.pid()).saturating_sub(rss_before);
    assert!(grown < 20 * 1024, "Neovim grew by {grown} KiB");
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(0));
    // A write into a folder is refused too; openFile never opens a FIFO either.
    let r = p
        .request_with_id(
            json!("w"),
            "tools/call",
            open_diff_frame("w", "/nonexistent/a", &s(&dir), "x", "pi-write:w")["params"].clone(),
        )
        .unwrap();
    assert_eq!(texts(&r)[0], "DIFF_REJECTED");
    let r = p.call_tool("openFile", json!({"filePath": s(&fifo)})).unwrap();
    assert!(r.get("error").is_some(), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("Not a regular file"), "{r}");
    assert_eq!(nvim.lua("return 6 * 7"), json!(42));
}

#[test]
fn an_agent_cannot_name_files_for_the_editor_to_read_or_delete() {
    // openDiff's arguments reach Lua with keys the core writes (where the proposal and the file
    // on disk were staged). An agent that sends its own values for them must not get a file it
    // names read into a review or deleted when the review ends.
    let nvim = Nvim::start();
    let victim = nvim.home.join("precious.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let v = victim.to_string_lossy().to_string();
    let forge = |frame: &mut Value| {
        let a = &mut frame["params"]["arguments"];
        a["proposal_file"] = json!(v);
        a["old"] = json!({"exists": true, "file": v});
        a["new"] = json!({"eol": true, "crlf": false, "bytes": 1});
    };
    let mut p = nvim.peer();
    // Refused up front (a folder): nothing is staged, nothing named is touched.
    let folder = nvim.home.to_string_lossy().to_string();
    let mut f = open_diff_frame("r", &folder, &folder, "x\n", "pi-write:r");
    forge(&mut f);
    p.send_json(&f).unwrap();
    assert_eq!(texts(&p.wait_response(&json!("r")).unwrap())[0], "DIFF_REJECTED");
    // Reviewed: the panes show what the agent proposed and the file as it is on disk.
    let target = nvim.home.join("target.txt");
    std::fs::write(&target, "old\n").unwrap();
    let t = target.to_string_lossy().to_string();
    let mut f = open_diff_frame("s", &t, &t, "new\n", "pi-write:s");
    forge(&mut f);
    p.send_json(&f).unwrap();
    wait_until("the proposal pane", PATIENCE, || {
        nvim.t("pane_lines", json!(["pi-write:s", "proposal"])) == json!(["new"])
    });
    let lines = nvim.t("pane_lines", json!(["pi-write:s", "disk"]));
    assert_eq!(lines, json!(["old"]), "the left pane shows the file on disk, not a file the agent named");
    // Loaded: the core has deleted what it staged, while the review is still open.
    nvim.wait_for(
        "#vim.fn.readdir(vim.fn.stdpath('run') .. '/pi-ide.' .. vim.fn.getpid()) == 0",
        PATIENCE,
    );
    let r = p.call_tool("close_tab", json!({"tab_name": "pi-write:s"})).unwrap();
    assert_eq!(texts(&r)[0], "TAB_CLOSED");
    assert_eq!(texts(&p.wait_response(&json!("s")).unwrap())[0], "DIFF_REJECTED");
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    fence(&mut p);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
}

/// Neovim's open sockets (TCP connections and listeners, its own RPC socket).
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path())
                .map(|l| l.to_string_lossy().starts_with("socket:"))
                .unwrap_or(false)
        })
        .count()
}

fn set_nofile(pid: u32, soft: u64, hard: u64) {
    let new = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: prlimit on a process this test started (or on itself), with a valid struct.
    let rc = unsafe { libc::prlimit(pid as i32, libc::RLIMIT_NOFILE, &new, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

#[test]
fn idle_sockets_cannot_run_neovim_out_of_file_descriptors() {
    let nvim = Nvim::start();
    // A common desktop limit for Neovim; this test needs room for 2,000 sockets of its own.
    set_nofile(nvim.pid(), 1024, 1024);
    let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit into a valid struct.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut own) };
    set_nofile(std::process::id(), own.rlim_max.min(4096).max(own.rlim_cur), own.rlim_max);
    let l = nvim.lockfile();
    let baseline = sockets(nvim.pid());
    let t = std::time::Instant::now();
    // Any local process: 2,000 connections that never send a byte, held open.
    let idle: Vec<std::net::TcpStream> = (0..2000)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", l.port)).ok())
        .collect();
    assert!(idle.len() > 1000, "only {} idle connections were made", idle.len());
    eprintln!("{} idle connections made in {:?}", idle.len(), t.elapsed());
    // The real agent still gets in, at once.
    let t = std::time::Instant::now();
    let mut p = Peer::connect(l.port, &l.auth_token).expect("the agent connects");
    assert!(p.initialize().unwrap().get("result").is_some());
    eprintln!("the agent connected and initialized in {:?}", t.elapsed());
    // Neovim can still open files (with their swap files).
    nvim.command("edit new-file.txt").unwrap();
    assert_eq!(nvim.lua("return vim.v.errmsg"), json!(""));
    assert_eq!(nvim.lua("return vim.bo.readonly"), json!(false));
    assert_ne!(nvim.lua("return vim.fn.swapname('%')"), json!(""));
    // Never more than the caps (64 silent, 16 in handshakes, 64 clients) and the accept loop's batch.
    let during = sockets(nvim.pid());
    assert!(during <= baseline + 16 + 64 + 128, "{during} sockets (baseline {baseline})");
    // The idle ones are closed by the deadline: only the agent's stays.
    wait_until("idle sockets closed", PATIENCE, || sockets(nvim.pid()) == baseline + 1);
    eprintln!("{during} sockets at most meanwhile (baseline {baseline}); idle ones closed {:?} after the flood", t.elapsed());
    let mut closed = 0;
    for mut s in idle {
        use std::io::Read;
        s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        if matches!(s.read(&mut [0u8; 16]), Ok(0) | Err(_)) {
            closed += 1;
        }
    }
    assert!(closed > 1000, "{closed}");
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
    drop(p);
    wait_until("back to the baseline", PATIENCE, || sockets(nvim.pid()) == baseline);
}

#[test]
fn clients_beyond_the_cap_get_http_503_and_a_freed_slot_is_reused() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let mut ok = Vec::new();
    let mut full = 0;
    for _ in 0..70 {
        match Peer::connect(l.port, &l.auth_token) {
            Ok(p) => ok.push(p),
            Err(pi_ide_testkit::ConnectError::Http(503)) => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(ok.len(), 64, "64 clients are served");
    assert_eq!(full, 6);
    // A wrong token is still 401, not 503.
    assert!(matches!(
        Peer::connect(l.port, "wrong"),
        Err(pi_ide_testkit::ConnectError::Http(401))
    ));
    ok.pop().unwrap().close();
    nvim.wait_for("#require('pi-ide').info().clients == 63", PATIENCE);
    let mut p = Peer::connect(l.port, &l.auth_token).expect("a freed slot is reused");
    assert!(p.initialize().unwrap().get("result").is_some());
}

#[test]
fn a_throwing_autocmd_of_another_plugin_does_not_block_reviews() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = nvim.cwd.join("t.txt");
    std::fs::write(&path, "old\n").unwrap();
    let path = path.to_string_lossy().to_string();
    nvim.t("record_events", json!(["PiIdeReviewOpened"]));
    let mut p = nvim.peer();
    let events = [
        "BufEnter", "BufWinEnter", "WinNew", "TabNew", "OptionSet", "DiffUpdated", "BufNew",
        "WinEnter", "TabEnter", "BufLeave", "WinLeave", "BufAdd", "FileType", "BufFilePre",
        "BufFilePost", "FileReadPre", "FileReadPost", "BufHidden", "BufUnload", "BufWipeout",
        "WinClosed", "TabClosed", "BufWritePre", "User PiIdeReviewOpened", "User PiIdeReviewClosed",
        "User PiIdeDiffOpened", "User PiIdeDiffClosed",
    ];
    let started = std::time::Instant::now();
    for (i, event) in events.iter().enumerate() {
        let (ev, pattern) = event.split_once(' ').unwrap_or((event, "*"));
        // As a broken plugin would: one in Vimscript, one in Lua.
        let define = if i % 2 == 0 {
            format!("vim.cmd([[autocmd {ev} {pattern} lua error('broken plugin')]])")
        } else {
            format!("vim.api.nvim_create_autocmd('{ev}', {{ group = 'Broken', pattern = '{pattern}', callback = function() error('broken plugin') end }})")
        };
        nvim.lua_through_prompts(&format!("vim.cmd('augroup Broken | autocmd! | augroup END') vim.cmd('augroup Broken') {define} vim.cmd('augroup END') return true"));
        let id = format!("r{i}");
        eprintln!("{event} at {:?}", started.elapsed());
        p.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
            "old_file_path": path, "new_file_path": path, "new_file_contents": format!("new {i}\n"), "tab_name": format!("pi-edit:{i}")}}}))
            .unwrap();
        // The broken plugin's own errors may bring up hit-enter prompts: Enter, as a user would.
        let n = i + 1;
        wait_until(&format!("review {n} opened ({event})"), PATIENCE, || {
            nvim.lua_through_prompts(&format!("return require('pi_ide_test').count_events('PiIdeReviewOpened') == {n}")) == json!(true)
        });
        assert_eq!(nvim.lua_through_prompts("return vim.bo.buftype"), json!("acwrite"), "{event}");
        assert_eq!(nvim.lua_through_prompts("return vim.wo.diff"), json!(true), "{event}");
        // Once it has been on screen long enough to be seen (review.seen_ms), as a user would.
        wait_until("the review seen", PATIENCE, || {
            nvim.lua_through_prompts("return require('pi_ide_test.review').takes_accept()") == json!(true)
        });
        nvim.request("nvim_input", vec![":w<CR>".into()]).unwrap();
        nvim.lua_through_prompts("return true");
        let r = p.wait_response(&json!(id)).unwrap();
        assert!(r.get("error").is_none(), "{event}: {r}");
        assert_eq!(
            texts(&r),
            vec!["FILE_SAVED".to_string(), format!("new {i}\n")],
            "{event}"
        );
        wait_until("the review's tab closed", PATIENCE, || {
            nvim.lua_through_prompts("return #vim.api.nvim_list_tabpages() == 1") == json!(true)
        });
        nvim.lua_through_prompts("vim.cmd('augroup Broken | autocmd! | augroup END') return true");
        let ours = nvim
            .notes()
            .iter()
            .filter(|n| n.contains("t.txt opened") && n.contains("broken plugin"))
            .count();
        assert!(ours <= i + 1, "{event}: reported more than once per review");
    }
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(0));
}

#[test]
fn an_open_diff_that_fails_anywhere_is_answered_diff_rejected_never_an_error() {
    let nvim = Nvim::start();
    let mut p = nvim.peer();
    let path = nvim.cwd.join("f.txt").to_string_lossy().to_string();
    // A view that throws.
    nvim.lua("require('pi-ide.features.review').open = function() error('boom') end");
    let r = p
        .call_tool(
            "openDiff",
            json!({"old_file_path": path, "new_file_path": path, "new_file_contents": "x", "tab_name": "pi-write:a"}),
        )
        .unwrap();
    assert_eq!(texts(&r), vec!["DIFF_REJECTED".to_string(), "pi-write:a".to_string()], "{r}");
    // A view that throws later, while it gets ready to show the panes.
    nvim.lua("package.loaded['pi-ide.features.review'] = nil require('pi-ide.features.review.show').when_ready = function() error('later') end");
    let r = p
        .call_tool(
            "openDiff",
            json!({"old_file_path": path, "new_file_path": path, "new_file_contents": "x", "tab_name": "pi-write:b"}),
        )
        .unwrap();
    assert_eq!(texts(&r), vec!["DIFF_REJECTED".to_string(), "pi-write:b".to_string()], "{r}");
    // Arguments the editor cannot use: a rejection too (an error would let the write through).
    let r = p
        .call_tool("openDiff", json!({"old_file_path": path, "new_file_path": 5, "tab_name": "pi-write:c"}))
        .unwrap();
    assert_eq!(texts(&r), vec!["DIFF_REJECTED".to_string(), "pi-write:c".to_string()], "{r}");
    let r = p.call_tool("openDiff", json!("not an object")).unwrap();
    assert_eq!(texts(&r), vec!["DIFF_REJECTED".to_string(), String::new()], "{r}");
    // Other tools still answer errors as errors.
    let r = p.call_tool("checkDocumentDirty", json!({})).unwrap();
    assert_eq!(error_code(&r), -32602);
}

#[test]
fn stopping_or_quitting_while_an_open_diff_arrives_answers_it_before_the_close() {
    let mut failures = Vec::new();
    for way in ["stop", "quit"] {
        for size in [300_000usize, 3_000_000, 20_000_000] {
            for delay_ms in [0u64, 5, 10, 20, 30] {
                let mut nvim = Nvim::start();
                let path = nvim.cwd.join("big.txt").to_string_lossy().to_string();
                let p = nvim.peer();
                let line = "x".repeat(99) + "\n";
                let contents = line.repeat(size / 100);
                let text = open_diff_frame("big", &path, &path, &contents, "pi-write:big").to_string();
                // The frame is made in advance: "sending starts" is its first byte on the wire.
                let bytes = raw_frame(0x1, text.as_bytes());
                let (started_tx, started) = std::sync::mpsc::channel();
                let sender = std::thread::spawn(move || {
                    let mut p = p;
                    started_tx.send(()).unwrap();
                    let t = std::time::Instant::now();
                    let sent = p.write_raw(&bytes);
                    if size > 10_000_000 {
                        eprintln!("{size} B sent in {:?}", t.elapsed());
                    }
                    (p, sent)
                });
                started.recv().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                if way == "stop" {
                    nvim.command("PiIde stop").unwrap();
                } else {
                    assert!(nvim.quit(PATIENCE), "Neovim did not quit");
                }
                let (mut p, sent) = sender.join().unwrap();
                let (frames, end) = read_until_close(&mut p);
                let answer = frames.iter().find(|f| f["id"] == "big");
                let ok = sent.is_ok()
                    && answer.is_some_and(|a| texts(a) == ["DIFF_REJECTED", "pi-write:big"])
                    && matches!(end, Received::Close { .. });
                if !ok {
                    failures.push(format!("{way} {size} B after {delay_ms} ms: sent {sent:?}, answer {answer:?}, end {end:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of 30 lost:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn an_agent_that_stops_reading_costs_neovim_a_bounded_amount() {
    let nvim = Nvim::start_with(Options {
        before: Some("require('pi-ide').setup({ max_message_size = 1048576 })".into()),
        ..Default::default()
    });
    let lines: Vec<String> = (0..200).map(|i| format!("{i:03} {}", "y".repeat(96))).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    edit_file(&nvim, "sel.txt", &refs);
    // Pi suspended with Ctrl-Z: connected and initialized, reading nothing from now on.
    let mut suspended = nvim.peer();
    let before = rss_kib(nvim.pid());
    // A long day of moving around: 20,000 distinct selections.
    nvim.lua(
        "local sel = require('pi-ide.features.selection') \
         for i = 0, 19999 do vim.api.nvim_win_set_cursor(0, { i % 200 + 1, math.floor(i / 200) }) sel.flush() end \
         vim.api.nvim_win_set_cursor(0, { 123, 45 }) sel.flush()",
    );
    let grown = rss_kib(nvim.pid()).saturating_sub(before);
    eprintln!("20,000 selections for an agent that reads nothing: Neovim grew by {grown} KiB");
    assert!(grown < 5 * 1024, "Neovim grew by {grown} KiB");
    // When it reads again it gets the current selection (after what the socket still held).
    let latest = loop {
        let s = next_selection(&mut suspended);
        if s["selection"]["start"] == json!({"line": 122, "character": 45}) {
            break s;
        }
    };
    assert_eq!(latest["selection"]["isEmpty"], true);
    assert_eq!(suspended.request("ping", json!({})).unwrap()["result"], json!({}));
    suspended.close();
    nvim.wait_for("#require('pi-ide').info().clients == 0", PATIENCE);
    // Other frames are queued, but not without bound: the client is given up (1008).
    let mut stuck = nvim.peer();
    let before = rss_kib(nvim.pid());
    nvim.lua(
        "local n = require('pi-ide.core.native').get() local big = string.rep('z', 20000) \
         for i = 1, 3000 do n.notify_clients('at_mentioned', { filePath = big, lineStart = i }) end",
    );
    let grown = rss_kib(nvim.pid()).saturating_sub(before);
    eprintln!("3,000 x 20 KB frames for a client that reads nothing: Neovim grew by {grown} KiB");
    assert!(grown < 16 * 1024, "Neovim grew by {grown} KiB");
    nvim.wait_for("#require('pi-ide').info().clients == 0", PATIENCE);
    let (_, end) = read_until_close(&mut stuck);
    assert!(
        matches!(&end, Received::Close { code: 1008, .. } | Received::Gone),
        "{end:?}"
    );
    // Others are served as before.
    let mut p = nvim.peer();
    assert_eq!(p.request("ping", json!({})).unwrap()["result"], json!({}));
}

#[test]
fn a_burst_of_well_behaved_clients_is_served_whole() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    for clients in [20usize, 50] {
        let start = std::sync::Arc::new(std::sync::Barrier::new(clients));
        let threads: Vec<_> = (0..clients)
            .map(|c| {
                let (port, token, start) = (l.port, l.auth_token.clone(), start.clone());
                std::thread::spawn(move || {
                    // As an async client library does it: every TCP connect first, then every
                    // upgrade request.
                    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("client {c}: {e}"))?;
                    start.wait();
                    let header = [(pi_ide_testkit::peer::AUTH_HEADER, token.as_str())];
                    let mut p = Peer::upgrade(tcp, port, &header).map_err(|e| format!("client {c}: {e}"))?;
                    p.initialize().map_err(|e| format!("client {c}: {e}"))?;
                    for i in 0..200 {
                        let tool = if i % 2 == 0 { "getDiagnostics" } else { "getWorkspaceFolders" };
                        let r = p.call_tool(tool, json!({})).map_err(|e| format!("client {c}: {e}"))?;
                        if r.get("result").is_none() {
                            return Err(format!("client {c}: {r}"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        let failed: Vec<String> = threads.into_iter().filter_map(|t| t.join().unwrap().err()).collect();
        eprintln!("{clients} clients connecting at once: {} lost", failed.len());
        assert!(failed.is_empty(), "{} of {clients} lost: {failed:?}", failed.len());
        nvim.wait_for("#require('pi-ide').info().clients == 0", PATIENCE);
    }
}

#[test]
fn a_hung_mount_never_freezes_neovim_or_the_agent() {
    let nvim = Nvim::start_with(Options {
        env: vec![("PI_IDE_FAILPOINTS".into(), "hang-under=/hung".into())],
        ..Default::default()
    });
    nvim.record_notify();
    let mut p = nvim.peer();
    let mut other = nvim.peer();
    let t = std::time::Instant::now();
    // Answered from the snapshot, resolving the path in the core: within its deadline.
    let r = p.call_tool("getDiagnostics", json!({"uri": "file:///hung/x.rs"})).unwrap();
    assert_eq!(texts(&r), vec!["{}".to_string()], "{r}");
    // Looked up by Lua (buffers.find): the core resolves it for Lua, within its deadline.
    let r = p.call_tool("checkDocumentDirty", json!({"filePath": "/hung/x.rs"})).unwrap();
    assert!(r.get("result").is_some(), "{r}");
    eprintln!("two calls on a hung path answered in {:?}", t.elapsed());
    // A review of a file there: rejected with a notice, while Neovim and others go on.
    p.send_json(&open_diff_call("d1", "/hung/x.rs", "x\n", "pi-write:1")).unwrap();
    responsive(&nvim, PATIENCE);
    assert_eq!(other.request("ping", json!({})).unwrap()["result"], json!({}));
    let r = p.wait_response(&json!("d1")).unwrap();
    assert_eq!(texts(&r), vec!["DIFF_REJECTED".to_string(), "pi-write:1".into()]);
    nvim.wait_t("has_note", json!(["/hung/x.rs", "did not answer"]), PATIENCE);
    // Reviews elsewhere are not held up by it.
    let path = file_with(&nvim, "ok.txt", "old\n");
    open_review(&nvim, &mut p, "d2", &path, "new\n", "pi-edit:2", 1);
    eprintln!("all done in {:?}", t.elapsed());
}

#[test]
fn an_agent_sending_two_hundred_reviews_gets_eight_and_two_hundred_answers() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let path = file_with(&nvim, "f.txt", "old\n");
    let mut p = nvim.peer();
    for i in 0..200 {
        p.send_json(&open_diff_call(&format!("d{i}"), &path, &format!("new {i}\n"), &format!("pi-edit:{i}")))
            .unwrap();
    }
    responsive(&nvim, PATIENCE);
    // Beyond eight waiting, each is rejected at once.
    let mut rejected = 0;
    for i in 8..200 {
        let r = p.wait_response(&json!(format!("d{i}"))).unwrap();
        assert_eq!(texts(&r), vec!["DIFF_REJECTED".to_string(), format!("pi-edit:{i}")]);
        rejected += 1;
    }
    nvim.wait_for("#require('pi-ide.features.review').list() == 8", PATIENCE);
    assert!(nvim.lua("return #vim.api.nvim_list_tabpages()").as_u64().unwrap() <= 9);
    // One message, and one sum of the rest, not 192.
    nvim.wait_t("has_note", json!(["191 more like this"]), PATIENCE);
    assert_eq!(nvim.t("count_notes", json!(["reviews waiting already"])), json!(2));
    // The eight are the user's to decide; each gets its one answer.
    for left in (0..8).rev() {
        nvim.command("tablast").unwrap();
        nvim.command("PiIde reject").unwrap();
        nvim.wait_for(&format!("#require('pi-ide.features.review').list() == {left}"), PATIENCE);
    }
    for i in 0..8 {
        let r = p.wait_response(&json!(format!("d{i}"))).unwrap();
        assert_eq!(texts(&r)[0], "DIFF_REJECTED");
    }
    eprintln!("200 openDiffs: 8 reviewed, {rejected} rejected at once");
    let staged = nvim.lua("local d = vim.fn.stdpath('run') .. '/pi-ide.' .. vim.fn.getpid() return #vim.fn.readdir(d)");
    assert_eq!(staged, json!(0), "nothing left staged");
}

#[test]
fn a_message_far_over_the_limit_is_answered_in_bounded_memory() {
    let nvim = Nvim::start_with(Options {
        before: Some("require('pi-ide').setup({ max_message_size = 1048576 })".into()),
        ..Default::default()
    });
    let mut p = nvim.peer();
    let before = rss_kib(nvim.pid());
    // 256 MiB in one frame, written as it is made (the agent's side holds no more than 1 MiB).
    let head = r#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"openDiff","arguments":{"tab_name":"pi-write:big","new_file_path":"/w/big.rs","new_file_contents":""#;
    let tail = r#""}}}"#;
    let body = 256usize << 20;
    let len = (head.len() + body + tail.len()) as u64;
    let mask = [7u8, 1, 8, 3];
    let mut header = vec![0x81u8, 0x80 | 127];
    header.extend(len.to_be_bytes());
    header.extend(mask);
    let mut at = 0usize;
    let mut masked = |bytes: &[u8]| -> Vec<u8> {
        let out = bytes.iter().enumerate().map(|(i, b)| b ^ mask[(at + i) % 4]).collect();
        at += bytes.len();
        out
    };
    p.write_raw(&header).unwrap();
    p.write_raw(&masked(head.as_bytes())).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut peak = 0;
    for i in 0..(body >> 20) {
        p.write_raw(&masked(&chunk)).unwrap();
        if i % 32 == 0 {
            peak = peak.max(rss_kib(nvim.pid()));
        }
    }
    p.write_raw(&masked(tail.as_bytes())).unwrap();
    let (frames, end) = read_until_close(&mut p);
    peak = peak.max(rss_kib(nvim.pid()));
    let grown = peak.saturating_sub(before);
    eprintln!("a 256 MiB message over a 1 MiB limit: Neovim grew by {grown} KiB at most");
    assert_eq!(answer_in(&frames, "big"), Some(vec!["DIFF_REJECTED".to_string(), "pi-write:big".into()]));
    assert!(matches!(end, Received::Close { code: 1009, .. }), "{end:?}");
    assert!(grown < 16 * 1024, "Neovim grew by {grown} KiB");
}
