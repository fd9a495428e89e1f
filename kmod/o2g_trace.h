/* SPDX-License-Identifier: GPL-2.0 */
/*
 * o2g's trace events: the steps of a rendezvous message and the end of a
 * receive the module fills, with where each ran (the trace's CPU and
 * timestamp), for perf or tracefs (events/o2g/). They cost a static
 * branch each while off. Emitted through o2g_trace() (o2g_trace.c), whose
 * point numbers trace.rs mirrors.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM o2g

#if !defined(_O2G_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _O2G_TRACE_H

#include <linux/tracepoint.h>

/* rank: the peer; len: bytes; id: the offer, or the receive's token or handle. */
DECLARE_EVENT_CLASS(o2g_step,
	TP_PROTO(u32 rank, u64 len, u64 id),
	TP_ARGS(rank, len, id),
	TP_STRUCT__entry(
		__field(u32, rank)
		__field(u64, len)
		__field(u64, id)
	),
	TP_fast_assign(
		__entry->rank = rank;
		__entry->len = len;
		__entry->id = id;
	),
	TP_printk("rank=%u len=%llu id=%llu", __entry->rank, __entry->len, __entry->id)
);

/* Sender: OFFER pinned the data of a rendezvous send to `rank`. */
DEFINE_EVENT(o2g_step, o2g_offer, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Receiver: a request to send matched a posted receive; its CTS is queued. */
DEFINE_EVENT(o2g_step, o2g_rts_matched, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Receiver: a request to send matched nothing and was stored. */
DEFINE_EVENT(o2g_step, o2g_rts_stored, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Receiver: the send work wrote a clear-to-send (len 0; id: the receive's token). */
DEFINE_EVENT(o2g_step, o2g_cts_sent, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Sender: a clear-to-send for offer `id` arrived. */
DEFINE_EVENT(o2g_step, o2g_cts_received, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Sender: the send work starts writing offer `id`'s data. */
DEFINE_EVENT(o2g_step, o2g_data_start, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Sender: offer `id`'s data is written (len: bytes written). */
DEFINE_EVENT(o2g_step, o2g_data_end, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
/* Receiver: the reader filled a posted receive (eager or rendezvous). */
DEFINE_EVENT(o2g_step, o2g_recv_end, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));
DEFINE_EVENT(o2g_step, o2g_data_acked, TP_PROTO(u32 rank, u64 len, u64 id), TP_ARGS(rank, len, id));

#endif /* _O2G_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE o2g_trace
#include <trace/define_trace.h>
