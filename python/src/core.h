/* SPDX-License-Identifier: MIT */
/* core.h: the C half of the Python package (module pure._core): a Context drives one pure_ctx
 * over one UDP socket on the asyncio loop's thread; a Link holds one pure_link and the whole
 * messages it received, waiting for Python. Python is told of news once per batch of
 * datagrams (the list of links that changed), never once per message. */
#ifndef PURE_PY_CORE_H
#define PURE_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pure.h"
#include "pure_loop.h"
#include "udp.h" /* the library's own UDP socket code: GRO batches in, GSO bursts out */

typedef struct LinkObject LinkObject;

/* A ring of received bytes objects waiting for Python: one per channel used, and one of
 * datagrams. `seq` numbers each message in the order it arrived on the link (over all its
 * channels), so Link.pop_any hands them out in that order (a small message on one channel is
 * not made to wait behind the bulk queued on another). */
typedef struct {
    PyObject **obj;
    uint64_t *seq;
    size_t head, len, cap;
    uint32_t channel;
} pyp_ring;

typedef struct {
    PyObject_HEAD pure_ctx *ctx;
    pure_udp udp;
    pure_loop_stats lst;
    pure_addr local;
    int open;      /* socket open and context alive */
    int in_io;     /* inside on_readable/on_timer: news are returned, not announced */
    int announced; /* notify() called since the last take of the news */
    /* the burst being sent, held across EAGAIN until the socket is writable again */
    uint8_t *sbuf;
    size_t held_len, held_seg, held_off;
    pure_addr held_to;
    int blocked;
    PyObject *dirty;       /* list of Link objects with news for Python */
    PyObject *notify;      /* callable(): news arrived outside on_readable/on_timer */
    uint64_t max_queue;    /* bytes a link may hold for Python before it stops granting credit */
    uint64_t dgram_queue;  /* bytes of datagrams a link holds for Python; past it the oldest go */
    uint32_t max_channels; /* this side's (pure_settings.max_channels) */
} CtxObject;

struct LinkObject {
    PyObject_HEAD CtxObject *ctx; /* strong reference */
    pure_link *link;              /* NULL once on_closed ran */
    PyObject *owner;              /* the Python-level link (pure.Link) */
    PyObject *service;            /* str */
    PyObject *peer_key;           /* bytes */
    /* received messages waiting for Python: channel 0's ring, and one per other channel that
     * received (a few, found by a linear walk; chq_last caches the last one used) */
    pyp_ring q;
    pyp_ring *chq;
    size_t nchq, chq_last;
    uint64_t rx_seq; /* the next arrival number */
    size_t qlen;     /* messages queued, every channel */
    uint64_t qbytes; /* their bytes: what max_queue bounds */
    pyp_ring dq;     /* datagrams waiting for Python (seq unused) */
    uint64_t dqbytes, dq_overflowed;
    uint8_t sent_on[32];    /* channels 1..255 this side sent on (a bitmap): their unacked ids */
    uint32_t sent_top;      /* the highest of them */
    PyObject *chan_unacked; /* dict channel -> (first_unacked, next_id), filled at close */
    PyObject *final_stats;  /* stats() as they were when the link closed (NULL before) */
    int paused;             /* pure_link_pause_recv because qbytes passed max_queue */
    int in_dirty;           /* already in ctx->dirty */
    int accepted;           /* made by on_accept (a server's link) */
    int established, peer_finished, closed;
    int close_error;
    uint64_t peer_code, first_unacked, next_id;
    PyObject *reason; /* str, once closed */
};

/* The callbacks every context uses (events.c). */
extern const pure_callbacks pyp_callbacks;
extern PyTypeObject PureCtxType;
extern PyTypeObject PureLinkType;

/* Marks a link as having news for Python (messages, writable, closed, established). */
void pyp_link_dirty(LinkObject *l);
/* Asks Python (notify) for one service() soon: sends wait for a flush, or news came up outside
 * on_readable/service. Once until Python next takes the news. Returns 0, or -1 with an
 * exception set. */
int pyp_ctx_announce(CtxObject *c);
/* Sends everything the context has to send. Returns 0 or -1 with a Python exception set. */
int pyp_ctx_flush(CtxObject *c);
/* Raises pure._core.PureError(code) for a negative PURE_E* code; returns NULL. */
PyObject *pyp_raise(int code);
/* Raises the class registered under `kind` ("channel", "datagram"; else code's class) with
 * (code, message), the message formatted as PyUnicode_FromFormat does. Returns NULL. */
PyObject *pyp_raise_as(const char *kind, int code, const char *fmt, ...);

/* Rings (link.c). Push and pop run once per message: inline, the growth out of line. */
int pyp_ring_grow(pyp_ring *r); /* doubles the capacity: 0, or -1 (no memory) */
void pyp_ring_free(pyp_ring *r);

/* Takes the reference to o. Returns 0, or -1 (no memory: o is still the caller's). */
static inline int pyp_ring_push(pyp_ring *r, PyObject *o, uint64_t seq)
{
    if (r->len == r->cap && pyp_ring_grow(r) != 0)
        return -1;
    size_t at = r->head + r->len;
    if (at >= r->cap)
        at -= r->cap;
    r->obj[at] = o;
    r->seq[at] = seq;
    r->len++;
    return 0;
}

/* The oldest entry (the ring's reference becomes the caller's), or NULL when empty. */
static inline PyObject *pyp_ring_pop(pyp_ring *r)
{
    if (r->len == 0)
        return NULL;
    PyObject *o = r->obj[r->head];
    if (++r->head == r->cap)
        r->head = 0;
    r->len--;
    return o;
}

/* The ring of channel 1.., made if need be (NULL: no memory) or, with make 0, NULL when the
 * channel never received. */
pyp_ring *pyp_link_chan_ring(LinkObject *l, uint32_t channel, int make);
static inline pyp_ring *pyp_link_ring(LinkObject *l, uint32_t channel, int make)
{
    return channel == 0 ? &l->q : pyp_link_chan_ring(l, channel, make);
}
LinkObject *pyp_link_new(CtxObject *c, pure_link *link);
/* The link's counters as stats() gives them (a new dict, or NULL with an exception set). */
PyObject *pyp_link_stats(LinkObject *l, pure_link *link);

#endif
