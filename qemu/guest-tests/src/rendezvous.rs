//! In-guest checks of rendezvous between two endpoints' modules: the
//! receiver's module answers a request to send with a clear-to-send, the
//! sender's module sends the data from the offered pages, both from work
//! items; and what a hostile peer or ioctl caller gets for breaking the
//! rules.
//!
//! Endpoint A (rank 0) receives; endpoint B (rank 1) sends. Each pair of
//! ranks has a messages connection, which B's process writes (the `Rts`
//! headers, as the o2g transport does), and a control connection, which
//! only the modules write.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use libo2g::{abi, Endpoint, EndpointConfig, Post, Reaped, RecvError, Sent};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{Encoder, Header, Kind, HEADER_LEN};

use crate::harness::{
    endpoint, libo2g_error, next_completion, pattern, sel, tcp_pair, wait_for_stats,
};
use crate::trust::vm_pin_kib;
use crate::CheckResult;

/// A's rank (the receiver) and B's (the sender, `harness::PEER`).
const A: u32 = 0;
const B: u32 = 1;

/// Two endpoints joined by a messages and a control connection.
struct Pair {
    a: Endpoint,
    b: Endpoint,
    /// B's process's end of the messages connection, which A's module reads.
    b_msg: TcpStream,
    /// B's end of the control connection, which only B's module writes.
    b_ctl: TcpStream,
    enc: Encoder,
    _keep: Vec<TcpStream>,
}

impl Pair {
    fn new(cfg: EndpointConfig) -> Result<Self, String> {
        let a = endpoint(cfg)?;
        let b = endpoint(cfg)?;
        let (a_msg, b_msg) = tcp_pair()?;
        let (a_ctl, b_ctl) = tcp_pair()?;
        a.register_socket(&a_msg, B)
            .map_err(libo2g_error("register A's messages"))?;
        a.register_control(&a_ctl, B, A)
            .map_err(libo2g_error("register A's control"))?;
        b.register_control(&b_ctl, A, B)
            .map_err(libo2g_error("register B's control"))?;
        Ok(Self {
            a,
            b,
            b_msg,
            b_ctl,
            enc: Encoder::new(),
            _keep: vec![a_msg, a_ctl],
        })
    }

    /// B offers `data` and writes its request to send with `tag`.
    fn send(&mut self, tag: u32, data: &[u8], user_data: u64) -> Result<u32, String> {
        let id = self
            .b
            .offer(data, A, user_data)
            .map_err(libo2g_error("offer"))?;
        self.rts(tag, data.len() as u64, id)?;
        Ok(id)
    }

    fn rts(&mut self, tag: u32, size: u64, id: u32) -> Result<(), String> {
        let env = Envelope {
            source: B,
            tag,
            context: 0,
        };
        let h = self.enc.encode_ref(Kind::Rts, env, size, id);
        self.b_msg
            .write_all(&h)
            .map_err(|e| format!("write Rts: {e}"))
    }
}

/// Waits (bounded) for B's next `SENT` record.
pub(crate) fn next_sent(ep: &mut Endpoint) -> Result<Sent, String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Sent(s)) => return Ok(s),
            Some(other) => return Err(format!("unexpected record {other:?}")),
            None => {}
        }
        if Instant::now() > deadline {
            let s = ep.stats().map_err(libo2g_error("stats"))?;
            return Err(format!("no SENT record within 120 s; {s:?}"));
        }
        ep.poll(Some(Duration::from_millis(500)))
            .map_err(libo2g_error("poll"))?;
    }
}

/// Checks one received message against what was sent.
pub(crate) fn check(
    c: &libo2g::Completed,
    tag: u32,
    data: &[u8],
    status: Result<(), RecvError>,
) -> CheckResult {
    if c.user_data != u64::from(tag) || c.status != status || c.len != data.len() as u64 {
        return Err(format!(
            "tag {tag}: user_data {} status {:?} len {} (want {status:?}, {})",
            c.user_data,
            c.status,
            c.len,
            data.len()
        ));
    }
    let n = c.written;
    if c.buf[..n] != data[..n] {
        let at = (0..n).find(|&i| c.buf[i] != data[i]).unwrap_or(0);
        return Err(format!("tag {tag}: payload differs at byte {at}"));
    }
    Ok(())
}

/// Receives posted before their request (1 B to 9 MiB), a request stored
/// before its receive (which a claiming probe cannot take), a receive that
/// truncates, an offer whose buffer was replaced by a copy, and a transfer
/// that completes while neither process makes a system call.
pub(crate) fn paths() -> CheckResult {
    let mut p = Pair::new(EndpointConfig::default())?;
    for (i, &len) in [1usize, 4096, 65_537, 1 << 20, 9 << 20].iter().enumerate() {
        let tag = i as u32;
        let h =
            p.a.post(vec![0u8; len], sel(tag), u64::from(tag))
                .map_err(|p| p.error.to_string())?;
        if !matches!(h, Post::Queued(_)) {
            return Err(format!("{len} B: posted first but found a stored message"));
        }
        drop(h);
        let data = pattern(i as u64, len);
        p.send(tag, &data, 100 + u64::from(tag))?;
        check(&next_completion(&mut p.a)?, tag, &data, Ok(()))?;
        let s = next_sent(&mut p.b)?;
        if s.user_data != 100 + u64::from(tag) || s.len != len as u64 || s.status.is_err() {
            return Err(format!("{len} B: sent {s:?}"));
        }
    }

    // The request arrives first: stored as an envelope, taken by a post.
    let data = pattern(50, 300_000);
    p.send(50, &data, 150)?;
    wait_until(&p.a, "the request stored", |s| s.unexpected == 1)?;
    match p.a.probe_claim(sel(50)) {
        Err(err) if err.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
        other => {
            return Err(format!(
                "a claiming probe of a request: {:?}",
                other.map(|m| m.map(|m| m.len()))
            ))
        }
    }
    let handle = match p.a.post(vec![0u8; data.len()], sel(50), 50) {
        Ok(Post::Queued(h)) if h.recv_id() == 0 => h,
        Ok(_) => return Err("a post matching a stored request was not answered CLEARED".into()),
        Err(err) => return Err(format!("post after the request: {}", err.error)),
    };
    // Matched: too late to cancel; it completes normally.
    if p.a
        .cancel(&handle)
        .map_err(libo2g_error("cancel"))?
        .is_some()
    {
        return Err("a receive matched to a request was cancelled".into());
    }
    check(&next_completion(&mut p.a)?, 50, &data, Ok(()))?;
    next_sent(&mut p.b)?;

    // A short receive asks for what fits and reports truncation.
    p.a.post(vec![0u8; 1000], sel(51), 51)
        .map_err(|p| p.error.to_string())?;
    let data = pattern(51, 100_000);
    p.send(51, &data, 151)?;
    check(
        &next_completion(&mut p.a)?,
        51,
        &data,
        Err(RecvError::Truncated),
    )?;
    let s = next_sent(&mut p.b)?;
    if s.len != 1000 {
        return Err(format!("a truncating receive was sent {} bytes", s.len));
    }

    // A replaced buffer: the receiver gets the copy, not what the
    // original holds later.
    let mut original = pattern(52, 200_000);
    let copy = original.clone();
    let id = p.send(52, &original, 152)?;
    if !p
        .b
        .replace_offer(id, &copy, A)
        .map_err(libo2g_error("replace"))?
    {
        return Err("an offer nobody cleared could not be replaced".into());
    }
    original.fill(0xee);
    p.a.post(vec![0u8; copy.len()], sel(52), 52)
        .map_err(|p| p.error.to_string())?;
    check(&next_completion(&mut p.a)?, 52, &copy, Ok(()))?;
    next_sent(&mut p.b)?;
    drop(original);

    // Asynchronous progress: once the request is written, the receive
    // completes and the offer ends with neither process calling the
    // module; both rings are read from the shared pages only.
    let data = pattern(53, 4 << 20);
    p.a.post(vec![0u8; data.len()], sel(53), 53)
        .map_err(|p| p.error.to_string())?;
    p.send(53, &data, 153)?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut got, mut sent) = (None, None);
    let mut spins = 0u64;
    while (got.is_none() || sent.is_none()) && Instant::now() < deadline {
        // "Compute": no system call on either endpoint.
        for i in 0..10_000u64 {
            spins = spins.wrapping_add(i * i);
        }
        if got.is_none() {
            got = p.a.reap().map_err(libo2g_error("reap A"))?;
        }
        if sent.is_none() {
            sent = p.b.reap().map_err(libo2g_error("reap B"))?;
        }
    }
    match (got, sent) {
        (Some(Reaped::Owned(c)), Some(Reaped::Sent(s))) if s.status.is_ok() => {
            check(&c, 53, &data, Ok(()))?
        }
        other => return Err(format!("without system calls: {other:?}")),
    }
    let s = p.a.stats().map_err(libo2g_error("stats"))?;
    if s.pinned_bytes != 0 || s.posted != 0 || s.unexpected != 0 {
        return Err(format!("receiver holds something at the end: {s:?}"));
    }
    // Nine rendezvous, two of them stored first; every byte placed
    // straight into its receive, none through the dump area.
    let (ra, rb) = (
        p.a.rndv_stats()
            .map_err(libo2g_error("rendezvous counters"))?,
        p.b.rndv_stats()
            .map_err(libo2g_error("rendezvous counters"))?,
    );
    if ra.requests_matched != 7
        || ra.requests_stored != 2
        || ra.data_msgs != 9
        || ra.cts_sent != 9
        || rb.offers != 9
        || rb.offers_sent != 9
        || ra.data_bytes != rb.offer_bytes_sent
        || s.unexpected_bytes != 0
    {
        return Err(format!("counters: receiver {ra:?}, sender {rb:?}, {s:?}"));
    }
    drop(p);
    to_oneself()?;
    empty()?;
    println!("rendezvous: posted first, stored first, truncated, replaced, empty, and without system calls ({spins:x})");
    Ok(())
}

/// A rendezvous of a process with itself, through its connection to
/// itself: the module copies the offer into the receive, with the receive
/// posted first, then with the request first and a short receive.
fn to_oneself() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (reader, mut writer) = tcp_pair()?;
    ep.register_self(&reader, A)
        .map_err(libo2g_error("register self"))?;
    let mut enc = Encoder::new();
    let env = |tag| Envelope {
        source: A,
        tag,
        context: 0,
    };
    let own = |tag: u32| libo2g::Selector::new(Some(A), Some(tag), 0);
    let data = pattern(60, 3 << 20);
    ep.post(vec![0u8; data.len()], own(60), 60)
        .map_err(|p| p.error.to_string())?;
    let id = ep
        .offer(&data, A, 160)
        .map_err(libo2g_error("offer to oneself"))?;
    writer
        .write_all(&enc.encode_ref(Kind::Rts, env(60), data.len() as u64, id))
        .map_err(|e| e.to_string())?;
    let mut got = (None, None);
    let deadline = Instant::now() + Duration::from_secs(120);
    while (got.0.is_none() || got.1.is_none()) && Instant::now() < deadline {
        match ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Owned(c)) => got.0 = Some(c),
            Some(Reaped::Sent(s)) => got.1 = Some(s),
            Some(other) => return Err(format!("unexpected record {other:?}")),
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    match got {
        (Some(c), Some(s)) if s.status.is_ok() && s.len == data.len() as u64 => {
            check(&c, 60, &data, Ok(()))?
        }
        other => return Err(format!("to oneself, posted first: {other:?}")),
    }
    // The request first, then a receive too short for it.
    let id = ep
        .offer(&data, A, 161)
        .map_err(libo2g_error("offer to oneself"))?;
    writer
        .write_all(&enc.encode_ref(Kind::Rts, env(61), data.len() as u64, id))
        .map_err(|e| e.to_string())?;
    wait_until(&ep, "the request to oneself stored", |s| s.unexpected == 1)?;
    ep.post(vec![0u8; 5000], own(61), 61)
        .map_err(|p| p.error.to_string())?;
    let c = next_completion_or_sent(&mut ep)?;
    check(&c, 61, &data, Err(RecvError::Truncated))?;
    let r = ep
        .rndv_stats()
        .map_err(libo2g_error("rendezvous counters"))?;
    if r.offers_sent != 2 || r.data_msgs != 2 || r.offer_bytes_sent != data.len() as u64 + 5000 {
        return Err(format!("to oneself: {r:?}"));
    }
    Ok(())
}

/// An empty rendezvous leaves at once: when its `SENT` record is out, the
/// data header is on the wire, not held in TCP's send queue (a header
/// written with `MSG_MORE` and no payload after it waited 200 ms for the
/// cork timer).
fn empty() -> CheckResult {
    let mut p = Pair::new(EndpointConfig::default())?;
    // Nagle could hold the header too; the transports disable it.
    p.b_ctl.set_nodelay(true).map_err(|e| e.to_string())?;
    p.a.post(vec![0u8; 16], sel(70), 70)
        .map_err(|p| p.error.to_string())?;
    p.send(70, &[], 170)?;
    let s = next_sent(&mut p.b)?;
    let mut unsent: libc::c_int = 0;
    // SAFETY: `SIOCOUTQNSD` writes one `int` through the pointer, which
    // points at `unsent`; the descriptor is open for the call.
    let rc = unsafe { libc::ioctl(p.b_ctl.as_raw_fd(), libc::SIOCOUTQNSD, &mut unsent) };
    if rc != 0 {
        return Err(format!("SIOCOUTQNSD: {}", std::io::Error::last_os_error()));
    }
    if s.status.is_err() || s.len != 0 || unsent != 0 {
        return Err(format!(
            "an empty rendezvous: sent {s:?}, {unsent} bytes still unsent in TCP"
        ));
    }
    check(&next_completion(&mut p.a)?, 70, &[], Ok(()))
}

/// The next receive completion, skipping `SENT` records (bounded).
fn next_completion_or_sent(ep: &mut Endpoint) -> Result<libo2g::Completed, String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        match ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Owned(c)) => return Ok(c),
            Some(Reaped::Sent(_)) => {}
            Some(other) => return Err(format!("unexpected record {other:?}")),
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    Err("no completion within 120 s".into())
}

/// Waits (bounded) until `ep`'s counters satisfy `ready`.
pub(crate) fn wait_until(
    ep: &Endpoint,
    what: &str,
    ready: impl Fn(&abi::EndpointStats) -> bool,
) -> CheckResult {
    wait_for_stats(ep, what, Duration::from_secs(60), ready).map(drop)
}

/// An endpoint of rank 0 whose peer (rank 1) is this test, writing raw
/// frames on both connections.
pub(crate) struct Hostile {
    pub(crate) ep: Endpoint,
    msg: TcpStream,
    /// Where this test reads what the module writes on its control
    /// connection (and, with one control connection, writes its own).
    ctl: TcpStream,
    /// With a control connection per direction, where this test writes
    /// what the module reads (its `O2G_REGISTER_CONTROL_IN` socket).
    pub(crate) ctl_in: Option<TcpStream>,
    msg_enc: Encoder,
    ctl_enc: Encoder,
    _keep: Vec<TcpStream>,
}

impl Hostile {
    pub(crate) fn new() -> Result<Self, String> {
        Self::with_controls(false)
    }

    /// With a control connection per direction.
    pub(crate) fn per_direction() -> Result<Self, String> {
        Self::with_controls(true)
    }

    fn with_controls(per_direction: bool) -> Result<Self, String> {
        let ep = endpoint(EndpointConfig::default())?;
        let (ours_msg, msg) = tcp_pair()?;
        let (ours_ctl, ctl) = tcp_pair()?;
        ep.register_socket(&ours_msg, B)
            .map_err(libo2g_error("register messages"))?;
        ep.register_control(&ours_ctl, B, A)
            .map_err(libo2g_error("register control"))?;
        ctl.set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        let mut keep = vec![ours_msg, ours_ctl];
        let ctl_in = if per_direction {
            let (ours_in, theirs) = tcp_pair()?;
            ep.register_control_in(&ours_in, B, A)
                .map_err(libo2g_error("register incoming control"))?;
            keep.push(ours_in);
            Some(theirs)
        } else {
            None
        };
        Ok(Self {
            ep,
            msg,
            ctl,
            ctl_in,
            msg_enc: Encoder::new(),
            ctl_enc: Encoder::new(),
            _keep: keep,
        })
    }

    /// Where this test writes the module's incoming control traffic.
    pub(crate) fn ctl_writer(&mut self) -> &mut TcpStream {
        self.ctl_in.as_mut().unwrap_or(&mut self.ctl)
    }

    pub(crate) fn ctl_frame(
        &mut self,
        kind: Kind,
        env: Envelope,
        len: u64,
        reference: u32,
    ) -> CheckResult {
        let h = self.ctl_enc.encode_ref(kind, env, len, reference);
        self.ctl_writer().write_all(&h).map_err(|e| e.to_string())
    }

    /// Reads the next header the module wrote on the control connection.
    pub(crate) fn read_header(&mut self, what: &str) -> Result<Header, String> {
        let mut raw = [0u8; HEADER_LEN];
        self.ctl
            .read_exact(&mut raw)
            .map_err(|e| format!("reading the module's {what}: {e}"))?;
        Header::decode(&raw).map_err(|e| format!("the module's {what}: {e}"))
    }

    /// Posts a receive of `len` bytes for `tag`, writes the request to
    /// send a message of `len` bytes under offer `offer`, and reads the
    /// module's clear-to-send.
    pub(crate) fn request(&mut self, tag: u32, len: usize, offer: u32) -> Result<Header, String> {
        self.ep
            .post(vec![0u8; len], sel(tag), u64::from(tag))
            .map_err(|p| p.error.to_string())?;
        let env = Envelope {
            source: B,
            tag,
            context: 0,
        };
        self.msg
            .write_all(&self.msg_enc.encode_ref(Kind::Rts, env, len as u64, offer))
            .map_err(|e| e.to_string())?;
        self.read_header("Cts")
    }

    /// Reads an offer's `len` bytes of data as the module writes them:
    /// pieces (`DataPart`), the last a `Data`.
    pub(crate) fn read_pieces(&mut self, len: usize) -> Result<Vec<u8>, String> {
        let mut got = Vec::with_capacity(len);
        loop {
            let f = self.read_header("data")?;
            if !matches!(f.kind, Kind::Data | Kind::DataPart) || got.len() + f.len as usize > len {
                return Err(format!("a piece at byte {}: {f:?}", got.len()));
            }
            let at = got.len();
            got.resize(at + f.len as usize, 0);
            self.ctl
                .read_exact(&mut got[at..])
                .map_err(|e| format!("reading data at byte {at}: {e}"))?;
            if f.kind == Kind::Data {
                return Ok(got);
            }
        }
    }

    /// Clears offer `id` for all its `len` bytes, as a receiver would.
    pub(crate) fn clear(&mut self, id: u32, len: usize) -> CheckResult {
        self.ctl_frame(Kind::Cts, Header::token_envelope(B, 5), len as u64, id)
    }

    /// Waits for the endpoint to count `n` failed connections, all of
    /// them protocol errors.
    pub(crate) fn failed(&self, what: &str, n: u32) -> CheckResult {
        wait_until(&self.ep, what, |s| {
            s.failed_sockets == n && s.protocol_errors == u64::from(n)
        })
    }
}

/// A clear-to-send naming no offer, one asking more than its offer holds,
/// data naming no waiting receive, and kinds on the wrong connection each
/// fail the connection with a protocol error; an offer whose connection
/// fails ends with an error. And the module's own clear-to-send is what
/// the wire format says: read by this test, answered with data, which
/// lands in the receive.
pub(crate) fn misbehaviour() -> CheckResult {
    let token_env = |token: u64| Header::token_envelope(B, token);

    // The module's clear-to-send, read raw, answered by hand.
    let mut h = Hostile::new()?;
    h.ep.post(vec![0u8; 5000], sel(9), 9)
        .map_err(|p| p.error.to_string())?;
    let env = Envelope {
        source: B,
        tag: 9,
        context: 0,
    };
    h.msg
        .write_all(&h.msg_enc.encode_ref(Kind::Rts, env, 8000, 77))
        .map_err(|e| e.to_string())?;
    let cts = h.read_header("Cts")?;
    if cts.kind != Kind::Cts
        || cts.envelope.source != A
        || cts.len != 5000
        || cts.reference != 77
        || cts.seq != 0
    {
        return Err(format!("the module's Cts: {cts:?}"));
    }
    let data = pattern(9, 5000);
    h.ctl_frame(Kind::Data, token_env(cts.token()), 5000, 77)?;
    h.ctl.write_all(&data).map_err(|e| e.to_string())?;
    let c = next_completion(&mut h.ep)?;
    // The receive reports the message's size: it was truncated to 5000.
    if c.status != Err(RecvError::Truncated) || c.len != 8000 || c.buf[..c.written] != data[..] {
        return Err(format!(
            "data after the module's Cts: {:?} len {}",
            c.status, c.len
        ));
    }

    // The module's data, read raw: a `Data` header naming the token and
    // the offer, then the offered bytes. Once sent, the offer is gone:
    // replacing its buffer is too late (`ENOENT`).
    let offered = pattern(10, 70_000);
    let id = h.ep.offer(&offered, B, 10).map_err(libo2g_error("offer"))?;
    h.ctl_frame(Kind::Cts, token_env(0x1234_0000_0005), 60_000, id)?;
    let data_h = h.read_header("Data")?;
    if data_h.kind != Kind::Data
        || data_h.envelope.source != A
        || data_h.token() != 0x1234_0000_0005
        || data_h.len != 60_000
        || data_h.reference != id
        || data_h.seq != 1
    {
        return Err(format!("the module's Data: {data_h:?}"));
    }
    let mut payload = vec![0u8; 60_000];
    h.ctl
        .read_exact(&mut payload)
        .map_err(|e| format!("reading the data: {e}"))?;
    if payload[..] != offered[..60_000] {
        return Err("the module's data differs from the offer".into());
    }
    let s = next_sent(&mut h.ep)?;
    if s.user_data != 10 || s.len != 60_000 || s.status.is_err() {
        return Err(format!("the offer's record: {s:?}"));
    }
    match h.ep.replace_offer(id, &offered, B) {
        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {}
        other => return Err(format!("replacing a sent offer: {other:?}")),
    }

    // Data whose token was used already names nothing now.
    h.ctl_frame(Kind::Data, token_env(cts.token()), 10, 77)?;
    h.failed("data for a finished receive", 1)?;
    drop(h);

    // A Cts naming no offer.
    let mut h = Hostile::new()?;
    h.ctl_frame(Kind::Cts, token_env(1), 10, 12345)?;
    h.failed("a Cts naming no offer", 1)?;
    drop(h);

    // A Cts asking more than the offer: the offer ends with an error.
    let mut h = Hostile::new()?;
    let buf = pattern(1, 4096);
    let id = h.ep.offer(&buf, B, 7).map_err(libo2g_error("offer"))?;
    h.ctl_frame(Kind::Cts, token_env(1), 4097, id)?;
    h.failed("a Cts asking too much", 1)?;
    let s = next_sent(&mut h.ep)?;
    if s.user_data != 7 || s.status != Err(RecvError::ConnectionFailed) {
        return Err(format!("the offer of a failed connection: {s:?}"));
    }
    drop(h);

    // Data for a receive that never matched (a forged token).
    let mut h = Hostile::new()?;
    h.ep.post(vec![0u8; 100], sel(3), 3)
        .map_err(|p| p.error.to_string())?;
    h.ctl_frame(Kind::Data, token_env(0), 100, 0)?;
    h.failed("forged data", 1)?;
    drop(h);

    // A request on the control connection, a Cts on the messages one.
    let mut h = Hostile::new()?;
    h.ctl_frame(Kind::Rts, env, 100, 0)?;
    let mut enc = Encoder::new();
    h.msg
        .write_all(&enc.encode_ref(Kind::Cts, token_env(0), 10, 0))
        .map_err(|e| e.to_string())?;
    h.failed("kinds on the wrong connection", 2)?;
    drop(h);

    // The peer's control connection closes while a receive waits for its
    // data: the receive fails instead of waiting.
    let mut h = Hostile::new()?;
    h.request(4, 100, 1)?;
    h.ctl
        .shutdown(std::net::Shutdown::Both)
        .map_err(|e| e.to_string())?;
    let c = next_completion(&mut h.ep)?;
    if c.status != Err(RecvError::ConnectionFailed) {
        return Err(format!(
            "a receive whose data's connection closed: {:?}",
            c.status
        ));
    }
    println!("rendezvous peers that break the rules fail their connection alone");
    Ok(())
}

/// Rendezvous data in pieces, both ways, read and written raw by this
/// test as the peer:
/// - the module sends a 24 MiB offer as pieces of 1 MiB (`DataPart`, the
///   last a `Data`), each naming the token and the offer, with the offered
///   bytes; a clear-to-send the module owes this peer meanwhile goes
///   between two pieces, not after the whole offer;
/// - the module fills a receive from pieces with a credit between them,
///   and completes it once, at the last piece;
/// - a piece naming another token fails the connection, and the receive
///   it was filling with it.
pub(crate) fn pieces() -> CheckResult {
    const PIECE: usize = 1 << 20;
    let token_env = |token: u64| Header::token_envelope(B, token);
    let env = |tag: u32| Envelope {
        source: B,
        tag,
        context: 0,
    };

    // The module's pieces. This test does not read until it has asked for
    // a clear-to-send, so the send work waits for room in the middle of
    // the offer when the request arrives.
    let mut h = Hostile::new()?;
    let len = 24 * PIECE;
    let offered = pattern(11, len);
    let id = h.ep.offer(&offered, B, 11).map_err(libo2g_error("offer"))?;
    let token = 0x0042_0000_0007;
    h.ctl_frame(Kind::Cts, token_env(token), len as u64, id)?;
    h.ep.post(vec![0u8; 100], sel(12), 12)
        .map_err(|p| p.error.to_string())?;
    h.msg
        .write_all(&h.msg_enc.encode_ref(Kind::Rts, env(12), 100, 5))
        .map_err(|e| e.to_string())?;
    let mut got = Vec::with_capacity(len);
    let mut pieces = 0;
    let mut cts_after = None;
    loop {
        let f = h.read_header("data or Cts")?;
        if f.kind == Kind::Cts {
            if f.len != 100 || f.reference != 5 || cts_after.is_some() {
                return Err(format!("the module's Cts among the pieces: {f:?}"));
            }
            cts_after = Some(got.len());
            continue;
        }
        let last = f.kind == Kind::Data;
        let want = if last { len - got.len() } else { PIECE };
        if !matches!(f.kind, Kind::Data | Kind::DataPart)
            || f.token() != token
            || f.reference != id
            || f.len != want as u64
        {
            return Err(format!("piece {pieces} at byte {}: {f:?}", got.len()));
        }
        let at = got.len();
        got.resize(at + want, 0);
        h.ctl
            .read_exact(&mut got[at..])
            .map_err(|e| format!("reading piece {pieces}: {e}"))?;
        pieces += 1;
        if last {
            break;
        }
    }
    if got != offered {
        return Err("the pieces differ from the offer".into());
    }
    match cts_after {
        Some(at) if at < len => println!(
            "a {} MiB offer went as {pieces} pieces; the Cts asked meanwhile went after {} MiB",
            len >> 20,
            at >> 20
        ),
        _ => {
            return Err(format!(
                "the Cts the module owed did not come between the pieces of a {len}-byte offer"
            ))
        }
    }
    let s = next_sent(&mut h.ep)?;
    if s.user_data != 11 || s.len != len as u64 || s.status.is_err() {
        return Err(format!("the offer's record: {s:?}"));
    }
    drop(h);

    // A receive filled from pieces, with a credit between two of them.
    let mut h = Hostile::new()?;
    let cts = h.request(13, 3000, 6)?;
    let data = pattern(13, 3000);
    h.ctl_frame(Kind::DataPart, token_env(cts.token()), 1000, 6)?;
    h.ctl.write_all(&data[..1000]).map_err(|e| e.to_string())?;
    h.ctl_frame(Kind::Credit, token_env(0), 0, 1)?;
    h.ctl_frame(Kind::DataPart, token_env(cts.token()), 1500, 6)?;
    h.ctl
        .write_all(&data[1000..2500])
        .map_err(|e| e.to_string())?;
    h.ctl_frame(Kind::Data, token_env(cts.token()), 500, 6)?;
    h.ctl.write_all(&data[2500..]).map_err(|e| e.to_string())?;
    let c = next_completion(&mut h.ep)?;
    if c.status.is_err() || c.len != 3000 || c.buf[..c.written] != data[..] {
        return Err(format!(
            "a receive filled from pieces: {:?} len {} written {}",
            c.status, c.len, c.written
        ));
    }
    drop(h);

    // A piece for another receive, in the middle of one.
    let mut h = Hostile::new()?;
    let cts = h.request(14, 3000, 7)?;
    h.ctl_frame(Kind::DataPart, token_env(cts.token()), 1000, 7)?;
    h.ctl.write_all(&data[..1000]).map_err(|e| e.to_string())?;
    h.ctl_frame(Kind::Data, token_env(cts.token() ^ 1), 2000, 7)?;
    h.failed("a piece naming another token", 1)?;
    let c = next_completion(&mut h.ep)?;
    if c.status != Err(RecvError::ConnectionFailed) {
        return Err(format!("a receive whose pieces broke off: {:?}", c.status));
    }
    println!("rendezvous data goes and comes in pieces, with headers between them");
    Ok(())
}

/// OFFER and REGISTER refuse bad arguments with the documented errors,
/// and an unprivileged caller's offers count against its `RLIMIT_MEMLOCK`.
pub(crate) fn errors() -> CheckResult {
    // First, while this process has one thread: as a user with 128 KiB of
    // locked memory, a 1 MiB offer is refused and a 64 KiB one is not.
    crate::unprivileged::run_after(
        || crate::trust::set_memlock(128 << 10),
        || {
            let ep = endpoint(EndpointConfig::default())?;
            let (ours, _peer) = tcp_pair()?;
            ep.register_control(&ours, B, A)
                .map_err(libo2g_error("register control"))?;
            let big = vec![1u8; 1 << 20];
            match ep.offer(&big, B, 1) {
                Err(err) if err.raw_os_error() == Some(libc::ENOMEM) => {}
                other => return Err(format!("a 1 MiB offer over RLIMIT_MEMLOCK: {other:?}")),
            }
            ep.offer(&big[..64 << 10], B, 2)
                .map_err(libo2g_error("a 64 KiB offer"))?;
            Ok(())
        },
    )?;
    let cfg = EndpointConfig {
        max_posted: 4,
        ..EndpointConfig::default()
    };
    let ep = endpoint(cfg)?;
    let buf = vec![1u8; 8192];
    let errno = |r: libo2g::Result<u32>| r.err().and_then(|e| e.raw_os_error());
    if errno(ep.offer(&buf, B, 1)) != Some(libc::ENOTCONN) {
        return Err("an offer without a control connection was not ENOTCONN".into());
    }
    let (ours_ctl, _peer_ctl) = tcp_pair()?;
    let (ours_ctl2, _peer_ctl2) = tcp_pair()?;
    ep.register_control(&ours_ctl, B, A)
        .map_err(libo2g_error("register control"))?;
    // The messages connection after the control one.
    let (ours_msg, _peer_msg) = tcp_pair()?;
    ep.register_socket(&ours_msg, B)
        .map_err(libo2g_error("register messages after control"))?;
    match ep.register_control(&ours_ctl2, B, A) {
        Err(err) if err.raw_os_error() == Some(libc::EEXIST) => {}
        other => return Err(format!("a second control connection to a rank: {other:?}")),
    }
    let mut reg = abi::SocketRegistration {
        fd: ours_ctl2.as_raw_fd(),
        rank: 2,
        flags: 0,
        local_rank: 5,
    };
    if raw_ioctl(&ep, abi::O2G_IOC_REGISTER_SOCKET, &mut reg) != Some(libc::EINVAL) {
        return Err("a messages connection with a local rank was not EINVAL".into());
    }
    let mut args = abi::OfferArgs {
        buf: buf.as_ptr() as u64,
        len: buf.len() as u64,
        rank: B,
        flags: 4,
        ..Default::default()
    };
    if raw_ioctl(&ep, abi::O2G_IOC_OFFER, &mut args) != Some(libc::EINVAL) {
        return Err("an offer with unknown flags was not EINVAL".into());
    }
    args.flags = 0;
    args.buf = 0x1000;
    if raw_ioctl(&ep, abi::O2G_IOC_OFFER, &mut args) != Some(libc::EFAULT) {
        return Err("an offer of unmapped memory was not EFAULT".into());
    }
    match ep.replace_offer(0x7777, &buf, B) {
        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {}
        other => return Err(format!("replacing no offer: {other:?}")),
    }
    // As many offers as receives may be posted; then the table is full.
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(ep.offer(&buf, B, i).map_err(libo2g_error("offer"))?);
    }
    if errno(ep.offer(&buf, B, 9)) != Some(libc::ENOSPC) {
        return Err("a fifth offer with max_posted 4 was not ENOSPC".into());
    }
    // Replacing with another length is refused.
    match ep.replace_offer(ids[0], &buf[..100], B) {
        Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {}
        other => return Err(format!("replacing with another length: {other:?}")),
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.pinned_bytes != 4 * 8192 {
        return Err(format!("four offers of 8 KiB pin {} bytes", s.pinned_bytes));
    }
    println!("offers and control registrations refuse bad arguments");
    Ok(())
}

/// A send that filled the socket buffers resumes when the peer reads
/// (`sk_write_space` kicks the send work), and every byte arrives.
fn resumes() -> CheckResult {
    let mut h = Hostile::new()?;
    let big = pattern(4, 32 << 20);
    let id = h.ep.offer(&big, B, 1).map_err(libo2g_error("offer"))?;
    h.clear(id, big.len())?;
    // The module sends until the socket buffers are full, then waits.
    std::thread::sleep(Duration::from_secs(1));
    let got = h.read_pieces(big.len())?;
    if got != big {
        return Err("the resumed data differs from the offer".into());
    }
    let s = next_sent(&mut h.ep)?;
    if s.status.is_err() || s.len != big.len() as u64 {
        return Err(format!("the resumed offer's record: {s:?}"));
    }
    Ok(())
}

/// Issues `op` on `ep`'s device with `arg`; the errno if it failed.
pub(crate) fn raw_ioctl<T>(ep: &Endpoint, op: u32, arg: &mut T) -> Option<i32> {
    // SAFETY: Each caller passes the argument struct that `op` reads and
    // writes, valid for the call.
    let rc = unsafe { libc::ioctl(ep.as_fd().as_raw_fd(), op as _, std::ptr::from_mut(arg)) };
    (rc < 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// An endpoint closed while its module is in the middle of sending an
/// offer's data to a peer that does not read (the send buffer full), and
/// one closed with offers nobody cleared: every pin is released, and the
/// harness finds no warning in dmesg.
pub(crate) fn teardown() -> CheckResult {
    let pins = vm_pin_kib()?;
    resumes()?;
    for blocked in [true, false] {
        let mut h = Hostile::new()?;
        let big = pattern(3, 32 << 20);
        let id = h.ep.offer(&big, B, 1).map_err(libo2g_error("offer"))?;
        h.ep.offer(&big[..4096], B, 2)
            .map_err(libo2g_error("offer"))?;
        if blocked {
            h.clear(id, big.len())?;
            // The module sends until the socket buffers are full.
            std::thread::sleep(Duration::from_secs(2));
        }
        let s = h.ep.stats().map_err(libo2g_error("stats"))?;
        if s.pinned_bytes != (32 << 20) + 4096 {
            return Err(format!("pinned while offering: {s:?}"));
        }
        // The module charges every page it pins to this process.
        if vm_pin_kib()? < pins + (32 << 10) {
            return Err(format!(
                "offers of 32 MiB show {} kB in VmPin",
                vm_pin_kib()?
            ));
        }
        drop(h);
        drop(big);
    }
    // Every page pinned was charged to this process and is uncharged by
    // the same drop that unpins it. (The system-wide pin counters also
    // count other pinners in the guest, so they cannot be compared.)
    let left = vm_pin_kib()?;
    if left != pins {
        return Err(format!("VmPin {left} kB after closing, {pins} kB before"));
    }
    println!("endpoints closed mid-send and with offers pending released every pin");
    Ok(())
}
