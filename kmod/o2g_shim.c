// SPDX-License-Identifier: GPL-2.0
/*
 * o2g C shim: one-statement accessors for what the 7.2 Rust kernel crate
 * cannot reach. See o2g_shim.h for why each group exists.
 */
#include <linux/bvec.h>
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <net/inet_connection_sock.h>
#include <net/rps.h>
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
 * starting `offset` bytes into pages[0]. Without `zc`, TCP copies the
 * bytes (no MSG_SPLICE_PAGES): the pages go back to the process as soon as
 * the send completes, and a retransmission must not read what the process
 * wrote there since. With `zc` (o2g_zc_alloc), the skbs take references on
 * the pages themselves and on `zc`, whose completion says when the last of
 * them is freed (the bytes acknowledged, or the socket gone). MSG_MORE
 * while more of `len` follows, so that TCP sends full segments and pushes
 * only after the last call, as for one large send() (measured: 1-4 MiB
 * rendezvous messages moved faster on loopback).
 * A call that runs out of room pushes what it queued (tcp_sendmsg clears
 * MSG_MORE then); a tail under one segment left by a complete call goes
 * with the next call, or after TCP's cork ceiling (the probe timer).
 */
int o2g_send_pages(struct sock *sk, struct page **pages, size_t offset, size_t len,
		   struct ubuf_info *zc)
{
	struct bio_vec bvec[64];
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	size_t n = 0, bytes = 0;

	if (zc) {
		msg.msg_flags |= MSG_ZEROCOPY;
		msg.msg_ubuf = zc;
	}

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

bool o2g_rfs_enabled(void)
{
	return rfs_is_needed();
}

/*
 * sock_rps_record_flow() for `cpu` rather than the calling CPU: the send
 * work puts back its process's CPU after its own sendmsg() recorded the
 * send work's (include/net/rps.h, rps_record_sock_flow()).
 */
void o2g_sk_record_flow_on(const struct sock *sk, unsigned int cpu)
{
#ifdef CONFIG_RPS
	u32 hash = READ_ONCE(sk->sk_rxhash);
	rps_tag_ptr tag_ptr;

	if (!rfs_is_needed() || !hash || cpu >= nr_cpu_ids ||
	    READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		return;
	rcu_read_lock();
	tag_ptr = READ_ONCE(net_hotdata.rps_sock_flow_table);
	if (tag_ptr) {
		struct rps_sock_flow_table *table = rps_tag_to_table(tag_ptr);
		u32 index = hash & rps_tag_to_mask(tag_ptr);
		u32 val = (hash & ~net_hotdata.rps_cpu_mask) | cpu;

		if (READ_ONCE(table[index].ent) != val)
			WRITE_ONCE(table[index].ent, val);
	}
	rcu_read_unlock();
#endif
}

void o2g_sk_forget_flow(const struct sock *sk)
{
	sock_rps_delete_flow(sk);
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

void o2g_tcp_ack_now(struct sock *sk)
{
	if (READ_ONCE(sk->sk_state) == TCP_ESTABLISHED)
		__tcp_send_ack(sk, tcp_sk(sk)->rcv_nxt, 0);
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

/*
 * A zero-copy send's completion. TCP links each skb that holds the send's
 * pages to `ubuf` and takes a reference for it; the creator holds one
 * more until its last send call (o2g_zc_put). The last reference dropped
 * calls `done(ctx)`: in softirq (an acknowledgement, a device's transmit
 * completion) or in process context (release_sock, the socket's
 * destruction, o2g_zc_put), never in hard irq; it must not sleep.
 */
struct o2g_zc {
	struct ubuf_info ubuf;
	void (*done)(void *ctx);
	void *ctx;
};

/*
 * Every o2g_zc holds a reference on this module, so that rmmod fails with
 * EBUSY while skbs somewhere can still call o2g_zc_complete. The reference
 * drops last: only this function's epilogue runs after it. As for any
 * callback that drops its own module (vhost-net's zero-copy callback has
 * the same shape), an rmmod that completes within those few instructions
 * would free them under the CPU; the kernel offers no put that returns
 * elsewhere.
 */
static void o2g_zc_complete(struct sk_buff *skb, struct ubuf_info *ubuf, bool zerocopy_success)
{
	struct o2g_zc *zc = container_of(ubuf, struct o2g_zc, ubuf);

	if (!refcount_dec_and_test(&ubuf->refcnt))
		return;
	zc->done(zc->ctx);
	kfree(zc);
	module_put(THIS_MODULE);
}

static const struct ubuf_info_ops o2g_zc_ops = {
	.complete = o2g_zc_complete,
};

/*
 * Process context, with the module held by the caller (an open endpoint).
 * NULL when out of memory: the caller copies instead.
 */
struct ubuf_info *o2g_zc_alloc(void (*done)(void *ctx), void *ctx)
{
	struct o2g_zc *zc = kmalloc(sizeof(*zc), GFP_KERNEL_ACCOUNT);

	if (!zc)
		return NULL;
	/* As MSG_ZEROCOPY's own: never copied out on the way to a device. */
	zc->ubuf.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	zc->ubuf.ops = &o2g_zc_ops;
	refcount_set(&zc->ubuf.refcnt, 1);
	zc->done = done;
	zc->ctx = ctx;
	__module_get(THIS_MODULE);
	return &zc->ubuf;
}

/* Drops the creator's reference; `done` runs now if no skb holds one. */
void o2g_zc_put(struct ubuf_info *ubuf)
{
	net_zcopy_put(ubuf);
}

/* Whether the socket's route leaves through a loopback device. */
bool o2g_sk_via_loopback(struct sock *sk)
{
	struct dst_entry *dst = sk_dst_get(sk);
	bool lo = dst && (dst_dev(dst)->flags & IFF_LOOPBACK);

	dst_release(dst);
	return lo;
}
