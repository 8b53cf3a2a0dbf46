/* SPDX-License-Identifier: MIT */
/* rob.h: the reorder buffer, which holds stream bytes that arrived above the receiver's in-order
 * point until the gap below them fills (the receive side's counterpart of sendbuf.h). Stream
 * offset o lives at ring[o & (cap - 1)]. The caller keeps the in-order point (it outlives the
 * buffer, which an idle link gives back) and passes it in. The ring's memory and the range
 * bookkeeping may come from different allocators (a link accounts the ring in its receive-memory
 * budget, rxmem.h, and decides there how large it may grow). */
#ifndef PURE_ROB_H
#define PURE_ROB_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "ranges.h"

#define PURE_ROB_FIRST 65536u          /* the ring's size when it is first needed */
#define PURE_ROB_MAX_RANGES (1u << 14) /* at most this many separate runs held */

typedef struct pure_rob {
    uint8_t *ring; /* power-of-two ring of cap bytes, NULL while cap is 0 */
    uint64_t cap;
    pure_ranges held; /* the stream offsets the ring holds */
} pure_rob;

/* Makes r an empty buffer with no ring. */
void pure_rob_init(pure_rob *r);
/* Gives the ring back (through ring_a) and the range bookkeeping (through a); r is then empty. */
void pure_rob_free(pure_rob *r, const pure_alloc *ring_a, const pure_alloc *a);
/* Frees the ring (through ring_a) if it holds nothing; keeps it otherwise. */
void pure_rob_shrink(pure_rob *r, const pure_alloc *ring_a);

/* The ring size that reserving n bytes would lead to: the current size (PURE_ROB_FIRST for an
 * empty one) doubled until it holds n. */
uint64_t pure_rob_size_for(const pure_rob *r, uint64_t n);
/* Makes the ring hold at least n bytes past the in-order point, growing it by doubling through
 * ring_a and keeping every byte held. Returns 0 (also when it was big enough already), PURE_EAGAIN
 * if the new size would pass `limit` bytes (nothing changed), or PURE_ENOMEM. */
int pure_rob_reserve(pure_rob *r, const pure_alloc *ring_a, uint64_t n, uint64_t limit);
/* Stores len bytes at stream offset off, which lies at or above the in-order point `at` with
 * off + len at most cap bytes past it (pure_rob_reserve). Bytes already held are overwritten (with
 * the same stream's bytes). Returns 0; PURE_EINVAL if the bytes fall outside [at, at + cap)
 * (nothing is stored); or PURE_ENOMEM if the range bookkeeping (allocated through a) is full or out
 * of memory: nothing is stored, drop the bytes. */
int pure_rob_put(pure_rob *r, const pure_alloc *a, uint64_t at, uint64_t off, const uint8_t *src,
                 size_t len);
/* Forgets the bytes held below `at` (the in-order point passed them), then points *p at the held
 * bytes that continue the stream from `at` and returns their count up to the ring's end, or 0 if
 * the byte at `at` is not held (a gap). The caller consumes some of them, moves its point, and
 * asks again (the rest of a run that wraps comes in a second call). */
size_t pure_rob_next(pure_rob *r, uint64_t at, const uint8_t **p);
/* Forgets the bytes held below `at`. */
void pure_rob_trim(pure_rob *r, uint64_t at);
/* 1 if the byte at stream offset `at` is held. */
int pure_rob_holds(const pure_rob *r, uint64_t at);
/* The stream offset just past the highest byte held, or 0 if none. */
uint64_t pure_rob_top(const pure_rob *r);

/* 1 if nothing is held. */
static inline int pure_rob_empty(const pure_rob *r)
{
    return pure_ranges_empty(&r->held);
}
/* The ring's size in bytes (what it costs in memory), 0 if it has none. */
static inline uint64_t pure_rob_cap(const pure_rob *r)
{
    return r->cap;
}

#endif
