//! Where the ranks of a job over an emulated NIC (`dimmnet`, `hyphenlink`)
//! meet: one region of NIC memory that every rank maps, laid out by rank 0
//! and joined by the others through PMI.
//!
//! - [`Place::Shm`]: rank 0 creates `/dev/shm/<prefix>-<pid>-<nanos>`, lays
//!   the NIC out in it and publishes the name through PMI; after a PMI
//!   barrier the others open it. After a second barrier, once every rank
//!   has attached ([`Joined::everyone_attached`]), rank 0 unlinks the name;
//!   it unlinks it as well when joining fails before that.
//! - [`Place::Ivshmem`]: every rank maps BAR 2 of the guest's first
//!   ivshmem-plain device ([`Region::open_ivshmem`]); rank 0 lays the NIC
//!   out in it, then the PMI barrier, then the others attach.
//! - [`Place::File`]: the same with a pre-sized file every rank maps (how
//!   the host tests the ivshmem path).
//!
//! With the region, rank 0 may hand the others a job id
//! ([`Meeting::job_id`]): DIMMnet's process group id, which its words
//! carry so that what an earlier job left in the same region is not taken
//! for this one's. What rank 0 publishes under [`Meeting::key`] is
//! `<where>:<id>` (`<where>` the `/dev/shm` name, `ivshmem` or the path),
//! or the `/dev/shm` name alone when there is no id; in a shared mapping
//! without an id there is nothing to tell, and nothing is published.

use std::path::Path;

use o2g_nicmem::Region;

use crate::error::{Error, Result};
use crate::pmi::Pmi;

/// Where the region lives.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place<'a> {
    /// A fresh `/dev/shm` file of rank 0's.
    Shm,
    /// The BAR of the guest's first ivshmem-plain device.
    Ivshmem,
    /// A pre-sized file every rank maps, used like the BAR.
    File(&'a Path),
}

/// How the ranks of one transport meet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meeting<'a> {
    /// Where the region lives.
    pub(crate) place: Place<'a>,
    /// The PMI key of what rank 0 publishes.
    pub(crate) key: &'a str,
    /// The first part of a `/dev/shm` name.
    pub(crate) shm_prefix: &'a str,
    /// Whether rank 0 hands the others a fresh job id with the region.
    pub(crate) job_id: bool,
}

/// What rank 0 makes the NIC in.
pub(crate) enum Making<'a> {
    /// A `/dev/shm` file of this fresh name, to create at the size the
    /// NIC needs.
    Shm(&'a str),
    /// The shared mapping every rank opened, whatever an earlier job left
    /// in it.
    Mapped(Region),
}

/// This rank's part in the meeting, once the region is joined.
#[derive(Debug)]
pub(crate) struct Joined {
    job_id: Option<u16>,
    /// Rank 0 over `/dev/shm`: the name it unlinks when done.
    unlink: Option<String>,
}

impl Joined {
    /// The job id rank 0 handed out, if the meeting has one.
    pub(crate) fn job_id(&self) -> Option<u16> {
        self.job_id
    }

    /// The last step of joining, once this rank is attached (and ready
    /// for its peers): a PMI barrier, past which every rank is, so rank 0
    /// unlinks the `/dev/shm` name nobody needs any more (also when the
    /// barrier failed).
    pub(crate) fn everyone_attached(self, pmi: &mut Pmi) -> Result<()> {
        let joined = pmi.barrier();
        drop(self);
        joined
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        if let Some(name) = self.unlink.take() {
            let _ = Region::unlink_shm(&name);
        }
    }
}

/// Joins the job's region (see the module documentation): rank 0 makes
/// the NIC with `make`, the others `attach` to it once rank 0 is done.
/// `map_err` turns a mapping's failure into the transport's error, given
/// what was being done.
pub(crate) fn join<T>(
    pmi: &mut Pmi,
    meeting: &Meeting<'_>,
    map_err: impl Fn(&str, o2g_nicmem::Error) -> Error,
    make: impl FnOnce(Making<'_>) -> Result<T>,
    attach: impl FnOnce(Region) -> Result<T>,
) -> Result<(T, Joined)> {
    let mapped = match meeting.place {
        Place::Shm => None,
        Place::Ivshmem => Some(Region::open_ivshmem(0)),
        Place::File(path) => Some(Region::open_path(path)),
    }
    .transpose()
    .map_err(|e| map_err("mapping the shared region", e))?;
    if pmi.rank() == 0 {
        let mut joined = Joined {
            job_id: meeting.job_id.then(fresh_job_id),
            unlink: None,
        };
        let (nic, name) = match mapped {
            Some(region) => (make(Making::Mapped(region))?, None),
            None => {
                let name = fresh_shm_name(meeting.shm_prefix);
                // From here on, a failure unlinks it (dropping `joined`).
                joined.unlink = Some(name.clone());
                (make(Making::Shm(&name))?, Some(name))
            }
        };
        let published = match (name, joined.job_id) {
            (Some(name), None) => Some(name),
            (Some(name), Some(id)) => Some(format!("{name}:{id}")),
            (None, Some(id)) => Some(format!("{}:{id}", meeting.place)),
            (None, None) => None,
        };
        if let Some(value) = published {
            pmi.put(meeting.key, &value)?;
        }
        pmi.barrier()?;
        Ok((nic, joined))
    } else {
        pmi.barrier()?;
        let (region, job_id) = match mapped {
            Some(region) if meeting.job_id => (region, read_published(pmi, meeting)?.1),
            Some(region) => (region, None),
            None => {
                let (name, job_id) = read_published(pmi, meeting)?;
                let region =
                    Region::open_shm(&name).map_err(|e| map_err("mapping the region", e))?;
                (region, job_id)
            }
        };
        let nic = attach(region)?;
        let joined = Joined {
            job_id,
            unlink: None,
        };
        Ok((nic, joined))
    }
}

/// What rank 0 published: where the region is, and the job id if the
/// meeting has one.
fn read_published(pmi: &mut Pmi, meeting: &Meeting<'_>) -> Result<(String, Option<u16>)> {
    let value = pmi.get(meeting.key)?;
    if !meeting.job_id {
        return Ok((value, None));
    }
    let bad = || Error::Pmi(format!("bad {} value {value:?}", meeting.key));
    let (place, id) = value.rsplit_once(':').ok_or_else(bad)?;
    let id = id.parse().map_err(|_| bad())?;
    Ok((place.to_owned(), Some(id)))
}

impl std::fmt::Display for Place<'_> {
    /// How rank 0 names a shared mapping to the others.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Shm => f.write_str("shm"),
            Place::Ivshmem => f.write_str("ivshmem"),
            Place::File(path) => write!(f, "{}", path.display()),
        }
    }
}

fn since_epoch() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A `/dev/shm` name no other job uses: `<prefix>-<pid>-<nanos>`.
pub(crate) fn fresh_shm_name(prefix: &str) -> String {
    format!("{prefix}-{}-{}", std::process::id(), since_epoch())
}

/// A nonzero 16-bit id that another job on the same host (or region)
/// most likely does not have.
pub(crate) fn fresh_job_id() -> u16 {
    let mixed = (since_epoch() as u64) ^ u64::from(std::process::id()).rotate_left(17);
    ((mixed ^ (mixed >> 16) ^ (mixed >> 32) ^ (mixed >> 48)) as u16).max(1)
}
