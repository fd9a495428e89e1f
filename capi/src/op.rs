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

use crate::datatype::{Kind, TypeInfo};
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

/// A user-defined operation.
pub(crate) struct UserOp {
    f: UserFn,
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
    use Kind::*;
    match kind {
        I8 => Box::new(move |a, b| apply::<i8>(op, a, b)),
        U8 | Bool | Byte => Box::new(move |a, b| apply::<u8>(op, a, b)),
        I16 => Box::new(move |a, b| apply::<i16>(op, a, b)),
        U16 => Box::new(move |a, b| apply::<u16>(op, a, b)),
        I32 => Box::new(move |a, b| apply::<i32>(op, a, b)),
        U32 => Box::new(move |a, b| apply::<u32>(op, a, b)),
        I64 => Box::new(move |a, b| apply::<i64>(op, a, b)),
        U64 => Box::new(move |a, b| apply::<u64>(op, a, b)),
        F32 => Box::new(move |a, b| apply::<f32>(op, a, b)),
        F64 => Box::new(move |a, b| apply::<f64>(op, a, b)),
        Opaque => Box::new(|_, _| {}),
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

fn user_reducer(f: UserFn, t: TypeInfo, dt: Handle) -> Reducer {
    Box::new(move |input, inout| {
        let mut len = match t.extent {
            0 => 0,
            e => c_int::try_from(input.len() / e).unwrap_or(c_int::MAX),
        };
        let mut a = aligned(input);
        let mut b = aligned(inout);
        let mut dt = dt;
        // SAFETY: `f` is the user's MPI_User_function; it gets two buffers
        // of `len` whole elements of `dt` (aligned, at least as long as
        // `input`), and valid pointers to `len` and `dt`, as §6.9.5 says.
        unsafe {
            f(
                a.as_mut_ptr().cast(),
                b.as_mut_ptr().cast(),
                &mut len,
                &mut dt,
            )
        };
        for (dst, src) in inout.chunks_mut(16).zip(&b) {
            dst.copy_from_slice(&src.to_ne_bytes()[..dst.len()]);
        }
    })
}

/// The reduction `op` over elements of datatype `t` (handle `dt`):
/// `MPI_ERR_OP` for an unknown operation or a pair §6.9.2 forbids
/// (`MPI_REPLACE` and `MPI_NO_OP` are for one-sided accumulates only,
/// §12.3.4).
pub(crate) fn reducer(op: Handle, t: TypeInfo, dt: Handle) -> Res<Reducer> {
    let v = handles::value(op);
    if let Some(b) = builtin(v) {
        if let Some(special) = op_types::special(handles::value(dt)) {
            return op_types::reducer(b, special).ok_or(Code(MPI_ERR_OP));
        }
        if !allowed(b, t.kind) {
            return Err(Code(MPI_ERR_OP));
        }
        return Ok(builtin_reducer(b, t.kind));
    }
    let user = OPS.get(op).ok_or(Code(MPI_ERR_OP))?;
    Ok(user_reducer(user.f, t, dt))
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

/// `op` over `count` elements of `dt` as the `mpi` crate's operation on
/// bytes, with its commutativity and the datatype's extent as its grain
/// (a reduction that cuts long vectors into blocks cuts only between
/// elements); also the byte length of the elements.
pub(crate) fn operation(
    count: c_int,
    dt: Handle,
    opr: Handle,
) -> Res<(usize, mpi::UserOperation<Reducer>)> {
    let (len, t) = crate::datatype::buffer_len(count, dt)?;
    let f = reducer(opr, t, dt)?;
    let op = if commutes(opr)? {
        mpi::UserOperation::commutative(f)
    } else {
        mpi::UserOperation::non_commutative(f)
    };
    Ok((len, op.with_grain(t.extent)))
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
    boundary("MPI_Op_create", std::ptr::null_mut(), || {
        let f = user_fn.ok_or(Code(crate::error::MPI_ERR_ARG))?;
        let h = OPS.insert(UserOp {
            f,
            commute: commute != 0,
        });
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(op, h) }
    })
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

/// `MPI_Reduce_local` (§6.9.7): `inoutbuf = inbuf op inoutbuf`, element
/// by element, with no communication.
///
/// # Safety
///
/// `inbuf` valid for reading and `inoutbuf` for reading and writing
/// `count` elements of `dt`; the two do not overlap.
#[export]
pub(crate) unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
) -> c_int {
    boundary("MPI_Reduce_local", std::ptr::null_mut(), || {
        let (len, t) = crate::datatype::buffer_len(count, dt)?;
        let f = reducer(opr, t, dt)?;
        // SAFETY: the caller's buffers hold `count` elements each.
        let (a, b) = unsafe { (ffi::bytes(inbuf, len)?, ffi::bytes_mut(inoutbuf, len)?) };
        f(a, b);
        Ok(())
    })
}
