//! In-guest checks of socket registration: who may be hooked, that the hook
//! sees traffic, and that every way of letting go restores a plain socket.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use libo2g::{Device, Endpoint, EndpointConfig};

use crate::CheckResult;

/// A connected loopback TCP pair: (ours, peer).
fn tcp_pair() -> Result<(TcpStream, TcpStream), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let ours = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    let (peer, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    for s in [&ours, &peer] {
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .map_err(|e| e.to_string())?;
    }
    Ok((ours, peer))
}

/// An initialised endpoint with small capacities.
fn open() -> Result<Endpoint, String> {
    let cfg = EndpointConfig {
        dump_bytes: 1 << 20,
        ..EndpointConfig::default()
    };
    Device::open()
        .and_then(|d| d.init(cfg))
        .map_err(|e| e.to_string())
}

fn expect_errno(r: libo2g::Result<()>, want: i32, what: &str) -> CheckResult {
    match r {
        Err(e) if e.raw_os_error() == Some(want) => Ok(()),
        Err(e) => Err(format!("{what}: got {e}, want errno {want}")),
        Ok(()) => Err(format!("{what}: succeeded, want errno {want}")),
    }
}

/// Every kind of bad registration gets its own clear errno.
pub(crate) fn register_errors() -> CheckResult {
    {
        let (tcp, _peer) = tcp_pair()?;
        let raw = Device::open().map_err(|e| e.to_string())?;
        expect_errno(
            raw.register_socket(&tcp, 1),
            libc::EBADFD,
            "register before INIT",
        )?;
    }
    let dev = open()?;
    let other = open()?;
    let (tcp, _peer) = tcp_pair()?;
    let (tcp2, _peer2) = tcp_pair()?;

    let file = std::fs::File::open("/proc/self/status").map_err(|e| e.to_string())?;
    expect_errno(
        dev.register_socket(&file, 1),
        libc::ENOTSOCK,
        "regular file",
    )?;
    let udp = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    expect_errno(dev.register_socket(&udp, 1), libc::EPROTOTYPE, "UDP socket")?;
    let (unix, _unix_peer) = UnixStream::pair().map_err(|e| e.to_string())?;
    expect_errno(
        dev.register_socket(&unix, 1),
        libc::EPROTOTYPE,
        "AF_UNIX stream",
    )?;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    expect_errno(
        dev.register_socket(&listener, 1),
        libc::ENOTCONN,
        "listening TCP socket",
    )?;
    // SAFETY: `socket(2)` returns a new fd that nothing else owns, or -1.
    let fresh = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    if fresh < 0 {
        return Err("socket(2) failed".into());
    }
    // SAFETY: `fresh` is a valid fd owned by nobody else.
    let fresh = unsafe { OwnedFd::from_raw_fd(fresh) };
    expect_errno(
        dev.register_socket(&fresh, 1),
        libc::ENOTCONN,
        "unconnected TCP socket",
    )?;
    expect_errno(
        dev.register_socket(&tcp, libo2g::abi::O2G_MAX_RANK),
        libc::EINVAL,
        "rank out of range",
    )?;

    dev.register_socket(&tcp, 1)
        .map_err(|e| format!("good registration: {e}"))?;
    expect_errno(
        dev.register_socket(&tcp, 2),
        libc::EBUSY,
        "same socket twice",
    )?;
    expect_errno(
        other.register_socket(&tcp, 1),
        libc::EBUSY,
        "socket of another endpoint",
    )?;
    expect_errno(
        dev.register_socket(&tcp2, 1),
        libc::EEXIST,
        "duplicate rank",
    )?;
    expect_errno(
        dev.unregister_socket(7),
        libc::ENOENT,
        "unregister unknown rank",
    )?;
    dev.register_socket(&tcp2, 2)
        .map_err(|e| format!("second rank: {e}"))?;
    let stats = dev.stats().map_err(|e| e.to_string())?;
    if stats.sockets != 2 {
        return Err(format!("stats say {} sockets, want 2", stats.sockets));
    }
    dev.unregister_socket(1).map_err(|e| e.to_string())?;
    other
        .register_socket(&tcp, 9)
        .map_err(|e| format!("re-register elsewhere: {e}"))?;
    Ok(())
}

/// Sends `msg` from `peer` and reads it back on `ours` with a plain read.
fn plain_roundtrip(ours: &mut TcpStream, peer: &mut TcpStream, msg: &[u8]) -> CheckResult {
    peer.write_all(msg).map_err(|e| format!("send: {e}"))?;
    let mut buf = vec![0u8; msg.len()];
    ours.read_exact(&mut buf)
        .map_err(|e| format!("read: {e}"))?;
    if buf != msg {
        return Err("data changed on the way".into());
    }
    Ok(())
}

/// While hooked, the module consumes the socket's traffic (an o2g message
/// lands in a posted receive). Unregistering, closing the socket's fd
/// first, and closing the device all leave plain sockets.
pub(crate) fn hook_passthrough() -> CheckResult {
    use o2g_core::proto::{
        envelope::Envelope,
        wire::{Encoder, Kind},
    };
    let mut dev = open()?;
    let (mut ours, mut peer) = tcp_pair()?;
    dev.register_socket(&ours, 3).map_err(|e| e.to_string())?;
    let before = dev.stats().map_err(|e| e.to_string())?.data_ready_events;
    let sel = libo2g::Selector::new(Some(3), Some(1), 0);
    let _ = dev
        .post(vec![0u8; 1 << 20], sel, 9)
        .map_err(|p| p.error.to_string())?;
    let big = vec![0x5au8; 1 << 20];
    let env = Envelope {
        source: 3,
        tag: 1,
        context: 0,
    };
    peer.write_all(&Encoder::new().encode(Kind::Eager, env, big.len() as u64))
        .and_then(|()| peer.write_all(&big))
        .map_err(|e| e.to_string())?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let done = loop {
        if let Some(libo2g::Reaped::Owned(c)) = dev.reap().map_err(|e| e.to_string())? {
            break c;
        }
        if std::time::Instant::now() > deadline {
            return Err("no completion while hooked".into());
        }
        dev.poll(Some(Duration::from_millis(200)))
            .map_err(|e| e.to_string())?;
    };
    if done.status.is_err() || done.buf != big {
        return Err(format!("message changed while hooked: {:?}", done.status));
    }
    let after = dev.stats().map_err(|e| e.to_string())?.data_ready_events;
    if after <= before {
        return Err(format!(
            "hook saw no data_ready events ({before} -> {after})"
        ));
    }
    println!("hook saw {} data_ready events for 1 MiB", after - before);

    dev.unregister_socket(3).map_err(|e| e.to_string())?;
    plain_roundtrip(&mut ours, &mut peer, b"after unregister")?;
    let still = dev.stats().map_err(|e| e.to_string())?;
    if still.sockets != 0 || still.data_ready_events != after {
        return Err(format!(
            "after unregister the hook still counts: {still:?}, had {after} events"
        ));
    }

    // Closing the device with a socket registered restores it too.
    dev.register_socket(&ours, 3).map_err(|e| e.to_string())?;
    drop(dev);
    plain_roundtrip(&mut ours, &mut peer, b"after close")?;
    let dev = open()?;
    dev.register_socket(&ours, 3)
        .map_err(|e| format!("not released by close: {e}"))?;

    // The module keeps its own reference: closing our fd first is harmless,
    // and traffic to the now fd-less socket is absorbed until the device goes.
    drop(ours);
    peer.write_all(b"into a socket only o2g still holds")
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(200));
    drop(dev);
    Ok(())
}
