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

void pure_timerheap_init(pure_timerheap *h, size_t deadline_off, size_t pos_off)
{
    memset(h, 0, sizeof *h);
    h->deadline_off = deadline_off;
    h->pos_off = pos_off;
}

void pure_timerheap_free(pure_timerheap *h, const pure_alloc *a)
{
    pure_mem_free(a, h->slot, h->cap * sizeof *h->slot);
    h->slot = NULL;
    h->len = h->cap = 0;
}

/* Puts entry e at i (the hole) and tells its item. */
static void place(pure_timerheap *h, uint32_t i, pure_timerheap_slot e)
{
    h->slot[i] = e;
    *pos_of(h, e.item) = i;
}

/* Moves the entry at i up to its place: parents with a larger key move down into the hole. */
static void up(pure_timerheap *h, uint32_t i)
{
    pure_timerheap_slot e = h->slot[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->slot[p].key <= e.key)
            break;
        place(h, i, h->slot[p]);
        i = p;
    }
    place(h, i, e);
}

/* Moves the entry at i down to its place: the smaller child moves up into the hole. */
static void down(pure_timerheap *h, uint32_t i)
{
    pure_timerheap_slot e = h->slot[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->len)
            break;
        if (c + 1 < h->len && h->slot[c + 1].key < h->slot[c].key)
            c++;
        if (e.key <= h->slot[c].key)
            break;
        place(h, i, h->slot[c]);
        i = c;
    }
    place(h, i, e);
}

/* Takes item off the heap: the last entry fills its place and moves up or down from there. */
static void take(pure_timerheap *h, void *item)
{
    uint32_t i = *pos_of(h, item);
    *pos_of(h, item) = PURE_TIMERHEAP_NONE;
    h->len--;
    if (i == h->len)
        return;
    h->slot[i] = h->slot[h->len];
    if (i > 0 && h->slot[(i - 1) / 2].key > h->slot[i].key)
        up(h, i);
    else
        down(h, i);
}

static int grow(pure_timerheap *h, const pure_alloc *a)
{
    if (h->cap > UINT32_MAX / 2)
        return PURE_ENOMEM;
    uint32_t nc = h->cap ? h->cap * 2 : 8;
    pure_timerheap_slot *p = pure_mem_alloc(a, (size_t)nc * sizeof *p);
    if (!p)
        return PURE_ENOMEM;
    if (h->slot)
        memcpy(p, h->slot, h->cap * sizeof *p);
    pure_mem_free(a, h->slot, h->cap * sizeof *h->slot);
    h->slot = p;
    h->cap = nc;
    return 0;
}

int pure_timerheap_set(pure_timerheap *h, const pure_alloc *a, void *item, uint64_t deadline)
{
    uint32_t *pos = pos_of(h, item);
    uint64_t *d = deadline_of(h, item);
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
        h->slot[h->len].key = deadline;
        h->slot[h->len].item = item;
        up(h, h->len++);
        return 0;
    }
    *d = deadline;
    if (deadline < h->slot[*pos].key) { /* earlier: sift now */
        h->slot[*pos].key = deadline;
        up(h, *pos);
    } /* later: the entry keeps its key, a lower bound, until it surfaces */
    return 0;
}

/* Puts right the top entries whose item's deadline moved past their key. */
static void settle_top(pure_timerheap *h)
{
    while (h->len) {
        uint64_t d = *deadline_of(h, h->slot[0].item);
        if (h->slot[0].key == d)
            return;
        h->slot[0].key = d;
        down(h, 0);
    }
}

uint64_t pure_timerheap_min(pure_timerheap *h)
{
    settle_top(h);
    return h->len ? h->slot[0].key : UINT64_MAX;
}

void *pure_timerheap_pop_due(pure_timerheap *h, uint64_t now)
{
    settle_top(h);
    if (!h->len || h->slot[0].key > now)
        return NULL;
    void *item = h->slot[0].item;
    take(h, item);
    *deadline_of(h, item) = UINT64_MAX;
    return item;
}
