//! The per-node handle: which region, which node, which layout, and the
//! host's own accesses to its NIC memory (LLCM, the host-facing SO-DIMM
//! bank, header seeds, ACK words).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use o2g_nicmem::Region;

use crate::costs::Costs;
use crate::error::{Error, Result};
use crate::layout::{Config, Layout, ACK_WORDS, LLCM_SIZE};
use crate::wait::WaitPolicy;

/// A seed word is valid when this bit is set; the low 32 bits name the
/// destination it was set up for.
const SEED_VALID: u64 = 1 << 63;

/// The handle a host uses to drive its (emulated) DIMMnet-1 card.
///
/// A `Nic` is cheap: an `Arc` of the shared region, the node id and the
/// layout read at attach time. Several handles may drive the same node
/// (threads of one process, or several processes); the shared words they
/// race on (send windows, bank-select, ACK words) are claimed atomically.
#[derive(Debug)]
pub struct Nic {
    pub(crate) region: Arc<Region>,
    pub(crate) node: u32,
    pub(crate) layout: Layout,
    pub(crate) wait: WaitPolicy,
    /// The BOTF window the next packet uses (they alternate).
    pub(crate) next_window: AtomicUsize,
    /// What the timing model charges for this handle's operations (see
    /// the `vclock` module); `None` charges nothing.
    pub(crate) costs: Option<Costs>,
}

/// A completed RDMA operation: the ACK word `slot` of the issuing node
/// reached `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The ACK word.
    pub slot: usize,
    /// The value it reached when this operation completed.
    pub seq: u64,
    /// The physical SO-DIMM bank the written side used, if it was an
    /// SO-DIMM (the network-facing bank at the time of the transfer).
    pub dst_bank: Option<u32>,
}

impl Clone for Nic {
    fn clone(&self) -> Self {
        Self {
            region: Arc::clone(&self.region),
            node: self.node,
            layout: self.layout,
            wait: self.wait,
            next_window: AtomicUsize::new(self.next_window.load(Ordering::Relaxed)),
            costs: self.costs,
        }
    }
}

impl Nic {
    /// Creates `/dev/shm/<name>` sized and formatted for `config`, ready
    /// for every node to [`Nic::attach`] (by this process, or by others
    /// through [`Region::open_shm`]). The caller unlinks the name when all
    /// nodes have attached. Use a fresh name per job: an existing file of
    /// the same size is reformatted but not cleared, and stale flag words
    /// of an earlier job would confuse the protocols.
    ///
    /// # Errors
    ///
    /// The file exists with another size, or the configuration is bad.
    pub fn create_shm(name: &str, config: Config) -> Result<Arc<Region>> {
        let layout = Layout::new(config)?;
        let region = Region::create_shm(name, layout.region_len())?;
        layout.format(&region)?;
        Ok(Arc::new(region))
    }

    /// Writes the header of `config` into a fresh, zeroed region (the
    /// creator does this once before any node attaches) and returns the
    /// layout.
    ///
    /// # Errors
    ///
    /// The configuration is out of range or the region too small.
    pub fn format(region: &Region, config: Config) -> Result<Layout> {
        let layout = Layout::new(config)?;
        layout.format(region)?;
        Ok(layout)
    }

    /// Attaches to a formatted region as `node`, with the default
    /// [`WaitPolicy`] and DIMMnet-1's [`Costs`].
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] if the header is missing or does not match
    /// this build; [`Error::BadArgument`] if `node` does not exist.
    pub fn attach(region: Arc<Region>, node: u32) -> Result<Self> {
        let layout = Layout::read(&region)?;
        if node >= layout.nodes() {
            return Err(Error::BadArgument(format!(
                "node {node} of a {}-node region",
                layout.nodes()
            )));
        }
        Ok(Self {
            region,
            node,
            layout,
            wait: WaitPolicy::default(),
            next_window: AtomicUsize::new(0),
            costs: Some(Costs::DIMMNET1),
        })
    }

    /// The same handle with another wait policy.
    pub fn with_wait(mut self, wait: WaitPolicy) -> Self {
        self.wait = wait;
        self
    }

    /// This node's id.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// Number of nodes of the region.
    pub fn nodes(&self) -> u32 {
        self.layout.nodes()
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The wait policy.
    pub fn wait_policy(&self) -> &WaitPolicy {
        &self.wait
    }

    /// The shared region.
    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// Fails unless `node` exists.
    pub(crate) fn check_node(&self, node: u32) -> Result<()> {
        if node < self.layout.nodes() {
            Ok(())
        } else {
            Err(Error::BadArgument(format!(
                "node {node} of a {}-node region",
                self.layout.nodes()
            )))
        }
    }

    /// Region offset of `[off, off + len)` in `node`'s LLCM, refusing
    /// ranges that leave the LLCM (the region would accept them: they
    /// would land in the next area).
    pub(crate) fn llcm_range(&self, node: u32, off: usize, len: usize) -> Result<usize> {
        self.check_node(node)?;
        match off.checked_add(len) {
            Some(end) if end <= LLCM_SIZE => Ok(self.layout.llcm(node, off)),
            _ => Err(Error::BadArgument(format!(
                "{len} bytes at LLCM offset {off:#x} leave the {LLCM_SIZE}-byte LLCM"
            ))),
        }
    }

    /// Region offset of `[off, off + len)` in physical bank `bank` of
    /// `node`, refusing ranges that leave the bank.
    pub(crate) fn bank_range(&self, node: u32, bank: u32, off: usize, len: usize) -> Result<usize> {
        self.check_node(node)?;
        let size = self.layout.config().bank_size;
        match off.checked_add(len) {
            Some(end) if end <= size && bank < 2 => Ok(self.layout.bank(node, bank, off)),
            _ => Err(Error::BadArgument(format!(
                "{len} bytes at SO-DIMM offset {off:#x} leave the {size}-byte bank"
            ))),
        }
    }

    /// Reads this node's LLCM.
    ///
    /// # Errors
    ///
    /// The range leaves the LLCM.
    pub fn llcm_read(&self, off: usize, out: &mut [u8]) -> Result<()> {
        let at = self.llcm_range(self.node, off, out.len())?;
        self.region.read(at, out)?;
        // The model: uncached loads, after the bytes arrived.
        self.observed(off, out.len())?;
        Ok(())
    }

    /// Writes this node's LLCM (a local store, not a network operation).
    ///
    /// # Errors
    ///
    /// The range leaves the LLCM.
    pub fn llcm_write(&self, off: usize, data: &[u8]) -> Result<()> {
        let at = self.llcm_range(self.node, off, data.len())?;
        self.host(|c| c.wc_write(data.len()))?;
        Ok(self.region.write(at, data)?)
    }

    /// The 32-bit word at `off` of this node's LLCM.
    ///
    /// # Errors
    ///
    /// Out of the LLCM or not 4-aligned.
    pub fn llcm_u32(&self, off: usize) -> Result<&AtomicU32> {
        let at = self.llcm_range(self.node, off, 4)?;
        Ok(self.region.u32_at(at)?)
    }

    /// The 64-bit word at `off` of this node's LLCM.
    ///
    /// # Errors
    ///
    /// Out of the LLCM or not 8-aligned.
    pub fn llcm_u64(&self, off: usize) -> Result<&AtomicU64> {
        let at = self.llcm_range(self.node, off, 8)?;
        Ok(self.region.u64_at(at)?)
    }

    /// Reads the host-facing SO-DIMM bank at `off`.
    ///
    /// # Errors
    ///
    /// The range leaves the bank.
    pub fn dimm_read(&self, off: usize, out: &mut [u8]) -> Result<()> {
        let bank = self.host_bank()?;
        let at = self.bank_range(self.node, bank, off, out.len())?;
        self.host(|c| c.dimm_read(out.len()))?;
        Ok(self.region.read(at, out)?)
    }

    /// Writes the host-facing SO-DIMM bank at `off`.
    ///
    /// # Errors
    ///
    /// The range leaves the bank.
    pub fn dimm_write(&self, off: usize, data: &[u8]) -> Result<()> {
        let bank = self.host_bank()?;
        let at = self.bank_range(self.node, bank, off, data.len())?;
        self.host(|c| c.wc_write(data.len()))?;
        Ok(self.region.write(at, data)?)
    }

    /// Sets up the header seed (the HTLB entry) for AOTF and BOTF to
    /// `dest`. Done once per destination; idempotent.
    ///
    /// # Errors
    ///
    /// `dest` does not exist.
    pub fn seed_header(&self, dest: u32) -> Result<()> {
        self.check_node(dest)?;
        let w = self.region.u64_at(self.layout.seed_word(self.node, dest))?;
        w.store(SEED_VALID | u64::from(dest), Ordering::Release);
        Ok(())
    }

    /// Seeds every node of the region (including this one).
    ///
    /// # Errors
    ///
    /// As [`Nic::seed_header`].
    pub fn seed_all(&self) -> Result<()> {
        (0..self.nodes()).try_for_each(|d| self.seed_header(d))
    }

    /// The HTLB lookup every AOTF and BOTF makes: the seed for `dest` must
    /// exist and name `dest`.
    pub(crate) fn seeded(&self, dest: u32) -> Result<()> {
        self.check_node(dest)?;
        let w = self
            .region
            .u64_at(self.layout.seed_word(self.node, dest))?
            .load(Ordering::Acquire);
        if w == SEED_VALID | u64::from(dest) {
            Ok(())
        } else if w & SEED_VALID == 0 {
            Err(Error::NotSeeded(dest))
        } else {
            Err(Error::Corrupt {
                node: self.node,
                field: "header seed",
                value: w,
            })
        }
    }

    /// The ACK word `slot` of this node.
    pub(crate) fn ack_word(&self, slot: usize) -> Result<&AtomicU64> {
        if slot >= ACK_WORDS {
            return Err(Error::BadArgument(format!(
                "ACK word {slot} (0..{ACK_WORDS})"
            )));
        }
        Ok(self.region.u64_at(self.layout.ack_word(self.node, slot))?)
    }

    /// Current value of the ACK word `slot`.
    ///
    /// # Errors
    ///
    /// `slot` is out of range.
    pub fn ack_value(&self, slot: usize) -> Result<u64> {
        Ok(self.ack_word(slot)?.load(Ordering::Acquire))
    }

    /// Waits until the ACK word of `ack` has reached its sequence number.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] at the wait policy's deadline.
    pub fn wait_ack(&self, ack: Ack) -> Result<()> {
        let w = self.ack_word(ack.slot)?;
        self.wait.wait(
            || {
                format!(
                    "ACK word {} of node {} to reach {}",
                    ack.slot, self.node, ack.seq
                )
            },
            || Ok((w.load(Ordering::Acquire) >= ack.seq).then_some(())),
        )?;
        self.observed_ack(ack.slot)?;
        Ok(())
    }
}
