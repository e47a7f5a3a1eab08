//! Helpers shared by the integration tests: a real Neovim (pi_ide_peer::Nvim) and a real
//! WebSocket peer (pi_ide_peer::Peer).
#![allow(dead_code)]

use std::time::Duration;

pub use pi_ide_peer::peer::{texts, Received};
pub use pi_ide_peer::{lock, LockFile, Nvim, Peer};
pub use serde_json::{json, Value};

pub const SECOND: Duration = Duration::from_secs(1);

/// Reads frames until the socket closes; returns what came before the close, and the close.
pub fn read_until_close(peer: &mut Peer) -> (Vec<Value>, Received) {
    let mut frames = Vec::new();
    loop {
        match peer.recv() {
            Ok(Received::Json(v)) => frames.push(v),
            Ok(other) => return (frames, other),
            Err(e) => panic!("no close frame: {e}; got {frames:?}"),
        }
    }
}

pub fn error_code(resp: &Value) -> i64 {
    resp["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {resp}"))
}
