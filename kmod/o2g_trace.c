// SPDX-License-Identifier: GPL-2.0
/*
 * Creates o2g's trace events (o2g_trace.h) and emits them for the Rust side,
 * which cannot expand the trace_*() static-branch helpers: one entry point
 * taking the event's number (trace.rs, `Step`).
 */
#define CREATE_TRACE_POINTS
#include "o2g_trace.h"

void o2g_trace(u32 step, u32 rank, u64 len, u64 id);

void o2g_trace(u32 step, u32 rank, u64 len, u64 id)
{
	switch (step) {
	case 0: trace_o2g_offer(rank, len, id); break;
	case 1: trace_o2g_rts_matched(rank, len, id); break;
	case 2: trace_o2g_rts_stored(rank, len, id); break;
	case 3: trace_o2g_cts_sent(rank, len, id); break;
	case 4: trace_o2g_cts_received(rank, len, id); break;
	case 5: trace_o2g_data_start(rank, len, id); break;
	case 6: trace_o2g_data_end(rank, len, id); break;
	case 7: trace_o2g_recv_end(rank, len, id); break;
	case 8: trace_o2g_data_acked(rank, len, id); break;
	}
}
