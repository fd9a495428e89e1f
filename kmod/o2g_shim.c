// SPDX-License-Identifier: GPL-2.0
/*
 * o2g C shim. Each function exists because the 7.2 Rust kernel crate has no
 * binding for what it touches; see o2g_shim.h.
 */
#include <net/sock.h>

#include "o2g_shim.h"

/*
 * struct sock is opaque to Rust in 7.2 (net/sock.h is not in
 * bindings_helper.h). The module logs its size at load time: a cheap record of
 * the layout the socket hook is compiled against, in every bug report.
 */
size_t o2g_shim_sizeof_sock(void)
{
	return sizeof(struct sock);
}
