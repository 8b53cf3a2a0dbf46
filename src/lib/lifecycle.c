/* SPDX-License-Identifier: MIT */
/* lifecycle.c: a link's life below the modules that serve it: creation, the checked state
 * machine, the state it holds only while busy, the end of a link (terminate: CLOSING or at once
 * CLOSED, reported once through on_closed) and the application's on_writable. Nothing here
 * calls up: the parts above (keys and rekey, sending, receiving, recovery, the handshake) use
 * these, and link.c frees what a link held once the context call that ended it returns. */
#include <string.h>

#include "lifecycle.h"
#include "link_chan.h"
#include "flight.h"
#include "keys.h"
#include "registry.h"
#include "rxmem.h"
#include "timers.h"

static void unbusy(pure_link *link);
static void half_open_end(pure_link *link, int validated);

pure_link *pure_link_alloc(pure_ctx *ctx, const pure_addr *peer, int initiator, uint64_t now,
                           int *err)
{
    int dummy, rc;
    if (!err)
        err = &dummy;
    *err = PURE_ENOMEM;
    pure_link *l = pure_ctx_link_new(ctx);
    if (!l)
        return NULL;
    l->ctx = ctx;
    l->peer = *peer;
    l->initiator = (uint8_t)initiator;
    l->heap_pos = UINT32_MAX;
    l->deadline = UINT64_MAX;
    l->state = initiator ? PURE_LS_HANDSHAKE : PURE_LS_UNVALIDATED;
    if ((rc = pure_ctx_table_add(ctx, l)) != 0) {
        *err = rc;
        pure_ctx_link_free(ctx, l);
        return NULL;
    }
    const pure_settings *s = &ctx->s;
    pure_acktr_init(&l->acktr);
    pure_rtt_init(&l->rtt, 333000000ull); /* RFC 9002's initial RTT */
    pure_rtb_init(&l->rtb);
    l->pace_at = UINT64_MAX;
    l->release_at = UINT64_MAX;
    /* Datagrams start at the size every path carries; the path MTU search (pmtud.c) raises it
     * once the link sends in bulk. */
    l->mss = PURE_MIN_UDP_PAYLOAD;
    pure_credit_init(&l->credit, s->recv_window); /* both sides start from the same window */
    l->msg_boundary = 4;                          /* messages start after the preamble */
    l->created = now;
    l->last_recv = now;
    l->keys_time = now;
    /* The stream opens with the preamble. */
    if (pure_link_busy(l, now) != 0 || pure_sendbuf_write(&l->sb, &ctx->alloc, PURE_STREAM_PREAMBLE,
                                                          4, NULL, 0, s->send_backlog) != 0) {
        pure_ctx_table_remove(ctx, l);
        pure_link_free_parts(l);
        return NULL;
    }
    return l;
}

void pure_link_set_state(pure_link *link, enum pure_link_state st)
{
    static const uint8_t allowed[6] = {
        /* from HANDSHAKE */ [PURE_LS_HANDSHAKE] =
            1 << PURE_LS_OPEN | 1 << PURE_LS_CLOSING | 1 << PURE_LS_CLOSED,
        [PURE_LS_UNVALIDATED] = 1 << PURE_LS_OPEN | 1 << PURE_LS_CLOSING | 1 << PURE_LS_CLOSED,
        [PURE_LS_OPEN] = 1 << PURE_LS_CLOSING | 1 << PURE_LS_CLOSED,
        [PURE_LS_CLOSING] = 1 << PURE_LS_CLOSED,
        [PURE_LS_CLOSED] = 0,
    };
    if (link->state < PURE_LS_HANDSHAKE || link->state > PURE_LS_CLOSED ||
        !(allowed[link->state] & (1u << st))) {
        /* An impossible transition is a bug in the core: fail safe by closing. */
        link->state = PURE_LS_CLOSED;
        return;
    }
    if (link->half_open)
        half_open_end(link, st == PURE_LS_OPEN); /* every way out of UNVALIDATED */
    link->state = (uint8_t)st;
}

void pure_link_open(pure_link *link, uint64_t now)
{
    pure_link_set_state(link, PURE_LS_OPEN);
    link->last_recv = now;
    link->keys_time = now;
    pure_ctx_mark_pending(link->ctx, link);
}

void pure_link_notify_closed(pure_link *link, int error, const char *reason)
{
    if (link->closed_notified)
        return;
    link->closed_notified = 1;
    /* datagrams still queued will never go: counted dropped before on_closed reads the stats */
    if (link->chans)
        pure_dgq_clear(&link->chans->dg, &link->ctx->alloc);
    /* A responder's link the application never accepted closes silently. */
    if (!link->initiator && !link->accepted)
        return;
    pure_close_info info = {
        .error = error,
        .peer_code = link->close_code,
        .reason = reason ? reason : "",
        .first_unacked = link->msgs_acked,
        .next_id = link->next_msg_id,
    };
    if (link->ctx->cb.on_closed)
        link->ctx->cb.on_closed(link, link->user, &info);
}

/* Keeps the reason a CLOSE frame will carry (cut to fit). It may already be the kept one. */
void pure_link_keep_reason(pure_link *link, const char *reason, uint64_t now)
{
    if (pure_link_busy(link, now) != 0)
        return; /* no memory: the CLOSE goes without its reason */
    size_t rl = reason ? strlen(reason) : 0;
    if (rl > sizeof link->b->close_reason - 1)
        rl = sizeof link->b->close_reason - 1;
    memmove(link->b->close_reason, reason ? reason : "", rl);
    link->b->close_reason[rl] = 0;
}

/* Gives back what the busy state holds of the peer's stream (the reorder ring, a message half
 * assembled) and its place in the receive budget (owner, held list): unbusy, and closing. */
static void free_received(pure_link *link)
{
    pure_rxmem_forget(link);
    pure_alloc ra = pure_rxmem_alloc(link->ctx); /* receive buffers leave the accounting */
    pure_msgparse_free(&link->b->parse, &ra);
    pure_rob_free(&link->b->rob, &ra, &link->ctx->alloc);
}

/* A closing link delivers nothing more: the received bytes it holds (its reorder rings, a
 * message half assembled) and its claim on the receive budget go back when it starts closing,
 * not at the end of the period (up to 16 probe timeouts: other links may be waiting for them). */
static void closing_trim(pure_link *link)
{
    pure_alloc ra = pure_rxmem_alloc(link->ctx);
    if (link->b) {
        free_received(link);
        link->b->rx_nomem = 0;
    }
    if (link->ctx->rx_chan_owner == link) /* as pure_link_chan_free: its exemption goes */
        link->ctx->rx_chan_owner = NULL;
    pure_chans_drop_rx(link->chans, &ra, &link->ctx->alloc);
}

/* An open link with keys goes CLOSING with a CLOSE to write: its own (pending 1: sent again
 * until answered or the period ends, timers.c) or the answer to the peer's
 * (PURE_CLOSE_ANSWERING). The application hears on_closed now. */
static void enter_closing(pure_link *link, int error, uint8_t pending, const char *reason,
                          uint64_t now)
{
    pure_link_set_state(link, PURE_LS_CLOSING);
    closing_trim(link);
    link->close_error = error;
    link->close_pending = pending;
    if (pending == PURE_CLOSE_ANSWERING)
        pure_timers_answering(link, now);
    else
        pure_timers_closing(link, now);
    pure_ctx_mark_pending(link->ctx, link);
    pure_timers_update(link, now);
    pure_link_notify_closed(link, error, reason);
}

void pure_link_terminate(pure_link *link, int error, uint64_t code, const char *reason,
                         int send_close, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    if (link->state == PURE_LS_CLOSED)
        return;
    if (send_close && (link->state == PURE_LS_OPEN) && link->tx.ready) {
        link->close_code = code;
        pure_link_keep_reason(link, reason, now); /* for the CLOSE; on_closed reports none */
        enter_closing(link, error, 1, NULL, now);
        return;
    }
    pure_link_set_state(link, PURE_LS_CLOSED);
    pure_link_notify_closed(link, error, reason);
    pure_ctx_timer_set(ctx, link, UINT64_MAX);
    if (!ctx->walking) /* else pure_link_release removes it after the walk */
        pure_ctx_table_remove(ctx, link);
    /* freed (pure_link_release) when the public call under way returns: every entry point that
     * can end a link holds ctx->depth */
    link->dead_next = ctx->dead;
    ctx->dead = link;
}

void pure_link_end_by_peer(pure_link *link, int error, const char *reason, uint64_t now)
{
    if (link->state != PURE_LS_OPEN || !link->tx.ready) {
        pure_link_terminate(link, error, 0, reason, 0, now);
        return;
    }
    enter_closing(link, error, PURE_CLOSE_ANSWERING, reason, now);
}

int pure_link_owes_delivery(const pure_link *link)
{
    const pure_busy *b = link->b;
    return b && (b->rx_nomem || pure_rob_holds(&b->rob, link->recv_next) ||
                 pure_link_chan_undelivered(link));
}

/* A graceful close ends once everything accepted has been acknowledged, and the end of the
 * stream too if pure_link_finish asked for one (fin_offset is past the preamble then): else the
 * CLOSE overtook the FIN and the peer never heard on_peer_finished. Nor while received bytes
 * this side acknowledged wait to be delivered: the peer counts them delivered, and messages from
 * the peer are delivered until the close ends (a close asked for from on_message waits for the
 * rest of what was acknowledged, and the caller of the delivery ends it: link_recv.c). */
void pure_link_close_if_done(pure_link *link, uint64_t now)
{
    if (link->close_requested && link->state == PURE_LS_OPEN && pure_link_sends_empty(link) &&
        (link->fin_offset == 0 || link->fin_acked) && !pure_link_owes_delivery(link))
        pure_link_terminate(link, 0, link->close_code, link->b ? link->b->close_reason : "", 1,
                            now);
}

void pure_link_on_acked(pure_link *link, uint64_t now)
{
    if (!link->close_requested)
        return;
    pure_timers_close_progress(link, now); /* progress: wait on */
    pure_link_close_if_done(link, now);
}

void pure_link_check_writable(pure_link *link)
{
    if (link->want_writable && link->state == PURE_LS_OPEN &&
        link->sb.end - link->sb.base <= link->ctx->s.send_backlog / 2 &&
        (!link->ctx->s.send_queue ||
         link->sb.end - link->send_next <= link->ctx->s.send_queue / 2) &&
        pure_link_chan_writable(link)) {
        link->want_writable = 0;
        if (link->ctx->cb.on_writable)
            link->ctx->cb.on_writable(link, link->user);
    }
}

int pure_link_release_buffers(pure_link *link)
{
    /* Nothing in flight and nothing queued: give back the buffers (rebuilt on demand), keeping
     * only keys, counters and offsets. */
    const pure_alloc *a = &link->ctx->alloc;
    if (link->state != PURE_LS_OPEN || link->close_requested)
        return 0;
    if (!pure_link_sends_empty(link) || pure_rtb_in_flight(&link->rtb))
        return 1;
    pure_sendbuf_shrink(&link->sb, a);
    if (link->b) /* the ring may be gone: pure_link_send's fast path may not write to it */
        link->b->send_fast_end = 0;
    pure_link_chan_shrink(link);
    pure_rtb_free(&link->rtb,
                  &link->ctx->alloc); /* the buffer tracks again from the next packet number */
    pure_acktr_free(&link->acktr, a);
    /* bytes held for want of memory (and a peer CLOSE behind them) live in the busy state */
    if (link->b && pure_rob_empty(&link->b->rob) && pure_msgparse_at_boundary(&link->b->parse) &&
        !link->b->lost.n && !link->b->rx_nomem)
        unbusy(link);
    pure_keys_park(link);
    return 0;
}

int pure_link_busy(pure_link *link, uint64_t now)
{
    if (link->b)
        return 0;
    const pure_settings *s = &link->ctx->s;
    pure_busy *b = pure_mem_alloc(&link->ctx->alloc, sizeof *b);
    if (!b)
        return PURE_ENOMEM;
    memset(b, 0, sizeof *b);
    /* Every packet number below the old top counts as seen: a replay of anything older than the
     * idle period is refused (a genuine straggler is simply sent again). */
    pure_replay_init_seen(&b->replay, link->replay_top);
    pure_ranges_init(&b->acked, 1u << 16);
    pure_ranges_init(&b->lost, 1u << 16);
    pure_rob_init(&b->rob);
    pure_msgparse_init(&b->parse, s->max_message_size);
    b->parse.preamble_done = link->preamble_seen;
    pure_cc_init(&b->cc, (enum pure_cc_algo)s->congestion, s->max_udp_payload, now);
    pure_pacer_init(&b->pacer, 64u * s->max_udp_payload, s->max_udp_payload);
    pure_pmtud_init(&b->pmtud, PURE_MIN_UDP_PAYLOAD, (uint16_t)s->max_udp_payload, link->mss,
                    link->pmtu_parked, link->created);
    link->b = b;
    return 0;
}

static void unbusy(pure_link *link)
{
    pure_busy *b = link->b;
    if (!b)
        return;
    /* The previous receive key's deadline lives here: a link quiet for this long has no late
     * packets on the way, so the key goes now. */
    if (link->rx_retire == PURE_RX_RETIRE_TIMED)
        pure_keys_retire(link);
    const pure_alloc *a = &link->ctx->alloc;
    /* After idleness the RTT estimate is stale: a peer waking many links at once may take far
     * longer to answer than the path's old RTT, and probes sent on that old estimate only add to
     * its load. Start again from RFC 9002's initial RTT, as the congestion window does. */
    pure_rtt_init(&link->rtt, 333000000ull);
    link->replay_top = b->replay.top;
    link->pmtu_parked = pure_pmtud_park(&b->pmtud, link->created);
    link->preamble_seen = b->parse.preamble_done;
    pure_ranges_free(&b->acked, a);
    pure_ranges_free(&b->lost, a);
    pure_flight_forget(link);
    free_received(link);
    pure_wipe(b, sizeof *b);
    pure_mem_free(a, b, sizeof *b);
    link->b = NULL;
}

static void half_open_end(pure_link *link, int validated)
{
    if (!link->half_open)
        return;
    int proven = link->half_open == PURE_HALF_OPEN_PROVEN;
    link->half_open = 0;
    pure_ctx *ctx = link->ctx;
    if (ctx->half_open)
        ctx->half_open--;
    if (!proven) /* charged to no address (admit.h) */
        return;
    /* link->peer is still the INIT's source: an unvalidated link does not move */
    pure_src_bucket *b =
        pure_admit_bucket(&ctx->admit, &ctx->alloc, &link->peer, ctx->s.max_half_open);
    if (b && b->half_open)
        b->half_open--;
    /* A handshake the source completed gives its token back: the bucket limits INITs that
     * lead nowhere, not a real client's links. */
    if (b && validated && b->tokens != UINT32_MAX &&
        b->tokens + 1000ull <= (uint64_t)ctx->s.inits_per_addr * 1000)
        b->tokens += 1000;
}

void pure_link_free_parts(pure_link *link)
{
    const pure_alloc *a = &link->ctx->alloc;
    pure_sendbuf_free(&link->sb, a);
    pure_acktr_free(&link->acktr, a);
    unbusy(link);
    pure_rtb_free(&link->rtb, &link->ctx->alloc);
    pure_link_chan_free(link);
    pure_ctx *owner = link->ctx;
    pure_wipe(link, sizeof *link);
    pure_ctx_link_free(owner, link);
}
