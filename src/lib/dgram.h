/* SPDX-License-Identifier: MIT */
/* dgram.h: a link's queue of unreliable datagrams waiting to be sent (pure_link_send_datagram),
 * oldest first, each whole (u16 length, then its bytes, in one buffer that grows to a limit and
 * is given back when empty), and the link's datagram counters. Sent datagrams are never kept:
 * nothing is retransmitted. */
#ifndef PURE_DGRAM_H
#define PURE_DGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* Bytes of datagrams a link queues before pure_link_send_datagram says PURE_EAGAIN. */
#define PURE_DGQ_LIMIT 65536u

typedef struct pure_dgq {
    uint8_t *buf;
    uint32_t cap;        /* bytes of buf */
    uint32_t head, tail; /* queued entries lie in buf[head, tail) */
    uint32_t count;      /* entries queued */
    uint64_t sent, received, lost, dropped;
} pure_dgq;

/* Queues a copy of len bytes (len <= 65535). Returns 0, PURE_EAGAIN (the queue would pass
 * PURE_DGQ_LIMIT bytes: nothing queued) or PURE_ENOMEM. */
int pure_dgq_push(pure_dgq *q, const pure_alloc *a, const void *data, size_t len);
/* The oldest datagram: its length, *p pointing at its bytes; -1 if the queue is empty. */
static inline int32_t pure_dgq_peek(const pure_dgq *q, const uint8_t **p)
{
    if (q->head == q->tail)
        return -1;
    *p = q->buf + q->head + 2;
    return (int32_t)(q->buf[q->head] << 8 | q->buf[q->head + 1]);
}
/* Removes the oldest datagram (after it was sent, or dropped). */
void pure_dgq_pop(pure_dgq *q);
/* Drops everything queued (counted in `dropped`) and gives the buffer back. */
void pure_dgq_clear(pure_dgq *q, const pure_alloc *a);

#endif
