/* SPDX-License-Identifier: MIT */
/* timerheap.c: the binary min-heap of items by deadline (timerheap.h). */
#include <string.h>

#include "pure.h"
#include "timerheap.h"

static uint64_t *deadline_of(const pure_timerheap *h, void *item)
{
    return (uint64_t *)(void *)((char *)item + h->deadline_off);
}

static uint32_t *pos_of(const pure_timerheap *h, void *item)
{
    return (uint32_t *)(void *)((char *)item + h->pos_off);
}

static uint64_t key(const pure_timerheap *h, uint32_t i)
{
    return *deadline_of(h, h->item[i]);
}

void pure_timerheap_init(pure_timerheap *h, size_t deadline_off, size_t pos_off)
{
    memset(h, 0, sizeof *h);
    h->deadline_off = deadline_off;
    h->pos_off = pos_off;
}

void pure_timerheap_free(pure_timerheap *h, const pure_alloc *a)
{
    pure_mem_free(a, h->item, h->cap * sizeof *h->item);
    h->item = NULL;
    h->len = h->cap = 0;
}

static void swap(pure_timerheap *h, uint32_t a, uint32_t b)
{
    void *t = h->item[a];
    h->item[a] = h->item[b];
    h->item[b] = t;
    *pos_of(h, h->item[a]) = a;
    *pos_of(h, h->item[b]) = b;
}

static void up(pure_timerheap *h, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (key(h, p) <= key(h, i))
            break;
        swap(h, i, p);
        i = p;
    }
}

static void down(pure_timerheap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && key(h, l) < key(h, m))
            m = l;
        if (r < h->len && key(h, r) < key(h, m))
            m = r;
        if (m == i)
            return;
        swap(h, i, m);
        i = m;
    }
}

/* Takes item off the heap: the last item fills its place and moves up or down from there. */
static void take(pure_timerheap *h, void *item)
{
    uint32_t i = *pos_of(h, item);
    *pos_of(h, item) = PURE_TIMERHEAP_NONE;
    h->len--;
    if (i == h->len)
        return;
    h->item[i] = h->item[h->len];
    *pos_of(h, h->item[i]) = i;
    up(h, i);
    down(h, *pos_of(h, h->item[i]));
}

static int grow(pure_timerheap *h, const pure_alloc *a)
{
    if (h->cap > UINT32_MAX / 2)
        return PURE_ENOMEM;
    uint32_t nc = h->cap ? h->cap * 2 : 8;
    void **p = pure_mem_alloc(a, (size_t)nc * sizeof *p);
    if (!p)
        return PURE_ENOMEM;
    if (h->item)
        memcpy(p, h->item, h->cap * sizeof *p);
    pure_mem_free(a, h->item, h->cap * sizeof *h->item);
    h->item = p;
    h->cap = nc;
    return 0;
}

int pure_timerheap_set(pure_timerheap *h, const pure_alloc *a, void *item, uint64_t deadline)
{
    uint32_t *pos = pos_of(h, item);
    uint64_t *d = deadline_of(h, item);
    if (*pos != PURE_TIMERHEAP_NONE && *d == deadline)
        return 0;
    if (deadline == UINT64_MAX) {
        if (*pos != PURE_TIMERHEAP_NONE)
            take(h, item);
        *d = deadline;
        return 0;
    }
    if (*pos == PURE_TIMERHEAP_NONE) {
        if (h->len == h->cap && grow(h, a))
            return PURE_ENOMEM;
        *d = deadline;
        *pos = h->len;
        h->item[h->len++] = item;
        up(h, *pos);
        return 0;
    }
    uint64_t old = *d;
    *d = deadline;
    if (deadline < old)
        up(h, *pos);
    else
        down(h, *pos);
    return 0;
}

uint64_t pure_timerheap_min(const pure_timerheap *h)
{
    return h->len ? key(h, 0) : UINT64_MAX;
}

void *pure_timerheap_pop_due(pure_timerheap *h, uint64_t now)
{
    if (!h->len || key(h, 0) > now)
        return NULL;
    void *item = h->item[0];
    take(h, item);
    *deadline_of(h, item) = UINT64_MAX;
    return item;
}
