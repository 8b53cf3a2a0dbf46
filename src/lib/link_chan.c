/* SPDX-License-Identifier: MIT */
/* link_chan.c: a link's channels 1..max over chan.h (link_chan.h): the public calls that send on
 * them and set their priorities, their frames in a packet, their data arriving, and what an ACK
 * or a loss means for them. Receive memory: every channel's buffers go through rxmem.c's
 * allocator (max_receive_memory); one channel of the context at a time (ctx->rx_chan_owner) may
 * finish its message past the budget, by at most max_message_size. What does not fit is dropped
 * unacknowledged, for the peer to send again. Its flow credit bounds it as channel 0's does. */
#include <string.h>

#include "chan.h"
#include "frame.h"
#include "link_chan.h"
#include "link_shared.h"
#include "nomem.h"
#include "registry.h"
#include "rxmem.h"
#include "tparams.h"

uint32_t pure_link_peer_channels(const pure_link *link)
{
    if (!link)
        return 0;
    uint32_t local = link->ctx->s.max_channels;
    /* An initiator learns the peer's limit from the RESP; until then messages on channels up to
     * ours are taken and wait, and pure_link_chan_peer_known checks them when the RESP came. */
    if (link->state == PURE_LS_HANDSHAKE)
        return local;
    uint32_t peer = pure_tp_peer_channels(link);
    return peer < local ? peer : local;
}

int pure_link_chan_peer_known(pure_link *link)
{
    const pure_chans *t = link->chans;
    uint32_t lim = pure_link_peer_channels(link);
    for (uint32_t i = lim + 1; t && i <= t->top; i++)
        if (t->c[i])
            return -1;
    return 0;
}

int64_t pure_link_send_on(pure_link *link, uint32_t channel, const void *msg, size_t len)
{
    if (!link || (!msg && len))
        return PURE_EINVAL;
    msg = msg ? msg : ""; /* empty: memcpy takes no NULL, even for 0 bytes */
    if (channel == 0)
        return pure_link_send(link, msg, len);
    int rc = pure_link_chan_send_check(link, channel, len);
    if (rc)
        return rc;
    pure_chan *c = pure_link_chan_get(link, channel);
    if (!c)
        return PURE_ENOMEM;
    rc = pure_link_watch_send(link, channel, 4 + (uint64_t)len);
    if (rc)
        return rc;
    int64_t id = pure_chan_write(c, &link->ctx->alloc, msg, len, link->ctx->s.send_backlog,
                                 link->ctx->s.send_queue);
    if (id == PURE_EAGAIN)
        link->want_writable = 1;
    if (id < 0)
        return id;
    if (!link->in_pending)
        pure_ctx_mark_pending(link->ctx, link);
    link->last_msg_sent = link->ctx->now;
    return id;
}

int pure_link_set_priority(pure_link *link, uint32_t channel, uint8_t urgency, int incremental)
{
    if (!link || channel > link->ctx->s.max_channels || urgency >= PURE_URGENCY_LEVELS)
        return PURE_EINVAL;
    if (link->closed_notified)
        return PURE_ESTATE;
    pure_chans *t = pure_link_chan_table(link);
    if (!t)
        return PURE_ENOMEM;
    t->urgency[channel] = urgency;
    t->incremental[channel] = incremental != 0;
    return 0;
}

int pure_link_channel_unacked(const pure_link *link, uint32_t channel, uint64_t *first_unacked,
                              uint64_t *next_id)
{
    if (!link || !first_unacked || !next_id || channel > link->ctx->s.max_channels)
        return PURE_EINVAL;
    if (channel == 0) {
        *first_unacked = link->msgs_acked;
        *next_id = link->next_msg_id;
        return 0;
    }
    const pure_chan *c = pure_chans_find(link->chans, channel);
    *first_unacked = c ? c->msgs_acked : 0;
    *next_id = c ? c->next_msg_id : 0;
    return 0;
}

/* ---- datagrams ---- */

_Static_assert(PURE_DGQ_LIMIT == PURE_DATAGRAM_QUEUE, "the queue's limit is pure.h's");

size_t pure_link_peer_datagram_max(const pure_link *link)
{
    if (!link)
        return 0;
    /* before the RESP: as for channels, taken and held; dropped at open if the peer takes none */
    if (link->state == PURE_LS_HANDSHAKE)
        return link->ctx->s.max_datagram_size;
    return pure_tp_peer_datagram_max(link);
}

size_t pure_link_datagram_max(const pure_link *link)
{
    if (!link)
        return 0;
    size_t lim = link->ctx->s.max_datagram_size, peer = pure_link_peer_datagram_max(link);
    size_t fit = (size_t)link->mss - PURE_DATA_HEADER - PURE_TAG_LEN - PURE_DATAGRAM_FRAME_OVERHEAD;
    if (peer < lim)
        lim = peer;
    return fit < lim ? fit : lim;
}

int pure_link_send_datagram(pure_link *link, const void *data, size_t len)
{
    if (!link || (!data && len))
        return PURE_EINVAL;
    data = data ? data : ""; /* empty: memcpy takes no NULL, even for 0 bytes */
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED || link->close_requested)
        return PURE_ECLOSED;
    size_t max = pure_link_datagram_max(link);
    if (max == 0)
        return PURE_EINVAL;
    if (len > max)
        return PURE_EMSGSIZE;
    pure_chans *t = pure_link_chan_table(link);
    if (!t)
        return PURE_ENOMEM;
    int rc = pure_dgq_push(&t->dg, &link->ctx->alloc, data, len);
    if (rc)
        return rc;
    if (!link->in_pending)
        pure_ctx_mark_pending(link->ctx, link);
    return 0;
}

void pure_link_datagram_stats(const pure_link *link, pure_datagram_stats *st)
{
    if (!st)
        return;
    memset(st, 0, sizeof *st);
    if (!link || !link->chans)
        return;
    st->sent = link->chans->dg.sent;
    st->received = link->chans->dg.received;
    st->lost = link->chans->dg.lost;
    st->dropped = link->chans->dg.dropped;
}

int pure_link_chan_put_datagram(pure_link *link, pure_pkt *k)
{
    pure_dgq *q = &link->chans->dg;
    const uint8_t *p;
    int32_t len;
    size_t max = pure_link_datagram_max(link);
    while ((len = pure_dgq_peek(q, &p)) >= 0 && (size_t)len > max) {
        pure_dgq_pop(q); /* the path's datagram size fell below it */
        q->dropped++;
    }
    if (len < 0 || pure_pkt_datagram(k, p, (size_t)len) != 0)
        return 0; /* nothing waits, or it goes in the next packet (an ACK took the room) */
    pure_dgq_pop(q);
    q->sent++;
    return 1;
}

static int on_datagram(pure_link *link, const pure_frame *f)
{
    if (f->u.chan.len > link->ctx->s.max_datagram_size)
        return PURE_EPROTO; /* larger than this side takes, or none taken */
    pure_chans *t = pure_link_chan_table(link);
    if (!t) /* no memory for its count: not delivered uncounted, the packet not acknowledged */
        return PURE_CHAN_DROPPED;
    t->dg.received++;
    if (link->ctx->cb.on_datagram)
        link->ctx->cb.on_datagram(link, link->user, f->u.chan.bytes, (size_t)f->u.chan.len);
    return 0;
}

/* ---- sending ---- */

int pure_link_chan_put_data(pure_link *link, int ch, pure_pkt *k, pure_sent *rec, int whole)
{
    pure_chan *c = link->chans->c[ch];
    const pure_alloc *a = &link->ctx->alloc;
    uint64_t off;
    int retx;
    uint64_t want = pure_chan_next_run(c, a, &off, &retx);
    uint64_t len = pure_pkt_chan_data_fit(k, (uint64_t)ch, off, want);
    if (len == 0 || (whole && len < want))
        return 0;
    uint8_t *body = pure_pkt_chan_data(k, (uint64_t)ch, off, len);
    if (!body)
        return 0;
    pure_shq_copy(&c->sb, c->shq, off, body, (size_t)len); /* ring or shared bodies */
    if (len < want)
        pure_pkt_pad(k); /* a full packet is exactly full, so the burst goes on */
    pure_chan_on_sent(c, a, off, len, retx);
    if (retx)
        link->st.bytes_retransmitted += len;
    rec->data_off = off;
    rec->data_len = (uint32_t)len;
    rec->chan = (uint8_t)ch;
    return 1;
}

int pure_link_chan_put_credits(pure_link *link, pure_pkt *k)
{
    pure_chans *t = link->chans;
    int any = 0;
    for (uint32_t i = 1; i <= t->top && t->credit_pending; i++) {
        pure_chan *c = t->c[i];
        if (!c || !c->credit_pending)
            continue;
        if (pure_pkt_chan_offset(k, PURE_FRAME_CHAN_CREDIT, i, pure_credit_granted(&c->credit)))
            break;
        c->credit_pending = 0;
        t->credit_pending--;
        any = 1;
    }
    return any;
}

/* ---- acknowledgements and losses ---- */

void pure_link_chan_on_acked(pure_link *link, const pure_sent *e)
{
    pure_chan *c = pure_chans_find(link->chans, e->chan);
    if (c)
        pure_chan_on_acked(c, &link->ctx->alloc, e->data_off, e->data_len);
}

static void credit_owed(pure_chans *t, pure_chan *c)
{
    if (!c->credit_pending) {
        c->credit_pending = 1;
        t->credit_pending++;
    }
}

void pure_link_chan_on_lost(pure_link *link, const pure_sent *e)
{
    pure_chans *t = link->chans;
    if (!t)
        return;
    if (e->chan && e->data_len) {
        pure_chan *c = pure_chans_find(t, e->chan);
        if (c)
            pure_chan_on_lost(c, &link->ctx->alloc, e->data_off, e->data_len);
    }
    if (e->flags & PURE_SENT_DATAGRAM)
        t->dg.lost++;                     /* never sent again */
    if (e->flags & PURE_SENT_CHAN_CREDIT) /* which channels' grants it held is not kept: resend
                                               every grant made (CHAN_CREDIT is idempotent) */
        for (uint32_t i = 1; i <= t->top; i++)
            if (t->c[i] && pure_credit_granted(&t->c[i]->credit) > link->ctx->s.recv_window)
                credit_owed(t, t->c[i]);
}

void pure_link_chan_on_pto(pure_link *link, uint32_t mss)
{
    pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++) {
        pure_chan *c = t->c[i];
        if (!c || c->send_next <= c->sb.base)
            continue;
        uint64_t from = c->sb.base, to = pure_ranges_next_start(&c->acked, from);
        if (to > c->send_next)
            to = c->send_next;
        if (to - from > mss)
            to = from + mss;
        if (to > from)
            pure_chan_on_lost(c, &link->ctx->alloc, from, to - from);
    }
}

int pure_link_chan_after_ack(pure_link *link)
{
    pure_chans *t = link->chans;
    int moved = 0; /* 1: messages acknowledged; 2: bytes */
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i] && !pure_ranges_empty(&t->c[i]->acked))
            moved |= pure_chan_release_acked(t->c[i]) | 2;
    if ((moved & 1) && t->deadline_at != UINT64_MAX)
        pure_link_cancel_after_ack(link); /* deadlines of acknowledged messages are met */
    return moved;
}

void pure_link_chan_report_acked(pure_link *link)
{
    pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++) {
        pure_chan *c = t->c[i];
        if (!c || !c->acked_moved)
            continue;
        c->acked_moved = 0;
        if (link->closed_notified)
            return; /* no callback after on_closed */
        if (link->ctx->cb.on_channel_acked)
            link->ctx->cb.on_channel_acked(link, link->user, i, c->msgs_acked - 1);
        t = link->chans; /* the callback may not free it, but re-read to be plain */
    }
}

int pure_link_chan_writable(const pure_link *link)
{
    const pure_chans *t = link->chans;
    const pure_settings *s = &link->ctx->s;
    if (!pure_link_watch_writable(link))
        return 0;
    for (uint32_t i = 1; t && i <= t->top; i++) {
        const pure_chan *c = t->c[i];
        if (c && (pure_chan_backlog(c) > s->send_backlog / 2 ||
                  (s->send_queue && c->sb.end - c->send_next > s->send_queue / 2)))
            return 0;
    }
    return 1;
}

void pure_link_chan_shrink(pure_link *link)
{
    pure_chans *t = link->chans;
    pure_alloc rx = pure_rxmem_alloc(link->ctx);
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i])
            pure_chan_shrink(t->c[i], &link->ctx->alloc, &rx);
    if (t && !t->dg.count)
        pure_dgq_clear(&t->dg, &link->ctx->alloc); /* nothing queued: the buffer goes back */
}

void pure_link_chan_free(pure_link *link)
{
    if (link->ctx->rx_chan_owner == link)
        link->ctx->rx_chan_owner = NULL;
    if (!link->chans)
        return;
    pure_alloc rx = pure_rxmem_alloc(link->ctx);
    pure_chans_free(link->chans, &link->ctx->alloc, &rx);
    link->chans = NULL;
    link->send_gate &= (uint8_t)~PURE_GATE_CHANS;
}

/* ---- receiving ---- */

typedef struct deliver_arg {
    pure_link *link;
    pure_chan *c;
    uint32_t channel;
} deliver_arg;

static int deliver(void *arg, const uint8_t *data, size_t len)
{
    deliver_arg *d = arg;
    pure_link *link = d->link;
    link->st.messages_received++;
    d->c->msgs_received++; /* the next message's id (a cancel names it) */
    d->c->msgs_delivered++;
    if (link->ctx->cb.on_channel_message)
        link->ctx->cb.on_channel_message(link, link->user, d->channel, data, len);
    return link->state != PURE_LS_OPEN; /* stop if the application closed the link */
}

/* Feeds in-order bytes to the channel's framer, its assembly buffer within what the budget
 * leaves. Returns 0, 1 (the link closed), PURE_EAGAIN (c->parse.unfed bytes not taken) or a
 * code that closes the link. */
static int feed(pure_link *link, uint32_t ch, pure_chan *c, const uint8_t *p, size_t n)
{
    pure_ctx *ctx = link->ctx;
    pure_alloc a = pure_rxmem_alloc(ctx);
    int owner = ctx->rx_chan_owner == link && ctx->rx_chan_owner_ch == ch;
    uint64_t lim = owner ? UINT32_MAX : (uint64_t)c->parse.body_cap + pure_rxmem_room(ctx);
    c->parse.cap_limit = lim > UINT32_MAX ? UINT32_MAX : (uint32_t)lim;
    deliver_arg d = {link, c, ch};
    int rc = pure_msgparse_feed_inline(&c->parse, &a, p, n, deliver, &d);
    if (rc == PURE_EAGAIN && !ctx->rx_chan_owner) {
        /* The budget stops this channel's message: it becomes the one channel that may finish
         * its message past the budget (as rxmem.c's owner link does for channel 0), so channels
         * that each hold part of a message cannot all wait on each other for memory. */
        ctx->rx_chan_owner = link;
        ctx->rx_chan_owner_ch = ch;
        owner = 1;
        size_t done = n - c->parse.unfed;
        c->parse.cap_limit = UINT32_MAX;
        rc = pure_msgparse_feed(&c->parse, &a, p + done, n - done, deliver, &d);
    }
    if (owner && ctx->rx_chan_owner == link && pure_msgparse_at_boundary(&c->parse))
        ctx->rx_chan_owner = NULL; /* its message is out: the exemption goes */
    return rc;
}

/* A stalled channel's ring is drained again by pure_link_chan_retry. */
static void set_stalled(pure_chans *t, pure_chan *c, int stalled)
{
    if (stalled != c->stalled) {
        c->stalled = (uint8_t)stalled;
        t->stalled += stalled ? 1u : (uint32_t)-1;
    }
}

static void set_held(pure_chans *t, pure_chan *c, int held)
{
    if (held != c->credit_held) {
        c->credit_held = (uint8_t)held;
        t->held += held ? 1u : (uint32_t)-1;
    }
}

/* Grants the channel more credit once half its window was consumed, unless the application
 * paused the link or max_receive_memory has less room than the grant would let in (the channel
 * that may finish its message past the budget excepted): the peer then sends no more than the
 * receiver can hold, instead of bytes it would drop. A held grant is tried again as packets
 * arrive (pure_link_chan_retry; the link probes its peer meanwhile). */
static void update_credit(pure_link *link, pure_chan *c, uint32_t ch, uint64_t now)
{
    if (!pure_credit_due(&c->credit, c->recv_next) || link->recv_paused)
        return;
    pure_ctx *ctx = link->ctx;
    int owner = ctx->rx_chan_owner == link && ctx->rx_chan_owner_ch == ch;
    int short_of_memory = !owner && pure_rxmem_room(ctx) < pure_credit_window(&c->credit);
    if (short_of_memory && !ctx->rx_chan_owner) {
        /* no channel may go past the budget now: this one may (so one always moves on) */
        ctx->rx_chan_owner = link;
        ctx->rx_chan_owner_ch = ch;
        short_of_memory = 0;
    }
    set_held(link->chans, c, short_of_memory);
    if (short_of_memory)
        return;
    uint64_t rtt = link->rtt.has_sample ? link->rtt.smoothed : 0;
    pure_credit_grant(&c->credit, c->recv_next, rtt, link->ctx->s.recv_window_max, now);
    credit_owed(link->chans, c);
}

void pure_link_chan_recv_resumed(pure_link *link, uint64_t now)
{
    pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i])
            update_credit(link, t->c[i], i, now);
    if (t && t->credit_pending)
        pure_ctx_mark_pending(link->ctx, link);
}

/* Consumes the held bytes that continue the channel's stream from recv_next, then grants credit.
 * Returns 0 or a code that closes the link. If the budget stops it (the assembly buffer may
 * not grow: max_receive_memory) the channel is marked stalled: those bytes were acknowledged
 * and will not come again, so pure_link_chan_retry tries again as packets arrive (the link
 * probes its peer meanwhile: timers.c's watch, as for a message in progress). */
static int drain_ring(pure_link *link, uint32_t ch, pure_chan *c, uint64_t now)
{
    pure_chans *t = link->chans;
    const uint8_t *p;
    size_t chunk;
    int stalled = 0, rc = 0;
    for (;;) {
        uint64_t skip = c->cx ? pure_cancels_next_skip(c->cx) : UINT64_MAX;
        if (skip <= c->recv_next && (rc = pure_link_cancel_skip(link, ch, c)) == 0)
            continue; /* past a message the peer cancelled (link_cancel.c) */
        if (skip <= c->recv_next)
            break;
        if ((chunk = pure_rob_next(&c->rob, c->recv_next, &p)) == 0)
            break;
        if (chunk > skip - c->recv_next)
            chunk = (size_t)(skip - c->recv_next);
        rc = feed(link, ch, c, p, chunk);
        c->recv_next += chunk - (rc ? c->parse.unfed : 0);
        if (rc) {
            pure_rob_trim(&c->rob, c->recv_next);
            stalled = rc == PURE_EAGAIN || rc == PURE_ENOMEM;
            if (rc == PURE_ENOMEM) /* acknowledged bytes: only a retry brings them on */
                pure_link_rx_nomem(link, now);
            break;
        }
    }
    set_stalled(t, c, stalled);
    if (pure_rxmem_room(link->ctx) < pure_credit_window(&c->credit)) {
        /* memory is short: what this channel holds without need goes back (an empty ring, the
         * assembly buffer between messages) */
        pure_alloc ra = pure_rxmem_alloc(link->ctx);
        pure_rob_shrink(&c->rob, &ra);
        if (pure_msgparse_at_boundary(&c->parse))
            pure_msgparse_shrink(&c->parse, &ra);
    }
    if (rc == 0)
        update_credit(link, c, ch, now);
    return rc < 0 && rc != PURE_EAGAIN && rc != PURE_ENOMEM ? rc : 0;
}

static int on_chan_data(pure_link *link, const pure_frame *f, uint64_t now)
{
    uint32_t ch = (uint32_t)f->u.chan.channel;
    uint64_t off = f->u.chan.offset, len = f->u.chan.len, end = off + len;
    pure_chan *c = pure_link_chan_get(link, ch);
    if (!c)
        return PURE_CHAN_DROPPED; /* no memory for the channel: it comes again */
    if (end > pure_credit_granted(&c->credit))
        return PURE_EFLOW;
    if (end <= c->recv_next)
        return 0; /* a duplicate */
    int skips = c->cx && pure_cancels_next_skip(c->cx) != UINT64_MAX;
    if (off > c->recv_next || skips) { /* out of order, or cancels to skip: hold it */
        uint64_t from = off > c->recv_next ? off : c->recv_next;
        pure_alloc ra = pure_rxmem_alloc(link->ctx);
        uint64_t limit = pure_rob_cap(&c->rob) + pure_rxmem_room(link->ctx);
        if (link->ctx->rx_chan_owner == link && link->ctx->rx_chan_owner_ch == ch)
            limit += link->ctx->s.max_message_size; /* the owner's message goes on */
        uint64_t want = pure_credit_granted(&c->credit) - c->recv_next;
        if (pure_rob_reserve(&c->rob, &ra, want, limit) != 0 &&
            pure_rob_reserve(&c->rob, &ra, end - c->recv_next, limit) != 0)
            return PURE_CHAN_DROPPED;
        if (pure_rob_put(&c->rob, &link->ctx->alloc, c->recv_next, from,
                         f->u.chan.bytes + (from - off), (size_t)(end - from)) != 0)
            return PURE_CHAN_DROPPED;
        if (from > c->recv_next)
            return 0;
        int drc = drain_ring(link, ch, c, now);
        /* in order but not all consumed (memory short, the link closed): unacknowledged */
        return drc ? drc : c->recv_next < end ? PURE_CHAN_DROPPED : 0;
    }
    uint64_t skip = c->recv_next - off;
    int rc = feed(link, ch, c, f->u.chan.bytes + skip, (size_t)(len - skip));
    c->recv_next = end - (rc ? c->parse.unfed : 0);
    if (rc == PURE_ENOMEM) { /* what its ring holds past it (acknowledged) waits for the retry */
        set_stalled(link->chans, c, 1);
        pure_link_rx_nomem(link, now);
    }
    if (rc == PURE_EAGAIN || rc == PURE_ENOMEM)
        return PURE_CHAN_DROPPED; /* the rest comes again when there is room */
    if (rc < 0)
        return rc;
    if (rc == 1 || link->state != PURE_LS_OPEN)
        return 0;
    return drain_ring(link, ch, c, now);
}

int pure_link_chan_retry(pure_link *link, uint64_t now)
{
    pure_chans *t = link->chans;
    int rc = 0;
    for (uint32_t i = 1; t && i <= t->top && link->state == PURE_LS_OPEN && !rc; i++) {
        pure_chan *c = t->c[i];
        if (c && c->stalled)
            rc = drain_ring(link, i, c, now);
        else if (c && c->credit_held)
            update_credit(link, c, i, now);
    }
    if (t && t->credit_pending)
        pure_ctx_mark_pending(link->ctx, link);
    return rc;
}

int pure_link_chan_on_frame(pure_link *link, const pure_frame *f, uint64_t now)
{
    if (f->type == PURE_FRAME_DATAGRAM)
        return on_datagram(link, f);
    if (f->type == PURE_FRAME_CHAN_CANCEL || f->type == PURE_FRAME_CHAN_CANCELLED) {
        int rc = pure_link_cancel_on_frame(link, f), ch = (int)f->u.cancel.channel;
        return rc == PURE_CANCEL_DRAIN ? drain_ring(link, ch, link->chans->c[ch], now) : rc;
    }
    if (f->u.chan.channel > link->ctx->s.max_channels)
        return PURE_EPROTO; /* more channels than this side takes */
    switch (f->type) {
    case PURE_FRAME_CHAN_DATA: return on_chan_data(link, f, now);
    case PURE_FRAME_CHAN_CREDIT: {
        pure_chan *c = pure_link_chan_get(link, (uint32_t)f->u.chan.channel);
        if (!c)
            return PURE_CHAN_DROPPED; /* unacknowledged: the peer sends its credit again */
        if (pure_credit_on_frame(&c->credit, f->u.chan.offset))
            pure_ctx_mark_pending(link->ctx, link);
        return 0;
    }
    case PURE_FRAME_CHAN_DELIVERED: {
        pure_chan *c = pure_chans_find(link->chans, f->u.chan.channel);
        if (c)
            pure_chan_on_delivered(c, &link->ctx->alloc, f->u.chan.offset);
        return 0;
    }
    default: return PURE_EPROTO;
    }
}
