//! How an MPI message rides the NIC: a byte stream of DIMM_Sends.
//!
//! Between two ranks the NIC carries an ordered, reliable byte stream made
//! of DIMM_Send messages. An MPI message on it is the 32-byte o2g-core wire
//! header ([`o2g_core::proto::wire`]) then the payload, exactly as on a TCP
//! connection, so the receive side is o2g-core's stream [`Reassembler`]
//! feeding the shared [`Matcher`] (which does all MPI matching:
//! wildcards, non-overtaking, unexpected messages, probe, cancel). A message
//! normally travels as one DIMM_Send of header + payload (gathered, no
//! copy to join them); one longer than [`DIMM_MSG_MAX`] (the crate carries
//! at most 4 GiB per DIMM_Send) continues in further DIMM_Sends, which the
//! reassembler joins because it only sees bytes. The crate itself splits
//! each DIMM_Send into chunks of the granted receive buffers.
//!
//! [`Reassembler`]: o2g_core::proto::stream::Reassembler

use o2g_core::proto::stream::Event;
use o2g_core::proto::wire::HEADER_LEN;
use o2g_dimmnet::{DimmEndpoint, SendOp};

use super::peer::Peer;
use crate::transport::matcher::{Matcher, Sink};

/// Most stream bytes one DIMM_Send carries (the crate's limit is 4 GiB).
pub(super) const DIMM_MSG_MAX: u64 = 1 << 31;

/// Where the payload of the message being received goes.
pub(super) enum Target {
    Matcher(Sink),
    Overflow,
}

/// A message (or what is left of it) waiting to go to one peer.
pub(super) struct Out {
    pub(super) token: u64,
    pub(super) head: [u8; HEADER_LEN],
    pub(super) body: Vec<u8>,
    /// Stream bytes (header and body) of completed DIMM_Sends.
    pub(super) pos: u64,
    /// The DIMM_Send under way, covering the stream from `pos`.
    pub(super) op: Option<SendOp>,
}

/// The pieces of stream bytes `[from, from + len)` of a message whose
/// stream is `head` then `body`.
fn stream_parts<'a>(head: &'a [u8], body: &'a [u8], from: u64, len: u64) -> [&'a [u8]; 2] {
    let h = head.len() as u64;
    let end = from + len;
    let head_part = &head[from.min(h) as usize..end.min(h) as usize];
    let body_part = &body[from.saturating_sub(h) as usize..end.saturating_sub(h) as usize];
    [head_part, body_part]
}

/// Moves a message's stream on as far as the grants allow; whether all of
/// it is in `dest`'s NIC memory.
pub(super) fn advance(
    ep: &mut DimmEndpoint,
    dest: u32,
    max: u64,
    op: &mut Option<SendOp>,
    pos: &mut u64,
    head: &[u8],
    body: &[u8],
) -> o2g_dimmnet::Result<bool> {
    let total = (head.len() + body.len()) as u64;
    loop {
        let o = match op {
            Some(o) => o,
            None => {
                if *pos == total {
                    return Ok(true);
                }
                let len = (total - *pos).min(max);
                op.insert(ep.send_start(dest, len as usize)?)
            }
        };
        let parts = stream_parts(head, body, *pos, o.len() as u64);
        if !ep.send_step(o, &parts)? {
            return Ok(false);
        }
        *pos += o.len() as u64;
        *op = None;
    }
}

/// Runs received stream bytes of peer `rank` through its reassembler into
/// the matcher.
pub(super) fn feed(
    peer: &mut Peer,
    matcher: &mut Matcher,
    rank: u32,
    mut input: &[u8],
) -> Result<(), String> {
    loop {
        let step = peer
            .rx
            .feed(input)
            .map_err(|e| format!("protocol error: {e}"))?;
        input = &input[step.consumed..];
        match step.event {
            None => return Ok(()),
            Some(Event::Header(h)) => {
                if h.envelope.source != rank {
                    return Err(format!(
                        "protocol error: a message claiming to come from rank {}",
                        h.envelope.source
                    ));
                }
                let target = if peer.overflow.is_empty() {
                    matcher.arrive(h.envelope, h.len).ok().map(Target::Matcher)
                } else {
                    None
                };
                peer.target = Some(target.unwrap_or_else(|| {
                    peer.overflow.push_back((h.envelope, Vec::new(), false));
                    Target::Overflow
                }));
            }
            Some(Event::Payload { data, .. }) => match &peer.target {
                Some(Target::Matcher(sink)) => matcher.payload(sink, data),
                Some(Target::Overflow) => {
                    if let Some(m) = peer.overflow.back_mut() {
                        m.1.extend_from_slice(data);
                    }
                }
                None => {}
            },
            Some(Event::End(_)) => match peer.target.take() {
                Some(Target::Matcher(sink)) => matcher.end(sink),
                Some(Target::Overflow) => {
                    if let Some(m) = peer.overflow.back_mut() {
                        m.2 = true;
                    }
                }
                None => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_parts_cover_header_then_body() {
        let head = [1u8, 2, 3];
        let body = [4u8, 5, 6, 7];
        let all: Vec<u8> = head.iter().chain(&body).copied().collect();
        for from in 0..=7u64 {
            for len in 0..=7 - from {
                let [a, b] = stream_parts(&head, &body, from, len);
                let got: Vec<u8> = a.iter().chain(b).copied().collect();
                assert_eq!(got, &all[from as usize..(from + len) as usize]);
            }
        }
    }
}
