// SPDX-License-Identifier: GPL-2.0
/*
 * o2g C shim: one-statement accessors for what the 7.2 Rust kernel crate
 * cannot reach. See o2g_shim.h for why each group exists.
 */
#include <net/inet_connection_sock.h>
#include <net/sock.h>
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

/* Callers hold sk_callback_lock, which orders every writer of the field. */
void *o2g_sk_user_data(const struct sock *sk)
{
	return rcu_dereference_protected(__sk_user_data(sk), 1);
}

void o2g_sk_set_user_data(struct sock *sk, void *data)
{
	rcu_assign_sk_user_data(sk, data);
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

bool o2g_sk_rcv_shutdown(const struct sock *sk)
{
	return READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN;
}
