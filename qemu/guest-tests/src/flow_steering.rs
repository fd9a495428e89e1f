//! Receive Flow Steering for large receives (`kmod/flow_steering.rs`).
//!
//! The receiver runs on CPU 0 and the sender on CPU 1, over loopback. With
//! RFS on, a posted receive of 1 MiB steers its connection's processing to
//! CPU 0, which RPS does by interrupting it: CPU 0's `received_rps` counter
//! of those interrupts (`/proc/net/softnet_stat`) grows. A small message ends the
//! steering, and small receives never start it: the counter then stays
//! put. With RFS off the module steers nothing.

use std::fs;
use std::sync::mpsc;
use std::thread;

use libo2g::{Endpoint, EndpointConfig, Post};

use crate::harness::{
    endpoint, libo2g_error, next_completion, pattern, pin_to_cpu, sel, tcp_pair, Sender, PEER,
};
use crate::CheckResult;

const SOCK_FLOW_ENTRIES: &str = "/proc/sys/net/core/rps_sock_flow_entries";
const LO_FLOW_CNT: &str = "/sys/class/net/lo/queues/rx-0/rps_flow_cnt";

/// RFS's two settings as they were, put back when dropped.
struct RfsSettings {
    entries: String,
    flow_cnt: String,
}

impl RfsSettings {
    fn save() -> Result<Self, String> {
        let read = |p: &str| fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
        Ok(Self {
            entries: read(SOCK_FLOW_ENTRIES)?,
            flow_cnt: read(LO_FLOW_CNT)?,
        })
    }

    /// Turns RFS on (a table of `n` flows) or off (0) for loopback.
    fn set(n: u32) -> CheckResult {
        for p in [SOCK_FLOW_ENTRIES, LO_FLOW_CNT] {
            fs::write(p, n.to_string()).map_err(|e| format!("{p}: {e}"))?;
        }
        Ok(())
    }
}

impl Drop for RfsSettings {
    fn drop(&mut self) {
        let _ = fs::write(SOCK_FLOW_ENTRIES, self.entries.trim());
        let _ = fs::write(LO_FLOW_CNT, self.flow_cnt.trim());
    }
}

/// CPU 0's count of interrupts by which RPS handed it packets from
/// another CPU (a 32-bit counter).
fn received_rps_cpu0() -> Result<u32, String> {
    let stat = fs::read_to_string("/proc/net/softnet_stat").map_err(|e| e.to_string())?;
    let row = stat.lines().next().ok_or("softnet_stat is empty")?;
    let field = row
        .split_whitespace()
        .nth(9)
        .ok_or_else(|| format!("softnet_stat row without received_rps: {row}"))?;
    u32::from_str_radix(field, 16).map_err(|e| format!("received_rps {field}: {e}"))
}

/// Receives `count` messages of `len` bytes, each posted before a sender
/// on CPU 1 writes it; returns how much CPU 0's `received_rps` grew.
fn exchange(
    ep: &mut Endpoint,
    tx: &mpsc::Sender<(u32, usize)>,
    done: &mpsc::Receiver<Result<(), String>>,
    first_tag: u32,
    count: u32,
    len: usize,
) -> Result<u32, String> {
    let before = received_rps_cpu0()?;
    for tag in first_tag..first_tag + count {
        match ep.post(vec![0u8; len], sel(tag), u64::from(tag)) {
            Ok(Post::Queued(_)) => {}
            other => return Err(format!("post for tag {tag}: {other:?}")),
        }
        tx.send((tag, len))
            .map_err(|_| "the sender thread is gone")?;
        let c = next_completion(ep)?;
        if c.status.is_err() || c.data() != pattern(u64::from(tag), len) {
            return Err(format!(
                "tag {tag}: completed with {:?}, wrong data",
                c.status
            ));
        }
        done.recv().map_err(|_| "the sender thread is gone")??;
    }
    Ok(received_rps_cpu0()?.wrapping_sub(before))
}

pub(crate) fn check() -> CheckResult {
    let saved = RfsSettings::save()?;
    pin_to_cpu(0)?;
    let mut ep = endpoint(EndpointConfig {
        max_posted: 4,
        dump_bytes: 4 << 20,
        ..EndpointConfig::default()
    })?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let (tx, rx) = mpsc::channel::<(u32, usize)>();
    let (done_tx, done) = mpsc::channel();
    let sender = thread::spawn(move || {
        let mut out = Sender::new(peer);
        let pinned = pin_to_cpu(1);
        if let Err(e) = &pinned {
            let _ = done_tx.send(Err(e.clone()));
            return;
        }
        for (tag, len) in rx {
            let sent = out
                .send(tag, &pattern(u64::from(tag), len))
                .map_err(|e| format!("send tag {tag}: {e}"));
            if done_tx.send(sent).is_err() {
                return;
            }
        }
    });

    RfsSettings::set(32768)?;
    let large = exchange(&mut ep, &tx, &done, 1, 8, 1 << 20)?;
    if large < 4 {
        return Err(format!(
            "RFS on, 8 receives of 1 MiB posted on CPU 0, sent from CPU 1: \
             RPS interrupted CPU 0 {large} times, want at least 4"
        ));
    }
    println!("RFS on: 8 receives of 1 MiB steered to the receiving CPU ({large} interrupts)");

    // The first small message ends the steering; it may still be steered.
    exchange(&mut ep, &tx, &done, 100, 1, 8)?;
    let small = exchange(&mut ep, &tx, &done, 101, 64, 8)?;
    if small > 4 {
        return Err(format!(
            "RFS on, 64 receives of 8 bytes after a small message: \
             RPS interrupted CPU 0 {small} times, want none steered"
        ));
    }
    println!(
        "RFS on: a small message ended the steering; 64 small ones were not steered ({small})"
    );

    RfsSettings::set(0)?;
    let off = exchange(&mut ep, &tx, &done, 200, 8, 1 << 20)?;
    if off != 0 {
        return Err(format!(
            "RFS off, 8 receives of 1 MiB: RPS interrupted CPU 0 {off} times, want 0"
        ));
    }
    println!("RFS off: nothing steered");

    drop(tx);
    sender.join().map_err(|_| "the sender thread panicked")?;
    drop(saved);
    Ok(())
}
