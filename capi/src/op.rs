//! Reduction operations (MPI 5.0 §6.9.2 predefined, §6.9.5 user-defined;
//! handle values of the standard ABI, §20.3).
//!
//! A reduction reaches the `mpi` crate as a closure over byte slices
//! (`inout = in op inout`, element by element, the buffers holding whole
//! elements of the datatype: `coll.rs` gives the operation the datatype's
//! extent as its grain, so the collectives that cut long vectors into
//! blocks cut only between elements); this file supplies that closure for
//! each operation and datatype, and checks the pair is one §6.9.2 allows.
//! User functions get 16-byte-aligned copies of both buffers, as C code
//! may rely on natural alignment.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};
use std::rc::Rc;
use std::sync::Arc;

use crate::coll_stage::{reduction_side, with_c, Side};
use crate::datatype::{Datatype, Kind, TypeInfo};
use crate::error::{boundary, Code, Res, MPI_ERR_OP};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::op_types;
use crate::table::Table;

/// The user operations.
static OPS: Table<UserOp> = Table::new();

/// `MPI_User_function` (§6.9.5).
pub(crate) type UserFn = unsafe extern "C" fn(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    dt: *mut Handle,
);

/// `MPI_User_function_c` (§6.9.5, large counts).
pub(crate) type UserFnC =
    unsafe extern "C" fn(invec: *mut c_void, inoutvec: *mut c_void, len: *mut i64, dt: *mut Handle);

/// A Fortran user function (§19.1): the datatype is an integer handle.
pub(crate) type UserFnF = unsafe extern "C" fn(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    dt: *mut crate::fortran::Fint,
);

/// The function of a user operation, as `MPI_Op_create`,
/// `MPI_Op_create_c` or Fortran's `MPI_OP_CREATE` got it.
#[derive(Clone, Copy)]
pub(crate) enum UserFunc {
    Int(UserFn),
    Count(UserFnC),
    Fortran(UserFnF),
}

/// A user-defined operation.
pub(crate) struct UserOp {
    f: UserFunc,
    /// `commute` of `MPI_Op_create`: non-commutative operations are
    /// applied in rank order (the `mpi` crate's `Operation::commutes`).
    commute: bool,
}

/// The predefined operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    Sum,
    Min,
    Max,
    Prod,
    Band,
    Bor,
    Bxor,
    Land,
    Lor,
    Lxor,
    Minloc,
    Maxloc,
}

fn builtin(v: usize) -> Option<Builtin> {
    use Builtin::*;
    Some(match v {
        0x21 => Sum,
        0x22 => Min,
        0x23 => Max,
        0x24 => Prod,
        0x28 => Band,
        0x29 => Bor,
        0x2a => Bxor,
        0x30 => Land,
        0x31 => Lor,
        0x32 => Lxor,
        0x38 => Minloc,
        0x39 => Maxloc,
        _ => return None,
    })
}

/// A reduction over byte buffers of whole elements.
pub(crate) type Reducer = Box<dyn Fn(&[u8], &mut [u8])>;

/// Element types the predefined operations work on.
trait Elem: Copy + PartialOrd {
    const N: usize;
    fn load(b: &[u8]) -> Self;
    fn store(self, b: &mut [u8]);
    fn sum(a: Self, b: Self) -> Self;
    fn prod(a: Self, b: Self) -> Self;
    /// Bitwise and logical operations (`None` for floats).
    fn bits(op: Builtin, a: Self, b: Self) -> Option<Self>;
}

/// The byte-level part of an [`Elem`] impl, the same for every type.
macro_rules! ne_bytes {
    ($t:ty) => {
        const N: usize = size_of::<$t>();
        fn load(b: &[u8]) -> Self {
            let mut a = [0u8; size_of::<$t>()];
            a.copy_from_slice(b);
            <$t>::from_ne_bytes(a)
        }
        fn store(self, b: &mut [u8]) {
            b.copy_from_slice(&self.to_ne_bytes())
        }
    };
}

macro_rules! elem {
    (int $($t:ty),*) => {$(
        impl Elem for $t {
            ne_bytes!($t);
            fn sum(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn prod(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            fn bits(op: Builtin, a: Self, b: Self) -> Option<Self> {
                Some(match op {
                    Builtin::Band => a & b,
                    Builtin::Bor => a | b,
                    Builtin::Bxor => a ^ b,
                    Builtin::Land => <$t>::from(a != 0 && b != 0),
                    Builtin::Lor => <$t>::from(a != 0 || b != 0),
                    Builtin::Lxor => <$t>::from((a != 0) != (b != 0)),
                    _ => return None,
                })
            }
        }
    )*};
    (float $($t:ty),*) => {$(
        impl Elem for $t {
            ne_bytes!($t);
            fn sum(a: Self, b: Self) -> Self { a + b }
            fn prod(a: Self, b: Self) -> Self { a * b }
            fn bits(_: Builtin, _: Self, _: Self) -> Option<Self> { None }
        }
    )*};
}
elem!(int i8, u8, i16, u16, i32, u32, i64, u64);
elem!(float f32, f64);

fn apply<T: Elem>(op: Builtin, input: &[u8], inout: &mut [u8]) {
    for (x, y) in input.chunks_exact(T::N).zip(inout.chunks_exact_mut(T::N)) {
        let (a, b) = (T::load(x), T::load(y));
        let r = match op {
            Builtin::Sum => T::sum(a, b),
            Builtin::Prod => T::prod(a, b),
            Builtin::Max if a > b => a,
            Builtin::Min if a < b => a,
            Builtin::Max | Builtin::Min => b,
            _ => T::bits(op, a, b).unwrap_or(b),
        };
        r.store(y);
    }
}

/// Whether §6.9.2 allows `op` on elements of `kind` (and o2g supports it).
fn allowed(op: Builtin, kind: Kind) -> bool {
    use Builtin::*;
    use Kind::*;
    let int = matches!(kind, I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64);
    match op {
        Sum | Prod | Max | Min => int || matches!(kind, F32 | F64),
        Land | Lor | Lxor => int || kind == Bool,
        Band | Bor | Bxor => int || kind == Byte,
        // Only on the pair types (`op_types.rs`).
        Minloc | Maxloc => false,
    }
}

fn builtin_reducer(op: Builtin, kind: Kind) -> Reducer {
    Box::new(move |a, b| apply_builtin(op, kind, a, b))
}

/// Predefined operation `op` on elements of `kind`.
fn apply_builtin(op: Builtin, kind: Kind, a: &[u8], b: &mut [u8]) {
    use Kind::*;
    match kind {
        I8 => apply::<i8>(op, a, b),
        U8 | Bool | Byte => apply::<u8>(op, a, b),
        I16 => apply::<i16>(op, a, b),
        U16 => apply::<u16>(op, a, b),
        I32 => apply::<i32>(op, a, b),
        U32 => apply::<u32>(op, a, b),
        I64 => apply::<i64>(op, a, b),
        U64 => apply::<u64>(op, a, b),
        F32 => apply::<f32>(op, a, b),
        F64 => apply::<f64>(op, a, b),
        Opaque => {}
    }
}

/// Bytes into 16-byte-aligned storage.
fn aligned(b: &[u8]) -> Vec<u128> {
    b.chunks(16)
        .map(|c| {
            let mut a = [0u8; 16];
            a[..c.len()].copy_from_slice(c);
            u128::from_ne_bytes(a)
        })
        .collect()
}

/// Calls user function `f` on `len` elements of `dt` at `a` (input) and
/// `b` (input and output).
///
/// # Safety
///
/// `a` and `b` hold `len` elements of `dt` each, in its layout, aligned
/// for its elements.
unsafe fn call_user(f: UserFunc, a: *mut c_void, b: *mut c_void, len: usize, dt: Handle) {
    let mut dt = dt;
    // SAFETY: `f` is the user's MPI_User_function(_c) or Fortran
    // subroutine (the datatype converted to its integer); it gets two
    // buffers of `len` whole elements of `dt` (the caller's contract),
    // and valid pointers to `len` and `dt`, as §6.9.5 says.
    unsafe {
        match f {
            UserFunc::Int(f) => {
                let mut n = c_int::try_from(len).unwrap_or(c_int::MAX);
                f(a, b, &mut n, &mut dt)
            }
            UserFunc::Count(f) => {
                let mut n = i64::try_from(len).unwrap_or(i64::MAX);
                f(a, b, &mut n, &mut dt)
            }
            UserFunc::Fortran(f) => {
                let mut n = c_int::try_from(len).unwrap_or(c_int::MAX);
                let mut fdt = crate::fortran::c2f(dt);
                f(a, b, &mut n, &mut fdt)
            }
        }
    }
}

fn user_reducer(f: UserFunc, t: TypeInfo, dt: Handle) -> Reducer {
    Box::new(move |input, inout| {
        let len = match t.extent {
            0 => 0,
            e => input.len() / e,
        };
        let mut a = aligned(input);
        let mut b = aligned(inout);
        let (pa, pb) = (a.as_mut_ptr().cast(), b.as_mut_ptr().cast());
        // SAFETY: aligned copies of `len` whole elements each, at least
        // as long as `input`.
        unsafe { call_user(f, pa, pb, len, dt) };
        for (dst, src) in inout.chunks_mut(16).zip(&b) {
            dst.copy_from_slice(&src.to_ne_bytes()[..dst.len()]);
        }
    })
}

/// A user operation on a non-contiguous datatype, whose elements a
/// staged reduction holds packed: they are unpacked into 16-byte-aligned
/// buffers in the type's layout, the function runs on those, and its
/// result is packed back.
fn staged_user_reducer(f: UserFunc, d: Arc<Datatype>, dt: Handle) -> Reducer {
    Box::new(move |input, inout| {
        let map = &d.map;
        let n = input.len().checked_div(map.size()).unwrap_or(0);
        if n == 0 {
            return;
        }
        // The bytes the n elements' data span, from `lo`.
        let last = (n as isize - 1) * map.extent();
        let lo = map.true_lb() + last.min(0);
        let span = (map.true_extent() + last.abs()) as usize;
        let mut a = vec![0u128; span.div_ceil(16)];
        let mut b = vec![0u128; span.div_ceil(16)];
        let pa = ffi::offset(a.as_mut_ptr().cast(), -lo).cast_mut().cast();
        let pb = ffi::offset(b.as_mut_ptr().cast(), -lo).cast_mut().cast();
        map.for_each_run(n, input.len(), |off, r| {
            // SAFETY: every run of the n elements lies in the span the
            // two buffers cover from `lo`.
            unsafe {
                ffi::write_at(pa, off, &input[r.clone()]);
                ffi::write_at(pb, off, &inout[r]);
            }
        });
        // SAFETY: the buffers hold the n elements in the type's layout.
        unsafe { call_user(f, pa, pb, n, dt) };
        map.for_each_run(n, inout.len(), |off, r| {
            // SAFETY: as above.
            unsafe { ffi::read_at(pb, off, &mut inout[r]) }
        });
    })
}

/// The reduction `op` over elements of datatype `t` (handle `dt`):
/// `MPI_ERR_OP` for an unknown operation or a pair §6.9.2 forbids
/// (`MPI_REPLACE` and `MPI_NO_OP` are for one-sided accumulates only,
/// §12.3.4).
pub(crate) fn reducer(op: Handle, t: TypeInfo, dt: Handle) -> Res<Reducer> {
    func(op, t, dt).map(Func::boxed)
}

/// An operation as [`reducer`] resolves it: a predefined one on a plain
/// element type is applied directly, everything else through a closure.
enum Func {
    Builtin(Builtin, Kind),
    Other(Reducer),
}

/// [`reducer`], without boxing a predefined operation.
fn func(op: Handle, t: TypeInfo, dt: Handle) -> Res<Func> {
    let v = handles::value(op);
    if let Some(b) = builtin(v) {
        let v = handles::value(dt);
        let v = crate::datatype::f90_named(v).unwrap_or(v);
        if let Some(special) = op_types::special(v) {
            return op_types::reducer(b, special)
                .map(Func::Other)
                .ok_or(Code(MPI_ERR_OP));
        }
        if !allowed(b, t.kind) {
            return Err(Code(MPI_ERR_OP));
        }
        return Ok(Func::Builtin(b, t.kind));
    }
    let user = OPS.get(op).ok_or(Code(MPI_ERR_OP))?;
    Ok(Func::Other(user_reducer(user.f, t, dt)))
}

/// Whether `op` commutes: every predefined operation of a reduction
/// does; a user operation as `MPI_Op_create` said (`MPI_ERR_OP` for a
/// handle that is neither).
pub(crate) fn commutes(op: Handle) -> Res<bool> {
    if builtin(handles::value(op)).is_some() {
        return Ok(true);
    }
    Ok(OPS.get(op).ok_or(Code(MPI_ERR_OP))?.commute)
}

/// `opr` over the elements of `dt` in a reduction's buffer `side`, and
/// the bytes of one element there: the extent in the user's memory, the
/// size in packed data. A predefined operation reduces a staged
/// (non-contiguous) derived type over its packed primitive elements, so
/// it needs one homogeneous type; a user function gets the elements in
/// the type's layout.
pub(crate) fn reducer_for(side: &Side, dt: Handle, opr: Handle) -> Res<(Reducer, usize)> {
    let (f, grain) = func_for(side, dt, opr)?;
    Ok((f.boxed(), grain))
}

/// [`reducer_for`], without boxing a predefined operation.
fn func_for(side: &Side, dt: Handle, opr: Handle) -> Res<(Func, usize)> {
    let d = crate::datatype::resolve_committed(dt)?;
    let mut t = d.info();
    if !side.direct() {
        t.extent = t.size;
        if let Some(user) = OPS.get(opr) {
            return Ok((Func::Other(staged_user_reducer(user.f, d, dt)), t.size));
        }
    }
    let f = func(opr, t, dt).map_err(|e| match (&d.contents, t.kind) {
        (Some(_), Kind::Opaque) => crate::error::explained(
            MPI_ERR_OP,
            "a predefined operation on a derived datatype needs one primitive type throughout",
        ),
        _ => e,
    })?;
    Ok((f, t.extent))
}

impl Func {
    fn boxed(self) -> Reducer {
        match self {
            Func::Builtin(b, kind) => builtin_reducer(b, kind),
            Func::Other(f) => f,
        }
    }
}

/// A resolved operation, as [`Resolved`] keeps it: shared, so that a
/// persistent reduction and its copies use one closure.
#[derive(Clone)]
enum SharedFunc {
    Builtin(Builtin, Kind),
    Other(Rc<Reducer>),
}

/// A reduction's operation resolved once from its handles (a persistent
/// one's at `MPI_*_init`, so that freeing the operation or the datatype
/// afterwards changes nothing, §6.13): [`reducer_for`] with its
/// commutativity and the element's bytes as its grain (a reduction that
/// cuts long vectors into blocks cuts only between elements). A
/// predefined operation on a plain type is applied without a closure
/// (no allocation per call); it is itself the `mpi` crate's operation
/// for blocking collectives ([`mpi::Operation`]).
#[derive(Clone)]
pub(crate) struct Resolved {
    f: SharedFunc,
    grain: usize,
    commutes: bool,
}

impl Resolved {
    pub(crate) fn new(side: &Side, dt: Handle, opr: Handle) -> Res<Self> {
        let (f, grain) = func_for(side, dt, opr)?;
        let f = match f {
            Func::Builtin(b, kind) => SharedFunc::Builtin(b, kind),
            Func::Other(f) => SharedFunc::Other(Rc::new(f)),
        };
        Ok(Self {
            f,
            grain,
            commutes: commutes(opr)?,
        })
    }

    /// The `mpi` crate's operation on bytes, owned, for one nonblocking
    /// or persistent collective.
    pub(crate) fn operation(&self) -> mpi::UserOperation<Reducer> {
        let f: Reducer = match &self.f {
            SharedFunc::Builtin(b, kind) => builtin_reducer(*b, *kind),
            SharedFunc::Other(f) => {
                let f = f.clone();
                Box::new(move |a, b| f(a, b))
            }
        };
        let op = if self.commutes {
            mpi::UserOperation::commutative(f)
        } else {
            mpi::UserOperation::non_commutative(f)
        };
        op.with_grain(self.grain)
    }
}

impl mpi::Operation<u8> for Resolved {
    fn apply(&self, input: &[u8], inout: &mut [u8]) {
        match &self.f {
            SharedFunc::Builtin(b, kind) => apply_builtin(*b, *kind, input, inout),
            SharedFunc::Other(f) => f(input, inout),
        }
    }

    fn grain(&self) -> usize {
        self.grain
    }

    fn commutes(&self) -> bool {
        self.commutes
    }
}

/// `MPI_Op_create` and `MPI_Op_create_c`.
///
/// # Safety
///
/// `op` must be valid for a write of one handle.
pub(crate) unsafe fn create(
    name: &str,
    f: Option<UserFunc>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let f = f.ok_or(Code(crate::error::MPI_ERR_ARG))?;
        let h = OPS.insert(UserOp {
            f,
            commute: commute != 0,
        });
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(op, h) }
    })
}

/// `MPI_Op_create` (§6.9.5): `commute = 0` makes an operation the
/// collectives apply in rank order.
///
/// # Safety
///
/// `user_fn` must be a valid `MPI_User_function` (or null, rejected);
/// `op` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Op_create(
    user_fn: Option<UserFn>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is create's.
    unsafe { create("MPI_Op_create", user_fn.map(UserFunc::Int), commute, op) }
}

/// `MPI_Op_create_c` (§6.9.5): `MPI_Op_create` with an
/// `MPI_User_function_c`, which gets its length as an `MPI_Count`.
///
/// # Safety
///
/// As for `MPI_Op_create`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Op_create_c(
    user_fn: Option<UserFnC>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is create's.
    unsafe { create("MPI_Op_create_c", user_fn.map(UserFunc::Count), commute, op) }
}

/// `MPI_Op_free` (§6.9.5): frees a user operation and sets the handle to
/// `MPI_OP_NULL`; predefined operations cannot be freed.
///
/// # Safety
///
/// `op` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Op_free(op: *mut Handle) -> c_int {
    boundary("MPI_Op_free", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(op) }?;
        OPS.remove(*h).ok_or(Code(MPI_ERR_OP))?;
        *h = handles::handle(0x20);
        Ok(())
    })
}

/// `MPI_Op_commutative` (§6.9.5): whether `op` commutes. Every
/// predefined operation does but `MPI_REPLACE` and `MPI_NO_OP`.
///
/// # Safety
///
/// `commute` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
    boundary("MPI_Op_commutative", std::ptr::null_mut(), || {
        let c = match handles::value(op) {
            // MPI_REPLACE, MPI_NO_OP.
            0x3c | 0x3d => false,
            _ => commutes(op)?,
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(commute, c_int::from(c)) }
    })
}

with_c! {
    /// `MPI_Reduce_local` (§6.9.7): `inoutbuf = inbuf op inoutbuf`,
    /// element by element, with no communication; a non-contiguous type
    /// is packed, reduced and unpacked into `inoutbuf`'s layout.
    ///
    /// # Safety
    ///
    /// `inbuf` valid for reading and `inoutbuf` for reading and writing
    /// `count` elements of `dt`; the two do not overlap.
    fn MPI_Reduce_local, MPI_Reduce_local_c(
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: Count,
        dt: Handle,
        opr: Handle,
    ) as name => {
        boundary(name, std::ptr::null_mut(), || {
            let out = reduction_side(inoutbuf, count, dt)?;
            let (f, _) = reducer_for(&out, dt, opr)?;
            // SAFETY: the caller's buffers hold `count` elements each.
            let a = unsafe { reduction_side(inbuf, count, dt)?.input() }?;
            let now = if out.direct() {
                None
            } else {
                // SAFETY: as above.
                Some(unsafe { out.input() }?.into_owned())
            };
            // SAFETY: as above; the buffers do not overlap.
            unsafe {
                out.run(|b, _, _| {
                    if let Some(now) = now {
                        b.copy_from_slice(&now);
                    }
                    f(&a, b);
                    Ok(())
                })
            }
        })
    }
}
