//! Reduction operations (MPI 4.1 §6.9.2 predefined, §6.9.5 user-defined).
//!
//! Every operation is taken to be associative. An operation that says it
//! is commutative ([`Operation::commutes`], the default) lets the
//! collectives combine partial results in whatever order their algorithm
//! meets them; one that is not (a user operation made with
//! [`UserOperation::non_commutative`], `MPI_Op_create` with `commute =
//! 0`) is applied in rank order, `x0 ∘ x1 ∘ … ∘ x(p−1)`, as §6.9.5
//! requires: the collectives then only ever combine the result of a
//! contiguous range of ranks with that of the range just above it (see
//! [`crate::collective`]). Integer sums and products wrap on overflow (C
//! MPI leaves signed overflow undefined; Rust must not panic on it).

use crate::datatype::Equivalence;

/// Combines an incoming vector into an accumulator, element-wise:
/// `inout[i] = op(input[i], inout[i])`. For an operation that does not
/// commute, `input` is always the left operand: the result of lower ranks
/// than `inout`'s.
pub trait Operation<T> {
    /// Applies the operation; both slices have the same length.
    fn apply(&self, input: &[T], inout: &mut [T]);

    /// How many consecutive items of `T` make one element of the
    /// operation, which must stay together: a reduction that cuts its
    /// vector into blocks (see [`crate::collective`]) cuts only at
    /// multiples of this many items, so `apply` gets whole elements, and
    /// never cuts a vector whose length is not such a multiple. 1, the
    /// default, lets it cut anywhere; a binding that reduces the raw bytes
    /// of its own datatype gives the datatype's extent in bytes. 0 counts
    /// as 1.
    fn grain(&self) -> usize {
        1
    }

    /// Whether `op(a, b) = op(b, a)`: `true` (the default) lets the
    /// collectives combine in any order; `false` makes them combine in
    /// rank order (§6.9.5).
    fn commutes(&self) -> bool {
        true
    }
}

/// The predefined operations `MPI_SUM`, `MPI_PROD`, `MPI_MAX`, `MPI_MIN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemOperation {
    /// `MPI_SUM`.
    Sum,
    /// `MPI_PROD`.
    Product,
    /// `MPI_MAX`.
    Max,
    /// `MPI_MIN`.
    Min,
}

/// Element types the predefined operations accept.
pub trait Arithmetic: Equivalence + PartialOrd {
    /// `a + b` (wrapping for integers).
    fn add(a: Self, b: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn mul(a: Self, b: Self) -> Self;
}

macro_rules! arithmetic_int {
    ($($t:ty),*) => {$(
        impl Arithmetic for $t {
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        }
    )*};
}
arithmetic_int!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

macro_rules! arithmetic_float {
    ($($t:ty),*) => {$(
        impl Arithmetic for $t {
            fn add(a: Self, b: Self) -> Self { a + b }
            fn mul(a: Self, b: Self) -> Self { a * b }
        }
    )*};
}
arithmetic_float!(f32, f64);

impl<T: Arithmetic> Operation<T> for SystemOperation {
    fn apply(&self, input: &[T], inout: &mut [T]) {
        for (x, acc) in input.iter().zip(inout.iter_mut()) {
            *acc = match self {
                SystemOperation::Sum => T::add(*x, *acc),
                SystemOperation::Product => T::mul(*x, *acc),
                SystemOperation::Max if *x > *acc => *x,
                SystemOperation::Min if *x < *acc => *x,
                SystemOperation::Max | SystemOperation::Min => *acc,
            };
        }
    }
}

/// A user-defined operation (`MPI_Op_create`, §6.9.5) from a closure
/// `f(input, inout)` that must be associative, and commutative unless
/// made with [`UserOperation::non_commutative`].
pub struct UserOperation<F> {
    f: F,
    grain: usize,
    commutes: bool,
}

impl<F> UserOperation<F> {
    /// Wraps a commutative, associative element-wise combination.
    pub fn commutative(f: F) -> Self {
        Self {
            f,
            grain: 1,
            commutes: true,
        }
    }

    /// Wraps an associative element-wise combination that need not
    /// commute: `f(input, inout)` sets `inout = input ∘ inout`, and the
    /// collectives apply it in rank order (`MPI_Op_create` with
    /// `commute = 0`, §6.9.5).
    pub fn non_commutative(f: F) -> Self {
        Self {
            f,
            grain: 1,
            commutes: false,
        }
    }

    /// The same operation on elements of `grain` consecutive items each
    /// (see [`Operation::grain`]): `f` is only ever given whole elements
    /// of a vector whose length is a multiple of `grain`.
    #[must_use]
    pub fn with_grain(self, grain: usize) -> Self {
        Self { grain, ..self }
    }
}

impl<T, F: Fn(&[T], &mut [T])> Operation<T> for UserOperation<F> {
    fn apply(&self, input: &[T], inout: &mut [T]) {
        (self.f)(input, inout)
    }

    fn grain(&self) -> usize {
        self.grain
    }

    fn commutes(&self) -> bool {
        self.commutes
    }
}

impl<T, O: Operation<T> + ?Sized> Operation<T> for Box<O> {
    fn apply(&self, input: &[T], inout: &mut [T]) {
        (**self).apply(input, inout)
    }

    fn grain(&self) -> usize {
        (**self).grain()
    }

    fn commutes(&self) -> bool {
        (**self).commutes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_ops() {
        let mut acc = [1i32, 5, i32::MAX];
        SystemOperation::Sum.apply(&[2, 2, 1], &mut acc);
        assert_eq!(acc, [3, 7, i32::MIN]);
        let mut acc = [1.5f64, -2.0];
        SystemOperation::Max.apply(&[1.0, 3.0], &mut acc);
        assert_eq!(acc, [1.5, 3.0]);
        SystemOperation::Min.apply(&[1.0, 3.0], &mut acc);
        assert_eq!(acc, [1.0, 3.0]);
        SystemOperation::Product.apply(&[2.0, 2.0], &mut acc);
        assert_eq!(acc, [2.0, 6.0]);
        let bor = UserOperation::commutative(|a: &[u8], b: &mut [u8]| {
            b.iter_mut().zip(a).for_each(|(b, a)| *b |= a)
        });
        let mut acc = [1u8];
        bor.apply(&[4], &mut acc);
        assert_eq!(acc, [5]);
        assert_eq!(Operation::<u8>::grain(&bor), 1);
        assert_eq!(Operation::<u8>::grain(&bor.with_grain(24)), 24);
        assert_eq!(Operation::<f64>::grain(&SystemOperation::Sum), 1);
        assert!(Operation::<f64>::commutes(&SystemOperation::Sum));
        let left = UserOperation::non_commutative(|a: &[u8], b: &mut [u8]| b[0] = a[0]);
        assert!(!Operation::<u8>::commutes(&left));
    }
}
