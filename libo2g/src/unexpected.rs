//! Unexpected messages the module stored in the dump area.

use std::fmt;
use std::ops::Range;
use std::os::fd::AsFd;

use crate::mapping::Mapping;
use crate::{abi, raw, Device, Envelope, Error, Layout, Result};

/// The MPI envelope of a message the module stored (its context keeps
/// the synchronous-send flag).
pub(crate) fn envelope_of(m: &abi::StoredMessage) -> Envelope {
    Envelope {
        source: m.source,
        tag: m.tag,
        context: m.context,
    }
}

/// A stored message the module announced in the ring
/// ([`Reaped::Stored`](crate::Reaped::Stored), with
/// [`EndpointConfig::notices`](crate::EndpointConfig::notices)). It belongs
/// to this process: read it with
/// [`Endpoint::announced_data`](crate::Endpoint::announced_data) and give
/// its space back with [`Endpoint::give_back`](crate::Endpoint::give_back).
/// Dropping it instead keeps its dump space taken until the endpoint closes.
#[must_use = "an announced message holds dump space until given back"]
#[derive(Debug, PartialEq, Eq)]
pub struct Announced {
    pub(crate) id: u64,
    envelope: Envelope,
    len: u64,
    /// The payload, checked to lie inside the dump area.
    pub(crate) range: Range<usize>,
}

impl Announced {
    /// Checks that the announced `msg` lies in the dump area.
    pub(crate) fn new(layout: &Layout, msg: &abi::StoredMessage) -> Result<Self> {
        Ok(Self {
            id: msg.id,
            envelope: envelope_of(msg),
            len: msg.len,
            range: layout.message_range(msg)?,
        })
    }

    /// Source, tag and context.
    pub fn envelope(&self) -> Envelope {
        self.envelope
    }

    /// Payload length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the message has no payload.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The module's id of the message.
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// An unexpected message that belongs to this process: taken by a post, or
/// claimed by [`Endpoint::probe_claim`](crate::Endpoint::probe_claim). Its
/// payload stays in the endpoint's dump area, readable through
/// [`UnexpectedMessage::data`], until [`UnexpectedMessage::free`] or drop
/// gives the space back to the module.
pub struct UnexpectedMessage<'a> {
    device: &'a Device,
    mapping: &'a Mapping,
    msg: abi::StoredMessage,
    /// `msg`'s payload, checked to lie inside the dump area.
    range: Range<usize>,
    freed: bool,
}

impl<'a> UnexpectedMessage<'a> {
    /// Takes ownership of the stored message `msg`, checking that it lies in
    /// the dump area. If it does not, the message is freed (best effort) and
    /// [`Error::BadAnswer`] returned.
    pub(crate) fn take(
        device: &'a Device,
        mapping: &'a Mapping,
        layout: &Layout,
        msg: abi::StoredMessage,
    ) -> Result<Self> {
        match layout.message_range(&msg) {
            Ok(range) => Ok(Self {
                device,
                mapping,
                msg,
                range,
                freed: false,
            }),
            Err(e) => {
                // Give the id back so that the module's accounting stays
                // right; its answer was wrong already, so ignore a failure.
                let _ = raw::free(device.as_fd(), &abi::IdArg { id: msg.id });
                Err(e)
            }
        }
    }

    /// The module's id of the message.
    pub fn id(&self) -> u64 {
        self.msg.id
    }

    /// Source, tag and context.
    pub fn envelope(&self) -> Envelope {
        envelope_of(&self.msg)
    }

    /// The sender's rank.
    pub fn source(&self) -> u32 {
        self.msg.source
    }

    /// The message tag.
    pub fn tag(&self) -> u32 {
        self.msg.tag
    }

    /// The communicator's context id.
    pub fn context(&self) -> u32 {
        self.msg.context
    }

    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The payload, read in place from the shared mapping.
    pub fn data(&self) -> &[u8] {
        // SAFETY: `range` was checked to lie in the dump area of `mapping`,
        // which outlives `'a` and so this borrow of `self`. Nobody writes these
        // bytes while the borrow lives: the module filled them before handing
        // the message out and, per the ABI, does not touch a stored message's
        // bytes until it is freed; only this guard frees it, by value (`free`)
        // or in `drop`, neither of which can run while `&self` is borrowed.
        // This process never writes the dump area (this crate has no write
        // access to it outside tests, and the mapping is not exposed).
        unsafe { self.mapping.bytes(self.range.start, self.range.len()) }
    }

    /// Copies the payload's first `min(len, dst.len())` bytes into `dst` and
    /// returns that count. A count below [`UnexpectedMessage::len`] means the
    /// message did not fit (`MPI_ERR_TRUNCATE`).
    pub fn copy_to(&self, dst: &mut [u8]) -> usize {
        let src = self.data();
        let n = src.len().min(dst.len());
        dst[..n].copy_from_slice(&src[..n]);
        n
    }

    /// Gives the message's dump space back to the module.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] with the module's errno; the message counts as freed
    /// either way (it is not retried on drop).
    pub fn free(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.freed, true) {
            return Ok(());
        }
        raw::free(self.device.as_fd(), &abi::IdArg { id: self.msg.id })
            .map_err(|e| Error::io("O2G_IOC_FREE", e))
    }
}

impl Drop for UnexpectedMessage<'_> {
    /// Frees the message. An error is ignored: nothing useful can be done
    /// with it here, and at worst the module keeps the dump space until the
    /// endpoint closes. Call [`UnexpectedMessage::free`] to see it.
    fn drop(&mut self) {
        let _ = self.release();
    }
}

impl fmt::Debug for UnexpectedMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnexpectedMessage")
            .field("id", &self.msg.id)
            .field("envelope", &self.envelope())
            .field("offset", &self.range.start)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_freed_at_most_once() {
        let layout = Layout::synthetic(1, abi::O2G_PAGE);
        let mapping = Mapping::heap(layout.map_bytes);
        let device = Device::dev_null();
        let stored = abi::StoredMessage {
            id: 3,
            offset: layout.dump_offset as u64,
            len: 1,
            ..Default::default()
        };
        let mut msg = UnexpectedMessage::take(&device, &mapping, &layout, stored).unwrap();
        // The first release reaches the ioctl (refused by /dev/null); later
        // ones, including the one in drop, do not.
        let first = msg.release().unwrap_err();
        assert_eq!(first.raw_os_error(), Some(libc::ENOTTY));
        assert!(msg.release().is_ok());
    }
}
