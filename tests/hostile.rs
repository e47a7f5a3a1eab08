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
