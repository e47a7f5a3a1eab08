//! Hostile and unlucky conditions: what another local process, a misbehaving agent or the
//! user's own config can do must never starve Neovim, hang the agent, or let a write through
//! unreviewed.

mod common;
use common::*;
use pi_ide_peer::nvim::Options;

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
        nvim.wait_for(
            &format!(
                "#vim.tbl_filter(function(n) return n.msg:find({path:?}, 1, true) and n.msg:find({why:?}, 1, true) end, _G.__notes) == 1"
            ),
            PATIENCE,
        );
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
    assert_eq!(nvim.lua("return #require('pi-ide.diff').list()"), json!(0));
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
    // Never more than the caps (16 in handshakes, 32 clients) and the accept loop's batch.
    let during = sockets(nvim.pid());
    assert!(during <= baseline + 16 + 32 + 128, "{during} sockets (baseline {baseline})");
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
    for _ in 0..40 {
        match Peer::connect(l.port, &l.auth_token) {
            Ok(p) => ok.push(p),
            Err(pi_ide_peer::ConnectError::Http(503)) => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(ok.len(), 32, "32 clients are served");
    assert_eq!(full, 8);
    // A wrong token is still 401, not 503.
    assert!(matches!(
        Peer::connect(l.port, "wrong"),
        Err(pi_ide_peer::ConnectError::Http(401))
    ));
    ok.pop().unwrap().close();
    nvim.wait_for("#require('pi-ide').info().clients == 31", PATIENCE);
    let mut p = Peer::connect(l.port, &l.auth_token).expect("a freed slot is reused");
    assert!(p.initialize().unwrap().get("result").is_some());
}
