/* SPDX-License-Identifier: MIT */
/* qwatch.c: a link's queue limit and the marks dating its messages (qwatch.h). */
#include "qwatch.h"

#include <string.h>

pure_qwatch *pure_qwatch_new(const pure_alloc *a, uint32_t streams)
{
    size_t size = sizeof(pure_qwatch) + (size_t)streams * sizeof(pure_qmarks);
    pure_qwatch *w = pure_mem_alloc(a, size);
    if (w) {
        memset(w, 0, size);
        w->streams = streams;
    }
    return w;
}

void pure_qwatch_free(pure_qwatch *w, const pure_alloc *a)
{
    if (w)
        pure_mem_free(a, w, sizeof(pure_qwatch) + (size_t)w->streams * sizeof(pure_qmarks));
}

/* Drops the marks the next one makes useless: the head has reached the next mark. */
static void prune(pure_qmarks *m, uint64_t head)
{
    uint8_t drop = 0;
    while (drop + 1 < m->n && m->off[drop + 1] <= head)
        drop++;
    if (drop) {
        m->n -= drop;
        memmove(m->off, m->off + drop, m->n * sizeof m->off[0]);
        memmove(m->t, m->t + drop, m->n * sizeof m->t[0]);
    }
}

void pure_qmarks_note(pure_qmarks *m, uint64_t head, uint64_t off, uint64_t t)
{
    prune(m, head);
    if (off <= head)
        m->n = 0; /* nothing older is queued: start afresh */
    if (m->n) {
        uint8_t last = (uint8_t)(m->n - 1);
        if (m->t[last] >= t)
            return; /* the same call's time (or an older one): that mark covers it */
        if (m->off[last] >= off) {
            m->t[last] = t; /* no message took the older time (its send failed) */
            return;
        }
        if (m->n == PURE_QMARKS)
            return; /* full: the newest mark covers it, older than it was */
    }
    m->off[m->n] = off;
    m->t[m->n] = t;
    m->n++;
}

uint64_t pure_qmarks_oldest(pure_qmarks *m, uint64_t head)
{
    prune(m, head);
    if (!m->n || m->off[0] > head)
        return UINT64_MAX;
    return m->t[0];
}
