//! The way in: a call of an agent's review tool (openDiff, or an agent's own; the tool's
//! [`Hook::Review`](crate::protocol::tools::Hook) names its arguments). The review is begun
//! within the client's bounds (taking the place of one of the same name), its proposal and the
//! file it replaces are staged on a worker, it is handed to Lua, and its numbers are counted
//! while Lua shows it.
//!
//! A review the user cannot see is answered here: reviews off (FILE_SAVED at once, as
//! configured); the editor stopping, the bounds, a refused, failed or hung staging
//! (DIFF_REJECTED, with a notice). The rest is answered by its ways out (flows.rs, leaving.rs).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::own_write::Watched;
use super::stage::{stage, Staged};
use super::{Begin, Review};
use crate::protocol::jsonrpc::{self, Id};
use crate::protocol::tools::{ReviewArgs, Tool, Verdict, Writes};
use crate::state::events::{Event, Level, ReviewOpened};
use crate::state::Shared;
use crate::support::resolve::{Resolved, PROBE, PROBE_DEADLINE};

/// Staging reads the file on disk and writes two private copies; a mount that does not answer
/// must not hold the agent's call for ever.
pub const STAGE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a review waits for another one's staging to end.
pub const STAGE_WAIT: Duration = Duration::from_secs(2);

/// Bytes one client's waiting reviews may hold staged (in `stdpath("run")`, often RAM): one
/// review of the largest size accepted, with the file it replaces. Staged files go as soon as
/// Lua has read them, so this only binds reviews not shown yet.
pub fn max_staged_bytes(shared: &Shared) -> u64 {
    2 * shared.max_message_size as u64
}

/// What the call asks for, by the tool's names for its arguments.
struct Proposal {
    tab: String,
    path: String,
    old_path: String,
    contents: String,
}

impl Proposal {
    fn of(review: &ReviewArgs, mut args: Value) -> Proposal {
        let path = review.get(&args, review.path).to_owned();
        let old_path = review.old_path.map_or(path.clone(), |k| review.get(&args, k).to_owned());
        let contents = match args.get_mut(review.contents).map(Value::take) {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        Proposal { tab: review.get(&args, review.tab).to_owned(), path, old_path, contents }
    }

    /// Its paths made absolute ([`absolute`]; `folder`: the client's). Err: the file's cannot be.
    fn make_absolute(&mut self, folder: Option<&Path>) -> Result<(), String> {
        self.path = absolute(&self.path, folder)?;
        self.old_path = absolute(&self.old_path, folder).unwrap_or_else(|_| self.path.clone());
        Ok(())
    }
}

/// Handles a call of a review tool; returns the answer to send now, if it is answered now.
pub async fn open(client: u64, id: Id, tool: &'static Tool, args: Value, shared: &Arc<Shared>) -> Option<String> {
    let review = tool.review()?;
    let mut p = Proposal::of(review, args);
    let named = p.make_absolute(shared.clients.folder_of(client).as_deref());
    let agent = shared.clients.agent_of(client);
    let answer_now = |verdict: Verdict| {
        let outcome = tool.owed(agent.shape(tool, review.answer(&verdict, &p.tab), Some(&p.tab)), Some(&p.tab));
        Some(jsonrpc::outcome_frame(&id, &outcome))
    };
    if !shared.review_enabled() {
        // The user chose no review: accept the proposal as it is, at once.
        return answer_now(Verdict::Accepted(p.contents.clone(), None));
    }
    if shared.is_stopping() {
        // Arrived while stopping: nothing will show it; no need to stage it.
        return answer_now(Verdict::Rejected);
    }
    if let Err(why) = named {
        shared.events.notice("review-refused", Level::Warn, format!("{why}: the change was rejected")).await;
        return answer_now(Verdict::Rejected);
    }
    let req = shared.next_id();
    let begin = Begin {
        req,
        client,
        id: id.clone(),
        tool,
        tab: &p.tab,
        size: p.contents.len() as u64,
        max_bytes: max_staged_bytes(shared),
    };
    match shared.reviews.begin(begin) {
        Err(why) => {
            let why = format!("{why}: the change to {} was rejected", p.path);
            shared.events.notice("review-refused", Level::Warn, why).await;
            return answer_now(Verdict::Rejected);
        }
        Ok(Some(superseded)) => supersede(shared, &superseded).await,
        Ok(None) => {}
    }
    // From here the review is in the table: its ways out answer it, and so does a failure here.
    let contents = std::mem::take(&mut p.contents);
    let watch = matches!(review.writes, Writes::ProposalWatched { .. });
    match stage_on_worker(shared, &p.path, contents, watch).await {
        Ok((staged, watched)) => {
            if let Some(w) = watched {
                shared.reviews.watch(req, w);
            }
            hand_to_lua(shared, (req, client), review, p, staged).await
        }
        Err(why) => fail(shared, req, why).await,
    }
    None
}

/// The file an agent's path names, absolute: a `file://` URI's path, `~` the home folder, a
/// relative path below the folder the client said it works in (pi-ide-mcp says its own). A
/// relative path of a client that said none names no file for certain (the agent writes it
/// against a folder we do not know): Err, why.
fn absolute(path: &str, folder: Option<&Path>) -> Result<String, String> {
    let path = crate::protocol::tools::uri_path(path);
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    let full = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => home().map(|h| h.join(rest.trim_start_matches('/'))),
        _ if Path::new(&path).is_absolute() => Some(PathBuf::from(&path)),
        _ => folder.map(|f| f.join(&path)),
    };
    let why = || format!("cannot review a write to {path}: it is a relative path, and the agent did not say what it is relative to");
    full.map(|f| f.to_string_lossy().into_owned()).ok_or_else(why)
}

/// Another review took the name of `old`: it is answered as closed by its agent.
async fn supersede(shared: &Shared, old: &Review) {
    shared.answer_review(old, &Verdict::Closed);
    if let Some(event) = super::ended(old, "rejected", None) {
        shared.events.push(event).await;
    }
}

/// Review `req` cannot be shown: it is rejected, and the user told why (unless the editor is
/// stopping).
async fn fail(shared: &Shared, req: u64, why: Option<String>) {
    if let Some(r) = shared.reviews.take(req) {
        shared.answer_review(&r, &Verdict::Rejected);
    }
    if let Some(why) = why.filter(|_| !shared.is_stopping()) {
        shared.events.notice("review-refused", Level::Error, why).await;
    }
}

/// Stages on a worker, one at a time, within the deadlines: staging reads the file on disk (up
/// to max_message_size, whatever the proposal's size) and may meet a slow filesystem, so it
/// never keeps other clients waiting, and a panic there is a JoinError. A read stuck on a hung
/// mount keeps its permit, and later reviews are refused after a short wait rather than queued
/// with their proposals in memory. `watch`: the file and the proposal are kept too, to watch
/// the agent's own write (own_write.rs). Err: why it failed (None: the editor is stopping).
async fn stage_on_worker(shared: &Arc<Shared>, path: &str, contents: String, watch: bool) -> Result<(Staged, Option<Watched>), Option<String>> {
    let probe = PROBE.resolve(std::path::Path::new(path), PROBE_DEADLINE);
    if probe.await == Resolved::TimedOut {
        let secs = PROBE_DEADLINE.as_secs();
        return Err(Some(format!("{path} did not answer within {secs} s (a slow or unreachable mount?): the change was rejected")));
    }
    let permit = tokio::select! {
        p = tokio::time::timeout(STAGE_WAIT, shared.staging.clone().acquire_owned()) => p.ok().and_then(Result::ok),
        _ = shared.until_stopping() => None,
    };
    let Some(permit) = permit else {
        let why = format!("the editor is still reading another file (a slow or unreachable mount?): the change to {path} was rejected");
        return Err((!shared.is_stopping()).then_some(why));
    };
    let (file, limit, owned) = (shared.stage_dir.join(format!("{}.proposal", shared.next_id())), shared.max_message_size, path.to_owned());
    let staging = tokio::task::spawn_blocking(move || {
        let watched = watch.then(|| Watched::look(&owned, &contents)).transpose();
        let staged = stage(&owned, contents, file, limit);
        drop(permit);
        watched.map(|w| (staged, w))
    });
    let staged = tokio::select! {
        s = tokio::time::timeout(STAGE_DEADLINE, staging) => s,
        _ = shared.until_stopping() => return Err(None),
    };
    match staged {
        Ok(Ok(Ok(staged))) => Ok(staged),
        Ok(Ok(Err(why))) => Err(Some(format!("cannot review a write to {path}: {why}; the change was rejected"))),
        Ok(Err(_)) => Err(Some(format!("staging the review of {path} failed"))),
        Err(_) => {
            let secs = STAGE_DEADLINE.as_secs();
            Err(Some(format!("reading {path} took longer than {secs} s (a slow or unreachable mount?): the change was rejected")))
        }
    }
}

/// The review waits for the user now: Lua is told, and its numbers are counted meanwhile (with
/// the blob of the file as read: an accept after the file changed on disk is refused). A
/// staging that was refused (not a file to review) or failed is rejected instead.
async fn hand_to_lua(shared: &Arc<Shared>, (req, client): (u64, u64), review: &ReviewArgs, p: Proposal, staged: Staged) {
    let Staged { view, old, contents, left, refused, files } = staged;
    if let Some(why) = view.stage_error.clone() {
        return fail(shared, req, Some(format!("{why}; the change was rejected"))).await;
    }
    let bytes = (old.len() + contents.len()) as u64;
    if !shared.reviews.staged(req, files, bytes, left) {
        return; // ended while staging (closed, superseded, its client gone): answered already
    }
    let (tab_name, path, old_path, agent_writes) = (p.tab, p.path, p.old_path, review.writes.its_proposal());
    // The file as read (its byte order mark back on), if it was: its blob goes with the stats.
    let read = (view.old.exists && view.old.error.is_none()).then_some(view.old.bom);
    let opened = ReviewOpened { req, client, tab_name, path, old_path, agent_writes, staged: view };
    if !shared.events.push(Event::ReviewOpened(opened)).await {
        return fail(shared, req, None).await; // stopping: the queue is closed
    }
    if !refused {
        let shared = shared.clone();
        tokio::task::spawn_blocking(move || {
            let mut stats = super::stats::stats_for(&old, &contents);
            if let Some(bom) = read {
                stats["old_blob"] = super::stats::blob_as_read(&old, bom).into();
                stats["old_size"] = (old.len() + if bom { 3 } else { 0 }).into();
            }
            shared.events.push_blocking(Event::ReviewStats { req, stats });
        });
    }
}
