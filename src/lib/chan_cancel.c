/* SPDX-License-Identifier: MIT */
/* chan_cancel.c: cancelling a message of a channel's send stream (chan_cancel.h). */
#include "chan_cancel.h"

#include "pure.h"

void pure_chan_msg_range(pure_chan *c, uint64_t id, uint64_t *start, uint64_t *end)
{
    /* walk the length prefixes from the first message not acknowledged (or from the last one
     * located, if it is still ahead of it): cancels of several messages go forward once */
    uint64_t k = c->msgs_acked, off = c->msg_boundary;
    pure_cancels *x = c->cx;
    if (x && x->walk_id != UINT64_MAX && x->walk_id > k && x->walk_id <= id) {
        k = x->walk_id;
        off = x->walk_off;
    }
    for (;;) {
        /* the first message's prefix may lie below the buffer's base: count_acked kept it */
        uint32_t len = off == c->msg_boundary && c->msg_len_known
                           ? c->msg_len
                           : pure_shq_get_u32(&c->sb, c->shq, off); /* shared bodies skew it */
        if (k == id) {
            *start = off;
            *end = off + 4 + len;
            break;
        }
        off += 4 + (uint64_t)len;
        k++;
    }
    if (x) {
        x->walk_id = id;
        x->walk_off = *start;
    }
}

int pure_chan_cancel(pure_chan *c, const pure_alloc *a, uint64_t id, uint8_t flags)
{
    if (id >= c->next_msg_id)
        return PURE_EINVAL;
    if (id < c->msgs_acked || pure_cancels_out_find(c->cx, id))
        return PURE_EALREADY;
    pure_cancels *x = pure_cancels_get(&c->cx, a);
    if (!x)
        return PURE_ENOMEM;
    uint64_t s, e;
    pure_chan_msg_range(c, id, &s, &e);
    uint64_t from = s < c->sb.base ? c->sb.base : s;
    pure_cancel_out o = {
        .start = s, .end = e, .id = id, .owed = 1, .flags = flags, .sent = c->sent_top >= e};
    /* its bytes count as acknowledged: a loss never brings them back (next_run skips lost bytes
     * that are acknowledged) and new bytes jump over them; pure_chan_release_acked stops at
     * pure_cancels_hold until the peer answers */
    if (!pure_cancels_out_add(x, a, &o))
        return PURE_ENOMEM;
    if (from < e && pure_ranges_add(&c->acked, a, from, e) != 0) {
        pure_cancels_out_remove(x, id);
        return PURE_ENOMEM;
    }
    if (c->send_next >= s && c->send_next < e)
        c->send_next = pure_ranges_contiguous_end(&c->acked, c->send_next);
    return 0;
}
