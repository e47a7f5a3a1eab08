//! A review judges the file a write lands in, never the path as written: a link is named with
//! where it leads, a link out of the workspace is warned as an outside path is, and a link put
//! there after the review opened refuses the accept (support/real.rs, features/review/stale.lua).

use crate::harness::*;

/// How Neovim names `path` (the winbar's `:~:.`), with its links resolved.
fn shown_as(nvim: &Nvim, path: &std::path::Path) -> String {
    let real = std::fs::canonicalize(path).unwrap();
    let name = nvim.lua_with("return vim.fn.fnamemodify(..., ':~:.')", vec![real.to_string_lossy().into()]);
    name.as_str().unwrap().to_owned()
}

/// The left pane's winbar.
fn left_winbar(nvim: &Nvim) -> String {
    nvim.lua("return vim.wo[vim.fn.win_getid(vim.fn.winnr('h'))].winbar").as_str().unwrap().to_owned()
}

/// A folder outside Neovim's, holding `name` with `text`.
fn outside_file(name: &str, text: &str) -> std::path::PathBuf {
    let f = pi_ide_testkit::nvim::temp_dir("review-outside").join(name);
    std::fs::write(&f, text).unwrap();
    f
}

#[test]
fn an_opendiff_of_a_link_names_where_it_leads_and_warns_when_that_is_outside() {
    let nvim = Nvim::start();
    nvim.command("set columns=220").unwrap();
    let profile = outside_file("profile.sh", "export A=1\n");
    std::os::unix::fs::symlink(&profile, nvim.cwd.join("notes.txt")).unwrap();
    let notes = nvim.cwd.join("notes.txt").to_string_lossy().into_owned();
    let mut p = nvim.peer();
    open_review(&nvim, &mut p, "n1", &notes, "export A=1\nhi\n", "notes", 1);
    hunks_counted(&nvim);
    let named = format!("notes.txt → {}", shown_as(&nvim, &profile));
    for bar in [winbar(&nvim), left_winbar(&nvim)] {
        assert!(bar.contains(&named), "{bar}");
    }
    assert!(winbar(&nvim).contains("+1 −0") && winbar(&nvim).contains("⚠ outside the workspace"), "{}", winbar(&nvim));
    // At 80 columns each pane is 40 wide and its bar is cut after the file's name: the warning
    // comes first, so that it is what stays on screen.
    nvim.command("set columns=80").unwrap();
    for bar in [winbar(&nvim), left_winbar(&nvim)] {
        assert!(bar.starts_with(" ⚠ outside the workspace: notes.txt"), "{bar}");
    }
    // As for an outside path: the warning is on screen, and :w accepts (the agent writes it).
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "n1"), ["FILE_SAVED", "export A=1\nhi\n"]);
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", PATIENCE);
    // A link within the workspace is named, and not warned.
    file_with(&nvim, "b.txt", "b\n");
    std::os::unix::fs::symlink(nvim.cwd.join("b.txt"), nvim.cwd.join("a.txt")).unwrap();
    open_review(&nvim, &mut p, "n2", &nvim.cwd.join("a.txt").to_string_lossy(), "B\n", "a", 1);
    hunks_counted(&nvim);
    assert!(winbar(&nvim).contains("a.txt → b.txt") && !winbar(&nvim).contains("outside"), "{}", winbar(&nvim));
    type_keys(&nvim, ":q<CR>");
    assert_eq!(review_answer(&mut p, "n2")[0], "DIFF_REJECTED");
}

#[test]
fn an_opendiff_whose_file_became_a_link_since_it_opened_is_refused_even_to_the_same_text() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let mut p = nvim.peer();
    // A plain file, swapped for a link to a file outside with the very same text.
    let victim = outside_file("victim.txt", "same\n");
    let plain = file_with(&nvim, "plain.txt", "same\n");
    open_review(&nvim, &mut p, "l1", &plain, "same\nmore\n", "plain", 1);
    hunks_counted(&nvim);
    std::fs::remove_file(&plain).unwrap();
    std::os::unix::fs::symlink(&victim, &plain).unwrap();
    type_accept(&nvim, ":w<CR>");
    let said = format!("plain.txt changed on disk since this review opened: it is a link to {} now", shown_as(&nvim, &victim));
    nvim.wait_t("has_note", json!([said]), PATIENCE);
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(1), "the review stays open");
    type_keys(&nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(&mut p, "l1")[0], "DIFF_REJECTED");
    // No file when it opened, a link by the :w.
    let new = nvim.cwd.join("new.txt").to_string_lossy().into_owned();
    open_review(&nvim, &mut p, "l2", &new, "fresh\n", "new", 1);
    hunks_counted(&nvim);
    std::os::unix::fs::symlink(&victim, &new).unwrap();
    type_accept(&nvim, ":w<CR>");
    nvim.wait_t("has_note", json!(["new.txt changed on disk since this review opened: it is a link to"]), PATIENCE);
    type_keys(&nvim, ":PiIde reject<CR>");
    assert_eq!(review_answer(&mut p, "l2")[0], "DIFF_REJECTED");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "same\n");
}

#[test]
fn a_relative_path_from_an_agent_that_named_no_folder_is_rejected_and_said() {
    let nvim = Nvim::start();
    nvim.record_notify();
    file_with(&nvim, "rel.txt", "neovim's\n");
    let mut p = nvim.peer();
    p.send_json(&open_diff_call("r1", "rel.txt", "x\n", "rel")).unwrap();
    assert_eq!(review_answer(&mut p, "r1")[0], "DIFF_REJECTED");
    nvim.wait_t("has_note", json!(["cannot review a write to rel.txt: it is a relative path"]), PATIENCE);
    assert_eq!(nvim.lua("return #require('pi-ide.features.review').list()"), json!(0));
}

#[test]
fn a_new_file_behind_a_dangling_link_is_accepted_while_the_link_stays_as_it_was() {
    let nvim = Nvim::start();
    nvim.record_notify();
    let mut p = nvim.peer();
    std::fs::create_dir_all(nvim.cwd.join("sub")).unwrap();
    let link = nvim.cwd.join("later.txt");
    std::os::unix::fs::symlink(nvim.cwd.join("sub/later.txt"), &link).unwrap();
    open_review(&nvim, &mut p, "d", &link.to_string_lossy(), "made\n", "dangling", 1);
    hunks_counted(&nvim);
    type_accept(&nvim, ":w<CR>");
    assert_eq!(review_answer(&mut p, "d"), vec!["FILE_SAVED".to_string(), "made\n".to_string()]);
    assert!(!nvim.notes().iter().any(|n| n.contains("changed on disk")), "{:?}", nvim.notes());
}
