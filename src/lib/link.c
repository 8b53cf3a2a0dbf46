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
#include "link_chan.h"
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
        /* A graceful close that made no progress for idle_timeout: give up, unless everything
         * sent was acknowledged and it waits on this side's memory, not on the peer (delivering
         * what it holds may end the link). */
        if (pure_link_sends_empty(link) && pure_link_recv_owed_now(link, now))
            pure_timers_close_progress(link, now);
        else if (link->state == PURE_LS_OPEN)
            pure_link_terminate(link, PURE_ETIMEDOUT, link->close_code, "close timed out", 1, now);
        if (link->state != PURE_LS_OPEN)
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
        pure_link_recv_retry(link, now); /* bytes held for want of memory, if any */
        if (link->state != PURE_LS_OPEN)
            return; /* delivering them ended the link (the application, or a bad stream) */
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

/* After a message went in through send_slow, with the link on the send list: how far the next
 * ones may go by pure_link_send's fast path (pure_busy.send_fast_end). The ring takes a message
 * whole and in place below each of: its end before it wraps (the end of the current lap, which
 * stays put as the ring grows: the new lap ends are multiples of the old), base + its capacity,
 * base + send_backlog, and send_next + send_queue. base and send_next only move up, the capacity
 * only grows until the ring is given back: the bound stays true. A message that would cross it
 * goes through send_slow, which applies the exact rules (send_queue lets the first message past
 * the limit in, for instance). */
static void fast_end_update(pure_link *link)
{
    pure_busy *b = link->b;
    const pure_sendbuf *sb = &link->sb;
    if (!b)
        return;
    if (!sb->cap || !link->in_pending) {
        b->send_fast_end = 0;
        return;
    }
    uint64_t room = sb->cap < link->ctx->s.send_backlog ? sb->cap : link->ctx->s.send_backlog;
    uint64_t lim = sb->end - (sb->end & (sb->cap - 1)) + sb->cap;
    if (sb->base + room < lim)
        lim = sb->base + room;
    uint64_t queue = link->ctx->s.send_queue;
    if (queue && link->send_next + queue < lim)
        lim = link->send_next + queue;
    b->send_fast_end = lim;
}

/* Appends one message to channel 0's ring: pure_link_send after its checks. */
static int64_t send0(pure_link *link, const void *msg, size_t len)
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
    uint8_t hdr[4];
    pure_put_u32be(hdr, (uint32_t)len);
    int rc = pure_sendbuf_write(sb, &link->ctx->alloc, hdr, 4, msg, len, link->ctx->s.send_backlog);
    if (rc) {
        if (rc == PURE_EAGAIN)
            link->want_writable = 1;
        return rc;
    }
    if (!link->in_pending)
        pure_ctx_mark_pending(link->ctx, link);
    link->last_msg_sent = link->ctx->now;
    if (!link->send_gate)
        fast_end_update(link);
    return (int64_t)link->next_msg_id++;
}

/* pure_link_send off its fast path, every check in order: bad arguments, a link that can carry
 * no more, the stream finished or the link with channels (whose table holds the queue limit and
 * the ages it must keep, link_shared.c), and a message past pure_busy.send_fast_end. */
static __attribute__((noinline)) int64_t send_slow(pure_link *link, const void *msg, size_t len)
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
    if (link->send_gate & PURE_GATE_FINISH)
        return PURE_ECLOSED;
    if (len > link->ctx->s.max_message_size)
        return PURE_EMSGSIZE;
    if (link->send_gate) {
        int rc = pure_link_watch_send(link, 0, 4 + (uint64_t)len);
        if (rc)
            return rc;
    }
    return send0(link, msg, len);
}

/* Copies a message of at most 64 bytes with no call: for the short messages whose cost is mostly
 * per message, memcpy's call and its dispatch on the size were 11 instructions of the ~80 the
 * drain client spent on a 61-byte message here (callgrind). Overlapping moves of 16, 8 or 4
 * bytes; source and destination never overlap (the ring is Pure's). */
static inline void copy_short(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n >= 16) {
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
        if (n > 32) {
            memcpy(d + 16, s + 16, 16);
            memcpy(d + n - 32, s + n - 32, 16);
        }
    } else if (n >= 8) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

/* A message is in the ring (its prefix and bytes written at sb->end): account for it. */
static inline __attribute__((always_inline)) int64_t accepted(pure_link *link, uint64_t end)
{
    link->sb.end = end;
    link->last_msg_sent = link->ctx->now;
    return (int64_t)link->next_msg_id++;
}

/* The fast path's copy of a message over 64 bytes, apart so that the fast path makes no call. */
static __attribute__((noinline)) int64_t send_long(pure_link *link, uint8_t *d, const void *msg,
                                                   size_t len, uint64_t end)
{
    memcpy(d, msg, len);
    return accepted(link, end);
}

/* The fast path: a busy link on the send list, no gate, open or opening, a message within
 * max_message_size that ends below pure_busy.send_fast_end (so it fits the ring whole, in place,
 * within both limits) goes straight in; anything else is send_slow's, which makes every check in
 * the order that picks the error to return. For messages up to 64 bytes it is a leaf function. */
int64_t pure_link_send(pure_link *link, const void *msg, size_t len)
{
    if (__builtin_expect(
            !link || !msg || !link->b || link->send_gate != 0 || link->state >= PURE_LS_CLOSING, 0))
        return send_slow(link, msg, len);
    pure_sendbuf *sb = &link->sb;
    uint64_t end = sb->end + 4 + (uint64_t)len;
    if (__builtin_expect(len > link->ctx->s.max_message_size || end > link->b->send_fast_end, 0))
        return send_slow(link, msg, len);
    uint8_t *d = sb->buf + (sb->end & (sb->cap - 1));
    pure_put_u32be(d, (uint32_t)len);
    if (len > 64)
        return send_long(link, d + 4, msg, len, end);
    copy_short(d + 4, msg, len);
    return accepted(link, end);
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
        if (ctx->dead && ctx->timer_dirty_n)
            pure_timers_flush(ctx); /* no freed link stays listed */
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
    uint64_t now = pure_ctx_clock(ctx);
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
    pure_link_terminate(link, 0, code, reason, 1, pure_ctx_clock(ctx));
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
            pure_link_recv_resumed(link, pure_ctx_clock(link->ctx));
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
