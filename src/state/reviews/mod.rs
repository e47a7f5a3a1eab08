//! Reviews.

pub mod open;
pub mod opening;
pub mod stage;
