//! Where a path really leads: the file a write to it lands in, through every link on the way,
//! the last one included (a link to a file that does not exist yet is where a write creates
//! it). Every review and every write of ours judges this target, never the path as written:
//! a link the agent planted in the workspace may lead out of it.
//!
//! Blocking (it stats the disk): run it on a worker.

use std::path::{Component, Path, PathBuf};

/// Links followed at most, as the kernel does (ELOOP beyond).
const MAX_LINKS: usize = 40;

/// The real target of absolute `path`: canonical when it exists; else its nearest existing
/// folder, canonical, with the rest below it. None: it cannot be told (a loop of links, a
/// folder that cannot be read, `..` below a folder that does not exist).
pub fn target(path: &Path) -> Option<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::canonicalize(&path) {
            Ok(real) => return Some(real),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
        let name = path.file_name()?.to_owned();
        let folder = match path.parent() {
            Some(parent) if parent != Path::new("") => target(parent)?,
            _ => return None,
        };
        let here = folder.join(&name);
        match std::fs::read_link(&here) {
            // A dangling link: a write creates the file it names.
            Ok(to) => path = folder.join(to),
            Err(_) => return Some(here),
        }
    }
    None
}

/// Whether `path`'s last component is a link: its folder's real target with its name is not
/// its real target `real`. A link on the way (the workspace reached through `~/code ->
/// /mnt/data/code`, macOS's `/tmp`) is no link of the file's: where it leads is judged on `real`.
/// `.`, repeated and trailing slashes are no link.
pub fn leads_elsewhere(path: &Path, real: &Path) -> bool {
    let plain: PathBuf = path.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    match (plain.parent(), plain.file_name()) {
        (Some(folder), Some(name)) if folder != Path::new("") => target(folder).map(|f| f.join(name)).as_deref() != Some(real),
        _ => plain != real,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_or_last_is_followed_even_to_a_file_not_there_yet() {
        let d = std::fs::canonicalize(crate::scratch_dir("real-target")).unwrap();
        let outside = d.join("outside");
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("profile.sh"), "x\n").unwrap();
        let ws = d.join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::os::unix::fs::symlink(outside.join("profile.sh"), ws.join("notes.txt")).unwrap();
        std::os::unix::fs::symlink(outside.join("new.sh"), ws.join("dangling.txt")).unwrap();
        std::os::unix::fs::symlink("../outside/sub", ws.join("sub")).unwrap();
        std::fs::write(ws.join("plain.txt"), "p\n").unwrap();
        let cases = [
            ("notes.txt", outside.join("profile.sh")),
            ("dangling.txt", outside.join("new.sh")),
            ("sub/x/y.txt", outside.join("sub/x/y.txt")),
            ("plain.txt", ws.join("plain.txt")),
            ("new/dir/n.txt", ws.join("new/dir/n.txt")),
        ];
        for (name, want) in cases {
            let real = target(&ws.join(name)).unwrap();
            assert_eq!(real, want, "{name}");
            assert_eq!(leads_elsewhere(&ws.join(name), &real), name.starts_with("notes") || name.starts_with("dangling"), "{name}");
        }
        // The workspace reached through a link: only a link of the file's own is one.
        std::os::unix::fs::symlink(&ws, d.join("via")).unwrap();
        for (name, linked) in [("plain.txt", false), ("new/n.txt", false), ("notes.txt", true)] {
            let real = target(&d.join("via").join(name)).unwrap();
            assert_eq!(leads_elsewhere(&d.join("via").join(name), &real), linked, "via/{name}");
        }
        assert!(!leads_elsewhere(Path::new(&format!("{}/./plain.txt/", ws.display())), &ws.join("plain.txt")));
        std::os::unix::fs::symlink(ws.join("loop"), ws.join("loop")).unwrap();
        assert_eq!(target(&ws.join("loop")), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
