/* SPDX-License-Identifier: MIT */
/* link_shared.c: shared sends on a link's channels, its queue limit and its queue statistics
 * (pure.h; docs/channels.md, "Shared sends and slow peers"). The bytes are shared.c's, the
 * marks that date messages qwatch.c's; this file only applies them to a link's streams.
 * Channel 0 takes no shared sends: its ring keeps its per-message fast path (link.c). */
#include <string.h>

#include "chan.h"
#include "link_shared.h"
#include "qwatch.h"
#include "registry.h"
#include "shared.h"
#include "tparams.h"

pure_chans *pure_link_chan_table(pure_link *link)
{
    if (!link->chans) {
        link->chans = pure_chans_new(&link->ctx->alloc, link->ctx->s.max_channels);
        if (link->chans)
            link->send_gate |= PURE_GATE_CHANS; /* channel 0's sends now keep the table's count */
    }
    return link->chans;
}

static pure_chans *table(pure_link *link)
{
    return pure_link_chan_table(link);
}

pure_chan *pure_link_chan_get(pure_link *link, uint32_t ch)
{
    pure_chans *t = table(link);
    const pure_settings *s = &link->ctx->s;
    return t ? pure_chans_get(t, &link->ctx->alloc, ch, s->recv_window, pure_tp_peer_window(link),
                              s->max_message_size)
             : NULL;
}

/* ---- the buffers (shared.c makes them; the context gives the allocator and the limit) ---- */

static int shared_new(pure_ctx *ctx, const void *data, size_t len, int copy,
                      void (*release)(void *, const void *, size_t), void *user, pure_shared **out)
{
    if (!ctx || !out || (!data && len))
        return PURE_EINVAL;
    if (!data)
        data = ""; /* an empty body may come as NULL (release then gets ""); memcpy takes no NULL */
    if (len > ctx->s.max_message_size)
        return PURE_EMSGSIZE;
    *out = pure_shared_make(&ctx->alloc, data, len, copy, release, user);
    return *out ? 0 : PURE_ENOMEM;
}

int pure_shared_new(pure_ctx *ctx, const void *data, size_t len,
                    void (*release)(void *user, const void *data, size_t len), void *user,
                    pure_shared **out)
{
    return shared_new(ctx, data, len, 0, release, user, out);
}

int pure_shared_copy(pure_ctx *ctx, const void *data, size_t len, pure_shared **out)
{
    return shared_new(ctx, data, len, 1, NULL, NULL, out);
}

/* ---- the link's queues ---- */

/* One stream's queue: what pure_queue_stats holds, for channel ch (0 included). */
typedef struct stream_q {
    uint64_t base, end, send_next, head, msgs, shared;
} stream_q;

static int stream_get(const pure_link *link, uint32_t ch, stream_q *q)
{
    if (ch == 0) {
        q->base = link->sb.base;
        q->end = link->sb.end;
        q->send_next = link->send_next;
        q->head = link->msg_boundary;
        q->msgs = link->next_msg_id - link->msgs_acked;
        q->shared = 0;
        return 1;
    }
    const pure_chan *c = pure_chans_find(link->chans, ch);
    if (!c)
        return 0;
    q->base = c->sb.base;
    q->end = c->sb.end;
    q->send_next = c->send_next;
    q->head = c->msg_boundary;
    q->msgs = c->next_msg_id - c->msgs_acked;
    q->shared = pure_shq_held(c->shq);
    return 1;
}

/* Bytes the link holds not acknowledged, every stream together. */
static uint64_t queued_all(const pure_link *link)
{
    uint64_t sum = link->sb.end - link->sb.base;
    const pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i])
            sum += pure_chan_backlog(t->c[i]);
    return sum;
}

int pure_link_watch_send(pure_link *link, uint32_t ch, uint64_t bytes)
{
    pure_qwatch *w = link->chans->qw;
    if (!w)
        return 0;
    if (w->limit) {
        uint64_t q = queued_all(link);
        if (q && q + bytes > w->limit) { /* one message larger than the limit goes alone */
            w->full++;
            link->want_writable = 1;
            return PURE_EFULL;
        }
    }
    stream_q s;
    if (ch < w->streams && stream_get(link, ch, &s))
        pure_qmarks_note(&w->m[ch], s.head, s.end, pure_ctx_clock(link->ctx));
    return 0;
}

int pure_link_watch_writable(const pure_link *link)
{
    const pure_qwatch *w = link->chans ? link->chans->qw : NULL;
    return !w || !w->limit || queued_all(link) <= w->limit / 2;
}

/* Watching starts: the messages queued already are dated now (they may be older). */
static pure_qwatch *watch(pure_link *link)
{
    pure_chans *t = table(link);
    if (!t)
        return NULL;
    if (t->qw)
        return t->qw;
    t->qw = pure_qwatch_new(&link->ctx->alloc, t->max + 1);
    if (!t->qw)
        return NULL;
    for (uint32_t ch = 0; ch <= t->max; ch++) {
        stream_q s;
        if (stream_get(link, ch, &s) && s.msgs)
            pure_qmarks_note(&t->qw->m[ch], s.head, s.head, pure_ctx_clock(link->ctx));
    }
    return t->qw;
}

int pure_link_set_queue_limit(pure_link *link, uint64_t bytes)
{
    if (!link)
        return PURE_EINVAL;
    if (link->closed_notified)
        return PURE_ESTATE;
    pure_qwatch *w = watch(link);
    if (!w)
        return PURE_ENOMEM;
    w->limit = bytes;
    return 0;
}

int pure_link_queue_stats(const pure_link *link, uint32_t channel, uint64_t now,
                          pure_queue_stats *st, size_t size)
{
    if (!link || !st || (channel != PURE_CHANNEL_ALL && channel > link->ctx->s.max_channels))
        return PURE_EINVAL;
    pure_queue_stats r;
    memset(&r, 0, sizeof r);
    pure_qwatch *w = link->chans ? link->chans->qw : NULL;
    uint64_t oldest = UINT64_MAX;
    uint32_t from = channel == PURE_CHANNEL_ALL ? 0 : channel;
    uint32_t to = channel == PURE_CHANNEL_ALL ? (link->chans ? link->chans->top : 0) : channel;
    for (uint32_t ch = from; ch <= to; ch++) {
        stream_q s;
        if (!stream_get(link, ch, &s))
            continue;
        r.bytes += s.end - s.base;
        r.bytes_unsent += s.end - s.send_next;
        r.bytes_shared += s.shared;
        r.messages += s.msgs;
        if (s.msgs && w && ch < w->streams) {
            uint64_t t = pure_qmarks_oldest(&w->m[ch], s.head);
            if (t < oldest)
                oldest = t;
        }
    }
    if (oldest != UINT64_MAX) {
        r.oldest_at = oldest;
        r.oldest_age = now > oldest ? now - oldest : 0;
    }
    if (w) {
        r.limit = w->limit;
        r.full = w->full;
    }
    memcpy(st, &r, size < sizeof r ? size : sizeof r);
    return 0;
}

int64_t pure_link_send_shared(pure_link *link, uint32_t channel, pure_shared *sh)
{
    if (!link || !sh || channel == 0)
        return PURE_EINVAL;
    int rc = pure_link_chan_send_check(link, channel, sh->len);
    if (rc)
        return rc;
    const pure_settings *s = &link->ctx->s;
    pure_chan *c = pure_link_chan_get(link, channel);
    if (!c)
        return PURE_ENOMEM;
    rc = pure_link_watch_send(link, channel, 4 + (uint64_t)sh->len);
    if (rc)
        return rc;
    /* send_queue does not apply: it keeps copies into the ring in cache, and nothing is copied
     * here. send_backlog does, shared bytes included. */
    rc = pure_shq_write_shared(&c->sb, &c->shq, &link->ctx->alloc, sh, s->send_backlog);
    if (rc) {
        if (rc == PURE_EAGAIN) {
            c->want_writable = 1;
            link->want_writable = 1;
        }
        return rc;
    }
    if (!link->in_pending)
        pure_ctx_mark_pending(link->ctx, link);
    link->last_msg_sent = link->ctx->now;
    return (int64_t)c->next_msg_id++;
}
