/* SPDX-License-Identifier: MIT */
#include "sendbuf.h"

#include <string.h>

#include "pure.h"

static void put(uint8_t *buf, uint64_t cap, uint64_t off, const uint8_t *src, size_t len)
{
    uint64_t i = off & (cap - 1);
    size_t first = (size_t)(cap - i) < len ? (size_t)(cap - i) : len;
    memcpy(buf + i, src, first);
    if (first < len)
        memcpy(buf, src + first, len - first);
}

static int grow(pure_sendbuf *s, const pure_alloc *a, uint64_t need, uint64_t limit)
{
    uint64_t cap = s->cap ? s->cap : 256; /* small first: many links send only a little */
    while (cap < need)
        cap *= 2;
    uint64_t max = 1;
    while (max < limit && max < (1ull << 62)) /* send_backlog may be UINT64_MAX: no overflow */
        max *= 2;
    if (cap > max)
        cap = max;
    if (cap < need)
        return PURE_EAGAIN;
    /* Grow in place: the live bytes stay where they are, and those whose index modulo the new
     * capacity differs (at most two runs, both landing in [old cap, new cap), which no live byte
     * occupies) are copied there. */
    uint8_t *nb = pure_mem_realloc(a, s->buf, (size_t)s->cap, (size_t)cap);
    if (!nb)
        return PURE_ENOMEM;
    for (uint64_t off = s->base; off < s->end;) {
        uint64_t i = off & (s->cap - 1), j = off & (cap - 1);
        size_t chunk = (size_t)(s->cap - i);
        if (chunk > s->end - off)
            chunk = (size_t)(s->end - off);
        if (i != j)
            memcpy(nb + j, nb + i, chunk);
        off += chunk;
    }
    s->buf = nb;
    s->cap = cap;
    return 0;
}

int pure_sendbuf_write(pure_sendbuf *s, const pure_alloc *a, const void *x, size_t xlen,
                       const void *y, size_t ylen, uint64_t limit)
{
    uint64_t need = s->end - s->base + xlen + ylen;
    /* Fast path: room, no wrap (nearly every small message). */
    if (need <= s->cap && need <= limit) {
        uint64_t i = s->end & (s->cap - 1);
        if (i + xlen + ylen <= s->cap) {
            memcpy(s->buf + i, x, xlen);
            memcpy(s->buf + i + xlen, y, ylen);
            s->end += xlen + ylen;
            return 0;
        }
    }
    if (need > limit && s->end > s->base)
        return PURE_EAGAIN;
    if (need > s->cap) {
        int rc = grow(s, a, need, need > limit ? need : limit);
        if (rc)
            return rc;
    }
    put(s->buf, s->cap, s->end, x, xlen);
    s->end += xlen;
    if (ylen) {
        put(s->buf, s->cap, s->end, y, ylen);
        s->end += ylen;
    }
    return 0;
}

int pure_sendbuf_pieces(const pure_sendbuf *s, uint64_t off, size_t len, const uint8_t *p[2],
                        size_t n[2])
{
    if (!len)
        return 0;
    uint64_t i = off & (s->cap - 1);
    size_t first = (size_t)(s->cap - i) < len ? (size_t)(s->cap - i) : len;
    p[0] = s->buf + i, n[0] = first;
    if (first == len)
        return 1;
    p[1] = s->buf, n[1] = len - first;
    return 2;
}

void pure_sendbuf_copy(const pure_sendbuf *s, uint64_t off, uint8_t *dst, size_t len)
{
    const uint8_t *p[2];
    size_t n[2];
    int k = pure_sendbuf_pieces(s, off, len, p, n);
    for (int j = 0; j < k; j++) {
        memcpy(dst, p[j], n[j]);
        dst += n[j];
    }
}

uint32_t pure_sendbuf_get_u32_wrapped(const pure_sendbuf *s, uint64_t off)
{
    uint8_t b[4];
    pure_sendbuf_copy(s, off, b, 4);
    return pure_get_u32be(b);
}

void pure_sendbuf_release(pure_sendbuf *s, uint64_t new_base)
{
    if (new_base > s->base)
        s->base = new_base > s->end ? s->end : new_base;
}

void pure_sendbuf_shrink(pure_sendbuf *s, const pure_alloc *a)
{
    if (s->base == s->end && s->buf) {
        pure_mem_free(a, s->buf, (size_t)s->cap);
        s->buf = NULL;
        s->cap = 0;
    }
}

void pure_sendbuf_free(pure_sendbuf *s, const pure_alloc *a)
{
    pure_mem_free(a, s->buf, (size_t)s->cap);
    s->buf = NULL;
    s->cap = 0;
}
