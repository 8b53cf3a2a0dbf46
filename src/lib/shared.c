/* SPDX-License-Identifier: MIT */
/* shared.c: shared message bodies and the per-stream queue of them (shared.h); pure_shared_unref
 * and pure_shared_data (pure.h) too, which need no context. */
#include "shared.h"

#include <string.h>

#include "varint.h"

/* ---- the handle ---- */

pure_shared *pure_shared_make(const pure_alloc *a, const void *data, size_t len, int copy,
                              void (*release)(void *, const void *, size_t), void *user)
{
    size_t size = sizeof(pure_shared) + (copy ? len : 0);
    pure_shared *sh = pure_mem_alloc(a, size);
    if (!sh)
        return NULL;
    memset(sh, 0, sizeof *sh);
    sh->a = *a;
    sh->len = len;
    sh->refs = 1;
    if (copy) {
        if (len)
            memcpy(sh + 1, data, len);
        sh->data = (const uint8_t *)(sh + 1);
        sh->copied = 1;
    } else {
        sh->data = data;
        sh->release = release;
        sh->user = user;
    }
    return sh;
}

void pure_shared_ref(pure_shared *sh)
{
    __atomic_add_fetch(&sh->refs, 1, __ATOMIC_RELAXED);
}

void pure_shared_drop(pure_shared *sh)
{
    /* acquire-release: whatever a thread did with the bytes happens before the release */
    if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (sh->release)
        sh->release(sh->user, sh->data, sh->len);
    pure_alloc a = sh->a;
    pure_mem_free(&a, sh, sizeof(pure_shared) + (sh->copied ? sh->len : 0));
}

void pure_shared_unref(pure_shared *sh)
{
    if (sh)
        pure_shared_drop(sh);
}

const void *pure_shared_data(const pure_shared *sh, size_t *len)
{
    if (!sh)
        return NULL;
    if (len)
        *len = sh->len;
    return sh->data;
}

/* ---- the queue ---- */

static pure_shq_ent *ent(const pure_shq *q, uint32_t k)
{
    return &q->e[(q->head + k) & (q->cap - 1)];
}

/* The first entry whose body ends above off (q->n if none): entries are sorted by offset. */
static uint32_t first_after(const pure_shq *q, uint64_t off)
{
    uint32_t lo = 0, hi = q->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const pure_shq_ent *e = ent(q, mid);
        if (e->off + e->sh->len > off)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The ring in ring offsets, to hand to sendbuf.c. */
static pure_sendbuf view(const pure_sendbuf *s, const pure_shq *q)
{
    pure_sendbuf v = *s;
    if (q) {
        v.base -= q->skew_base;
        v.end -= q->skew_end;
    }
    return v;
}

int pure_shq_write(pure_sendbuf *s, const pure_shq *q, const pure_alloc *a, const void *x,
                   size_t xlen, const void *y, size_t ylen, uint64_t limit)
{
    /* the limit is on the stream's bytes, shared ones included; the ring grows for its own */
    if (s->end - s->base + xlen + ylen > limit && s->end > s->base)
        return PURE_EAGAIN;
    pure_sendbuf v = view(s, q);
    uint64_t ring_limit = v.end - v.base + xlen + ylen;
    if (ring_limit < limit)
        ring_limit = limit;
    int rc = pure_sendbuf_write(&v, a, x, xlen, y, ylen, ring_limit);
    if (rc)
        return rc;
    s->buf = v.buf;
    s->cap = v.cap;
    s->end += xlen + ylen;
    return 0;
}

static int shq_reserve(pure_shq **qp, const pure_alloc *a)
{
    pure_shq *q = *qp;
    if (!q) {
        q = pure_mem_alloc(a, sizeof *q);
        if (!q)
            return PURE_ENOMEM;
        memset(q, 0, sizeof *q);
        *qp = q;
    }
    if (q->n < q->cap)
        return 0;
    /* grows by doubling: one allocation per doubling, never one per message */
    uint32_t cap = q->cap ? q->cap * 2 : 8;
    pure_shq_ent *e = pure_mem_alloc(a, (size_t)cap * sizeof *e);
    if (!e)
        return PURE_ENOMEM;
    for (uint32_t k = 0; k < q->n; k++)
        e[k] = *ent(q, k);
    pure_mem_free(a, q->e, (size_t)q->cap * sizeof *q->e);
    q->e = e;
    q->cap = cap;
    q->head = 0;
    return 0;
}

int pure_shq_write_shared(pure_sendbuf *s, pure_shq **qp, const pure_alloc *a, pure_shared *sh,
                          uint64_t backlog)
{
    if (s->end - s->base + 4 + sh->len > backlog && s->end > s->base)
        return PURE_EAGAIN;
    int rc = shq_reserve(qp, a);
    if (rc)
        return rc;
    pure_shq *q = *qp;
    uint8_t hdr[4];
    pure_put_u32be(hdr, (uint32_t)sh->len);
    /* the stream fits (checked above): the prefix always goes if memory allows */
    rc = pure_shq_write(s, q, a, hdr, 4, hdr, 0, backlog); /* no second part (not NULL: memcpy) */
    if (rc)
        return rc;
    if (!sh->len)
        return 0; /* an empty body: the prefix is the whole message */
    pure_shq_ent *e = ent(q, q->n++);
    e->off = s->end;
    e->skew = q->skew_end;
    e->sh = sh;
    pure_shared_ref(sh);
    s->end += sh->len;
    q->skew_end += sh->len;
    return 0;
}

void pure_shq_copy(const pure_sendbuf *s, const pure_shq *q, uint64_t off, uint8_t *dst, size_t len)
{
    if (!q) {
        pure_sendbuf_copy(s, off, dst, len);
        return;
    }
    pure_sendbuf v = view(s, q);
    uint32_t k = first_after(q, off);
    while (len) {
        const pure_shq_ent *e = k < q->n ? ent(q, k) : NULL;
        size_t n;
        if (e && e->off <= off) { /* inside a shared body */
            uint64_t in = off - e->off;
            n = (size_t)(e->sh->len - in) < len ? (size_t)(e->sh->len - in) : len;
            memcpy(dst, e->sh->data + in, n);
            k++;
        } else { /* ring bytes, up to the next shared body */
            n = e && e->off - off < len ? (size_t)(e->off - off) : len;
            pure_sendbuf_copy(&v, off - (e ? e->skew : q->skew_end), dst, n);
        }
        off += n;
        dst += n;
        len -= n;
    }
}

uint32_t pure_shq_get_u32(const pure_sendbuf *s, const pure_shq *q, uint64_t off)
{
    if (!q)
        return pure_sendbuf_get_u32(s, off);
    pure_sendbuf v = view(s, q);
    uint32_t k = first_after(q, off);
    return pure_sendbuf_get_u32(&v, off - (k < q->n ? ent(q, k)->skew : q->skew_end));
}

void pure_shq_release(pure_sendbuf *s, pure_shq *q, uint64_t new_base)
{
    pure_sendbuf_release(s, new_base);
    if (!q)
        return;
    new_base = s->base;
    while (q->n) {
        pure_shq_ent *e = ent(q, 0);
        if (e->off + e->sh->len > new_base)
            break;
        pure_shared *sh = e->sh;
        q->head = (q->head + 1) & (q->cap - 1);
        q->n--;
        pure_shared_drop(sh);
    }
    /* the base may fall inside a body: the ring's base is then where that body's gap is */
    if (q->n && ent(q, 0)->off <= new_base)
        q->skew_base = ent(q, 0)->skew + (new_base - ent(q, 0)->off);
    else
        q->skew_base = q->n ? ent(q, 0)->skew : q->skew_end;
}

void pure_shq_free(pure_shq **qp, const pure_alloc *a)
{
    pure_shq *q = *qp;
    if (!q)
        return;
    *qp = NULL;
    while (q->n) {
        pure_shared *sh = ent(q, 0)->sh;
        q->head = (q->head + 1) & (q->cap - 1);
        q->n--;
        pure_shared_drop(sh);
    }
    pure_mem_free(a, q->e, (size_t)q->cap * sizeof *q->e);
    pure_mem_free(a, q, sizeof *q);
}
