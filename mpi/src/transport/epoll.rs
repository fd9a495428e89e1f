//! `sockets-epoll`: readiness through epoll (via mio), what a modern
//! user-space MPI does.
//!
//! Each connection is registered once for reading and writing,
//! edge-triggered; a round costs one `epoll_wait` whatever the number of
//! connections. Edge triggering is safe because the shared loop in
//! `sockets.rs` clears a readiness hint only when a read or write returns
//! `WouldBlock`.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::sockets::{self, Poller, Ready};

/// The epoll poller.
pub(crate) struct Epoll {
    poll: Poll,
    events: Events,
}

impl Epoll {
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            poll: Poll::new()?,
            events: Events::with_capacity(256),
        })
    }
}

impl Poller for Epoll {
    const NEEDS_INTEREST: bool = false;

    // Token 2r is rank r's reading socket (also its writing one unless a
    // separate writer exists), token 2r+1 its separate writer.
    fn register(&mut self, rank: usize, s: &TcpStream, w: Option<&TcpStream>) -> io::Result<()> {
        let reg = self.poll.registry();
        match w {
            None => reg.register(
                &mut SourceFd(&s.as_raw_fd()),
                Token(2 * rank),
                Interest::READABLE | Interest::WRITABLE,
            ),
            Some(w) => {
                reg.register(
                    &mut SourceFd(&s.as_raw_fd()),
                    Token(2 * rank),
                    Interest::READABLE,
                )?;
                reg.register(
                    &mut SourceFd(&w.as_raw_fd()),
                    Token(2 * rank + 1),
                    Interest::WRITABLE,
                )
            }
        }
    }

    fn deregister(&mut self, _rank: usize, s: &TcpStream, w: Option<&TcpStream>) {
        for fd in std::iter::once(s).chain(w).map(AsRawFd::as_raw_fd) {
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        }
    }

    fn wait(
        &mut self,
        _interest: &[sockets::Interest<'_>],
        timeout: Option<Duration>,
        ready: &mut Vec<Ready>,
    ) -> io::Result<()> {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        for ev in &self.events {
            ready.push(Ready {
                rank: ev.token().0 / 2,
                // Errors and hang-ups are found by the read that follows.
                readable: ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                writable: ev.is_writable() || ev.is_write_closed(),
                ending: ev.is_read_closed() || ev.is_error(),
            });
        }
        Ok(())
    }
}
