//! In-guest check of a control connection per direction
//! (`O2G_REGISTER_CONTROL_IN`), as the o2g transport registers them for
//! two ranks on one host: this test is the peer (rank 1) and reads and
//! writes both of the module's control connections raw.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use libo2g::{abi, EndpointConfig, Reaped, RecvError};
use o2g_core::proto::wire::{Header, Kind};

use crate::harness::{endpoint, libo2g_error, next_completion, pattern, tcp_pair};
use crate::rendezvous::{check, next_sent, raw_ioctl, Hostile};
use crate::CheckResult;

/// The endpoint's rank and its peer's (this test).
const A: u32 = 0;
const B: u32 = 1;

/// - Registering: an incoming control connection before its rank's
///   control connection is refused (`EINVAL`), a second one `EEXIST`.
/// - Each way on its own connection: the module writes its clear-to-send
///   and its offer's data on its control connection, and reads the peer's
///   data and clear-to-send from the incoming one, on which it writes
///   nothing.
/// - A peer that breaks the protocol on the incoming connection fails
///   both directions: the offer waiting for its clear-to-send and the
///   receive waiting for its data end with an error, and a new offer to
///   that rank is refused (`ENOTCONN`).
pub(crate) fn control_in() -> CheckResult {
    registration()?;

    let token_env = |token: u64| Header::token_envelope(B, token);
    let mut h = Hostile::per_direction()?;

    // The module receives: its Cts comes on its control connection, the
    // data goes in on the incoming one.
    let len = 300_000;
    let cts = h.request(1, len, 5)?;
    if cts.kind != Kind::Cts || cts.reference != 5 || cts.len != len as u64 {
        return Err(format!("the module's Cts: {cts:?}"));
    }
    let data = pattern(1, len);
    h.ctl_frame(Kind::Data, token_env(cts.token()), len as u64, 5)?;
    h.ctl_writer()
        .write_all(&data)
        .map_err(|e| format!("writing the data: {e}"))?;
    check(&next_completion(&mut h.ep)?, 1, &data, Ok(()))?;

    // The module sends: the peer's Cts goes in on the incoming connection,
    // the data comes on the control connection.
    let offered = pattern(2, 3 << 20);
    let id = h.ep.offer(&offered, B, 2).map_err(libo2g_error("offer"))?;
    h.clear(id, offered.len())?;
    if h.read_pieces(offered.len())? != offered {
        return Err("the module's data differs from its offer".into());
    }
    let s = next_sent(&mut h.ep)?;
    if s.user_data != 2 || s.status.is_err() || s.len != offered.len() as u64 {
        return Err(format!("the offer's record: {s:?}"));
    }

    // Nothing came back on the connection the module only reads.
    let incoming = h.ctl_in.as_mut().ok_or("no incoming control connection")?;
    incoming.set_nonblocking(true).map_err(|e| e.to_string())?;
    match incoming.read(&mut [0u8; 64]) {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => {
            return Err(format!(
                "the module wrote on its incoming control connection: {other:?}"
            ))
        }
    }
    incoming.set_nonblocking(false).map_err(|e| e.to_string())?;

    // A Cts naming no offer, on the incoming connection, while an offer
    // waits for its Cts and a receive for its data.
    let waiting = pattern(3, 4096);
    h.ep.offer(&waiting, B, 3).map_err(libo2g_error("offer"))?;
    h.request(4, 100, 6)?;
    h.ctl_frame(Kind::Cts, token_env(1), 10, 12345)?;
    h.failed("a Cts naming no offer on the incoming connection", 1)?;
    let (mut offer_failed, mut recv_failed) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(offer_failed && recv_failed) {
        match h.ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Sent(s)) if s.user_data == 3 => {
                offer_failed = s.status == Err(RecvError::ConnectionFailed);
                if !offer_failed {
                    return Err(format!("the waiting offer: {s:?}"));
                }
            }
            Some(Reaped::Owned(c)) if c.user_data == 4 => {
                recv_failed = c.status == Err(RecvError::ConnectionFailed);
                if !recv_failed {
                    return Err(format!("the receive waiting for data: {:?}", c.status));
                }
            }
            Some(other) => return Err(format!("unexpected record {other:?}")),
            None if Instant::now() > deadline => {
                return Err(format!(
                    "within 60 s: offer failed {offer_failed}, receive failed {recv_failed}"
                ))
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    match h.ep.offer(&waiting, B, 7) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {}
        other => {
            return Err(format!(
                "an offer after the incoming control connection failed: {other:?}"
            ))
        }
    }
    println!("control per direction: each way on its own connection; a failure ends both");
    Ok(())
}

/// `EINVAL` before the rank's control connection, `EEXIST` for a second.
fn registration() -> CheckResult {
    let ep = endpoint(EndpointConfig::default())?;
    let (first, _far_first) = tcp_pair()?;
    match ep.register_control_in(&first, B, A) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
        other => {
            return Err(format!(
                "an incoming control connection before the control one: {other:?}"
            ))
        }
    }
    let (ctl, _far_ctl) = tcp_pair()?;
    ep.register_control(&ctl, B, A)
        .map_err(libo2g_error("register control"))?;
    ep.register_control_in(&first, B, A)
        .map_err(libo2g_error("register incoming control"))?;
    let (second, _far_second) = tcp_pair()?;
    match ep.register_control_in(&second, B, A) {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
        other => return Err(format!("a second incoming control connection: {other:?}")),
    }
    // Both control flags at once name no role.
    let mut reg = abi::SocketRegistration {
        fd: second.as_raw_fd(),
        rank: 2,
        flags: abi::O2G_REGISTER_CONTROL | abi::O2G_REGISTER_CONTROL_IN,
        local_rank: A,
    };
    match raw_ioctl(&ep, abi::O2G_IOC_REGISTER_SOCKET, &mut reg) {
        Some(libc::EINVAL) => Ok(()),
        other => Err(format!("both control flags at once: errno {other:?}")),
    }
}
