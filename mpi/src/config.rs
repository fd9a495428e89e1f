//! Run-time configuration, read once from the environment at
//! [`crate::initialize`]: every `O2G_*` variable is read and checked here,
//! and each transport gets its part as a typed struct ([`O2gConfig`],
//! [`DimmnetConfig`], [`HyphenConfig`]).
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `O2G_TRANSPORT` | `sockets-epoll` | `sockets-epoll`, `sockets-select`, `sockets-poll`, `self`, `o2g`, `dimmnet` or `hyphenlink` (see `transport/mod.rs`) |
//! | `O2G_SELF` | `1` | `0` sends messages to oneself through the network transport instead of the in-process loopback, so benchmarks measure the network path |
//! | `O2G_SNDBUF`, `O2G_RCVBUF` | system | `SO_SNDBUF` / `SO_RCVBUF` of every connection, in bytes |
//! | `O2G_MAX_MESSAGE` | 4 GiB | largest payload accepted in one message |
//! | `O2G_ADDR` | `127.0.0.1`; `auto` under Slurm on several nodes | address this process listens on and publishes to its peers; `auto`: the first interface that is up, not loopback, with an IPv4 address (`listen_addr.rs`) |
//! | `O2G_IF` | (none) | the interface `O2G_ADDR=auto` takes |
//! | `O2G_CONNECT_TIMEOUT` | `60` | seconds the connection setup may take before it fails |
//! | `O2G_PEER_TIMEOUT` | `60` | TCP transports (`sockets-*`, `o2g`): seconds a peer's host may stay silent before its connection fails (`TCP_USER_TIMEOUT`, with keepalive probes so that a rank waiting on a silent peer with nothing to send notices too); a live peer's kernel answers for it however busy the peer is. A PMI server reached over TCP (`PMI_PORT`) gets the same bound. `0`: TCP's own defaults (data unacknowledged for about 15 minutes; never while nothing is sent) |
//! | `O2G_RNDV_THRESHOLD` | 64 KiB; `o2g`: 1 MiB on this host, 512 KiB to other hosts | socket transports and `o2g`: messages longer than this go by rendezvous (a request to send; the data follows once the receiver matched it, straight into the receive); shorter ones go eagerly while the sender has credit. Set, it applies to every peer |
//! | `O2G_ZEROCOPY_MIN` | 512 KiB | socket transports: rendezvous data of at least this many bytes to a peer on another host goes with `MSG_ZEROCOPY` (TCP sends from the sender's pages; the send completes once the peer's kernel acknowledged them). On this host the kernel copies anyway, so it is never used there. `0`: never |
//! | `O2G_EAGER_CREDIT_BYTES`, `O2G_EAGER_CREDIT_MSGS` | 4 MiB, 256 | socket transports: eager payload bytes and messages each sender may leave unreceived at each receiver; past them it sends by rendezvous until the receiver takes some. `o2g` uses the message count (`O2G_EAGER_CREDIT_MSGS`); its bytes are what the sender's ring of the dump area has room for |
//! | `O2G_DUMP_BYTES` | 64 MiB | `o2g` transport: the module's area for unexpected messages (a multiple of 4096), a ring per rank; each sender's eager credit is what its ring has room for |
//! | `O2G_PIN_BUDGET` | 2 GiB | `o2g` transport: most bytes of posted receive buffers pinned at once |
//! | `O2G_STATS` | `0` | `o2g` transport: `1` prints, as each rank closes, the module's counts of the messages and bytes it placed straight into receives and those it stored in the dump area first, and the bytes its sends copied out of the callers' buffers |
//! | `O2G_DIMMNET_REGION` | `shm` | `dimmnet` transport: `shm` (rank 0 creates a `/dev/shm` file for the job) or `ivshmem` (the guest's first ivshmem device, shared by QEMU VMs) |
//! | `O2G_MODEL_TIME` | `0` | `dimmnet` and `hyphenlink` transports: `1` makes `MPI_Wtime` read the NIC timing model's virtual clock of this rank's node; communication advances it by the model, computation between MPI calls by the calling thread's CPU time (`transport/model_time.rs`). Every rank of a job must set the same value |
//! | `O2G_DIMMNET_PEER_TIMEOUT` | `5` | `dimmnet` transport: seconds without a heartbeat after which a peer counts as dead |
//! | `O2G_HYPHEN_REGION` | `shm` | `hyphenlink` transport: where the emulated board lives: `shm` (rank 0 creates a `/dev/shm` file, published through PMI, unlinked once all attached), `ivshmem` (the BAR of the guest's first ivshmem-plain device, formatted by rank 0; for one rank per VM) or the absolute path of a pre-sized file every rank maps, used like the BAR |
//! | `O2G_HYPHEN_RING_BYTES` | `O2G_RCVBUF`, else 64 MiB / size², clamped to 16 KiB..1 MiB | `hyphenlink`: bytes of each AP1000 receive ring (one per sender and receiver); frames carry up to a quarter of it. With `ivshmem` or a path it is halved until the board fits |
//! | `O2G_HYPHEN_WAIT` | `block` (`shm`), `sleep` (`ivshmem`) | `hyphenlink`: how an idle rank sleeps after spinning and yielding: `block` in futex on its EXT FIFO (woken by a PB), `sleep` in short timed sleeps (futexes do not cross VMs) |
//! | `O2G_HYPHEN_DEAD_AFTER` | `10` | `hyphenlink`: seconds without a heartbeat after which a peer counts as dead (a peer that exits is seen at once) |
//! | `O2G_SPIN` | `auto` | socket transports and `o2g`: whether an idle rank spins before it sleeps, for twice the typical wait it has seen (at least 100 us, at most 300 us). `auto`: when this host has a CPU for each of the job's ranks on it (peers at the address of this end of a connection, or on loopback, count as on it; a rank bound to fewer CPUs than its job has counts the job's: the host's online CPUs, or those of its cgroups' cpuset or CPU quota where fewer), and only while spinning finds messages (after 4 fruitless spins in a row, the next 64 waits sleep at once); `1`: always; `0`: never |
//! | `O2G_IDLE_CONNECTIONS` | `0` | benchmark knob: each process also holds this many idle TCP connections, watched like real ones (the o2g paper's figure 6) |
//! | `O2G_IDLE_HOLDER` | (none) | benchmark knob: `ADDR:PORT` of an `o2g-idle-holder` (on a third node, as in the paper) that takes the idle connections' far ends; without it they are loopback pairs inside each process |
//! | `O2G_JOB_SECRET` | set by `o2grun` | 32 lowercase hexadecimal digits every connection between ranks must present (see `transport/bootstrap.rs`); without it rank 0 makes one and publishes it through PMI |
//! | `O2G_PMI_VERSION` | `2` under Slurm's `pmi2` plugin (`PMI_FD` with `PMI_JOBID`), else `1` | the PMI wire protocol spoken to the process manager: `1` (PMI-1 lines) or `2` (PMI-2 frames); read by `pmi.rs` when it connects, set for its ranks by `o2grun --pmi N` |

use std::net::IpAddr;
use std::time::Duration;

use o2g_core::proto::credit::Window;

use crate::error::{Error, Result};

/// Which transport moves the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransportKind {
    SocketsSelect,
    SocketsPoll,
    SocketsEpoll,
    SelfLoop,
    O2g,
    Dimmnet,
    HyphenLink,
}

/// `O2G_SPIN`: whether idle ranks spin before they sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spin {
    /// When this host has a CPU for each of the job's ranks on it, and
    /// while spinning pays.
    Auto,
    Always,
    Never,
}

/// `o2g`: the module endpoint's sizes.
#[derive(Clone, Debug)]
pub(crate) struct O2gConfig {
    /// `O2G_DUMP_BYTES`: the area for unexpected messages.
    pub(crate) dump_bytes: u64,
    /// Longest message sent eagerly to a peer on this host and to one on
    /// another host: `O2G_RNDV_THRESHOLD` for both if set, otherwise
    /// [`EAGER_ON_THIS_HOST`] and [`EAGER_TO_OTHER_HOSTS`].
    pub(crate) eager_local: u64,
    pub(crate) eager_remote: u64,
    /// `O2G_PIN_BUDGET`: most bytes of receive buffers pinned at once.
    pub(crate) pin_budget: u64,
    /// `O2G_STATS`: print the endpoint's counters when the transport
    /// closes.
    pub(crate) report_stats: bool,
}

/// `o2g`'s default eager limit on this host. A rendezvous costs the two
/// modules a work item each (clear-to-send, data) and saves no copy on
/// loopback, so messages up to 1 MiB are faster eager (`docs/results.md`,
/// "The dump area as a ring per sender").
pub(crate) const EAGER_ON_THIS_HOST: u64 = 1 << 20;
/// `o2g`'s default eager limit to other hosts: from 1 MiB the module's
/// rendezvous sends without a copy (`MSG_ZEROCOPY`), which a stream of
/// such messages needs more than it needs the saved round trip.
pub(crate) const EAGER_TO_OTHER_HOSTS: u64 = 512 << 10;

/// `dimmnet`: where the emulated NIC lives and when a peer is dead.
#[derive(Clone, Debug)]
pub(crate) struct DimmnetConfig {
    /// `O2G_DIMMNET_REGION`.
    pub(crate) region: DimmnetRegion,
    /// `O2G_DIMMNET_PEER_TIMEOUT`: silence after which a peer is dead.
    pub(crate) peer_timeout: Duration,
}

/// Which region the ranks of a `dimmnet` job share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DimmnetRegion {
    /// A `/dev/shm` file rank 0 creates.
    Shm,
    /// The guest's first ivshmem BAR.
    Ivshmem,
}

/// `hyphenlink`: where the emulated board lives, its rings, how an idle
/// rank sleeps, and when a peer is dead.
#[derive(Clone, Debug)]
pub(crate) struct HyphenConfig {
    /// `O2G_HYPHEN_REGION`.
    pub(crate) region: HyphenRegion,
    /// `O2G_HYPHEN_RING_BYTES`; `None`: sized from the world.
    pub(crate) ring_bytes: Option<usize>,
    /// `O2G_HYPHEN_WAIT`; `None`: the region's default.
    pub(crate) wait: Option<HyphenWait>,
    /// `O2G_HYPHEN_DEAD_AFTER`: silence after which a peer is dead.
    pub(crate) dead_after: Duration,
}

/// Which region the ranks of a `hyphenlink` job share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HyphenRegion {
    /// A `/dev/shm` file rank 0 creates and publishes.
    Shm,
    /// The BAR of the guest's first ivshmem-plain device.
    Ivshmem,
    /// A pre-sized file every rank maps, used like the BAR.
    File(std::path::PathBuf),
}

/// How an idle `hyphenlink` rank sleeps after spinning and yielding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HyphenWait {
    /// Futex on the node's FIFO doorbell (the interrupt EXT).
    Block,
    /// Timed sleeps (no wake-up crosses QEMU guests).
    Timed,
}

/// Everything the environment configures.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) transport: TransportKind,
    pub(crate) transport_name: String,
    pub(crate) self_path: bool,
    pub(crate) sndbuf: Option<usize>,
    pub(crate) rcvbuf: Option<usize>,
    pub(crate) max_message: u64,
    /// `O2G_RNDV_THRESHOLD`: longest message sent eagerly.
    pub(crate) rndv_threshold: u64,
    /// `O2G_ZEROCOPY_MIN`: least rendezvous data sent without a copy to
    /// another host (0: never).
    pub(crate) zerocopy_min: u64,
    /// `O2G_EAGER_CREDIT_*`: what each peer may leave stored here.
    pub(crate) eager_credit: Window,
    pub(crate) addr: IpAddr,
    pub(crate) connect_timeout: Duration,
    /// `O2G_PEER_TIMEOUT`: how long a peer's host may stay silent (`None`:
    /// TCP's defaults).
    pub(crate) peer_timeout: Option<Duration>,
    pub(crate) idle_connections: usize,
    pub(crate) spin: Spin,
    /// `O2G_MODEL_TIME`: `MPI_Wtime` from an emulated NIC's timing model.
    pub(crate) model_time: bool,
    /// `O2G_IDLE_HOLDER`: where the idle connections go, if not loopback.
    pub(crate) idle_holder: Option<std::net::SocketAddr>,
    pub(crate) o2g: O2gConfig,
    pub(crate) dimmnet: DimmnetConfig,
    pub(crate) hyphen: HyphenConfig,
    /// `O2G_JOB_SECRET`: 32 lowercase hexadecimal digits.
    pub(crate) job_secret: Option<String>,
}

/// Digits of a job secret.
pub(crate) const SECRET_LEN: usize = 32;

/// Whether `s` has the shape of a job secret: [`SECRET_LEN`] lowercase
/// hexadecimal digits.
pub(crate) fn is_secret(s: &str) -> bool {
    s.len() == SECRET_LEN && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The value of variable `name` (through `var`) as a `T`.
fn parse<T: std::str::FromStr>(
    var: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Option<T>> {
    var(name)
        .map(|v| {
            v.parse()
                .map_err(|_| Error::Config(format!("{name}={v:?} is not valid")))
        })
        .transpose()
}

/// Variable `name` (through `var`) as `0` or `1`; `default` when unset.
fn flag(var: &dyn Fn(&str) -> Option<String>, name: &str, default: bool) -> Result<bool> {
    match var(name).as_deref() {
        None => Ok(default),
        Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(v) => Err(Error::Config(format!("{name}={v:?}: expected 0 or 1"))),
    }
}

impl Config {
    /// Reads the `O2G_*` variables.
    pub(crate) fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The configuration the variables `lookup` returns describe (unset
    /// and empty alike mean the default); tests pass their own.
    pub(crate) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let var = |name: &str| lookup(name).filter(|v| !v.is_empty());
        let transport_name = var("O2G_TRANSPORT").unwrap_or_else(|| "sockets-epoll".into());
        let transport = match transport_name.as_str() {
            "sockets-epoll" => TransportKind::SocketsEpoll,
            "sockets-select" => TransportKind::SocketsSelect,
            "sockets-poll" => TransportKind::SocketsPoll,
            "self" => TransportKind::SelfLoop,
            "o2g" => TransportKind::O2g,
            "dimmnet" => TransportKind::Dimmnet,
            "hyphenlink" => TransportKind::HyphenLink,
            other => {
                return Err(Error::Config(format!(
                    "O2G_TRANSPORT={other:?}: expected sockets-epoll, sockets-select, sockets-poll, self, o2g, dimmnet or hyphenlink"
                )))
            }
        };
        let dimmnet_region = match var("O2G_DIMMNET_REGION").as_deref() {
            None | Some("shm") => DimmnetRegion::Shm,
            Some("ivshmem") => DimmnetRegion::Ivshmem,
            Some(v) => {
                return Err(Error::Config(format!(
                    "O2G_DIMMNET_REGION={v:?}: expected shm or ivshmem"
                )))
            }
        };
        let hyphen = HyphenConfig {
            region: match var("O2G_HYPHEN_REGION").as_deref() {
                None | Some("shm") => HyphenRegion::Shm,
                Some("ivshmem") => HyphenRegion::Ivshmem,
                Some(path) if path.starts_with('/') => HyphenRegion::File(path.into()),
                Some(v) => {
                    return Err(Error::Config(format!(
                        "O2G_HYPHEN_REGION={v:?}: expected shm, ivshmem or an absolute path"
                    )))
                }
            },
            ring_bytes: parse(&var, "O2G_HYPHEN_RING_BYTES")?,
            wait: match var("O2G_HYPHEN_WAIT").as_deref() {
                None => None,
                Some("block") => Some(HyphenWait::Block),
                Some("sleep") => Some(HyphenWait::Timed),
                Some(v) => {
                    return Err(Error::Config(format!(
                        "O2G_HYPHEN_WAIT={v:?}: expected block or sleep"
                    )))
                }
            },
            dead_after: match var("O2G_HYPHEN_DEAD_AFTER") {
                None => Duration::from_secs(10),
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        Error::Config(format!("O2G_HYPHEN_DEAD_AFTER={v:?}: expected seconds > 0"))
                    })?,
            },
        };
        let job_secret = var("O2G_JOB_SECRET");
        if job_secret.as_deref().is_some_and(|s| !is_secret(s)) {
            return Err(Error::Config(format!(
                "O2G_JOB_SECRET must be {SECRET_LEN} lowercase hexadecimal digits (o2grun sets it)"
            )));
        }
        let self_path = flag(&var, "O2G_SELF", true)?;
        let model_time = flag(&var, "O2G_MODEL_TIME", false)?;
        if model_time
            && !matches!(
                transport,
                TransportKind::Dimmnet | TransportKind::HyphenLink
            )
        {
            return Err(Error::Config(format!(
                "O2G_MODEL_TIME=1: the {transport_name} transport has no timing model \
                 (dimmnet and hyphenlink have one)"
            )));
        }
        let rndv_threshold = parse(&var, "O2G_RNDV_THRESHOLD")?;
        let eager_credit = Window {
            bytes: parse(&var, "O2G_EAGER_CREDIT_BYTES")?.unwrap_or(4 << 20),
            msgs: parse(&var, "O2G_EAGER_CREDIT_MSGS")?.unwrap_or(256),
            // Set per transport: the socket transports accept any length.
            largest: u64::MAX,
        };
        if eager_credit.msgs == 0 || eager_credit.bytes == 0 {
            return Err(Error::Config(
                "O2G_EAGER_CREDIT_BYTES and O2G_EAGER_CREDIT_MSGS must be at least 1 \
                 (a small threshold, not zero credit, sends everything by rendezvous)"
                    .into(),
            ));
        }
        Ok(Self {
            transport,
            transport_name,
            self_path,
            sndbuf: parse(&var, "O2G_SNDBUF")?,
            rcvbuf: parse(&var, "O2G_RCVBUF")?,
            max_message: parse(&var, "O2G_MAX_MESSAGE")?.unwrap_or(4 << 30),
            rndv_threshold: rndv_threshold.unwrap_or(64 << 10),
            zerocopy_min: parse(&var, "O2G_ZEROCOPY_MIN")?.unwrap_or(512 << 10),
            eager_credit,
            addr: crate::listen_addr::from_env(&var)?,
            connect_timeout: Duration::from_secs(parse(&var, "O2G_CONNECT_TIMEOUT")?.unwrap_or(60)),
            peer_timeout: match parse::<u32>(&var, "O2G_PEER_TIMEOUT")?.unwrap_or(60) {
                0 => None,
                s => Some(Duration::from_secs(s.into())),
            },
            idle_connections: parse(&var, "O2G_IDLE_CONNECTIONS")?.unwrap_or(0),
            spin: match var("O2G_SPIN").as_deref() {
                None | Some("auto") => Spin::Auto,
                Some("1") => Spin::Always,
                Some("0") => Spin::Never,
                Some(v) => {
                    return Err(Error::Config(format!(
                        "O2G_SPIN={v:?}: expected auto, 1 or 0"
                    )))
                }
            },
            model_time,
            idle_holder: match var("O2G_IDLE_HOLDER") {
                None => None,
                Some(v) => Some(v.parse().map_err(|_| {
                    Error::Config(format!(
                        "O2G_IDLE_HOLDER={v:?}: expected ADDR:PORT of an o2g-idle-holder"
                    ))
                })?),
            },
            o2g: O2gConfig {
                dump_bytes: parse(&var, "O2G_DUMP_BYTES")?.unwrap_or(64 << 20),
                eager_local: rndv_threshold.unwrap_or(EAGER_ON_THIS_HOST),
                eager_remote: rndv_threshold.unwrap_or(EAGER_TO_OTHER_HOSTS),
                pin_budget: parse(&var, "O2G_PIN_BUDGET")?.unwrap_or(2 << 30),
                report_stats: flag(&var, "O2G_STATS", false)?,
            },
            dimmnet: DimmnetConfig {
                region: dimmnet_region,
                peer_timeout: Duration::from_secs(
                    parse(&var, "O2G_DIMMNET_PEER_TIMEOUT")?.unwrap_or(5),
                ),
            },
            hyphen,
            job_secret,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<Config> {
        Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn an_unknown_transport_is_an_error_naming_it_and_the_valid_ones() {
        for bad in ["sockets_epoll", "bogus"] {
            let e = with(&[("O2G_TRANSPORT", bad)]).expect_err(bad).to_string();
            assert!(e.contains(&format!("O2G_TRANSPORT={bad:?}")), "{e}");
            for valid in ["sockets-epoll", "sockets-select", "sockets-poll", "o2g"] {
                assert!(e.contains(valid), "{e}");
            }
        }
    }

    #[test]
    fn model_time_is_for_the_emulated_nics_only() {
        for t in ["dimmnet", "hyphenlink"] {
            let c = with(&[("O2G_TRANSPORT", t), ("O2G_MODEL_TIME", "1")]).expect(t);
            assert!(c.model_time);
        }
        for (t, v) in [("sockets-epoll", "1"), ("dimmnet", "yes")] {
            let e = with(&[("O2G_TRANSPORT", t), ("O2G_MODEL_TIME", v)])
                .expect_err(t)
                .to_string();
            assert!(e.contains("O2G_MODEL_TIME"), "{e}");
        }
    }

    #[test]
    fn flags_are_0_or_1() {
        let c = with(&[]).expect("defaults");
        assert!(c.self_path && !c.model_time && !c.o2g.report_stats);
        let c = with(&[("O2G_SELF", "0"), ("O2G_STATS", "1")]).expect("set");
        assert!(!c.self_path && c.o2g.report_stats);
        for var in ["O2G_SELF", "O2G_STATS", "O2G_MODEL_TIME"] {
            let e = with(&[(var, "yes")]).expect_err(var).to_string();
            assert!(e.contains(var) && e.contains("expected 0 or 1"), "{e}");
        }
    }

    #[test]
    fn an_idle_holder_is_an_address_and_port() {
        let c = with(&[("O2G_IDLE_HOLDER", "10.0.0.3:7300")]).expect("holder");
        assert_eq!(c.idle_holder, Some("10.0.0.3:7300".parse().unwrap()));
        let e = with(&[("O2G_IDLE_HOLDER", "10.0.0.3")])
            .expect_err("no port")
            .to_string();
        assert!(
            e.contains("O2G_IDLE_HOLDER") && e.contains("ADDR:PORT"),
            "{e}"
        );
    }

    #[test]
    fn a_job_secret_is_32_lowercase_hex_digits() {
        let good = "0123456789abcdef0123456789abcdef";
        let c = with(&[("O2G_JOB_SECRET", good)]).expect("good secret");
        assert_eq!(c.job_secret.as_deref(), Some(good));
        for bad in [&good[1..], &good.to_uppercase(), "secret"] {
            let e = with(&[("O2G_JOB_SECRET", bad)]).expect_err(bad).to_string();
            assert!(e.contains("O2G_JOB_SECRET must be 32"), "{e}");
        }
    }

    #[test]
    fn unset_and_empty_mean_the_defaults() {
        let c = with(&[("O2G_TRANSPORT", ""), ("O2G_SNDBUF", "")]).expect("defaults");
        assert_eq!(c.transport, TransportKind::SocketsEpoll);
        assert_eq!(c.sndbuf, None);
        assert_eq!(c.max_message, 4 << 30);
        assert_eq!(c.rndv_threshold, 64 << 10);
        assert_eq!(
            (c.o2g.eager_local, c.o2g.eager_remote),
            (EAGER_ON_THIS_HOST, EAGER_TO_OTHER_HOSTS)
        );
        assert_eq!(c.zerocopy_min, 512 << 10);
        assert_eq!(c.spin, Spin::Auto);
    }

    #[test]
    fn each_transport_gets_its_part_typed_and_bad_values_name_their_variable() {
        let c = with(&[
            ("O2G_DUMP_BYTES", "8192"),
            ("O2G_DIMMNET_REGION", "ivshmem"),
            ("O2G_HYPHEN_REGION", "/dev/shm/board"),
            ("O2G_HYPHEN_WAIT", "sleep"),
            ("O2G_HYPHEN_DEAD_AFTER", "0.5"),
            ("O2G_HYPHEN_RING_BYTES", "65536"),
            ("O2G_SPIN", "0"),
        ])
        .expect("valid");
        assert_eq!(c.o2g.dump_bytes, 8192);
        assert_eq!(c.dimmnet.region, DimmnetRegion::Ivshmem);
        assert_eq!(c.hyphen.region, HyphenRegion::File("/dev/shm/board".into()));
        assert_eq!(c.hyphen.wait, Some(HyphenWait::Timed));
        assert_eq!(c.hyphen.dead_after, Duration::from_millis(500));
        assert_eq!(c.hyphen.ring_bytes, Some(65536));
        assert_eq!(c.spin, Spin::Never);
        for (var, bad) in [
            ("O2G_DIMMNET_REGION", "nvme"),
            ("O2G_HYPHEN_REGION", "relative/path"),
            ("O2G_HYPHEN_WAIT", "spin"),
            ("O2G_HYPHEN_DEAD_AFTER", "-1"),
            ("O2G_HYPHEN_RING_BYTES", "lots"),
            ("O2G_PIN_BUDGET", "2G"),
            ("O2G_SPIN", "yes"),
        ] {
            let e = with(&[(var, bad)]).expect_err(var).to_string();
            assert!(e.contains(&format!("{var}={bad:?}")), "{e}");
        }
    }

    #[test]
    fn zero_eager_credit_is_refused_with_a_hint() {
        for var in ["O2G_EAGER_CREDIT_BYTES", "O2G_EAGER_CREDIT_MSGS"] {
            let e = with(&[(var, "0")]).expect_err(var).to_string();
            assert!(e.contains("at least 1") && e.contains("threshold"), "{e}");
        }
        let c = with(&[("O2G_EAGER_CREDIT_MSGS", "3"), ("O2G_RNDV_THRESHOLD", "0")]).expect("ok");
        assert_eq!((c.eager_credit.msgs, c.rndv_threshold), (3, 0));
    }

    #[test]
    fn a_set_threshold_applies_to_every_peer_of_o2g() {
        let c = with(&[("O2G_RNDV_THRESHOLD", "4096")]).expect("ok");
        assert_eq!(
            (c.rndv_threshold, c.o2g.eager_local, c.o2g.eager_remote),
            (4096, 4096, 4096)
        );
    }
}
