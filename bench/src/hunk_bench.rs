//! Deciding one hunk of a large review: a 5 MiB file whose proposal changes 500 lines (500
//! hunks), `:PiIde hunk reject` then `:PiIde hunk accept` on a hunk in its middle, each timed on
//! Neovim's main thread with the redraw it causes (Neovim's own update of the diff included).

use std::path::Path;
use std::time::Duration;

use pi_ide_testkit::nvim::Nvim;
use serde_json::json;

/// The proposal's hunks: lines changed, spread evenly over the file.
pub const HUNKS: usize = 500;

/// One decision's medians (ms), over `samples` rejects and as many accepts of one hunk, on the
/// review of `path` (`contents`: the proposal) opened through openDiff: as the user has it, the
/// plugin's part alone (diff mode off), and Neovim's own re-diff of the panes alone.
pub fn decide_a_hunk(nvim: &Nvim, path: &Path, contents: &str, samples: usize) -> (f64, f64, f64) {
    let mut p = nvim.peer();
    let frame = json!({"jsonrpc": "2.0", "id": "decide", "method": "tools/call", "params": {"name": "openDiff", "arguments": {
        "old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": "bench:decide"}}})
    .to_string();
    p.send_text(&frame).unwrap();
    let ready = "(require('pi-ide.features.review').current() or {}).shown and require('pi-ide.features.review').current().hunks ~= nil";
    nvim.wait_for(ready, Duration::from_secs(60));
    let v = nvim.t("bench.decide_hunk", json!([samples]));
    let count = v["hunks"].as_u64().unwrap_or(0);
    assert_eq!(count, HUNKS as u64, "the review's hunks: {v}");
    let median = |key: &str| {
        let mut ms: Vec<f64> = v[key].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let times = (median("total"), median("ours"), median("rediff"));
    nvim.command("PiIde reject").unwrap();
    p.wait_response(&json!("decide")).unwrap();
    nvim.wait_for("#require('pi-ide.features.review').list() == 0", Duration::from_secs(10));
    times
}

/// The benchmark's row, beside the two-pane review's time to both panes (`shown`, ms).
pub fn row(nvim: &Nvim, quick: bool, shown: f64) -> String {
    let (path, contents) = crate::diff_files(&nvim.cwd, "hunks.rs", 5 * 1024 * 1024 / 66, HUNKS);
    let (total, ours, rediff) = decide_a_hunk(nvim, Path::new(&path), &contents, if quick { 5 } else { 15 });
    format!(
        "| decide a hunk, 5 MiB / {HUNKS} hunks (:PiIde hunk reject, then accept; main thread with the redraw, median) | {total:.1} ms: the plugin's part {ours:.1} ms, Neovim's own re-diff of the panes {rediff:.1} ms (as for any typed change; the review to both panes: {shown:.0} ms) | ≤ 20 ms for the plugin's part (Neovim's re-diff is the floor) |"
    )
}
