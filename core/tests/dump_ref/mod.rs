//! A reference model of the dump area's allocator and a driver that runs
//! the real one beside it, shared by `tests/dump_model.rs` and the
//! `dump` fuzz target (`fuzz/fuzz_targets/dump.rs`, through `#[path]`).
//!
//! The model keeps one owner per byte of the area, so "two regions hold
//! the same byte" is a lookup, not arithmetic that could share the real
//! allocator's mistakes. Its policy, from the module's documentation:
//! regions are handed out in arrival order from a circular range; a new
//! region starts at the first aligned offset after the newest region that
//! holds bytes, or at offset 0 if the area's tail is too short (the skipped
//! tail and any alignment padding belong to the new region); when no byte
//! is held at all, it starts at offset 0; a zero-length region holds no
//! byte and sits at offset 0. A region's bytes come back once it and every
//! region allocated before it are freed.
#![allow(dead_code)]

use std::collections::VecDeque;

use o2g_core::proto::dump::{DumpAlloc, Record, RegionId};

/// One operation on the allocator.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// Allocate this many bytes.
    Alloc(u64),
    /// Free the n-th live region (modulo their number), by its id.
    Free(usize),
    /// Free the oldest live region, which reclaims space at once.
    FreeOldest,
    /// Free whatever this raw id names: garbage must be refused.
    FreeRaw(u32),
}

#[derive(Clone, Debug)]
struct Region {
    serial: u64,
    offset: u64,
    len: u64,
    /// Bytes it holds: its payload, alignment padding before it, and the
    /// tail of the area it skipped.
    held: Vec<u64>,
    live: bool,
}

/// The allocator written from its policy over a byte-owner map.
#[derive(Debug)]
pub(crate) struct Model {
    size: u64,
    align: u64,
    records: usize,
    /// Regions live or awaiting reclaim, in allocation order.
    window: VecDeque<Region>,
    /// Which region's serial holds each byte.
    owner: Vec<Option<u64>>,
    next_serial: u64,
}

impl Model {
    pub(crate) fn new(records: usize, size: u64, align: u64) -> Self {
        Self {
            size,
            align: if align.is_power_of_two() { align } else { 1 },
            records,
            window: VecDeque::new(),
            owner: vec![None; size as usize],
            next_serial: 0,
        }
    }

    fn is_free(&self, bytes: &[u64]) -> bool {
        bytes
            .iter()
            .all(|&b| b < self.size && self.owner[b as usize].is_none())
    }

    /// Where a region of `len` bytes goes, and the bytes it would hold.
    fn place(&self, len: u64) -> Option<(u64, Vec<u64>)> {
        if self.window.len() >= self.records || len > self.size {
            return None;
        }
        if len == 0 {
            return Some((0, Vec::new()));
        }
        let Some(newest) = self.window.iter().rev().find(|r| !r.held.is_empty()) else {
            return Some((0, (0..len).collect()));
        };
        let tail = (newest.offset + newest.len) % self.size;
        let start = tail.div_ceil(self.align) * self.align;
        let here: Vec<u64> = (tail..start + len).collect();
        if start + len <= self.size && self.is_free(&here) {
            return Some((start, here));
        }
        let wrapped: Vec<u64> = (tail..self.size).chain(0..len).collect();
        if self.is_free(&wrapped) {
            return Some((0, wrapped));
        }
        None
    }

    /// Allocates; returns the new region's serial and offset.
    pub(crate) fn alloc(&mut self, len: u64) -> Option<(u64, u64)> {
        let (offset, held) = self.place(len)?;
        let serial = self.next_serial;
        self.next_serial += 1;
        for &b in &held {
            assert_eq!(self.owner[b as usize], None, "model: byte {b} taken twice");
            self.owner[b as usize] = Some(serial);
        }
        self.window.push_back(Region {
            serial,
            offset,
            len,
            held,
            live: true,
        });
        Some((serial, offset))
    }

    /// Frees a live region; false if `serial` names none.
    pub(crate) fn free(&mut self, serial: u64) -> bool {
        let Some(r) = self
            .window
            .iter_mut()
            .find(|r| r.serial == serial && r.live)
        else {
            return false;
        };
        r.live = false;
        while self.window.front().is_some_and(|r| !r.live) {
            let r = self.window.pop_front().unwrap();
            for &b in &r.held {
                assert_eq!(self.owner[b as usize], Some(r.serial));
                self.owner[b as usize] = None;
            }
        }
        true
    }

    /// Bytes held by regions live or awaiting reclaim.
    pub(crate) fn used(&self) -> u64 {
        self.owner.iter().filter(|o| o.is_some()).count() as u64
    }

    pub(crate) fn records_used(&self) -> usize {
        self.window.len()
    }

    /// Whether no byte is held (zero-length regions may be live).
    pub(crate) fn holds_nothing(&self) -> bool {
        self.owner.iter().all(Option::is_none)
    }
}

/// A live region as the driver sees it from the real allocator.
#[derive(Clone, Copy, Debug)]
struct Live {
    id: RegionId,
    offset: u64,
    len: u64,
    /// The model's serial for the same region (with a model only).
    serial: u64,
}

/// Runs `ops` on a real allocator and checks its invariants after every
/// step: live payloads pairwise disjoint, inside the area and aligned,
/// offsets stable, `used() <= size`, ids refused once freed. With
/// `compare`, it also runs the [`Model`] and requires the same offsets,
/// the same refusals and `used()` equal to the bytes the model holds.
pub(crate) fn check(records: usize, size: u64, align: u64, ops: &[Op], compare: bool) {
    let mut d = DumpAlloc::new(vec![Record::EMPTY; records], size, align);
    let align = if align.is_power_of_two() { align } else { 1 };
    let mut model = compare.then(|| Model::new(records, size, align));
    let mut live: Vec<Live> = Vec::new();
    let mut freed: Vec<RegionId> = Vec::new();
    for (step, &op) in ops.iter().enumerate() {
        match op {
            Op::Alloc(len) => {
                // No byte held (zero-length regions hold none) and a record
                // free: there is room, whatever the policy.
                let room = d.used() == 0 && d.records_used() < records && len <= size;
                let got = d.alloc(len);
                if room {
                    assert!(got.is_some(), "step {step}: empty area refused {len} bytes");
                }
                if let Some(id) = got {
                    let offset = d.offset(id).expect("a new region is live");
                    assert!(
                        offset & (align - 1) == 0 && end(offset, len) <= u128::from(size),
                        "step {step}: [{offset}, +{len}) misplaced in {size} bytes (align {align})"
                    );
                    for l in &live {
                        assert!(
                            len == 0
                                || l.len == 0
                                || end(offset, len) <= u128::from(l.offset)
                                || end(l.offset, l.len) <= u128::from(offset),
                            "step {step}: [{offset}, +{len}) overlaps live [{}, +{})",
                            l.offset,
                            l.len
                        );
                    }
                    freed.retain(|f| *f != id);
                    live.push(Live {
                        id,
                        offset,
                        len,
                        serial: 0,
                    });
                }
                if let Some(m) = model.as_mut() {
                    let want = m.alloc(len);
                    assert_eq!(
                        got.map(|id| d.offset(id).unwrap()),
                        want.map(|w| w.1),
                        "step {step}: alloc({len}) differs from the model"
                    );
                    if let (Some(l), Some((serial, _))) = (live.last_mut(), want) {
                        l.serial = serial;
                    }
                }
            }
            Op::Free(_) | Op::FreeOldest if live.is_empty() => {}
            Op::Free(n) => {
                let i = n % live.len();
                free(&mut d, model.as_mut(), &mut live, &mut freed, i);
            }
            Op::FreeOldest => free(&mut d, model.as_mut(), &mut live, &mut freed, 0),
            Op::FreeRaw(raw) => match live.iter().position(|l| l.id.to_raw() == raw) {
                Some(i) => free(&mut d, model.as_mut(), &mut live, &mut freed, i),
                None => assert!(
                    !d.free(RegionId::from_raw(raw)),
                    "step {step}: raw id {raw} names no live region"
                ),
            },
        }
        for l in &live {
            assert_eq!(
                d.offset(l.id),
                Some(l.offset),
                "step {step}: a live region moved"
            );
        }
        for f in &freed {
            assert_eq!(
                d.offset(*f),
                None,
                "step {step}: a freed id still names a region"
            );
        }
        let payload: u128 = live.iter().map(|l| u128::from(l.len)).sum();
        assert!(
            payload <= u128::from(d.used()) && d.used() <= size,
            "step {step}: used {} with {payload} live payload bytes in {size}",
            d.used()
        );
        if let Some(m) = &model {
            assert_eq!(
                d.used(),
                m.used(),
                "step {step}: used() is not the bytes held"
            );
            assert_eq!(d.records_used(), m.records_used(), "step {step}");
        }
    }
    for l in live.drain(..) {
        assert!(d.free(l.id));
    }
    assert_eq!((d.used(), d.records_used()), (0, 0), "all freed");
}

/// One past a region's last byte, without overflow for huge areas.
fn end(offset: u64, len: u64) -> u128 {
    u128::from(offset) + u128::from(len)
}

fn free(
    d: &mut DumpAlloc<Vec<Record>>,
    model: Option<&mut Model>,
    live: &mut Vec<Live>,
    freed: &mut Vec<RegionId>,
    i: usize,
) {
    let l = live.remove(i);
    assert!(d.free(l.id), "freeing a live region");
    assert!(!d.free(l.id), "a double free is refused");
    if let Some(m) = model {
        assert!(m.free(l.serial));
    }
    freed.push(l.id);
}
