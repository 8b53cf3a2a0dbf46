/* SPDX-License-Identifier: MIT */
/* dgram.c: the datagram queue (dgram.h). */
#include "dgram.h"

#include <string.h>

#include "pure.h"

int pure_dgq_push(pure_dgq *q, const pure_alloc *a, const void *data, size_t len)
{
    uint32_t need = (uint32_t)len + 2, used = q->tail - q->head;
    if (len > 0xffff || used + need > PURE_DGQ_LIMIT)
        return PURE_EAGAIN;
    if (q->tail + need > q->cap) {
        if (q->head > 0) { /* slide what is queued to the front first */
            memmove(q->buf, q->buf + q->head, used);
            q->head = 0;
            q->tail = used;
        }
        if (q->tail + need > q->cap) {
            uint32_t cap = q->cap ? q->cap : 2048;
            while (cap < q->tail + need)
                cap *= 2;
            uint8_t *nb = pure_mem_realloc(a, q->buf, q->cap, cap);
            if (!nb)
                return PURE_ENOMEM;
            q->buf = nb;
            q->cap = cap;
        }
    }
    q->buf[q->tail] = (uint8_t)(len >> 8);
    q->buf[q->tail + 1] = (uint8_t)len;
    if (len)
        memcpy(q->buf + q->tail + 2, data, len);
    q->tail += need;
    q->count++;
    return 0;
}

void pure_dgq_pop(pure_dgq *q)
{
    if (q->head == q->tail)
        return;
    q->head += 2u + (uint32_t)(q->buf[q->head] << 8 | q->buf[q->head + 1]);
    q->count--;
    if (q->head == q->tail)
        q->head = q->tail = 0;
}

void pure_dgq_clear(pure_dgq *q, const pure_alloc *a)
{
    q->dropped += q->count;
    q->count = 0;
    q->head = q->tail = 0;
    pure_mem_free(a, q->buf, q->cap);
    q->buf = NULL;
    q->cap = 0;
}
