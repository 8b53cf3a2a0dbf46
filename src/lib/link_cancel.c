/* SPDX-License-Identifier: MIT */
/* link_cancel.c: cancels and deadlines of a link's channels (link_cancel.h; docs/channels.md,
 * "Cancel and deadlines"; docs/protocol.md, "Cancel").
 *
 * One outcome per message on both sides. The receiver decides: a CHAN_CANCEL that finds the
 * message delivered already (the in-order point past its end) changes nothing; otherwise the
 * message is dropped, whole, now or when the in-order point reaches it. Its CHAN_CANCELLED says
 * which, and the sender reports only that: until the answer the message's bytes are neither sent
 * again nor released, and its id is not counted acknowledged, so on_channel_acked and
 * pure_link_channel_unacked never run ahead of the outcome. A CHAN_CANCEL goes again when a
 * packet that carried one is lost, until its answer arrives; an answer goes again until a packet
 * that carried it is acknowledged (the receiver keeps it until then, so a repeated CHAN_CANCEL
 * gets the same answer; one arriving later still is a copy whose answer the sender ignores). */
#include "link_cancel.h"

#include "chan.h"
#include "chan_cancel.h"
#include "frame.h"
#include "registry.h"
#include "link_shared.h"
#include "tparams.h"

static void mark_due(pure_link *link)
{
    link->chans->cancel_due = 1;
    if (!link->in_pending)
        pure_ctx_mark_pending(link->ctx, link);
}

static int cancel_one(pure_link *link, pure_chan *c, uint64_t id, uint8_t flags)
{
    int rc = pure_chan_cancel(c, &link->ctx->alloc, id, flags);
    if (rc == 0)
        mark_due(link);
    return rc;
}

int pure_link_cancel(pure_link *link, uint32_t channel, uint64_t id)
{
    if (!link || channel == 0 || channel > link->ctx->s.max_channels)
        return PURE_EINVAL;
    if (link->state == PURE_LS_CLOSING || link->state == PURE_LS_CLOSED || link->closed_notified)
        return PURE_ECLOSED;
    if (link->state != PURE_LS_OPEN)
        return PURE_ESTATE;
    if (!pure_tp_peer_cancel(link))
        return PURE_EINVAL;
    pure_chan *c = pure_chans_find(link->chans, channel);
    if (!c)
        return PURE_EINVAL; /* nothing was ever sent on it */
    return cancel_one(link, c, id, 0);
}

int64_t pure_link_send_on_deadline(pure_link *link, uint32_t channel, const void *msg, size_t len,
                                   uint64_t deadline)
{
    if (!link || channel == 0 || (!msg && len))
        return PURE_EINVAL;
    if (!msg)
        msg = ""; /* empty: memcpy takes no NULL, even for 0 bytes */
    int rc = pure_link_chan_send_check(link, channel, len);
    if (rc)
        return rc; /* before the deadline's memory is reserved */
    pure_chan *c = pure_link_chan_get(link, channel);
    pure_cancels *x = c ? pure_cancels_get(&c->cx, &link->ctx->alloc) : NULL;
    if (!x || pure_cancels_dl_reserve(x, &link->ctx->alloc) != 0)
        return PURE_ENOMEM; /* before the message is taken: it always gets its deadline */
    int64_t id = pure_link_send_on(link, channel, msg, len);
    if (id < 0)
        return id;
    pure_cancels_dl_push(x, (uint64_t)id, deadline);
    if (deadline < link->chans->deadline_at)
        link->chans->deadline_at = deadline; /* the link is pending: its timer moves at the write */
    return id;
}

/* ---- frames out ---- */

int pure_link_cancel_put(pure_link *link, pure_pkt *k, uint64_t pn)
{
    pure_chans *t = link->chans;
    int any = 0, left = 0;
    for (uint32_t i = 1; i <= t->top && !left; i++) {
        pure_cancels *x = t->c[i] ? t->c[i]->cx : NULL;
        for (uint32_t j = 0; x && j < x->nout && !left; j++) {
            pure_cancel_out *o = &x->out[j];
            if (!o->owed || o->answered)
                continue;
            if (pure_pkt_chan_cancel(k, i, o->id, o->start, o->end - o->start) != 0) {
                left = 1;
                break;
            }
            o->owed = 0;
            any = 1;
        }
        for (uint32_t j = 0; x && j < x->nin && !left; j++) {
            pure_cancel_in *e = &x->in[j];
            if (e->reply != PURE_REPLY_OWED)
                continue;
            if (pure_pkt_chan_cancelled(k, i, e->id, e->delivered) != 0) {
                left = 1;
                break;
            }
            e->reply = PURE_REPLY_SENT;
            e->pn = pn;
            any = 1;
        }
    }
    t->cancel_due = (uint8_t)left; /* the rest in the next packet */
    return any;
}

int pure_link_cancel_put_answers(pure_link *link, uint32_t ch, pure_pkt *k)
{
    pure_cancels *x = link->chans->c[ch] ? link->chans->c[ch]->cx : NULL;
    for (uint32_t j = 0; x && j < x->nin; j++)
        if (x->in[j].reply != PURE_REPLY_DONE &&
            pure_pkt_chan_cancelled(k, ch, x->in[j].id, x->in[j].delivered) != 0)
            return -1;
    return 0;
}

void pure_link_cancel_on_acked(pure_link *link, uint64_t pn)
{
    pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++) {
        pure_cancels *x = t->c[i] ? t->c[i]->cx : NULL;
        if (!x || !x->nin)
            continue;
        int done = 0;
        for (uint32_t j = 0; j < x->nin; j++)
            if (x->in[j].reply == PURE_REPLY_SENT && x->in[j].pn == pn) {
                x->in[j].reply = PURE_REPLY_DONE; /* the peer has the answer */
                done = 1;
            }
        if (done)
            pure_cancels_in_compact(x);
    }
}

void pure_link_cancel_on_lost(pure_link *link)
{
    /* which frames the packet held is not kept: everything unanswered goes again (a repeated
     * CHAN_CANCEL gets the answer kept; a repeated answer the sender ignores) */
    pure_chans *t = link->chans;
    int any = 0;
    for (uint32_t i = 1; t && i <= t->top; i++) {
        pure_cancels *x = t->c[i] ? t->c[i]->cx : NULL;
        for (uint32_t j = 0; x && j < x->nout; j++)
            if (!x->out[j].answered)
                any = x->out[j].owed = 1;
        for (uint32_t j = 0; x && j < x->nin; j++)
            if (x->in[j].reply == PURE_REPLY_SENT) {
                x->in[j].reply = PURE_REPLY_OWED;
                any = 1;
            }
    }
    if (any)
        mark_due(link);
}

/* ---- frames in ---- */

int pure_link_cancel_skip(pure_link *link, uint32_t ch, pure_chan *c)
{
    pure_cancels *x = c->cx;
    pure_cancel_in *e = NULL;
    for (uint32_t j = 0; j < x->nin && !e; j++)
        if (x->in[j].skip)
            e = &x->in[j];
    /* the message in progress: its id, and its start at a boundary (nothing of it consumed) or
     * inside the message the parser holds */
    if (!e || e->start > c->recv_next || e->id != c->msgs_received ||
        (e->start == c->recv_next) != pure_msgparse_at_boundary(&c->parse))
        return PURE_EPROTO;
    uint64_t id = e->id;
    pure_msgparse_abandon(&c->parse);
    c->recv_next = e->end;
    pure_rob_trim(&c->rob, c->recv_next);
    if (c->recv_next > c->credit.granted)
        c->credit.granted = c->recv_next; /* past the credit (its bytes never came): a grant is
                                             due from here (pure_credit_due) */
    c->msgs_received++;
    e->skip = 0;
    pure_cancels_in_compact(x);
    pure_ctx *ctx = link->ctx;
    if (ctx->rx_chan_owner == link && ctx->rx_chan_owner_ch == ch)
        ctx->rx_chan_owner = NULL; /* its message is gone: the exemption goes */
    if (ctx->cb.on_channel_cancelled && !link->closed_notified)
        ctx->cb.on_channel_cancelled(link, link->user, ch, id, 0);
    return link->state != PURE_LS_OPEN;
}

/* The peer cancels its message. */
static int on_cancel(pure_link *link, const pure_frame *f)
{
    uint32_t ch = (uint32_t)f->u.cancel.channel;
    uint64_t s = f->u.cancel.offset, e = s + f->u.cancel.len, id = f->u.cancel.id;
    if (f->u.cancel.len - 4 > link->ctx->s.max_message_size)
        return PURE_EPROTO; /* no message of ours could be that long */
    pure_chan *c = pure_link_chan_get(link, ch);
    pure_cancels *x = c ? pure_cancels_get(&c->cx, &link->ctx->alloc) : NULL;
    if (!x)
        return PURE_CANCEL_DROPPED; /* no memory to hold it: unacknowledged, it comes again */
    pure_cancel_in *in = pure_cancels_in_find(x, id);
    if (in) { /* again: the same answer */
        if (in->start != s || in->end != e)
            return PURE_EPROTO;
        if (in->reply != PURE_REPLY_OWED) {
            in->reply = PURE_REPLY_OWED;
            mark_due(link);
        }
        return 0;
    }
    pure_cancel_in ent = {.start = s, .end = e, .id = id, .reply = PURE_REPLY_OWED};
    /* a peer chooses how many entries it makes us hold: all but the one at the in-order point
     * (which must not wait, or the stream could stop) within PURE_CANCEL_IN_MAX */
    uint32_t limit = PURE_CANCEL_IN_MAX;
    int now_skip = 0;
    if (e <= c->recv_next) { /* delivered already (or a late copy of a cancel answered) */
        if (id >= c->msgs_received)
            return PURE_EPROTO;
        ent.delivered = 1;
    } else if (s <= c->recv_next) { /* the message in progress, or the next to start */
        ent.skip = 1;
        now_skip = 1;
        limit = UINT32_MAX;
    } else { /* ahead of the in-order point: skipped when it gets there */
        if (id <= c->msgs_received)
            return PURE_EPROTO;
        ent.skip = 1;
    }
    int err = 0;
    if (!pure_cancels_in_add(x, &link->ctx->alloc, &ent, limit, &err))
        return err == PURE_EAGAIN || err == PURE_ENOMEM ? PURE_CANCEL_DROPPED : err;
    mark_due(link);
    if (!now_skip)
        return 0;
    int rc = pure_link_cancel_skip(link, ch, c);
    return rc < 0 ? rc : rc == 1 ? 0 : PURE_CANCEL_DRAIN; /* then what follows it, in order */
}

/* The peer answers our cancel. */
static int on_cancelled(pure_link *link, const pure_frame *f)
{
    uint32_t ch = (uint32_t)f->u.cancel.channel;
    pure_chan *c = pure_chans_find(link->chans, ch);
    pure_cancel_out *o = c ? pure_cancels_out_find(c->cx, f->u.cancel.id) : NULL;
    if (!o || o->answered)
        return 0; /* answered already: a copy */
    if (f->u.cancel.delivered && !o->sent)
        return PURE_EPROTO; /* delivered, though part of it never went */
    uint64_t id = o->id;
    uint32_t flags = PURE_CANCELLED_SENT | o->flags;
    o->answered = 1; /* kept until counted: a second cancel of it is PURE_EALREADY */
    if (!f->u.cancel.delivered) {
        if (link->ctx->cb.on_channel_cancelled && !link->closed_notified)
            link->ctx->cb.on_channel_cancelled(link, link->user, ch, id, flags);
    }
    /* the hold is gone: the caller releases (after a CLOSE, only once the CHAN_DELIVERED that
     * follows trimmed what the closer never delivered) */
    if (!link->in_pending && link->state == PURE_LS_OPEN)
        pure_ctx_mark_pending(link->ctx, link);
    return 0;
}

int pure_link_cancel_on_frame(pure_link *link, const pure_frame *f)
{
    if (f->u.cancel.channel > link->ctx->s.max_channels)
        return PURE_EPROTO;
    return f->type == PURE_FRAME_CHAN_CANCEL ? on_cancel(link, f) : on_cancelled(link, f);
}

/* ---- deadlines ---- */

void pure_link_cancel_after_ack(pure_link *link)
{
    pure_chans *t = link->chans;
    int left = 0;
    for (uint32_t i = 1; i <= t->top; i++) {
        pure_chan *c = t->c[i];
        if (c && c->cx && c->cx->ndl) {
            pure_cancels_dl_prune(c->cx, c->msgs_acked);
            left |= c->cx->ndl != 0;
        }
    }
    if (!left)
        t->deadline_at = UINT64_MAX; /* every deadline met: no timer */
}

void pure_link_cancel_expired(pure_link *link, uint64_t now)
{
    pure_chans *t = link->chans;
    uint64_t next = UINT64_MAX;
    int cancels = pure_tp_peer_cancel(link);
    for (uint32_t i = 1; i <= t->top; i++) {
        pure_chan *c = t->c[i];
        pure_cancels *x = c ? c->cx : NULL;
        if (!x || !x->ndl)
            continue;
        pure_cancels_dl_prune(x, c->msgs_acked);
        uint32_t kept = 0;
        for (uint32_t j = 0; j < x->ndl; j++) {
            pure_deadline d = x->dl[x->head + j];
            if (d.at <= now &&
                (!cancels || cancel_one(link, c, d.id, PURE_CANCELLED_DEADLINE) != PURE_ENOMEM))
                continue; /* cancelled, or acknowledged or cancelled already: done */
            x->dl[x->head + kept++] = d;
            if (d.at < next)
                next = d.at > now ? d.at : now + 1000000; /* no memory: try again in 1 ms */
        }
        x->ndl = kept;
        if (!kept)
            x->head = 0;
    }
    t->deadline_at = next;
}
