/* SPDX-License-Identifier: MIT */
/* timers.c: every timer a link has, in one place. A link files one deadline in the context's
 * timer heap, the earliest of those armed in its state:
 *
 *   HANDSHAKE    hs_retry       hs->retry_at: resend the INIT (backing off), or give up
 *   UNVALIDATED  hs_expire      created + handshake_timeout: the initiator never confirmed
 *   OPEN         idle           idle_timeout after we started waiting for the peer, while
 *                               ack-eliciting packets fly (no ACK: the peer is gone)
 *                close_give_up  close_deadline: a graceful close made no progress for
 *                               idle_timeout
 *                recovery       loss time threshold or probe timeout, while packets fly
 *                watch          the liveness watch: a link that may be waiting for its peer
 *                               though nothing is in flight (for idle_timeout after the
 *                               application last sent a message, while a message from the peer
 *                               is incomplete, or while a graceful close waits) sends a PING
 *                               after idle_timeout/2 of silence; like any ack-eliciting packet it
 *                               must be answered within idle_timeout. So a dead peer is found
 *                               within 1.5 x idle_timeout of its last packet whenever this side
 *                               has reason to expect one.
 *                ack            acktr's deadline: max_ack_delay after an unacknowledged packet
 *                keepalive      only when configured, keepalive after the last packet either way
 *                pace           pace_at: the pacer held packets back
 *                rx_retire      b->rx_retire_at: the previous receive key is wiped
 *                release        release_at: PURE_IDLE_RELEASE after the link fell idle, its
 *                               buffers go back (at once would free and refault megabytes on a
 *                               busy link whose backlog empties often)
 *                deadline       the earliest deadline of a channel message not yet acknowledged
 *                               (pure_link_send_on_deadline; link_cancel.c): it is cancelled
 *   CLOSING      close_resend   close_resend_at: the CLOSE again, each probe timeout (to a peer
 *                               that answers CLOSEs, 1, 1, 2, 4 ... probe timeouts apart)
 *                close_end      close_deadline: three probe timeouts after CLOSING began, or
 *                               16 (at most idle_timeout) when the peer answers CLOSEs (its
 *                               answer ends the period at once); a link answering the peer's
 *                               CLOSE: once that is written, or a probe timeout if it cannot be
 *
 * After that an idle link (nothing in flight, no message sent for idle_timeout, nothing
 * incomplete, no keepalive) has no timer at all: it costs nothing, and finds out that its peer
 * is gone the next time it sends. */
#include "link_chan.h"
#include "timers.h"
#include "registry.h"
#include "tparams.h"

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}
static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* How long the peer may stay silent: idle_timeout, but at least three probe timeouts (RFC 9000
 * section 10.1), which hold max_ack_delay: a peer may hold the ACK of a short tail that long, and
 * with max_ack_delay above idle_timeout links timed out while the ACK was on its way
 * (settings_test, max_ack_delay at its most). An estimate restarted after idleness has no sample
 * and its guess (333 ms) is no evidence of a long path: there the floor is three times
 * max_ack_delay, so a dead peer is still found within 1.5 x idle_timeout (lifecycle_test). */
static uint64_t idle_period(const pure_link *link)
{
    uint64_t mad = link->ctx->s.max_ack_delay;
    uint64_t pto =
        link->rtt.has_sample ? pure_rtt_pto(&link->rtt, mad) : mad + PURE_RTT_GRANULARITY;
    return max64(link->ctx->s.idle_timeout, 3 * pto);
}

static uint64_t idle_deadline(const pure_link *link)
{
    if (!pure_rtb_in_flight(&link->rtb) || link->peer_closed)
        return UINT64_MAX; /* peer_closed: its CLOSE waits for our delivery (link_recv.c) */
    return max64(link->last_recv, link->wait_start) + idle_period(link);
}

/* Is there reason to expect the peer to speak though nothing is in flight? */
static int expecting(const pure_link *link, uint64_t now)
{
    if (link->peer_closed)
        return 0; /* it closed: its CLOSE waits for our delivery (link_recv.c) */
    if (link->close_requested)
        return 1;
    if (link->b && (!pure_msgparse_at_boundary(&link->b->parse) || !pure_rob_empty(&link->b->rob)))
        return 1; /* the peer is in the middle of a message */
    if (pure_link_chan_stalled(link))
        return 1; /* a channel's message waits for memory: probe, so packets keep coming */
    return link->next_msg_id && now < link->last_msg_sent + link->ctx->s.idle_timeout;
}

static uint64_t watch_deadline(const pure_link *link, uint64_t now)
{
    if (pure_rtb_in_flight(&link->rtb) || link->ping_pending || !expecting(link, now))
        return UINT64_MAX;
    uint64_t at = link->last_recv + link->ctx->s.idle_timeout / 2;
    /* the watch ends idle_timeout after the last message: no probe past it */
    if (!link->close_requested && link->b && pure_msgparse_at_boundary(&link->b->parse) &&
        pure_rob_empty(&link->b->rob) && at >= link->last_msg_sent + link->ctx->s.idle_timeout)
        return UINT64_MAX;
    return at;
}

static uint64_t keepalive_deadline(const pure_link *link)
{
    /* Whichever side configured a keepalive sends it (configure one side only, or both sides'
     * PINGs cross every interval). */
    uint64_t ka = link->ctx->s.keepalive;
    if (!ka || pure_rtb_in_flight(&link->rtb) || link->ping_pending || link->peer_closed)
        return UINT64_MAX;
    return max64(link->last_recv, link->last_sent) + ka;
}

/* The loss time threshold of a packet in flight, else the probe timeout (backing off). */
static uint64_t recovery_deadline(const pure_link *link)
{
    uint64_t loss_time = pure_rtb_loss_time(&link->rtb);
    if (loss_time != UINT64_MAX)
        return loss_time;
    if (pure_rtb_in_flight(&link->rtb) == 0)
        return UINT64_MAX;
    uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    uint32_t shift = link->pto_count < 16 ? link->pto_count : 16;
    uint64_t at = pure_rtb_last_eliciting_sent(&link->rtb) + (pto << shift);
    return link->b && link->b->pto_not_before > at ? link->b->pto_not_before : at;
}

static uint64_t open_deadline(const pure_link *link, enum pure_timer t, uint64_t now)
{
    switch (t) {
    case PURE_TIMER_IDLE: return idle_deadline(link);
    case PURE_TIMER_CLOSE_GIVE_UP: return link->close_requested ? link->close_deadline : UINT64_MAX;
    case PURE_TIMER_RECOVERY: return recovery_deadline(link);
    case PURE_TIMER_WATCH: return watch_deadline(link, now);
    case PURE_TIMER_ACK: return pure_acktr_deadline(&link->acktr);
    case PURE_TIMER_KEEPALIVE: return keepalive_deadline(link);
    case PURE_TIMER_PACE: return link->pace_at;
    case PURE_TIMER_RX_RETIRE:
        return link->rx_retire == PURE_RX_RETIRE_TIMED && link->b ? link->b->rx_retire_at
                                                                  : UINT64_MAX;
    case PURE_TIMER_RELEASE: return link->release_at;
    case PURE_TIMER_DEADLINE: return link->chans ? link->chans->deadline_at : UINT64_MAX;
    default: return UINT64_MAX;
    }
}

uint64_t pure_timer_deadline(const pure_link *link, enum pure_timer t, uint64_t now)
{
    switch (link->state) {
    case PURE_LS_HANDSHAKE:
        return t == PURE_TIMER_HS_RETRY && link->hs ? link->hs->retry_at : UINT64_MAX;
    case PURE_LS_UNVALIDATED:
        return t == PURE_TIMER_HS_EXPIRE ? link->created + link->ctx->s.handshake_timeout
                                         : UINT64_MAX;
    case PURE_LS_OPEN: return open_deadline(link, t, now);
    case PURE_LS_CLOSING:
        if (t == PURE_TIMER_CLOSE_RESEND)
            return link->close_resend_at;
        return t == PURE_TIMER_CLOSE_END ? link->close_deadline : UINT64_MAX;
    default: return UINT64_MAX;
    }
}

void pure_timers_update(pure_link *link, uint64_t now)
{
    /* A busy link with nothing queued or in flight gives its buffers back soon, whatever path
     * left it so (a dropped packet, an ACK-only exchange): no busy link is left without that
     * timer (the soak's long run once found one holding 1.3 MB for 12 s). */
    if (link->state == PURE_LS_OPEN && link->b && link->release_at == UINT64_MAX &&
        pure_link_sends_empty(link) && pure_rtb_in_flight(&link->rtb) == 0)
        link->release_at = now + PURE_IDLE_RELEASE;
    uint64_t d = UINT64_MAX;
    switch (link->state) {
    case PURE_LS_OPEN: /* the hot path: each of the OPEN state's timers, computed once */
        d = min64(recovery_deadline(link), pure_acktr_deadline(&link->acktr));
        d = min64(d, idle_deadline(link));
        d = min64(d, keepalive_deadline(link));
        d = min64(d, watch_deadline(link, now));
        if (link->close_requested)
            d = min64(d, link->close_deadline);
        d = min64(d, link->pace_at);
        d = min64(d, link->release_at);
        if (link->rx_retire == PURE_RX_RETIRE_TIMED && link->b)
            d = min64(d, link->b->rx_retire_at);
        if (link->chans)
            d = min64(d, link->chans->deadline_at);
        break;
    case PURE_LS_CLOSING: d = min64(link->close_deadline, link->close_resend_at); break;
    default:
        d = min64(pure_timer_deadline(link, PURE_TIMER_HS_RETRY, now),
                  pure_timer_deadline(link, PURE_TIMER_HS_EXPIRE, now));
        break;
    }
    pure_ctx_timer_set(link->ctx, link, d);
}

void pure_timers_defer(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    uint32_t n = ctx->timer_dirty_n;
    if (n && ctx->timer_dirty[n - 1] == link)
        return; /* the common case: the next datagram of the same link */
    if (n == PURE_TIMER_DIRTY_MAX) {
        pure_timers_flush(ctx);
        n = 0;
    }
    ctx->timer_dirty[n] = link;
    ctx->timer_dirty_n = n + 1;
}

void pure_timers_flush(pure_ctx *ctx)
{
    /* One link may be listed twice (datagrams of two links interleaved): refiled twice, no harm. */
    for (uint32_t i = 0; i < ctx->timer_dirty_n; i++) {
        pure_link *l = ctx->timer_dirty[i];
        if (l->state != PURE_LS_CLOSED)
            pure_timers_update(l, ctx->now);
    }
    ctx->timer_dirty_n = 0;
}

void pure_timers_went_idle(pure_link *link, uint64_t now)
{
    if (link->release_at == UINT64_MAX)
        link->release_at = now + PURE_IDLE_RELEASE;
}

int pure_timers_release_due(pure_link *link, uint64_t now)
{
    /* Only a link quiet for the whole period gives its state back; one still receiving (or
     * sending) is looked at again a period after its last packet. */
    uint64_t last = max64(link->last_recv, link->last_sent);
    if (now < last + PURE_IDLE_RELEASE) {
        link->release_at = last + PURE_IDLE_RELEASE;
        return 0;
    }
    link->release_at = UINT64_MAX;
    return 1;
}

void pure_timers_close_progress(pure_link *link, uint64_t now)
{
    link->close_deadline = now + idle_period(link);
}

/* How long a closing period lasts at most: when the peer answers CLOSEs, until its answer, or
 * without one 16 probe timeouts (six copies, 1, 1, 2, 4, 8 apart: an idle peer, which has no
 * timer, must not miss the close because three were lost), at most idle_timeout; three probe
 * timeouts when it does not. A closing link keeps its send queue: the period stays a few probe
 * timeouts, not idle_timeout. */
static uint64_t closing_period(const pure_link *link, uint64_t pto)
{
    uint64_t answered = min64(16 * pto, link->ctx->s.idle_timeout);
    return max64(3 * pto, pure_tp_peer_answers_close(link) ? answered : 0);
}

void pure_timers_closing(pure_link *link, uint64_t now)
{
    uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    link->close_deadline = now + closing_period(link, pto);
    link->close_resend_at = now + pto;
}

void pure_timers_close_resent(pure_link *link, uint64_t now)
{
    uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    /* to a peer that answers, each copy waits as long as all before it (1, 1, 2, 4 ... probe
     * timeouts apart): a few datagrams in all, however long the period */
    uint64_t start = link->close_deadline - closing_period(link, pto);
    uint64_t gap = pure_tp_peer_answers_close(link) ? max64(pto, now - start) : pto;
    link->close_resend_at = now + gap < link->close_deadline ? now + gap : UINT64_MAX;
}

void pure_timers_answering(pure_link *link, uint64_t now)
{
    link->close_deadline = now + pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    link->close_resend_at = UINT64_MAX;
}
