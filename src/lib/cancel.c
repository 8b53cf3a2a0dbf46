/* SPDX-License-Identifier: MIT */
/* cancel.c: a channel's cancelled messages and deadlines (cancel.h). Cancels are rare and few, so
 * the entries sit in small sorted arrays searched and shifted linearly. */
#include "cancel.h"

#include <string.h>

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

pure_cancels *pure_cancels_get(pure_cancels **px, const pure_alloc *a)
{
    if (!*px) {
        *px = pure_mem_alloc(a, sizeof **px);
        if (*px) {
            memset(*px, 0, sizeof **px);
            (*px)->walk_id = UINT64_MAX;
        }
    }
    return *px;
}

int pure_cancels_idle(const pure_cancels *x)
{
    return !x || (x->nout == 0 && x->nin == 0 && x->ndl == 0);
}

void pure_cancels_drop(pure_cancels **px, const pure_alloc *a)
{
    pure_cancels *x = *px;
    if (!x)
        return;
    pure_mem_free(a, x->out, (size_t)x->capout * sizeof *x->out);
    pure_mem_free(a, x->in, (size_t)x->capin * sizeof *x->in);
    pure_mem_free(a, x->dl, (size_t)x->capdl * sizeof *x->dl);
    pure_mem_free(a, x, sizeof *x);
    *px = NULL;
}

/* ---- sending ---- */

pure_cancel_out *pure_cancels_out_add(pure_cancels *x, const pure_alloc *a,
                                      const pure_cancel_out *o)
{
    if (grow(a, (void **)&x->out, x->nout, &x->capout, sizeof *x->out))
        return NULL;
    uint32_t i = x->nout;
    while (i > 0 && x->out[i - 1].id > o->id)
        i--;
    memmove(&x->out[i + 1], &x->out[i], (x->nout - i) * sizeof *x->out);
    x->out[i] = *o;
    x->nout++;
    return &x->out[i];
}

pure_cancel_out *pure_cancels_out_find(pure_cancels *x, uint64_t id)
{
    for (uint32_t i = 0; x && i < x->nout; i++)
        if (x->out[i].id == id)
            return &x->out[i];
    return NULL;
}

void pure_cancels_out_remove(pure_cancels *x, uint64_t id)
{
    pure_cancel_out *o = pure_cancels_out_find(x, id);
    if (o) {
        memmove(o, o + 1, (x->nout - (uint32_t)(o - x->out) - 1) * sizeof *o);
        x->nout--;
    }
}

void pure_cancels_out_prune(pure_cancels *x, uint64_t acked)
{
    uint32_t k = 0;
    while (k < x->nout && x->out[k].id < acked)
        k++;
    if (k) {
        memmove(x->out, x->out + k, (x->nout - k) * sizeof *x->out);
        x->nout -= k;
    }
}

void pure_cancels_out_delivered(pure_cancels *x, uint64_t offset)
{
    for (uint32_t i = 0; x && i < x->nout; i++)
        if (x->out[i].end <= offset)
            x->out[i].answered = 1;
}

uint64_t pure_cancels_hold(const pure_cancels *x)
{
    for (uint32_t i = 0; x && i < x->nout; i++)
        if (!x->out[i].answered)
            return x->out[i].start;
    return UINT64_MAX;
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
                                    uint32_t limit, int *err)
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
    if (x->nin >= limit) {
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
