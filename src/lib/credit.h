/* SPDX-License-Identifier: MIT */
/* credit.h: flow credit, both directions of one stream. Receiving: the window the peer may send
 * past what the reader consumed, and the limit granted (a CREDIT frame's value). A new limit is
 * granted once the reader has consumed half the window, and the window doubles (up to its
 * maximum) when that took less than two round trips: then it is the window, not the path, that
 * limits the sender. The limit never moves backwards and never reaches further than the maximum
 * window past what was consumed. Sending: the limit the peer granted, which only ever grows. */
#ifndef PURE_CREDIT_H
#define PURE_CREDIT_H

#include <stdint.h>

typedef struct pure_credit {
    uint64_t window;  /* receive window: how far past the consumed point the peer may send */
    uint64_t granted; /* the limit granted last: the peer may send stream offsets below it */
    uint64_t time;    /* when it was granted (window auto-tuning) */
    uint64_t peer;    /* send side: the peer allows our stream offsets below this */
} pure_credit;

/* Starts both directions from the same configured window: granted and the peer's limit both
 * equal it, nothing consumed yet. */
void pure_credit_init(pure_credit *c, uint64_t window);
/* 1 if the reader, having consumed the stream below `consumed`, used half the window or more of
 * what was granted: a new grant is due (the caller may still hold it back). */
static inline int pure_credit_due(const pure_credit *c, uint64_t consumed)
{
    return c->granted - consumed <= c->window / 2;
}
/* Grants a new limit, consumed + window, at `now`; first doubles the window (at most to
 * window_max) if the previous grant was less than two round trips ago (rtt 0: no estimate yet,
 * double). Call only when pure_credit_due; then send the limit in a CREDIT frame. */
void pure_credit_grant(pure_credit *c, uint64_t consumed, uint64_t rtt, uint64_t window_max,
                       uint64_t now);
/* The limit granted: data reaching past it breaks flow control. */
static inline uint64_t pure_credit_granted(const pure_credit *c)
{
    return c->granted;
}
/* The receive window (bytes the peer may have outstanding past the consumed point). */
static inline uint64_t pure_credit_window(const pure_credit *c)
{
    return c->window;
}

/* The peer's CREDIT frame granted `limit`. Returns 1 if that raised the send limit (more may go
 * out now), 0 if it was not above it (a late or repeated frame: the limit never moves back). */
static inline int pure_credit_on_frame(pure_credit *c, uint64_t limit)
{
    if (limit <= c->peer)
        return 0;
    c->peer = limit;
    return 1;
}
/* The send limit: our stream offsets below it may go out. */
static inline uint64_t pure_credit_peer(const pure_credit *c)
{
    return c->peer;
}

#endif
