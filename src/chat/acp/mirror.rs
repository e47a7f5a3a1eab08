//! An allowed change of a file the agent did not read through us, and the fs/write_text_file of
//! it that may follow. Some agents write their own proposal and mirror it as fs/write_text_file
//! without waiting: their entry says so (`writes_itself`, lua/pi-ide/agents/), and that mirror
//! is answered at once and written by no one here (landed.rs sets the user's text over the
//! agent's own write; two writers would race). Any other agent means what ACP says: the client
//! writes. One asks about a new file without reading it, then has us write it and writes nothing
//! itself: taken for a mirror, the accepted file would never appear. So what the user accepted
//! is written then, as for any write of ours. The agent is never watched for telling the two
//! apart: a timing would decide, and the loser's text would be lost.

use std::collections::HashMap;

use crate::support::reviewed_write::Seen;

/// What the user allowed of a change the agent was to write itself.
pub struct Mirror {
    /// The agent's proposal: only a write of exactly that is this change's.
    pub proposal: String,
    /// The tool call that asked.
    pub call: String,
    /// What the user accepted, the file as the review showed it, and what they did not keep.
    pub accepted: String,
    pub seen: Seen,
    pub note: Option<String>,
}

/// Few are kept (an agent that never mirrors leaves them: old ones go first).
pub fn remember(mirrors: &mut HashMap<String, Mirror>, path: String, mirror: Mirror) {
    if mirrors.len() >= 64 {
        mirrors.clear();
    }
    mirrors.insert(path, mirror);
}

impl Mirror {
    /// The accepted text differs from the agent's: what it did not keep ("" when unsaid).
    pub fn edited(&self) -> Option<String> {
        (self.accepted != self.proposal).then(|| self.note.clone().unwrap_or_default())
    }
}
