/* SPDX-License-Identifier: MIT */
/* recovery.c: loss recovery's policy in the manner of RFC 9002, over the retransmission buffer
 * (rtb.c, which keeps every ack-eliciting packet until acknowledged or declared lost and says
 * which): what an acknowledged or lost packet means for RTT, congestion control (which losses
 * are congestion; the response stops at the delivery-rate floor: cc.c, bwe.h) and the stream, and
 * the probe timeout when acknowledgements stop. Lost stream bytes go back into the link's `lost`
 * set and are sent again from the send buffer by offset. It calls nothing above it:
 * pure_recovery_on_ack returns what the caller must act on. */

#include "flight.h"
#include "frame.h"
#include "link_cancel.h"
#include "link_chan.h"
#include "recovery.h"
#include "registry.h"
#include "rekey.h"
#include "timers.h"
#include "varint.h"

#define PURE_LOSS_RATE_CONGESTED (65536 / 5) /* 20% */
/* 2 ms: less is the sender's own doing, not a queue to answer: a burst of 1 ms of the pacing
 * rate at 1.25 x the bottleneck's rate queues for about that long, below the BDP too, and ACKs
 * arriving in clumps add to it (at 1 ms, 0.5% random loss on a 50 Mbit/s path kept 68% of it;
 * at 2 ms, 85%; a 10-packet queue at 50 Mbit/s still shows at 2.4 ms) */
#define PURE_QUEUE_MIN 2000000ull
/* 6 ms: a queue standing this deep when a packet is lost is congestion, however deep the queue
 * was lately. The recent maximum lets a window grow into a deep drop-tail buffer until its
 * losses come with most of the buffer's delay; but the maximum slow start leaves (60-140 ms under
 * CoDel at 40 ms) decays over seconds, and meanwhile an AQM's drops read as random: CoDel
 * escalated while Pure held its window (40 of a drain's 53 drops taken as random, median
 * queueing 5.3 ms). An AQM holds its target at 5 ms, and its drops are seen a round trip after
 * it acted, when its queue has shrunk: with ACKs every PURE_ACK_SPACING (acktr.h) the RTT samples
 * follow that shrinking closely, and at 10 ms a cold start's CoDel drops seen at 7-10 ms read as
 * random (3 of 11). Random loss keeps its lead: with those ACKs its queue stays near 1 ms, and
 * 0.5% random loss at 1 BDP gives the same 42-44 Mbit/s in the simulator at 5, 6, 8 or 10 ms. */
#define PURE_QUEUE_CAP 6000000ull

int pure_recovery_on_sent(pure_link *link, const pure_sent *s)
{
    int idle = pure_rtb_in_flight(&link->rtb) == 0;
    int rc = pure_rtb_on_sent(&link->rtb, &link->ctx->alloc, s);
    if (rc != 0 || !(s->flags & PURE_SENT_LIVE))
        return rc;
    if (idle)
        link->wait_start = s->time;
    pure_cc_on_sent(&link->b->cc, s->size);
    pure_flight_sent(link, s->size);
    return 0;
}

/* The queueing delay the latest RTT sample shows: its excess over the path's minimum, less the
 * peer's reported ACK delay (valid once the RTT has a sample). */
static uint64_t queueing_now(const pure_link *link)
{
    return link->latest_adjusted > link->rtt.min ? link->latest_adjusted - link->rtt.min : 0;
}

/* Is a loss a sign of congestion? Evidence is the queue: a loss while the latest RTT (less the
 * peer's reported ACK delay) stands well above the path's minimum, by more than half the
 * queueing delay seen lately (or by PURE_QUEUE_CAP) and by at least 2 ms, is the queue
 * overflowing or an AQM acting (a switch's shallow buffer fills at 2.4 ms at 50 Mbit/s, CoDel
 * drops above 5 ms); a loss with no
 * such queue (a radio, a corrupting link, a policer far from full) is taken as random: sent
 * again, the window kept, in the spirit of TCP Veno. Half the recent maximum rather than a fixed
 * share of the RTT: a path whose queue never grows past a few milliseconds is judged by that
 * queue, and a deep one is filled only until its losses come with most of its delay. A loss
 * rate over PURE_LOSS_RATE_CONGESTED counts whatever the delay (a shallow queue on a fast link
 * fills in microseconds). A congestion response goes no lower than the delivery-rate floor
 * (cc.c, bwe.h). */
static int loss_is_congestion(pure_link *link)
{
    if (!link->rtt.has_sample)
        return 1;
    uint64_t queueing = queueing_now(link);
    uint64_t threshold = link->b->qdelay_max / 2;
    if (threshold > PURE_QUEUE_CAP)
        threshold = PURE_QUEUE_CAP;
    if (threshold < PURE_QUEUE_MIN)
        threshold = PURE_QUEUE_MIN;
    return queueing > threshold || link->b->loss_rate > PURE_LOSS_RATE_CONGESTED;
}

/* The first slow start ends (its first congestion response just ran). Its window doubled in the
 * round trip the loss took to be seen, so beta of it is still up to 1.5 times what the path
 * holds: the packets sent after the reduction are lost too, two more reductions follow, and the
 * window ends below the BDP (a quarter-BDP queue at 40 ms: 458 -> 320 -> 225 -> 157 packets, the
 * BDP 170). On a shallow queue, where the loss came with less queueing than half the minimum RTT,
 * take the window no higher than what the path delivered: the fastest quarter-RTT delivery rate
 * (bwe.h) times the smoothed RTT, which counts the queue (pure_cc_cap: CUBIC's plateau). Not on a
 * deep one: a flow joining another's standing queue sees only its own small share delivered, and
 * a deep buffer's long cycles would hold it there (two flows at 4 BDP in paths_test: Jain 0.94,
 * 0.64 without this condition). */
static void exit_at_hold(pure_link *link)
{
    pure_cc *cc = &link->b->cc;
    const pure_rtt *r = &link->rtt;
    if (r->has_sample && cc->bwe.peak_bps && queueing_now(link) <= r->min / 2)
        pure_cc_cap(cc, pure_bwe_bytes(cc->bwe.peak_bps, r->smoothed));
}

/* Loss rate as an exponentially weighted average over packets, in 1/65536ths. */
static void loss_rate_update(pure_link *link, int lost)
{
    uint32_t r = link->b->loss_rate;
    link->b->loss_rate = lost ? r + ((65536 - r) >> 5) : r - (r >> 5);
}

/* Stream bytes from `off` on must go again, and the set that would say so (lost, or acked for
 * bytes the peer has) could not grow: memory ran out. Nothing is forgotten: they go again as new
 * (pure_sendbuf_resend_from; the peer takes duplicates as duplicates). */
static void resend_from(pure_link *link, uint64_t off)
{
    link->send_next = pure_sendbuf_resend_from(&link->sb, link->send_next, off);
}

/* What a packet carried that must go out again now that it will not be acknowledged: its stream
 * bytes, its FIN, its credit update, its REKEY frame. */
static void requeue(pure_link *link, const pure_sent *e)
{
    if (e->chan || (e->flags & (PURE_SENT_CHAN_CREDIT | PURE_SENT_DATAGRAM)))
        pure_link_chan_on_lost(link, e); /* a channel's bytes, CHAN_CREDIT frames, a datagram */
    if (e->flags & PURE_SENT_CHAN_CREDIT)
        pure_link_cancel_on_lost(link); /* and cancel frames, if it had any */
    if (!e->chan && e->data_len &&      /* channel 0's bytes, whatever else the packet held */
        pure_ranges_add(&link->b->lost, &link->ctx->alloc, e->data_off,
                        e->data_off + e->data_len) != 0)
        resend_from(link, e->data_off);
    if (e->flags & PURE_SENT_FIN)
        link->fin_sent_pending = 1;
    if (e->flags & PURE_SENT_CREDIT)
        link->credit_pending = 1;
    if (e->flags & PURE_SENT_REKEY)
        pure_rekey_on_lost(link);
}

void pure_recovery_mss_sync(pure_link *link)
{
    if (link->b)
        link->mss = pure_pmtud_size(&link->b->pmtud);
}

/* Path MTU search (pmtud.c): what a packet's fate says of the path's datagram size. A probe's
 * loss says only that its size is too large: pmtud hears of it, the congestion controller and
 * the loss rate do not. Returns 1 if the packet was a probe. */
static int pmtud_on_fate(pure_link *link, const pure_sent *e, int lost, uint64_t now)
{
    pure_pmtud *p = &link->b->pmtud;
    int probe = (e->flags & PURE_SENT_PMTU_PROBE) != 0;
    if (probe && lost) {
        pure_flight_gone(link, e->size);
        pure_cc_on_discarded(&link->b->cc, e->size);
        pure_pmtud_on_probe_lost(p, e->size, now);
    } else if (probe) {
        pure_pmtud_on_probe_acked(p, e->size, now);
    } else if (lost) {
        pure_pmtud_on_lost(p, e->size, e->time);
    } else {
        pure_pmtud_on_acked(p, e->size, e->time, now);
    }
    pure_recovery_mss_sync(link);
    return probe;
}

/* A packet was declared lost (it is out of flight already). */
static void on_lost(pure_link *link, const pure_sent *e, uint64_t now)
{
    if (pmtud_on_fate(link, e, 1, now))
        return;
    pure_flight_gone(link, e->size);
    loss_rate_update(link, 1);
    if (!loss_is_congestion(link)) {
        pure_cc_on_discarded(&link->b->cc, e->size);
        link->st.random_losses++;
    } else {
        pure_cc *cc = &link->b->cc;
        int first = cc->ssthresh == UINT64_MAX;
        pure_cc_on_lost(cc, e->size, e->time, now);
        if (first && cc->ssthresh != UINT64_MAX)
            exit_at_hold(link);
    }
    link->st.packets_lost++;
    requeue(link, e);
}

static void detect_lost(pure_link *link, uint64_t now)
{
    pure_rtb_iter it;
    uint64_t pn;
    int any = 0;
    pure_rtb_lost_begin(&link->rtb, &it, pure_rtt_loss_delay(&link->rtt), now);
    const pure_sent *e;
    while ((e = pure_rtb_lost_next(&link->rtb, &it, &pn)) != NULL) {
        on_lost(link, e, now);
        any = 1;
    }
    if (any)
        pure_ctx_mark_pending(link->ctx, link);
}

/* Counts whole messages below the acknowledged point (for on_closed's report) before the send
 * buffer forgets them. The walk reads each message's length prefix back from the ring, so it
 * runs once per acknowledged message: its state is kept in locals (the link's fields are stored
 * once at the end) and a prefix that does not wrap around the ring's end is one load. */
static void count_acked_messages(pure_link *link, uint64_t acked_to)
{
    const pure_sendbuf *sb = &link->sb;
    uint64_t at = link->msg_boundary, n = link->msgs_acked;
    if (at + 4 > acked_to)
        goto tail;
    if (link->msg_len_known) { /* read while it straddled an earlier release point */
        uint64_t end = at + 4 + link->msg_len;
        if (end > acked_to)
            return;
        n++;
        at = end;
        link->msg_len_known = 0;
    }
    while (at + 4 <= acked_to) {
        uint64_t i = at & (sb->cap - 1);
        uint32_t len;
        if (i + 4 > sb->cap) { /* the prefix wraps around the ring's end */
            len = pure_sendbuf_get_u32_wrapped(sb, at);
            if (at + 4 + len > acked_to)
                goto partial;
            n++;
            at += 4 + (uint64_t)len;
            continue;
        }
        /* The prefixes that start before the ring's end (or the acknowledged point): each is
         * a load, a byte swap and two comparisons. */
        const uint8_t *q = sb->buf + i;
        uint64_t stop = acked_to - at < sb->cap - i ? acked_to : at + (sb->cap - i);
        while (at + 4 <= stop) {
            len = pure_get_u32be(q);
            uint64_t step = 4 + (uint64_t)len;
            if (at + step > acked_to)
                goto partial;
            n++;
            at += step;
            q += step;
        }
        continue;
    partial:
        link->msg_len = len; /* its start is held; the rest of it is not acknowledged yet */
        link->msg_len_known = 1;
        break;
    }
    link->msg_boundary = at;
    link->msgs_acked = n;
tail:
    if (!link->msg_len_known && at + 4 <= sb->end && at + 4 > acked_to && at < acked_to) {
        /* the length prefix straddles the release point: read it while it is held */
        link->msg_len = pure_sendbuf_get_u32(sb, at);
        link->msg_len_known = 1;
    }
}

/* The RTT sample an ACK gives when it newly acknowledges its largest packet, sent at `sent`. */
static void rtt_sample(pure_link *link, const pure_ack_frame *ack, uint64_t sent, uint64_t now)
{
    uint64_t sample = now - sent;
    uint64_t reported = ack->delay_us > UINT64_MAX / 1000 ? UINT64_MAX : ack->delay_us * 1000;
    pure_rtt_sample(&link->rtt, sample, reported, link->ctx->s.max_ack_delay);
    /* The network's part, which only sizes pacing bursts: from the ACK's arrival (time it then
     * waited for this loop is this host's, pure_rx_time), less all the delay the peer reports,
     * unclamped (a peer whose loop is saturated holds packets far longer than max_ack_delay). The
     * RTT estimate above keeps both hosts' waits: a probe timeout must not fire on a reply that
     * is only waiting in a busy loop's socket. A report as long as the sample, or an arrival before
     * the send (a clock mapped badly), says nothing of the path. */
    uint64_t at = pure_rx_time(link->ctx, now);
    if (at >= sent && reported < at - sent)
        pure_pacer_path_sample(&link->b->pacer, at - sent - reported);
    uint64_t delay = reported;
    if (delay > link->ctx->s.max_ack_delay)
        delay = link->ctx->s.max_ack_delay;
    link->latest_adjusted = sample > link->rtt.min + delay
                                ? sample - delay
                                : (sample < link->rtt.min ? sample : link->rtt.min);
    /* the queueing delay seen lately: a maximum that decays by 1/256 a sample (~1 s at a few
     * ACKs per round trip) */
    uint64_t q = link->latest_adjusted - link->rtt.min;
    link->b->qdelay_max -= link->b->qdelay_max >> 8;
    if (q > link->b->qdelay_max)
        link->b->qdelay_max = q;
}

/* Stream bytes acknowledged as a prefix can be forgotten. Returns the PURE_RECOVERY_* flags of
 * what moved on. */
static int release_acked(pure_link *link)
{
    uint64_t base = pure_ranges_contiguous_end(&link->b->acked, link->sb.base);
    if (base <= link->sb.base)
        return 0;
    uint64_t msgs_acked = link->msgs_acked;
    count_acked_messages(link, base);
    pure_sendbuf_release(&link->sb, base);
    if (link->send_next < base) /* a resend (resend_from) acknowledged meanwhile */
        link->send_next = base;
    pure_ranges_trim_below(&link->b->acked, base);
    pure_ranges_trim_below(&link->b->lost, base);
    return PURE_RECOVERY_STREAM_ACKED |
           (link->msgs_acked != msgs_acked ? PURE_RECOVERY_MSGS_ACKED : 0);
}

/* Draws the distance to the next skipped packet number (splitmix64 over the context's state: the
 * numbers need to be unknown to the peer, not secret like keys). */
static uint64_t skip_distance(pure_ctx *ctx)
{
    uint64_t z = (ctx->pn_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return PURE_PN_SKIP_MIN + z % PURE_PN_SKIP_SPREAD;
}

void pure_recovery_before_seal(pure_link *link)
{
    pure_busy *b = link->b;
    uint64_t pn = pure_rtb_next_pn(&link->rtb);
    if (b->skip_at == 0)
        b->skip_at = pn + skip_distance(link->ctx);
    if (pn < b->skip_at || pn == 0)
        return;
    pure_sent hole = {.time = 0}; /* not live: nothing to acknowledge, lose or send again */
    if (pure_rtb_on_sent(&link->rtb, &link->ctx->alloc, &hole) != 0)
        return; /* no memory to record it: skip another time */
    b->skipped = pn;
    b->skip_at = pn + 1 + skip_distance(link->ctx);
}

/* 1 if the ACK covers the packet number last skipped. */
static int acks_skipped(const pure_link *link, const pure_ack_frame *ack)
{
    uint64_t s = link->b->skipped;
    if (s == 0 || s > ack->largest)
        return 0;
    for (uint32_t i = 0; i < ack->n; i++)
        if (ack->r[i].lo <= s && s <= ack->r[i].hi)
            return 1;
    return 0;
}

int pure_recovery_on_ack(pure_link *link, const pure_ack_frame *ack, uint64_t now)
{
    if (acks_skipped(link, ack))
        return PURE_RECOVERY_FORGED;
    /* The next message's length prefix, which release_acked reads once the walk below is done:
     * with thousands of busy links it was written long ago and is cold in the ring. */
    if (!link->msg_len_known && link->msg_boundary < link->sb.end)
        pure_sendbuf_prefetch(&link->sb, link->msg_boundary);
    pure_rtb_iter it;
    if (pure_rtb_acked_begin(&link->rtb, &it, ack) != 0)
        return 0; /* acknowledges a packet never sent: ignore the frame */
    uint64_t acked_bytes = 0, largest_time = 0, largest_sent = 0, pn;
    int largest_new = 0, any = 0, fin_now = 0, chan_acked = 0;
    const pure_sent *e;
    pure_pmtud_ack_begin(&link->b->pmtud);
    while ((e = pure_rtb_acked_next(&link->rtb, &it, &pn)) != NULL) {
        if (pn == ack->largest) {
            largest_new = 1;
            largest_sent = e->time;
        }
        if (!any || e->time > largest_time)
            largest_time = e->time;
        any = 1;
        acked_bytes += e->size;
        pmtud_on_fate(link, e, 0, now);
        pure_flight_gone(link, e->size);
        loss_rate_update(link, 0);
        if (e->chan) {
            pure_link_chan_on_acked(link, e);
            chan_acked = 1;
        } else if (e->data_len && pure_ranges_add(&link->b->acked, &link->ctx->alloc, e->data_off,
                                                  e->data_off + e->data_len) != 0) {
            resend_from(link, e->data_off); /* acknowledged again later, and recorded then */
        }
        if ((e->flags & PURE_SENT_FIN) && !link->fin_acked)
            link->fin_acked = fin_now = 1;
        if (e->flags & PURE_SENT_CHAN_CREDIT)
            pure_link_cancel_on_acked(link, pn); /* cancel answers it carried arrived */
    }
    if (!any)
        return 0;
    link->b->acked_sent_time = largest_time;
    if (largest_new)
        rtt_sample(link, ack, largest_sent, now);
    pure_cc_on_acked(&link->b->cc, acked_bytes, largest_time, now, &link->rtt, link->app_limited);
    link->pto_count = 0;
    link->b->pto_not_before = 0; /* progress: a probe held back for a read backlog is moot */
    int flags = PURE_RECOVERY_ACKED | release_acked(link) |
                (fin_now ? PURE_RECOVERY_STREAM_ACKED : 0); /* a graceful close may wait on it */
    int chan_moved = chan_acked ? pure_link_chan_after_ack(link) : 0;
    if (chan_moved)
        flags |=
            PURE_RECOVERY_STREAM_ACKED | ((chan_moved & 1) ? PURE_RECOVERY_CHAN_MSGS_ACKED : 0);
    detect_lost(link, now);
    if (pure_pmtud_ack_end(&link->b->pmtud)) /* a black hole for full-size packets */
        pure_recovery_mss_sync(link);
    return flags;
}

void pure_recovery_on_ecn(pure_link *link, uint64_t ce, uint64_t now)
{
    pure_busy *b = link->b;
    uint16_t count = (uint16_t)ce;
    uint16_t delta = (uint16_t)(count - b->ce_peer);
    if (!b->ce_peer_synced) { /* our count restarted with this busy period; the peer's may not */
        b->ce_peer_synced = 1;
        b->ce_peer = count;
        return;
    }
    if (delta == 0 || delta >= 0x8000) /* no news, or a report older than one already read */
        return;
    b->ce_peer = count;
    link->st.ecn_ce_reported += delta;
    /* A CE mark is the queue's own word that it is congested (RFC 3168): no evidence to weigh,
     * so the reduction goes through whatever the queueing delay says. Nothing was lost, so
     * nothing leaves the flight. */
    pure_cc_on_congestion(&link->b->cc, b->acked_sent_time, now);
}

void pure_recovery_on_ce_received(pure_link *link)
{
    link->b->ce_received++;
    link->st.ecn_ce_received++;
}

int pure_recovery_on_delivered(pure_link *link, uint64_t offset)
{
    /* Past everything accepted: no peer had that. (Not send_next: a resend after a loss that
     * could not be recorded (resend_from) may have put it below what was sent, and the offset
     * is then honest; an authenticated peer that lies about delivery could as well lie in an
     * ACK, and release_acked keeps send_next at the base.) */
    if (!link->b || offset > link->sb.end)
        return 0;
    /* Bytes past it that ACKs covered were held out of order and never delivered: they must
     * not join the acknowledged prefix once the gap below them is filled. */
    pure_ranges_remove(&link->b->acked, &link->ctx->alloc, offset, PURE_VARINT_MAX);
    if (offset <= link->sb.base)
        return 0;
    pure_ranges_add(&link->b->acked, &link->ctx->alloc, link->sb.base, offset);
    return release_acked(link);
}

int pure_recovery_discard_from(pure_link *link, uint64_t first_pn, uint64_t now)
{
    if (!link->b)
        return 0;
    pure_rtb_iter it;
    uint64_t pn;
    const pure_sent *e;
    int others = 0;
    pure_rtb_discard_begin(&link->rtb, &it, first_pn);
    while ((e = pure_rtb_discard_next(&link->rtb, &it, &pn)) != NULL) {
        pure_cc_on_discarded(&link->b->cc, e->size);
        pure_flight_gone(link, e->size);
        if (e->flags & PURE_SENT_PMTU_PROBE) { /* this host refused the probe's size */
            pure_pmtud_on_probe_lost(&link->b->pmtud, e->size, now);
            pure_recovery_mss_sync(link);
            continue;
        }
        others++;
        requeue(link, e);
    }
    return others;
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
    if (to > from && pure_ranges_add(&link->b->lost, &link->ctx->alloc, from, to) != 0)
        resend_from(link, from);
}

void pure_recovery_probe_now(pure_link *link)
{
    if (!link->b || link->pto_count == 0 || pure_rtb_in_flight(&link->rtb) == 0)
        return;
    link->probe_pending = 1;
    resend_oldest(link); /* lost bytes go lowest first: these lead */
    pure_ctx_mark_pending(link->ctx, link);
}

void pure_recovery_on_timeout(pure_link *link, uint64_t now)
{
    if (!link->b)
        return; /* nothing was sent since the link fell idle */
    if (pure_rtb_loss_time(&link->rtb) != UINT64_MAX) {
        if (now >= pure_rtb_loss_time(&link->rtb))
            detect_lost(link, now);
        return;
    }
    if (pure_rtb_in_flight(&link->rtb) == 0)
        return;
    /* The socket still holds datagrams that arrived after those read (pure_ctx_read_backlog),
     * and this timeout fell due after the newest of them: its ACK may be waiting there. Ask
     * again once the reads have caught up by as much as they are behind. */
    uint64_t horizon = link->ctx->read_horizon;
    if (horizon < now && pure_timer_deadline(link, PURE_TIMER_RECOVERY, now) > horizon) {
        link->b->pto_not_before = now + (now - horizon);
        link->ctx->guard.ptos_deferred++;
        return;
    }
    /* Probe timeout: send up to two ack-eliciting packets, ignoring the congestion window. If
     * nothing new or lost waits, resend the oldest outstanding data; from the second timeout in
     * a row, resend it anyway, ahead of other lost bytes: the peer acknowledged nothing the
     * first probe carried, as when a receiver short of memory (max_receive_memory) drops what
     * it cannot hold, and only the oldest bytes can move it on. */
    link->pto_count++;
    link->st.ptos++;
    link->probe_pending = 2;
    /* A key exchange under way goes again in the probes: while the key's last quarter holds data
     * back (pure_rekey_holds_data), nothing new is acknowledged to show its packet lost, and
     * the key may run out before the exchange completes. */
    pure_rekey_on_lost(link);
    /* Timeouts in a row with full-size packets unanswered: a black hole for them (pmtud.c). The
     * timeout's probes go at the base size (link_send.c), so the ACK they draw shows one sooner. */
    pure_pmtud_on_pto(&link->b->pmtud, link->pto_count);
    pure_recovery_mss_sync(link);
    if ((pure_ranges_empty(&link->b->lost) && link->send_next >= link->sb.end) ||
        link->pto_count >= 2) {
        resend_oldest(link);
        if (link->chans)
            pure_link_chan_on_pto(link, link->mss);
    }
    pure_ctx_mark_pending(link->ctx, link);
}
