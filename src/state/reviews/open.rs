//! openDiff, the core's part (the tool's [`Hook::Review`](crate::protocol::tools::Hook)): bounds per
//! client, staging the proposal and the file it replaces on a worker (diff.rs), parking the
//! call for Lua, and diffing for the winbar's numbers while Lua opens the review.
//!
//! Every way out answers: a review the user cannot see (reviews off: FILE_SAVED at once, as
//! configured; the editor stopping, the bounds, a failed or hung staging: DIFF_REJECTED with a
//! notice) is answered here; the rest is answered by Lua or by the close path.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::state::Shared;
use crate::state::events::{Event, Level};
use crate::protocol::jsonrpc::{self, Id};
use crate::support::resolve::{Resolved, PROBE_DEADLINE};
use crate::protocol::tools::Tool;

/// Reviews one client may have waiting for the user; beyond it DIFF_REJECTED at once.
pub const MAX_PENDING: usize = 8;

/// Staging reads the file on disk and writes two private copies; a mount that does not answer
/// must not hold the agent's call for ever.
pub const STAGE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a review waits for another one's staging to end.
pub const STAGE_WAIT: Duration = Duration::from_secs(2);

/// Bytes one client's waiting reviews may hold staged (in `stdpath("run")`, often RAM): one
/// review of the largest size accepted, with the file it replaces. Staged files go as soon as
/// Lua has loaded them, so this only binds reviews not shown yet.
pub fn max_staged_bytes(shared: &Shared) -> u64 {
    2 * shared.max_message_size as u64
}

/// Handles an openDiff call; returns the answer to send now, if it is answered now.
pub async fn open(
    client: u64,
    id: Id,
    tool: &'static Tool,
    args: Value,
    shared: &Arc<Shared>,
) -> Option<String> {
    let context = tool.abandon_context(&args);
    let reject = |why: Option<String>| {
        let shared = shared.clone();
        let frame = jsonrpc::outcome_frame(&id, &tool.abandoned(context.as_deref()));
        async move {
            if let Some(why) = why {
                shared.events.notice("review-refused", Level::Warn, why).await;
            }
            Some(frame)
        }
    };
    if !shared.diff_review() {
        // The user chose no review: accept the proposal as it is, at once.
        let contents = args["new_file_contents"].clone();
        let outcome = tool.finish(json!(["FILE_SAVED", contents]), context.as_deref());
        return Some(jsonrpc::outcome_frame(&id, &outcome));
    }
    if shared.is_stopping() {
        // Arrived while stopping: nothing will show it; no need to stage it.
        return reject(None).await;
    }
    if let Some(why) = over_bounds(client, tool, &args, shared) {
        return reject(Some(why)).await;
    }
    // Until it is parked for Lua (the end of this function), a close_tab of it is remembered.
    let _opening = shared
        .opening
        .begin(client, args["tab_name"].as_str().unwrap_or_default());
    let path = path_arg(&args);
    let probe = crate::support::resolve::PROBE.resolve(std::path::Path::new(&path), PROBE_DEADLINE);
    if probe.await == Resolved::TimedOut {
        let why = format!(
            "{path} did not answer within {} s (a slow or unreachable mount?): the change was rejected",
            PROBE_DEADLINE.as_secs()
        );
        return reject(Some(why)).await;
    }
    let file = shared
        .stage_dir
        .join(format!("{}.proposal", shared.next_id()));
    // Staging reads the file on disk (up to max_message_size, whatever the proposal's size) and
    // may meet a slow filesystem: always on a worker, so that other clients are never kept
    // waiting, and so that a panic there is a JoinError answered DIFF_REJECTED below. One at a
    // time: a read stuck on a hung mount keeps its permit, and later reviews are refused after
    // a short wait rather than queued with their proposals in memory.
    let permit = tokio::select! {
        p = tokio::time::timeout(STAGE_WAIT, shared.staging.clone().acquire_owned()) => p.ok().and_then(Result::ok),
        _ = shared.until_stopping() => None,
    };
    let Some(permit) = permit else {
        let why = (!shared.is_stopping()).then(|| {
            format!("the editor is still reading another file (a slow or unreachable mount?): the change to {path} was rejected")
        });
        return reject(why).await;
    };
    let limit = shared.max_message_size;
    let staging = tokio::task::spawn_blocking(move || {
        let staged = crate::state::reviews::stage::stage(args, file, limit);
        drop(permit);
        staged
    });
    let staged = tokio::select! {
        s = tokio::time::timeout(STAGE_DEADLINE, staging) => s,
        _ = shared.until_stopping() => return reject(None).await,
    };
    let staged = match staged {
        Ok(Ok(staged)) => staged,
        Ok(Err(_)) => return reject(Some(format!("staging the review of {path} failed"))).await,
        Err(_) => {
            let why = format!(
                "reading {path} took longer than {} s (a slow or unreachable mount?): the change was rejected",
                STAGE_DEADLINE.as_secs()
            );
            return reject(Some(why)).await;
        }
    };
    let crate::state::reviews::stage::Staged {
        args,
        old,
        contents,
        refused,
        mut files,
    } = staged;
    let bytes = (old.len() + contents.len()) as u64;
    let req = shared
        .park_staged(client, id, tool, args, files.take(), bytes)
        .await;
    if !refused {
        let shared = shared.clone();
        tokio::task::spawn_blocking(move || {
            let stats = crate::state::reviews::stage::stats_for(&old, &contents);
            shared.events.push_blocking(Event::DiffStats { req, stats });
        });
    }
    None
}

fn path_arg(args: &Value) -> String {
    args.get("new_file_path")
        .and_then(Value::as_str)
        .unwrap_or("(no path)")
        .to_owned()
}

/// Why this call is over the client's bounds (pending reviews, staged bytes), if it is.
fn over_bounds(client: u64, tool: &Tool, args: &Value, shared: &Shared) -> Option<String> {
    let (pending, staged) = shared.load_of(client, tool.name);
    let path = path_arg(args);
    if pending >= MAX_PENDING {
        return Some(format!(
            "the agent has {pending} reviews waiting already (at most {MAX_PENDING}): the change to {path} was rejected"
        ));
    }
    let size = args["new_file_contents"].as_str().map_or(0, str::len) as u64;
    let max = max_staged_bytes(shared);
    if staged + size > max {
        return Some(format!(
            "the agent's waiting reviews hold {} MiB already (at most {} MiB): the change to {path} was rejected",
            staged >> 20,
            max >> 20
        ));
    }
    None
}
