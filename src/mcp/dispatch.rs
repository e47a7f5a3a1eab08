//! The MCP core every transport hands its messages to: one JSON-RPC message in, the frames to
//! send back now out. It parses the envelope, dispatches MCP methods (methods.rs), and carries a
//! tool call out as its entry's hook says (protocol/tools/: parked for Lua, answered from the
//! diagnostics snapshot, or a review). Transports only move bytes; none looks at a tool's
//! name.

use std::sync::Arc;

use futures_util::FutureExt;

use crate::agents::Agent;
use crate::state::Shared;
use crate::state::events::Event;
use crate::state::reviews::left::Kept;
use crate::protocol::jsonrpc::{self, Id, Incoming, RpcError};
use crate::mcp::methods::{self as mcp, Dispatch, Session};
use crate::protocol::tools::{Hook, Tool, Verdict};
use crate::{debug, error, info};

/// Handles one message; returns the frames to send now, in order.
pub async fn handle_text(
    text: &str,
    client: u64,
    shared: &Arc<Shared>,
    session: &mut Session,
) -> Vec<String> {
    handle(jsonrpc::parse(text), text, client, shared, session).await
}

/// [`handle_text`] for a message its transport has parsed already (to know whether an answer
/// will follow); `text` is what arrived.
pub async fn handle(
    incoming: Incoming,
    text: &str,
    client: u64,
    shared: &Arc<Shared>,
    session: &mut Session,
) -> Vec<String> {
    match incoming {
        Incoming::Request { id, method, params } => {
            crate::support::failpoint::panic_on(&method);
            request(id, method, params, client, shared, session).await
        }
        Incoming::Notification { method, params } => {
            if method == "notifications/cancelled" {
                cancelled(params.as_ref(), client, shared).await;
            } else if !mcp::handle_notification(session.agent, &method) {
                debug!("client {client}: ignored notification {method}");
            }
            if mcp::wants_selection_again(session.agent, &method) {
                if let Some(frame) = shared.selection_frame_for(session.agent) {
                    shared.clients.selection_to(client, frame);
                }
            }
            vec![]
        }
        Incoming::Response { id, outcome } => {
            if let Some(event) = shared.answer(client, &id, outcome) {
                shared.events.push(event).await;
            }
            vec![]
        }
        Incoming::Invalid { id, error } => invalid(id, error, text, client, session.agent),
    }
}

/// `notifications/cancelled`: the client gave up waiting for a call; a review it opened is
/// taken away in Neovim (rejected), a call parked for Lua is abandoned.
async fn cancelled(params: Option<&serde_json::Value>, client: u64, shared: &Arc<Shared>) {
    let raw = params.and_then(|p| p.get("requestId")).map(|id| id.to_string());
    let Some(id) = raw.as_deref().and_then(Id::from_raw) else {
        return debug!("client {client}: notifications/cancelled without a requestId");
    };
    for event in shared.abandon_call(client, &id) {
        shared.events.push(event).await;
    }
}

/// A message that is not valid JSON-RPC: an error, or the rejection owed to an openDiff in a
/// malformed envelope (it is still an openDiff to the agent).
fn invalid(id: Option<Id>, error: RpcError, text: &str, client: u64, agent: &Agent) -> Vec<String> {
    debug!("client {client}: {}", error.message);
    let owed = id.as_ref().and_then(|_| {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        owed_by(agent, v.get("method")?.as_str()?, v.get("params"))
    });
    match (id, owed) {
        (Some(id), Some((tool, context))) => {
            vec![jsonrpc::outcome_frame(&id, &tool.owed(Err(error), context.as_deref()))]
        }
        (id, _) => vec![jsonrpc::error_frame(id.as_ref(), &error)],
    }
}

async fn request(
    id: Id,
    method: String,
    params: Option<serde_json::Value>,
    client: u64,
    shared: &Arc<Shared>,
    session: &mut Session,
) -> Vec<String> {
    // A call of a tool whose failures must read as a rejection (openDiff), and the context of
    // that rejection, in case handling it panics below.
    let owed = owed_by(session.agent, &method, params.as_ref());
    let dispatched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mcp::handle_request(session, &method, params)
    }));
    match dispatched {
        Ok(Dispatch::Reply(outcome)) => {
            let mut frames = vec![jsonrpc::outcome_frame(&id, &outcome)];
            if method == "initialize" {
                frames.extend(initialized(client, shared, session).await);
            }
            frames
        }
        Ok(Dispatch::Park { tool, args }) => {
            let call = call_tool(client, id.clone(), tool, args, shared);
            match std::panic::AssertUnwindSafe(call).catch_unwind().await {
                Ok(frames) => frames,
                Err(_) => panicked(client, &method, &id, owed),
            }
        }
        Err(_) => panicked(client, &method, &id, owed),
    }
}

/// Handling a call panicked: it is answered all the same (an openDiff as a rejection).
fn panicked(
    client: u64,
    method: &str,
    id: &Id,
    owed: Option<(&'static Tool, Option<String>)>,
) -> Vec<String> {
    error!("client {client}: panic while handling {method}");
    let failed = Err(RpcError::internal("internal error"));
    let outcome = match owed {
        Some((tool, context)) => tool.owed(failed, context.as_deref()),
        None => failed,
    };
    vec![jsonrpc::outcome_frame(id, &outcome)]
}

/// For a message that arrives while its connection closes: the rejection owed to it when it
/// is a call of a tool whose failures must read as one (openDiff), else nothing.
pub fn owed_answer(agent: &Agent, text: &str) -> Option<String> {
    let (id, method, params) = match jsonrpc::parse(text) {
        Incoming::Request { id, method, params } => (id, method, params),
        Incoming::Invalid { id: Some(id), .. } => {
            let v: serde_json::Value = serde_json::from_str(text).ok()?;
            (id, v.get("method")?.as_str()?.to_owned(), v.get("params").cloned())
        }
        _ => return None,
    };
    let (tool, context) = owed_by(agent, &method, params.as_ref())?;
    let closing = Err(RpcError::internal("the connection is closing"));
    Some(jsonrpc::outcome_frame(&id, &tool.owed(closing, context.as_deref())))
}

/// A client said `initialize`: it gets notifications from now on, starting with what the user
/// is looking at (right after the handshake's answer, never before).
async fn initialized(client: u64, shared: &Arc<Shared>, session: &Session) -> Vec<String> {
    let (name, version) = (session.client_name.clone(), session.client_version.clone());
    shared
        .clients
        .mark_initialized(client, name.clone(), version.clone());
    shared.clients.set_folder(client, session.folder.clone());
    info!(
        "client {client} initialized: {}",
        name.as_deref().unwrap_or("(no name)")
    );
    let frames = shared.selection_frame_for(session.agent).into_iter().collect();
    let event = Event::ClientInitialized {
        client,
        name,
        version,
    };
    shared.events.push(event).await;
    frames
}

/// A valid tool call, carried out as its entry's hook says.
async fn call_tool(
    client: u64,
    id: Id,
    tool: &'static Tool,
    args: serde_json::Value,
    shared: &Arc<Shared>,
) -> Vec<String> {
    // An id that already names a call of this client that waits would make its answer ambiguous
    // (the agent could take it for the other's): refused at once, shown nowhere.
    if shared.call_waits(client, &id) {
        let why = RpcError::new(jsonrpc::INVALID_REQUEST, format!("the id {} is already in use by a call that waits for its answer", id.raw()));
        info!("client {client}: {} refused: {}", tool.name, why.message);
        let context = tool.abandon_context(&args);
        return vec![jsonrpc::outcome_frame(&id, &tool.owed(Err(why), context.as_deref()))];
    }
    if let Some(event) = shared.turn_began(client) {
        shared.events.push(event).await;
    }
    match tool.hook {
        Hook::Lua => {
            shared.park(client, id, tool, args).await;
            vec![]
        }
        Hook::CloseReviewKeepingText { tab } => close_keeping_text(client, id, tool, &args, tab, shared).await,
        // Before every model call of the agent's: answered here from the snapshot when it is
        // current, without waking Neovim.
        Hook::Snapshot => match crate::state::diagnostics::answer_bounded(&shared.diagnostics, &args).await {
            Some(v) => {
                let outcome = shared.clients.agent_of(client).shape(tool, v, None);
                vec![jsonrpc::outcome_frame(&id, &outcome)]
            }
            None => {
                shared.park(client, id, tool, args).await;
                vec![]
            }
        },
        Hook::Review(_) => crate::state::reviews::open::open(client, id, tool, args, shared)
            .await
            .into_iter()
            .collect(),
        Hook::CloseReview { tab } => {
            let tab = args.get(tab).and_then(serde_json::Value::as_str).unwrap_or_default();
            let (closed, ended) = shared.close_review(client, tab);
            if let Some(event) = ended {
                shared.events.push(event).await;
            }
            let report = serde_json::json!(["TAB_CLOSED", if closed { "closed" } else { "already_closed" }, tab]);
            vec![jsonrpc::outcome_frame(&id, &tool.finish(report, None))]
        }
        Hook::CloseAllReviews => {
            let (n, events) = shared.end_reviews_of(client, &Verdict::Closed);
            for event in events {
                shared.events.push(event).await;
            }
            let report = serde_json::json!(format!("CLOSED_{n}_DIFF_TABS"));
            vec![jsonrpc::outcome_frame(&id, &tool.finish(report, None))]
        }
        Hook::SessionName => {
            let name = args["name"].as_str().unwrap_or_default().to_owned();
            shared.clients.set_session_name(client, &name);
            shared.events.push(Event::SessionNamed { client, name }).await;
            let outcome = tool.finish(serde_json::json!({"success": true}), None);
            vec![jsonrpc::outcome_frame(&id, &outcome)]
        }
    }
}

/// Hook::CloseReviewKeepingText: answered at once with the text Lua last pushed; only when the
/// user changed it since does Lua read it (its handler knows reviews by name, not by the
/// agent's argument).
async fn close_keeping_text(
    client: u64,
    id: Id,
    tool: &'static Tool,
    args: &serde_json::Value,
    tab: &str,
    shared: &Arc<Shared>,
) -> Vec<String> {
    let name = args.get(tab).and_then(serde_json::Value::as_str).unwrap_or_default();
    let text = match shared.close_keeping_text(client, name) {
        Kept::Unknown => {
            shared.park(client, id, tool, serde_json::json!({ "tab": name })).await;
            return vec![];
        }
        Kept::NoReview => None,
        Kept::Closed(text, ended) => {
            if let Some(event) = ended {
                shared.events.push(event).await;
            }
            text
        }
    };
    vec![jsonrpc::outcome_frame(&id, &tool.finish(serde_json::json!(text), None))]
}

/// Whether `incoming` calls a tool answered at once whose answer goes later as a notification
/// ([`Tool::answered_later`]).
pub fn answered_later(agent: &Agent, incoming: &Incoming) -> bool {
    let Incoming::Request { method, params, .. } = incoming else { return false };
    let name = params.as_ref().and_then(|p| p.get("name")).and_then(serde_json::Value::as_str);
    method == "tools/call" && name.and_then(|n| agent.tool(n)).is_some_and(|t| t.answered_later)
}

/// The tool `incoming` calls and its arguments, when it is a tools/call of one of `agent`'s.
fn called<'a>(agent: &Agent, incoming: &'a Incoming) -> Option<(&'static Tool, &'a serde_json::Value)> {
    let Incoming::Request { method, params: Some(params), .. } = incoming else { return None };
    let tool = params.get("name").and_then(serde_json::Value::as_str).and_then(|n| agent.tool(n))?;
    (method == "tools/call").then_some((tool, params.get("arguments")?))
}

/// The review a call answered later opens, by the name its close gives.
pub fn later_tab(agent: &Agent, incoming: &Incoming) -> Option<String> {
    let (tool, args) = called(agent, incoming)?;
    let Hook::Review(review) = tool.hook else { return None };
    args.get(review.tab).and_then(serde_json::Value::as_str).map(str::to_owned)
}

/// The review a call closes quietly ([`Tool::quiet_when`]): its decision goes to nobody.
pub fn closed_quietly(agent: &Agent, incoming: &Incoming) -> Option<String> {
    let (tool, args) = called(agent, incoming)?;
    let (Hook::CloseReview { tab } | Hook::CloseReviewKeepingText { tab }, Some(flag)) = (tool.hook, tool.quiet_when) else {
        return None;
    };
    let quiet = args.get(flag).and_then(serde_json::Value::as_bool) == Some(true);
    args.get(tab).and_then(serde_json::Value::as_str).filter(|_| quiet).map(str::to_owned)
}

/// For a call of a tool whose failures must read as a rejection (a review): the tool and the
/// rejection's context, whatever else is wrong with the call.
pub fn owed_by(
    agent: &Agent,
    method: &str,
    params: Option<&serde_json::Value>,
) -> Option<(&'static Tool, Option<String>)> {
    if method != "tools/call" {
        return None;
    }
    let params = params?;
    let tool = agent.tool(params.get("name")?.as_str()?)?;
    tool.review()?;
    let context = params
        .get("arguments")
        .and_then(|a| tool.abandon_context(a));
    Some((tool, context))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_arrives_while_closing_gets_the_rejection_owed_and_nothing_else() {
        let call = r#"{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"openDiff","arguments":{"tab_name":"t"}}}"#;
        let a: serde_json::Value = serde_json::from_str(&owed_answer(crate::agents::HOME, call).unwrap()).unwrap();
        assert_eq!(a["id"], "d");
        assert_eq!(a["result"]["content"][0]["text"], "DIFF_REJECTED");
        assert_eq!(a["result"]["content"][1]["text"], "t");
        // Malformed, but an openDiff all the same.
        let bad = r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"openDiff","arguments":{"tab_name":"u"}}}"#;
        assert!(owed_answer(crate::agents::HOME, bad).unwrap().contains("DIFF_REJECTED"));
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getDiagnostics"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "not json",
        ] {
            assert!(owed_answer(crate::agents::HOME, other).is_none(), "{other}");
        }
    }
}
