//! Misbehaving peers (garbage, an oversize length, a close mid-message)
//! fail only their own connection.

use std::io::Write;

use libo2g::{Endpoint, EndpointConfig, RecvError, Selector};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{Encoder, Kind};

use crate::harness::{endpoint, libo2g_error, next_completion, tcp_pair};
use crate::CheckResult;

/// A malformed header, an oversize length and a close mid-message each
/// fail only their own connection, with the pending receive completing
/// with an error; a healthy connection carries on.
pub(crate) fn misbehaviour() -> CheckResult {
    let cfg = EndpointConfig {
        max_message: 1 << 20,
        ..EndpointConfig::default()
    };
    let mut ep = endpoint(cfg)?;
    let mut peers = Vec::new();
    let mut keep = Vec::new();
    for rank in 1..=4u32 {
        let (ours, peer) = tcp_pair()?;
        ep.register_socket(&ours, rank)
            .map_err(libo2g_error("register"))?;
        keep.push(ours);
        peers.push(peer);
    }
    let post = |ep: &mut Endpoint, rank: u32| {
        let s = Selector::new(Some(rank), Some(7), 0);
        ep.post(vec![0u8; 64], s, u64::from(rank))
            .map(|_| ())
            .map_err(|p| p.error.to_string())
    };
    for rank in 1..=4 {
        post(&mut ep, rank)?;
    }
    // 1: garbage instead of a header.
    peers[0]
        .write_all(&[0xffu8; 64])
        .map_err(|e| e.to_string())?;
    // 2: a header announcing more than max_message.
    let mut enc = Encoder::new();
    let env = |source| Envelope {
        source,
        tag: 7,
        context: 0,
    };
    peers[1]
        .write_all(&enc.encode(Kind::Eager, env(2), 1 << 30))
        .map_err(|e| e.to_string())?;
    // 3: half a message, then close.
    let mut enc3 = Encoder::new();
    peers[2]
        .write_all(&enc3.encode(Kind::Eager, env(3), 64))
        .map_err(|e| e.to_string())?;
    peers[2].write_all(&[1u8; 20]).map_err(|e| e.to_string())?;
    peers[2]
        .shutdown(std::net::Shutdown::Both)
        .map_err(|e| e.to_string())?;
    let mut failed = Vec::new();
    for _ in 0..3 {
        let c = next_completion(&mut ep)?;
        if c.status != Err(RecvError::ConnectionFailed) {
            return Err(format!(
                "rank {}: status {:?}, want ConnectionFailed",
                c.user_data, c.status
            ));
        }
        failed.push(c.user_data);
    }
    failed.sort_unstable();
    if failed != [1, 2, 3] {
        return Err(format!("failed ranks {failed:?}"));
    }
    // 4 still works.
    let mut enc4 = Encoder::new();
    peers[3]
        .write_all(&enc4.encode(Kind::Eager, env(4), 5))
        .map_err(|e| e.to_string())?;
    peers[3].write_all(b"alive").map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    if c.user_data != 4 || c.status.is_err() || &c.buf[..c.written] != b"alive" {
        return Err(format!("healthy connection broken: {:?}", c.status));
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.protocol_errors != 2 || s.failed_sockets != 3 {
        return Err(format!("counters: {s:?}"));
    }
    for rank in 1..=3 {
        let st = ep
            .socket_stats(rank)
            .map_err(libo2g_error("socket stats"))?;
        if st.state != libo2g::abi::socket_state::FAILED {
            return Err(format!("rank {rank} state {}", st.state));
        }
    }
    // A post for a failed rank is refused at once.
    match post(&mut ep, 1) {
        Err(msg) if msg.contains("reset") || msg.contains("ECONNRESET") || msg.contains("104") => {}
        other => return Err(format!("post to a failed rank: {other:?}")),
    }
    println!("garbage, oversize and truncated peers failed alone; {s:?}");
    Ok(())
}
