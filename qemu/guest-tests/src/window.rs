//! Memory windows with the module as the target's agent: lock requests
//! answered on the control connection (at once, or once a waiting lock is
//! granted), puts from the lock holder placed with no receive posted and
//! in the window before the answer to the next flush or unlock, gets
//! answered with the window's bytes, a lock made after a fence waiting
//! for the window's process to complete it, refusals
//! counted and reported, hostile requests failing only their own
//! connection, an unregistered window taking no more bytes, and every pin
//! released at close. This process plays every origin with raw frames;
//! the endpoint is rank 0.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use libo2g::{abi, Endpoint, EndpointConfig, Reaped, Selector};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{lock_op, Encoder, Header, Kind, LockAnswer, HEADER_LEN};

use crate::harness::{endpoint, libo2g_error, next_completion, pattern, tcp_pair};
use crate::trust::vm_pin_kib;
use crate::CheckResult;

/// The endpoint's rank.
const TARGET: u32 = 0;
const CONTEXT: u32 = 40;
const WINDOW: usize = 1 << 20;
/// Ranks the window serves.
const RANKS: u32 = 4;

/// One origin: its messages connection (this test writes) and its
/// control connection (the module writes the answers there).
struct Origin {
    rank: u32,
    msg: TcpStream,
    ctl: TcpStream,
    enc: Encoder,
    _keep: [TcpStream; 2],
}

impl Origin {
    fn new(ep: &Endpoint, rank: u32) -> Result<Self, String> {
        let (ours_msg, msg) = tcp_pair()?;
        let (ours_ctl, ctl) = tcp_pair()?;
        ep.register_socket(&ours_msg, rank)
            .map_err(libo2g_error("register messages"))?;
        ep.register_control(&ours_ctl, rank, TARGET)
            .map_err(libo2g_error("register control"))?;
        ctl.set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        Ok(Self {
            rank,
            msg,
            ctl,
            enc: Encoder::new(),
            _keep: [ours_msg, ours_ctl],
        })
    }

    fn frame(&mut self, kind: Kind, env: Envelope, len: u64, reference: u32) -> CheckResult {
        let h = self.enc.encode_ref(kind, env, len, reference);
        self.msg.write_all(&h).map_err(|e| format!("write: {e}"))
    }

    /// A put of `data` at `offset` of window `context`, with `reference`.
    fn put(&mut self, context: u32, offset: u32, data: &[u8], reference: u32) -> CheckResult {
        let env = Envelope {
            source: self.rank,
            tag: offset,
            context,
        };
        self.frame(Kind::Put, env, data.len() as u64, reference)?;
        self.msg.write_all(data).map_err(|e| format!("write: {e}"))
    }

    /// A lock request `op` for window `context`, answered under `tag`.
    fn ask(&mut self, context: u32, op: u32, tag: u32) -> CheckResult {
        let env = Envelope {
            source: self.rank,
            tag: op,
            context,
        };
        self.frame(Kind::Lock, env, 0, tag)
    }

    /// The module's next answer on the control connection, with its
    /// payload (credit it sends there first is skipped).
    fn answer_bytes(&mut self) -> Result<(Header, Vec<u8>), String> {
        loop {
            let mut raw = [0u8; HEADER_LEN];
            self.ctl
                .read_exact(&mut raw)
                .map_err(|e| format!("rank {}: reading an answer: {e}", self.rank))?;
            let h = Header::decode(&raw).map_err(|e| format!("the module's frame: {e}"))?;
            if h.kind == Kind::Credit {
                continue;
            }
            if h.kind != Kind::Answer {
                return Err(format!("rank {}: {h:?} instead of an answer", self.rank));
            }
            let mut body = vec![0u8; h.len as usize];
            self.ctl
                .read_exact(&mut body)
                .map_err(|e| format!("reading an answer's payload: {e}"))?;
            return Ok((h, body));
        }
    }

    /// The module's next answer to a lock request.
    fn answer(&mut self) -> Result<(Header, LockAnswer), String> {
        let (h, body) = self.answer_bytes()?;
        let body: [u8; LockAnswer::LEN] = body
            .try_into()
            .map_err(|b: Vec<u8>| format!("a lock answer of {} bytes", b.len()))?;
        Ok((h, LockAnswer::decode(&body)))
    }

    /// Gets `len` bytes at `offset` of the window; the answer's bytes.
    fn get(&mut self, offset: u32, len: u64, tag: u32) -> Result<Vec<u8>, String> {
        let env = Envelope {
            source: self.rank,
            tag: offset,
            context: CONTEXT,
        };
        self.frame(Kind::Get, env, len, tag)?;
        let (h, body) = self.answer_bytes()?;
        if h.envelope.tag != tag || h.envelope.source != TARGET {
            return Err(format!("get answer {:?}, want tag {tag}", h.envelope));
        }
        Ok(body)
    }

    /// Asks and checks the answer: tag, envelope, status, refused puts.
    fn ask_answered(&mut self, op: u32, tag: u32, status: u32, refused: u32) -> CheckResult {
        self.ask(CONTEXT, op, tag)?;
        self.expect(tag, status, refused)
    }

    fn expect(&mut self, tag: u32, status: u32, refused: u32) -> CheckResult {
        let (h, a) = self.answer()?;
        let env = Envelope {
            source: TARGET,
            tag,
            context: CONTEXT,
        };
        let want = LockAnswer {
            status,
            refused_puts: refused,
        };
        if h.envelope != env || a != want {
            return Err(format!(
                "rank {}: answer {:?} {a:?}, want {env:?} {want:?}",
                self.rank, h.envelope
            ));
        }
        Ok(())
    }

    /// Whether an answer is waiting on the control connection (briefly).
    fn answer_waiting(&self) -> Result<bool, String> {
        self.ctl.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut b = [0u8; 1];
        let got = self.ctl.peek(&mut b);
        self.ctl.set_nonblocking(false).map_err(|e| e.to_string())?;
        Ok(matches!(got, Ok(n) if n > 0))
    }
}

fn errno(r: libo2g::Result<u32>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

/// Waits (bounded) until the endpoint counts `n` failed connections.
fn failed(ep: &Endpoint, n: u32) -> CheckResult {
    for _ in 0..600 {
        let s = ep.stats().map_err(libo2g_error("stats"))?;
        if s.failed_sockets == n {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("{n} failed connections expected"))
}

/// `win-agent`: see the module documentation.
pub(crate) fn agent() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let mut one = Origin::new(&ep, 1)?;
    let mut two = Origin::new(&ep, 2)?;
    let mut three = Origin::new(&ep, 3)?;
    let mut window = vec![0u8; WINDOW];
    let base = window.as_mut_ptr();
    // SAFETY: `window` outlives the registration: it is unregistered
    // below before `window` is dropped.
    let id = unsafe { ep.register_window(base, WINDOW, CONTEXT, RANKS) }
        .map_err(libo2g_error("register window"))?;
    let pinned = ep.stats().map_err(libo2g_error("stats"))?.pinned_bytes;

    // Registration errors, each with its errno.
    let mut spare = vec![0u8; 4096];
    let sp = spare.as_mut_ptr();
    let refused = |ptr: *mut u8, len: usize, context: u32, ranks: u32| {
        // SAFETY: `spare` outlives any window this could make; every call
        // below is refused, and the check fails otherwise.
        errno(unsafe { ep.register_window(ptr, len, context, ranks) })
    };
    let refusals = [
        ("same context", refused(sp, 4096, CONTEXT, 1), libc::EEXIST),
        ("empty", refused(sp, 0, 41, 1), libc::EINVAL),
        ("no ranks", refused(sp, 4096, 41, 0), libc::EINVAL),
        (
            "context bit 31",
            refused(sp, 4096, 1 << 31, 1),
            libc::EINVAL,
        ),
        (
            "null",
            refused(std::ptr::null_mut(), 4096, 42, 1),
            libc::EFAULT,
        ),
    ];
    for (what, got, want) in refusals {
        if got != Some(want) {
            return Err(format!("{what}: errno {got:?}, want {want}"));
        }
    }
    if ep
        .unregister_window(id + 1000)
        .err()
        .and_then(|e| e.raw_os_error())
        != Some(libc::ENOENT)
    {
        return Err("an unknown window id is not ENOENT".into());
    }

    // Refused puts write 0xfd, which no `pattern` byte is (all below 251).
    // Without the lock a put is refused; the next answer says so.
    one.put(CONTEXT, 0, &[0xfd; 16], 0)?;
    one.ask_answered(lock_op::EXCLUSIVE, 500, 0, 1)?;
    // Another origin's shared lock waits behind the exclusive one.
    two.ask(CONTEXT, lock_op::SHARED, 600)?;
    // Puts that land, across pages and socket buffers; and refusals:
    // past the end, reserved field set, no such window.
    let small = pattern(1, 5000);
    let big = pattern(2, 512 << 10);
    one.put(CONTEXT, 100, &small, 0)?;
    one.put(CONTEXT, 8192, &big, 0)?;
    one.put(CONTEXT, (WINDOW - 3) as u32, b"end", 0)?;
    one.put(CONTEXT, 0, &[], 0)?;
    one.put(CONTEXT, (WINDOW - 10) as u32, &[0xfd; 20], 0)?;
    one.put(CONTEXT, 6000, &[0xfd; 100], 1)?;
    one.put(77, 0, &[0xfd; 64], 0)?;
    // The flush's answer means every put before it is in the window.
    one.ask_answered(lock_op::FLUSH, 501, 0, 2)?;
    let w = &window;
    if w[100..5100] != small[..]
        || w[8192..8192 + big.len()] != big[..]
        || &w[WINDOW - 3..] != b"end"
    {
        return Err("placed bytes differ from the puts".into());
    }
    if w.contains(&0xfd) || w[..100].iter().any(|&b| b != 0) {
        return Err("a refused put wrote the window".into());
    }
    if two.answer_waiting()? {
        return Err("a shared lock was granted beside an exclusive one".into());
    }
    // The unlock grants the waiting shared lock.
    one.ask_answered(lock_op::UNLOCK, 502, 0, 0)?;
    two.expect(600, 0, 0)?;
    two.put(CONTEXT, 0, b"two", 0)?;
    two.ask_answered(lock_op::UNLOCK, 601, 0, 0)?;
    if &window[..3] != b"two" {
        return Err("the second origin's put is not in the window".into());
    }
    // Gets: the window's bytes from the lock holder; none out of range or
    // without the lock.
    if !two.get(100, 16, 610)?.is_empty() {
        return Err("a get without the lock was answered with bytes".into());
    }
    one.ask_answered(lock_op::SHARED, 520, 0, 0)?;
    if one.get(100, small.len() as u64, 521)? != small {
        return Err("a get's bytes differ from the window's".into());
    }
    if one.get(8192, big.len() as u64, 522)? != big {
        return Err("a large get's bytes differ from the window's".into());
    }
    if !one.get((WINDOW - 4) as u32, 8, 523)?.is_empty() {
        return Err("a get past the window's end was answered with bytes".into());
    }
    one.ask_answered(lock_op::UNLOCK, 524, 0, 0)?;
    // Refused requests: an unlock without the lock, a second lock.
    one.ask_answered(lock_op::UNLOCK, 503, LockAnswer::REFUSED, 0)?;
    one.ask_answered(lock_op::SHARED, 504, 0, 0)?;
    one.ask_answered(lock_op::EXCLUSIVE, 505, LockAnswer::REFUSED, 0)?;
    one.ask_answered(lock_op::UNLOCK, 506, 0, 0)?;
    // A lock asked for after a fence the window's process has not
    // completed (the request's length) waits until it has.
    let env = Envelope {
        source: one.rank,
        tag: lock_op::SHARED,
        context: CONTEXT,
    };
    one.frame(Kind::Lock, env, 1, 530)?;
    std::thread::sleep(Duration::from_millis(300));
    if one.answer_waiting()? {
        return Err("a lock was granted before the fence it follows".into());
    }
    ep.set_window_epoch(id, 1)
        .map_err(libo2g_error("window epoch"))?;
    one.expect(530, 0, 0)?;
    one.ask_answered(lock_op::UNLOCK, 531, 0, 0)?;

    let st = ep.window_stats(id).map_err(libo2g_error("window stats"))?;
    let want = abi::WindowStats {
        id,
        placed_msgs: 5,
        placed_bytes: (small.len() + big.len() + 6) as u64,
        refused_msgs: 3,
        refused_bytes: 136,
        unknown_msgs: 1,
        requests: 13,
        answers: 17,
        gets: 4,
        get_bytes: (small.len() + big.len()) as u64,
        ..Default::default()
    };
    if st != want {
        return Err(format!("window counters {st:?}, want {want:?}"));
    }
    let es = ep.stats().map_err(libo2g_error("stats"))?;
    if es.matched_msgs != 0 || es.unexpected_msgs != 0 || es.failed_sockets != 0 {
        return Err(format!("the window touched matching: {es:?}"));
    }

    // Hostile origins fail only their own connection: a request before
    // the answer to the previous one (rank 2 waits behind rank 1), and
    // one for a window that does not exist (rank 3). Rank 2's wait is
    // withdrawn: rank 1 locks again at once after its unlock.
    one.ask_answered(lock_op::EXCLUSIVE, 507, 0, 0)?;
    two.ask(CONTEXT, lock_op::EXCLUSIVE, 602)?;
    two.ask(CONTEXT, lock_op::FLUSH, 603)?;
    three.ask(77, lock_op::SHARED, 700)?;
    failed(&ep, 2)?;
    one.ask_answered(lock_op::UNLOCK, 508, 0, 0)?;
    one.ask_answered(lock_op::EXCLUSIVE, 509, 0, 0)?;

    // An answer to this process itself goes to its own receive.
    let (self_ours, mut self_peer) = tcp_pair()?;
    ep.register_self(&self_ours, TARGET)
        .map_err(libo2g_error("register self"))?;
    let sel = Selector::new(Some(TARGET), Some(800), CONTEXT);
    let queued = matches!(
        ep.post(vec![0u8; 8], sel, 800)
            .map_err(|p| format!("post: {}", p.error))?,
        libo2g::Post::Queued(_)
    );
    if !queued {
        return Err("the answer's receive did not queue".into());
    }
    let env = Envelope {
        source: TARGET,
        tag: lock_op::SHARED,
        context: CONTEXT,
    };
    let mut self_enc = Encoder::new();
    self_peer
        .write_all(&self_enc.encode_ref(Kind::Lock, env, 0, 800))
        .map_err(|e| e.to_string())?;
    // Rank 1 holds the lock exclusively: the answer waits for its unlock.
    one.ask_answered(lock_op::UNLOCK, 510, 0, 0)?;
    let c = next_completion(&mut ep)?;
    if c.user_data != 800
        || c.status.is_err()
        || c.written != 8
        || LockAnswer::decode(c.buf[..8].try_into().unwrap_or(&[0xff; 8])) != LockAnswer::default()
    {
        return Err(format!("the answer to itself: {:?}", c.status));
    }

    // Unregistered mid-put: the rest of it is dropped, the stream goes on.
    one.ask_answered(lock_op::SHARED, 511, 0, 0)?;
    let half = pattern(3, 64 << 10);
    let env = Envelope {
        source: one.rank,
        tag: 0,
        context: CONTEXT,
    };
    one.frame(Kind::Put, env, 2 * half.len() as u64, 0)?;
    one.msg.write_all(&half).map_err(|e| e.to_string())?;
    ep.unregister_window(id)
        .map_err(libo2g_error("unregister window"))?;
    let before = window[half.len()..2 * half.len()].to_vec();
    one.msg.write_all(&half).map_err(|e| e.to_string())?;
    // A request for the window now gone fails the connection: the
    // stream was read up to it, past the dropped bytes.
    one.ask(CONTEXT, lock_op::FLUSH, 512)?;
    failed(&ep, 3)?;
    if window[half.len()..2 * half.len()] != before[..] {
        return Err("a put wrote the window after it was unregistered".into());
    }
    let after = ep.stats().map_err(libo2g_error("stats"))?;
    if after.pinned_bytes + WINDOW as u64 != pinned {
        return Err(format!(
            "after unregister: {after:?} (pinned before {pinned})"
        ));
    }
    while let Some(r) = ep.reap().map_err(libo2g_error("reap"))? {
        if !matches!(r, Reaped::Owned(_)) {
            return Err(format!("unexpected record {r:?}"));
        }
    }

    // Closing the endpoint with a window registered unpins it.
    let before = vm_pin_kib()?;
    // SAFETY: `spare` outlives the endpoint, dropped just below.
    unsafe { ep.register_window(sp, 4096, CONTEXT, 1) }.map_err(libo2g_error("register again"))?;
    let pins = vm_pin_kib()?;
    drop(ep);
    let left = vm_pin_kib()?;
    if pins <= before || left != before {
        return Err(format!(
            "VmPin {before} kB, {pins} kB with a window, {left} kB after closing"
        ));
    }
    drop(spare);
    drop(window);
    println!("locks answered, puts placed and refused as the window allows; {st:?}");
    Ok(())
}
