/* SPDX-License-Identifier: MIT */
/* timers.h: every timer of a link in one place (the list is at the top of timers.c): the
 * event-named hooks that set them, the link's one deadline in the context's timer heap, and
 * which of them are due. What happens when one fires is link.c's decision
 * (pure_link_on_timer). */
#ifndef PURE_TIMERS_H
#define PURE_TIMERS_H

#include <stdint.h>

#include "state.h"

/* The timers, as bits of what pure_timers_due returns. */
enum pure_timer {
    PURE_TIMER_HS_RETRY = 1u << 0,  /* HANDSHAKE: resend the INIT, or give up */
    PURE_TIMER_HS_EXPIRE = 1u << 1, /* UNVALIDATED: the initiator never confirmed */
    PURE_TIMER_IDLE = 1u << 2,      /* OPEN: ack-eliciting packets unanswered for idle_timeout */
    PURE_TIMER_CLOSE_GIVE_UP = 1u << 3, /* OPEN, closing gracefully: no progress */
    PURE_TIMER_RECOVERY = 1u << 4,      /* OPEN: loss time threshold or probe timeout */
    PURE_TIMER_WATCH = 1u << 5,         /* OPEN: expecting the peer, silent for idle_timeout/2 */
    PURE_TIMER_ACK = 1u << 6,           /* OPEN: max_ack_delay after an unacknowledged packet */
    PURE_TIMER_KEEPALIVE = 1u << 7,     /* OPEN: settings.keepalive after the last packet */
    PURE_TIMER_PACE = 1u << 8,          /* OPEN: the pacer releases the next packet */
    PURE_TIMER_RX_RETIRE = 1u << 9,     /* OPEN: wipe the previous receive key */
    PURE_TIMER_RELEASE = 1u << 10,      /* OPEN: idle for a moment, give buffers back */
    PURE_TIMER_CLOSE_RESEND = 1u << 11, /* CLOSING: send the CLOSE again */
    PURE_TIMER_CLOSE_END = 1u << 12,    /* CLOSING: three probe timeouts are over */
    PURE_TIMER_DEADLINE = 1u << 13,     /* OPEN: a channel message's deadline passed */
};

/* Buffers of a link idle this long are given back. */
#define PURE_IDLE_RELEASE 500000000ull /* 500 ms */

/* Recomputes the link's deadline (the earliest of its timers) and files it in the context's
 * timer heap. Called after every event that may move a timer. */
void pure_timers_update(pure_link *link, uint64_t now);

/* pure_timers_update, later: the link's deadline is refiled when the context's heap is next
 * read (pure_ctx_deadline, pure_ctx_timeout) or a link is freed, so a batch of datagrams for one
 * link recomputes it once instead of once a datagram. The link must not be CLOSED. */
void pure_timers_defer(pure_link *link);

/* Refiles every deferred deadline (pure_timers_defer) at ctx->now; closed links are skipped. */
void pure_timers_flush(pure_ctx *ctx);

/* When the timer fires (UINT64_MAX: not armed in the link's present state). */
uint64_t pure_timer_deadline(const pure_link *link, enum pure_timer t, uint64_t now);

/* Is the timer due at `now`? Asked one timer at a time, in the order link.c handles them, as
 * each handler may arm or disarm the next. */
static inline int pure_timer_due(const pure_link *link, enum pure_timer t, uint64_t now)
{
    return now >= pure_timer_deadline(link, t, now);
}

/* The link has nothing in flight or queued: give its buffers back PURE_IDLE_RELEASE from now
 * (unless that is already armed). */
void pure_timers_went_idle(pure_link *link, uint64_t now);

/* The release timer fired: returns 1 if the link was quiet for the whole period (give the
 * buffers back now), else re-arms it a period after the last packet and returns 0. */
int pure_timers_release_due(pure_link *link, uint64_t now);

/* A graceful close began or made progress: it gives up after idle_timeout without more. */
void pure_timers_close_progress(pure_link *link, uint64_t now);

/* The link entered CLOSING: it stays three probe timeouts, its CLOSE sent again at the start
 * of each; or, when the peer answers CLOSEs (tparams.h), until its answer comes, at most 16
 * probe timeouts (and idle_timeout), the CLOSE sent again after 1, 1, 2, 4, 8 probe timeouts. */
void pure_timers_closing(pure_link *link, uint64_t now);

/* The CLOSE-resend timer fired: arms the next one (none past the end of CLOSING). */
void pure_timers_close_resent(pure_link *link, uint64_t now);

/* The link entered CLOSING to answer the peer's CLOSE: it ends a probe timeout from now if the
 * answer cannot be written before (link_send.c ends it once it is). */
void pure_timers_answering(pure_link *link, uint64_t now);

#endif
