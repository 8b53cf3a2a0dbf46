/* SPDX-License-Identifier: MIT */
/* shared.h: shared message bodies. A pure_shared (pure.h) is one immutable buffer with a
 * reference count; a pure_shq is one stream's queue of the ranges of stream offsets whose bytes
 * live in such a buffer rather than in the stream's send ring. The ring then holds only the
 * other bytes (every message's 4-byte length prefix, and the bodies of ordinary messages), at
 * ring offsets that skip the shared bodies: ring offset = stream offset - the shared bytes below
 * it ("skew"). A stream without a queue has no skew, and its ring is addressed by stream offset
 * as sendbuf.h describes: the functions here take the ring and the queue (NULL: none) and
 * address the ring through a view in ring offsets, so sendbuf.c itself knows nothing of this.
 * Each entry holds one reference, dropped when the acknowledged prefix passes its range or the
 * queue is freed. */
#ifndef PURE_SHARED_H
#define PURE_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "pure.h"
#include "sendbuf.h"

struct pure_shared {
    const uint8_t *data;
    size_t len;
    void (*release)(void *user, const void *data, size_t len);
    void *user;
    pure_alloc a;    /* the creating context's allocator, copied: the handle outlives no context
                        it needs */
    uint32_t refs;   /* atomic: the caller's reference and one per queued message */
    uint32_t copied; /* pure_shared_copy: the bytes follow the struct */
};

/* A new buffer holding one reference (the caller's): len bytes at data, wrapped (released by
 * release(user, ...) with the last reference) or, with copy, copied after the struct. The
 * allocator is copied into it. NULL without memory. */
pure_shared *pure_shared_make(const pure_alloc *a, const void *data, size_t len, int copy,
                              void (*release)(void *, const void *, size_t), void *user);
/* Takes one more reference. */
void pure_shared_ref(pure_shared *sh);
/* Drops one reference; the last runs the release callback and frees the handle. */
void pure_shared_drop(pure_shared *sh);

typedef struct pure_shq_ent {
    uint64_t off;    /* stream offset of the shared body (just after its length prefix) */
    uint64_t skew;   /* shared bytes below off (of every entry before, released or not) */
    pure_shared *sh; /* the body: sh->len bytes */
} pure_shq_ent;

typedef struct pure_shq {
    pure_shq_ent *e;       /* a ring of entries, oldest first */
    uint32_t head, n, cap; /* cap: a power of two */
    uint64_t skew_end;     /* shared bytes below the stream's end (every one ever queued) */
    uint64_t skew_base;    /* shared bytes below the ring's base (sb.base) */
} pure_shq;

/* Appends one message whose body is sh (its length prefix goes into the ring), taking a
 * reference; makes the queue on first use. backlog limits the stream's bytes not acknowledged
 * (shared bytes included): past it PURE_EAGAIN, unless nothing is queued. Returns 0,
 * PURE_EAGAIN or PURE_ENOMEM (nothing queued then). */
int pure_shq_write_shared(pure_sendbuf *s, pure_shq **q, const pure_alloc *a, pure_shared *sh,
                          uint64_t backlog);
/* pure_sendbuf_write for a stream with a queue (q not NULL): appends x||y to the ring. Returns
 * what pure_sendbuf_write returns; `limit` bounds the stream's bytes not acknowledged. */
int pure_shq_write(pure_sendbuf *s, const pure_shq *q, const pure_alloc *a, const void *x,
                   size_t xlen, const void *y, size_t ylen, uint64_t limit);
/* pure_sendbuf_copy by stream offset, from the ring or the shared buffers (q may be NULL). */
void pure_shq_copy(const pure_sendbuf *s, const pure_shq *q, uint64_t off, uint8_t *dst,
                   size_t len);
/* pure_sendbuf_get_u32 at a message boundary (a length prefix, always in the ring). */
uint32_t pure_shq_get_u32(const pure_sendbuf *s, const pure_shq *q, uint64_t off);
/* pure_sendbuf_release, then drops the entries wholly below new_base. */
void pure_shq_release(pure_sendbuf *s, pure_shq *q, uint64_t new_base);
/* Frees the queue (dropping every reference it holds) and sets *q to NULL. The ring must be
 * empty (base == end) or about to be freed: its offsets go back to stream offsets. */
void pure_shq_free(pure_shq **q, const pure_alloc *a);
/* Shared bytes between the stream's base and end (0 for NULL). */
static inline uint64_t pure_shq_held(const pure_shq *q)
{
    return q ? q->skew_end - q->skew_base : 0;
}

#endif
