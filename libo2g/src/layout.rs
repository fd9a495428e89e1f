//! The shared mapping's layout, as `O2G_IOC_INIT` answered it, checked.

use std::ops::Range;

use crate::{abi, EndpointConfig, Error, Result};

/// Size of one completion record in the ring.
pub(crate) const RECORD_BYTES: u64 = std::mem::size_of::<abi::Completion>() as u64;

/// Where things live in an endpoint's shared mapping (see [`abi::InitArgs`]).
///
/// Every value was checked when the endpoint was set up: offsets are
/// page-aligned, the control page, the ring and the dump area lie in this
/// order without overlapping, and all of them fit in `map_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Completion records in the ring, a power of two.
    pub ring_entries: u32,
    /// Offset of the first completion record.
    pub ring_offset: usize,
    /// Offset of the dump area.
    pub dump_offset: usize,
    /// Size of the dump area.
    pub dump_bytes: usize,
    /// Length of the mapping.
    pub map_bytes: usize,
    /// Eager messages the dump area holds at most, with eager credit (0
    /// without).
    pub eager_slots: u32,
}

impl Layout {
    /// Checks the module's answer to `O2G_IOC_INIT` for the capacities in
    /// `cfg`. A layout that breaks the ABI is an error, never a panic.
    pub(crate) fn from_init(cfg: &EndpointConfig, args: &abi::InitArgs) -> Result<Self> {
        let bad = |detail: String| Error::bad_answer("O2G_IOC_INIT", detail);
        let page = abi::O2G_PAGE;
        let entries = args.ring_entries;
        if !entries.is_power_of_two() {
            return Err(bad(format!("ring_entries {entries} is not a power of two")));
        }
        let announced = if cfg.notices { cfg.max_unexpected } else { 0 };
        if u64::from(entries) < u64::from(cfg.max_posted) + u64::from(announced) {
            return Err(bad(format!(
                "ring_entries {entries} is below max_posted {} plus {announced} announcements",
                cfg.max_posted
            )));
        }
        if args.ring_offset % page != 0 || args.ring_offset < page {
            return Err(bad(format!(
                "ring_offset {:#x} is not a page boundary after the control page",
                args.ring_offset
            )));
        }
        let ring_end = args
            .ring_offset
            .checked_add(u64::from(entries) * RECORD_BYTES)
            .ok_or_else(|| bad("the ring ends beyond 2^64".into()))?;
        if args.dump_offset % page != 0 || args.dump_offset < ring_end {
            return Err(bad(format!(
                "dump_offset {:#x} is not a page boundary after the ring (which ends at {ring_end:#x})",
                args.dump_offset
            )));
        }
        let dump_end = args
            .dump_offset
            .checked_add(cfg.dump_bytes)
            .ok_or_else(|| bad("the dump area ends beyond 2^64".into()))?;
        if args.map_bytes < dump_end {
            return Err(bad(format!(
                "map_bytes {:#x} does not hold the dump area, which ends at {dump_end:#x}",
                args.map_bytes
            )));
        }
        // Slices over the mapping need every offset to fit in an isize.
        let fits = |v: u64| {
            usize::try_from(v)
                .ok()
                .filter(|&v| isize::try_from(v).is_ok())
        };
        let (Some(ring_offset), Some(dump_offset), Some(dump_bytes), Some(map_bytes)) = (
            fits(args.ring_offset),
            fits(args.dump_offset),
            fits(cfg.dump_bytes),
            fits(args.map_bytes),
        ) else {
            return Err(bad(format!(
                "map_bytes {:#x} is too large for this address space",
                args.map_bytes
            )));
        };
        let records_wanted = cfg.credit.map_or(0, |c| c.records());
        if u64::from(args.eager_slots) != records_wanted {
            return Err(bad(format!(
                "eager_slots {} where the dump area holds {records_wanted} eager messages",
                args.eager_slots
            )));
        }
        Ok(Self {
            eager_slots: args.eager_slots,
            ring_entries: entries,
            ring_offset,
            dump_offset,
            dump_bytes,
            map_bytes,
        })
    }

    /// Offset of the record with free-running index `index`.
    pub(crate) fn record_offset(&self, index: u32) -> usize {
        // `ring_entries` is a power of two, so masking is `index % entries`,
        // and it stays consistent when the u32 index wraps. The product is
        // below `ring_entries * 32`, which was checked to fit in the mapping.
        let slot = (index & (self.ring_entries - 1)) as usize;
        self.ring_offset + slot * RECORD_BYTES as usize
    }

    /// The bytes of a stored message, checked to lie inside the dump area.
    pub(crate) fn message_range(&self, msg: &abi::StoredMessage) -> Result<Range<usize>> {
        let outside = || {
            Error::bad_answer(
                "stored message",
                format!(
                    "message {:#x} at offset {:#x}, {} bytes, lies outside the dump area {:#x}..{:#x}",
                    msg.id,
                    msg.offset,
                    msg.len,
                    self.dump_offset,
                    self.dump_offset + self.dump_bytes
                ),
            )
        };
        let start = usize::try_from(msg.offset).map_err(|_| outside())?;
        let len = usize::try_from(msg.len).map_err(|_| outside())?;
        let end = start.checked_add(len).ok_or_else(outside)?;
        if start < self.dump_offset || end > self.dump_offset + self.dump_bytes {
            return Err(outside());
        }
        Ok(start..end)
    }

    /// A layout as a well-behaved module would answer, for host tests.
    #[cfg(test)]
    pub(crate) fn synthetic(ring_entries: u32, dump_bytes: u64) -> Self {
        let cfg = EndpointConfig {
            max_posted: 1,
            dump_bytes,
            ..Default::default()
        };
        Self::from_init(&cfg, &synthetic_answer(&cfg, ring_entries)).unwrap()
    }
}

/// The `O2G_IOC_INIT` answer of a well-behaved module: control page, ring,
/// dump area, each starting on a page.
#[cfg(test)]
pub(crate) fn synthetic_answer(cfg: &EndpointConfig, ring_entries: u32) -> abi::InitArgs {
    let page = abi::O2G_PAGE;
    let ring_bytes = u64::from(ring_entries) * RECORD_BYTES;
    let dump_offset = page + ring_bytes.div_ceil(page) * page;
    abi::InitArgs {
        ring_entries,
        ring_offset: page,
        dump_offset,
        map_bytes: dump_offset + cfg.dump_bytes,
        ..cfg.to_init_args()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EndpointConfig {
        EndpointConfig {
            max_posted: 100,
            dump_bytes: 4 * abi::O2G_PAGE,
            ..Default::default()
        }
    }

    fn detail(cfg: &EndpointConfig, args: &abi::InitArgs) -> String {
        match Layout::from_init(cfg, args) {
            Err(Error::BadAnswer { op, detail }) => {
                assert_eq!(op, "O2G_IOC_INIT");
                detail
            }
            other => panic!("expected BadAnswer, got {other:?}"),
        }
    }

    #[test]
    fn a_well_formed_answer_is_accepted() {
        let cfg = cfg();
        let args = synthetic_answer(&cfg, 128);
        let l = Layout::from_init(&cfg, &args).unwrap();
        assert_eq!(l.ring_entries, 128);
        assert_eq!(l.ring_offset, 4096);
        // 128 records of 64 bytes: two pages.
        assert_eq!(l.dump_offset, 3 * 4096);
        assert_eq!(l.dump_bytes, 4 * 4096);
        assert_eq!(l.map_bytes, 3 * 4096 + 4 * 4096);
    }

    #[test]
    fn with_notices_the_ring_also_holds_every_stored_message() {
        let cfg = EndpointConfig {
            max_unexpected: 100,
            notices: true,
            ..cfg()
        };
        assert!(detail(&cfg, &synthetic_answer(&cfg, 128)).contains("announcements"));
        Layout::from_init(&cfg, &synthetic_answer(&cfg, 256)).unwrap();
    }

    #[test]
    fn ring_entries_must_be_a_power_of_two_at_least_max_posted() {
        let cfg = cfg();
        for entries in [0, 96, 129] {
            let mut args = synthetic_answer(&cfg, 128);
            args.ring_entries = entries;
            let d = detail(&cfg, &args);
            assert!(d.contains("power of two"), "{entries}: {d}");
        }
        let args = synthetic_answer(&cfg, 64);
        assert!(detail(&cfg, &args).contains("below max_posted"));
    }

    #[test]
    fn offsets_must_be_page_aligned_and_ordered() {
        let cfg = cfg();
        let good = synthetic_answer(&cfg, 128);
        let cases = [
            abi::InitArgs {
                ring_offset: 0,
                ..good
            },
            abi::InitArgs {
                ring_offset: 4096 + 64,
                ..good
            },
            abi::InitArgs {
                dump_offset: good.dump_offset + 8,
                ..good
            },
            // The dump area may not overlap the ring.
            abi::InitArgs {
                ring_offset: 2 * 4096,
                ..good
            },
            abi::InitArgs {
                dump_offset: 0,
                ..good
            },
        ];
        for args in cases {
            let d = detail(&cfg, &args);
            assert!(d.contains("page boundary"), "{args:?}: {d}");
        }
    }

    #[test]
    fn the_dump_area_must_fit_in_the_mapping() {
        let cfg = cfg();
        let good = synthetic_answer(&cfg, 128);
        let args = abi::InitArgs {
            map_bytes: good.map_bytes - 1,
            ..good
        };
        assert!(detail(&cfg, &args).contains("does not hold the dump area"));
        // A larger mapping is fine.
        let args = abi::InitArgs {
            map_bytes: good.map_bytes + 4096,
            ..good
        };
        assert!(Layout::from_init(&cfg, &args).is_ok());
    }

    #[test]
    fn arithmetic_overflow_is_an_error_not_a_panic() {
        let cfg = cfg();
        let good = synthetic_answer(&cfg, 128);
        let args = abi::InitArgs {
            ring_offset: u64::MAX - 4095,
            ..good
        };
        assert!(detail(&cfg, &args).contains("2^64"));
        let args = abi::InitArgs {
            dump_offset: u64::MAX - 4095,
            map_bytes: u64::MAX,
            ..good
        };
        assert!(detail(&cfg, &args).contains("2^64"));
        let args = abi::InitArgs {
            dump_offset: 1 << 63,
            map_bytes: u64::MAX,
            ..good
        };
        assert!(detail(&cfg, &args).contains("too large"));
    }

    #[test]
    fn record_offsets_wrap_with_the_index() {
        let l = Layout::synthetic(8, 4096);
        assert_eq!(l.record_offset(0), 4096);
        assert_eq!(l.record_offset(7), 4096 + 7 * 64);
        assert_eq!(l.record_offset(8), 4096);
        assert_eq!(l.record_offset(u32::MAX), 4096 + 7 * 64);
    }

    #[test]
    fn stored_messages_must_lie_in_the_dump_area() {
        let l = Layout::synthetic(8, 2 * 4096);
        let msg = |offset: u64, len: u64| abi::StoredMessage {
            offset,
            len,
            ..Default::default()
        };
        let d = l.dump_offset as u64;
        assert_eq!(
            l.message_range(&msg(d, 10)).unwrap(),
            l.dump_offset..l.dump_offset + 10
        );
        assert_eq!(
            l.message_range(&msg(d + 100, 8192 - 100)).unwrap().end,
            l.map_bytes
        );
        assert_eq!(l.message_range(&msg(d + 8192, 0)).unwrap().len(), 0);
        for (offset, len) in [
            (d - 1, 10),
            (0, 10),
            (d + 1, 8192),
            (d + 8192, 1),
            (d, u64::MAX),
            (u64::MAX, 1),
        ] {
            let err = l.message_range(&msg(offset, len)).unwrap_err();
            assert!(
                matches!(err, Error::BadAnswer { .. }),
                "{offset} {len}: {err}"
            );
        }
    }
}
