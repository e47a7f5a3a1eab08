//! Reviews: every file an agent wants to write is shown in the two-pane review and lands only
//! as the user accepts it; every way a review or a connection ends is answered exactly once.

#[path = "../support/harness.rs"]
mod harness;

mod bad_input;
mod close_paths;
mod diff;
mod focus;
mod hunks;
mod inline;
mod links;
mod what_is_accepted;
mod when_after;
