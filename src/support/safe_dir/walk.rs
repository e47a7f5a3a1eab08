//! The walk from `/` to a folder, one component at a time, each opened without following a
//! link and checked through its handle (see the rules in mod.rs).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use super::{at, euid, Problem, Rules};

/// The sticky bit (S_ISVTX, of another type on macOS): in a folder that has it, only the owner
/// of a name may rename or remove it.
const STICKY: u32 = 0o1000;

/// Links followed at most (Linux's own limit).
const MAX_LINKS: usize = 40;

/// One component to walk: a name or `..`, and whether it is a folder of ours.
struct Step {
    name: Option<OsString>,
    own: bool,
}

/// Where the walk is: each folder opened so far (from `/`), and its path as walked.
struct Trail {
    open: Vec<(OwnedFd, PathBuf)>,
}

impl Trail {
    fn here(&self) -> (&OwnedFd, &Path) {
        let (fd, path) = self.open.last().expect("the root stays");
        (fd, path)
    }
}

/// Walks `path` (made absolute from the current folder); returns the last folder's handle
/// and the folders of ours made private on the way.
pub fn walk(path: &Path, rules: Rules) -> Result<(OwnedFd, Vec<(PathBuf, u32)>), Problem> {
    let absolute = match path.is_absolute() {
        true => path.to_owned(),
        false => std::env::current_dir().map_err(|e| refused(format!("cannot read the current folder: {e}")))?.join(path),
    };
    let mut todo = steps(&absolute, rules.own);
    let root = open_at(None, OsStr::new("/"), todo.is_empty()).map_err(|e| refused(format!("cannot open /: {e}")))?;
    check_folder(&root, Path::new("/"), false, rules)?;
    let mut trail = Trail { open: vec![(root, PathBuf::from("/"))] };
    let (mut links, mut made, mut fixed) = (0, 0, Vec::new());
    while let Some(step) = todo.pop_front() {
        let last = todo.is_empty();
        let Some(name) = step.name else {
            if step.own {
                return Err(refused(format!("{}: a folder of ours is not named through `..`", absolute.display())));
            }
            if trail.open.len() > 1 {
                trail.open.pop();
            }
            continue;
        };
        let (parent, at) = trail.here();
        let shown = at.join(&name);
        match open_at(Some(parent), &name, last || step.own) {
            Ok(fd) => {
                if let Some(was) = check_folder(&fd, &shown, step.own, rules)? {
                    fixed.push((shown.clone(), was));
                }
                trail.open.push((fd, shown));
            }
            Err(e) => match what_is(parent, &name, &shown, e)? {
                Found::Link(uid) => {
                    check_link(&shown, uid, step.own, rules)?;
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(refused(format!("{}: too many symbolic links", shown.display())));
                    }
                    let target = read_link(parent, &name).map_err(|e| refused(format!("cannot read the link {}: {e}", shown.display())))?;
                    if target.is_absolute() {
                        trail.open.truncate(1);
                    }
                    let mut through = steps(&target, 0);
                    match through.back_mut() {
                        Some(end) => end.own = step.own,
                        None if step.own => return Err(refused(format!("{} points at /", shown.display()))),
                        None => {}
                    }
                    for s in through.into_iter().rev() {
                        todo.push_front(s);
                    }
                }
                Found::Missing if rules.fix && made < MAX_LINKS => {
                    made += 1;
                    make_folder(parent, &name).map_err(|e| refused(format!("cannot create {}: {e}", shown.display())))?;
                    todo.push_front(Step { name: Some(name), own: step.own });
                }
                Found::Missing => return Err(Problem::Missing(format!("{} does not exist", shown.display()))),
            },
        }
    }
    let (fd, _) = trail.open.pop().expect("the root stays");
    Ok((fd, fixed))
}

fn refused(message: String) -> Problem {
    Problem::Refused(message)
}

/// The components of `path`, the last `own` of them marked as folders of ours.
fn steps(path: &Path, own: usize) -> VecDeque<Step> {
    let names: Vec<Option<OsString>> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Some(n.to_owned())),
            Component::ParentDir => Some(None),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    let first_own = names.len().saturating_sub(own);
    names.into_iter().enumerate().map(|(i, name)| Step { name, own: i >= first_own }).collect()
}

/// Opens the folder `name` in `parent` (or `/`, with None), never through a link: to read it
/// and change its mode (ours, and the last one), or only to go on from it.
fn open_at(parent: Option<&OwnedFd>, name: &OsStr, readable: bool) -> io::Result<OwnedFd> {
    let c = at::os_name(name)?;
    if readable { at::open_dir(parent, &c) } else { at::pass_dir(parent, &c) }
}

/// What stands at `name` when it could not be opened as a folder.
enum Found {
    /// A link, of this owner.
    Link(u32),
    Missing,
}

fn what_is(parent: &OwnedFd, name: &OsStr, shown: &Path, opening: io::Error) -> Result<Found, Problem> {
    let c = at::os_name(name).map_err(|e| refused(format!("{}: {e}", shown.display())))?;
    let st = match at::lstat(parent, &c) {
        Ok(Some(st)) => st,
        Ok(None) => return Ok(Found::Missing),
        Err(e) => return Err(refused(format!("cannot open {}: {e}", shown.display()))),
    };
    match at::kind(&st) {
        at::LINK => Ok(Found::Link(st.st_uid)),
        at::FOLDER => Err(refused(format!("cannot open {}: {opening}", shown.display()))),
        _ => Err(refused(format!("{} is not a folder", shown.display()))),
    }
}

fn check_link(shown: &Path, owner: u32, own: bool, rules: Rules) -> Result<(), Problem> {
    if own && !rules.links {
        return Err(refused(format!("{} is a symbolic link (a folder that only you can write to is needed there)", shown.display())));
    }
    if owner != euid() && owner != 0 {
        return Err(refused(format!("{} is a symbolic link of another user (uid {owner}), who may point it elsewhere at any moment", shown.display())));
    }
    Ok(())
}

/// Checks a folder through its handle; returns the mode it had when it was made private.
fn check_folder(fd: &OwnedFd, shown: &Path, own: bool, rules: Rules) -> Result<Option<u32>, Problem> {
    let st = at::stat(fd).map_err(|e| refused(format!("cannot read {}: {e}", shown.display())))?;
    let (uid, mode) = (st.st_uid, st.st_mode as u32 & 0o7777);
    if !own {
        if uid != euid() && uid != 0 {
            return Err(refused(format!("{} belongs to another user (uid {uid}), who may put a folder of theirs in place of yours", shown.display())));
        }
        if mode & 0o002 != 0 && mode & STICKY == 0 {
            return Err(refused(format!("{} is writable by anyone (mode {mode:o}), who may put a folder of theirs in place of yours", shown.display())));
        }
        return Ok(None);
    }
    if uid != euid() {
        return Err(refused(format!("{} belongs to another user (uid {uid})", shown.display())));
    }
    if mode & rules.forbidden == 0 {
        return Ok(None);
    }
    if !rules.fix {
        let (what, fix) = if rules.forbidden == 0o022 { ("writable by group or others", "go-w") } else { ("open to group or others", "go-rwx") };
        return Err(Problem::Mode(format!("{} is {what} (mode {mode:o}): run `chmod {fix} {}`", shown.display(), shown.display())));
    }
    // Opened readable (ours are), so not O_PATH: fchmod works on it.
    at::chmod(fd, mode & !rules.forbidden).map_err(|e| refused(format!("{} is open to others (mode {mode:o}) and cannot be made private: {e}", shown.display())))?;
    Ok(Some(mode & 0o777))
}

fn make_folder(parent: &OwnedFd, name: &OsStr) -> io::Result<()> {
    // Made meanwhile by someone else is no error: the next look checks whose it is.
    at::make_dir(parent, &at::os_name(name)?, 0o700)
}

fn read_link(parent: &OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
    at::read_link(parent, &at::os_name(name)?)
}
