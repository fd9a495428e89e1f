//! The module's memory windows (`kmod/window.rs`): registration, and the
//! `Put` and `Lock` frames an origin writes on its messages connection to
//! a target whose module serves the window.

use o2g_core::proto::envelope::{Envelope, Selector};
use o2g_core::proto::wire::Kind;

use crate::error::{Error, Result};
use crate::transport::{RecvToken, SendToken, Windows};

use super::receive::Attempt;
use super::{lib_err, O2g};

impl Windows for O2g {
    unsafe fn register_window(&mut self, base: *mut u8, len: usize, context: u32) -> Result<u32> {
        // Origins are world ranks: every connection's.
        let ranks = self.peers.len() as u32;
        // SAFETY: The caller keeps the memory valid until unregistered.
        unsafe { self.ep.register_window(base, len, context, ranks) }
            .map_err(|e| lib_err("registering a window with the module", e))
    }

    fn unregister_window(&mut self, id: u32) -> Result<()> {
        self.ep
            .unregister_window(id)
            .map_err(|e| lib_err("unregistering a window", e))
    }

    fn placed_puts(&mut self, id: u32) -> Result<u64> {
        self.ep
            .window_stats(id)
            .map(|s| s.placed_msgs)
            .map_err(|e| lib_err("reading a window's counters", e))
    }

    fn set_epoch(&mut self, id: u32, epoch: u64) -> Result<()> {
        self.ep
            .set_window_epoch(id, epoch)
            .map_err(|e| lib_err("telling the module a window's fences", e))
    }

    fn post_answer(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken> {
        let token = RecvToken::from_handle(self.next_recv);
        self.next_recv += 1;
        let state = loop {
            // Announcements first: the module refuses a post while one
            // could match (none can: an answer's tag is never reused).
            self.reap()?;
            match self.try_post(sel, capacity, token)? {
                Attempt::Made(state) => break state,
                Attempt::Retry => {}
                Attempt::NoPins => {
                    return Err(Error::Config(format!(
                        "the o2g module could not pin a {capacity}-byte receive for a window's \
                         answer: raise `ulimit -l` or O2G_PIN_BUDGET"
                    )))
                }
            }
        };
        self.recvs.insert(token, state);
        Ok(token)
    }

    fn window_frame(
        &mut self,
        dest: u32,
        kind: Kind,
        env: Envelope,
        len: u64,
        reference: u32,
        payload: &[u8],
    ) -> Result<SendToken> {
        self.check_size(usize::try_from(len).unwrap_or(usize::MAX))?;
        self.peer(dest)?;
        let p = &mut self.peers[dest as usize];
        let header = p.outbox.tx.encode_ref(kind, env, len, reference);
        let w = p.writer.as_mut().unwrap_or(&mut p.registered);
        match p.outbox.start(w, &mut self.sends, header, payload) {
            Ok(token) => Ok(token),
            Err(e) => {
                self.kill_on_write(dest, &e);
                self.peer(dest).map(|_| SendToken(0))
            }
        }
    }
}
