// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C helpers in `o2g_shim.c`, in one place.
//!
//! Keep in step with `o2g_shim.h`. The safe wrappers live in `sock.rs`; this
//! file only declares.

use kernel::bindings;

/// A socket's `sk_data_ready` or `sk_state_change` callback.
pub(crate) type ReadyFn = unsafe extern "C" fn(sk: *mut bindings::sock);

extern "C" {
    pub(crate) fn o2g_shim_sizeof_sock() -> usize;

    pub(crate) fn o2g_sk_is_tcp(sk: *const bindings::sock) -> bool;
    pub(crate) fn o2g_sk_is_established(sk: *const bindings::sock) -> bool;
    pub(crate) fn o2g_sk_has_ulp(sk: *const bindings::sock) -> bool;

    pub(crate) fn o2g_lock_sock(sk: *mut bindings::sock);
    pub(crate) fn o2g_release_sock(sk: *mut bindings::sock);

    pub(crate) fn o2g_sk_callback_write_lock(sk: *mut bindings::sock);
    pub(crate) fn o2g_sk_callback_write_unlock(sk: *mut bindings::sock);
    pub(crate) fn o2g_sk_callback_read_lock(sk: *mut bindings::sock);
    pub(crate) fn o2g_sk_callback_read_unlock(sk: *mut bindings::sock);

    pub(crate) fn o2g_sk_user_data(sk: *const bindings::sock) -> *mut core::ffi::c_void;
    pub(crate) fn o2g_sk_set_user_data(sk: *mut bindings::sock, data: *mut core::ffi::c_void);
    pub(crate) fn o2g_sk_data_ready(sk: *const bindings::sock) -> Option<ReadyFn>;
    pub(crate) fn o2g_sk_set_data_ready(sk: *mut bindings::sock, f: Option<ReadyFn>);
    pub(crate) fn o2g_sk_state_change(sk: *const bindings::sock) -> Option<ReadyFn>;
    pub(crate) fn o2g_sk_set_state_change(sk: *mut bindings::sock, f: Option<ReadyFn>);
    pub(crate) fn o2g_sk_write_space(sk: *const bindings::sock) -> Option<ReadyFn>;
    pub(crate) fn o2g_sk_set_write_space(sk: *mut bindings::sock, f: Option<ReadyFn>);

    pub(crate) fn o2g_send_bytes(
        sk: *mut bindings::sock,
        buf: *const core::ffi::c_void,
        len: usize,
        more: bool,
    ) -> core::ffi::c_int;
    pub(crate) fn o2g_send_pages(
        sk: *mut bindings::sock,
        pages: *mut *mut core::ffi::c_void,
        offset: usize,
        len: usize,
        zc: *mut bindings::ubuf_info,
    ) -> core::ffi::c_int;
    pub(crate) fn o2g_zc_alloc(
        done: Option<unsafe extern "C" fn(ctx: *mut core::ffi::c_void)>,
        ctx: *mut core::ffi::c_void,
    ) -> *mut bindings::ubuf_info;
    pub(crate) fn o2g_zc_put(ubuf: *mut bindings::ubuf_info);
    pub(crate) fn o2g_sk_via_loopback(sk: *mut bindings::sock) -> bool;

    pub(crate) fn o2g_sk_attach_ulp(sk: *mut bindings::sock);
    pub(crate) fn o2g_sk_detach_ulp(sk: *mut bindings::sock);

    pub(crate) fn o2g_sock_owned_by_user(sk: *const bindings::sock) -> bool;
    pub(crate) fn o2g_in_task() -> bool;
    pub(crate) fn o2g_sk_rcv_shutdown(sk: *const bindings::sock) -> bool;
    pub(crate) fn o2g_tcp_urgent_pending(sk: *const bindings::sock) -> bool;
    pub(crate) fn o2g_tcp_ack_now(sk: *mut bindings::sock);

    pub(crate) fn o2g_cond_resched();
    pub(crate) fn o2g_next_online_cpu() -> core::ffi::c_int;
    pub(crate) fn o2g_rfs_enabled() -> bool;
    pub(crate) fn o2g_sk_record_flow_on(sk: *const bindings::sock, cpu: core::ffi::c_uint);
    pub(crate) fn o2g_sk_forget_flow(sk: *const bindings::sock);

    // `struct mm_struct` and `struct page` travel as opaque pointers: their
    // bindings are not FFI-safe types for an `extern` block.
    pub(crate) fn o2g_charge_pinned(npages: core::ffi::c_ulong) -> *mut core::ffi::c_void;
    pub(crate) fn o2g_uncharge_pinned(mm: *mut core::ffi::c_void, npages: core::ffi::c_ulong);
    pub(crate) fn o2g_alloc_charged_page() -> *mut core::ffi::c_void;

    pub(crate) fn o2g_spin_lock_bh(lock: *mut bindings::spinlock_t);
    pub(crate) fn o2g_spin_unlock_bh(lock: *mut bindings::spinlock_t);
    pub(crate) fn o2g_spin_trylock_bh(lock: *mut bindings::spinlock_t) -> core::ffi::c_int;
}

// Exported by net/ipv4/tcp.c but declared in net/tcp.h, which the 7.2
// bindings do not include; the prototype is stable since 2.6
// (`int tcp_read_sock(struct sock *, read_descriptor_t *, sk_read_actor_t)`).
extern "C" {
    pub(crate) fn tcp_read_sock(
        sk: *mut bindings::sock,
        desc: *mut bindings::read_descriptor_t,
        actor: bindings::sk_read_actor_t,
    ) -> core::ffi::c_int;
}

/// Size of the kernel's `struct sock`, from the C shim.
pub(crate) fn sizeof_sock() -> usize {
    // SAFETY: The helper only returns a compile-time constant.
    unsafe { o2g_shim_sizeof_sock() }
}
