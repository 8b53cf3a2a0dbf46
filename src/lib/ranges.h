/* SPDX-License-Identifier: MIT */
/* ranges.h: a set of disjoint half-open u64 intervals [start, end), kept sorted and merged; used
 * for received packet numbers (ACK ranges), acknowledged and lost stream bytes, and out-of-order
 * stream data. Storage grows through the injected allocator up to a fixed cap. */
#ifndef PURE_RANGES_H
#define PURE_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

typedef struct pure_range {
    uint64_t start, end;
} pure_range;

typedef struct pure_ranges {
    pure_range *r;   /* sorted ascending by start; r[i].end < r[i+1].start */
    uint32_t n, cap; /* used and allocated */
    uint32_t max;    /* never grow past this many ranges */
} pure_ranges;

void pure_ranges_init(pure_ranges *s, uint32_t max);
void pure_ranges_free(pure_ranges *s, const pure_alloc *a);
/* Adds [start, end). Returns 0, or -1 when the set would need more than `max` ranges or memory
 * ran out (the set is then unchanged). */
int pure_ranges_add(pure_ranges *s, const pure_alloc *a, uint64_t start, uint64_t end);
/* Removes [start, end) (splitting a range may need one more slot: -1 if that fails). */
int pure_ranges_remove(pure_ranges *s, const pure_alloc *a, uint64_t start, uint64_t end);
/* Removes everything below x. */
void pure_ranges_trim_below(pure_ranges *s, uint64_t x);
/* Drops the lowest range (to bound the set). */
void pure_ranges_drop_first(pure_ranges *s);
/* 1 if x is in the set. */
int pure_ranges_contains(const pure_ranges *s, uint64_t x);
/* 1 if the set is empty. */
static inline int pure_ranges_empty(const pure_ranges *s)
{
    return s->n == 0;
}
/* The end of the range starting at or before x that contains x, or x itself if x is not in the
 * set: "how far is [x, ...) contiguous". */
uint64_t pure_ranges_contiguous_end(const pure_ranges *s, uint64_t x);

/* The start of the first range beginning after x, or UINT64_MAX. */
uint64_t pure_ranges_next_start(const pure_ranges *s, uint64_t x);

#endif
