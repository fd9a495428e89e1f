//! How many CPUs the ranks on this host have between them, for deciding
//! whether an idle rank may spin ([`super::spin::may_spin`]).
//!
//! A launcher that binds each rank to a CPU of its own (`mpiexec.hydra
//! -bind-to core`, Slurm's `--cpu-bind=cores`, `taskset` in a wrapper)
//! leaves every rank one CPU in its affinity mask, while the ranks still
//! have one CPU each. Counting the mask alone made every bound rank sleep
//! on every wait: an 8-byte ping-pong over `o2g` between two ranks bound
//! one per CPU took 1.85x the time of unbound ranks (`docs/results.md`,
//! "Bound ranks stopped spinning").

use std::fs;

use super::cgroup_cpus;

/// The CPUs this host gives its ranks: where this thread may run on
/// fewer CPUs than the job has, the job's (a launcher bound it, and
/// presumably its neighbours to the others); otherwise the CPUs it may
/// use, as `available_parallelism` counts them (its affinity and a
/// cgroup's CPU quota). The job has the host's online CPUs, or fewer
/// where its cgroups' cpuset or CPU quota allow fewer
/// ([`super::cgroup_cpus`]): a job's ranks bound one per CPU but two to a
/// CPU of a container's or a Slurm step's cpuset do not all get one.
///
/// A job bound wholly to fewer CPUs than it has ranks on the host
/// (`taskset -c 0 o2grun -n 2 ...`) is then counted as if spread out; its
/// spins find nothing while the partner waits for the CPU, and the
/// adaptive spin stops spinning after a few ([`super::spin::Spinner`]).
pub(crate) fn for_local_ranks() -> usize {
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let allowed = fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| allowed_in_status(&s));
    choose(available, allowed, job_cpus())
}

/// The CPUs the job may use on this host: its online CPUs, or as many as
/// this process's cgroups allow if fewer (`None`: unknown).
fn job_cpus() -> Option<usize> {
    let online = fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_list(s.trim()));
    let cgroups = cgroup_cpus::limit(&|p| fs::read_to_string(p).ok());
    match (online, cgroups) {
        (Some(online), Some(cgroups)) => Some(online.min(cgroups)),
        (online, cgroups) => online.or(cgroups),
    }
}

/// [`for_local_ranks`]'s rule, given what `available_parallelism` says,
/// the CPUs in this thread's affinity mask and the job's
/// ([`job_cpus`]; `None`: unknown).
fn choose(available: usize, allowed: Option<usize>, job: Option<usize>) -> usize {
    match (allowed, job) {
        (Some(allowed), Some(job)) if allowed < job => available.max(job),
        _ => available,
    }
}

/// The CPUs of `Cpus_allowed_list` in a `/proc/*/status` text.
fn allowed_in_status(status: &str) -> Option<usize> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|list| count_list(list.trim()))
}

/// How many CPUs a kernel CPU list names ("0-3,8,10-11": 7); `None` when
/// it is not one.
pub(super) fn count_list(list: &str) -> Option<usize> {
    list.split(',').try_fold(0usize, |n, part| {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let cpu = part.parse::<usize>().ok()?;
                (cpu, cpu)
            }
        };
        (first <= last).then(|| n + (last - first + 1))
    })
}

#[cfg(test)]
mod tests {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;

    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_list("0"), Some(1));
        assert_eq!(count_list("0-1"), Some(2));
        assert_eq!(count_list("0-3,8,10-11"), Some(7));
        for bad in ["", "0-", "3-1", "a", "0,,1", "1-2-3"] {
            assert_eq!(count_list(bad), None, "{bad:?}");
        }
        let status = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n";
        assert_eq!(allowed_in_status(status), Some(2));
        assert_eq!(allowed_in_status("Name:\tx\n"), None);
    }

    #[test]
    fn a_bound_rank_counts_the_jobs_cpus() {
        // Unbound: what available_parallelism says (a quota may lower it).
        assert_eq!(choose(2, Some(2), Some(2)), 2);
        assert_eq!(choose(1, Some(4), Some(4)), 1);
        // Bound to one CPU of four: the job's four.
        assert_eq!(choose(1, Some(1), Some(4)), 4);
        // Bound to two of a cpuset's two: nothing more to count.
        assert_eq!(choose(2, Some(2), Some(2)), 2);
        // Unknown counts: available_parallelism.
        assert_eq!(choose(1, None, Some(4)), 1);
        assert_eq!(choose(1, Some(1), None), 1);
    }

    #[test]
    fn binding_this_thread_to_one_cpu_keeps_the_jobs_count() {
        let job = job_cpus().expect("the job's CPUs");
        let unbound = for_local_ranks();
        // A thread of its own, so that the test's other threads keep
        // their masks.
        std::thread::spawn(move || {
            let mine = sched_getaffinity(Pid::from_raw(0)).expect("sched_getaffinity");
            let cpu = (0..CpuSet::count())
                .find(|&c| mine.is_set(c).unwrap_or(false))
                .expect("a CPU in this thread's mask");
            let mut one = CpuSet::new();
            one.set(cpu).expect("CpuSet::set");
            sched_setaffinity(Pid::from_raw(0), &one).expect("sched_setaffinity");
            let available = std::thread::available_parallelism().map_or(0, |n| n.get());
            assert_eq!(available, 1, "the thread is bound to one CPU");
            let bound = for_local_ranks();
            if job > 1 {
                assert_eq!(bound, job, "bound to 1 of {job} CPUs");
            } else {
                assert_eq!(bound, 1);
            }
            assert!(bound >= unbound, "bound {bound}, unbound {unbound}");
        })
        .join()
        .expect("the bound thread's checks");
    }
}
