//! Sending without a copy into the kernel (`MSG_ZEROCOPY`,
//! Documentation/networking/msg_zerocopy.rst), for the socket transports'
//! large rendezvous data to a peer on another host.
//!
//! A send with `MSG_ZEROCOPY` pins the caller's pages and hands them to
//! TCP. The kernel numbers each such call that took bytes (from 0, per
//! socket) and, once TCP has freed every buffer that referred to them (the
//! bytes were acknowledged), queues a completion on the socket's error
//! queue, which `poll` reports as `POLLERR`. Until then the caller must
//! leave the memory alone. A completion marked "copied" means the kernel
//! copied after all (a loopback peer, a device without scatter-gather):
//! then zero-copy costs more than it saves, and the connection stops
//! using it.
//!
//! Public (hidden) for `o2g-tcp-stream`, which measures the same sends
//! below any MPI layer.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// From the kernel's uapi, which the `libc` crate does not carry (yet):
/// `SO_ZEROCOPY` (asm-generic/socket.h), `SO_EE_ORIGIN_ZEROCOPY` and
/// `SO_EE_CODE_ZEROCOPY_COPIED` (linux/errqueue.h).
const SO_ZEROCOPY: libc::c_int = 60;
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// One socket's zero-copy sends: how many were made, and which completed.
/// Sends are counted in 64 bits here (the kernel's 32-bit numbers are
/// its low half), so that "every send before the n-th" stays a plain
/// comparison.
#[derive(Debug)]
pub struct ZeroCopy {
    /// Sends made (the kernel numbers them from 0).
    made: u64,
    /// Every send before this one has completed.
    done_below: u64,
    /// Completed ranges past `done_below` (start..end, disjoint): the
    /// kernel may complete sends out of order.
    early: Vec<(u64, u64)>,
    /// Sends the kernel completed by copying after all.
    copied: u64,
}

impl ZeroCopy {
    /// Turns on `SO_ZEROCOPY` for `s`; `None` where the kernel cannot (it
    /// predates 4.14), and sends copy as before.
    pub fn enable(s: &TcpStream) -> Option<Self> {
        let on: libc::c_int = 1;
        // SAFETY: `on` is a valid int for the call's duration, its size
        // given; the fd is open while `s` lives.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_ZEROCOPY,
                (&raw const on).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        (r == 0).then_some(Self {
            made: 0,
            done_below: 0,
            early: Vec::new(),
            copied: 0,
        })
    }

    /// Sends made so far: what [`ZeroCopy::done_before`] takes to ask
    /// about every send made up to now.
    pub fn made(&self) -> u64 {
        self.made
    }

    /// Whether every send before the `n`-th has completed.
    pub fn done_before(&self, n: u64) -> bool {
        self.done_below >= n
    }

    /// Whether sends should still go without a copy on this socket.
    pub fn pays(&self) -> bool {
        self.copied == 0
    }

    /// Sends the kernel completed by copying after all.
    pub fn copied(&self) -> u64 {
        self.copied
    }

    /// Whether every send made has completed.
    pub fn idle(&self) -> bool {
        self.done_before(self.made)
    }

    /// Sends as much of `data` as `s` takes now, without a copy; the bytes
    /// taken. `WouldBlock`: the socket is full; `ENOBUFS`: too many
    /// completions wait to be taken ([`ZeroCopy::reap`]).
    ///
    /// # Safety
    ///
    /// `data` stays allocated and unchanged until [`ZeroCopy::idle`] says
    /// so after this call (the kernel reads it until then).
    pub unsafe fn send(&mut self, s: &TcpStream, data: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `data` is valid for reads for the call; this
            // function's contract keeps it so while TCP refers to its pages.
            let r = unsafe {
                libc::send(
                    s.as_raw_fd(),
                    data.as_ptr().cast(),
                    data.len(),
                    libc::MSG_ZEROCOPY | libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if r >= 0 {
                if r > 0 {
                    self.made += 1;
                }
                return Ok(r as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Takes every completion queued on `s`'s error queue; whether all
    /// sends made have completed now.
    pub fn reap(&mut self, s: &TcpStream) -> io::Result<bool> {
        while !self.idle() {
            // Room for a few control messages; one completion needs 48 bytes.
            let mut control = [0u64; 16];
            // SAFETY: msghdr is plain data, all zeros a valid empty one.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = size_of_val(&control);
            // SAFETY: `msg` points only at `control`, live for the call.
            let r = unsafe {
                libc::recvmsg(
                    s.as_raw_fd(),
                    &mut msg,
                    libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => break,
                    _ => return Err(e),
                }
            }
            // SAFETY: the kernel filled `msg` and `control` in the call above.
            let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
            while !c.is_null() {
                // SAFETY: `c` is a control message inside `control`; an
                // IP(V6)_RECVERR one carries a sock_extended_err, read
                // unaligned as the control buffer need not align it.
                let err = unsafe {
                    let h = &*c;
                    let recverr = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                        || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
                    recverr.then(|| {
                        std::ptr::read_unaligned(
                            libc::CMSG_DATA(c).cast::<libc::sock_extended_err>(),
                        )
                    })
                };
                if let Some(e) = err {
                    self.complete(e)?;
                }
                // SAFETY: walking the control buffer the kernel filled.
                c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
            }
        }
        Ok(self.idle())
    }

    /// Counts one completion record: sends `ee_info..=ee_data`, in the
    /// kernel's 32-bit numbering, all of them made and not yet completed.
    fn complete(&mut self, e: libc::sock_extended_err) -> io::Result<()> {
        if e.ee_origin != SO_EE_ORIGIN_ZEROCOPY || e.ee_errno != 0 {
            return Err(io::Error::other(format!(
                "unexpected error-queue record (origin {}, errno {})",
                e.ee_origin, e.ee_errno
            )));
        }
        // The record's first send, at or after `done_below`.
        let start = self.done_below + u64::from(e.ee_info.wrapping_sub(self.done_below as u32));
        let end = start + u64::from(e.ee_data.wrapping_sub(e.ee_info)) + 1;
        let overlaps = self.early.iter().any(|&(s, e)| start < e && s < end);
        if end > self.made || overlaps {
            return Err(io::Error::other(format!(
                "the kernel completed zero-copy sends {start}..{end}, but {} were made and \
                 {} completed",
                self.made, self.done_below
            )));
        }
        self.early.push((start, end));
        self.early.sort_unstable();
        // Fold the ranges that now follow on from `done_below`.
        while let Some(&(s, e)) = self.early.first() {
            if s != self.done_below {
                break;
            }
            self.done_below = e;
            self.early.remove(0);
        }
        if e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
            self.copied += end - start;
        }
        Ok(())
    }
}

/// Whether `s` has `SO_ZEROCOPY` on (for tests).
#[cfg(test)]
fn enabled(s: &TcpStream) -> bool {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for the call.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ZEROCOPY,
            (&raw mut v).cast(),
            &mut len,
        )
    };
    r == 0 && v == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    /// Every byte arrives, every send completes, and a loopback peer's
    /// completions say the kernel copied, so the socket stops using it.
    #[test]
    fn zero_copy_sends_arrive_and_complete() {
        let (a, mut b) = pair();
        let mut zc = ZeroCopy::enable(&a).expect("SO_ZEROCOPY");
        assert!(enabled(&a) && zc.pays());
        a.set_nonblocking(true).unwrap();
        let data: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        let mut at = 0;
        let until = Instant::now() + Duration::from_secs(30);
        while at < data.len() {
            assert!(Instant::now() < until, "stuck at {at}");
            // SAFETY: `data` is neither changed nor freed before `idle`.
            match unsafe { zc.send(&a, &data[at..]) } {
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    zc.reap(&a).unwrap();
                }
                Err(e) => panic!("send: {e}"),
            }
        }
        assert!(zc.made > 0);
        while !zc.reap(&a).unwrap() {
            assert!(
                Instant::now() < until,
                "{} of {} completed",
                zc.done_below,
                zc.made
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        a.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(reader.join().unwrap() == data, "the bytes arrived changed");
        assert!(!zc.pays(), "loopback copies, and its completions say so");
    }

    /// Completions out of order count only once the ones before them
    /// came; a completion of sends never made, or completed twice, is an
    /// error.
    #[test]
    fn completions_count_in_order_and_only_once() {
        let mut zc = ZeroCopy {
            made: 4,
            done_below: 0,
            early: Vec::new(),
            copied: 0,
        };
        let record = |lo, hi| libc::sock_extended_err {
            ee_errno: 0,
            ee_origin: SO_EE_ORIGIN_ZEROCOPY,
            ee_type: 0,
            ee_code: 0,
            ee_pad: 0,
            ee_info: lo,
            ee_data: hi,
        };
        zc.complete(record(2, 3)).unwrap();
        assert!(!zc.done_before(1) && !zc.idle());
        assert!(zc.complete(record(3, 4)).is_err(), "send 4 was never made");
        assert!(zc.complete(record(3, 3)).is_err(), "send 3 completed twice");
        zc.complete(record(0, 0)).unwrap();
        assert!(zc.done_before(1) && !zc.done_before(2));
        zc.complete(record(1, 1)).unwrap();
        assert!(zc.idle() && zc.pays());
        assert!(zc.complete(record(0, 0)).is_err(), "send 0 completed twice");
    }
}
