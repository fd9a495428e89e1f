//! Nonblocking collectives (MPI 5.0 §6.12) on the `mpi` crate's
//! schedules: each call checks its arguments as its blocking form does,
//! starts the collective (its first messages go out at once) and returns
//! a request that `MPI_Wait`, `MPI_Test` and the multiple-completion calls
//! complete like any other. The collective advances whenever the process
//! tests or waits for any request (or blocks in any call that waits); the
//! input is copied (a non-contiguous one packed) when it starts, the
//! output written when it completes (a staged one unpacked into the
//! user's layout then, `coll_stage.rs`). `MPI_IN_PLACE` as the blocking
//! forms allow it. On an inter-communicator (§6.2.2) the rules are
//! those of the blocking forms there (`intercoll.rs`): `MPI_ROOT` and
//! `MPI_PROC_NULL` roots, blocks of the remote group, no `MPI_IN_PLACE`;
//! `MPI_Iscan` and `MPI_Iexscan` fail with `MPI_ERR_COMM`. This file
//! holds `MPI_Ibarrier` and the starters: the exported functions are
//! made with their blocking forms (`family!` in `coll.rs` and
//! `coll_reduce.rs`), as are the persistent ones (`pcoll.rs`), whose
//! every start runs the same starter.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use crate::coll::{alltoall_sides, root_of, rooted, Input, Reduction};
use crate::coll_reduce::scatter_parts;
use crate::coll_stage::{Int, Spec};
use crate::error::{boundary, explained, Code, Res, MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_COMM};
use crate::ffi::{self, is_in_place};
use crate::handles::{self, CommEntry, Handle, ReqEntry};
use crate::intercoll::{self, not_in_place};
use mpi::intercomm::{PROC_NULL, ROOT};

/// A nonblocking collective with its arguments resolved (checked, arrays
/// copied, datatypes and operation looked up): what starts it, once for
/// the nonblocking call, at every `MPI_Start` for a persistent one. It
/// reads the input buffers when it runs.
pub(crate) type Run = dyn Fn(&CommEntry) -> Res<mpi::Request<'static>>;

/// What resolves a nonblocking collective's arguments on its
/// communicator into its [`Run`].
pub(crate) type Starter<'f> = dyn FnOnce(&CommEntry) -> Res<Box<Run>> + 'f;

/// Starts a nonblocking collective on `comm` with `f` and writes its
/// request handle to `req`.
///
/// # Safety
///
/// A non-null `req` is valid for a write of one handle.
pub(crate) unsafe fn start(
    name: &str,
    comm: Handle,
    req: *mut Handle,
    f: Box<Starter<'_>>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if req.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let r = f(&c)?(&c)?;
        let h = handles::new_request(ReqEntry::Live(r, c.errh.get()))?;
        // SAFETY: non-null, valid for one handle by the caller's contract.
        unsafe { ffi::out(req, h) }
    })
}

/// A [`Run`] from a closure (which names the boxed type once).
fn run(f: impl Fn(&CommEntry) -> Res<mpi::Request<'static>> + 'static) -> Res<Box<Run>> {
    Ok(Box::new(f))
}

/// The [`Run`] of a process of the root's group, not the root, in a
/// rooted collective on an inter-communicator (it passed
/// `MPI_PROC_NULL`, §6.2.2): it touches no buffer but still starts the
/// collective, an empty one, which keeps its count of nonblocking
/// collectives (their tags) in step with the other processes'. Any
/// rooted collective's serves.
fn idle() -> Res<Box<Run>> {
    run(|c| Ok(c.comm.ibroadcast_into::<u8>(&mut [], PROC_NULL)?))
}

/// `MPI_Ibarrier` (§6.12.1).
///
/// # Safety
///
/// `req` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ibarrier(comm: Handle, req: *mut Handle) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe { start("MPI_Ibarrier", comm, req, ibarrier()) }
}

/// The start of `MPI_Ibarrier`, which has no arguments to resolve.
pub(crate) fn ibarrier() -> Box<Starter<'static>> {
    Box::new(|_| run(|c| Ok(c.comm.ibarrier()?)))
}

/// The start of `MPI_Ibcast`: a non-contiguous type is packed at the
/// root (the request holds the packed copy) and staged elsewhere.
///
/// # Safety
///
/// `buf` valid for `count` elements of `dt` whenever the request is
/// active.
pub(crate) unsafe fn ibcast<'f, C: Int + 'f>(
    buf: *mut c_void,
    count: C,
    dt: Handle,
    root: c_int,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        let inter = c.comm.is_inter();
        let root = match inter {
            true => intercoll::root_of(c, root)?,
            false => root_of(c, root)?,
        };
        if inter && root == PROC_NULL {
            return idle();
        }
        // SAFETY: a single piece reads no array.
        let side = unsafe { Spec::<C, C>::One(count, dt).side(buf, 1) }?;
        run(move |c| {
            // On an inter-communicator the root passes MPI_ROOT.
            let sends = if inter {
                root == ROOT
            } else {
                c.comm.rank() == root
            };
            if sends && !side.direct() {
                // SAFETY: the root's buffer holds `count` elements.
                let mut data = unsafe { side.input() }?.into_owned();
                // SAFETY: the vector's heap memory is held by the request
                // (`hold`) until the broadcast has let go of it, and
                // nothing else touches it.
                let b = unsafe { ffi::bytes_mut(data.as_mut_ptr().cast(), data.len()) }?;
                let r = c.comm.ibroadcast_into(b, root)?;
                return Ok(mpi::raw::hold(r, data));
            }
            // SAFETY: the caller's buffer holds `count` elements, the
            // request's until it completes (§6.12).
            unsafe {
                side.clone()
                    .start(|b, _, _| Ok(c.comm.ibroadcast_into(b, root)?))
            }
        })
    })
}

/// The start of `MPI_Ireduce`.
///
/// # Safety
///
/// As for `MPI_Ireduce`, whenever the request is active.
pub(crate) unsafe fn ireduce<'f, C: Int + 'f>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
    root: c_int,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            return ireduce_inter(c, sendbuf, recvbuf, count, dt, opr, root);
        }
        let root = root_of(c, root)?;
        if c.comm.rank() != root && is_in_place(sendbuf) {
            return Err(Code(MPI_ERR_BUFFER));
        }
        let red = Reduction::new(sendbuf, recvbuf, count, dt, opr)?;
        run(move |c| {
            // SAFETY: the buffers hold `count` elements where used.
            let send = unsafe { red.input.read() }?;
            let op = red.op.operation();
            if c.comm.rank() != root {
                return Ok(c.comm.ireduce_into(&send, None, op, root)?);
            }
            // SAFETY: the root's receive buffer holds `count` elements,
            // the request's until it completes.
            unsafe {
                red.out
                    .clone()
                    .start(|b, _, _| Ok(c.comm.ireduce_into(&send, Some(b), op, root)?))
            }
        })
    })
}

/// [`ireduce`] on an inter-communicator (§6.2.2): the root (`MPI_ROOT`)
/// receives the other group's reduction and contributes nothing.
#[allow(clippy::too_many_arguments)]
fn ireduce_inter<C: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
    root: c_int,
) -> Res<Box<Run>> {
    let root = intercoll::root_of(c, root)?;
    match root {
        PROC_NULL => idle(),
        ROOT => {
            // Its send buffer is not read.
            let red = Reduction::new(recvbuf, recvbuf, count, dt, opr)?;
            // SAFETY: the root's receive buffer holds `count` elements,
            // the request's until it completes.
            run(move |c| unsafe {
                let op = red.op.operation();
                red.out
                    .clone()
                    .start(|b, _, _| Ok(c.comm.ireduce_into(&[], Some(b), op, root)?))
            })
        }
        _ => {
            not_in_place(sendbuf)?;
            let red = Reduction::new(sendbuf, recvbuf, count, dt, opr)?;
            run(move |c| {
                // SAFETY: the send buffer holds `count` elements.
                let send = unsafe { red.input.read() }?;
                Ok(c.comm.ireduce_into(&send, None, red.op.operation(), root)?)
            })
        }
    }
}

/// Which all-process reduction [`iallreduce`] starts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllKind {
    Allreduce,
    Scan,
    Exscan,
}

/// The start of `MPI_Iallreduce`, `MPI_Iscan` and `MPI_Iexscan`: rank
/// 0's receive buffer is left as it is by an exclusive scan.
///
/// # Safety
///
/// As for `MPI_Iallreduce`, whenever the request is active.
pub(crate) unsafe fn iallreduce<'f, C: Int + 'f>(
    kind: AllKind,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            if kind != AllKind::Allreduce {
                // Undefined on inter-communicators (§6.2.2).
                return Err(explained(
                    MPI_ERR_COMM,
                    "this collective operation is not provided on inter-communicators",
                ));
            }
            not_in_place(sendbuf)?;
        }
        let red = Reduction::new(sendbuf, recvbuf, count, dt, opr)?;
        run(move |c| {
            // SAFETY: the buffers hold `count` elements.
            let send = unsafe { red.input.read() }?;
            let op = red.op.operation();
            let out = &red.out;
            if kind == AllKind::Exscan && c.comm.rank() == 0 && !out.direct() {
                let scratch = vec![0u8; out.len()];
                // SAFETY: the vector's heap memory is held by the request.
                let b =
                    unsafe { ffi::bytes_mut(scratch.as_ptr().cast_mut().cast(), scratch.len()) }?;
                let r = c.comm.iexscan_into(&send, b, op)?;
                return Ok(mpi::raw::hold(r, scratch));
            }
            // SAFETY: the receive buffer holds `count` elements, the
            // request's until it completes.
            unsafe {
                out.clone().start(|b, _, _| {
                    Ok(match kind {
                        AllKind::Allreduce => c.comm.iall_reduce_into(&send, b, op)?,
                        AllKind::Scan => c.comm.iscan_into(&send, b, op)?,
                        AllKind::Exscan => c.comm.iexscan_into(&send, b, op)?,
                    })
                })
            }
        })
    })
}

/// The start of `MPI_Ireduce_scatter(_block)`: `counts` or `block`
/// elements for every rank.
///
/// # Safety
///
/// As for `MPI_Ireduce_scatter`, the buffers whenever the request is
/// active.
pub(crate) unsafe fn ireduce_scatter<'f, C: Int + 'f>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Option<*const C>,
    block: C,
    dt: Handle,
    opr: Handle,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            not_in_place(sendbuf)?;
        }
        // On an inter-communicator too, `counts` are the local group's
        // (§6.10.1).
        let (p, r) = (c.comm.size() as usize, c.comm.rank() as usize);
        // SAFETY: by the caller's contract.
        let (red, bytes) =
            unsafe { scatter_parts(sendbuf, recvbuf, counts, block, dt, opr, p, r) }?;
        run(move |c| {
            // SAFETY: the send buffer (the receive one in place) holds the
            // whole input.
            let send = unsafe { red.input.read() }?;
            let op = red.op.operation();
            // SAFETY: the receive buffer holds this rank's block, the
            // request's until it completes.
            unsafe {
                red.out
                    .clone()
                    .start(|b, _, _| Ok(c.comm.ireduce_scatter_into(&send, b, &bytes, op)?))
            }
        })
    })
}

/// The start of `MPI_Igather(v)`: with `MPI_IN_PLACE` the root's
/// contribution is its block of the receive buffer.
///
/// # Safety
///
/// As for `MPI_Igatherv`, the buffers whenever the request is active.
pub(crate) unsafe fn igather<'f, C: Int + 'f, D: Int + 'f>(
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { igather_inter(c, sendbuf, send, recvbuf, recv, root) };
        }
        // SAFETY: the root's arrays are valid by the caller's contract.
        let (root, side) = unsafe { rooted(c, root, is_in_place(sendbuf), recvbuf, recv) }?;
        let Some(side) = side else {
            // SAFETY: a single piece reads no array.
            let input = unsafe { send.side(sendbuf, 1) }?;
            return run(move |c| {
                // SAFETY: the send buffer holds its elements.
                let data = unsafe { input.input() }?;
                Ok(c.comm.igather_varcount_into(&data, None, root)?)
            });
        };
        // SAFETY: a single piece reads no array.
        let input = unsafe { Input::new(sendbuf, send, 1, &side, Some(root as usize)) }?;
        run(move |c| {
            // SAFETY: the buffers hold their elements.
            let data = unsafe { input.read() }?;
            // SAFETY: the root's receive buffer covers every block, the
            // request's until it completes.
            unsafe {
                side.clone().start(|b, n, d| {
                    Ok(c.comm.igather_varcount_into(&data, Some((b, n, d)), root)?)
                })
            }
        })
    })
}

/// [`igather`] on an inter-communicator (§6.2.2): the root's blocks are
/// the other group's processes'.
///
/// # Safety
///
/// As for [`igather`], with the remote group's size of blocks.
unsafe fn igather_inter<C: Int, D: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> Res<Box<Run>> {
    let root = intercoll::root_of(c, root)?;
    if root == PROC_NULL {
        return idle();
    }
    not_in_place(sendbuf)?;
    if root == ROOT {
        // SAFETY: the root's arrays, by the caller's contract.
        let side = unsafe { recv.side(recvbuf, c.comm.target_size() as usize) }?;
        // SAFETY: the receive buffer covers every block, the request's
        // until it completes.
        return run(move |c| unsafe {
            side.clone().start(|b, n, d| {
                Ok(c.comm
                    .igather_varcount_into::<u8>(&[], Some((b, n, d)), root)?)
            })
        });
    }
    // SAFETY: a single piece reads no array.
    let input = unsafe { send.side(sendbuf, 1) }?;
    run(move |c| {
        // SAFETY: the send buffer holds its elements.
        let data = unsafe { input.input() }?;
        Ok(c.comm.igather_varcount_into(&data, None, root)?)
    })
}

/// The start of `MPI_Iscatter(v)`: with `MPI_IN_PLACE` the root keeps its
/// own block where it is (it is left out of the schedule).
///
/// # Safety
///
/// As for `MPI_Iscatterv`, the buffers whenever the request is active.
pub(crate) unsafe fn iscatter<'f, C: Int + 'f, D: Int + 'f>(
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { iscatter_inter(c, sendbuf, send, recvbuf, recv, root) };
        }
        let in_place = is_in_place(recvbuf);
        // SAFETY: the root's arrays are valid by the caller's contract.
        let (root, side) = unsafe { rooted(c, root, in_place, sendbuf, send) }?;
        // SAFETY: a single piece reads no array.
        let out = unsafe { recv.side(recvbuf, 1) };
        let Some(side) = side else {
            let out = out?;
            // SAFETY: the receive buffer holds its elements, the
            // request's until it completes.
            return run(move |c| unsafe {
                out.clone()
                    .start(|b, _, _| Ok(c.comm.iscatter_varcount_into(None, b, root)?))
            });
        };
        let out = if in_place { None } else { Some(out?) };
        run(move |c| {
            // SAFETY: the root's send buffer covers every block.
            let data = unsafe { side.input() }?;
            let Some(out) = &out else {
                let mut counts = side.counts().to_vec();
                counts[root as usize] = 0;
                let blocks = Some((&data[..], &counts[..], side.displs()));
                return Ok(c.comm.iscatter_varcount_into(blocks, &mut [], root)?);
            };
            let blocks = Some((&data[..], side.counts(), side.displs()));
            // SAFETY: the receive buffer holds its elements, the
            // request's until it completes.
            unsafe {
                out.clone()
                    .start(|b, _, _| Ok(c.comm.iscatter_varcount_into(blocks, b, root)?))
            }
        })
    })
}

/// [`iscatter`] on an inter-communicator (§6.2.2): the root's blocks are
/// the other group's processes'.
///
/// # Safety
///
/// As for [`iscatter`], with the remote group's size of blocks.
unsafe fn iscatter_inter<C: Int, D: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> Res<Box<Run>> {
    let root = intercoll::root_of(c, root)?;
    if root == PROC_NULL {
        return idle();
    }
    not_in_place(recvbuf)?;
    if root == ROOT {
        // SAFETY: the root's arrays, by the caller's contract.
        let side = unsafe { send.side(sendbuf, c.comm.target_size() as usize) }?;
        return run(move |c| {
            // SAFETY: the root's send buffer covers every block.
            let data = unsafe { side.input() }?;
            let blocks = Some((&data[..], side.counts(), side.displs()));
            Ok(c.comm.iscatter_varcount_into(blocks, &mut [], root)?)
        });
    }
    // SAFETY: a single piece reads no array.
    let out = unsafe { recv.side(recvbuf, 1) }?;
    // SAFETY: the receive buffer holds its elements, the request's until
    // it completes.
    run(move |c| unsafe {
        out.clone()
            .start(|b, _, _| Ok(c.comm.iscatter_varcount_into(None, b, root)?))
    })
}

/// The start of `MPI_Iallgather(v)`: with `MPI_IN_PLACE` a process's
/// contribution is its block of the receive buffer.
///
/// # Safety
///
/// As for `MPI_Iallgatherv`, the buffers whenever the request is active.
pub(crate) unsafe fn iallgather<'f, C: Int + 'f, D: Int + 'f>(
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            not_in_place(sendbuf)?;
        }
        // One block per remote process on an inter-communicator.
        let (p, me) = (c.comm.target_size() as usize, c.comm.rank() as usize);
        // SAFETY: the arrays are valid by the caller's contract.
        let (side, input) = unsafe {
            let side = recv.side(recvbuf, p)?;
            let input = Input::new(sendbuf, send, 1, &side, Some(me))?;
            (side, input)
        };
        run(move |c| {
            // SAFETY: the buffers hold their elements, the receive buffer
            // the request's until it completes.
            unsafe {
                let data = input.read()?;
                side.clone()
                    .start(|b, n, d| Ok(c.comm.iall_gather_varcount_into(&data, b, n, d)?))
            }
        })
    })
}

/// The start of `MPI_Ialltoall(v,w)`: `MPI_IN_PLACE` sends from a copy of
/// the receive buffer with its layout.
///
/// # Safety
///
/// As for `MPI_Ialltoallw`, the buffers whenever the request is active.
pub(crate) unsafe fn ialltoall<'f, C: Int + 'f, D: Int + 'f>(
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        if c.comm.is_inter() {
            not_in_place(sendbuf)?;
        }
        // One block per remote process on an inter-communicator.
        let p = c.comm.target_size() as usize;
        // SAFETY: the arrays are valid by the caller's contract.
        let (rside, input) = unsafe { alltoall_sides(p, sendbuf, send, recvbuf, recv) }?;
        run(move |c| {
            // SAFETY: the send buffer (the receive one, in place) holds
            // every block.
            let data = unsafe { input.read() }?;
            let (sc, sd) = (input.side().counts(), input.side().displs());
            // SAFETY: the receive buffer covers every block, the
            // request's until it completes.
            unsafe {
                rside.clone().start(|b, rc, rd| {
                    Ok(c.comm.iall_to_all_varcount_into(&data, sc, sd, b, rc, rd)?)
                })
            }
        })
    })
}
