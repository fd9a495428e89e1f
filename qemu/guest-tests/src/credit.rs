//! In-guest checks of eager credit (`abi::O2G_INIT_CREDIT`): the window
//! a receiving module grants and gives back on the wire (in the order its
//! sender's ring reclaims), the bound on what a peer may leave stored,
//! what a peer that sends beyond its credit gets, a ring per rank, and
//! credit taken through `O2G_IOC_TAKE_CREDIT` (from a peer's module and
//! from oneself).
//!
//! The receiver is endpoint A (rank 0); its peer B (rank 1) is this test
//! writing raw frames, or a second endpoint.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use libo2g::{CreditConfig, Endpoint, EndpointConfig};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{Encoder, Header, Kind, HEADER_LEN};

use crate::harness::{endpoint, libo2g_error, pattern, receive, tcp_pair};
use crate::rendezvous::wait_until;
use crate::CheckResult;

const A: u32 = 0;
const B: u32 = 1;
/// The longest eager message.
const LIMIT: usize = 4096;
/// Eager messages each peer may leave stored.
const WINDOW: u32 = 8;
/// The dump area: a ring of 16 KiB per rank for 4 ranks.
const DUMP: u64 = 64 << 10;

fn credit_config(ranks: u32) -> CreditConfig {
    CreditConfig {
        eager_limit: LIMIT as u64,
        window_msgs: WINDOW,
        ranks,
    }
}

/// A credited endpoint of a 64 KiB dump area for peers below `ranks`.
fn credited(ranks: u32) -> Result<Endpoint, String> {
    endpoint(EndpointConfig {
        dump_bytes: DUMP,
        credit: Some(credit_config(ranks)),
        ..EndpointConfig::default()
    })
}

/// The window each peer of `credited(ranks)` gets: (bytes, messages).
fn window(ranks: u32) -> Result<(u64, u32), String> {
    let w = credit_config(ranks)
        .window(DUMP)
        .ok_or_else(|| format!("no window for {ranks} ranks in {DUMP} bytes"))?;
    Ok((w.bytes, w.msgs))
}

/// Endpoint A with raw peer B: B writes messages on `msg` and reads what
/// A's module writes on `ctl`.
struct RawPeer {
    a: Endpoint,
    msg: TcpStream,
    ctl: TcpStream,
    enc: Encoder,
    _keep: Vec<TcpStream>,
}

impl RawPeer {
    fn new() -> Result<Self, String> {
        let a = credited(4)?;
        let (a_msg, msg) = tcp_pair()?;
        let (a_ctl, ctl) = tcp_pair()?;
        a.register_socket(&a_msg, B)
            .map_err(libo2g_error("register messages"))?;
        a.register_control(&a_ctl, B, A)
            .map_err(libo2g_error("register control"))?;
        ctl.set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        Ok(Self {
            a,
            msg,
            ctl,
            enc: Encoder::new(),
            _keep: vec![a_msg, a_ctl],
        })
    }

    /// Reads the next `Credit` A's module wrote: (bytes, messages).
    fn credit(&mut self) -> Result<(u64, u32), String> {
        let mut raw = [0u8; HEADER_LEN];
        self.ctl
            .read_exact(&mut raw)
            .map_err(|e| format!("reading A's credit: {e}"))?;
        let h = Header::decode(&raw).map_err(|e| format!("A's credit: {e}"))?;
        if h.kind != Kind::Credit || h.envelope.source != A {
            return Err(format!(
                "A wrote {:?} from {}, not credit",
                h.kind, h.envelope.source
            ));
        }
        Ok((h.len, h.reference))
    }

    fn eager(&mut self, tag: u32, payload: &[u8]) -> CheckResult {
        let h = self.enc.encode(Kind::Eager, env(tag), payload.len() as u64);
        self.msg
            .write_all(&h)
            .and_then(|()| self.msg.write_all(payload))
            .map_err(|e| format!("write eager {tag}: {e}"))
    }

    fn rts(&mut self, tag: u32, size: u64, offer: u32) -> CheckResult {
        let h = self.enc.encode_ref(Kind::Rts, env(tag), size, offer);
        self.msg
            .write_all(&h)
            .map_err(|e| format!("write Rts {tag}: {e}"))
    }
}

fn env(tag: u32) -> Envelope {
    Envelope {
        source: B,
        tag,
        context: 0,
    }
}

/// The first window, a full window stored (and no more held than it),
/// credit given back only as the ring reclaims (not for messages taken
/// while an older one is stored), and a peer that sends one eager message
/// beyond its credit failed with a protocol error.
fn window_on_the_wire() -> CheckResult {
    let mut p = RawPeer::new()?;
    let (window_bytes, window_msgs) = window(4)?;
    let first = p.credit()?;
    if first != (window_bytes, window_msgs) {
        return Err(format!(
            "first credit {first:?}, want ({window_bytes}, {window_msgs})"
        ));
    }
    // A window of messages fills the credit in messages and bytes.
    let len = (window_bytes / u64::from(WINDOW)) as usize;
    let held = len as u64 * u64::from(WINDOW);
    for tag in 0..WINDOW {
        p.eager(tag, &pattern(u64::from(tag), len))?;
    }
    wait_until(&p.a, "a window of messages stored", |s| {
        s.unexpected == WINDOW
    })?;
    let r = p.a.rndv_stats().map_err(libo2g_error("rndv stats"))?;
    if r.window_bytes != window_bytes || r.held_peak != held {
        return Err(format!(
            "window {} held peak {} (want {window_bytes} and {held})",
            r.window_bytes, r.held_peak
        ));
    }
    // Messages 1..=4 taken while 0 is stored: the ring reclaims nothing
    // yet, so the next message on the connection (a request to send, as
    // a sender out of credit writes) brings nothing back; once 0 is taken
    // too, the next one brings all five.
    let take = |a: &mut Endpoint, tag: u32| -> CheckResult {
        let (got, status) = receive(a, tag, len)?;
        if status.is_err() || got != pattern(u64::from(tag), len) {
            return Err(format!("stored message {tag}: {status:?} or wrong bytes"));
        }
        Ok(())
    };
    for tag in 1..=WINDOW / 2 {
        take(&mut p.a, tag)?;
    }
    p.rts(100, 10, 7)?;
    take(&mut p.a, 0)?;
    p.rts(101, 10, 8)?;
    let back = p.credit()?;
    let reclaimed = WINDOW / 2 + 1;
    let want = (len as u64 * u64::from(reclaimed), reclaimed);
    if back != want {
        return Err(format!(
            "credit given back {back:?}, want {want:?} (in the ring's order)"
        ));
    }
    for tag in WINDOW..WINDOW + reclaimed {
        p.eager(tag, &pattern(u64::from(tag), 1))?;
    }
    wait_until(&p.a, "the returned credit spent", |s| {
        s.unexpected == WINDOW + 2 && s.failed_sockets == 0
    })?;
    p.eager(99, &[1])?;
    wait_until(&p.a, "an eager message beyond credit fails", |s| {
        s.failed_sockets == 1 && s.protocol_errors == 1
    })?;
    let r = p.a.rndv_stats().map_err(libo2g_error("rndv stats"))?;
    if r.held_peak > window_bytes || r.credits_sent != 2 {
        return Err(format!(
            "held peak {} (bound {window_bytes}), {} credits sent (want 2)",
            r.held_peak, r.credits_sent
        ));
    }
    Ok(())
}

/// An eager message longer than the limit breaks the protocol even
/// within credit.
fn longer_than_the_limit() -> CheckResult {
    let mut p = RawPeer::new()?;
    let (bytes, _) = p.credit()?;
    if bytes <= LIMIT as u64 {
        return Err(format!(
            "a window of {bytes} bytes covers no longer message"
        ));
    }
    p.eager(1, &vec![7u8; LIMIT + 1])?;
    wait_until(&p.a, "an eager message longer than the limit fails", |s| {
        s.failed_sockets == 1 && s.protocol_errors == 1
    })
}

/// Each rank below the table has a ring and a window of its own, also
/// when registered again; ranks beyond the table and endpoints without
/// credit are refused clearly.
fn a_ring_per_rank() -> CheckResult {
    let a = credited(4)?;
    let mut keep = Vec::new();
    let mut register = |rank: u32| -> Result<Result<(), Option<i32>>, String> {
        let (ours, theirs) = tcp_pair()?;
        let r = a.register_socket(&ours, rank).map_err(|e| e.raw_os_error());
        keep.push((ours, theirs));
        Ok(r)
    };
    for rank in [1, 2, 3] {
        register(rank)?.map_err(|e| format!("rank {rank}: {e:?}"))?;
    }
    let beyond = register(4)?;
    if beyond != Err(Some(libc::EINVAL)) {
        return Err(format!("a rank beyond the table: {beyond:?}"));
    }
    a.unregister_socket(2).map_err(libo2g_error("unregister"))?;
    register(2)?.map_err(|e| format!("rank 2 again after it left: {e:?}"))?;
    let beyond = a.take_credit(4).map_err(|e| e.raw_os_error());
    if beyond != Err(Some(libc::EINVAL)) {
        return Err(format!("credit of a rank beyond the table: {beyond:?}"));
    }
    let plain = endpoint(EndpointConfig::default())?;
    let none = plain.take_credit(1).map_err(|e| e.raw_os_error());
    if none != Err(Some(libc::EOPNOTSUPP)) {
        return Err(format!("credit on an endpoint without it: {none:?}"));
    }
    Ok(())
}

/// Waits (bounded) for credit from `rank` through `O2G_IOC_TAKE_CREDIT`.
fn take(ep: &Endpoint, rank: u32) -> Result<(u64, u32), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut sum = (0, 0);
    loop {
        let (bytes, msgs) = ep.take_credit(rank).map_err(libo2g_error("take credit"))?;
        sum = (sum.0 + bytes, sum.1 + msgs);
        if sum.1 > 0 {
            return Ok(sum);
        }
        if Instant::now() > deadline {
            return Err(format!("no credit from rank {rank} within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Credit from a peer's module reaches the process, once; credit to
/// oneself comes from one's own window.
fn taken_by_the_sender() -> CheckResult {
    let window = window(2)?;
    let a = credited(2)?;
    let b = credited(2)?;
    let (a_msg, b_msg) = tcp_pair()?;
    let (a_ctl, b_ctl) = tcp_pair()?;
    a.register_socket(&a_msg, B)
        .map_err(libo2g_error("register A"))?;
    a.register_control(&a_ctl, B, A)
        .map_err(libo2g_error("register A's control"))?;
    b.register_control(&b_ctl, A, B)
        .map_err(libo2g_error("register B's control"))?;
    let got = take(&b, A)?;
    if got != window {
        return Err(format!("B took {got:?} from A, want {window:?}"));
    }
    let again = b.take_credit(A).map_err(libo2g_error("take credit"))?;
    if again != (0, 0) {
        return Err(format!("credit taken twice: {again:?}"));
    }
    let (self_in, self_out) = tcp_pair()?;
    b.register_self(&self_in, B)
        .map_err(libo2g_error("register self"))?;
    let own = take(&b, B)?;
    if own != window {
        return Err(format!("B took {own:?} from itself, want {window:?}"));
    }
    let r = b.rndv_stats().map_err(libo2g_error("rndv stats"))?;
    if r.credits_received != 1 || r.credits_sent != 1 {
        return Err(format!(
            "B: {} credits received, {} sent (want 1 each: A's, its own)",
            r.credits_received, r.credits_sent
        ));
    }
    drop((b_msg, self_out));
    Ok(())
}

pub(crate) fn check() -> CheckResult {
    window_on_the_wire().map_err(|e| format!("window: {e}"))?;
    longer_than_the_limit().map_err(|e| format!("limit: {e}"))?;
    a_ring_per_rank().map_err(|e| format!("rings: {e}"))?;
    taken_by_the_sender().map_err(|e| format!("take: {e}"))
}
