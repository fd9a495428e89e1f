//! Running part of a check as an unprivileged user: root bypasses exactly
//! the limits and permission checks these checks are about.

use std::ffi::CString;
use std::time::{Duration, Instant};

/// The unprivileged user and group (`users`) the checks run as.
pub(crate) const UID: libc::uid_t = 1000;
pub(crate) const GID: libc::gid_t = 100;

/// Gives group [`GID`] read-write access to `/dev/o2g` while it lives, as
/// a cluster's udev rule would for its MPI users; restores root-only
/// access after.
pub(crate) struct DeviceGroup;

impl DeviceGroup {
    pub(crate) fn grant() -> Result<Self, String> {
        set_device_access(GID, 0o660)?;
        Ok(Self)
    }
}

impl Drop for DeviceGroup {
    fn drop(&mut self) {
        let _ = set_device_access(0, 0o600);
    }
}

fn set_device_access(gid: libc::gid_t, mode: libc::mode_t) -> Result<(), String> {
    let path = CString::new("/dev/o2g").map_err(|e| e.to_string())?;
    // SAFETY: `path` is a valid C string.
    if unsafe { libc::chown(path.as_ptr(), 0, gid) } != 0
        // SAFETY: As above.
        || unsafe { libc::chmod(path.as_ptr(), mode) } != 0
    {
        return Err(format!(
            "chown/chmod /dev/o2g: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Runs `f` in a child process as uid [`UID`], gid [`GID`], with no
/// capabilities and the device open to its group, and returns its verdict
/// (bounded: a child that takes over 60 s is killed and fails).
///
/// Call only while the process has a single thread (it forks).
pub(crate) fn run(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    run_after(|| Ok(()), f)
}

/// As [`run`], with `setup` run as root in the child first (joining a
/// cgroup, setting limits that root alone may raise).
pub(crate) fn run_after(
    setup: impl FnOnce() -> Result<(), String>,
    f: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    run_within(Duration::from_secs(60), setup, f)
}

/// As [`run_after`], with the child killed (and failed) after `limit`
/// instead of 60 s, for checks that run longer.
pub(crate) fn run_within(
    limit: Duration,
    setup: impl FnOnce() -> Result<(), String>,
    f: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let _access = DeviceGroup::grant()?;
    let mut pipe = [0; 2];
    // SAFETY: `pipe` has room for two descriptors.
    if unsafe { libc::pipe(pipe.as_mut_ptr()) } != 0 {
        return Err("pipe failed".into());
    }
    // SAFETY: The caller promises a single-threaded process; the child only
    // drops privileges, runs `f` and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        // SAFETY: Closing our copy of the read end.
        unsafe { libc::close(pipe[0]) };
        let verdict = setup().and_then(|()| drop_privileges()).and_then(|()| f());
        let msg = match &verdict {
            Ok(()) => String::new(),
            Err(m) => m.clone(),
        };
        // SAFETY: Writing a buffer we own to our pipe, then exiting without
        // running the parent's destructors.
        unsafe {
            libc::write(pipe[1], msg.as_ptr().cast(), msg.len());
            libc::_exit(i32::from(verdict.is_err()));
        }
    }
    // SAFETY: Closing the parent's copy of the write end.
    unsafe { libc::close(pipe[1]) };
    let deadline = Instant::now() + limit;
    let mut status = 0;
    loop {
        // SAFETY: Waiting for the child we forked.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: Killing and reaping the child we forked.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!(
                "unprivileged child took over {} s",
                limit.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` has room for its length.
    let n = unsafe { libc::read(pipe[0], buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: Closing the read end.
    unsafe { libc::close(pipe[0]) };
    let msg = String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned();
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if msg.is_empty() {
        Err(format!("unprivileged child ended with status {status:#x}"))
    } else {
        Err(format!("as uid {UID}: {msg}"))
    }
}

/// Becomes uid [`UID`] / gid [`GID`]; a non-root uid has no capabilities.
fn drop_privileges() -> Result<(), String> {
    let groups = [GID];
    // SAFETY: `groups` holds one valid gid.
    let ok = unsafe {
        libc::setgroups(1, groups.as_ptr()) == 0
            && libc::setresgid(GID, GID, GID) == 0
            && libc::setresuid(UID, UID, UID) == 0
    };
    if !ok {
        return Err(format!(
            "dropping privileges: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// `o2g-vmtest as-user MEMLOCK_KIB CMD ARGS...`: runs a command as uid
/// [`UID`] in group [`GID`] with the device open to that group and
/// `RLIMIT_MEMLOCK` set to `MEMLOCK_KIB` KiB, and returns its exit status.
pub(crate) fn as_user(args: &[String]) -> Result<i32, String> {
    let (kib, cmd) = match args {
        [kib, cmd @ ..] if !cmd.is_empty() => (kib, cmd),
        _ => return Err("as-user needs MEMLOCK_KIB CMD...".into()),
    };
    let kib: u64 = kib.parse().map_err(|_| "MEMLOCK_KIB must be a number")?;
    let _access = DeviceGroup::grant()?;
    let mut child = std::process::Command::new(&cmd[0]);
    child.args(&cmd[1..]);
    // SAFETY: The closure only makes async-signal-safe system calls.
    unsafe {
        use std::os::unix::process::CommandExt;
        child.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: kib * 1024,
                rlim_max: kib * 1024,
            };
            let groups = [GID];
            if libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) != 0
                || libc::setgroups(1, groups.as_ptr()) != 0
                || libc::setresgid(GID, GID, GID) != 0
                || libc::setresuid(UID, UID, UID) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = child
        .status()
        .map_err(|e| format!("running {cmd:?} as uid {UID}: {e}"))?;
    Ok(status.code().unwrap_or(128))
}
