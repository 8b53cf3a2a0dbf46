/* SPDX-License-Identifier: MIT */
/* link.c: a link's life: creation, the checked state machine, its one timer (the earliest of
 * handshake retry, loss/probe timeout, ACK delay, idle timeout, keepalive and pacing), closing,
 * and the public pure_link_* calls.
 *
 * Timers of an open link, all folded into one heap entry per link:
 *   - recovery: loss time threshold or probe timeout, only while ack-eliciting packets fly;
 *   - ack delay: max_ack_delay after the first unacknowledged ack-eliciting packet;
 *   - idle: idle_timeout after we started waiting for the peer, while ack-eliciting packets fly
 *     (the peer owes us an ACK: if none comes the peer is dead and the link closes);
 *   - liveness watch: a link that may be waiting for its peer though nothing is in flight —
 *     for idle_timeout after the application last sent a message (a reply may be due), while a
 *     message from the peer is incomplete, or while a graceful close waits — sends a PING
 *     after idle_timeout/2 of silence; like any ack-eliciting packet it must be acknowledged
 *     within idle_timeout, or the link closes with PURE_ETIMEDOUT. So a dead peer is found
 *     within 1.5 x idle_timeout of its last packet whenever this side has reason to expect one
 *     (an unanswered packet gets the same idle_timeout whether it carried data or a probe: a
 *     busy path's queues and probe timeouts need that long, see soak_test's long run);
 *   - keepalive: only when configured, keepalive ns after the last packet either way;
 *   - close: a graceful close that makes no progress for idle_timeout gives up;
 *   - pacing: when the pacer held packets back;
 *   - release: once, PURE_IDLE_RELEASE after the link fell idle, to give its buffers back (doing
 *     it at once would free and refault megabytes on a busy link whose backlog empties often).
 * After that an idle link (nothing in flight, no message sent for idle_timeout, nothing
 * incomplete, no keepalive) has no timer at all: it costs nothing, and finds out that its peer
 * is gone the next time it sends. */
#include <string.h>

#include "link.h"
#include "varint.h"

static void unbusy(pure_link *link);

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
    pure_ranges_init(&l->rx_pns, PURE_ACK_MAX_RANGES + 1);
    pure_rtt_init(&l->rtt, 333000000ull); /* RFC 9002's initial RTT */
    l->ack_deadline = UINT64_MAX;
    l->loss_time = UINT64_MAX;
    l->pace_at = UINT64_MAX;
    l->release_at = UINT64_MAX;
    l->mss = (uint16_t)(s->max_udp_payload > 65535 ? 65535 : s->max_udp_payload);
    l->recv_window = s->recv_window;
    l->credit_sent = s->recv_window;
    l->peer_credit = s->recv_window; /* both sides start from the same configured window */
    l->msg_boundary = 4;             /* messages start after the preamble */
    l->created = now;
    l->last_recv = now;
    l->keys_time = now;
    /* The stream opens with the preamble. */
    if (pure_link_busy(l, now) != 0 ||
        pure_sendbuf_write(&l->sb, &ctx->alloc, PURE_STREAM_PREAMBLE, 4, NULL, 0,
                           s->send_backlog) != 0) {
        l->state = PURE_LS_CLOSED;
        pure_link_release(l);
        return NULL;
    }
    return l;
}

void pure_link_set_state(pure_link *link, enum pure_link_state st)
{
    static const uint8_t allowed[6] = {
        /* from HANDSHAKE */ [PURE_LS_HANDSHAKE] = 1 << PURE_LS_OPEN | 1 << PURE_LS_CLOSING | 1 << PURE_LS_CLOSED,
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
        pure_hs_half_open_end(link, st == PURE_LS_OPEN); /* every way out of UNVALIDATED */
    link->state = (uint8_t)st;
}

void pure_link_open(pure_link *link, uint64_t now)
{
    pure_link_set_state(link, PURE_LS_OPEN);
    link->last_recv = now;
    link->keys_time = now;
    pure_ctx_mark_pending(link->ctx, link);
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static uint64_t idle_deadline(const pure_link *link)
{
    if (!link->eliciting_in_flight)
        return UINT64_MAX;
    uint64_t since = link->last_recv > link->wait_start ? link->last_recv : link->wait_start;
    return since + link->ctx->s.idle_timeout;
}

/* Is there reason to expect the peer to speak though nothing is in flight? */
static int expecting(const pure_link *link, uint64_t now)
{
    if (link->close_requested)
        return 1;
    if (link->b && (!pure_msgparse_at_boundary(&link->b->parse) || !pure_ranges_empty(&link->b->oo)))
        return 1; /* the peer is in the middle of a message */
    return link->next_msg_id && now < link->last_msg_sent + link->ctx->s.idle_timeout;
}

/* When the liveness watch sends its PING (UINT64_MAX: not watching). */
static uint64_t watch_deadline(const pure_link *link, uint64_t now)
{
    if (link->eliciting_in_flight || link->ping_pending || !expecting(link, now))
        return UINT64_MAX;
    uint64_t at = link->last_recv + link->ctx->s.idle_timeout / 2;
    /* the watch ends idle_timeout after the last message: no probe past it */
    if (!link->close_requested && link->b && pure_msgparse_at_boundary(&link->b->parse) &&
        pure_ranges_empty(&link->b->oo) && at >= link->last_msg_sent + link->ctx->s.idle_timeout)
        return UINT64_MAX;
    return at;
}

static uint64_t keepalive_deadline(const pure_link *link)
{
    /* Whichever side configured a keepalive sends it (configure one side only, or both sides'
     * PINGs cross every interval). */
    uint64_t ka = link->ctx->s.keepalive;
    if (!ka || link->eliciting_in_flight || link->ping_pending)
        return UINT64_MAX;
    uint64_t last = link->last_recv > link->last_sent ? link->last_recv : link->last_sent;
    return last + ka;
}

void pure_link_update_timer(pure_link *link, uint64_t now)
{
    /* A busy link with nothing queued or in flight gives its buffers back soon, whatever path
     * left it so (a dropped packet, an ACK-only exchange): no busy link is left without that
     * timer (the soak's long run once found one holding 1.3 MB for 12 s). */
    if (link->state == PURE_LS_OPEN && link->b && link->release_at == UINT64_MAX &&
        link->sb.base == link->sb.end && link->eliciting_in_flight == 0)
        link->release_at = now + PURE_IDLE_RELEASE;
    uint64_t d = UINT64_MAX;
    switch (link->state) {
    case PURE_LS_HANDSHAKE:
        if (link->hs)
            d = link->hs->retry_at;
        break;
    case PURE_LS_UNVALIDATED:
        d = link->created + link->ctx->s.handshake_timeout;
        break;
    case PURE_LS_OPEN:
        d = min64(pure_recovery_deadline(link), link->ack_deadline);
        d = min64(d, idle_deadline(link));
        d = min64(d, keepalive_deadline(link));
        d = min64(d, watch_deadline(link, now));
        if (link->close_requested)
            d = min64(d, link->close_deadline);
        d = min64(d, link->pace_at);
        d = min64(d, link->release_at);
        if (link->rx_retire == PURE_RX_RETIRE_TIMED && link->b)
            d = min64(d, link->b->rx_retire_at);
        break;
    case PURE_LS_CLOSING:
        d = min64(link->close_deadline, link->pace_at);
        break;
    default:
        break;
    }
    pure_ctx_timer_set(link->ctx, link, d);
}

void pure_link_on_timer(pure_link *link, uint64_t now)
{
    switch (link->state) {
    case PURE_LS_HANDSHAKE:
        pure_hs_timeout(link, now);
        break;
    case PURE_LS_UNVALIDATED:
        if (now >= link->created + link->ctx->s.handshake_timeout)
            pure_link_terminate(link, PURE_ETIMEDOUT, 0, NULL, 0, now);
        break;
    case PURE_LS_OPEN:
        if (now >= idle_deadline(link)) {
            pure_link_terminate(link, PURE_ETIMEDOUT, 0, NULL, 0, now);
            return;
        }
        if (link->close_requested && now >= link->close_deadline) {
            /* a graceful close that made no progress for idle_timeout: give up */
            pure_link_terminate(link, PURE_ETIMEDOUT, link->close_code, "close timed out", 1, now);
            return;
        }
        if (now >= pure_recovery_deadline(link))
            pure_recovery_on_timeout(link, now);
        if (now >= watch_deadline(link, now)) {
            link->ping_pending = 1;
            pure_ctx_mark_pending(link->ctx, link);
        }
        if (now >= link->ack_deadline) {
            link->ack_deadline = UINT64_MAX;
            link->ack_now = 1;
            pure_ctx_mark_pending(link->ctx, link);
        }
        if (now >= keepalive_deadline(link)) {
            link->ping_pending = 1;
            link->st.keepalives++;
            pure_ctx_mark_pending(link->ctx, link);
        }
        if (now >= link->pace_at) {
            link->pace_at = UINT64_MAX;
            pure_ctx_mark_pending(link->ctx, link);
        }
        if (link->rx_retire == PURE_RX_RETIRE_TIMED && link->b && now >= link->b->rx_retire_at)
            pure_keys_retire(link);
        if (now >= link->release_at) {
            /* Only a link quiet for the whole period gives its state back; one still receiving
             * (or sending) is looked at again a period after its last packet. */
            uint64_t last = link->last_recv > link->last_sent ? link->last_recv : link->last_sent;
            if (now < last + PURE_IDLE_RELEASE) {
                link->release_at = last + PURE_IDLE_RELEASE;
            } else {
                link->release_at = UINT64_MAX;
                /* still sending (data queued or in flight): look again a period later; the
                 * ACK that ends it may come by a path that does not arm the release */
                if (pure_link_release_buffers(link) != 0)
                    link->release_at = now + PURE_IDLE_RELEASE;
            }
        }
        break;
    case PURE_LS_CLOSING:
        if (now >= link->close_deadline) {
            pure_link_terminate(link, link->close_error, 0, NULL, 0, now);
        } else if (now >= link->pace_at) {
            /* nothing acknowledges a CLOSE: send it again each probe timeout until the end */
            uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
            link->close_pending = 1;
            link->pace_at = now + pto < link->close_deadline ? now + pto : UINT64_MAX;
            pure_ctx_mark_pending(link->ctx, link);
        }
        break;
    default:
        break;
    }
    if (link->state != PURE_LS_CLOSED)
        pure_link_update_timer(link, now);
}

void pure_link_notify_closed(pure_link *link, int error, const char *reason)
{
    if (link->closed_notified)
        return;
    link->closed_notified = 1;
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
static void keep_reason(pure_link *link, const char *reason, uint64_t now)
{
    if (pure_link_busy(link, now) != 0)
        return; /* no memory: the CLOSE goes without its reason */
    size_t rl = reason ? strlen(reason) : 0;
    if (rl > sizeof link->b->close_reason - 1)
        rl = sizeof link->b->close_reason - 1;
    memmove(link->b->close_reason, reason ? reason : "", rl);
    link->b->close_reason[rl] = 0;
}

void pure_link_terminate(pure_link *link, int error, uint64_t code, const char *reason,
                         int send_close, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    if (link->state == PURE_LS_CLOSED)
        return;
    if (send_close && (link->state == PURE_LS_OPEN) && link->tx.ready) {
        pure_link_set_state(link, PURE_LS_CLOSING);
        link->close_error = error;
        link->close_pending = 1;
        link->close_code = code;
        keep_reason(link, reason, now);
        /* Stay three probe timeouts, sending the CLOSE at the start of each (and whenever the
         * peer sends, which means it missed it). pace_at times the resends: nothing is paced
         * while closing. */
        uint64_t pto = pure_rtt_pto(&link->rtt, ctx->s.max_ack_delay);
        link->close_deadline = now + 3 * pto;
        link->pace_at = now + pto;
        pure_ctx_mark_pending(ctx, link);
        pure_link_update_timer(link, now);
        pure_link_notify_closed(link, error, NULL);
        return;
    }
    pure_link_set_state(link, PURE_LS_CLOSED);
    pure_link_notify_closed(link, error, reason);
    pure_ctx_timer_set(ctx, link, UINT64_MAX);
    if (!ctx->walking) /* else pure_link_release removes it after the walk */
        pure_ctx_table_remove(ctx, link);
    link->dead_next = ctx->dead;
    ctx->dead = link;
    if (ctx->depth == 0) { /* called outside any context call: free now */
        ctx->dead = link->dead_next;
        pure_link_release(link);
    }
}

void pure_link_release(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    const pure_alloc *a = &ctx->alloc;
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
    pure_keys_wipe(link);
    pure_sendbuf_free(&link->sb, a);
    pure_ranges_free(&link->rx_pns, a);
    unbusy(link);
    pure_recovery_free(link);
    pure_ctx *owner = link->ctx;
    pure_wipe(link, sizeof *link);
    pure_ctx_link_free(owner, link);
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
        pure_link_terminate(l, rc, 0, NULL, 0, now);
        return rc;
    }
    pure_link_update_timer(l, now);
    *out = l;
    return 0;
}

int64_t pure_link_send(pure_link *link, const void *msg, size_t len)
{
    if (!link || (!msg && len))
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED || link->finish_requested)
        return PURE_ECLOSED;
    if (len > link->ctx->s.max_message_size)
        return PURE_EMSGSIZE;
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
        int rc = pure_sendbuf_write(sb, &link->ctx->alloc, hdr, 4, msg, len,
                                    link->ctx->s.send_backlog);
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

int pure_link_finish(pure_link *link)
{
    if (!link || link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED ||
        link->finish_requested)
        return PURE_ESTATE;
    link->finish_requested = 1;
    link->fin_offset = link->sb.end;
    link->fin_sent_pending = 1;
    pure_ctx_mark_pending(link->ctx, link);
    return 0;
}

/* Runs one public call that may end the link, then frees what it ended (as every ctx entry
 * point does). */
static void end_link_call(pure_ctx *ctx)
{
    if (--ctx->depth == 0) {
        while (ctx->dead) {
            pure_link *l = ctx->dead;
            ctx->dead = l->dead_next;
            pure_link_release(l);
        }
    }
}

/* A graceful close ends once everything accepted has been acknowledged. */
static void close_if_done(pure_link *link, uint64_t now)
{
    if (link->close_requested && link->state == PURE_LS_OPEN && link->sb.base == link->sb.end)
        pure_link_terminate(link, 0, link->close_code, link->b ? link->b->close_reason : "", 1,
                            now);
}

void pure_link_on_acked(pure_link *link, uint64_t now)
{
    if (!link->close_requested)
        return;
    link->close_deadline = now + link->ctx->s.idle_timeout; /* progress: wait on */
    close_if_done(link, now);
}

/* An application's close code: 0, or PURE_CLOSE_APP and up (below are Pure's own). */
static int app_code_ok(uint64_t code) { return code == 0 || (code >= PURE_CLOSE_APP && code <= PURE_VARINT_MAX); }

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
        link->finish_requested = 1;
        link->close_code = code;
        keep_reason(link, reason, now);
        link->close_deadline = now + ctx->s.idle_timeout;
        close_if_done(link, now);
        if (link->state != PURE_LS_CLOSED) {
            pure_ctx_mark_pending(ctx, link);
            pure_link_update_timer(link, now);
        }
    }
    end_link_call(ctx);
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
    end_link_call(ctx);
    return 0;
}

void pure_link_check_writable(pure_link *link)
{
    if (link->want_writable && link->state == PURE_LS_OPEN &&
        link->sb.end - link->sb.base <= link->ctx->s.send_backlog / 2 &&
        (!link->ctx->s.send_queue || link->sb.end - link->send_next <= link->ctx->s.send_queue / 2)) {
        link->want_writable = 0;
        if (link->ctx->cb.on_writable)
            link->ctx->cb.on_writable(link, link->user);
    }
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
        if (link->state == PURE_LS_OPEN)
            pure_link_recv_resumed(link, link->ctx->now);
    }
    return 0;
}

int pure_link_recv_is_paused(const pure_link *link) { return link && link->recv_paused; }

void pure_link_set_user(pure_link *link, void *user) { link->user = user; }
void *pure_link_user(const pure_link *link) { return link->user; }
const uint8_t *pure_link_peer_key(const pure_link *link) { return link->peer_key; }
const pure_addr *pure_link_peer_addr(const pure_link *link) { return &link->peer; }
uint64_t pure_link_backlog(const pure_link *link) { return link->sb.end - link->sb.base; }

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
    st->messages_received = c->messages_received;
    st->rekeys = c->rekeys;
    st->keepalives = c->keepalives;
    st->path_changes = c->path_changes;
    st->dropped_auth = c->dropped_auth;
    st->dropped_replay = c->dropped_replay;
    st->paced_bursts = c->paced_bursts;
    st->rtt_ns = link->rtt.smoothed;
    st->rtt_min_ns = link->rtt.min;
    st->rtt_var_ns = link->rtt.var;
    st->cwnd = link->b ? link->b->cc.cwnd : 0;
    st->bytes_in_flight = link->b ? link->b->cc.bytes_in_flight : 0;
    st->messages_acked = link->msgs_acked;
    st->messages_sent = link->next_msg_id;
    st->recv_window = link->recv_window;
}

void pure_link_maybe_idle(pure_link *link, uint64_t now)
{
    if (link->release_at == UINT64_MAX)
        link->release_at = now + PURE_IDLE_RELEASE;
}

int pure_link_release_buffers(pure_link *link)
{
    /* Nothing in flight and nothing queued: give back the buffers (rebuilt on demand), keeping
     * only keys, counters and offsets. */
    const pure_alloc *a = &link->ctx->alloc;
    if (link->state != PURE_LS_OPEN || link->close_requested)
        return 0;
    if (link->sb.base != link->sb.end || link->eliciting_in_flight)
        return 1;
    pure_sendbuf_shrink(&link->sb, a);
    pure_recovery_free(link);
    link->sent_lo = link->next_pn;
    pure_ranges_free(&link->rx_pns, a);
    if (link->b && pure_ranges_empty(&link->b->oo) && pure_msgparse_at_boundary(&link->b->parse) &&
        !link->b->lost.n)
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
    pure_ranges_init(&b->oo, 1u << 14);
    pure_msgparse_init(&b->parse, s->max_message_size);
    b->parse.preamble_done = link->preamble_seen;
    pure_cc_init(&b->cc, (enum pure_cc_algo)s->congestion, s->max_udp_payload, now);
    pure_pacer_init(&b->pacer, 64u * s->max_udp_payload);
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
    link->preamble_seen = b->parse.preamble_done;
    pure_ranges_free(&b->acked, a);
    pure_ranges_free(&b->lost, a);
    pure_ranges_free(&b->oo, a);
    pure_rxmem_forget(link);
    pure_alloc ra = pure_rxmem_alloc(link->ctx); /* receive buffers leave the accounting */
    pure_msgparse_free(&b->parse, &ra);
    pure_mem_free(&ra, b->ring, (size_t)b->ring_cap);
    pure_wipe(b, sizeof *b);
    pure_mem_free(a, b, sizeof *b);
    link->b = NULL;
}
