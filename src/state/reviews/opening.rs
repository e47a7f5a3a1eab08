//! openDiffs on their way to Lua. review.rs stages a proposal on a worker before Lua sees it;
//! a close_tab (Copilot's close_diff) that comes meanwhile would find no review in Lua and be
//! lost, and the review would then show although its agent had given up on it (seen with the
//! real Copilot CLI renewing its connection mid-edit). Lua is told such a review is on its way
//! (`opening` in close_tab's arguments) and rejects it when it arrives.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

type Key = (u64, String);

/// The (client, tab_name) of every openDiff being staged, counted (one name may come twice).
#[derive(Default, Clone)]
pub struct Opening(Arc<Mutex<HashMap<Key, usize>>>);

/// Held while one openDiff is staged; dropping it ends that.
pub struct OpeningGuard {
    set: Opening,
    key: Key,
}

impl Opening {
    pub fn begin(&self, client: u64, tab_name: &str) -> OpeningGuard {
        let key = (client, tab_name.to_owned());
        *self.0.lock().entry(key.clone()).or_insert(0) += 1;
        OpeningGuard {
            set: self.clone(),
            key,
        }
    }

    pub fn contains(&self, client: u64, tab_name: &str) -> bool {
        self.0.lock().contains_key(&(client, tab_name.to_owned()))
    }
}

impl Drop for OpeningGuard {
    fn drop(&mut self) {
        let mut map = self.set.0.lock();
        if let Some(n) = map.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_opening_while_any_of_its_guards_lives() {
        let set = Opening::default();
        let a = set.begin(1, "t");
        let b = set.begin(1, "t");
        assert!(set.contains(1, "t"));
        assert!(!set.contains(2, "t"), "another client's name is its own");
        drop(a);
        assert!(set.contains(1, "t"));
        drop(b);
        assert!(!set.contains(1, "t"));
    }
}
