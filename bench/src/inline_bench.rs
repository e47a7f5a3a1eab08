//! The inline review (review.layout = "inline") against the two panes, on the same 5 MiB file
//! with 500 one-line hunks, open in the window: frame sent -> the review shown (the plugin's
//! PiIdeReviewOpened: the inline view drawn, or both panes in diff mode), the two layouts
//! alternating so that the machine's drift falls on both alike.

use std::time::Duration;

use pi_ide_testkit::{Nvim, Peer};
use serde_json::json;

/// One review of `contents`: frame sent -> shown (ms), the longest main-thread stall meanwhile
/// (ms), and the tabs then (1: inline, 2: two panes in a tab); then rejected, and gone.
fn shown_once(nvim: &Nvim, p: &mut Peer, id: usize, path: &str, contents: &str, decided: &mut Vec<f64>) -> (f64, f64, u64) {
    nvim.lua("__b.opened = 0 __b.max = 0 __b.last = vim.uv.hrtime()");
    let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": format!("inline:{id}")}}})
    .to_string();
    let sent = crate::monotonic_ns();
    p.send_text(&frame).unwrap();
    nvim.wait_for("__b.opened > 0", Duration::from_secs(60));
    // Let the loop run a little after, so a stall right after showing is seen too.
    std::thread::sleep(Duration::from_millis(100));
    let v = nvim.lua("return { __b.opened, __b.max }");
    let (opened, stall) = (v[0].as_f64().unwrap(), v[1].as_f64().unwrap() / 1e6 - 2.0);
    let tabs = nvim.lua("return #vim.api.nvim_list_tabpages()").as_u64().unwrap();
    if tabs == 1 {
        decided.extend(decide_times(nvim));
    }
    nvim.command("PiIde reject").unwrap();
    p.wait_response(&json!(id)).unwrap();
    nvim.wait_for(
        "#require('pi-ide.features.review').list() == 0 and #vim.api.nvim_list_tabpages() == 1",
        Duration::from_secs(10),
    );
    ((opened - sent) / 1e6, stall, tabs)
}

// The main thread's time to decide a hunk in the middle of the file, inline (ms): rejected,
// then accepted again (the view is drawn again each time).
fn decide_times(nvim: &Nvim) -> Vec<f64> {
    // The 250th hunk's line (diff_files puts hunk h at h * step + step / 2).
    let step = 5 * 1024 * 1024 / 66 / 500;
    nvim.lua_with("vim.api.nvim_win_set_cursor(0, { ..., 0 })", vec![(250 * step + step / 2 + 1).into()]);
    ["reject", "accept"]
        .iter()
        .map(|action| {
            let lua = "local t = vim.uv.hrtime() vim.cmd('PiIde hunk ' .. ...) return (vim.uv.hrtime() - t) / 1e6";
            let ms = nvim.lua_with(lua, vec![(*action).into()]).as_f64().unwrap();
            let kept = if *action == "reject" { "499 of 500" } else { "500 of 500" };
            assert!(nvim.lua("return vim.wo.winbar").as_str().unwrap().contains(kept), "the hunk was not decided");
            ms
        })
        .collect()
}

/// `runs` samples of each (ms): the inline view shown and the two panes shown (medians), and
/// the longest main-thread stall of each; and the median time to decide a hunk inline.
pub fn inline_vs_panes(runs: usize) -> ((f64, f64), (f64, f64), f64) {
    let nvim = Nvim::start();
    let (path, new) = crate::diff_files(&nvim.cwd, "inline500.rs", 5 * 1024 * 1024 / 66, 500);
    nvim.lua_with("vim.cmd.edit(...)", vec![path.clone().into()]);
    nvim.t("bench.review_timer", json!([]));
    let mut p = nvim.peer();
    let (mut inline, mut panes, mut stalls, mut decided) = (Vec::new(), Vec::new(), [0.0f64; 2], Vec::new());
    for i in 0..runs * 2 {
        let layout = if i % 2 == 0 { "inline" } else { "tab" };
        nvim.lua_with("require('pi-ide.core.config').values.review.layout = ...", vec![layout.into()]);
        let (ms, stall, tabs) = shown_once(&nvim, &mut p, i, &path, &new, &mut decided);
        assert_eq!(tabs, if layout == "inline" { 1 } else { 2 }, "{layout}: not shown as asked");
        stalls[i % 2] = stalls[i % 2].max(stall);
        if layout == "inline" {
            inline.push(ms);
        } else {
            panes.push(ms);
        }
    }
    nvim.lua("__b.timer:stop() __b.timer:close()");
    ((crate::median(inline), stalls[0]), (crate::median(panes), stalls[1]), crate::median(decided))
}
