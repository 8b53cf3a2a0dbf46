/* SPDX-License-Identifier: MIT */
/* events.c: the core's callbacks for pure._core. They run inside pure_ctx_read/write/timeout
 * (and pure_link_close/abort/resume_recv) and only record: a message becomes a bytes object in
 * its link's queue, anything else a flag, and the link joins the context's list of news that
 * Python takes once per batch. They never run Python code, except `notify` (loop.call_soon)
 * for news outside a batch. */
#include <string.h>

#include "core.h"

static int cb_accept(pure_link *link, const char *service, const uint8_t key[PURE_KEY_LEN],
                     void *ctx_user)
{
    CtxObject *c = ctx_user;
    LinkObject *l = pyp_link_new(c, link);
    if (!l) {
        PyErr_Clear();
        return PURE_ENOMEM; /* the initiator sees a refusal */
    }
    l->accepted = 1;
    l->established = 1;
    l->service = PyUnicode_DecodeUTF8(service, (Py_ssize_t)strlen(service), "replace");
    l->peer_key = PyBytes_FromStringAndSize((const char *)key, PURE_KEY_LEN);
    if (!l->service || !l->peer_key) {
        PyErr_Clear();
        Py_DECREF(l);
        return PURE_ENOMEM;
    }
    pure_link_set_user(link, l); /* the core's reference: dropped in on_closed */
    pyp_link_dirty(l);
    return 0;
}

static void cb_established(pure_link *link, void *user)
{
    LinkObject *l = user;
    l->established = 1;
    pyp_link_dirty(l);
}

/* Queues one received message (channel 0 or another) for Python. */
static void deliver(pure_link *link, LinkObject *l, uint32_t channel, const uint8_t *data,
                    size_t len)
{
    /* The one copy out of the receive buffer: data is valid only during this callback. */
    PyObject *b = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)len);
    pyp_ring *r = b ? pyp_link_ring(l, channel, 1) : NULL;
    if (!r || pyp_ring_push(r, b, l->rx_seq) != 0) {
        /* Nothing delivered may vanish silently: give up the link, whose close says so. */
        Py_XDECREF(b);
        PyErr_Clear();
        pure_link_abort(link, PURE_CLOSE_APP, "out of memory");
        return;
    }
    l->rx_seq++;
    l->qlen++;
    l->qbytes += len;
    /* Python is not keeping up: stop granting credit, so the peer waits instead of this
     * process buffering without bound. pop() resumes it at half the limit. The bound is the
     * link's, every channel together, as the credit it withholds is. */
    if (!l->paused && l->qbytes > l->ctx->max_queue) {
        l->paused = 1;
        pure_link_pause_recv(link);
    }
    pyp_link_dirty(l);
}

static void cb_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    deliver(link, user, 0, data, len);
}

static void cb_channel_message(pure_link *link, void *user, uint32_t channel, const uint8_t *data,
                               size_t len)
{
    deliver(link, user, channel, data, len);
}

/* A datagram waits for Python in its own ring. Datagrams have no credit to withhold: past
 * the context's dgram_queue bytes the oldest waiting ones are dropped (and counted), as a
 * reader that fell behind wants the freshest. */
static void cb_datagram(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    LinkObject *l = user;
    PyObject *b = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)len);
    while (b && l->dq.len && l->dqbytes + len > l->ctx->dgram_queue) {
        PyObject *old = pyp_ring_pop(&l->dq);
        l->dqbytes -= (uint64_t)PyBytes_GET_SIZE(old);
        l->dq_overflowed++;
        Py_DECREF(old);
    }
    if (!b || pyp_ring_push(&l->dq, b, 0) != 0) {
        Py_XDECREF(b); /* unreliable: a datagram that cannot be held is one more lost */
        PyErr_Clear();
        l->dq_overflowed++;
        return;
    }
    l->dqbytes += len;
    pyp_link_dirty(l);
}

static void cb_writable(pure_link *link, void *user)
{
    pyp_link_dirty(user);
}

static void cb_peer_finished(pure_link *link, void *user)
{
    LinkObject *l = user;
    l->peer_finished = 1;
    pyp_link_dirty(l);
}

static void cb_closed(pure_link *link, void *user, const pure_close_info *info)
{
    LinkObject *l = user;
    if (!l)
        return;
    l->closed = 1;
    l->link = NULL;
    l->final_stats = pyp_link_stats(l, link); /* the link is freed after this callback */
    if (!l->final_stats)
        PyErr_Clear();
    l->close_error = info->error;
    l->peer_code = info->peer_code;
    l->first_unacked = info->first_unacked;
    l->next_id = info->next_id;
    /* The ids of each other channel the peer never acknowledged (exact when it closed):
     * valid only now, as the link is freed after this callback. */
    for (uint32_t ch = 1; ch <= l->sent_top; ch++) {
        uint64_t first, next;
        if (!(l->sent_on[ch / 8] & (1u << (ch % 8))) ||
            pure_link_channel_unacked(link, ch, &first, &next) != 0 || first == next)
            continue;
        PyObject *k = PyLong_FromUnsignedLong(ch), *v = Py_BuildValue("(KK)", first, next);
        if (!l->chan_unacked)
            l->chan_unacked = PyDict_New();
        if (!k || !v || !l->chan_unacked || PyDict_SetItem(l->chan_unacked, k, v) != 0)
            PyErr_Clear();
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    const char *r = info->reason ? info->reason : "";
    l->reason = PyUnicode_DecodeUTF8(r, (Py_ssize_t)strlen(r), "replace");
    if (!l->reason)
        PyErr_Clear();
    pyp_link_dirty(l); /* the dirty list holds its own reference */
    Py_DECREF(l);      /* the core's */
}

/* ---- news for Python ---- */

void pyp_link_dirty(LinkObject *l)
{
    CtxObject *c = l->ctx;
    if (!l->in_dirty) {
        if (PyList_Append(c->dirty, (PyObject *)l) != 0) {
            PyErr_Clear();
            return;
        }
        l->in_dirty = 1;
    }
    if (pyp_ctx_announce(c) != 0)
        PyErr_WriteUnraisable(c->notify);
}

int pyp_ctx_announce(CtxObject *c)
{
    if (c->in_io || c->announced || !c->notify || c->notify == Py_None)
        return 0;
    c->announced = 1;
    PyObject *r = PyObject_CallNoArgs(c->notify); /* loop.call_soon: runs nothing now */
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

const pure_callbacks pyp_callbacks = {.on_accept = cb_accept,
                                      .on_established = cb_established,
                                      .on_message = cb_message,
                                      .on_writable = cb_writable,
                                      .on_peer_finished = cb_peer_finished,
                                      .on_closed = cb_closed,
                                      .on_channel_message = cb_channel_message,
                                      .on_datagram = cb_datagram};
