//! Starting and stopping MPI (MPI 4.1 §11.2 "The World Model"), and the
//! clock (§9.6 "Timers and Synchronization").

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use foldhash::{HashMap, HashMapExt};

use crate::collective::schedule::Advance;
use crate::communicator::Communicator;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::pmi::Pmi;
use crate::synchronous;
use crate::transport::{self, RecvToken, Transport};

/// MPI may be initialised once per process (§11.2.1).
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// The longest a wait blocks in the transport at a time when other
/// threads may want a turn (`MPI_THREAD_MULTIPLE`).
const TURN: Duration = Duration::from_millis(1);

/// How long finalize may take to deliver what is still queued.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(60);

/// The state one initialised process shares between all its handles.
pub(crate) struct Runtime {
    transport: RefCell<Option<Box<dyn Transport>>>,
    pmi: RefCell<Pmi>,
    /// The lowest context id this process has not used yet.
    pub(crate) next_context: Cell<u32>,
    pub(crate) transport_name: String,
    /// This process's world rank.
    rank: u32,
    /// Processes in the world.
    pub(crate) size: u32,
    /// Receives nobody waits for any more that must still take their
    /// message: the acknowledgements of synchronous sends whose request
    /// was dropped early (see `synchronous.rs`).
    orphans: RefCell<Vec<RecvToken>>,
    /// Nonblocking collectives started so far, by communicator context.
    collectives: RefCell<HashMap<u32, u32>>,
    /// The schedules of nonblocking collectives that have not finished
    /// (see `collective/schedule.rs`).
    schedules: RefCell<Vec<Rc<RefCell<dyn Advance>>>>,
    /// Set by a binding's agent that did something (`raw::add_agent`):
    /// what a wait waits for may have happened meanwhile.
    pub(crate) agent_worked: Rc<Cell<bool>>,
}

impl Runtime {
    /// Runs `f` on the transport, then acknowledges the synchronous-mode
    /// messages it matched meanwhile; fails after finalize.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut dyn Transport) -> Result<R>) -> Result<R> {
        let mut t = self.transport.borrow_mut();
        // Not `ok_or`: that builds and drops an `Error` on every call.
        let Some(t) = t.as_mut() else {
            return Err(Error::Finalized);
        };
        let r = f(t.as_mut());
        synchronous::acknowledge(t.as_mut(), self.rank);
        if let Ok(mut orphans) = self.orphans.try_borrow_mut() {
            if !orphans.is_empty() {
                orphans.retain(|&token| t.test_recv(token).is_none());
            }
        }
        r
    }

    /// Leaves the posted receive `token` to take its message, whose
    /// outcome nobody wants (see `synchronous.rs`).
    pub(crate) fn orphan(&self, token: RecvToken) {
        self.orphans.borrow_mut().push(token);
    }

    /// The sequence number of the next nonblocking collective on the
    /// communicator with context `context` (0, 1, 2, …).
    pub(crate) fn next_collective(&self, context: u32) -> u32 {
        let mut m = self.collectives.borrow_mut();
        let n = m.entry(context).or_default();
        let seq = *n;
        *n = n.wrapping_add(1);
        seq
    }

    /// Keeps a nonblocking collective's schedule going until it finishes.
    pub(crate) fn add_schedule(&self, s: Rc<RefCell<dyn Advance>>) {
        self.schedules.borrow_mut().push(s);
    }

    /// Advances every unfinished schedule (without waiting) and forgets
    /// those that finished: the wait loops call it before they wait, so
    /// that a nonblocking collective progresses whatever the process
    /// waits for. A schedule in use further up the stack is skipped.
    pub(crate) fn advance_schedules(&self) {
        let list: Vec<_> = self.schedules.borrow().clone();
        if list.is_empty() {
            return;
        }
        let mut finished = Vec::new();
        for s in &list {
            if let Ok(mut s2) = s.try_borrow_mut() {
                if s2.advance() {
                    finished.push(s.clone());
                }
            }
        }
        if !finished.is_empty() {
            self.schedules
                .borrow_mut()
                .retain(|s| !finished.iter().any(|f| Rc::ptr_eq(s, f)));
        }
    }

    /// The transport's progress (waiting at most `timeout`, forever for
    /// `None`), after advancing every nonblocking collective's schedule.
    /// When an agent did some work, the transport is only asked for what
    /// is ready, so that the caller looks at its request again first.
    ///
    /// With a binding's turn-taking hooks (`raw::set_turns`, for
    /// `MPI_THREAD_MULTIPLE`), a wait blocks at most [`TURN`] at a time,
    /// and not at all while another thread waits for its turn, which it
    /// then gets here, between two calls to the transport.
    pub(crate) fn progress(&self, timeout: Option<Duration>) -> Result<()> {
        self.agent_worked.set(false);
        self.advance_schedules();
        let timeout = if self.agent_worked.get() {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        let Some(turns) = crate::raw::turns() else {
            return self.with(|t| t.progress(timeout));
        };
        let slice = if (turns.contended)() {
            Duration::ZERO
        } else {
            timeout.map_or(TURN, |t| t.min(TURN))
        };
        let r = self.with(|t| t.progress(Some(slice)));
        (turns.pass)();
        r
    }

    pub(crate) fn abort(&self, code: i32, msg: &str) -> ! {
        if let Ok(mut pmi) = self.pmi.try_borrow_mut() {
            pmi.abort(code, msg);
        }
        eprintln!("o2g: MPI_Abort({code}): {msg}");
        std::process::exit(code)
    }
}

/// An initialised MPI library (`MPI_Init` … `MPI_Finalize`, §11.2.1,
/// §11.2.2).
///
/// Call [`Universe::finalize`] at the end. Dropping the universe without it
/// (an early return with `?`, a panic) only delivers what is queued, with a
/// time limit, and closes the connections: it does not synchronise with
/// the other processes, because they may never get there.
pub struct Universe {
    rt: Rc<Runtime>,
    world: Communicator,
}

/// Initialises MPI (`MPI_Init`, §11.2.1): reads the configuration from the
/// environment (see the crate docs), learns rank and size from the process
/// manager through PMI-1 or PMI-2 (a singleton without one), and connects to every
/// peer.
///
/// # Errors
///
/// [`Error::AlreadyInitialized`] on a second call; configuration, PMI and
/// connection errors otherwise.
pub fn initialize() -> Result<Universe> {
    if INITIALIZED.swap(true, Ordering::SeqCst) {
        return Err(Error::AlreadyInitialized);
    }
    let _ = time();
    let config = Config::from_env()?;
    let mut pmi = Pmi::connect(config.peer_timeout)?;
    let (rank, size) = (pmi.rank(), pmi.size());
    let transport = match transport::open(&config, &mut pmi) {
        Ok(t) => t,
        Err(e) => {
            pmi.abort(1, &format!("rank {rank}: {e}"));
            return Err(e);
        }
    };
    let rt = Rc::new(Runtime {
        transport: RefCell::new(Some(transport)),
        pmi: RefCell::new(pmi),
        next_context: Cell::new(2),
        transport_name: config.transport_name,
        rank,
        size,
        orphans: RefCell::new(Vec::new()),
        collectives: RefCell::new(HashMap::new()),
        schedules: RefCell::new(Vec::new()),
        agent_worked: Rc::default(),
    });
    let world = Communicator::new(rt.clone(), 0, (0..size).collect(), rank);
    Ok(Universe { rt, world })
}

impl Universe {
    /// `MPI_COMM_WORLD` (§7.2.1): every process of the job.
    pub fn world(&self) -> Communicator {
        self.world.handle()
    }

    /// The transport in use (the value of `O2G_TRANSPORT`).
    pub fn transport_name(&self) -> &str {
        &self.rt.transport_name
    }

    /// `MPI_Finalize` (§11.2.2): delivers queued sends, synchronises the
    /// world, closes every connection and tells the process manager.
    ///
    /// # Errors
    ///
    /// A peer that died, or sends that could not be delivered in time.
    pub fn finalize(mut self) -> Result<()> {
        self.shutdown(true)
    }

    fn shutdown(&mut self, synchronise: bool) -> Result<()> {
        if self.rt.transport.borrow().is_none() {
            return Ok(());
        }
        let mut net = self.rt.with(|t| t.flush(FLUSH_TIMEOUT));
        if synchronise {
            net = net
                .and_then(|()| self.world.barrier())
                .and_then(|()| self.rt.with(|t| t.flush(FLUSH_TIMEOUT)));
        }
        // Unfinished schedules hold communicators, and so the runtime.
        drop(std::mem::take(&mut *self.rt.schedules.borrow_mut()));
        drop(self.rt.transport.borrow_mut().take());
        let pmi = self.rt.pmi.borrow_mut().finalize();
        net.and(pmi)
    }
}

impl Drop for Universe {
    fn drop(&mut self) {
        let _ = self.shutdown(false);
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// A clock in place of the host's: an emulated NIC's timing model
/// (`O2G_MODEL_TIME=1`, `transport/model_time.rs`).
type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;
static CLOCK: RwLock<Option<Clock>> = RwLock::new(None);
/// Whether `CLOCK` is set: `time` takes no lock when it is not.
static CLOCK_SET: AtomicBool = AtomicBool::new(false);

/// Makes [`time`] read `clock` (or the host's clock again, for `None`).
pub(crate) fn use_clock(clock: Option<Clock>) {
    let mut c = CLOCK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    CLOCK_SET.store(clock.is_some(), Ordering::Release);
    *c = clock;
}

/// `MPI_Wtime` (§9.6.1): seconds since an arbitrary point in the past,
/// fixed for the life of the process. Not synchronised between processes.
/// With `O2G_MODEL_TIME=1`, the virtual time of the emulated NIC's model.
pub fn time() -> f64 {
    if CLOCK_SET.load(Ordering::Acquire) {
        let c = CLOCK
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = c.as_ref() {
            return c();
        }
    }
    epoch().elapsed().as_secs_f64()
}

/// `MPI_Wtick` (§9.6.1): the resolution of [`time`] in seconds.
pub fn time_resolution() -> f64 {
    1e-9
}
