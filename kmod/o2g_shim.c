// SPDX-License-Identifier: GPL-2.0
/*
 * o2g C shim: one-statement accessors for what the 7.2 Rust kernel crate
 * cannot reach. See o2g_shim.h for why each group exists.
 */
#include <linux/bvec.h>
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/gfp.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <net/inet_connection_sock.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/tcp_states.h>

#include "o2g_shim.h"

/* Logged at load time: the struct sock layout this module is built against. */
size_t o2g_shim_sizeof_sock(void)
{
	return sizeof(struct sock);
}

bool o2g_sk_is_tcp(const struct sock *sk)
{
	return sk->sk_type == SOCK_STREAM && sk->sk_protocol == IPPROTO_TCP &&
	       (sk->sk_family == AF_INET || sk->sk_family == AF_INET6);
}

bool o2g_sk_is_established(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state) == TCP_ESTABLISHED;
}

/* kTLS, MPTCP, ESP-in-TCP and SMC attach as upper-layer protocols. */
bool o2g_sk_has_ulp(const struct sock *sk)
{
	return inet_csk(sk)->icsk_ulp_ops != NULL;
}

void o2g_lock_sock(struct sock *sk)
{
	lock_sock(sk);
}

void o2g_release_sock(struct sock *sk)
{
	release_sock(sk);
}

void o2g_sk_callback_write_lock(struct sock *sk)
{
	write_lock_bh(&sk->sk_callback_lock);
}

void o2g_sk_callback_write_unlock(struct sock *sk)
{
	write_unlock_bh(&sk->sk_callback_lock);
}

void o2g_sk_callback_read_lock(struct sock *sk)
{
	read_lock_bh(&sk->sk_callback_lock);
}

void o2g_sk_callback_read_unlock(struct sock *sk)
{
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Callers hold sk_callback_lock, which orders every writer of the field.
 * The pointer is stored tagged SK_USER_DATA_NOCOPY, so that sk_clone_lock()
 * never copies it into a child socket; the tag is masked off here.
 */
void *o2g_sk_user_data(const struct sock *sk)
{
	return __locked_read_sk_user_data_with_flags(sk, 0);
}

void o2g_sk_set_user_data(struct sock *sk, void *data)
{
	if (data)
		__rcu_assign_sk_user_data_with_flags(sk, data, SK_USER_DATA_NOCOPY);
	else
		rcu_assign_sk_user_data(sk, NULL);
}

/*
 * o2g's upper-layer protocol marker. It is attached (never registered by
 * name, so no setsockopt(TCP_ULP) can reach it) for as long as a socket is
 * hooked, and it has no clone operation: the stack then refuses listen()
 * with EINVAL (inet_ulp_can_listen) and any further ULP with EEXIST
 * (__tcp_set_ulp), and sockmap refuses the socket (sk_psock_init). So a
 * hooked socket can never have children that inherit the hooks, and no
 * kTLS can wrap o2g's callbacks. The owner is NULL because the marker is
 * always detached before the socket can be destroyed (the hook holds the
 * socket's file); tcp_cleanup_ulp() never sees it.
 */
static int o2g_ulp_init(struct sock *sk)
{
	return -EOPNOTSUPP;
}

static const struct tcp_ulp_ops o2g_ulp_ops = {
	.name = "o2g",
	.owner = NULL,
	.init = o2g_ulp_init,
};

/* Caller owns the socket (lock_sock) and found no ULP attached. */
void o2g_sk_attach_ulp(struct sock *sk)
{
	inet_csk(sk)->icsk_ulp_ops = &o2g_ulp_ops;
}

/* Caller owns the socket; detaches only o2g's own marker. */
void o2g_sk_detach_ulp(struct sock *sk)
{
	struct inet_connection_sock *icsk = inet_csk(sk);

	if (icsk->icsk_ulp_ops == &o2g_ulp_ops)
		icsk->icsk_ulp_ops = NULL;
}

o2g_ready_fn o2g_sk_data_ready(const struct sock *sk)
{
	return READ_ONCE(sk->sk_data_ready);
}

void o2g_sk_set_data_ready(struct sock *sk, o2g_ready_fn fn)
{
	WRITE_ONCE(sk->sk_data_ready, fn);
}

o2g_ready_fn o2g_sk_state_change(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state_change);
}

void o2g_sk_set_state_change(struct sock *sk, o2g_ready_fn fn)
{
	WRITE_ONCE(sk->sk_state_change, fn);
}

o2g_ready_fn o2g_sk_write_space(const struct sock *sk)
{
	return READ_ONCE(sk->sk_write_space);
}

void o2g_sk_set_write_space(struct sock *sk, o2g_ready_fn fn)
{
	WRITE_ONCE(sk->sk_write_space, fn);
}

/* MSG_NOSIGNAL: a peer gone gives -EPIPE, never SIGPIPE to a kworker. */
/* The caller holds the socket's file, so sk->sk_socket is stable. */
int o2g_send_bytes(struct sock *sk, const void *buf, size_t len, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};
	struct kvec vec = { .iov_base = (void *)buf, .iov_len = len };

	return kernel_sendmsg(sk->sk_socket, &msg, &vec, 1, len);
}

/*
 * Up to 64 pages (256 KiB) per call of the `len` bytes still to send,
 * starting `offset` bytes into pages[0]. TCP copies the bytes (no
 * MSG_SPLICE_PAGES): the pages go back to the process as soon as the send
 * completes, and a retransmission must not read what the process wrote
 * there since. MSG_MORE while more of `len` follows, so that TCP sends
 * full segments and pushes only after the last call, as for one large
 * send() (measured: 1-4 MiB rendezvous messages moved faster on loopback).
 * A call that runs out of room pushes what it queued (tcp_sendmsg clears
 * MSG_MORE then); a tail under one segment left by a complete call goes
 * with the next call, or after TCP's cork ceiling (the probe timer).
 */
int o2g_send_pages(struct sock *sk, struct page **pages, size_t offset, size_t len)
{
	struct bio_vec bvec[64];
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	size_t n = 0, bytes = 0;

	pages += offset / PAGE_SIZE;
	offset %= PAGE_SIZE;
	while (n < ARRAY_SIZE(bvec) && bytes < len) {
		size_t chunk = min(len - bytes, PAGE_SIZE - offset);

		bvec_set_page(&bvec[n], pages[n], chunk, offset);
		offset = 0;
		bytes += chunk;
		n++;
	}
	if (bytes < len)
		msg.msg_flags |= MSG_MORE;
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bvec, n, bytes);
	return sock_sendmsg(sk->sk_socket, &msg);
}

void o2g_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void o2g_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

int o2g_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

bool o2g_sock_owned_by_user(const struct sock *sk)
{
	return sock_owned_by_user_nocheck(sk);
}

bool o2g_in_task(void)
{
	return in_task();
}

void o2g_cond_resched(void)
{
	cond_resched();
}

int o2g_next_online_cpu(void)
{
	static atomic_t turn = ATOMIC_INIT(0);
	unsigned int n = num_online_cpus();
	int cpu = cpumask_nth((unsigned int)atomic_inc_return(&turn) % (n ? n : 1),
			      cpu_online_mask);

	return cpu < nr_cpu_ids ? cpu : raw_smp_processor_id();
}

bool o2g_sk_rcv_shutdown(const struct sock *sk)
{
	return READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN;
}

/*
 * Urgent data (MSG_OOB) announced or arrived: tcp_read_sock() stops at the
 * urgent mark for good, so o2g treats it as a protocol error.
 */
bool o2g_tcp_urgent_pending(const struct sock *sk)
{
	return READ_ONCE(tcp_sk(sk)->urg_data) & (TCP_URG_VALID | TCP_URG_NOTYET);
}

/*
 * Pinned receive buffers count against the pinning process's
 * RLIMIT_MEMLOCK through mm->pinned_vm, as RDMA's ib_umem_get() does;
 * CAP_IPC_LOCK lifts the limit. Returns the mm, with a reference for the
 * uncharge, or NULL if the pages would exceed the limit.
 */
void *o2g_charge_pinned(unsigned long npages)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned;

	if (!mm)
		return NULL;
	pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return NULL;
	}
	mmgrab(mm);
	return mm;
}

/* Undoes o2g_charge_pinned(); process context (mmdrop may free the mm). */
void o2g_uncharge_pinned(void *charged, unsigned long npages)
{
	struct mm_struct *mm = charged;

	atomic64_sub(npages, &mm->pinned_vm);
	mmdrop(mm);
}

/*
 * A zeroed page for the shared area, charged to the caller's memory
 * cgroup. RETRY_MAYFAIL: over the cgroup's limit INIT fails with ENOMEM
 * instead of waking the cgroup's OOM killer.
 */
void *o2g_alloc_charged_page(void)
{
	return alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
}
