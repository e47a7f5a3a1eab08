//! Discovery and authentication, end to end: a real Neovim writes its lockfile, a real
//! WebSocket client finds it and is let in only with the exact token.

use crate::harness::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn lockfile_has_exactly_the_protocol_fields_and_private_modes() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let keys: Vec<&str> = {
        let mut k: Vec<&str> = l
            .raw
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        k.sort();
        k
    };
    assert_eq!(
        keys,
        [
            "authToken",
            "ideName",
            "pid",
            "transport",
            "workspaceFolders"
        ]
    );
    assert_eq!(l.pid, nvim.pid() as i64);
    assert_eq!(l.transport, "ws");
    assert_eq!(l.ide_name, "Neovim");
    assert_eq!(
        l.workspace_folders,
        vec![nvim.cwd.to_string_lossy().to_string()]
    );
    let token = uuid_v4(&l.auth_token);
    assert!(token, "token is not a UUID v4: {}", l.auth_token);
    assert_eq!(
        std::fs::metadata(&l.path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&nvim.lock_dir)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    // The port in the file name is the one that answers.
    let mut p = Peer::connect(l.port, &l.auth_token).unwrap();
    assert!(p.initialize().unwrap()["result"].is_object());
}

fn uuid_v4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        && parts[2].starts_with('4')
        && matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b'))
}

#[test]
fn lockfile_is_removed_on_stop_and_written_again_on_start() {
    let nvim = Nvim::start();
    let first = nvim.lockfile();
    nvim.command("PiIde stop").unwrap();
    assert!(!first.path.exists());
    assert!(lock::read_all(&nvim.lock_dir).is_empty());
    // The port is closed too (by the server's thread: poll; and should another program get
    // the port meanwhile, the old token must still open nothing).
    let deadline = std::time::Instant::now() + PATIENCE;
    while Peer::connect(first.port, &first.auth_token).is_ok() {
        assert!(std::time::Instant::now() < deadline, "still served after stop");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nvim.command("PiIde start").unwrap();
    let second = nvim.lockfile();
    assert_ne!(
        second.auth_token, first.auth_token,
        "a new start gets a new token"
    );
}

#[test]
fn lockfile_is_removed_on_quit_and_quit_is_prompt_with_a_client() {
    let mut nvim = Nvim::start();
    let l = nvim.lockfile();
    let mut peer = nvim.peer();
    let t = std::time::Instant::now();
    assert!(nvim.quit(PATIENCE), "nvim did not exit");
    let took = t.elapsed();
    assert!(!l.path.exists(), "lockfile left behind after :qa");
    // The client got a Close frame, not just a dropped socket.
    let (_, end) = read_until_close(&mut peer);
    assert!(matches!(end, Received::Close { code: 1001, .. }), "{end:?}");
    eprintln!(":qa with a client took {took:?}");
}

#[test]
fn two_editors_run_at_once_on_different_ports() {
    let a = Nvim::start();
    let b = Nvim::start_with(common_opts(&a));
    let locks = lock::read_all(&a.lock_dir);
    assert_eq!(locks.len(), 2, "{locks:?}");
    assert_ne!(locks[0].port, locks[1].port);
    assert_ne!(locks[0].auth_token, locks[1].auth_token);
    for l in &locks {
        let mut p = Peer::connect(l.port, &l.auth_token).unwrap();
        assert!(p.initialize().unwrap()["result"].is_object());
        // Each token opens only its own editor.
        let other = locks.iter().find(|o| o.port != l.port).unwrap();
        assert!(matches!(
            Peer::connect(other.port, &l.auth_token),
            Err(pi_ide_testkit::ConnectError::Http(401))
        ));
    }
    drop(b);
}

fn common_opts(a: &Nvim) -> pi_ide_testkit::nvim::Options {
    pi_ide_testkit::nvim::Options {
        lock_dir: Some(a.lock_dir.clone()),
        ..Default::default()
    }
}

#[test]
fn stale_lockfiles_of_dead_editors_are_removed_but_live_and_foreign_ones_stay() {
    let dir = pi_ide_testkit::nvim::temp_dir("locks");
    let write = |port: u16, pid: u32, name: &str| {
        let body = json!({"pid": pid, "workspaceFolders": ["/x"], "ideName": name, "transport": "ws", "authToken": "t"});
        std::fs::write(dir.join(format!("{port}.lock")), body.to_string()).unwrap();
    };
    let dead = 0x7fff_fff0;
    write(1, dead, "Neovim");
    write(2, dead, "Visual Studio Code");
    write(3, std::process::id(), "Neovim");
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        lock_dir: Some(dir.clone()),
        ..Default::default()
    });
    assert!(
        !dir.join("1.lock").exists(),
        "a dead Neovim's lockfile stays"
    );
    assert!(
        dir.join("2.lock").exists(),
        "another editor's lockfile was removed"
    );
    assert!(
        dir.join("3.lock").exists(),
        "a live editor's lockfile was removed"
    );
    drop(nvim);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn upgrades_without_the_exact_token_get_401_and_nothing_else() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let t = l.auth_token.as_str();
    let h = pi_ide_testkit::peer::AUTH_HEADER;
    let upper = t.to_uppercase();
    let prefix = &t[..t.len() - 1];
    let suffixed = format!("{t}0");
    let near = {
        let mut b = t.as_bytes().to_vec();
        let last = b.len() - 1;
        b[last] = if b[last] == b'0' { b'1' } else { b'0' };
        String::from_utf8(b).unwrap()
    };
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("no header", vec![]),
        ("empty", vec![(h, "")]),
        ("wrong", vec![(h, "00000000-0000-4000-8000-000000000000")]),
        ("near miss (last char)", vec![(h, &near)]),
        ("different case", vec![(h, &upper)]),
        ("prefix", vec![(h, prefix)]),
        ("token plus suffix", vec![(h, &suffixed)]),
        ("sent twice", vec![(h, t), (h, t)]),
        (
            "claude header without compat",
            vec![("x-claude-code-ide-authorization", t)],
        ),
    ];
    for (what, headers) in cases {
        match Peer::connect_with_headers(l.port, &headers) {
            Err(pi_ide_testkit::ConnectError::Http(401)) => {}
            Err(e) => panic!("{what}: expected 401, got {e}"),
            Ok(_) => panic!("{what}: was let in"),
        }
    }
    // Nothing reached Lua, and the right token still works.
    assert_eq!(
        nvim.lua("return #require('pi-ide').info().clients"),
        json!(0)
    );
    let mut p = Peer::connect(l.port, t).unwrap();
    assert!(p.initialize().unwrap()["result"].is_object());
}

#[test]
fn listens_on_loopback_only() {
    let nvim = Nvim::start();
    let l = nvim.lockfile();
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port_hex = format!(":{:04X}", l.port);
    let listening: Vec<&str> = tcp
        .lines()
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.len() > 3 && cols[1].ends_with(&port_hex) && cols[3] == "0A"
        })
        .collect();
    assert_eq!(listening.len(), 1, "{listening:?}");
    assert!(
        listening[0]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .starts_with("0100007F:"),
        "{listening:?}"
    );
}

#[test]
fn a_lock_folder_others_can_write_to_is_made_private_and_another_users_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = pi_ide_testkit::nvim::temp_dir("shared-locks");
    let shared = home.join("locks");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let opts = |dir: &std::path::Path| pi_ide_testkit::nvim::Options {
        lock_dir: Some(dir.to_path_buf()),
        before: Some("require('pi_ide_test').record_notify()".into()),
        ..Default::default()
    };
    // Ours, as a umask of 002 leaves it (or opened up): made private before the token goes in.
    let nvim = Nvim::start_with(opts(&shared));
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    let mode = std::fs::metadata(&shared).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "group and others may no longer write there");
    assert!(health(&nvim).contains("writable by you alone"));
    let log = std::fs::read_to_string(nvim.home.join("state/nvim/pi-ide.log")).unwrap_or_default();
    assert!(log.contains("made the lock folder") && log.contains("777"), "{log}");
    // Opened up again while running: health says so, with the fix.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o775)).unwrap();
    let h = health(&nvim);
    assert!(h.contains("ERROR") && h.contains("writable by group or others") && h.contains("chmod go-w"), "{h}");
    drop(nvim);
    // A folder of another user's cannot be made ours: refused, and said so.
    // SAFETY: geteuid has no preconditions.
    let theirs = if unsafe { libc::geteuid() } == 0 {
        let d = home.join("theirs");
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        d
    } else {
        std::path::PathBuf::from("/usr/share")
    };
    let nvim = Nvim::start_with(opts(&theirs));
    nvim.wait_t("has_note", json!(["belongs to another user"]), PATIENCE);
    assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(false));
    assert_eq!(lock::read_all(&theirs).len(), 0, "no token written there");
    drop(nvim);
    std::fs::remove_dir_all(&home).ok();
}

/// Root can act as another user (nobody, 65534) here; as another user these cases are skipped.
fn as_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("{test}: skipped (only root can act as another user here)");
    }
    root
}

#[test]
fn a_lock_folder_reached_through_another_users_link_or_folder_is_refused() {
    if !as_root("a_lock_folder_reached_through_another_users_link_or_folder") {
        return;
    }
    use std::os::unix::fs::{lchown, symlink};
    // A shared folder, as /tmp is: everyone may write there, the sticky bit keeps each one's names.
    let shared = pi_ide_testkit::nvim::temp_dir("sticky");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let ours = shared.join("ours");
    std::fs::create_dir(&ours).unwrap();
    std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o700)).unwrap();
    let start = |dir: &std::path::Path| {
        Nvim::start_with(pi_ide_testkit::nvim::Options {
            lock_dir: Some(dir.to_path_buf()),
            before: Some("require('pi_ide_test').record_notify()".into()),
            ..Default::default()
        })
    };
    let refused = |nvim: &Nvim, named: &std::path::Path, why: &str| {
        nvim.wait_t("has_note", json!(["cannot start the server"]), PATIENCE);
        let said = nvim.notes().join("\n");
        assert!(said.contains(&*named.to_string_lossy()) && said.contains(why), "{said}");
        assert_eq!(nvim.lua("return require('pi-ide').info().running"), json!(false));
        assert_eq!(lock::read_all(&ours).len(), 0, "no token written");
    };
    // A link another user planted, even to a folder of ours: they may point it elsewhere at any
    // moment (between our check and our write).
    let planted = shared.join("locks");
    symlink(&ours, &planted).unwrap();
    lchown(&planted, Some(65534), Some(65534)).unwrap();
    refused(&start(&planted), &planted, "a symbolic link of another user (uid 65534)");
    // A folder of another user on the way: they may rename ours away and put theirs there.
    let theirs = shared.join("theirs");
    std::fs::create_dir_all(theirs.join("ide")).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    refused(&start(&theirs.join("ide")), &theirs, "belongs to another user (uid 65534)");
    // A link of ours to a folder of ours (dotfiles) is ordinary: served.
    let mine = shared.join("mine");
    symlink(&ours, &mine).unwrap();
    let nvim = start(&mine);
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    assert_eq!(lock::read_all(&ours).len(), 1);
    drop(nvim);
    std::fs::remove_dir_all(&shared).ok();
}

#[test]
fn an_agents_lock_folder_refused_leaves_the_others_served_and_is_said_once() {
    if !as_root("an_agents_lock_folder_refused") {
        return;
    }
    // Claude Code's folder is another user's: Pi is still served; Neovim says so once.
    let home = pi_ide_testkit::nvim::temp_dir("claude-theirs");
    let claude = home.join("claude");
    std::fs::create_dir_all(claude.join("ide")).unwrap();
    std::os::unix::fs::chown(claude.join("ide"), Some(65534), Some(65534)).unwrap();
    let nvim = Nvim::start_with(pi_ide_testkit::nvim::Options {
        env: vec![("CLAUDE_CONFIG_DIR".into(), claude.to_string_lossy().into())],
        before: Some("require('pi_ide_test').record_notify()".into()),
        after: Some("require('pi-ide').stop() require('pi-ide').setup({claude_code = true}) require('pi-ide').start()".into()),
        ..Default::default()
    });
    nvim.wait_for("require('pi-ide').info().running", PATIENCE);
    let said: Vec<String> = nvim.notes().into_iter().filter(|n| n.contains("not serving Claude Code")).collect();
    assert_eq!(said.len(), 1, "{:?}", nvim.notes());
    assert!(said[0].contains(&*claude.join("ide").to_string_lossy()) && said[0].contains("another user (uid 65534)"), "{said:?}");
    assert_eq!(lock::read_all(&claude.join("ide")).len(), 0);
    let mut p = nvim.peer();
    assert!(p.initialize().unwrap()["result"].is_object(), "Pi is served");
    drop(nvim);
    std::fs::remove_dir_all(&home).ok();
}
