/* SPDX-License-Identifier: MIT */
/* rtb.c: the retransmission buffer: the ring of sent packets from the oldest live one to the
 * newest, and RFC 9002 loss detection over it (rtb.h). */
#include <string.h>

#include "pure.h"
#include "rtb.h"

static pure_sent *slot(const pure_rtb *rtb, uint64_t pn)
{
    return &rtb->sent[pn & (rtb->cap - 1)];
}

void pure_rtb_init(pure_rtb *rtb)
{
    memset(rtb, 0, sizeof *rtb);
    rtb->largest_acked = UINT64_MAX;
    rtb->loss_time = UINT64_MAX;
}

/* Makes the ring hold packet numbers lo..pn, keeping every entry from lo on at its number. */
static int grow(pure_rtb *rtb, const pure_alloc *a, uint64_t pn)
{
    uint32_t cap = rtb->cap ? rtb->cap * 2 : 8; /* small first: most flights are short */
    while ((uint64_t)cap <= pn - rtb->lo)
        cap *= 2;
    if (cap > PURE_RTB_MAX_CAP)
        return PURE_ENOMEM;
    pure_sent *r = pure_mem_alloc(a, cap * sizeof *r);
    if (!r)
        return PURE_ENOMEM;
    memset(r, 0, cap * sizeof *r);
    for (uint64_t q = rtb->lo; q < pn && rtb->cap; q++)
        r[q & (cap - 1)] = *slot(rtb, q);
    pure_mem_free(a, rtb->sent, rtb->cap * sizeof *r);
    rtb->sent = r;
    rtb->cap = cap;
    return 0;
}

int pure_rtb_reserve(pure_rtb *rtb, const pure_alloc *a, uint32_t n)
{
    if (rtb->in_flight == 0) {
        if (rtb->cap >= n)
            return 0;
        rtb->lo = rtb->next_pn; /* nothing older is live: the ring starts here */
    }
    uint64_t last = rtb->next_pn + n - 1;
    return last - rtb->lo >= rtb->cap ? grow(rtb, a, last) : 0;
}

int pure_rtb_on_sent(pure_rtb *rtb, const pure_alloc *a, const pure_sent *s)
{
    uint64_t pn = rtb->next_pn;
    if (rtb->in_flight == 0) {
        if (!(s->flags & PURE_SENT_LIVE)) {
            rtb->lo = pn + 1; /* an ACK-only packet of an idle link: nothing to track */
            rtb->next_pn = pn + 1;
            return 0;
        }
        rtb->lo = pn; /* nothing older is live */
    }
    if (pn - rtb->lo >= rtb->cap && grow(rtb, a, pn) != 0)
        return PURE_ENOMEM;
    /* Every packet number gets its slot written (ACK-only ones as not live), so a slot never
     * shows an older lap's entry. */
    *slot(rtb, pn) = *s;
    rtb->next_pn = pn + 1;
    if (s->flags & PURE_SENT_LIVE) {
        rtb->in_flight++;
        rtb->last_eliciting_sent = s->time;
    }
    return 0;
}

uint64_t pure_rtb_skip(pure_rtb *rtb)
{
    return rtb->next_pn++;
}

/* A packet left flight (acknowledged, lost or discarded). */
static void retire(pure_rtb *rtb, pure_sent *e)
{
    e->flags &= (uint8_t)~PURE_SENT_LIVE;
    rtb->in_flight--;
}

static void advance_lo(pure_rtb *rtb)
{
    while (rtb->lo < rtb->next_pn && !(slot(rtb, rtb->lo)->flags & PURE_SENT_LIVE))
        rtb->lo++;
}

int pure_rtb_acked_begin(pure_rtb *rtb, pure_rtb_iter *it, const pure_ack_frame *ack)
{
    if (ack->largest >= rtb->next_pn)
        return PURE_EPROTO;
    it->ack = ack;
    it->i = 0;
    it->pn = ack->n ? ack->r[0].hi + 1 : 0;
    if (rtb->largest_acked == UINT64_MAX || ack->largest > rtb->largest_acked)
        rtb->largest_acked = ack->largest;
    return 0;
}

const pure_sent *pure_rtb_acked_next(pure_rtb *rtb, pure_rtb_iter *it, uint64_t *pn)
{
    while (it->i < it->ack->n) {
        /* below lo nothing is live (and the ring may not hold it) */
        uint64_t lo = it->ack->r[it->i].lo < rtb->lo ? rtb->lo : it->ack->r[it->i].lo;
        while (it->pn > lo) {
            pure_sent *e = slot(rtb, --it->pn);
            if (e->flags & PURE_SENT_LIVE) {
                retire(rtb, e);
                *pn = it->pn;
                return e;
            }
        }
        if (++it->i < it->ack->n)
            it->pn = it->ack->r[it->i].hi + 1;
    }
    return NULL;
}

void pure_rtb_lost_begin(pure_rtb *rtb, pure_rtb_iter *it, uint64_t delay, uint64_t now)
{
    rtb->loss_time = UINT64_MAX;
    it->pn = rtb->lo;
    /* only packets below the largest acknowledged can be lost (none before any ACK) */
    uint64_t la = rtb->largest_acked;
    it->end = la != UINT64_MAX && la > rtb->lo ? la : rtb->lo;
    it->delay = delay;
    it->now = now;
}

const pure_sent *pure_rtb_lost_next(pure_rtb *rtb, pure_rtb_iter *it, uint64_t *pn)
{
    for (; it->pn < it->end; it->pn++) {
        pure_sent *e = slot(rtb, it->pn);
        if (!(e->flags & PURE_SENT_LIVE))
            continue;
        uint64_t at = e->time + it->delay;
        if (rtb->largest_acked - it->pn >= PURE_RTB_PACKET_THRESHOLD || at <= it->now) {
            retire(rtb, e);
            *pn = it->pn++;
            return e;
        }
        if (at < rtb->loss_time)
            rtb->loss_time = at;
    }
    advance_lo(rtb);
    return NULL;
}

void pure_rtb_discard_begin(pure_rtb *rtb, pure_rtb_iter *it, uint64_t first_pn)
{
    it->pn = first_pn < rtb->lo ? rtb->lo : first_pn;
    it->end = rtb->next_pn;
}

const pure_sent *pure_rtb_discard_next(pure_rtb *rtb, pure_rtb_iter *it, uint64_t *pn)
{
    for (; it->pn < it->end; it->pn++) {
        pure_sent *e = slot(rtb, it->pn);
        if (e->flags & PURE_SENT_LIVE) {
            retire(rtb, e);
            *pn = it->pn++;
            return e;
        }
    }
    advance_lo(rtb);
    return NULL;
}

void pure_rtb_free(pure_rtb *rtb, const pure_alloc *a)
{
    pure_mem_free(a, rtb->sent, rtb->cap * sizeof *rtb->sent);
    rtb->sent = NULL;
    rtb->cap = 0;
    rtb->in_flight = 0;
    rtb->lo = rtb->next_pn;
}
