/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for what the 7.2 Rust kernel crate cannot reach: struct sock is
 * opaque to Rust (net/sock.h is not in bindings_helper.h), and lock_sock(),
 * release_sock() and the sk_callback_lock rwlock have no bindings. Each helper
 * is one statement; all decisions are made on the Rust side (sock.rs,
 * conn.rs). Declared again in shim.rs; keep the two in step.
 */
#ifndef O2G_SHIM_H
#define O2G_SHIM_H

#include <linux/spinlock_types.h>
#include <linux/types.h>

struct page;
struct sock;
struct ubuf_info;
typedef void (*o2g_ready_fn)(struct sock *sk);

size_t o2g_shim_sizeof_sock(void);

/* Identity and state, read under lock_sock(). */
bool o2g_sk_is_tcp(const struct sock *sk);
bool o2g_sk_is_established(const struct sock *sk);
bool o2g_sk_has_ulp(const struct sock *sk);

/* The socket owner lock (may sleep). */
void o2g_lock_sock(struct sock *sk);
void o2g_release_sock(struct sock *sk);

/* sk_callback_lock, always with bottom halves off. */
void o2g_sk_callback_write_lock(struct sock *sk);
void o2g_sk_callback_write_unlock(struct sock *sk);
void o2g_sk_callback_read_lock(struct sock *sk);
void o2g_sk_callback_read_unlock(struct sock *sk);

/* Fields guarded by sk_callback_lock. */
void *o2g_sk_user_data(const struct sock *sk);
void o2g_sk_set_user_data(struct sock *sk, void *data);
o2g_ready_fn o2g_sk_data_ready(const struct sock *sk);
void o2g_sk_set_data_ready(struct sock *sk, o2g_ready_fn fn);
o2g_ready_fn o2g_sk_state_change(const struct sock *sk);
void o2g_sk_set_state_change(struct sock *sk, o2g_ready_fn fn);
o2g_ready_fn o2g_sk_write_space(const struct sock *sk);
void o2g_sk_set_write_space(struct sock *sk, o2g_ready_fn fn);

/*
 * Nonblocking sends on a control connection, from the module's send work
 * (process context). Each returns the bytes queued, or -errno (-EAGAIN
 * with nothing queued when the send buffer is full; sk_write_space
 * follows once there is room).
 */
int o2g_send_bytes(struct sock *sk, const void *buf, size_t len, bool more);
int o2g_send_pages(struct sock *sk, struct page **pages, size_t offset, size_t len,
		   struct ubuf_info *zc);

/*
 * Zero-copy sends (MSG_ZEROCOPY from the kernel): `done(ctx)` runs once
 * every skb holding the pages is freed, in softirq or process context.
 */
struct ubuf_info *o2g_zc_alloc(void (*done)(void *ctx), void *ctx);
void o2g_zc_put(struct ubuf_info *ubuf);
bool o2g_sk_via_loopback(struct sock *sk);

/* o2g's ULP marker, attached while hooked (under lock_sock()). */
void o2g_sk_attach_ulp(struct sock *sk);
void o2g_sk_detach_ulp(struct sock *sk);

/* Receive-path state, read from the socket hook. */
bool o2g_sock_owned_by_user(const struct sock *sk);
bool o2g_in_task(void);
bool o2g_sk_rcv_shutdown(const struct sock *sk);
bool o2g_tcp_urgent_pending(const struct sock *sk);
/* An acknowledgement now, under the socket's lock (owner or spinlock). */
void o2g_tcp_ack_now(struct sock *sk);

/* cond_resched() is a macro; long copies in process context yield. */
void o2g_cond_resched(void);

/* The next online CPU in turn: each new endpoint's send work gets one. */
int o2g_next_online_cpu(void);

/*
 * Receive Flow Steering (Documentation/networking/scaling.rst): TCP records
 * the CPU of a socket's reader in recvmsg(); the module's processes never
 * call it, so the module records and deletes their flows itself
 * (flow_steering.rs).
 */
bool o2g_rfs_enabled(void);
void o2g_sk_record_flow_on(const struct sock *sk, unsigned int cpu);
void o2g_sk_forget_flow(const struct sock *sk);

/* spin_lock_bh() and friends are inline, with no Rust helper in 7.2. */
void o2g_spin_lock_bh(spinlock_t *lock);
void o2g_spin_unlock_bh(spinlock_t *lock);
int o2g_spin_trylock_bh(spinlock_t *lock);

/* What a process's endpoints cost it: locked memory and its memory cgroup. */
void *o2g_charge_pinned(unsigned long npages);
void o2g_uncharge_pinned(void *charged, unsigned long npages);
void *o2g_alloc_charged_page(void);

#endif /* O2G_SHIM_H */
