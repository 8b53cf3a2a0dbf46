/* SPDX-License-Identifier: MIT */
/* cancel.c: a channel's cancelled messages and deadlines (cancel.h). Cancels are rare and few, so
 * the entries sit in small sorted arrays searched and shifted linearly. */
#include "cancel.h"

#include <string.h>

#include "chan.h"
#include "pure.h"

/* Grows an array of `size`-byte entries to hold one more (doubling from 4). */
static int grow(const pure_alloc *a, void **arr, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap)
        return 0;
    uint32_t ncap = *cap ? *cap * 2 : 4;
    void *p = pure_mem_realloc(a, *arr, (size_t)*cap * size, (size_t)ncap * size);
    if (!p)
        return PURE_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

pure_cancels *pure_cancels_get(pure_chan *c, const pure_alloc *a)
{
    if (!c->cx) {
        c->cx = pure_mem_alloc(a, sizeof *c->cx);
        if (c->cx) {
            memset(c->cx, 0, sizeof *c->cx);
            c->cx->walk_id = UINT64_MAX;
        }
    }
    return c->cx;
}

int pure_cancels_idle(const pure_cancels *x)
{
    return !x || (x->nout == 0 && x->nin == 0 && x->ndl == 0);
}

void pure_cancels_drop(pure_chan *c, const pure_alloc *a)
{
    pure_cancels *x = c->cx;
    if (!x)
        return;
    pure_mem_free(a, x->out, (size_t)x->capout * sizeof *x->out);
    pure_mem_free(a, x->in, (size_t)x->capin * sizeof *x->in);
    pure_mem_free(a, x->dl, (size_t)x->capdl * sizeof *x->dl);
    pure_mem_free(a, x, sizeof *x);
    c->cx = NULL;
}

/* ---- sending ---- */

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
                           : pure_sendbuf_get_u32(&c->sb, off);
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

pure_cancel_out *pure_cancels_out_find(pure_cancels *x, uint64_t id)
{
    for (uint32_t i = 0; x && i < x->nout; i++)
        if (x->out[i].id == id)
            return &x->out[i];
    return NULL;
}

void pure_cancels_out_remove(pure_cancels *x, pure_cancel_out *o)
{
    size_t i = (size_t)(o - x->out);
    memmove(o, o + 1, (x->nout - i - 1) * sizeof *o);
    x->nout--;
}

int pure_chan_cancel(pure_chan *c, const pure_alloc *a, uint64_t id, uint8_t flags)
{
    if (id >= c->next_msg_id)
        return PURE_EINVAL;
    if (id < c->msgs_acked || pure_cancels_out_find(c->cx, id))
        return PURE_EALREADY;
    pure_cancels *x = pure_cancels_get(c, a);
    if (!x || grow(a, (void **)&x->out, x->nout, &x->capout, sizeof *x->out))
        return PURE_ENOMEM;
    uint64_t s, e;
    pure_chan_msg_range(c, id, &s, &e);
    uint64_t from = s < c->sb.base ? c->sb.base : s;
    /* its bytes count as acknowledged: a loss never brings them back (next_run skips lost bytes
     * that are acknowledged) and new bytes jump over them; pure_chan_release_acked stops at
     * pure_cancels_hold until the peer answers */
    if (from < e && pure_ranges_add(&c->acked, a, from, e) != 0)
        return PURE_ENOMEM;
    uint32_t i = x->nout;
    while (i > 0 && x->out[i - 1].id > id)
        i--;
    memmove(&x->out[i + 1], &x->out[i], (x->nout - i) * sizeof *x->out);
    x->out[i] = (pure_cancel_out){
        .start = s, .end = e, .id = id, .owed = 1, .flags = flags, .sent = c->send_next >= e};
    x->nout++;
    if (c->send_next >= s && c->send_next < e)
        c->send_next = pure_ranges_contiguous_end(&c->acked, c->send_next);
    return 0;
}

/* ---- receiving ---- */

pure_cancel_in *pure_cancels_in_find(pure_cancels *x, uint64_t id)
{
    for (uint32_t i = 0; x && i < x->nin; i++)
        if (x->in[i].id == id)
            return &x->in[i];
    return NULL;
}

pure_cancel_in *pure_cancels_in_add(pure_cancels *x, const pure_alloc *a, const pure_cancel_in *e,
                                    int *err)
{
    uint32_t i = x->nin;
    while (i > 0 && x->in[i - 1].start > e->start)
        i--;
    /* a range to skip may not overlap another still to be skipped */
    if (e->skip && ((i > 0 && x->in[i - 1].skip && x->in[i - 1].end > e->start) ||
                    (i < x->nin && x->in[i].skip && x->in[i].start < e->end))) {
        *err = PURE_EPROTO;
        return NULL;
    }
    if (x->nin >= PURE_CANCEL_IN_MAX) {
        *err = PURE_EAGAIN;
        return NULL;
    }
    if (grow(a, (void **)&x->in, x->nin, &x->capin, sizeof *x->in)) {
        *err = PURE_ENOMEM;
        return NULL;
    }
    memmove(&x->in[i + 1], &x->in[i], (x->nin - i) * sizeof *x->in);
    x->in[i] = *e;
    x->nin++;
    return &x->in[i];
}

void pure_cancels_in_compact(pure_cancels *x)
{
    uint32_t j = 0;
    for (uint32_t i = 0; x && i < x->nin; i++)
        if (x->in[i].skip || x->in[i].reply != PURE_REPLY_DONE)
            x->in[j++] = x->in[i];
    if (x)
        x->nin = j;
}

uint64_t pure_cancels_next_skip(const pure_cancels *x)
{
    for (uint32_t i = 0; x && i < x->nin; i++)
        if (x->in[i].skip)
            return x->in[i].start;
    return UINT64_MAX;
}

/* ---- deadlines ---- */

int pure_cancels_dl_reserve(pure_cancels *x, const pure_alloc *a)
{
    if (x->head && x->head + x->ndl == x->capdl) { /* slide the live ones to the front */
        memmove(x->dl, x->dl + x->head, x->ndl * sizeof *x->dl);
        x->head = 0;
    }
    return grow(a, (void **)&x->dl, x->head + x->ndl, &x->capdl, sizeof *x->dl);
}

void pure_cancels_dl_push(pure_cancels *x, uint64_t id, uint64_t at)
{
    x->dl[x->head + x->ndl++] = (pure_deadline){id, at};
}

void pure_cancels_dl_prune(pure_cancels *x, uint64_t acked)
{
    while (x->ndl && x->dl[x->head].id < acked) {
        x->head++;
        x->ndl--;
    }
    if (!x->ndl)
        x->head = 0;
}

uint64_t pure_cancels_dl_min(const pure_cancels *x)
{
    uint64_t m = UINT64_MAX;
    for (uint32_t i = 0; x && i < x->ndl; i++)
        if (x->dl[x->head + i].at < m)
            m = x->dl[x->head + i].at;
    return m;
}
