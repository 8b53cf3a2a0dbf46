/* SPDX-License-Identifier: MIT */
/* acktr.c: the ACK tracker (acktr.h): received packet numbers and when an ACK is owed. */
#include "acktr.h"

void pure_acktr_init(pure_acktr *t)
{
    pure_ranges_init(&t->pns, PURE_ACK_MAX_RANGES + 1);
    t->largest_time = 0;
    t->deadline = UINT64_MAX;
    t->unacked = 0;
    t->now = 0;
}

void pure_acktr_free(pure_acktr *t, const pure_alloc *a)
{
    pure_ranges_free(&t->pns, a);
}

int pure_acktr_on_packet(pure_acktr *t, const pure_alloc *a, uint64_t pn, int eliciting,
                         uint64_t arrived, uint64_t now, uint64_t max_ack_delay, uint32_t ack_every,
                         int sparing)
{
    /* Old ranges fall off the end. The set has room for one range more than an ACK frame carries,
     * so a new range goes in before the oldest is dropped. */
    uint64_t prev_largest = t->pns.n ? t->pns.r[t->pns.n - 1].end : 0;
    if (pure_ranges_add(&t->pns, a, pn, pn + 1) != 0) {
        pure_ranges_drop_first(&t->pns);
        pure_ranges_add(&t->pns, a, pn, pn + 1);
    }
    while (t->pns.n > PURE_ACK_MAX_RANGES)
        pure_ranges_drop_first(&t->pns);
    if (pn + 1 >= prev_largest)
        t->largest_time = arrived < now ? arrived : now;
    if (!eliciting)
        return 0;
    t->unacked++;
    if (pn != prev_largest && !sparing) /* a gap or reordering: tell the sender at once */
        t->now = 1;
    if (t->now || t->unacked >= ack_every)
        return 1;
    /* The first packet waiting has waited PURE_ACK_SPACING (it armed the deadline): acknowledge
     * now rather than let a slow path's window free in chunks of max_ack_delay. */
    if (!sparing && t->deadline != UINT64_MAX &&
        now >= t->deadline - max_ack_delay + PURE_ACK_SPACING) {
        t->now = 1;
        return 1;
    }
    if (t->deadline == UINT64_MAX)
        t->deadline = now + max_ack_delay;
    return 0;
}

int pure_acktr_force(pure_acktr *t)
{
    if (!t->pns.n)
        return -1;
    t->now = 1;
    if (!t->unacked)
        t->unacked = 1;
    return 0;
}

int pure_acktr_force_by(pure_acktr *t, uint64_t deadline)
{
    if (!t->pns.n)
        return -1;
    if (!t->unacked)
        t->unacked = 1;
    if (t->deadline > deadline)
        t->deadline = deadline;
    return 0;
}

int pure_acktr_on_timer(pure_acktr *t, uint64_t now)
{
    if (now < t->deadline)
        return 0;
    t->deadline = UINT64_MAX;
    t->now = 1;
    return 1;
}
