//! What the real agents' tests check of a write an agent made by itself (pending changes, issue
//! 50): no review opens.

use crate::harness::*;
use serde_json::json;

/// No review was opened for the agent's write.
pub fn no_review(nvim: &Nvim) {
    assert_eq!(nvim.t("reviews_shown", json!([])), json!(0), "a review opened for a write the agent made by itself");
}
