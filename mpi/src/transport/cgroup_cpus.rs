//! How many CPUs this process's cgroups let it use: the CPUs of its
//! cpuset and the CPU time of its quota, in cgroup v2 and in v1's
//! `cpuset` and `cpu` controllers (both may be mounted at once).
//!
//! [`super::host_cpus`] needs this where a launcher bound each rank to
//! one CPU: the rank's affinity mask then says nothing about how many
//! CPUs the job has, and the host's online CPUs say too much when the
//! job runs in a cgroup of its own (a Slurm step's cpuset, a container's
//! `--cpuset-cpus` or `--cpus`).

use std::path::{Path, PathBuf};

/// The fewest CPUs any of this process's cgroups allows, or `None` when
/// none limits it (or none could be read). `read` returns a file's text
/// (`std::fs::read_to_string` but for tests).
pub(super) fn limit(read: &dyn Fn(&Path) -> Option<String>) -> Option<usize> {
    let memberships = read(Path::new("/proc/self/cgroup"))?;
    let mounts = read(Path::new("/proc/self/mountinfo"))?;
    let mounts: Vec<Mount> = mounts.lines().filter_map(Mount::parse).collect();
    let mut fewest: Option<usize> = None;
    let mut keep = |n: Option<usize>| {
        if let Some(n) = n {
            fewest = Some(fewest.map_or(n, |f| f.min(n)));
        }
    };
    for line in memberships.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            // The v2 hierarchy.
            if let Some(dir) = locate(&mounts, path, |m| m.fstype == "cgroup2") {
                keep(nearest(&dir, |d| {
                    cpuset(read, &d.join("cpuset.cpus.effective"))
                }));
                keep(fewest_up(&dir, |d| quota_v2(read, d)));
            }
            continue;
        }
        let has = |name: &str| controllers.split(',').any(|c| c == name);
        let mounted_with = |name: &'static str| {
            move |m: &Mount| m.fstype == "cgroup" && m.options.split(',').any(|o| o == name)
        };
        if has("cpuset") {
            if let Some(dir) = locate(&mounts, path, mounted_with("cpuset")) {
                keep(nearest(&dir, |d| {
                    cpuset(read, &d.join("cpuset.effective_cpus"))
                        .or_else(|| cpuset(read, &d.join("cpuset.cpus")))
                }));
            }
        }
        if has("cpu") {
            if let Some(dir) = locate(&mounts, path, mounted_with("cpu")) {
                keep(fewest_up(&dir, |d| quota_v1(read, d)));
            }
        }
    }
    fewest
}

/// One line of `/proc/self/mountinfo`, the fields this module needs.
struct Mount {
    /// The mounted directory of the filesystem (a cgroup's path).
    root: String,
    mount_point: PathBuf,
    fstype: String,
    /// The superblock's options (a v1 hierarchy's controllers).
    options: String,
}

impl Mount {
    /// "36 25 0:31 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset"
    fn parse(line: &str) -> Option<Mount> {
        let (before, after) = line.split_once(" - ")?;
        let mut before = before.split(' ');
        let root = unescape(before.nth(3)?);
        let mount_point = PathBuf::from(unescape(before.next()?));
        let mut after = after.split(' ');
        let fstype = after.next()?.to_string();
        let options = after.nth(1)?.to_string();
        Some(Mount {
            root,
            mount_point,
            fstype,
            options,
        })
    }
}

/// A mountinfo path with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The directory of cgroup `path` in the first mount `is_it` accepts
/// whose root contains it.
fn locate(mounts: &[Mount], path: &str, is_it: impl Fn(&Mount) -> bool) -> Option<PathBuf> {
    mounts.iter().filter(|m| is_it(m)).find_map(|m| {
        let below = if m.root == "/" {
            path.strip_prefix('/')?
        } else {
            let below = path.strip_prefix(m.root.as_str())?;
            if !below.is_empty() && !below.starts_with('/') {
                return None;
            }
            below.trim_start_matches('/')
        };
        Some(m.mount_point.join(below))
    })
}

/// The first answer `at` gives walking from `dir` up to the root: a
/// cgroup without the controller enabled has the file in an ancestor.
fn nearest(dir: &Path, at: impl Fn(&Path) -> Option<usize>) -> Option<usize> {
    dir.ancestors().find_map(at)
}

/// The smallest answer `at` gives from `dir` up: a parent's quota
/// bounds its children.
fn fewest_up(dir: &Path, at: impl Fn(&Path) -> Option<usize>) -> Option<usize> {
    dir.ancestors().filter_map(at).min()
}

/// The CPUs a cpuset file lists ("0-3,8"), when it lists any.
fn cpuset(read: &dyn Fn(&Path) -> Option<String>, file: &Path) -> Option<usize> {
    super::host_cpus::count_list(read(file)?.trim()).filter(|&n| n > 0)
}

/// CPUs' worth of time in a v2 `cpu.max` ("200000 100000"; "max ...":
/// no limit), rounded up.
fn quota_v2(read: &dyn Fn(&Path) -> Option<String>, dir: &Path) -> Option<usize> {
    let text = read(&dir.join("cpu.max"))?;
    let mut fields = text.split_whitespace();
    let quota = fields.next()?.parse::<u64>().ok()?;
    let period = fields.next()?.parse::<u64>().ok()?;
    cpus_of(quota, period)
}

/// The same for v1's `cpu.cfs_quota_us` (-1: no limit) and
/// `cpu.cfs_period_us`.
fn quota_v1(read: &dyn Fn(&Path) -> Option<String>, dir: &Path) -> Option<usize> {
    let quota = read(&dir.join("cpu.cfs_quota_us"))?
        .trim()
        .parse::<i64>()
        .ok()?;
    let period = read(&dir.join("cpu.cfs_period_us"))?
        .trim()
        .parse::<u64>()
        .ok()?;
    cpus_of(u64::try_from(quota).ok()?, period)
}

/// `quota` per `period` as whole CPUs, rounded up; `None` for nonsense.
fn cpus_of(quota: u64, period: u64) -> Option<usize> {
    if quota == 0 || period == 0 {
        return None;
    }
    usize::try_from(quota.div_ceil(period)).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const HYBRID_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const V2_MOUNTS: &str = "\
29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
";

    fn files(pairs: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> + use<> {
        let map: HashMap<PathBuf, String> = pairs
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        move |p: &Path| map.get(p).cloned()
    }

    #[test]
    fn a_v2_cpuset_is_found_in_the_nearest_ancestor() {
        let read = files(&[
            (
                "/proc/self/cgroup",
                "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_1\n",
            ),
            ("/proc/self/mountinfo", V2_MOUNTS),
            ("/sys/fs/cgroup/cpuset.cpus.effective", "0-63\n"),
            (
                "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/cpuset.cpus.effective",
                "4-5\n",
            ),
        ]);
        assert_eq!(limit(&read), Some(2));
    }

    #[test]
    fn a_v2_quota_anywhere_above_caps_the_count() {
        let read = files(&[
            ("/proc/self/cgroup", "0::/docker/abc\n"),
            ("/proc/self/mountinfo", V2_MOUNTS),
            ("/sys/fs/cgroup/cpuset.cpus.effective", "0-7\n"),
            ("/sys/fs/cgroup/docker/cpu.max", "150000 100000\n"),
            ("/sys/fs/cgroup/docker/abc/cpu.max", "max 100000\n"),
        ]);
        assert_eq!(limit(&read), Some(2));
    }

    #[test]
    fn v1_controllers_beside_an_empty_v2_hierarchy() {
        let read = files(&[
            (
                "/proc/self/cgroup",
                "9:name=systemd:/\n3:cpuset:/slurm/job_3\n1:cpu:/slurm/job_3\n0::/\n",
            ),
            ("/proc/self/mountinfo", HYBRID_MOUNTS),
            (
                "/sys/fs/cgroup/cpuset/slurm/job_3/cpuset.effective_cpus",
                "2,4-6\n",
            ),
            ("/sys/fs/cgroup/cpu/slurm/job_3/cpu.cfs_quota_us", "-1\n"),
            (
                "/sys/fs/cgroup/cpu/slurm/job_3/cpu.cfs_period_us",
                "100000\n",
            ),
        ]);
        assert_eq!(limit(&read), Some(4));
        let quota = files(&[
            ("/proc/self/cgroup", "1:cpu:/slurm/job_3\n"),
            ("/proc/self/mountinfo", HYBRID_MOUNTS),
            (
                "/sys/fs/cgroup/cpu/slurm/job_3/cpu.cfs_quota_us",
                "250000\n",
            ),
            (
                "/sys/fs/cgroup/cpu/slurm/job_3/cpu.cfs_period_us",
                "100000\n",
            ),
        ]);
        assert_eq!(limit(&quota), Some(3));
    }

    #[test]
    fn a_bind_mounted_cgroup_is_found_below_its_root() {
        let mounts = "50 40 0:31 /slurm/job_3 /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n";
        let read = files(&[
            ("/proc/self/cgroup", "3:cpuset:/slurm/job_3/step_0\n"),
            ("/proc/self/mountinfo", mounts),
            ("/sys/fs/cgroup/cpuset/step_0/cpuset.cpus", "0-2\n"),
        ]);
        assert_eq!(limit(&read), Some(3));
        // A path outside the mount's root is not there.
        let elsewhere = files(&[
            ("/proc/self/cgroup", "3:cpuset:/slurm/job_30\n"),
            ("/proc/self/mountinfo", mounts),
            ("/sys/fs/cgroup/cpuset/0/cpuset.cpus", "0-2\n"),
        ]);
        assert_eq!(limit(&elsewhere), None);
    }

    #[test]
    fn nothing_limits_without_cgroups_or_limits() {
        assert_eq!(limit(&files(&[])), None);
        let unlimited = files(&[
            ("/proc/self/cgroup", "0::/\n"),
            ("/proc/self/mountinfo", V2_MOUNTS),
            ("/sys/fs/cgroup/cpu.max", "max 100000\n"),
            ("/sys/fs/cgroup/cpuset.cpus.effective", "\n"),
        ]);
        assert_eq!(limit(&unlimited), None);
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/mnt/my\040cgroups"), "/mnt/my cgroups");
        assert_eq!(unescape(r"/a\\b"), r"/a\\b");
        assert_eq!(unescape(r"/end\04"), r"/end\04");
        let m = Mount::parse(r"7 1 0:5 / /mnt/my\040cg rw - cgroup2 none rw").expect("parsed");
        assert_eq!(m.mount_point, PathBuf::from("/mnt/my cg"));
        assert_eq!(m.fstype, "cgroup2");
        assert!(Mount::parse("7 1 0:5 / /mnt rw").is_none());
    }

    #[test]
    fn quotas_round_up() {
        assert_eq!(cpus_of(50_000, 100_000), Some(1));
        assert_eq!(cpus_of(100_000, 100_000), Some(1));
        assert_eq!(cpus_of(100_001, 100_000), Some(2));
        assert_eq!(cpus_of(0, 100_000), None);
        assert_eq!(cpus_of(1, 0), None);
    }
}
