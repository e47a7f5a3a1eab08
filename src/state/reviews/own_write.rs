//! A review whose agent writes its own proposal after SAVED and says nothing when it has
//! (the tool's `Writes::ProposalWatched`): when the user accepted other text (a hunk declined,
//! a line edited), the file is watched on a thread of its own, bounded, and set to the accepted
//! text once the agent's write of its proposal lands (support/own_write.rs: only over exactly
//! that text). The user is told how it ended; the editor stopping ends the watch, writing
//! nothing.

use std::path::Path;
use std::sync::Arc;

use crate::state::events::{Event, Level};
use crate::state::Shared;
use crate::support::own_write::{Landed, OwnWrite, WAIT};
use crate::support::reviewed_write::Seen;

/// What a watched review keeps from its staging: the file as shown, and the agent's proposal.
pub struct Watched {
    pub path: String,
    pub seen: Seen,
    pub proposal: String,
}

impl Watched {
    /// Looks at the file the review shows (on the staging worker). Err: it cannot be written
    /// over safely, so it cannot be reviewed.
    pub fn look(path: &str, proposal: &str) -> Result<Watched, String> {
        let seen = Seen::look(Path::new(path))?;
        Ok(Watched { path: path.to_owned(), seen, proposal: proposal.to_owned() })
    }
}

/// The user accepted `accepted` in review `w`: unless it is the proposal itself, the file is set
/// to it once the agent has written its proposal. `model_told`: the agent's model reads what
/// the answer said of the hunks not kept (else the user is told to tell it).
pub fn start(shared: &Arc<Shared>, w: Watched, accepted: String, model_told: bool) {
    if accepted == w.proposal {
        return; // what the agent writes is what was accepted
    }
    let shared = shared.clone();
    std::thread::spawn(move || {
        let own = OwnWrite { seen: w.seen, proposal: w.proposal, accepted };
        let landed = own.wait(WAIT, &|| shared.is_stopping());
        if shared.is_stopping() && landed == Landed::NotWritten {
            crate::info!("{}: the editor stopped before the agent wrote its proposal: nothing was written over it", w.path);
            return;
        }
        let (level, message) = told(&w.path, &landed, model_told);
        match level {
            Level::Info => crate::info!("{message}"),
            _ => crate::warn!("{message}"),
        }
        shared.events.push_blocking(Event::Notice { key: "own-write", level, message });
    });
}

/// What the user is told of how the agent's write of `path` ended.
fn told(path: &str, landed: &Landed, model_told: bool) -> (Level, String) {
    let untold = if model_told { "" } else { " Its model is not told which hunks you declined or edited: tell it." };
    match landed {
        Landed::AsAccepted { rewritten: true } => {
            (Level::Info, format!("the agent wrote its proposal to {path}; your accepted text was written over it.{untold}"))
        }
        Landed::AsAccepted { rewritten: false } => (Level::Info, format!("{path} holds the text you accepted.")),
        Landed::NotWritten => (Level::Warn, format!(
            "the agent did not write its proposal to {path} within {} s: your accepted text was not written \
             (should it write later, its whole proposal lands: :PiIde changes shows it).",
            WAIT.as_secs()
        )),
        Landed::Other(why) => (Level::Warn, format!(
            "{path} was not set to the text you accepted: {why}. What is there is left as it is (:PiIde changes shows it)."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_is_told_each_ending_and_whether_to_tell_the_agent() {
        let (l, m) = told("/a", &Landed::AsAccepted { rewritten: true }, false);
        assert!(l == Level::Info && m.contains("written over it") && m.contains("tell it"), "{m}");
        assert!(!told("/a", &Landed::AsAccepted { rewritten: true }, true).1.contains("tell it"));
        assert_eq!(told("/a", &Landed::NotWritten, false).0, Level::Warn);
        let (l, m) = told("/a", &Landed::Other("it was replaced by a link".into()), false);
        assert!(l == Level::Warn && m.contains("replaced by a link"), "{m}");
    }
}
