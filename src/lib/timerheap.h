/* SPDX-License-Identifier: MIT */
/* timerheap.h: a binary min-heap of items by deadline, one entry per item at most. The deadline
 * (uint64_t) and the item's position in the heap (uint32_t) live in the item itself, at offsets
 * given once; the heap's array holds each entry's key beside its item pointer, so that sifting
 * compares keys in the array and never reads an item (with 10,000 links on the heap, reading each
 * compared link was a cache miss per level: the sift was 13% of a busy server's CPU).
 *
 * A deadline moved later is not sifted at once: the entry keeps its earlier key (a lower bound of
 * the item's deadline) and is put right when it reaches the top, in pure_timerheap_min or
 * pure_timerheap_pop_due. A link's timer that is armed and then cleared by the ACK it waited for
 * so costs no sift at all until the entry surfaces, and a link whose deadline moves on many times
 * in between is sifted once. The context keeps its links on one, keyed by each link's earliest
 * timer. */
#ifndef PURE_TIMERHEAP_H
#define PURE_TIMERHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* An item's position while it is on no heap; its owner sets it before the first use. */
#define PURE_TIMERHEAP_NONE UINT32_MAX

/* One entry: key <= the item's deadline (equal unless the deadline moved later since). */
typedef struct pure_timerheap_slot {
    uint64_t key;
    void *item;
} pure_timerheap_slot;

typedef struct pure_timerheap {
    pure_timerheap_slot *slot; /* len entries in heap order by key: slot[0] has the smallest */
    uint32_t len, cap;         /* cap: 0, then 8 and doubling */
    size_t deadline_off;       /* offset of the item's uint64_t deadline */
    size_t pos_off; /* offset of the item's uint32_t position (PURE_TIMERHEAP_NONE: off) */
} pure_timerheap;

/* Makes h an empty heap (no memory) of items with their deadline and position at these offsets. */
void pure_timerheap_init(pure_timerheap *h, size_t deadline_off, size_t pos_off);
/* Frees the array (not the items, whose positions are left as they were). */
void pure_timerheap_free(pure_timerheap *h, const pure_alloc *a);
/* Sets item's deadline and places it: UINT64_MAX takes it off the heap, any other value puts it
 * on or moves it (a later deadline lazily: see above). Returns 0, or PURE_ENOMEM if the array
 * could not grow to take a new item (then the item stays off the heap and its deadline is
 * unchanged). */
int pure_timerheap_set(pure_timerheap *h, const pure_alloc *a, void *item, uint64_t deadline);
/* The smallest deadline held, UINT64_MAX if the heap is empty. Puts right the top entries whose
 * deadline moved later first, so the answer is exact (a caller sleeping until it is not woken
 * for a timer that was put off). */
uint64_t pure_timerheap_min(pure_timerheap *h);
/* Takes the item with the smallest deadline off the heap if that deadline is <= now, sets its
 * deadline to UINT64_MAX and returns it; NULL if nothing is due. */
void *pure_timerheap_pop_due(pure_timerheap *h, uint64_t now);

#endif
