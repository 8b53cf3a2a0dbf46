/* SPDX-License-Identifier: MIT */
/* recovery.c: loss recovery in the manner of RFC 9002: every ack-eliciting packet is kept in a
 * ring indexed by packet number until acknowledged or declared lost (3 packets or 9/8 RTT behind
 * the largest acknowledged), with a probe timeout when acknowledgements stop. Lost stream bytes
 * go back into the link's `lost` set and are sent again from the send buffer by offset. */
#include <string.h>

#include "frame.h"
#include "link.h"
#include "timers.h"

#define PACKET_THRESHOLD 3
#define PURE_LOSS_RATE_CONGESTED (65536 / 5) /* 20% */

static pure_sent *slot(const pure_link *link, uint64_t pn)
{
    return &link->sent[pn & (link->sent_cap - 1)];
}

int pure_recovery_on_sent(pure_link *link, uint64_t pn, const pure_sent *s)
{
    if (link->eliciting_in_flight == 0) {
        link->sent_lo = pn; /* nothing older is live */
        if (!(s->flags & PURE_SENT_LIVE)) {
            link->sent_lo = pn + 1; /* an ACK-only packet of an idle link: nothing to track */
            return 0;
        }
    }
    if (link->sent_cap == 0 || pn - link->sent_lo >= link->sent_cap) {
        uint32_t cap = link->sent_cap ? link->sent_cap * 2 : 8; /* small first: most flights are short */
        while ((uint64_t)cap <= pn - link->sent_lo)
            cap *= 2;
        if (cap > (1u << 24))
            return PURE_ENOMEM;
        pure_sent *r = pure_mem_alloc(&link->ctx->alloc, cap * sizeof *r);
        if (!r)
            return PURE_ENOMEM;
        memset(r, 0, cap * sizeof *r);
        for (uint64_t q = link->sent_lo; q < pn && link->sent_cap; q++)
            r[q & (cap - 1)] = *slot(link, q);
        pure_mem_free(&link->ctx->alloc, link->sent, link->sent_cap * sizeof *r);
        link->sent = r;
        link->sent_cap = cap;
    }
    /* Every packet number gets its slot written (ACK-only ones as not live), so a slot never
     * shows an older lap's entry. */
    *slot(link, pn) = *s;
    if (!(s->flags & PURE_SENT_LIVE))
        return 0;
    if (link->eliciting_in_flight == 0)
        link->wait_start = s->time;
    link->eliciting_in_flight++;
    link->last_eliciting_sent = s->time;
    pure_cc_on_sent(&link->b->cc, s->size);
    return 0;
}

void pure_recovery_free(pure_link *link)
{
    pure_mem_free(&link->ctx->alloc, link->sent, link->sent_cap * sizeof *link->sent);
    link->sent = NULL;
    link->sent_cap = 0;
}

/* A packet left flight (acknowledged or lost): undo what it held. */
static void retire(pure_link *link, pure_sent *e)
{
    e->flags &= (uint8_t)~PURE_SENT_LIVE;
    link->eliciting_in_flight--;
}

static void advance_lo(pure_link *link)
{
    while (link->sent_lo < link->next_pn && !(slot(link, link->sent_lo)->flags & PURE_SENT_LIVE))
        link->sent_lo++;
}

/* Is a loss a sign of congestion? A congested queue shows as delay: the latest RTT well above the
 * path's minimum. Loss with no queueing delay (a radio, a corrupting link, a policer far from
 * full) is taken as random: the packet is sent again but the window is kept, in the spirit of
 * TCP Veno. A high loss rate counts as congestion whatever the delay, so a shallow buffer that
 * drops before it delays still slows us down. */
static int loss_is_congestion(pure_link *link)
{
    const pure_rtt *r = &link->rtt;
    if (!r->has_sample)
        return 1;
    /* the latest sample less the ACK delay the peer reported: a receiver holding its ACK for a
     * few milliseconds is not a queue */
    uint64_t latest = link->latest_adjusted;
    uint64_t queueing = latest > r->min ? latest - r->min : 0;
    uint64_t threshold = r->min / 2 > 1000000 ? r->min / 2 : 1000000; /* 1 ms at least */
    return queueing > threshold || link->loss_rate > PURE_LOSS_RATE_CONGESTED;
}

/* Loss rate as an exponentially weighted average over packets, in 1/65536ths. */
static void loss_rate_update(pure_link *link, int lost)
{
    uint32_t r = link->loss_rate;
    r = lost ? r + ((65536 - r) >> 5) : r - (r >> 5);
    link->loss_rate = r;
}

/* What a packet carried that must go out again now that it will not be acknowledged: its stream
 * bytes, its FIN, its credit update, its REKEY frame. */
static void requeue(pure_link *link, const pure_sent *e)
{
    if (e->data_len)
        pure_ranges_add(&link->b->lost, &link->ctx->alloc, e->data_off, e->data_off + e->data_len);
    if (e->flags & PURE_SENT_FIN)
        link->fin_sent_pending = 1;
    if (e->flags & PURE_SENT_CREDIT)
        link->credit_pending = 1;
    if (e->flags & PURE_SENT_REKEY)
        pure_rekey_on_lost(link);
}

static void on_lost(pure_link *link, uint64_t pn, pure_sent *e, uint64_t now)
{
    retire(link, e);
    loss_rate_update(link, 1);
    if (loss_is_congestion(link)) {
        pure_cc_on_lost(&link->b->cc, e->size, e->time, now);
    } else {
        pure_cc_on_discarded(&link->b->cc, e->size);
        link->st.random_losses++;
    }
    link->st.packets_lost++;
    requeue(link, e);
    (void)pn;
}

static void detect_lost(pure_link *link, uint64_t now)
{
    link->loss_time = UINT64_MAX;
    if (!link->has_largest_acked)
        return;
    uint64_t delay = pure_rtt_loss_delay(&link->rtt);
    int any = 0;
    for (uint64_t pn = link->sent_lo; pn < link->largest_acked; pn++) {
        pure_sent *e = slot(link, pn);
        if (!(e->flags & PURE_SENT_LIVE))
            continue;
        if (link->largest_acked - pn >= PACKET_THRESHOLD || e->time + delay <= now) {
            on_lost(link, pn, e, now);
            any = 1;
        } else if (e->time + delay < link->loss_time) {
            link->loss_time = e->time + delay;
        }
    }
    advance_lo(link);
    if (any)
        pure_ctx_mark_pending(link->ctx, link);
}

/* Counts whole messages below the acknowledged point (for on_closed's report) before the send
 * buffer forgets them. */
static void count_acked_messages(pure_link *link, uint64_t acked_to)
{
    while (link->msg_boundary + 4 <= acked_to) {
        if (!link->msg_len_known) {
            link->msg_len = pure_sendbuf_get_u32(&link->sb, link->msg_boundary);
            link->msg_len_known = 1;
        }
        uint64_t end = link->msg_boundary + 4 + link->msg_len;
        if (end > acked_to)
            break;
        link->msgs_acked++;
        link->msg_boundary = end;
        link->msg_len_known = 0;
    }
    if (!link->msg_len_known && link->msg_boundary + 4 <= link->sb.end &&
        link->msg_boundary + 4 > acked_to && link->msg_boundary < acked_to) {
        /* the length prefix straddles the release point: read it while it is held */
        link->msg_len = pure_sendbuf_get_u32(&link->sb, link->msg_boundary);
        link->msg_len_known = 1;
    }
}

void pure_recovery_on_ack(pure_link *link, const pure_ack_frame *ack, uint64_t now)
{
    if (ack->largest >= link->next_pn)
        return; /* acknowledges a packet never sent: ignore the frame */
    uint64_t acked_bytes = 0, largest_time = 0;
    int largest_new = 0, any = 0;
    for (uint32_t i = 0; i < ack->n; i++) {
        uint64_t lo = ack->r[i].lo < link->sent_lo ? link->sent_lo : ack->r[i].lo;
        for (uint64_t pn = ack->r[i].hi + 1; pn-- > lo;) {
            if (pn < link->sent_lo)
                break;
            pure_sent *e = slot(link, pn);
            if (!(e->flags & PURE_SENT_LIVE))
                continue;
            if (pn == ack->largest)
                largest_new = 1;
            if (!any || e->time > largest_time)
                largest_time = e->time;
            any = 1;
            acked_bytes += e->size;
            loss_rate_update(link, 0);
            retire(link, e);
            if (e->data_len)
                pure_ranges_add(&link->b->acked, &link->ctx->alloc, e->data_off,
                                e->data_off + e->data_len);
        }
    }
    if (link->path_unvalidated && ack->largest >= link->path_probe_pn)
        link->path_unvalidated = 0; /* the peer got a packet at its new address */
    if (!link->has_largest_acked || ack->largest > link->largest_acked) {
        link->largest_acked = ack->largest;
        link->has_largest_acked = 1;
    }
    if (!any)
        return;
    if (largest_new) {
        uint64_t sample = now - slot(link, ack->largest)->time;
        pure_rtt_sample(&link->rtt, sample, ack->delay_us * 1000, link->ctx->s.max_ack_delay);
        uint64_t delay = ack->delay_us * 1000;
        if (delay > link->ctx->s.max_ack_delay)
            delay = link->ctx->s.max_ack_delay;
        link->latest_adjusted =
            sample > link->rtt.min + delay ? sample - delay : (sample < link->rtt.min ? sample : link->rtt.min);
    }
    pure_cc_on_acked(&link->b->cc, acked_bytes, largest_time, now, &link->rtt, link->app_limited);
    link->pto_count = 0;

    /* Stream bytes acknowledged as a prefix can be forgotten. */
    uint64_t base = pure_ranges_contiguous_end(&link->b->acked, link->sb.base);
    int progress = base > link->sb.base;
    uint64_t msgs_acked = link->msgs_acked;
    if (progress) {
        count_acked_messages(link, base);
        pure_sendbuf_release(&link->sb, base);
        pure_ranges_trim_below(&link->b->acked, base);
        pure_ranges_trim_below(&link->b->lost, base);
    }
    detect_lost(link, now);
    advance_lo(link);
    if (pure_link_wants_send(link, now))
        pure_ctx_mark_pending(link->ctx, link);
    pure_link_check_writable(link);
    if (link->sb.base == link->sb.end && link->eliciting_in_flight == 0)
        pure_timers_went_idle(link, now);
    /* on_writable may have ended the link: no callback after on_closed */
    if (link->msgs_acked != msgs_acked && link->ctx->cb.on_acked && !link->closed_notified)
        link->ctx->cb.on_acked(link, link->user, link->msgs_acked - 1);
    if (progress && link->state == PURE_LS_OPEN)
        pure_link_on_acked(link, now); /* last: it may end the link */
}

void pure_recovery_discard_from(pure_link *link, uint64_t first_pn)
{
    if (!link->b)
        return;
    if (first_pn < link->sent_lo)
        first_pn = link->sent_lo;
    for (uint64_t pn = first_pn; pn < link->next_pn; pn++) {
        pure_sent *e = slot(link, pn);
        if (!(e->flags & PURE_SENT_LIVE))
            continue;
        retire(link, e);
        pure_cc_on_discarded(&link->b->cc, e->size);
        requeue(link, e);
    }
    advance_lo(link);
}

uint64_t pure_recovery_deadline(const pure_link *link)
{
    if (link->loss_time != UINT64_MAX)
        return link->loss_time;
    if (link->eliciting_in_flight == 0)
        return UINT64_MAX;
    uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    uint32_t shift = link->pto_count < 16 ? link->pto_count : 16;
    return link->last_eliciting_sent + (pto << shift);
}

/* Queues the oldest unacknowledged stream bytes (a packet's worth from sb.base, up to the first
 * acknowledged range) to be sent again: what the peer needs before anything else. The oldest
 * packet in flight may carry later bytes (a resend of a hole is newer than packets sent after
 * the hole), so the offset decides, not the packet number. */
static void resend_oldest(pure_link *link)
{
    uint64_t from = link->sb.base, to = pure_ranges_next_start(&link->b->acked, from);
    if (to > link->send_next)
        to = link->send_next;
    if (to - from > link->mss)
        to = from + link->mss;
    if (to > from)
        pure_ranges_add(&link->b->lost, &link->ctx->alloc, from, to);
}

void pure_recovery_probe_now(pure_link *link)
{
    if (!link->b || link->pto_count == 0 || link->eliciting_in_flight == 0)
        return;
    link->probe_pending = 1;
    resend_oldest(link); /* lost bytes go lowest first: these lead */
    pure_ctx_mark_pending(link->ctx, link);
}

void pure_recovery_on_timeout(pure_link *link, uint64_t now)
{
    if (!link->b)
        return; /* nothing was sent since the link fell idle */
    if (link->loss_time != UINT64_MAX) {
        if (now >= link->loss_time)
            detect_lost(link, now);
        return;
    }
    if (link->eliciting_in_flight == 0)
        return;
    /* Probe timeout: send up to two ack-eliciting packets, ignoring the congestion window. If
     * nothing new or lost waits, resend the oldest outstanding data; from the second timeout in
     * a row, resend it anyway, ahead of other lost bytes: the peer acknowledged nothing the
     * first probe carried, as when a receiver short of memory (max_receive_memory) drops what
     * it cannot hold, and only the oldest bytes can move it on. */
    link->pto_count++;
    link->st.ptos++;
    link->probe_pending = 2;
    if ((pure_ranges_empty(&link->b->lost) && link->send_next >= link->sb.end) ||
        link->pto_count >= 2)
        resend_oldest(link);
    pure_ctx_mark_pending(link->ctx, link);
}
