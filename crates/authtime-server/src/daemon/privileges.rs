//! Who the daemon runs as once its sockets are bound.
//!
//! Started as root without systemd, `authtimed` binds its ports (123 needs
//! root or `CAP_NET_BIND_SERVICE`), then switches to an unprivileged user
//! and group for good: supplementary groups, group, then user, all through
//! glibc, which applies each change to every thread of the process. Once
//! the real, effective and saved user ids are all non-zero the kernel clears
//! every capability (capabilities(7), "Effect of user ID changes on
//! capabilities"); this module then checks, in every thread's
//! `/proc/self/task/*/status`, that no capability and no root id is left, and
//! refuses to go on if one is. Staying root needs `allow-root`.
//!
//! Under systemd the unit starts the daemon as its user already
//! (`User=authtime`), and nothing changes here.
//!
//! Files the daemon writes while it runs (the embedded NTS key store and its
//! lock file) are given to the user before the switch; files it only reads
//! again on SIGHUP (the key file, the NTS certificate and private key) must
//! be readable by the user or group, and a warning says so when they are not.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The user switched to when none is configured.
pub const DEFAULT_USER: &str = "authtime";

/// The configured identity: `[daemon]` and `--user`, `--group`,
/// `--allow-root`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunAs {
    user: Option<String>,
    group: Option<String>,
    allow_root: bool,
}

/// What happened at the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// Started as root and now runs as this user and group.
    Switched {
        /// User name.
        user: String,
        /// Its id.
        uid: u32,
        /// Group name.
        group: String,
        /// Its id.
        gid: u32,
    },
    /// Started as root and stays root, as `allow-root` said.
    StayedRoot,
    /// Not started as root: nothing to switch.
    NotRoot {
        /// The user id the process runs as.
        uid: u32,
    },
}

impl RunAs {
    /// Checks the names.
    ///
    /// # Errors
    /// The key (`user` or `group`) and what is wrong with its value.
    pub fn new(
        user: Option<String>,
        group: Option<String>,
        allow_root: bool,
    ) -> Result<Self, (&'static str, String)> {
        if let Some(name) = &user {
            check_name(name).map_err(|m| ("user", m))?;
        }
        if let Some(name) = &group {
            check_name(name).map_err(|m| ("group", m))?;
        }
        Ok(Self {
            user,
            group,
            allow_root,
        })
    }

    /// The user to switch to.
    #[must_use]
    pub fn user(&self) -> &str {
        self.user.as_deref().unwrap_or(DEFAULT_USER)
    }

    /// Whether a user was named (not the default).
    #[must_use]
    pub fn user_is_explicit(&self) -> bool {
        self.user.is_some()
    }

    /// These settings with the values `given` on the command line in place.
    #[must_use]
    pub fn overridden(mut self, given: Self) -> Self {
        self.user = given.user.or(self.user);
        self.group = given.group.or(self.group);
        self.allow_root |= given.allow_root;
        self
    }

    /// Decides, before anything is bound or written, what the switch will
    /// be: looks the user and group up and checks that the user may write
    /// where the server writes (`written`: the embedded NTS key store) and
    /// read what it reads again (`read`: a warning for each it cannot).
    ///
    /// # Errors
    /// Not root and another user named; the user or group does not exist or
    /// is root's; a directory the user cannot write.
    pub fn plan(&self, written: &[PathBuf], read: &[PathBuf]) -> Result<Plan, String> {
        let euid = current_euid();
        if euid != 0 {
            if self.user_is_explicit() {
                let wanted = lookup_user(self.user())?;
                if wanted.map(|u| u.uid) != Some(euid) {
                    return Err(format!(
                        "cannot switch to user `{}`: not started as root (running as uid {euid})",
                        self.user()
                    ));
                }
            }
            return Ok(Plan(PlanKind::NotRoot { uid: euid }));
        }
        if self.allow_root {
            return Ok(Plan(PlanKind::StayRoot));
        }
        let user = lookup_user(self.user())?.ok_or_else(|| {
            format!(
                "started as root, and the user `{}` to switch to does not exist: create it \
                 (useradd --system --home-dir /var/lib/authtime --shell /usr/sbin/nologin {}), \
                 name another with --user or [daemon] user, or stay root with --allow-root",
                self.user(),
                self.user()
            )
        })?;
        if user.uid == 0 {
            return Err(format!(
                "user `{}` is root: name an unprivileged user, or say --allow-root",
                user.name
            ));
        }
        let (group, gid) = match &self.group {
            Some(name) => {
                let gid =
                    lookup_group(name)?.ok_or_else(|| format!("group `{name}` does not exist"))?;
                (name.clone(), gid)
            }
            None => (
                group_name(user.gid)?.unwrap_or_else(|| user.gid.to_string()),
                user.gid,
            ),
        };
        if gid == 0 {
            return Err(format!(
                "group `{group}` is root's: name an unprivileged group"
            ));
        }
        for path in written {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !permitted(dir, user.uid, gid, 0o2) {
                return Err(format!(
                    "user `{}` cannot write the directory {} where the server replaces {} \
                     (the NTS key store): give it the directory, as the package does with \
                     /var/lib/authtime",
                    user.name,
                    dir.display(),
                    path.display()
                ));
            }
        }
        for path in read {
            if !permitted(path, user.uid, gid, 0o4) {
                tracing::warn!(
                    file = %path.display(),
                    user = %user.name,
                    "user cannot read this file: reloading it (SIGHUP, certificate check) will fail; make it readable by the user or group"
                );
            }
        }
        Ok(Plan(PlanKind::Switch {
            user,
            group,
            gid,
            give: written.to_vec(),
        }))
    }
}

/// A switch decided by [`RunAs::plan`], carried out by [`Plan::apply`] once
/// the sockets are bound.
#[derive(Debug)]
pub struct Plan(PlanKind);

#[derive(Debug)]
enum PlanKind {
    NotRoot {
        uid: u32,
    },
    StayRoot,
    Switch {
        user: User,
        group: String,
        gid: u32,
        give: Vec<PathBuf>,
    },
}

impl Plan {
    /// Gives the written files to the user, switches group and user, and
    /// checks that no thread holds a capability or a root id any more.
    ///
    /// # Errors
    /// A file cannot be given, a switch failed, or a privilege is left.
    pub fn apply(self) -> Result<Switch, String> {
        let (user, group, gid, give_up) = match self.0 {
            PlanKind::NotRoot { uid } => return Ok(Switch::NotRoot { uid }),
            PlanKind::StayRoot => {
                tracing::warn!(
                    "running as root (allow-root): a flaw in the server would own the host"
                );
                return Ok(Switch::StayedRoot);
            }
            PlanKind::Switch {
                user,
                group,
                gid,
                give,
            } => (user, group, gid, give),
        };
        for path in &give_up {
            give(path, user.uid, gid)?;
        }
        set_identity(user.uid, gid)?;
        let left = held_privileges()?;
        if !left.is_empty() {
            return Err(format!(
                "privileges still held after switching to `{}`: {}",
                user.name,
                left.join(", ")
            ));
        }
        Ok(Switch::Switched {
            user: user.name,
            uid: user.uid,
            group,
            gid,
        })
    }
}

/// A user or group name as useradd(8) accepts it.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a user or group name (1 to 32 of A-Z a-z 0-9 _ - ., not starting with -)",
            name.escape_default()
        ))
    }
}

/// A user from the password database.
#[derive(Debug)]
struct User {
    name: String,
    uid: u32,
    gid: u32,
}

/// Whether the process runs with root's effective user id.
#[must_use]
pub fn running_as_root() -> bool {
    current_euid() == 0
}

fn current_euid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

/// Runs a `get*_r` lookup with a growing buffer: `Ok(None)` when the entry
/// does not exist.
fn with_buffer<T>(
    what: &str,
    mut lookup: impl FnMut(&mut [libc::c_char]) -> (libc::c_int, Option<T>),
) -> Result<Option<T>, String> {
    let mut size = 1024;
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        match lookup(&mut buf) {
            (0, found) => return Ok(found),
            (libc::ERANGE, _) if size < 1 << 20 => size *= 4,
            (code, _) => {
                return Err(format!(
                    "cannot look up {what}: {}",
                    io::Error::from_raw_os_error(code)
                ));
            }
        }
    }
}

fn lookup_user(name: &str) -> Result<Option<User>, String> {
    let cname = CString::new(name).map_err(|_| format!("user `{name}`: contains NUL"))?;
    with_buffer(&format!("user `{name}`"), |buf| {
        // SAFETY: passwd is plain data; getpwnam_r writes it and points its
        // strings into `buf`, which outlives their use below; `result` is
        // null or points to `pw`.
        unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let code = libc::getpwnam_r(
                cname.as_ptr(),
                &raw mut pw,
                buf.as_mut_ptr(),
                buf.len(),
                &raw mut result,
            );
            let found = (code == 0 && !result.is_null()).then(|| User {
                name: CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned(),
                uid: pw.pw_uid,
                gid: pw.pw_gid,
            });
            (code, found)
        }
    })
}

fn lookup_group(name: &str) -> Result<Option<u32>, String> {
    let cname = CString::new(name).map_err(|_| format!("group `{name}`: contains NUL"))?;
    with_buffer(&format!("group `{name}`"), |buf| {
        // SAFETY: as in lookup_user, for getgrnam_r.
        unsafe {
            let mut gr: libc::group = std::mem::zeroed();
            let mut result: *mut libc::group = std::ptr::null_mut();
            let code = libc::getgrnam_r(
                cname.as_ptr(),
                &raw mut gr,
                buf.as_mut_ptr(),
                buf.len(),
                &raw mut result,
            );
            (code, (code == 0 && !result.is_null()).then_some(gr.gr_gid))
        }
    })
}

fn group_name(gid: u32) -> Result<Option<String>, String> {
    with_buffer(&format!("group {gid}"), |buf| {
        // SAFETY: as in lookup_user, for getgrgid_r.
        unsafe {
            let mut gr: libc::group = std::mem::zeroed();
            let mut result: *mut libc::group = std::ptr::null_mut();
            let code = libc::getgrgid_r(
                gid,
                &raw mut gr,
                buf.as_mut_ptr(),
                buf.len(),
                &raw mut result,
            );
            let found = (code == 0 && !result.is_null())
                .then(|| CStr::from_ptr(gr.gr_name).to_string_lossy().into_owned());
            (code, found)
        }
    })
}

/// Gives an existing file to the user (a missing one is created later by
/// the user itself).
fn give(path: &Path, uid: u32, gid: u32) -> Result<(), String> {
    match std::os::unix::fs::chown(path, Some(uid), Some(gid)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot give {} to uid {uid}: {e}", path.display())),
    }
}

/// Whether `uid`/`gid` has the permission `bits` (0o4 read, 0o2 write) on
/// `path` by its mode bits (ACLs aside); a missing path is left to whoever
/// opens it.
fn permitted(path: &Path, uid: u32, gid: u32, bits: u32) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    let mode = meta.mode();
    if meta.uid() == uid {
        mode & (bits << 6) != 0
    } else if meta.gid() == gid {
        mode & (bits << 3) != 0
    } else {
        mode & bits != 0
    }
}

/// Supplementary groups, group, user: in that order, since each needs the
/// privilege the next one gives up.
fn set_identity(uid: u32, gid: u32) -> Result<(), String> {
    let groups = [gid];
    // SAFETY: setgroups reads one gid_t from `groups`; setgid and setuid take
    // integers. glibc applies all three to every thread of the process.
    let steps = unsafe {
        [
            ("setgroups", libc::setgroups(1, groups.as_ptr())),
            ("setgid", libc::setgid(gid)),
            ("setuid", libc::setuid(uid)),
        ]
    };
    for (name, r) in steps {
        if r != 0 {
            return Err(format!("{name}: {}", io::Error::last_os_error()));
        }
    }
    // SAFETY: as above; this call must fail now.
    if unsafe { libc::setuid(0) } == 0 {
        return Err("root could be taken back after the switch".into());
    }
    Ok(())
}

/// Every capability or root id still held by a thread of this process, as
/// `task TID: CapEff ...`.
fn held_privileges() -> Result<Vec<String>, String> {
    threads_showing(privileges_in_status)
}

/// What `find` sees in the `/proc/self/task/*/status` of every thread of
/// this process, each as `task TID: WHAT`.
pub(super) fn threads_showing(find: impl Fn(&str) -> Vec<String>) -> Result<Vec<String>, String> {
    let tasks = std::fs::read_dir("/proc/self/task")
        .map_err(|e| format!("cannot read /proc/self/task: {e}"))?;
    let mut held = Vec::new();
    for task in tasks.flatten() {
        let status = match std::fs::read_to_string(task.path().join("status")) {
            Ok(text) => text,
            // A thread that ended meanwhile.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", task.path().display())),
        };
        for what in find(&status) {
            held.push(format!(
                "task {}: {what}",
                task.file_name().to_string_lossy()
            ));
        }
    }
    Ok(held)
}

/// The privileges a `/proc/*/status` text shows: a non-zero permitted,
/// effective or ambient capability set, or a zero user or group id.
fn privileges_in_status(status: &str) -> Vec<String> {
    let mut held = Vec::new();
    for line in status.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let held_here = match key {
            "CapPrm" | "CapEff" | "CapAmb" => value.bytes().any(|b| b != b'0'),
            "Uid" | "Gid" => value.split_whitespace().any(|id| id == "0"),
            _ => false,
        };
        if held_here {
            held.push(format!("{key} {value}"));
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(RunAs::new(Some("authtime".into()), Some("_chrony".into()), false).is_ok());
        let (key, message) = RunAs::new(Some("-rf".into()), None, false).expect_err("leading dash");
        assert_eq!(key, "user");
        assert!(message.contains("not a user or group name"), "{message}");
        assert_eq!(
            RunAs::new(None, Some("a b".into()), false)
                .expect_err("space")
                .0,
            "group"
        );
        assert!(RunAs::new(Some(String::new()), None, false).is_err());
        assert!(RunAs::new(Some("x".repeat(33)), None, false).is_err());
    }

    #[test]
    fn the_default_user_is_authtime_and_the_command_line_wins() {
        let file = RunAs::new(Some("ntp".into()), None, false).expect("valid");
        assert_eq!(RunAs::default().user(), DEFAULT_USER);
        assert!(!RunAs::default().user_is_explicit());
        let given = RunAs::new(Some("nobody".into()), None, true).expect("valid");
        let both = file.overridden(given);
        assert_eq!(both.user(), "nobody");
        assert!(both.allow_root);
    }

    #[test]
    fn held_privileges_are_read_from_the_status_text() {
        let clean = "Name:\tauthtimed\nUid:\t999\t999\t999\t999\nGid:\t998\t998\t998\t998\n\
                     CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n\
                     CapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n";
        assert!(privileges_in_status(clean).is_empty());
        let bind = clean.replace("CapEff:\t0000000000000000", "CapEff:\t0000000000000400");
        assert_eq!(privileges_in_status(&bind), ["CapEff 0000000000000400"]);
        let saved_root = clean.replace("Uid:\t999\t999\t999\t999", "Uid:\t999\t999\t0\t999");
        assert_eq!(privileges_in_status(&saved_root), ["Uid 999\t999\t0\t999"]);
    }

    #[test]
    fn a_missing_user_is_a_clear_error() {
        assert!(
            lookup_user("no-such-user-authtime-test")
                .expect("lookup works")
                .is_none()
        );
        assert_eq!(lookup_user("root").expect("root").map(|u| u.uid), Some(0));
        assert_eq!(lookup_group("root").expect("root"), Some(0));
        assert_eq!(group_name(0).expect("gid 0").as_deref(), Some("root"));
    }

    #[test]
    fn permissions_follow_the_mode_bits() {
        let dir = std::env::temp_dir().join(format!("authtime-privileges-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("keys");
        std::fs::write(&path, b"1 MD5 x\n").expect("write");
        let meta = std::fs::metadata(&path).expect("meta");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let (uid, gid) = (meta.uid(), meta.gid());
        assert!(permitted(&path, uid, gid, 0o4) && permitted(&path, uid, gid, 0o2));
        assert!(!permitted(&path, uid + 1, gid + 1, 0o4));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert!(permitted(&path, uid + 1, gid, 0o4));
        assert!(!permitted(&path, uid + 1, gid, 0o2));
        assert!(permitted(&dir.join("missing"), uid + 1, gid + 1, 0o4));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
