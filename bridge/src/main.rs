//! `pi-ide-mcp`: an MCP server on stdio (newline-delimited JSON-RPC) for any MCP client, that
//! relays to the Neovim the client works in. It finds that Neovim by the records Neovims with
//! pi-ide.nvim keep (find.rs), connects to its private socket (once the kernel says its peer
//! is this user: peer.rs), and relays tool calls (relay.rs);
//! what needs no Neovim it answers itself (session.rs), so that a client's handshake works
//! before any Neovim runs. Only JSON-RPC goes to stdout; anything else goes to stderr.
//!
//! Usage: pi-ide-mcp [--nvim <socket, server address or pid>]   (or PI_IDE_NVIM)

// The core's openat helpers, and its folders opened without following another user's links
// (safe_dir uses at as its sibling): shared by path, one set for both programs.
#[allow(dead_code)]
#[path = "../../src/support/at.rs"]
mod at;
mod find;
mod frame;
mod peer;
mod relay;
#[allow(dead_code, unused_imports)]
#[path = "../../src/support/safe_dir/mod.rs"]
mod safe_dir;
mod session;

use std::io::{BufRead, Write};

const USAGE: &str = "usage: pi-ide-mcp [--nvim <socket, Neovim server address or pid>]\n\
An MCP server on stdio for any MCP client: it reaches the Neovim (with pi-ide.nvim) you work in.\n\
Without --nvim (or PI_IDE_NVIM) it uses $NVIM, else the Neovim whose workspace folder holds the\n\
current folder, else the one focused last. :PiIde mcp in Neovim shows the config for each client.\n";

fn main() {
    let target = match target(std::env::args().skip(1).collect()) {
        Ok(t) => t,
        Err(msg) => {
            eprint!("{msg}");
            std::process::exit(2);
        }
    };
    let relay = relay::Relay::new(find::Wanted::from_env(target));
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut input, &mut line) {
            Ok(Read::End) | Err(_) => break,
            Ok(Read::Line) => session::handle(&relay, &line),
            Ok(Read::TooLong) => relay.send(&frame::too_long(MAX_LINE)),
        }
    }
    // The client closed our stdin: the session is over (the socket closes with us, and Neovim
    // takes away any review still waiting).
    let _ = std::io::stdout().flush();
}

/// The `--nvim` argument, if any.
fn target(args: Vec<String>) -> Result<Option<String>, String> {
    let mut args = args.into_iter();
    let mut target = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--nvim" => target = Some(args.next().ok_or(USAGE)?),
            // Not an MCP session: these answer on stdout and exit.
            "-h" | "--help" => exit_with(USAGE),
            "-V" | "--version" => exit_with(&format!("pi-ide-mcp {}\n", env!("CARGO_PKG_VERSION"))),
            _ => return Err(format!("pi-ide-mcp: unknown argument {a}\n{USAGE}")),
        }
    }
    Ok(target)
}

/// The longest line kept (Neovim's own limit, max_message_size, is 64 MiB unless raised: it
/// answers what is over it); a longer one is read to its end and answered with an error.
const MAX_LINE: usize = 1 << 30;

enum Read {
    Line,
    TooLong,
    End,
}

fn exit_with(text: &str) -> ! {
    print!("{text}");
    std::process::exit(0)
}

/// Reads one line (without its line break) into `line`, keeping at most MAX_LINE bytes.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Read> {
    let mut over = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(if line.is_empty() && !over { Read::End } else if over { Read::TooLong } else { Read::Line });
        }
        let (len, ended) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !over && line.len() + len > MAX_LINE {
            over = true;
            *line = Vec::new();
        }
        if !over {
            line.extend_from_slice(&chunk[..len]);
        }
        input.consume(len + usize::from(ended));
        if ended {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(if over { Read::TooLong } else { Read::Line });
        }
    }
}
