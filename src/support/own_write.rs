//! An agent that writes its own proposal after the user's approval, when the user accepted other
//! text (a hunk declined, a line edited): once the agent's write lands, the file is set to the
//! accepted text with the reviewed write (reviewed_write.rs), and only over exactly the agent's
//! proposal. Anything else found there (other text, a link, a pipe) is never overwritten: it is
//! told. Who knows when the agent has written calls [`OwnWrite::settle`] then; who does not
//! waits with [`OwnWrite::wait`], bounded.
//!
//! Blocking (reads, fsync): run it off any thread that serves an agent or Neovim.

use std::time::{Duration, Instant};

use super::reviewed_write::Seen;

/// What the user accepted for a file the agent writes itself.
pub struct OwnWrite {
    /// The file as the review showed it.
    pub seen: Seen,
    /// What the agent will write.
    pub proposal: String,
    /// What the user accepted.
    pub accepted: String,
}

/// What the file holds after the agent's write.
#[derive(Debug, PartialEq, Eq)]
pub enum Landed {
    /// The accepted text (`rewritten`: we wrote it over the agent's proposal).
    AsAccepted { rewritten: bool },
    /// Still as reviewed: the agent has not written (yet).
    NotWritten,
    /// Something else, left as it is: why.
    Other(String),
}

/// How long [`OwnWrite::wait`] looks for the agent's write; the first pause between looks, and
/// the longest.
pub const WAIT: Duration = Duration::from_secs(10);
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(250);
/// Other text must stay this long to be told (a write under way shows part of a file).
const STEADY: Duration = Duration::from_secs(1);

impl OwnWrite {
    /// One look at the file: the accepted text written over the agent's proposal when it holds
    /// exactly that.
    pub fn settle(&self) -> Landed {
        if self.seen.untouched() {
            return Landed::NotWritten;
        }
        match self.seen.holds(self.accepted.as_bytes()) {
            Ok(true) => return Landed::AsAccepted { rewritten: false },
            Ok(false) => {}
            Err(why) => return Landed::Other(why),
        }
        match self.seen.write_over(self.proposal.as_bytes(), self.accepted.as_bytes()) {
            Ok(()) => Landed::AsAccepted { rewritten: true },
            Err(why) => Landed::Other(why),
        }
    }

    /// Looks again and again (pauses growing from 10 to 250 ms) until the agent's write has
    /// landed and is settled, for at most `bound`; `stop()` true ends it at once, writing
    /// nothing. Other text is told once it has stayed a second (a write under way shows part
    /// of the file); NotWritten: the agent did not write within `bound`, or we stopped.
    pub fn wait(&self, bound: Duration, stop: &dyn Fn() -> bool) -> Landed {
        let start = Instant::now();
        let (mut pause, mut other_since) = (FIRST_PAUSE, None);
        loop {
            if stop() {
                return Landed::NotWritten;
            }
            let landed = self.settle();
            match &landed {
                Landed::AsAccepted { .. } => return landed,
                Landed::NotWritten => other_since = None,
                Landed::Other(_) => {
                    let since = *other_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= STEADY || start.elapsed() >= bound {
                        return landed;
                    }
                }
            }
            if start.elapsed() >= bound {
                return landed;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn own(path: &Path) -> OwnWrite {
        OwnWrite { seen: Seen::look(path).unwrap(), proposal: "a\nB\nc\n".into(), accepted: "a\nb\nc\n".into() }
    }

    #[test]
    fn the_accepted_text_goes_over_the_agents_proposal_and_nothing_else_is_overwritten() {
        let d = crate::scratch_dir("own-write");
        let f = d.join("f.txt");
        std::fs::write(&f, "a\nb\n").unwrap();
        let o = own(&f);
        assert_eq!(o.settle(), Landed::NotWritten);
        std::fs::write(&f, "a\nB\nc\n").unwrap();
        assert_eq!(o.settle(), Landed::AsAccepted { rewritten: true });
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a\nb\nc\n");
        assert_eq!(o.settle(), Landed::AsAccepted { rewritten: false }, "settled once");
        // Other text stays; a link swapped in is refused, and what it leads to untouched.
        let o = own(&f);
        std::fs::write(&f, "theirs\n").unwrap();
        assert!(matches!(o.settle(), Landed::Other(ref why) if why.contains("other text")));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "theirs\n");
        let o = own(&f);
        std::fs::write(d.join("elsewhere"), "a\nB\nc\n").unwrap();
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(d.join("elsewhere"), &f).unwrap();
        assert!(matches!(o.settle(), Landed::Other(ref why) if why.contains("link")));
        assert_eq!(std::fs::read_to_string(d.join("elsewhere")).unwrap(), "a\nB\nc\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn waiting_ends_with_the_write_when_stopped_or_at_the_bound() {
        let d = crate::scratch_dir("own-write-wait");
        let f = d.join("new/f.txt");
        let o = own(&f);
        let writer = {
            let f = f.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                std::fs::write(&f, "a\nB\nc\n").unwrap();
            })
        };
        assert_eq!(o.wait(Duration::from_secs(20), &|| false), Landed::AsAccepted { rewritten: true });
        writer.join().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a\nb\nc\n");
        let never = own(&d.join("never.txt"));
        assert_eq!(never.wait(Duration::from_millis(50), &|| false), Landed::NotWritten);
        assert_eq!(never.wait(Duration::from_secs(20), &|| true), Landed::NotWritten, "stopped at once");
        assert!(!d.join("never.txt").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
