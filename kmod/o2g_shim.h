/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for what the 7.2 Rust kernel crate cannot reach. Declared again on
 * the Rust side in shim.rs; keep the two in step. No logic lives here.
 */
#ifndef O2G_SHIM_H
#define O2G_SHIM_H

#include <linux/types.h>

size_t o2g_shim_sizeof_sock(void);

#endif /* O2G_SHIM_H */
