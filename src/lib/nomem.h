/* SPDX-License-Identifier: MIT */
/* nomem.h: what a link does when memory runs out mid-stream: it loses nothing and closes nothing,
 * it tries again. A packet that could not be built (no room to record it, no AEAD context), or
 * in-order bytes that could not be assembled (the assembly buffer could not grow) wait for the
 * link's retry timer: pace_at, at most PURE_NOMEM_RETRY away, which fires through
 * PURE_TIMER_PACE (link.c). Nothing else would bring the link back: no packet in flight, no ACK
 * to come, and received bytes already acknowledged never come again. */
#ifndef PURE_NOMEM_H
#define PURE_NOMEM_H

#include "state.h"

#define PURE_NOMEM_RETRY (10 * 1000000ull) /* ns */

/* Arms the retry timer (the caller's call ends with pure_timers_update, as every call does). */
static inline void pure_link_retry_later(pure_link *link, uint64_t now)
{
    if (link->pace_at > now + PURE_NOMEM_RETRY)
        link->pace_at = now + PURE_NOMEM_RETRY;
}

/* In-order bytes wait in a ring (channel 0's or a channel's) for want of memory: the retry feeds
 * them again (pure_link_recv_retry). */
static inline void pure_link_rx_nomem(pure_link *link, uint64_t now)
{
    link->b->rx_nomem = 1;
    pure_link_retry_later(link, now);
}

#endif
