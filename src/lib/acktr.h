/* SPDX-License-Identifier: MIT */
/* acktr.h: the ACK tracker: which packet numbers this side received (the ranges its ACK frames
 * carry, bounded: the oldest fall off), how many ack-eliciting packets wait for an ACK, and when
 * one is owed: at once (a gap or reordering, a PING, ack_every packets unacknowledged, a dropped
 * packet the peer must hear about) or by a deadline max_ack_delay after the first packet that
 * needed one. The caller builds the frame from pure_acktr_ranges and pure_acktr_delay and reports
 * it sent. */
#ifndef PURE_ACKTR_H
#define PURE_ACKTR_H

#include <stdint.h>

#include "alloc.h"
#include "ranges.h"
#include "wire.h"

/* An ACK is sent once the first packet waiting for one has waited this long, when another packet
 * arrives. On a fast path ack_every packets come first and nothing changes; on a slow one (50
 * Mbit/s is about 4 full packets a millisecond) the sender hears every few packets instead of
 * every max_ack_delay, and its window frees as the path delivers rather than in chunks of two
 * dozen packets. The chunks cost it the link: at a 10-packet queue, 40 ms, the bytes it
 * counted in flight ran 8-15 packets under its window, and after each reduction the window had
 * to climb past them before the link was busy (docs/congestion.md, "ACK spacing"). */
#define PURE_ACK_SPACING 1000000ull /* 1 ms */

typedef struct pure_acktr {
    pure_ranges pns;       /* packet numbers received, at most PURE_ACK_MAX_RANGES ranges */
    uint64_t largest_time; /* when the largest packet number so far arrived */
    uint64_t deadline;     /* an ACK is owed by then; UINT64_MAX if none is */
    uint32_t unacked;      /* ack-eliciting packets since the last ACK */
    uint8_t now;           /* an ACK is owed at once */
} pure_acktr;

/* Makes t a tracker that has received nothing and owes nothing. */
void pure_acktr_init(pure_acktr *t);
/* Forgets the packet numbers received and gives back their storage (through a): an idle link
 * keeps none. What is owed stays; t stays usable. */
void pure_acktr_free(pure_acktr *t, const pure_alloc *a);

/* Records packet pn, read at `now` after it reached the host at `arrived` (<= now; the ACK delay
 * reported is measured from it, socket queue included) (storage through a); `eliciting` if it
 * carried a frame that needs an ACK. A packet number that does not fit (the ranges are full, or
 * memory ran out) pushes the oldest range out. Returns 1 if an ACK is due at once (the packet is
 * eliciting and it left a gap or came out of order, pure_acktr_ack_now was called, ack_every
 * eliciting packets are now unacknowledged, or the first of them was read PURE_ACK_SPACING or
 * more before `now`): send one. Otherwise returns 0, having armed the
 * deadline at now + max_ack_delay for an eliciting packet if it was not armed: from the read, not
 * the arrival, or a busy loop whose packets all waited longer than max_ack_delay would answer
 * every packet with an ACK of its own and get busier. With `sparing` set, neither a gap nor
 * PURE_ACK_SPACING makes the ACK due at once, only ack_every packets (and the deadline, a PING, a
 * forced ACK): for a transmit key's last packets, which an ACK on every gap of a lossy, reordering
 * path would spend before its successor is agreed (rekey.c). */
int pure_acktr_on_packet(pure_acktr *t, const pure_alloc *a, uint64_t pn, int eliciting,
                         uint64_t arrived, uint64_t now, uint64_t max_ack_delay, uint32_t ack_every,
                         int sparing);
/* The packet being processed asks for an ACK at once (a PING). */
static inline void pure_acktr_ack_now(pure_acktr *t)
{
    t->now = 1;
}
/* A packet was received but dropped (not recorded): the peer must still hear from this side, so
 * an ACK of what came before is owed at once. Returns 0, or -1 if nothing was received yet (there
 * is nothing to acknowledge: send a PING instead). */
int pure_acktr_force(pure_acktr *t);
/* The same, sparing (pure_acktr_on_packet): the ACK is owed by `deadline` (if none is armed
 * earlier), not at once. */
int pure_acktr_force_by(pure_acktr *t, uint64_t deadline);
/* The deadline passed: returns 1 and owes the ACK at once (send one), or 0 if it has not come. */
int pure_acktr_on_timer(pure_acktr *t, uint64_t now);
/* When the ACK is owed at the latest (the timer to arm); UINT64_MAX if none is. */
static inline uint64_t pure_acktr_deadline(const pure_acktr *t)
{
    return t->deadline;
}
/* 1 if an ACK is owed now: worth a packet of its own. */
static inline int pure_acktr_due(const pure_acktr *t, uint32_t ack_every)
{
    return t->unacked > 0 && (t->now || t->unacked >= ack_every);
}
/* 1 if a packet being built should carry an ACK (one is owed, now or by the deadline). */
static inline int pure_acktr_wanted(const pure_acktr *t)
{
    return t->unacked > 0 || t->now;
}
/* The ranges to acknowledge, ascending, and (in *n) how many. */
static inline const pure_range *pure_acktr_ranges(const pure_acktr *t, uint32_t *n)
{
    *n = t->pns.n;
    return t->pns.r;
}
/* The ACK delay to report at `now`, in microseconds: the time since the largest packet number
 * arrived. */
static inline uint64_t pure_acktr_delay(const pure_acktr *t, uint64_t now)
{
    return now > t->largest_time ? (now - t->largest_time) / 1000 : 0;
}
/* An ACK frame went out: nothing is owed until the next ack-eliciting packet. */
static inline void pure_acktr_on_sent(pure_acktr *t)
{
    t->unacked = 0;
    t->now = 0;
    t->deadline = UINT64_MAX;
}

#endif
