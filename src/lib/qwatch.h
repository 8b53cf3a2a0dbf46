/* SPDX-License-Identifier: MIT */
/* qwatch.h: watching a link's send queues (pure_link_set_queue_limit, pure_link_queue_stats):
 * its queue limit, and per stream a few marks that date its messages, so the age of the oldest
 * message not acknowledged can be told without a record per message. A mark (off, t) says the
 * messages from stream offset off on were accepted at t or later (up to the next mark). The
 * core has no clock: t is the `now` of the pure_ctx_* call during which a message was accepted,
 * so one mark serves every message of one call. With every mark in use a new one is not made:
 * later messages take the newest mark's time, so an age is never under-estimated (it may be
 * over-estimated by up to the time the marks were full, which ends as acknowledgements free
 * them). Allocated on a link's first watch call, for channel 0 and 1..max_channels. */
#ifndef PURE_QWATCH_H
#define PURE_QWATCH_H

#include <stdint.h>

#include "alloc.h"

#define PURE_QMARKS 6

typedef struct pure_qmarks {
    uint64_t off[PURE_QMARKS];
    uint64_t t[PURE_QMARKS];
    uint8_t n; /* marks in use, oldest first */
} pure_qmarks;

typedef struct pure_qwatch {
    uint64_t limit;   /* bytes queued on all the link's streams together (0: no limit) */
    uint64_t full;    /* sends refused at the limit */
    uint32_t streams; /* marks for channels 0..streams-1 */
    pure_qmarks m[];
} pure_qwatch;

pure_qwatch *pure_qwatch_new(const pure_alloc *a, uint32_t streams);
void pure_qwatch_free(pure_qwatch *w, const pure_alloc *a);

/* A message starting at stream offset off is accepted at t; head is the offset of the oldest
 * message not acknowledged (marks wholly below it go). */
void pure_qmarks_note(pure_qmarks *m, uint64_t head, uint64_t off, uint64_t t);
/* When the message at offset head (the oldest not acknowledged) was accepted at the latest
 * (UINT64_MAX if no mark covers it: none was made since the watch began). */
uint64_t pure_qmarks_oldest(pure_qmarks *m, uint64_t head);

#endif
