//! In-guest checks of what a hostile local caller or a hostile peer can
//! do to a registered socket or an endpoint (issue 19): children and ULPs
//! of a registered socket, spoofed senders, urgent data, racing posts,
//! state read back from the shared mapping, and who sees whose endpoints.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libo2g::{abi, raw, Device, Endpoint, EndpointConfig, Post, RecvError, Selector};

use crate::harness::{endpoint, libo2g_error, next_completion, pattern, tcp_pair, Sender};
use crate::CheckResult;

fn errno_of(rc: libc::c_int) -> Option<i32> {
    (rc < 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// `connect(fd, AF_UNSPEC)`: TCP's disconnect.
fn disconnect(fd: RawFd) -> Result<(), String> {
    // SAFETY: An all-zero sockaddr is a valid AF_UNSPEC address.
    let mut sa: libc::sockaddr = unsafe { std::mem::zeroed() };
    sa.sa_family = libc::AF_UNSPEC as libc::sa_family_t;
    // SAFETY: `sa` is a valid sockaddr of the given length.
    let rc = unsafe { libc::connect(fd, &sa, std::mem::size_of::<libc::sockaddr>() as u32) };
    match errno_of(rc) {
        None => Ok(()),
        Some(e) => Err(format!("connect(AF_UNSPEC): errno {e}")),
    }
}

/// The socket's local port.
fn local_port(fd: RawFd) -> Result<u16, String> {
    // SAFETY: Zeroed storage is valid for getsockname to fill.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `sa` has room for `len` bytes.
    let rc = unsafe { libc::getsockname(fd, (&raw mut sa).cast(), &mut len) };
    if errno_of(rc).is_some() {
        return Err("getsockname failed".into());
    }
    Ok(u16::from_be(sa.sin_port))
}

fn set_ulp(fd: RawFd, name: &str) -> Option<i32> {
    // SAFETY: `name` is readable for its length.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_ULP,
            name.as_ptr().cast(),
            name.len() as u32,
        )
    };
    errno_of(rc)
}

fn get_ulp(fd: RawFd) -> String {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` has room for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_ULP,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return String::new();
    }
    let n = buf.iter().position(|&b| b == 0).unwrap_or(len as usize);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A registered socket cannot become a listener, so no child ever
/// inherits o2g's hooks: disconnect, `listen()` must fail with `EINVAL`.
/// After unregistering it is a plain socket that may listen, and a child
/// it accepts carries no hook (bytes sent to the child are read by the
/// child's owner). Run under KASAN: on a module that let the listen
/// through, the child's first byte after unregistering is a use after free.
///
/// The attack runs as uid 1000 in the device's group, as any user who may
/// open `/dev/o2g` could make it (see [`crate::unprivileged::run`]).
pub(crate) fn listen_child() -> CheckResult {
    crate::unprivileged::run(listen_child_as_user)
}

fn listen_child_as_user() -> CheckResult {
    let ep = endpoint(EndpointConfig::default())?;
    let (ours, _peer) = tcp_pair()?;
    ep.register_socket(&ours, 1)
        .map_err(libo2g_error("register"))?;
    let fd = ours.as_raw_fd();
    disconnect(fd)?;
    // SAFETY: A plain listen on a socket we own.
    let rc = unsafe { libc::listen(fd, 4) };
    // The disconnect gave back the connection's port: listen took a new one.
    let port = local_port(fd)?;
    if let Some(err) = errno_of(rc) {
        if err != libc::EINVAL {
            return Err(format!(
                "listen on a registered socket: errno {err}, want EINVAL"
            ));
        }
    } else {
        // The dangerous path: show what it leads to, then fail.
        let mut child_peer =
            TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
        // SAFETY: Accepting on the socket we listen on.
        let child = unsafe { libc::accept(fd, std::ptr::null_mut(), std::ptr::null_mut()) };
        ep.unregister_socket(1)
            .map_err(libo2g_error("unregister"))?;
        let _ = child_peer.write_all(b"after unregister");
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: Closing the fd accept returned.
        unsafe { libc::close(child) };
        return Err(
            "listen() succeeded on a registered socket: its children inherit the hooks".into(),
        );
    }
    if get_ulp(fd) != "o2g" {
        return Err(format!(
            "registered socket's TCP_ULP reads {:?}, want \"o2g\"",
            get_ulp(fd)
        ));
    }
    ep.unregister_socket(1)
        .map_err(libo2g_error("unregister"))?;
    if !get_ulp(fd).is_empty() {
        return Err(format!(
            "unregistered socket still has ULP {:?}",
            get_ulp(fd)
        ));
    }
    // A plain socket again: it may listen, and its child is plain too.
    // SAFETY: As above.
    let rc = unsafe { libc::listen(fd, 4) };
    if let Some(err) = errno_of(rc) {
        return Err(format!("listen after unregister: errno {err}"));
    }
    let port = local_port(fd)?;
    let mut child_peer =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect child: {e}"))?;
    let listener = TcpListener::from(std::os::fd::OwnedFd::from(ours));
    let (mut child, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    child_peer
        .write_all(b"plain bytes")
        .map_err(|e| e.to_string())?;
    child
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 11];
    child
        .read_exact(&mut buf)
        .map_err(|e| format!("child read: {e}"))?;
    if &buf != b"plain bytes" {
        return Err(format!("child read {buf:?}"));
    }
    drop(ep);
    println!("listen on a registered socket refused (EINVAL); plain again after unregister");
    Ok(())
}

/// No upper-layer protocol can be attached over o2g's hooks: kTLS on a
/// registered socket fails with `EEXIST`; after unregistering it attaches,
/// and a socket with kTLS cannot be registered (`EBUSY`).
///
/// The attack runs as uid 1000 in the device's group, as any user who may
/// open `/dev/o2g` could make it (see [`crate::unprivileged::run`]).
pub(crate) fn ulp() -> CheckResult {
    crate::unprivileged::run(ulp_as_user)
}

fn ulp_as_user() -> CheckResult {
    let ep = endpoint(EndpointConfig::default())?;
    let (ours, _peer) = tcp_pair()?;
    ep.register_socket(&ours, 1)
        .map_err(libo2g_error("register"))?;
    let fd = ours.as_raw_fd();
    match set_ulp(fd, "tls") {
        Some(libc::EEXIST) => {}
        Some(err) => {
            return Err(format!(
                "TCP_ULP tls on a registered socket: errno {err}, want EEXIST"
            ))
        }
        None => return Err("TCP_ULP tls attached to a registered socket".into()),
    }
    ep.unregister_socket(1)
        .map_err(libo2g_error("unregister"))?;
    if let Some(err) = set_ulp(fd, "tls") {
        return Err(format!("TCP_ULP tls after unregister: errno {err}"));
    }
    match ep.register_socket(&ours, 1) {
        Err(err) if err.raw_os_error() == Some(libc::EBUSY) => {}
        other => return Err(format!("registering a kTLS socket: {other:?}, want EBUSY")),
    }
    println!("kTLS refused on a registered socket (EEXIST); a kTLS socket refused (EBUSY)");
    Ok(())
}

/// Waits at most `secs` for a completion; `None` if there is none.
fn completion_within(ep: &mut Endpoint, secs: u64) -> Result<Option<libo2g::Completed>, String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Some(libo2g::Reaped::Owned(c)) = ep.reap().map_err(libo2g_error("reap"))? {
            return Ok(Some(c));
        }
        ep.poll(Some(Duration::from_millis(200)))
            .map_err(libo2g_error("poll"))?;
    }
    Ok(None)
}

/// A peer cannot pass its messages off as another rank's: a header whose
/// source is not the connection's rank fails that connection (a protocol
/// error), the receive posted for the other rank does not take the forged
/// message, and that rank's real message still arrives.
///
/// The attack runs as uid 1000 in the device's group, as any user who may
/// open `/dev/o2g` could make it (see [`crate::unprivileged::run`]).
pub(crate) fn spoof() -> CheckResult {
    crate::unprivileged::run(spoof_as_user)
}

fn spoof_as_user() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours1, peer1) = tcp_pair()?;
    let (ours2, peer2) = tcp_pair()?;
    ep.register_socket(&ours1, 1)
        .map_err(libo2g_error("register 1"))?;
    ep.register_socket(&ours2, 2)
        .map_err(libo2g_error("register 2"))?;
    let sel = Selector::new(Some(2), Some(5), 0);
    match ep
        .post(vec![0u8; 64], sel, 5)
        .map_err(|p| p.error.to_string())?
    {
        Post::Queued(_) => {}
        _ => return Err("post for rank 2 did not queue".into()),
    }
    // Rank 1 claims to be rank 2.
    let mut forger = Sender::from_rank(peer1, 2);
    forger
        .send(5, b"forged by rank 1")
        .map_err(|e| e.to_string())?;
    if let Some(c) = completion_within(&mut ep, 5)? {
        return Err(format!(
            "the receive for rank 2 completed from rank 1's socket: {:?} {:?}",
            c.status,
            String::from_utf8_lossy(&c.buf[..c.written.min(c.buf.len())])
        ));
    }
    let s1 = ep.socket_stats(1).map_err(libo2g_error("stats 1"))?;
    if s1.state != abi::socket_state::FAILED || s1.protocol_errors != 1 {
        return Err(format!(
            "rank 1's connection not failed as a protocol error: {s1:?}"
        ));
    }
    let mut real = Sender::from_rank(peer2, 2);
    let data = pattern(5, 64);
    real.send(5, &data).map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    if c.status.is_err() || c.buf[..c.written] != data[..] {
        return Err(format!("rank 2's own message: {:?}", c.status));
    }
    println!("a header naming rank 2 on rank 1's connection failed rank 1 only");
    Ok(())
}

/// Urgent data (`MSG_OOB`) fails the connection with a protocol error
/// instead of stopping its reader for good: a receive posted for the
/// message behind the urgent byte completes with a connection failure.
///
/// The attack runs as uid 1000 in the device's group, as any user who may
/// open `/dev/o2g` could make it (see [`crate::unprivileged::run`]).
pub(crate) fn urgent() -> CheckResult {
    crate::unprivileged::run(urgent_as_user)
}

fn urgent_as_user() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, 1)
        .map_err(libo2g_error("register"))?;
    let mut tx = Sender::new(peer);
    tx.send(1, &pattern(1, 100)).map_err(|e| e.to_string())?;
    let sel = |tag| Selector::new(Some(1), Some(tag), 0);
    let (first, status) = crate::harness::receive_from(&mut ep, sel(1), 100)?;
    if status.is_err() || first != pattern(1, 100) {
        return Err(format!("message before the urgent byte: {status:?}"));
    }
    let drop_post = ep
        .post(vec![0u8; 100], sel(2), 2)
        .map_err(|p| p.error.to_string())?;
    drop(drop_post);
    // SAFETY: One byte from a readable buffer on a connected socket.
    let rc = unsafe { libc::send(tx.sock.as_raw_fd(), b"!".as_ptr().cast(), 1, libc::MSG_OOB) };
    if let Some(err) = errno_of(rc as libc::c_int) {
        return Err(format!("send MSG_OOB: errno {err}"));
    }
    let _ = tx.send(2, &pattern(2, 100));
    let Some(c) = completion_within(&mut ep, 20)? else {
        let s = ep.socket_stats(1).map_err(libo2g_error("stats"))?;
        return Err(format!(
            "urgent data left the receive waiting; connection {s:?}"
        ));
    };
    if c.status != Err(RecvError::ConnectionFailed) {
        return Err(format!(
            "receive behind urgent data: {:?}, want a connection failure",
            c.status
        ));
    }
    let s = ep.socket_stats(1).map_err(libo2g_error("stats"))?;
    if s.state != abi::socket_state::FAILED || s.protocol_errors != 1 {
        return Err(format!("connection after urgent data: {s:?}"));
    }
    println!("urgent data failed the connection as a protocol error");
    Ok(())
}

/// This process's pinned memory (`VmPin` of `/proc/self/status`), in kB:
/// every page the module pins for it is charged there and uncharged by the
/// drop that unpins it. (The system-wide pin counters of `/proc/vmstat`
/// also count other pinners in the guest, which made exact checks flaky.)
pub(crate) fn vm_pin_kib() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmPin:")?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .ok_or_else(|| "/proc/self/status has no VmPin".into())
}

/// Eight threads race POST and CANCEL at the posted-queue capacity while a
/// peer's messages complete some of the receives; after the endpoint is
/// closed every pin is released. A post admitted without reserving its
/// slot lets completions overrun the retired list, and the module forgets
/// the buffer with its pages pinned.
///
/// The racing process is uid 1000 in the device's group, so its pins are
/// charged to its own `RLIMIT_MEMLOCK` (root's `CAP_IPC_LOCK` would skip
/// that accounting): the limit is set to [`POST_RACE_MEMLOCK`], room for
/// every thread's buffer twice over, so that posts are not refused, and the
/// `VmPin` balance is that process's own.
pub(crate) fn post_race(args: &[String]) -> CheckResult {
    let secs: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(10);
    crate::unprivileged::run_within(
        Duration::from_secs(secs + 90),
        || set_memlock(POST_RACE_MEMLOCK),
        move || post_race_as_user(secs),
    )
}

/// `RLIMIT_MEMLOCK` for `trust-post-race`: eight 16 MiB buffers, each
/// possibly pinned again while its last pin waits on the retired list.
const POST_RACE_MEMLOCK: u64 = 2 * 8 * (16 << 20);

fn post_race_as_user(secs: u64) -> CheckResult {
    let before = vm_pin_kib()?;
    let mut peak = before;
    let cfg = EndpointConfig {
        max_posted: 4,
        dump_bytes: 1 << 20,
        ..EndpointConfig::default()
    };
    let ep = endpoint(cfg)?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, 1)
        .map_err(libo2g_error("register"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let posts = Arc::new(AtomicU64::new(0));
    let fd = ep.as_fd().as_raw_fd();
    // One large buffer per thread: pinning it takes long enough for the
    // other threads to race through admission, and unpinning it keeps
    // finished buffers on the retired list for a while.
    let len = 16usize << 20;
    let mut threads = Vec::new();
    for t in 0..8u64 {
        let (stop, posts) = (stop.clone(), posts.clone());
        threads.push(std::thread::spawn(move || {
            let mut buf = vec![0u8; len];
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut a = abi::PostArgs {
                    buf: buf.as_mut_ptr() as u64,
                    buf_len: len as u64,
                    user_data: t,
                    source: 1,
                    tag: abi::O2G_ANY_TAG,
                    ..Default::default()
                };
                // SAFETY: `buf` outlives the endpoint's use of it: the
                // module only writes pinned pages, and the endpoint is
                // closed before the buffers are freed (join below).
                let r = unsafe { raw::ioctl(borrow(fd), abi::O2G_IOC_POST, (&raw mut a) as usize) };
                if r.is_ok() && a.outcome == abi::outcome::UNEXPECTED {
                    // A stored message is ours now: give it back, so that
                    // the dump area never fills and messages keep arriving.
                    let id = abi::IdArg { id: a.msg.id };
                    // SAFETY: FREE reads an `IdArg`.
                    let _ = unsafe {
                        raw::ioctl(borrow(fd), abi::O2G_IOC_FREE, (&raw const id) as usize)
                    };
                }
                if r.is_ok() && a.outcome == abi::outcome::QUEUED {
                    n += 1;
                    if n % 2 == 0 {
                        let id = abi::IdArg { id: a.recv_id };
                        // SAFETY: CANCEL reads an `IdArg`.
                        let _ = unsafe {
                            raw::ioctl(borrow(fd), abi::O2G_IOC_CANCEL, (&raw const id) as usize)
                        };
                    }
                }
            }
            posts.fetch_add(n, Ordering::Relaxed);
            buf
        }));
    }
    // The peer completes receives; the ring is drained by reading the
    // producer index forward (consumer = producer), as a busy reaper would.
    let sender_stop = stop.clone();
    let sender = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        let mut sent = 0u64;
        while !sender_stop.load(Ordering::Relaxed) {
            if tx.send(1, &[7u8; 16]).is_err() {
                break;
            }
            sent += 1;
            if sent % 64 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        sent
    });
    let map = SharedMap::new(&ep)?;
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        map.consume_all();
        let _ = raw_sync(fd);
        peak = peak.max(vm_pin_kib()?);
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().map_err(|_| "sender panicked")?;
    let mut bufs = Vec::new();
    for t in threads {
        bufs.push(t.join().map_err(|_| "poster panicked")?);
    }
    drop(map);
    // Close the endpoint before the buffers go: the module unpins them.
    drop(ep);
    drop(bufs);
    // Unpinning of retired buffers may finish on the reclaim work.
    let deadline = Instant::now() + Duration::from_secs(20);
    if peak <= before {
        return Err(format!(
            "VmPin never rose above {before} kB: nothing was pinned"
        ));
    }
    // A refused post charges VmPin for a moment too: only admitted posts
    // show that pages stayed pinned while the threads raced.
    if posts.load(Ordering::Relaxed) == 0 {
        return Err("no post was admitted: nothing raced".into());
    }
    loop {
        let left = vm_pin_kib()?;
        if left == before {
            println!(
                "{} posts raced, {sent} messages; up to {} kB pinned, all released",
                posts.load(Ordering::Relaxed),
                peak - before
            );
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "VmPin {left} kB after closing, {before} kB before: pages stay pinned"
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn borrow(fd: RawFd) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: The tests keep the endpoint open while they use this fd.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

fn raw_sync(fd: RawFd) -> std::io::Result<i32> {
    // SAFETY: SYNC takes no argument.
    unsafe { raw::ioctl(borrow(fd), abi::O2G_IOC_SYNC, 0) }
}

/// A second mapping of an endpoint's shared area, as a hostile process
/// would make it.
struct SharedMap {
    addr: *mut u8,
    len: usize,
    dump_offset: usize,
}

impl SharedMap {
    fn new(ep: &Endpoint) -> Result<Self, String> {
        let layout = ep.layout();
        let len = layout.map_bytes;
        // SAFETY: A fresh shared mapping of the device; the module checks
        // its length and offset.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                ep.as_fd().as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(Self {
            addr: addr.cast(),
            len,
            dump_offset: layout.dump_offset,
        })
    }

    fn word(&self, offset: usize) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: The control words lie in the mapping's first page,
        // aligned, and the mapping lives as long as `self`.
        unsafe { &*self.addr.add(offset).cast::<std::sync::atomic::AtomicU32>() }
    }

    /// Marks every completion read (consumer index = producer index).
    fn consume_all(&self) {
        let prod = self.word(abi::O2G_RING_PROD).load(Ordering::Acquire);
        self.word(abi::O2G_RING_CONS).store(prod, Ordering::Release);
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: Unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

/// The module keeps its own producer index: a process that writes the
/// ring's producer word does not move where the next completion lands,
/// and the module's next publication overwrites the scribble. And a
/// receive buffer inside the endpoint's own mapping is refused.
///
/// The attack runs as uid 1000 in the device's group, as any user who may
/// open `/dev/o2g` could make it (see [`crate::unprivileged::run`]).
pub(crate) fn shared_state() -> CheckResult {
    crate::unprivileged::run(shared_state_as_user)
}

fn shared_state_as_user() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, 1)
        .map_err(libo2g_error("register"))?;
    let map = SharedMap::new(&ep)?;
    let prod = map.word(abi::O2G_RING_PROD);
    let before = prod.load(Ordering::Acquire);
    prod.store(before.wrapping_add(1000), Ordering::Release);
    let mut tx = Sender::new(peer);
    tx.send(3, &pattern(3, 32)).map_err(|e| e.to_string())?;
    let (data, status) =
        crate::harness::receive_from(&mut ep, Selector::new(Some(1), Some(3), 0), 32)?;
    if status.is_err() || data != pattern(3, 32) {
        return Err(format!(
            "message after a scribbled producer index: {status:?}"
        ));
    }
    // A posted receive completes through the ring: its record must land
    // at the module's index.
    let h = ep
        .post(vec![0u8; 32], Selector::new(Some(1), Some(4), 0), 4)
        .map_err(|p| p.error.to_string())?;
    drop(h);
    // Scribbled again just before the completion is published.
    prod.store(before.wrapping_add(77), Ordering::Release);
    tx.send(4, &pattern(4, 32)).map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    let after = prod.load(Ordering::Acquire);
    if c.status.is_err() || c.buf[..c.written] != pattern(4, 32)[..] {
        return Err(format!(
            "completion after a scribbled producer index: {:?}",
            c.status
        ));
    }
    if after != before.wrapping_add(1) {
        return Err(format!(
            "producer index {after} after one completion from {before}: a scribble was read back"
        ));
    }
    // A receive buffer inside the shared mapping (the dump area).
    let mut a = abi::PostArgs {
        // SAFETY: Only an address; the module must refuse to pin it.
        buf: unsafe { map.addr.add(map.dump_offset) } as u64,
        buf_len: 4096,
        user_data: 9,
        source: 1,
        tag: 9,
        ..Default::default()
    };
    // SAFETY: POST reads and writes a `PostArgs`.
    let r = unsafe { raw::ioctl(ep.as_fd(), abi::O2G_IOC_POST, (&raw mut a) as usize) };
    match r {
        Err(err) if err.raw_os_error() == Some(libc::EFAULT) => {}
        other => {
            return Err(format!(
                "POST into the endpoint's own dump area: {other:?} (outcome {}), want EFAULT",
                a.outcome
            ))
        }
    }
    println!("producer index kept by the module; a buffer in the mapping refused (EFAULT)");
    Ok(())
}

/// LIST shows a caller its own endpoints only, unless it has
/// `CAP_SYS_ADMIN`: an unprivileged user does not see root's endpoint
/// (nor its pid).
pub(crate) fn list_visibility() -> CheckResult {
    let mine = endpoint(EndpointConfig::default())?;
    let root_view = mine
        .list_endpoints()
        .map_err(libo2g_error("list as root"))?;
    let me = std::process::id();
    if root_view.endpoints.iter().all(|s| s.pid != me) {
        return Err(format!(
            "root (pid {me}) does not see its own endpoint: {root_view:?}"
        ));
    }
    crate::unprivileged::run(|| {
        let dev = Device::open().map_err(|e| format!("open as uid 1000: {e}"))?;
        let ep = dev
            .init(EndpointConfig {
                dump_bytes: 1 << 20,
                ..EndpointConfig::default()
            })
            .map_err(|e| format!("init as uid 1000: {e}"))?;
        let view = ep
            .list_endpoints()
            .map_err(|e| format!("list as uid 1000: {e}"))?;
        let me = std::process::id();
        if view.endpoints.len() != 1 || view.endpoints[0].pid != me || view.total != 1 {
            let pids: Vec<u32> = view.endpoints.iter().map(|s| s.pid).collect();
            return Err(format!(
                "uid 1000 (pid {me}) sees endpoints of pids {pids:?} (total {}), want only its own",
                view.total
            ));
        }
        Ok(())
    })?;
    let all = mine
        .list_endpoints()
        .map_err(libo2g_error("list as root"))?;
    if all.endpoints.iter().all(|s| s.pid != std::process::id()) {
        return Err("root does not see its own endpoint".into());
    }
    println!("an unprivileged user lists only its own endpoint");
    Ok(())
}

/// When every peer is gone, a receive from any source completes with a
/// connection failure instead of waiting forever, and a new one is
/// refused (`ECONNRESET`); a message stored before still matches.
///
/// The attack runs as uid 1000 in the device's group, as any user who may
/// open `/dev/o2g` could make it (see [`crate::unprivileged::run`]).
pub(crate) fn any_source() -> CheckResult {
    crate::unprivileged::run(any_source_as_user)
}

fn any_source_as_user() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours1, peer1) = tcp_pair()?;
    let (ours2, peer2) = tcp_pair()?;
    ep.register_socket(&ours1, 1)
        .map_err(libo2g_error("register 1"))?;
    ep.register_socket(&ours2, 2)
        .map_err(libo2g_error("register 2"))?;
    let any = |tag| Selector::new(None, Some(tag), 0);
    match ep
        .post(vec![0u8; 16], any(1), 1)
        .map_err(|p| p.error.to_string())?
    {
        Post::Queued(_) => {}
        _ => return Err("any-source post did not queue".into()),
    }
    // Rank 2 leaves a message for tag 2 behind, then both peers go.
    let mut tx2 = Sender::from_rank(peer2, 2);
    tx2.send(2, &pattern(2, 16)).map_err(|e| e.to_string())?;
    drop(peer1);
    if let Some(c) = completion_within(&mut ep, 3)? {
        return Err(format!(
            "any-source receive completed with one peer still up: {:?}",
            c.status
        ));
    }
    drop(tx2);
    let Some(c) = completion_within(&mut ep, 20)? else {
        let s = ep.stats().map_err(libo2g_error("stats"))?;
        return Err(format!(
            "any-source receive still waiting after every peer left: {s:?}"
        ));
    };
    if c.status != Err(RecvError::ConnectionFailed) {
        return Err(format!(
            "any-source receive after every peer left: {:?}",
            c.status
        ));
    }
    let (data, status) = crate::harness::receive_from(&mut ep, any(2), 16)?;
    if status.is_err() || data != pattern(2, 16) {
        return Err(format!("message stored before the peers left: {status:?}"));
    }
    match ep.post(vec![0u8; 16], any(3), 3) {
        Err(p) if p.error.raw_os_error() == Some(libc::ECONNRESET) => {}
        Err(p) => {
            return Err(format!(
                "any-source post with no peer: {}, want ECONNRESET",
                p.error
            ))
        }
        Ok(_) => return Err("any-source post accepted with no live peer".into()),
    }
    println!("any-source receives complete with an error once every peer is gone");
    Ok(())
}

/// Limits an unprivileged user (in the device's group) meets, each with
/// its own errno: pinned receive buffers count against `RLIMIT_MEMLOCK`
/// (`ENOMEM`), a process has at most 16 endpoints (`EMFILE`), and the
/// endpoint's kernel memory is charged to the caller's memory cgroup
/// (`ENOMEM` from INIT over the cgroup's limit). Root would bypass the
/// first (`CAP_IPC_LOCK`), so the checks run as uid 1000.
pub(crate) fn limits() -> CheckResult {
    let memlock = 1u64 << 20;
    crate::unprivileged::run_after(
        || set_memlock(memlock),
        || {
            let ep = Device::open()
                .and_then(|d| {
                    d.init(EndpointConfig {
                        dump_bytes: 1 << 20,
                        pin_budget: 64 << 20,
                        ..EndpointConfig::default()
                    })
                })
                .map_err(|e| format!("endpoint: {e}"))?;
            let (ours, _peer) = tcp_pair()?;
            ep.register_socket(&ours, 1)
                .map_err(libo2g_error("register"))?;
            let fd = ep.as_fd().as_raw_fd();
            let mut big = vec![0u8; 4 << 20];
            match raw_post(fd, &mut big, 1) {
                Err(libc::ENOMEM) => {}
                other => {
                    return Err(format!(
                        "4 MiB receive under a 1 MiB RLIMIT_MEMLOCK: {other:?}, want ENOMEM"
                    ))
                }
            }
            let mut small = vec![0u8; 256 << 10];
            raw_post(fd, &mut small, 2)
                .map_err(|errno| format!("256 KiB receive under a 1 MiB limit: errno {errno}"))?;
            let mut rest = vec![0u8; 900 << 10];
            match raw_post(fd, &mut rest, 3) {
                Err(libc::ENOMEM) => {}
                other => {
                    return Err(format!(
                        "256 KiB + 900 KiB pinned under a 1 MiB limit: {other:?}, want ENOMEM"
                    ))
                }
            }
            drop(ep);
            drop((big, small, rest));
            // Endpoints per process.
            let mut held = Vec::new();
            for i in 0..17 {
                match Device::open() {
                    Ok(d) => held.push(d),
                    Err(err) if i == 16 && err.raw_os_error() == Some(libc::EMFILE) => {}
                    Err(err) => return Err(format!("opening endpoint {}: {err}", i + 1)),
                }
            }
            if held.len() != 16 {
                return Err(format!(
                    "{} endpoints open in one process, want at most 16",
                    held.len()
                ));
            }
            Ok(())
        },
    )?;
    // The memory cgroup.
    let cgroup = MemoryCgroup::new("o2g-limits", 48 << 20)?;
    let procs = cgroup.procs.clone();
    crate::unprivileged::run_after(
        move || {
            std::fs::write(&procs, std::process::id().to_string())
                .map_err(|e| format!("joining the cgroup: {e}"))
        },
        || {
            let init = |dump_bytes| {
                Device::open().and_then(|d| {
                    d.init(EndpointConfig {
                        dump_bytes,
                        ..EndpointConfig::default()
                    })
                })
            };
            match init(128 << 20) {
                Err(err) if err.raw_os_error() == Some(libc::ENOMEM) => {}
                Err(err) => {
                    return Err(format!(
                        "128 MiB dump area in a 48 MiB cgroup: {err}, want ENOMEM"
                    ))
                }
                Ok(_) => {
                    return Err(
                        "a 128 MiB dump area was not charged to a 48 MiB memory cgroup".into(),
                    )
                }
            }
            init(8 << 20).map_err(|e| format!("8 MiB dump area in a 48 MiB cgroup: {e}"))?;
            Ok(())
        },
    )?;
    drop(cgroup);
    println!("RLIMIT_MEMLOCK (ENOMEM), 16 endpoints (EMFILE) and the memory cgroup (ENOMEM) hold for uid 1000");
    Ok(())
}

/// One raw POST of `buf` for tag `tag` from rank 1; the errno on failure.
fn raw_post(fd: RawFd, buf: &mut [u8], tag: u32) -> Result<u32, i32> {
    let mut a = abi::PostArgs {
        buf: buf.as_mut_ptr() as u64,
        buf_len: buf.len() as u64,
        user_data: u64::from(tag),
        source: 1,
        tag,
        ..Default::default()
    };
    // SAFETY: POST reads and writes a `PostArgs`; the buffers outlive the
    // endpoint in the caller.
    match unsafe { raw::ioctl(borrow(fd), abi::O2G_IOC_POST, (&raw mut a) as usize) } {
        Ok(_) => Ok(a.outcome),
        Err(err) => Err(err.raw_os_error().unwrap_or(0)),
    }
}

pub(crate) fn set_memlock(bytes: u64) -> Result<(), String> {
    let lim = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: `lim` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) } != 0 {
        return Err(format!("setrlimit: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// A cgroup v2 with a memory limit, removed on drop.
struct MemoryCgroup {
    dir: std::path::PathBuf,
    procs: std::path::PathBuf,
}

impl MemoryCgroup {
    fn new(name: &str, max: u64) -> Result<Self, String> {
        let root = std::path::Path::new("/sys/fs/cgroup");
        if !root.join("cgroup.controllers").exists() {
            let c = |s: &str| std::ffi::CString::new(s).map_err(|e| e.to_string());
            let (src, target, fs) = (c("none")?, c("/sys/fs/cgroup")?, c("cgroup2")?);
            // SAFETY: Valid C strings; no mount data.
            let rc = unsafe {
                libc::mount(
                    src.as_ptr(),
                    target.as_ptr(),
                    fs.as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
            if rc != 0 {
                return Err(format!(
                    "mount cgroup2: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        std::fs::write(root.join("cgroup.subtree_control"), "+memory")
            .map_err(|e| format!("enabling the memory controller: {e}"))?;
        let dir = root.join(name);
        let _ = std::fs::create_dir(&dir);
        std::fs::write(dir.join("memory.max"), max.to_string())
            .map_err(|e| format!("memory.max: {e}"))?;
        Ok(Self {
            procs: dir.join("cgroup.procs"),
            dir,
        })
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The child has exited, so the cgroup is empty.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// userfaultfd's ABI, as `linux/userfaultfd.h` has it (the libc crate has
/// only the system call number).
mod uffd {
    pub(super) const API: u64 = 0xAA;
    pub(super) const IOC_API: libc::c_ulong = 0xC018_AA3F;
    pub(super) const IOC_REGISTER: libc::c_ulong = 0xC020_AA00;
    pub(super) const IOC_ZEROPAGE: libc::c_ulong = 0xC020_AA04;
    pub(super) const REGISTER_MODE_MISSING: u64 = 1;

    #[repr(C)]
    #[derive(Default)]
    pub(super) struct Api {
        pub(super) api: u64,
        pub(super) features: u64,
        pub(super) ioctls: u64,
    }

    #[repr(C)]
    #[derive(Default)]
    pub(super) struct Register {
        pub(super) start: u64,
        pub(super) len: u64,
        pub(super) mode: u64,
        pub(super) ioctls: u64,
    }

    #[repr(C)]
    #[derive(Default)]
    pub(super) struct ZeroPage {
        pub(super) start: u64,
        pub(super) len: u64,
        pub(super) mode: u64,
        pub(super) zeropage: i64,
    }
}

/// LIST writes to the caller's memory only after dropping the module's
/// endpoint list lock: while one caller's LIST is stuck in a page fault
/// (held by userfaultfd), another process can still open `/dev/o2g`.
///
/// The faulting LIST and the open run as uid 1000 in the device's group.
/// An unprivileged user may only make a userfaultfd that handles faults
/// in kernel code (as the module's copy is) when
/// `vm.unprivileged_userfaultfd` is 1, so root sets it for the check and
/// restores it after.
pub(crate) fn list_fault() -> CheckResult {
    let _uffd = Sysctl::set("/proc/sys/vm/unprivileged_userfaultfd", "1")?;
    crate::unprivileged::run(list_fault_as_user)
}

/// A sysctl set for a while, restored on drop.
struct Sysctl {
    path: &'static str,
    old: String,
}

impl Sysctl {
    fn set(path: &'static str, value: &str) -> Result<Self, String> {
        let old = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        std::fs::write(path, value).map_err(|e| format!("{path} = {value}: {e}"))?;
        Ok(Self {
            path,
            old: old.trim().to_string(),
        })
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, &self.old);
    }
}

fn list_fault_as_user() -> CheckResult {
    let _listed = endpoint(EndpointConfig {
        dump_bytes: 1 << 20,
        ..EndpointConfig::default()
    })?;
    // SAFETY: Plain system calls on descriptors and memory this check owns.
    let (fd, page) = unsafe {
        let fd = libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK) as i32;
        if fd < 0 {
            return Err(format!("userfaultfd: {}", std::io::Error::last_os_error()));
        }
        let mut api = uffd::Api {
            api: uffd::API,
            ..Default::default()
        };
        if libc::ioctl(fd, uffd::IOC_API, &mut api) != 0 {
            return Err(format!("UFFDIO_API: {}", std::io::Error::last_os_error()));
        }
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if page == libc::MAP_FAILED {
            return Err("mmap".into());
        }
        let mut reg = uffd::Register {
            start: page as u64,
            len: 4096,
            mode: uffd::REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        if libc::ioctl(fd, uffd::IOC_REGISTER, &mut reg) != 0 {
            return Err(format!(
                "UFFDIO_REGISTER: {}",
                std::io::Error::last_os_error()
            ));
        }
        (fd, page as usize)
    };
    // LIST into the untouched page: the module's copy faults and waits.
    let lister = std::thread::spawn(move || {
        let dev = Device::open().map_err(|e| format!("open for LIST: {e}"))?;
        let mut arg = abi::EndpointList {
            buf: page as u64,
            capacity: 4096 / std::mem::size_of::<abi::EndpointSummary>() as u32,
            count: 0,
        };
        // SAFETY: LIST reads and writes an `EndpointList` and writes
        // summaries into `page`, which stays mapped.
        unsafe {
            raw::ioctl(
                dev.as_fd(),
                abi::O2G_IOC_LIST_ENDPOINTS,
                (&raw mut arg) as usize,
            )
        }
        .map_err(|e| format!("LIST: {e}"))?;
        Ok::<u32, String>(arg.count)
    });
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: One valid pollfd.
    let faulted = unsafe { libc::poll(&mut pfd, 1, 20_000) } == 1;
    // While the LIST waits in its fault, open the device elsewhere.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let opener = std::thread::spawn(move || {
        let r = Device::open().map(drop).map_err(|e| e.to_string());
        let _ = done_tx.send(r);
    });
    let opened = done_rx.recv_timeout(Duration::from_secs(5));
    // Resolve the fault whatever happened, so that both threads finish.
    let mut zero = uffd::ZeroPage {
        start: page as u64,
        len: 4096,
        ..Default::default()
    };
    // SAFETY: Resolves the registered range; the page stays ours.
    unsafe { libc::ioctl(fd, uffd::IOC_ZEROPAGE, &mut zero) };
    let listed = lister.join().map_err(|_| "lister panicked")?;
    let _ = opener.join();
    // SAFETY: Closing and unmapping what this check made.
    unsafe {
        libc::close(fd);
        libc::munmap(page as *mut libc::c_void, 4096);
    }
    if !faulted {
        return Err("LIST never faulted on the userfaultfd page".into());
    }
    match opened {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("open during a faulting LIST: {e}")),
        Err(_) => {
            return Err(
                "open of /dev/o2g blocked while another caller's LIST waited in a page fault"
                    .into(),
            )
        }
    }
    let count = listed?;
    if count == 0 {
        return Err("LIST found no endpoint".into());
    }
    println!("open went ahead while a LIST waited in a page fault ({count} listed)");
    Ok(())
}

/// The dump area never hands out bytes still in use, whatever order and
/// sizes a peer picks: a stored message A, then an empty one, the process
/// takes A, then a message B that has to wrap to offset 0 and a message C
/// that fits only where B is. An allocator that kept booking from its old
/// tail put C on top of B, and B's receive got C's bytes with no error.
/// Every payload is checked.
pub(crate) fn dump_overlap() -> CheckResult {
    const AREA: usize = 64 << 10;
    let (a_len, b_len, c_len) = (4096, AREA - 4096 + 64, 4096);
    let mut ep = endpoint(EndpointConfig {
        dump_bytes: AREA as u64,
        ..EndpointConfig::default()
    })?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, 1)
        .map_err(libo2g_error("register"))?;
    let mut tx = Sender::new(peer);
    let sel = |tag| Selector::new(Some(1), Some(tag), 0);
    let stored = |ep: &Endpoint, n: u32| -> CheckResult {
        let deadline = Instant::now() + Duration::from_secs(30);
        while ep.stats().map_err(libo2g_error("stats"))?.unexpected < n {
            if Instant::now() > deadline {
                return Err(format!("{n} messages never stored"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    };
    tx.send(1, &pattern(1, a_len)).map_err(|e| e.to_string())?;
    stored(&ep, 1)?;
    tx.send(2, &[]).map_err(|e| e.to_string())?;
    stored(&ep, 2)?;
    let (a, status) = crate::harness::receive_from(&mut ep, sel(1), a_len)?;
    if status.is_err() || a != pattern(1, a_len) {
        return Err(format!("A: {status:?}"));
    }
    tx.send(3, &pattern(3, b_len)).map_err(|e| e.to_string())?;
    stored(&ep, 2)?;
    tx.send(4, &pattern(4, c_len)).map_err(|e| e.to_string())?;
    // C is either stored (there is room) or waits in TCP (there is not);
    // give the module the time to decide.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stalled = ep
            .socket_stats(1)
            .map_err(libo2g_error("socket stats"))?
            .state
            == abi::socket_state::STALLED;
        if stalled || ep.stats().map_err(libo2g_error("stats"))?.unexpected >= 3 {
            break;
        }
        if Instant::now() > deadline {
            return Err("C neither stored nor holding the connection back".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (tag, len) in [(3u32, b_len), (4, c_len), (2, 0)] {
        let (data, status) = crate::harness::receive_from(&mut ep, sel(tag), len.max(1))?;
        if status.is_err() || data != pattern(u64::from(tag), len) {
            let first_bad = data
                .iter()
                .zip(pattern(u64::from(tag), len))
                .position(|(x, y)| *x != y);
            return Err(format!(
                "message {tag} ({len} B) came back wrong: {status:?}, first bad byte {first_bad:?}"
            ));
        }
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.dump_used != 0 || s.unexpected != 0 {
        return Err(format!("dump area not empty at the end: {s:?}"));
    }
    println!("stored, empty, taken, wrapped and squeezed messages all came back intact");
    Ok(())
}
