/* SPDX-License-Identifier: MIT */
/* rob.c: the reorder buffer (rob.h): a power-of-two ring of out-of-order stream bytes and the set
 * of offsets it holds. */
#include "rob.h"

#include <string.h>

#include "pure.h"

void pure_rob_init(pure_rob *r)
{
    r->ring = NULL;
    r->cap = 0;
    pure_ranges_init(&r->held, PURE_ROB_MAX_RANGES);
}

void pure_rob_free(pure_rob *r, const pure_alloc *ring_a, const pure_alloc *a)
{
    pure_ranges_free(&r->held, a);
    pure_mem_free(ring_a, r->ring, (size_t)r->cap);
    r->ring = NULL;
    r->cap = 0;
}

void pure_rob_shrink(pure_rob *r, const pure_alloc *ring_a)
{
    if (!pure_rob_empty(r))
        return;
    pure_mem_free(ring_a, r->ring, (size_t)r->cap);
    r->ring = NULL;
    r->cap = 0;
}

uint64_t pure_rob_size_for(const pure_rob *r, uint64_t n)
{
    uint64_t cap = r->cap ? r->cap : PURE_ROB_FIRST;
    while (cap < n)
        cap *= 2;
    return cap;
}

int pure_rob_reserve(pure_rob *r, const pure_alloc *ring_a, uint64_t n, uint64_t limit)
{
    if (n <= r->cap)
        return 0;
    uint64_t cap = pure_rob_size_for(r, n);
    if (cap > limit)
        return PURE_EAGAIN;
    /* A new ring, not a realloc: every held byte moves to its index under the new size. */
    uint8_t *ring = pure_mem_alloc(ring_a, (size_t)cap);
    if (!ring)
        return PURE_ENOMEM;
    for (uint32_t k = 0; k < r->held.n; k++) {
        for (uint64_t o = r->held.r[k].start, end = r->held.r[k].end; o < end;) {
            uint64_t i = o & (r->cap - 1), j = o & (cap - 1);
            uint64_t chunk = r->cap - i; /* to the old ring's end; the new one is larger */
            if (chunk > cap - j)
                chunk = cap - j;
            if (chunk > end - o)
                chunk = end - o;
            memcpy(ring + j, r->ring + i, (size_t)chunk);
            o += chunk;
        }
    }
    pure_mem_free(ring_a, r->ring, (size_t)r->cap);
    r->ring = ring;
    r->cap = cap;
    return 0;
}

int pure_rob_put(pure_rob *r, const pure_alloc *a, uint64_t at, uint64_t off, const uint8_t *src,
                 size_t len)
{
    if (!len)
        return 0;
    if (off < at || off + len - at > r->cap)
        return PURE_EINVAL; /* it would land on bytes held for other offsets */
    if (pure_ranges_add(&r->held, a, off, off + len) != 0)
        return PURE_ENOMEM;
    uint64_t i = off & (r->cap - 1);
    size_t first = (size_t)(r->cap - i) < len ? (size_t)(r->cap - i) : len;
    memcpy(r->ring + i, src, first);
    if (first < len)
        memcpy(r->ring, src + first, len - first);
    return 0;
}

size_t pure_rob_next(pure_rob *r, uint64_t at, const uint8_t **p)
{
    pure_ranges_trim_below(&r->held, at);
    if (pure_rob_empty(r) || r->held.r[0].start > at)
        return 0;
    uint64_t i = at & (r->cap - 1);
    uint64_t chunk = r->cap - i;
    if (chunk > r->held.r[0].end - at)
        chunk = r->held.r[0].end - at;
    *p = r->ring + i;
    return (size_t)chunk;
}

void pure_rob_trim(pure_rob *r, uint64_t at)
{
    pure_ranges_trim_below(&r->held, at);
}

int pure_rob_holds(const pure_rob *r, uint64_t at)
{
    for (uint32_t i = 0; i < r->held.n && r->held.r[i].start <= at; i++)
        if (r->held.r[i].end > at)
            return 1;
    return 0;
}

uint64_t pure_rob_top(const pure_rob *r)
{
    return pure_rob_empty(r) ? 0 : r->held.r[r->held.n - 1].end;
}
