/* SPDX-License-Identifier: MIT */
/* link.c: a link's life: creation, the checked state machine, what happens when each of its
 * timers fires (the timers themselves are listed and set in timers.c), closing, and the public
 * pure_link_* calls. */
#include <string.h>

#include "link.h"
#include "flight.h"
#include "handshake.h"
#include "keys.h"
#include "lifecycle.h"
#include "link_recv.h"
#include "link_shared.h"
#include "recovery.h"
#include "registry.h"
#include "rekey.h"
#include "link_cancel.h"
#include "timers.h"
#include "varint.h"

/* The OPEN state's timers, in the order they are looked at: each may arm or disarm the next. */
static void on_open_timer(pure_link *link, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    if (pure_timer_due(link, PURE_TIMER_IDLE, now)) {
        pure_link_terminate(link, PURE_ETIMEDOUT, 0, NULL, 0, now);
        return;
    }
    if (pure_timer_due(link, PURE_TIMER_CLOSE_GIVE_UP, now)) {
        /* a graceful close that made no progress for idle_timeout: give up */
        pure_link_terminate(link, PURE_ETIMEDOUT, link->close_code, "close timed out", 1, now);
        return;
    }
    if (pure_timer_due(link, PURE_TIMER_RECOVERY, now))
        pure_recovery_on_timeout(link, now);
    if (pure_timer_due(link, PURE_TIMER_WATCH, now)) {
        link->ping_pending = 1;
        pure_ctx_mark_pending(ctx, link);
    }
    if (pure_timer_due(link, PURE_TIMER_ACK, now) && pure_acktr_on_timer(&link->acktr, now))
        pure_ctx_mark_pending(ctx, link);
    if (pure_timer_due(link, PURE_TIMER_KEEPALIVE, now)) {
        link->ping_pending = 1;
        link->st.keepalives++;
        pure_ctx_mark_pending(ctx, link);
    }
    if (pure_timer_due(link, PURE_TIMER_PACE, now)) {
        link->pace_at = UINT64_MAX;
        pure_ctx_mark_pending(ctx, link);
    }
    if (pure_timer_due(link, PURE_TIMER_RX_RETIRE, now))
        pure_keys_retire(link);
    if (pure_timer_due(link, PURE_TIMER_DEADLINE, now))
        pure_link_cancel_expired(link, now);
    /* still sending (data queued or in flight): look again a period later; the ACK that ends it
     * may come by a path that does not arm the release */
    if (pure_timer_due(link, PURE_TIMER_RELEASE, now) && pure_timers_release_due(link, now) &&
        pure_link_release_buffers(link) != 0)
        link->release_at = now + PURE_IDLE_RELEASE;
}

void pure_link_on_timer(pure_link *link, uint64_t now)
{
    switch (link->state) {
    case PURE_LS_HANDSHAKE: pure_hs_timeout(link, now); break;
    case PURE_LS_UNVALIDATED:
        if (pure_timer_due(link, PURE_TIMER_HS_EXPIRE, now))
            pure_link_terminate(link, PURE_ETIMEDOUT, 0, NULL, 0, now);
        break;
    case PURE_LS_OPEN: on_open_timer(link, now); break;
    case PURE_LS_CLOSING:
        if (pure_timer_due(link, PURE_TIMER_CLOSE_END, now)) {
            pure_link_terminate(link, link->close_error, 0, NULL, 0, now);
        } else if (pure_timer_due(link, PURE_TIMER_CLOSE_RESEND, now)) {
            /* nothing acknowledges a CLOSE: send it again each probe timeout until the end */
            link->close_pending = 1;
            pure_timers_close_resent(link, now);
            pure_ctx_mark_pending(link->ctx, link);
        }
        break;
    default: break;
    }
    if (link->state != PURE_LS_CLOSED)
        pure_timers_update(link, now);
}

void pure_link_release(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    /* unlink from the send list */
    pure_link **pp = &ctx->pending_head, *prev = NULL;
    while (*pp && *pp != link) {
        prev = *pp;
        pp = &(*pp)->pending_next;
    }
    if (*pp) {
        *pp = link->pending_next;
        if (ctx->pending_tail == link)
            ctx->pending_tail = prev;
    }
    if (link->heap_pos != UINT32_MAX)
        pure_ctx_timer_set(ctx, link, UINT64_MAX);
    if (pure_ctx_table_find(ctx, link->local_index) == link)
        pure_ctx_table_remove(ctx, link);
    pure_hs_free(link);
    pure_rekey_free(link);
    pure_keys_wipe(link);
    pure_link_free_parts(link);
}

/* ---- public API ---- */

int pure_connect(pure_ctx *ctx, const pure_addr *to, const uint8_t peer_key[PURE_KEY_LEN],
                 const char *service, void *user, pure_link **out, uint64_t now)
{
    if (!ctx || !to || !peer_key || !service || !out || to->len > sizeof to->bytes)
        return PURE_EINVAL;
    size_t slen = strlen(service);
    if (slen == 0 || slen > PURE_SERVICE_MAX)
        return PURE_EINVAL;
    if (ctx->freeing || ctx->walking)
        return PURE_ESTATE;
    if (ctx->table.used >= ctx->s.max_links)
        return PURE_ELIMIT;
    int rc;
    pure_link *l = pure_link_alloc(ctx, to, 1, now, &rc);
    if (!l)
        return rc;
    l->user = user;
    rc = pure_hs_start(l, peer_key, service, now);
    if (rc) {
        l->closed_notified = 1; /* the caller learns of it from rc, not a callback */
        ctx->depth++;
        pure_link_terminate(l, rc, 0, NULL, 0, now);
        pure_link_end_call(ctx);
        return rc;
    }
    pure_timers_update(l, now);
    *out = l;
    return 0;
}

/* Appends one message to channel 0's ring: pure_link_send after its checks. */
static inline __attribute__((always_inline)) int64_t send0(pure_link *link, const void *msg,
                                                           size_t len)
{
    pure_sendbuf *sb = &link->sb;
    /* send_queue keeps what waits to be sent small enough that a message is still in cache when
     * it is sealed (an 8 MiB queue made every copy into the ring miss the cache); bytes in
     * flight are bounded separately by send_backlog. */
    uint64_t queue = link->ctx->s.send_queue;
    if (queue && sb->end - link->send_next >= queue) {
        link->want_writable = 1; /* enough queued: wait until it is on its way */
        return PURE_EAGAIN;
    }
    uint64_t need = sb->end - sb->base + 4 + len, at = sb->end & (sb->cap - 1);
    if (need <= sb->cap && need <= link->ctx->s.send_backlog && at + 4 + len <= sb->cap) {
        /* the common case, inline: room before the ring wraps */
        pure_put_u32be(sb->buf + at, (uint32_t)len);
        memcpy(sb->buf + at + 4, msg, len);
        sb->end += 4 + len;
    } else {
        uint8_t hdr[4];
        pure_put_u32be(hdr, (uint32_t)len);
        int rc =
            pure_sendbuf_write(sb, &link->ctx->alloc, hdr, 4, msg, len, link->ctx->s.send_backlog);
        if (rc) {
            if (rc == PURE_EAGAIN)
                link->want_writable = 1;
            return rc;
        }
    }
    if (!link->in_pending)
        pure_ctx_mark_pending(link->ctx, link);
    link->last_msg_sent = link->ctx->now;
    return (int64_t)link->next_msg_id++;
}

/* pure_link_send on a link with a channel table, which may be watched (its queue limit, the
 * marks that date its messages: link_shared.c). A function apart, so that the common path
 * carries none of it: inline, the call cost every message ~8 instructions of register saves
 * (callgrind, pure drain 300000 61), where the test of link->chans costs three. */
/* pure_link_send off its fast path: the stream is finished, or the link has channels (whose table
 * holds the queue limit and the ages it must keep, link_shared.c). */
static __attribute__((noinline)) int64_t send0_gated(pure_link *link, const void *msg, size_t len)
{
    if (link->send_gate & PURE_GATE_FINISH)
        return PURE_ECLOSED;
    if (len > link->ctx->s.max_message_size)
        return PURE_EMSGSIZE;
    int rc = pure_link_watch_send(link, 0, 4 + (uint64_t)len);
    if (rc)
        return rc;
    return send0(link, msg, len);
}

int64_t pure_link_send(pure_link *link, const void *msg, size_t len)
{
    if (!link)
        return PURE_EINVAL;
    if (!msg) {
        if (len)
            return PURE_EINVAL;
        msg = ""; /* an empty message may come as NULL; memcpy takes no NULL, even for 0 bytes */
    }
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED)
        return PURE_ECLOSED;
    if (__builtin_expect(link->send_gate != 0, 0))
        return send0_gated(link, msg, len);
    if (len > link->ctx->s.max_message_size)
        return PURE_EMSGSIZE;
    return send0(link, msg, len);
}

int pure_link_finish(pure_link *link)
{
    if (!link || link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED ||
        (link->send_gate & PURE_GATE_FINISH))
        return PURE_ESTATE;
    link->send_gate |= PURE_GATE_FINISH;
    link->fin_offset = link->sb.end;
    link->fin_sent_pending = 1;
    pure_ctx_mark_pending(link->ctx, link);
    return 0;
}

void pure_link_end_call(pure_ctx *ctx)
{
    if (--ctx->depth == 0) {
        while (ctx->dead) {
            pure_link *l = ctx->dead;
            ctx->dead = l->dead_next;
            pure_link_release(l);
        }
        pure_flight_wake(ctx);
    }
}

/* An application's close code: 0, or PURE_CLOSE_APP and up (below are Pure's own). */
static int app_code_ok(uint64_t code)
{
    return code == 0 || (code >= PURE_CLOSE_APP && code <= PURE_VARINT_MAX);
}

int pure_link_close(pure_link *link, uint64_t code, const char *reason)
{
    if (!link || !app_code_ok(code))
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED || link->close_requested)
        return PURE_ESTATE;
    pure_ctx *ctx = link->ctx;
    uint64_t now = ctx->now;
    ctx->depth++;
    if (link->state == PURE_LS_UNVALIDATED) {
        pure_link_terminate(link, 0, code, reason, 1, now);
    } else {
        /* No new messages; what was accepted goes first, then the CLOSE (close_if_done). */
        link->close_requested = 1;
        link->send_gate |= PURE_GATE_FINISH;
        link->close_code = code;
        pure_link_keep_reason(link, reason, now);
        pure_timers_close_progress(link, now);
        pure_link_close_if_done(link, now);
        if (link->state != PURE_LS_CLOSED) {
            pure_ctx_mark_pending(ctx, link);
            pure_timers_update(link, now);
        }
    }
    pure_link_end_call(ctx);
    return 0;
}

int pure_link_abort(pure_link *link, uint64_t code, const char *reason)
{
    if (!link || !app_code_ok(code))
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED)
        return PURE_ESTATE;
    pure_ctx *ctx = link->ctx;
    ctx->depth++;
    pure_link_terminate(link, 0, code, reason, 1, ctx->now);
    pure_link_end_call(ctx);
    return 0;
}

int pure_link_pause_recv(pure_link *link)
{
    if (!link)
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED)
        return PURE_ESTATE;
    link->recv_paused = 1;
    return 0;
}

int pure_link_resume_recv(pure_link *link)
{
    if (!link)
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED)
        return PURE_ESTATE;
    if (link->recv_paused) {
        link->recv_paused = 0;
        if (link->state == PURE_LS_OPEN) {
            link->ctx->depth++; /* delivering may end the link */
            pure_link_recv_resumed(link, link->ctx->now);
            pure_link_end_call(link->ctx);
        }
    }
    return 0;
}

int pure_link_recv_is_paused(const pure_link *link)
{
    return link && link->recv_paused;
}

void pure_link_set_user(pure_link *link, void *user)
{
    link->user = user;
}
void *pure_link_user(const pure_link *link)
{
    return link->user;
}
const uint8_t *pure_link_peer_key(const pure_link *link)
{
    return link->peer_key;
}
const pure_addr *pure_link_peer_addr(const pure_link *link)
{
    return &link->peer;
}
uint64_t pure_link_backlog(const pure_link *link)
{
    return link->sb.end - link->sb.base;
}

void pure_link_stats_get(const pure_link *link, pure_link_stats *st)
{
    memset(st, 0, sizeof *st);
    const pure_link_counters *c = &link->st;
    st->packets_sent = c->packets_sent;
    st->packets_received = c->packets_received;
    st->bytes_sent = c->bytes_sent;
    st->bytes_received = c->bytes_received;
    st->packets_lost = c->packets_lost;
    st->bytes_retransmitted = c->bytes_retransmitted;
    st->ptos = c->ptos;
    st->random_losses = c->random_losses;
    st->ecn_ce_received = c->ecn_ce_received;
    st->ecn_ce_reported = c->ecn_ce_reported;
    st->messages_received = c->messages_received;
    st->rekeys = c->rekeys;
    st->keepalives = c->keepalives;
    st->path_changes = c->path_changes;
    st->dropped_auth = c->dropped_auth;
    st->dropped_replay = c->dropped_replay;
    st->paced_bursts = c->paced_bursts;
    st->datagram_size = link->mss;
    st->rtt_ns = link->rtt.smoothed;
    st->rtt_min_ns = link->rtt.min;
    st->rtt_var_ns = link->rtt.var;
    st->cwnd = link->b ? link->b->cc.cwnd : 0;
    st->bytes_in_flight = link->b ? link->b->cc.bytes_in_flight : 0;
    st->messages_acked = link->msgs_acked;
    st->messages_sent = link->next_msg_id;
    st->recv_window = pure_credit_window(&link->credit);
}
