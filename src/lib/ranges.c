/* SPDX-License-Identifier: MIT */
#include "ranges.h"

#include <string.h>

void pure_ranges_init(pure_ranges *s, uint32_t max)
{
    s->r = NULL;
    s->n = s->cap = 0;
    s->max = max;
}

void pure_ranges_free(pure_ranges *s, const pure_alloc *a)
{
    pure_mem_free(a, s->r, s->cap * sizeof *s->r);
    s->r = NULL;
    s->n = s->cap = 0;
}

static int reserve(pure_ranges *s, const pure_alloc *a, uint32_t need)
{
    if (need <= s->cap)
        return 0;
    if (need > s->max)
        return -1;
    uint32_t cap = s->cap ? s->cap * 2 : 4;
    if (cap > s->max)
        cap = s->max;
    pure_range *r = pure_mem_alloc(a, cap * sizeof *r);
    if (!r)
        return -1;
    if (s->n)
        memcpy(r, s->r, s->n * sizeof *r);
    pure_mem_free(a, s->r, s->cap * sizeof *s->r);
    s->r = r;
    s->cap = cap;
    return 0;
}

/* Index of the first range whose end >= x (ranges touching x count, so adds merge them). */
static uint32_t lower(const pure_ranges *s, uint64_t x)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (s->r[mid].end < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int pure_ranges_add(pure_ranges *s, const pure_alloc *a, uint64_t start, uint64_t end)
{
    if (start >= end)
        return 0;
    /* Fast path: appending at or after the last range (in-order packet numbers). */
    if (s->n && s->r[s->n - 1].end == start) {
        s->r[s->n - 1].end = end;
        return 0;
    }
    uint32_t i = lower(s, start);
    uint32_t j = i; /* ranges i..j-1 overlap or touch [start, end) */
    while (j < s->n && s->r[j].start <= end)
        j++;
    if (i == j) { /* no overlap: insert */
        if (reserve(s, a, s->n + 1))
            return -1;
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->r[i].start = start;
        s->r[i].end = end;
        s->n++;
        return 0;
    }
    if (s->r[i].start < start)
        start = s->r[i].start;
    if (s->r[j - 1].end > end)
        end = s->r[j - 1].end;
    s->r[i].start = start;
    s->r[i].end = end;
    memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof *s->r);
    s->n -= j - i - 1;
    return 0;
}

int pure_ranges_remove(pure_ranges *s, const pure_alloc *a, uint64_t start, uint64_t end)
{
    if (start >= end)
        return 0;
    uint32_t i = lower(s, start + 1); /* first range with end > start */
    while (i < s->n && s->r[i].start < end) {
        pure_range *r = &s->r[i];
        if (r->start < start && r->end > end) { /* split in two */
            if (reserve(s, a, s->n + 1))
                return -1;
            r = &s->r[i];
            memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
            s->n++;
            s->r[i].end = start;
            s->r[i + 1].start = end;
            return 0;
        }
        if (r->start < start) {
            r->end = start;
            i++;
        } else if (r->end > end) {
            r->start = end;
            return 0;
        } else {
            memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof *s->r);
            s->n--;
        }
    }
    return 0;
}

void pure_ranges_trim_below(pure_ranges *s, uint64_t x)
{
    uint32_t i = 0;
    while (i < s->n && s->r[i].end <= x)
        i++;
    if (i) {
        memmove(&s->r[0], &s->r[i], (s->n - i) * sizeof *s->r);
        s->n -= i;
    }
    if (s->n && s->r[0].start < x)
        s->r[0].start = x;
}

void pure_ranges_drop_first(pure_ranges *s)
{
    if (!s->n)
        return;
    memmove(&s->r[0], &s->r[1], (s->n - 1) * sizeof *s->r);
    s->n--;
}

int pure_ranges_contains(const pure_ranges *s, uint64_t x)
{
    if (x == UINT64_MAX) /* never inside a half-open range, and x + 1 would wrap to 0 */
        return 0;
    uint32_t i = lower(s, x + 1);
    return i < s->n && s->r[i].start <= x;
}

uint64_t pure_ranges_contiguous_end(const pure_ranges *s, uint64_t x)
{
    uint32_t i = lower(s, x);
    if (i < s->n && s->r[i].start <= x && s->r[i].end >= x)
        return s->r[i].end;
    return x;
}

uint64_t pure_ranges_next_start(const pure_ranges *s, uint64_t x)
{
    if (x == UINT64_MAX) /* nothing starts after it (and x + 1 would wrap to 0) */
        return UINT64_MAX;
    uint32_t i = lower(s, x + 1);
    if (i < s->n && s->r[i].start <= x)
        i++;
    return i < s->n ? s->r[i].start : UINT64_MAX;
}
