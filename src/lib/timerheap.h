/* SPDX-License-Identifier: MIT */
/* timerheap.h: a binary min-heap of items by deadline, one entry per item at most. The deadline
 * (uint64_t) and the item's position in the heap (uint32_t) live in the item itself, at offsets
 * given once, so an item costs no more than those two fields and the heap a pointer. The context
 * keeps its links on one, keyed by each link's earliest timer. */
#ifndef PURE_TIMERHEAP_H
#define PURE_TIMERHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* An item's position while it is on no heap; its owner sets it before the first use. */
#define PURE_TIMERHEAP_NONE UINT32_MAX

typedef struct pure_timerheap {
    void **item;         /* len items in heap order: item[0] has the smallest deadline */
    uint32_t len, cap;   /* cap: 0, then 8 and doubling */
    size_t deadline_off; /* offset of the item's uint64_t deadline */
    size_t pos_off;      /* offset of the item's uint32_t position (PURE_TIMERHEAP_NONE: off) */
} pure_timerheap;

/* Makes h an empty heap (no memory) of items with their deadline and position at these offsets. */
void pure_timerheap_init(pure_timerheap *h, size_t deadline_off, size_t pos_off);
/* Frees the array (not the items, whose positions are left as they were). */
void pure_timerheap_free(pure_timerheap *h, const pure_alloc *a);
/* Sets item's deadline and places it: UINT64_MAX takes it off the heap, any other value puts it
 * on or moves it. Returns 0, or PURE_ENOMEM if the array could not grow to take a new item (then
 * the item stays off the heap and its deadline is unchanged). */
int pure_timerheap_set(pure_timerheap *h, const pure_alloc *a, void *item, uint64_t deadline);
/* The smallest deadline held, UINT64_MAX if the heap is empty. */
uint64_t pure_timerheap_min(const pure_timerheap *h);
/* Takes the item with the smallest deadline off the heap if that deadline is <= now, sets its
 * deadline to UINT64_MAX and returns it; NULL if nothing is due. */
void *pure_timerheap_pop_due(pure_timerheap *h, uint64_t now);

#endif
