/* SPDX-License-Identifier: MIT */
/* chan.c: channels 1..max of a link (chan.h): their streams' bookkeeping and the scheduler. */
#include "chan.h"

#include <string.h>

#include "pure.h"
#include "qwatch.h"
#include "varint.h"

pure_chans *pure_chans_new(const pure_alloc *a, uint32_t max)
{
    if (max > PURE_CHANNEL_MAX)
        max = PURE_CHANNEL_MAX;
    size_t size = sizeof(pure_chans) + (size_t)(max + 1) * sizeof(pure_chan *);
    pure_chans *t = pure_mem_alloc(a, size);
    if (!t)
        return NULL;
    memset(t, 0, size);
    t->max = max;
    t->deadline_at = UINT64_MAX;
    memset(t->urgency, PURE_URGENCY_DEFAULT, sizeof t->urgency);
    memset(t->incremental, 1, sizeof t->incremental); /* unconfigured channels share fairly */
    return t;
}

static void chan_free(pure_chan *c, const pure_alloc *a, const pure_alloc *rx_a)
{
    pure_shq_free(&c->shq, a); /* every shared body's reference goes */
    pure_sendbuf_free(&c->sb, a);
    pure_ranges_free(&c->acked, a);
    pure_ranges_free(&c->lost, a);
    pure_rob_free(&c->rob, rx_a, a);
    pure_msgparse_free(&c->parse, rx_a);
    pure_cancels_drop(&c->cx, a);
    pure_mem_free(a, c, sizeof *c);
}

void pure_chans_free(pure_chans *t, const pure_alloc *a, const pure_alloc *rx_a)
{
    if (!t)
        return;
    for (uint32_t i = 1; i <= t->max; i++)
        if (t->c[i])
            chan_free(t->c[i], a, rx_a);
    pure_dgq_clear(&t->dg, a);
    pure_qwatch_free(t->qw, a);
    pure_mem_free(a, t, sizeof(pure_chans) + (size_t)(t->max + 1) * sizeof(pure_chan *));
}

pure_chan *pure_chans_get(pure_chans *t, const pure_alloc *a, uint32_t ch, uint64_t window,
                          uint64_t peer_window, uint32_t max_len)
{
    if (ch == 0 || ch > t->max)
        return NULL;
    if (t->c[ch])
        return t->c[ch];
    pure_chan *c = pure_mem_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    pure_ranges_init(&c->acked, 1u << 16);
    pure_ranges_init(&c->lost, 1u << 16);
    pure_credit_init(&c->credit, window);
    c->credit.peer = peer_window;
    pure_rob_init(&c->rob);
    pure_msgparse_init(&c->parse, max_len);
    if (ch > t->top)
        t->top = ch;
    c->parse.preamble_done = 1; /* a channel's stream has no preamble: the link's had one */
    c->peer_delivered = UINT64_MAX;
    t->c[ch] = c;
    return c;
}

int64_t pure_chan_write(pure_chan *c, const pure_alloc *a, const void *msg, size_t len,
                        uint64_t backlog, uint64_t queue)
{
    if (queue && c->sb.end - c->send_next >= queue) {
        c->want_writable = 1;
        return PURE_EAGAIN;
    }
    uint8_t hdr[4];
    pure_put_u32be(hdr, (uint32_t)len);
    int rc = c->shq ? pure_shq_write(&c->sb, c->shq, a, hdr, 4, msg, len, backlog)
                    : pure_sendbuf_write(&c->sb, a, hdr, 4, msg, len, backlog);
    if (rc) {
        if (rc == PURE_EAGAIN)
            c->want_writable = 1;
        return rc;
    }
    return (int64_t)c->next_msg_id++;
}

static uint64_t new_limit(const pure_chan *c)
{
    uint64_t peer = pure_credit_peer(&c->credit);
    return c->sb.end < peer ? c->sb.end : peer;
}

int pure_chan_has_data(const pure_chan *c)
{
    return !pure_ranges_empty(&c->lost) || c->send_next < new_limit(c);
}

uint64_t pure_chan_next_run(pure_chan *c, const pure_alloc *a, uint64_t *off, int *retx)
{
    /* as link_send.c's next_run for channel 0 */
    while (!pure_ranges_empty(&c->lost)) {
        pure_range r = c->lost.r[0];
        uint64_t start = r.start < c->sb.base ? c->sb.base : r.start;
        if (start >= r.end) {
            pure_ranges_drop_first(&c->lost);
            continue;
        }
        uint64_t acked_to = pure_ranges_contiguous_end(&c->acked, start);
        if (acked_to > start) {
            pure_ranges_remove(&c->lost, a, r.start, acked_to);
            continue;
        }
        uint64_t end = r.end, next_acked = pure_ranges_next_start(&c->acked, start);
        if (next_acked < end)
            end = next_acked;
        *off = start;
        *retx = 1;
        return end - start;
    }
    *retx = 0;
    *off = c->send_next;
    uint64_t lim = new_limit(c);
    if (c->acked.n) { /* stop before bytes acknowledged ahead: a cancelled message (cancel.c),
                         or bytes sent before a resend (pure_sendbuf_resend_from) */
        uint64_t next = pure_ranges_next_start(&c->acked, c->send_next);
        lim = next < lim ? next : lim;
    }
    return lim > c->send_next ? lim - c->send_next : 0;
}

void pure_chan_on_sent(pure_chan *c, const pure_alloc *a, uint64_t off, uint64_t len, int retx)
{
    if (retx)
        pure_ranges_remove(&c->lost, a, off, off + len);
    else if (!c->acked.n)
        c->send_next = off + len;
    else /* over what follows acknowledged: cancelled messages, or bytes sent before a
            resend (never sent twice: a cancelled message's bytes never at all) */
        c->send_next = pure_ranges_contiguous_end(&c->acked, off + len);
    if (c->send_next > c->sent_top)
        c->sent_top = c->send_next;
}

void pure_chan_on_acked(pure_chan *c, const pure_alloc *a, uint64_t off, uint64_t len)
{
    uint64_t from = off < c->sb.base ? c->sb.base : off;
    if (off + len > c->sb.base && pure_ranges_add(&c->acked, a, from, off + len) != 0)
        c->send_next = pure_sendbuf_resend_from(&c->sb, c->send_next, from); /* acked again later */
}

void pure_chan_on_lost(pure_chan *c, const pure_alloc *a, uint64_t off, uint64_t len)
{
    uint64_t from = off < c->sb.base ? c->sb.base : off;
    if (off + len > c->sb.base && pure_ranges_add(&c->lost, a, from, off + len) != 0)
        c->send_next = pure_sendbuf_resend_from(&c->sb, c->send_next, from);
}

/* Counts whole messages below the acknowledged point before the buffer forgets them (as
 * recovery.c's count_acked_messages does for channel 0). */
static void count_acked(pure_chan *c, uint64_t acked_to)
{
    while (c->msg_boundary + 4 <= acked_to) {
        if (!c->msg_len_known) {
            c->msg_len = pure_shq_get_u32(&c->sb, c->shq, c->msg_boundary);
            c->msg_len_known = 1;
        }
        uint64_t end = c->msg_boundary + 4 + c->msg_len;
        if (end > acked_to)
            break;
        c->msgs_acked++;
        c->msg_boundary = end;
        c->msg_len_known = 0;
    }
    if (!c->msg_len_known && c->msg_boundary + 4 <= c->sb.end && c->msg_boundary + 4 > acked_to &&
        c->msg_boundary < acked_to) {
        c->msg_len = pure_shq_get_u32(&c->sb, c->shq, c->msg_boundary);
        c->msg_len_known = 1;
    }
}

int pure_chan_release_acked(pure_chan *c)
{
    uint64_t base = pure_ranges_contiguous_end(&c->acked, c->sb.base);
    uint64_t hold = pure_cancels_hold(c->cx); /* a cancel's answer is awaited there */
    base = hold < base ? hold : base;
    if (base <= c->sb.base)
        return 0;
    uint64_t before = c->msgs_acked;
    count_acked(c, base);
    pure_shq_release(&c->sb, c->shq, base);
    if (c->send_next < base) /* a resend (pure_sendbuf_resend_from) acknowledged meanwhile */
        c->send_next = base;
    pure_ranges_trim_below(&c->acked, base);
    pure_ranges_trim_below(&c->lost, base);
    if (c->msgs_acked != before)
        c->acked_moved = 1;
    if (c->cx && c->cx->nout)
        pure_cancels_out_prune(c->cx, c->msgs_acked); /* counted: their cancels are done */
    return c->msgs_acked != before;
}

void pure_chan_on_delivered(pure_chan *c, const pure_alloc *a, uint64_t offset)
{
    if (offset > c->sent_top) /* never sent (send_next may be below it: a resend) */
        return;
    pure_cancels_out_delivered(c->cx, offset); /* cancels it passed unanswered: delivered */
    pure_ranges_remove(&c->acked, a, offset, PURE_VARINT_MAX);
    if (offset > c->sb.base) {
        pure_ranges_add(&c->acked, a, c->sb.base, offset);
        pure_chan_release_acked(c);
    }
}

void pure_chans_drop_rx(pure_chans *t, const pure_alloc *rx_a, const pure_alloc *a)
{
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i]) {
            pure_msgparse_free(&t->c[i]->parse, rx_a);
            pure_rob_free(&t->c[i]->rob, rx_a, a);
        }
}

int pure_chan_quiet(const pure_chan *c)
{
    return c->sb.base == c->sb.end && pure_ranges_empty(&c->lost) && pure_rob_empty(&c->rob) &&
           pure_msgparse_at_boundary(&c->parse) && pure_cancels_idle(c->cx);
}

void pure_chan_shrink(pure_chan *c, const pure_alloc *a, const pure_alloc *rx_a)
{
    if (!pure_chan_quiet(c))
        return;
    pure_shq_free(&c->shq, a); /* empty: the ring's offsets are stream offsets again */
    pure_sendbuf_shrink(&c->sb, a);
    pure_ranges_free(&c->acked, a);
    pure_ranges_free(&c->lost, a);
    pure_rob_shrink(&c->rob, rx_a);
    pure_msgparse_shrink(&c->parse, rx_a);
    pure_cancels_drop(&c->cx, a);
}

int pure_chans_pick(pure_chans *t, int has0)
{
    int best = has0 ? 0 : -1;
    uint8_t best_u = has0 ? t->urgency[0] : PURE_URGENCY_LEVELS;
    /* the most urgent level with data, and its first non-incremental channel */
    for (uint32_t i = 1; i <= t->top; i++) {
        const pure_chan *c = t->c[i];
        if (!c || !pure_chan_has_data(c))
            continue;
        uint8_t u = t->urgency[i];
        if (u < best_u ||
            (u == best_u && best >= 0 && t->incremental[best] && !t->incremental[i])) {
            best = (int)i;
            best_u = u;
        }
    }
    if (best < 0 || !t->incremental[best])
        return best;
    /* every channel with data at that level is incremental: the next after the last served */
    for (uint32_t k = 1; k <= t->top + 1; k++) {
        uint32_t i = (t->rr + k) % (t->top + 1);
        if (t->urgency[i] != best_u || !t->incremental[i])
            continue;
        if (i == 0 ? has0 : (t->c[i] && pure_chan_has_data(t->c[i]))) {
            t->rr = i;
            return (int)i;
        }
    }
    return best;
}

int pure_chans_has_data(const pure_chans *t)
{
    if (t->dg.count)
        return 1; /* datagrams go as data does: within the window, paced */
    for (uint32_t i = 1; i <= t->top; i++)
        if (t->c[i] && pure_chan_has_data(t->c[i]))
            return 1;
    return 0;
}

int pure_chans_send_empty(const pure_chans *t)
{
    for (uint32_t i = 1; i <= t->top; i++)
        if (t->c[i] && t->c[i]->sb.base != t->c[i]->sb.end)
            return 0;
    return 1;
}
