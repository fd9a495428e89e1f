//! Where a message lands: expected receives of every size written in the
//! protocol handler, unexpected messages stored, taken and freed (also one
//! whose receive is posted while it is being stored), truncation.

use std::io::Write;
use std::time::{Duration, Instant};

use libo2g::{Endpoint, EndpointConfig, Post, RecvError};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::Kind;

use crate::harness::{
    endpoint, libo2g_error, next_completion, pattern, receive, sel, tcp_pair, Sender, PEER,
};
use crate::CheckResult;

/// Expected receives of 0 B to 64 MiB land in the posted buffers; messages
/// sent before their receive are stored, found by the later post, copied
/// out and freed; a short buffer reports truncation.
pub(crate) fn paths() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let mut tx = Sender::new(peer);

    let sizes = [0usize, 1, 31, 4096, 65_537, 1 << 20, 9 << 20, 64 << 20];
    for (i, &len) in sizes.iter().enumerate() {
        let tag = i as u32;
        let h = ep
            .post(vec![0u8; len], sel(tag), u64::from(tag))
            .map_err(|p| p.error.to_string())?;
        if !matches!(h, Post::Queued(_)) {
            return Err(format!("{len} B: posted first but found a stored message"));
        }
        drop(h);
        let data = pattern(i as u64, len);
        let t = std::thread::spawn({
            let mut s = tx.sock.try_clone().map_err(|e| e.to_string())?;
            let mut enc = tx.enc;
            tx.enc.encode(Kind::Eager, Envelope::default(), 0); // keep sequence numbers in step
            move || -> std::io::Result<()> {
                let env = Envelope {
                    source: PEER,
                    tag,
                    context: 0,
                };
                s.write_all(&enc.encode(Kind::Eager, env, data.len() as u64))?;
                s.write_all(&data)
            }
        });
        let c = next_completion(&mut ep)?;
        t.join()
            .map_err(|_| "sender panicked")?
            .map_err(|e| e.to_string())?;
        if c.status.is_err() || c.len != len as u64 || c.written != len || c.tag != tag {
            return Err(format!(
                "{len} B: bad completion {:?} len {} written {}",
                c.status, c.len, c.written
            ));
        }
        if c.buf != pattern(i as u64, len) {
            return Err(format!("{len} B: payload differs"));
        }
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.matched_msgs != sizes.len() as u64 || s.unexpected_msgs != 0 {
        return Err(format!("expected path not taken: {s:?}"));
    }
    println!(
        "expected: {} sizes up to 64 MiB matched directly",
        sizes.len()
    );

    // Unexpected: send first, then post.
    for k in 0..3u64 {
        tx.send(100 + k as u32, &pattern(100 + k, 5000))
            .map_err(|e| e.to_string())?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while ep.stats().map_err(libo2g_error("stats"))?.unexpected < 3 {
        if Instant::now() > deadline {
            return Err("3 unexpected messages never stored".into());
        }
        ep.poll(Some(Duration::from_millis(200)))
            .map_err(libo2g_error("poll"))?;
    }
    for k in [2u64, 0, 1] {
        let (data, status) = receive(&mut ep, 100 + k as u32, 5000)?;
        if status.is_err() || data != pattern(100 + k, 5000) {
            return Err(format!("unexpected message {k} wrong: {status:?}"));
        }
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.unexpected != 0 || s.dump_used != 0 || s.unexpected_msgs != 3 {
        return Err(format!("stored messages not freed: {s:?}"));
    }
    // Truncation, on both paths.
    tx.send(200, &pattern(200, 100))
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(300));
    let (data, status) = receive(&mut ep, 200, 10)?;
    if status != Err(RecvError::Truncated) || data != pattern(200, 100)[..10] {
        return Err(format!("stored truncation: {status:?}"));
    }
    let h = ep
        .post(vec![0u8; 10], sel(201), 201)
        .map_err(|p| p.error.to_string())?;
    drop(h);
    tx.send(201, &pattern(201, 100))
        .map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    if c.status != Err(RecvError::Truncated) || c.len != 100 || c.buf[..] != pattern(201, 100)[..10]
    {
        return Err(format!("direct truncation: {:?} len {}", c.status, c.len));
    }
    println!("unexpected: 3 stored, taken out of order, freed; truncation reported");
    posted_while_storing(&mut ep, &mut tx)
}

/// A receive posted while its message streams into the dump area: the
/// module finishes storing it, then copies it into the receive (outside
/// its lock, and for a message this large in a work item rather than the
/// protocol handler) and completes that, without announcing the message.
fn posted_while_storing(ep: &mut Endpoint, tx: &mut Sender) -> CheckResult {
    let (tag, len) = (300u32, 4usize << 20);
    let data = pattern(300, len);
    let before = ep.stats().map_err(libo2g_error("stats"))?;
    let env = Envelope {
        source: PEER,
        tag,
        context: 0,
    };
    let header = tx.enc.encode(Kind::Eager, env, len as u64);
    tx.sock.write_all(&header).map_err(|e| e.to_string())?;
    tx.sock
        .write_all(&data[..len / 2])
        .map_err(|e| e.to_string())?;
    // The header was read and the message given a dump region.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ep.stats().map_err(libo2g_error("stats"))?.dump_used == 0 {
        if Instant::now() > deadline {
            return Err("half a message sent, but no dump region taken".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let h = ep
        .post(vec![0u8; len], sel(tag), u64::from(tag))
        .map_err(|p| p.error.to_string())?;
    if !matches!(h, Post::Queued(_)) {
        return Err("a message still arriving was offered as stored".into());
    }
    drop(h);
    tx.sock
        .write_all(&data[len / 2..])
        .map_err(|e| e.to_string())?;
    let c = next_completion(ep)?;
    if c.status.is_err() || c.len != len as u64 || c.written != len || c.tag != tag {
        return Err(format!(
            "posted while storing: bad completion {:?} len {} written {}",
            c.status, c.len, c.written
        ));
    }
    if c.buf != data {
        return Err("posted while storing: payload differs".into());
    }
    let after = ep.stats().map_err(libo2g_error("stats"))?;
    if after.matched_msgs != before.matched_msgs
        || after.unexpected_msgs != before.unexpected_msgs + 1
        || after.dump_used != 0
    {
        return Err(format!(
            "posted while storing: not the stored path, or not freed: {after:?}"
        ));
    }
    // 4 MiB is too much to copy with bottom halves off: the module's work
    // item copies it, in process context.
    if after.deferred_copies != before.deferred_copies + 1 {
        return Err(format!(
            "posted while storing: 4 MiB copied in the protocol handler, not deferred: {after:?}"
        ));
    }
    println!("posted while storing: 4 MiB stored, then copied into the receive by a work item");
    Ok(())
}
