//! An endpoint that goes away with receives posted and data streaming:
//! unregistered, closed, or its process killed.

use std::time::Duration;

use libo2g::{Device, EndpointConfig};

use crate::harness::{endpoint, libo2g_error, pattern, sel, tcp_pair, Sender, PEER};
use crate::CheckResult;

/// Unregister and close with receives posted and data streaming; the
/// socket keeps working as a plain socket after unregister.
pub(crate) fn teardown() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    for tag in 0..4 {
        let _ = ep
            .post(vec![0u8; 8 << 20], sel(tag), u64::from(tag))
            .map_err(|p| p.error.to_string())?;
    }
    let streaming = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        for tag in 0..4 {
            if tx.send(tag, &pattern(u64::from(tag), 8 << 20)).is_err() {
                break;
            }
        }
        tx
    });
    std::thread::sleep(Duration::from_millis(300));
    ep.unregister_socket(PEER)
        .map_err(libo2g_error("unregister mid-stream"))?;
    // Unregister is synchronous: when it returns, the socket is gone from
    // the endpoint, whatever completed or aborted.
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.sockets != 0 {
        return Err(format!("socket still registered after unregister: {s:?}"));
    }
    drop(ours);
    let tx = streaming.join().map_err(|_| "sender panicked")?;
    drop(tx);
    println!("unregistered mid-stream: {s:?}");

    // Close the device with receives posted and data in flight.
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let _ = ep
        .post(vec![0u8; 16 << 20], sel(1), 1)
        .map_err(|p| p.error.to_string())?;
    let t = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        let _ = tx.send(1, &pattern(1, 16 << 20));
    });
    std::thread::sleep(Duration::from_millis(200));
    drop(ep);
    drop(ours);
    t.join().map_err(|_| "sender panicked")?;
    println!("closed the device with a 16 MiB receive in flight");
    Ok(())
}

/// A child process with receives posted and data streaming into them is
/// killed with SIGKILL; the parent checks the endpoint went away.
pub(crate) fn sigkill() -> CheckResult {
    let (ours, peer) = tcp_pair()?;
    // SAFETY: The child only uses async-signal-unsafe code in its own copy
    // of the address space and never returns into the parent's stack frames.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        drop(peer);
        let code = (|| -> Result<(), String> {
            let mut ep = endpoint(EndpointConfig::default())?;
            ep.register_socket(&ours, PEER)
                .map_err(libo2g_error("register"))?;
            for tag in 0..8 {
                let _ = ep
                    .post(vec![0u8; 4 << 20], sel(tag), u64::from(tag))
                    .map_err(|p| p.error.to_string())?;
            }
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        })();
        // SAFETY: Leaving the child without running the parent's destructors.
        unsafe { libc::_exit(i32::from(code.is_err())) };
    }
    drop(ours);
    let writer = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        for tag in 0..8 {
            if tx.send(tag, &pattern(u64::from(tag), 4 << 20)).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: Signalling the child we forked.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: Reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    writer.join().map_err(|_| "writer panicked")?;
    let listing = Device::open()
        .map_err(libo2g_error("open"))?
        .list_endpoints()
        .map_err(libo2g_error("list"))?;
    if listing.endpoints.iter().any(|s| s.pid == pid as u32) {
        return Err(format!("killed process {pid} still has an endpoint"));
    }
    println!("SIGKILL with receives posted and streaming: endpoint gone");
    Ok(())
}
