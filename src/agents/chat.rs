//! Every agent in a chat over ACP (`:PiIde chat claude|copilot|gemini|…`, chat/acp/), as one
//! entry: the core sees them alike, as the chat's own client in this process (server/local.rs),
//! and no socket of ours is reached. The chat speaks ACP on the agent's stdio and brings each
//! change the agent proposes here as a call of one of these review tools: so a chat's review is
//! the same state machine, shown and answered as every other agent's.

use serde_json::Value;

use super::{Agent, Lockfile, Transport};
use crate::protocol::tools::{Hook, Param, ReviewArgs, Shape, Tool, Ty, Writes, PLAIN};

pub static AGENT: Agent = Agent {
    name: "chat",
    transport: Transport::InProcess,
    lockfile: Lockfile::None,
    tools: TOOLS,
    answers: &[],
    notification: no_notifications,
    takes_requests: false,
    listening_after: None,
};

/// A permission that carries a change: the agent writes its own proposal after the allow; the
/// chat then sets the file to the text the user accepted.
pub static PERMISSION: &Tool = &TOOLS[0];
/// `fs/write_text_file`: we write what the user accepted, edits included.
pub static WRITE: &Tool = &TOOLS[1];

const PARAMS: &[Param] = &[
    Param { name: "tab", ty: Ty::String, required: true, description: "The review's name." },
    Param { name: "path", ty: Ty::String, required: true, description: "Absolute path of the file." },
    Param { name: "contents", ty: Ty::String, required: true, description: "The whole file as proposed." },
];

static TOOLS: &[Tool] = &[
    Tool {
        name: "acp_permission",
        description: "A change an ACP agent asks permission for (it writes the file itself).",
        params: PARAMS,
        shape: Shape::Texts,
        hook: Hook::Review(&AGENT_WRITES),
        ..PLAIN
    },
    Tool {
        name: "acp_write",
        description: "A file an ACP agent asks the editor to write.",
        params: PARAMS,
        shape: Shape::Texts,
        hook: Hook::Review(&WE_WRITE),
        ..PLAIN
    },
];

static AGENT_WRITES: ReviewArgs = ReviewArgs {
    tab: "tab",
    path: "path",
    old_path: None,
    contents: "contents",
    writes: Writes::ProposalThenChat,
    reports_trigger: false,
};
static WE_WRITE: ReviewArgs = ReviewArgs { writes: Writes::AcceptedByChat, ..AGENT_WRITES };

/// What the chat does with the user's verdict (called once, from any thread).
pub type Done = Box<dyn FnOnce(crate::protocol::tools::Verdict) + Send>;

/// A change to review, as the chat worked it out: the whole file as it will be.
pub struct Proposal {
    /// Unique among the chat's reviews.
    pub tab: String,
    pub path: String,
    pub contents: String,
    /// The agent writes its own proposal after the allow (a permission), not the text accepted.
    pub agent_writes: bool,
}

fn no_notifications(_method: &str, _params: &Value) -> Option<String> {
    None
}
