//! Pi, with the pi-ide extension (npm `@ldelossa/pi-ide`, whose README is the protocol's
//! description; protocol/ holds our side of it): the pi-ide tools over our WebSocket, its own
//! header, and the lockfile in `$PI_IDE_LOCK_DIR` (or `~/.pi/ide`), the server's own. It takes
//! our requests (ghost-text suggestions).

use super::{Agent, Lockfile, Transport};

pub static AGENT: Agent = Agent {
    name: "pi",
    transport: Transport::WebSocket { header: "x-pi-ide-authorization" },
    lockfile: Lockfile::PiIde(crate::protocol::lockfile::lock_dir),
    tools: crate::protocol::tools::pi_ide::TOOLS,
    answers: &[],
    notification: super::as_pi_ide,
    takes_requests: true,
    listening_after: None,
};
