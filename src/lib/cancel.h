/* SPDX-License-Identifier: MIT */
/* cancel.h: a channel's cancelled messages (docs/channels.md, "Cancel and deadlines"). Sending:
 * the messages being cancelled until the peer answers what became of each (cancelled, or
 * delivered before the cancel came), and the deadlines of messages sent with one. Receiving: the
 * stream ranges the peer cancelled that the in-order point has not reached yet, and the answers
 * owed to the peer until a packet carrying them is acknowledged. A channel that never cancelled
 * has none of it (pure_chan.cx is NULL), and a quiet channel gives it back. This module holds
 * the tables; cancelling a message of a channel's stream is chan_cancel.c; the link's side of
 * it (the public calls, the frames, the deadline timer) is link_cancel.c. */
#ifndef PURE_CANCEL_H
#define PURE_CANCEL_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* A message of ours being cancelled: its CHAN_CANCEL goes until the peer's CHAN_CANCELLED. */
typedef struct pure_cancel_out {
    uint64_t start, end; /* the message's stream bytes: length prefix and body */
    uint64_t id;
    uint8_t owed;     /* a CHAN_CANCEL frame is due */
    uint8_t flags;    /* PURE_CANCELLED_DEADLINE if its deadline passed */
    uint8_t sent;     /* all its bytes had gone once: the peer may have delivered it */
    uint8_t answered; /* the peer answered: kept until msgs_acked passes it (a second cancel of
                         it is PURE_EALREADY) */
} pure_cancel_out;

enum {
    PURE_REPLY_DONE = 0, /* a packet carrying the answer was acknowledged */
    PURE_REPLY_OWED = 1, /* the answer is due */
    PURE_REPLY_SENT = 2, /* the answer went in packet pn */
};

/* A message of the peer's it cancelled. */
typedef struct pure_cancel_in {
    uint64_t start, end, id;
    uint64_t pn;       /* the packet that last carried the answer */
    uint8_t skip;      /* the in-order point has not reached start: skip [start, end) there */
    uint8_t delivered; /* the answer: 1 if the message was delivered before the cancel came */
    uint8_t reply;     /* PURE_REPLY_* */
} pure_cancel_in;

typedef struct pure_deadline {
    uint64_t id, at;
} pure_deadline;

/* The most cancelled ranges a receiver holds ahead of its in-order point per channel; a
 * CHAN_CANCEL beyond them is dropped unacknowledged (the peer sends it again). The one at the
 * in-order point never waits here, so the stream always moves on. Small, as a peer chooses how
 * many: 255 channels of them cost a receiver at most ~2.6 MB (40 bytes each). */
#define PURE_CANCEL_IN_MAX 256u

typedef struct pure_cancels {
    pure_cancel_out *out; /* by id (and so by offset) */
    uint32_t nout, capout;
    pure_cancel_in *in; /* by start */
    uint32_t nin, capin;
    pure_deadline *dl; /* dl[head .. head + ndl): by id */
    uint32_t head, ndl, capdl;
    uint64_t walk_id, walk_off; /* the last message located: where id walk_id starts */
} pure_cancels;

/* The cancel state at *px, made on first use (NULL without memory). */
pure_cancels *pure_cancels_get(pure_cancels **px, const pure_alloc *a);
/* 1 if nothing is held (the state may go: pure_cancels_drop). */
int pure_cancels_idle(const pure_cancels *x);
/* Frees the state at *px (NULL after). */
void pure_cancels_drop(pure_cancels **px, const pure_alloc *a);

/* ---- sending ---- */
/* Records a cancel of message id (ids ascending in the table). Returns it, or NULL without
 * memory. */
pure_cancel_out *pure_cancels_out_add(pure_cancels *x, const pure_alloc *a,
                                      const pure_cancel_out *o);
/* The entry of message `id` being cancelled, or NULL. */
pure_cancel_out *pure_cancels_out_find(pure_cancels *x, uint64_t id);
/* Forgets the entry of message id (a cancel that could not be made). */
void pure_cancels_out_remove(pure_cancels *x, uint64_t id);
/* Forgets the entries of messages below `acked` (counted: their fate is told). */
void pure_cancels_out_prune(pure_cancels *x, uint64_t acked);
/* The peer's CHAN_DELIVERED after its CLOSE: it read the stream to `offset`, so a message being
 * cancelled below it that it did not answer was delivered (its answers came before). */
void pure_cancels_out_delivered(pure_cancels *x, uint64_t offset);
/* The lowest stream offset of a message being cancelled and not yet answered (UINT64_MAX:
 * none): the send buffer is not released past it, so a message's fate is counted only once the
 * peer answered. */
uint64_t pure_cancels_hold(const pure_cancels *x);

/* ---- receiving ---- */
/* The entry of the peer's message `id`, or NULL. */
pure_cancel_in *pure_cancels_in_find(pure_cancels *x, uint64_t id);
/* Holds an entry. Returns it, or NULL with *err: PURE_EPROTO (it overlaps a range still to be
 * skipped), PURE_EAGAIN (`limit` entries are held already: PURE_CANCEL_IN_MAX for a range
 * ahead, none for the one at the in-order point) or PURE_ENOMEM. */
pure_cancel_in *pure_cancels_in_add(pure_cancels *x, const pure_alloc *a, const pure_cancel_in *e,
                                    uint32_t limit, int *err);
/* Forgets entries whose answer was acknowledged and that have nothing left to skip. */
void pure_cancels_in_compact(pure_cancels *x);
/* The start of the lowest range still to be skipped (UINT64_MAX: none). */
uint64_t pure_cancels_next_skip(const pure_cancels *x);

/* ---- deadlines ---- */
/* Makes room for one more deadline (so that a message accepted always gets its deadline).
 * Returns 0 or PURE_ENOMEM. */
int pure_cancels_dl_reserve(pure_cancels *x, const pure_alloc *a);
/* Records message id's deadline (ids come in increasing order; room reserved). */
void pure_cancels_dl_push(pure_cancels *x, uint64_t id, uint64_t at);
/* Drops the deadlines of messages below `acked` (acknowledged: they met theirs). */
void pure_cancels_dl_prune(pure_cancels *x, uint64_t acked);
/* The earliest deadline held (UINT64_MAX: none). */
uint64_t pure_cancels_dl_min(const pure_cancels *x);

#endif
