//! `sockets-select`: readiness through `select(2)`, the way YAMPII/Sock and
//! the MPIs of its day did it, kept deliberately classic as the o2g
//! paper's baseline.
//!
//! Every progress round builds fresh read and write `fd_set`s over all
//! live connections, calls `select`, and then the shared loop in
//! `sockets.rs` reads each readable socket until it would block. The cost
//! the paper measures, a system call over every connection per round plus
//! one `read` per socket, is exactly what remains here. Descriptors at or
//! above `FD_SETSIZE` (1024) cannot be watched; that is an error, not a
//! silent fallback (`sockets-poll` is this loop without that limit).

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::sys::select::{select, FdSet, FD_SETSIZE};
use nix::sys::time::{TimeVal, TimeValLike};

use super::sockets::{Interest, Poller, Ready};

/// The `select` poller; it keeps no state between rounds.
pub(crate) struct Select;

impl Select {
    pub(crate) fn new() -> Self {
        Select
    }
}

impl Poller for Select {
    const NEEDS_INTEREST: bool = true;

    fn register(&mut self, _rank: usize, s: &TcpStream, w: Option<&TcpStream>) -> io::Result<()> {
        for fd in std::iter::once(s).chain(w).map(AsRawFd::as_raw_fd) {
            if fd as usize >= FD_SETSIZE {
                return Err(io::Error::other(format!(
                    "descriptor {fd} is beyond select's FD_SETSIZE ({FD_SETSIZE})"
                )));
            }
        }
        Ok(())
    }

    fn deregister(&mut self, _rank: usize, _s: &TcpStream, _w: Option<&TcpStream>) {}

    fn wait(
        &mut self,
        interest: &[Interest<'_>],
        timeout: Option<Duration>,
        ready: &mut Vec<Ready>,
    ) -> io::Result<()> {
        let mut read = FdSet::new();
        let mut write = FdSet::new();
        // One past the highest descriptor, as a C caller keeps it: left to
        // nix (`None`), it is found by testing all FD_SETSIZE bits of each
        // set from the top, about 18,000 instructions a round trip (three
        // quarters of this transport's own instructions).
        let mut nfds = 0;
        for i in interest {
            if let Some(r) = i.read {
                read.insert(r);
                nfds = nfds.max(r.as_raw_fd() + 1);
            }
            if let Some(w) = i.write {
                write.insert(w);
                nfds = nfds.max(w.as_raw_fd() + 1);
            }
        }
        let mut tv =
            timeout.map(|t| TimeVal::microseconds(t.as_micros().min(i64::MAX as u128) as i64));
        match select(nfds, &mut read, &mut write, None, tv.as_mut()) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        for i in interest {
            let (r, w) = (
                i.read.is_some_and(|r| read.contains(r)),
                i.write.is_some_and(|w| write.contains(w)),
            );
            if r || w {
                ready.push(Ready {
                    rank: i.rank,
                    readable: r,
                    writable: w,
                    // Level-triggered: a socket that ends stays readable.
                    ending: false,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::{AsFd, AsRawFd};
    use std::time::Duration;

    use super::Select;
    use crate::transport::sockets::{Interest, Poller, Ready};

    /// A connected pair over loopback: (the end that writes, the end
    /// that reads).
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let w = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (r, _) = l.accept().expect("accept");
        (w, r)
    }

    #[test]
    fn the_highest_descriptor_is_watched() {
        // Two readers; the readable one holds the higher descriptor, so
        // `nfds` one short of it would hide it. (Other tests open and close
        // descriptors meanwhile, so the later pair need not be the higher.)
        let (a, b) = (pair(), pair());
        let ((_quiet_w, quiet), (mut w, loud)) = if a.1.as_raw_fd() < b.1.as_raw_fd() {
            (a, b)
        } else {
            (b, a)
        };
        w.write_all(b"x").expect("write");
        let interest = [
            Interest {
                rank: 0,
                read: Some(quiet.as_fd()),
                write: None,
            },
            Interest {
                rank: 1,
                read: Some(loud.as_fd()),
                write: None,
            },
        ];
        let mut ready: Vec<Ready> = Vec::new();
        Select::new()
            .wait(&interest, Some(Duration::from_secs(5)), &mut ready)
            .expect("select");
        let ranks: Vec<(usize, bool)> = ready.iter().map(|r| (r.rank, r.readable)).collect();
        assert_eq!(ranks, [(1, true)]);
    }
}
