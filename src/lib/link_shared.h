/* SPDX-License-Identifier: MIT */
/* link_shared.h: the link layer of shared sends and queue watching (link_shared.c): the
 * public pure_link_send_shared, pure_link_set_queue_limit and pure_link_queue_stats, and the
 * hook every send passes through on a link whose channel table exists. */
#ifndef PURE_LINK_SHARED_H
#define PURE_LINK_SHARED_H

#include "state.h"

/* A send of `bytes` (framing included) on stream ch is about to be accepted: checks the link's
 * queue limit (PURE_EFULL, want_writable set) and dates the message (qwatch.h). Returns 0 or
 * PURE_EFULL. Only for links with a channel table. */
int pure_link_watch_send(pure_link *link, uint32_t ch, uint64_t bytes);
/* 1 unless the link is watched and holds more than half its queue limit. */
int pure_link_watch_writable(const pure_link *link);
/* What every send on channel 1..max checks before it takes anything (pure_link_send_on,
 * pure_link_send_on_deadline, pure_link_send_shared), in the order their error lists give:
 * PURE_EINVAL (a channel the link cannot use), PURE_ECLOSED (finishing or closing) or
 * PURE_EMSGSIZE (len above max_message_size); 0 if the send may go on. */
static inline int pure_link_chan_send_check(const pure_link *link, uint32_t channel, size_t len)
{
    if (channel > pure_link_peer_channels(link) || channel > link->ctx->s.max_channels)
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED ||
        (link->send_gate & PURE_GATE_FINISH) || link->close_requested)
        return PURE_ECLOSED;
    return len > link->ctx->s.max_message_size ? PURE_EMSGSIZE : 0;
}

/* The link's channel table, made on first use (NULL if that allocation fails); making it sets
 * PURE_GATE_CHANS, so channel 0's sends go through pure_link_watch_send from then on. */
pure_chans *pure_link_chan_table(pure_link *link);
/* Channel ch (1..max) of the link, made on first use with this side's window, the peer's
 * announced one and the message limit. NULL without memory. */
struct pure_chan *pure_link_chan_get(pure_link *link, uint32_t ch);

#endif
