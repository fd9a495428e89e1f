//! Peers that go away (a clean close, a reset) fail the receives posted
//! for them.

use libo2g::{EndpointConfig, RecvError, Selector};

use crate::harness::{endpoint, libo2g_error, next_completion, receive, tcp_pair, Sender};
use crate::CheckResult;

/// A peer that closes between messages and a peer that resets the
/// connection (an RST, which never calls `sk_data_ready`) both fail their
/// connection: the receives posted for them complete with an error.
pub(crate) fn peer_gone() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (closing_ours, closing) = tcp_pair()?;
    let (resetting_ours, resetting) = tcp_pair()?;
    ep.register_socket(&closing_ours, 1)
        .map_err(libo2g_error("register"))?;
    ep.register_socket(&resetting_ours, 2)
        .map_err(libo2g_error("register"))?;
    // One whole message first: the close comes at a message boundary.
    let mut tx = Sender::from_rank(closing, 1);
    tx.send(3, b"last words").map_err(|e| e.to_string())?;
    let (data, status) = receive(&mut ep, 3, 64)?;
    if status.is_err() || data != b"last words" {
        return Err(format!("message before the close: {status:?}"));
    }
    for rank in [1u32, 2] {
        let s = Selector::new(Some(rank), Some(4), 0);
        ep.post(vec![0u8; 64], s, u64::from(rank))
            .map_err(|p| p.error.to_string())?;
    }
    drop(tx);
    let off = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `resetting` is an open socket and `off` a valid linger value
    // that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&resetting),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const off).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(format!("SO_LINGER: {}", std::io::Error::last_os_error()));
    }
    drop(resetting); // closes with an RST
    let mut failed = Vec::new();
    for _ in 0..2 {
        let c = next_completion(&mut ep)?;
        if c.status != Err(RecvError::ConnectionFailed) {
            return Err(format!("rank {}: {:?}", c.user_data, c.status));
        }
        failed.push(c.user_data);
    }
    failed.sort_unstable();
    if failed != [1, 2] {
        return Err(format!("completed ranks {failed:?}"));
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.failed_sockets != 2 || s.protocol_errors != 0 {
        return Err(format!("counters: {s:?}"));
    }
    println!("clean close and reset both failed their receives");
    Ok(())
}
