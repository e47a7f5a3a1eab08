//! `pi-ide-peer`: play the agent against a running editor, for demos and debugging.
//!
//!   pi-ide-peer list                      lockfiles in $PI_IDE_LOCK_DIR (or ~/.pi/ide)
//!   pi-ide-peer tools [PORT]              initialize, then tools/list
//!   pi-ide-peer call TOOL [JSON] [PORT]   initialize, then tools/call, print the answer
//!   pi-ide-peer watch [PORT]              initialize, then print every frame the editor sends
//!   pi-ide-peer serve TEXT... [--port P]  stay connected like the Pi extension: print what the
//!                                         editor sends, answer getSuggestions with TEXTs
//!
//! Without PORT it picks the editor whose workspace contains the current directory, as Pi does.

use std::time::Duration;

use pi_ide_testkit::lock::{self, LockFile};
use pi_ide_testkit::peer::Received;
use pi_ide_testkit::Peer;
use serde_json::{json, Value};

fn pick(port: Option<&String>) -> Result<LockFile, String> {
    let dir = lock::lock_dir();
    if let Some(p) = port {
        let p: u16 = p.parse().map_err(|_| format!("not a port: {p}"))?;
        return lock::read_all(&dir)
            .into_iter()
            .find(|l| l.port == p)
            .ok_or(format!("no lockfile for port {p} in {}", dir.display()));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| e.to_string())?
        .to_string_lossy()
        .to_string();
    let mut found = lock::matching(&dir, &cwd);
    match found.len() {
        0 => Err(format!(
            "no editor's workspace contains {cwd} (lockfiles in {})",
            dir.display()
        )),
        1 => Ok(found.remove(0)),
        n => Err(format!(
            "{n} editors match {cwd}; name a port: {:?}",
            found.iter().map(|l| l.port).collect::<Vec<_>>()
        )),
    }
}

fn connect(port: Option<&String>) -> Result<Peer, String> {
    let l = pick(port)?;
    let mut p = Peer::connect(l.port, &l.auth_token).map_err(|e| e.to_string())?;
    p.initialize()?;
    Ok(p)
}

fn print(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("list") => {
            for l in lock::read_all(&lock::lock_dir()) {
                println!(
                    "{} · {} · pid={} port={}",
                    l.ide_name,
                    l.workspace_folders.join(", "),
                    l.pid,
                    l.port
                );
            }
            Ok(())
        }
        Some("tools") => {
            let mut p = connect(args.get(1))?;
            print(&p.request("tools/list", json!({}))?);
            Ok(())
        }
        Some("call") => {
            let tool = args.get(1).ok_or("call needs a tool name")?;
            let arguments: Value = match args.get(2) {
                Some(a) => {
                    serde_json::from_str(a).map_err(|e| format!("arguments are not JSON: {e}"))?
                }
                None => json!({}),
            };
            let mut p = connect(args.get(3))?;
            // Blocking tools (openDiff) may take as long as the user does.
            p.set_timeout(Duration::from_secs(24 * 3600));
            print(&p.call_tool(tool, arguments)?);
            Ok(())
        }
        Some("watch") => {
            let mut p = connect(args.get(1))?;
            p.set_timeout(Duration::from_secs(24 * 3600));
            loop {
                match p.recv()? {
                    Received::Json(v) => print(&v),
                    other => {
                        println!("{other:?}");
                        return Ok(());
                    }
                }
            }
        }
        Some("serve") => serve(&args[1..]),
        _ => Err("usage: pi-ide-peer list | tools [PORT] | call TOOL [JSON] [PORT] | watch [PORT] | serve TEXT... [--port P]".into()),
    }
}

/// Plays the Pi extension for a demo: prints what the editor sends and answers its requests.
fn serve(args: &[String]) -> Result<(), String> {
    let mut texts: Vec<String> = Vec::new();
    let mut port = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--port" {
            port = it.next().cloned();
        } else {
            texts.push(a.replace("\\n", "\n"));
        }
    }
    let mut p = connect(port.as_ref())?;
    p.set_timeout(Duration::from_secs(24 * 3600));
    loop {
        match p.recv()? {
            Received::Json(v) if v["method"] == "getSuggestions" && v.get("id").is_some() => {
                p.respond(&v["id"], json!({ "suggestions": texts }))?;
            }
            Received::Json(v) if v["method"] == "listSuggestionModels" && v.get("id").is_some() => {
                p.respond(
                    &v["id"],
                    json!({ "currentModel": "demo/fast", "models": [
                        {"provider": "demo", "id": "fast", "name": "Demo fast", "model": "demo/fast"},
                        {"provider": "demo", "id": "slow", "name": "Demo slow", "model": "demo/slow"}] }),
                )?;
            }
            Received::Json(v) => print(&v),
            other => {
                println!("{other:?}");
                return Ok(());
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("pi-ide-peer: {e}");
        std::process::exit(1);
    }
}
