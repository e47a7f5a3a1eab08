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
    let t = cp.begin("pi", Some("do it".into())).unwrap().0;
    sh(&ws, "sed -i 's/two/TWO/' a.txt && echo new > created.txt && rm bin.dat");
    let ended = cp.end(t.n, &[]).unwrap();
    assert_eq!(ended.changed, ["a.txt", "bin.dat", "created.txt"]);
    assert_eq!(ended.unreviewed, ended.changed);
    let (_, changes) = cp.changes(None).unwrap();
    let a = changes.iter().find(|c| c.path == "a.txt").unwrap();
    assert_eq!((a.status, a.lines, a.turns.clone(), a.unreviewed), ('M', Some((1, 1, 2)), vec![t.n], true));
    assert_eq!(cp.content(t.n, "a.txt").unwrap().unwrap(), b"one\ntwo\n");
    assert_eq!(cp.content(t.n, "created.txt").unwrap(), None);
    let plan = cp.plan_undo(None).unwrap();
    let paths: Vec<String> = plan.files.iter().map(|f| f.path.clone()).collect();
    let report = cp.undo(plan.turn.n, &paths).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"one\ntwo\n");
    assert_eq!(std::fs::read(ws.join("bin.dat")).unwrap(), b"raw\0bytes");
    assert!(!ws.join("created.txt").exists());
    assert_eq!(repo_state(&ws), before);
    assert!(cp.turns()[0].undone);
}

#[test]
fn a_folder_that_is_not_a_repository_works_and_respects_its_gitignore() {
    let (ws, state) = rig("cp-folder", false);
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(ws.join("build")).unwrap();
    std::fs::write(ws.join("build/out"), "x").unwrap();
    let cp = Checkpoints::open(&ws, &state, Limits::default()).unwrap();
    let t = cp.begin("acp", None).unwrap().0;
    std::fs::write(ws.join("build/out"), "y").unwrap();
    std::fs::remove_file(ws.join("keep.txt")).unwrap();
    let (_, changes) = cp.changes(Some(t.n)).unwrap();
    assert_eq!(changes.iter().map(|c| (c.path.as_str(), c.status)).collect::<Vec<_>>(), [("keep.txt", 'D')]);
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
    let t = cp.begin("pi", None).unwrap().0;
    std::fs::remove_file(ws.join("a.txt")).unwrap();
    std::fs::write(ws.join("a.txt"), "agent\n").unwrap();
    cp.end(t.n, &["a.txt".into()]).unwrap();
    std::fs::write(ws.join("a.txt"), "user\n").unwrap();
    let (_, changes) = cp.changes(None).unwrap();
    assert_eq!((changes.len(), changes[0].status, changes[0].unreviewed), (1, 'M', false));
    let plan = cp.plan_undo(None).unwrap();
    assert!(plan.files[0].changed_since);
    // A later turn opens: the next checkpoint of a terminal agent closes it.
    let t2 = cp.begin("other", None).unwrap().0;
    assert_eq!(t2.n, t.n + 1);
}

#[test]
fn limits_skip_a_checkpoint_whole_and_leave_out_a_huge_file() {
    let (ws, state) = rig("cp-limits", false);
    std::fs::write(ws.join("big.bin"), vec![7u8; 4096]).unwrap();
    let small = Limits { files: 100, file_bytes: 1024, new_bytes: 1 << 20 };
    let t = Checkpoints::open(&ws, &state, small).unwrap().begin("pi", None).unwrap().0;
    assert_eq!(t.skipped, ["big.bin"]);
    let few = Limits { files: 1, ..small };
    let e = Checkpoints::open(&ws, &state.join("2"), few).unwrap().begin("pi", None).unwrap_err();
    assert!(e.contains("more than 1 files"), "{e}");
    let tight = Limits { new_bytes: 4, ..small };
    let e = Checkpoints::open(&ws, &state.join("3"), tight).unwrap().begin("pi", None).unwrap_err();
    assert!(e.contains("over the cap"), "{e}");
}

#[test]
fn checkpoints_survive_reopening_and_home_is_refused() {
    let (ws, state) = rig("cp-reopen", true);
    let n = Checkpoints::open(&ws, &state, Limits::default()).unwrap().begin("pi", None).unwrap().0.n;
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
    let t = cp.begin("pi", None).unwrap().0;
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
    let t = cp.begin("pi", None).unwrap().0;
    std::fs::write(ws.join("sub/f"), "changed inside\n").unwrap();
    std::fs::write(ws.join("a.txt"), "x\n").unwrap();
    let ended = cp.end(t.n, &[]).unwrap();
    // The nested repository's files are its own: only a.txt is a change.
    assert_eq!(ended.changed, ["a.txt"]);
}
