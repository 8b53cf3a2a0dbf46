/* SPDX-License-Identifier: MIT */
/* link.c: pure._core.Link, one pure_link and the whole messages it received, queued (a ring
 * of bytes objects per channel, and one of datagrams) until Python pops them. The queues are
 * bounded together by Context.max_queue: past it the link stops granting the peer credit
 * (pure_link_pause_recv), and a pop grants it again at half, so a slow consumer slows the
 * sender instead of growing this process. Channels and datagrams: docs/channels.md. */
#include <limits.h>
#include <string.h>

#include "core.h"

/* ---- rings ---- */

int pyp_ring_grow(pyp_ring *r)
{
    size_t cap = r->cap ? r->cap * 2 : 64;
    PyObject **obj = PyMem_Malloc(cap * sizeof *obj);
    uint64_t *sq = PyMem_Malloc(cap * sizeof *sq);
    if (!obj || !sq) {
        PyMem_Free(obj);
        PyMem_Free(sq);
        return -1;
    }
    for (size_t i = 0; i < r->len; i++) {
        obj[i] = r->obj[(r->head + i) % r->cap];
        sq[i] = r->seq[(r->head + i) % r->cap];
    }
    PyMem_Free(r->obj);
    PyMem_Free(r->seq);
    r->obj = obj;
    r->seq = sq;
    r->cap = cap;
    r->head = 0;
    return 0;
}

void pyp_ring_free(pyp_ring *r)
{
    for (size_t i = 0; i < r->len; i++)
        Py_DECREF(r->obj[(r->head + i) % r->cap]);
    PyMem_Free(r->obj);
    PyMem_Free(r->seq);
    memset(r, 0, sizeof *r);
}

pyp_ring *pyp_link_chan_ring(LinkObject *l, uint32_t channel, int make)
{
    if (l->chq_last < l->nchq && l->chq[l->chq_last].channel == channel)
        return &l->chq[l->chq_last];
    for (size_t i = 0; i < l->nchq; i++)
        if (l->chq[i].channel == channel) {
            l->chq_last = i;
            return &l->chq[i];
        }
    if (!make)
        return NULL;
    /* A link uses a few channels: a short array, walked. Rings move when it grows; nobody
     * keeps a pointer to one across calls. */
    pyp_ring *a = PyMem_Realloc(l->chq, (l->nchq + 1) * sizeof *a);
    if (!a)
        return NULL;
    l->chq = a;
    memset(&a[l->nchq], 0, sizeof *a);
    a[l->nchq].channel = channel;
    l->chq_last = l->nchq++;
    return &a[l->chq_last];
}

LinkObject *pyp_link_new(CtxObject *c, pure_link *link)
{
    LinkObject *l = PyObject_GC_New(LinkObject, &PureLinkType);
    if (!l)
        return NULL;
    memset((char *)l + sizeof(PyObject), 0, sizeof *l - sizeof(PyObject));
    Py_INCREF(c);
    l->ctx = c;
    l->link = link;
    Py_INCREF(Py_None);
    l->owner = Py_None;
    PyObject_GC_Track(l);
    return l;
}

/* A channel argument: an int in 0..UINT32_MAX. Returns 0, or -1 with an exception set. */
static int channel_arg(PyObject *o, uint32_t *ch)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1; /* not an integer: TypeError */
    if (overflow || v < 0 || v > UINT32_MAX) {
        pyp_raise_as("channel", PURE_EINVAL, "%R is not a channel: channels are 0 to %d", o,
                     PURE_MAX_CHANNELS);
        return -1;
    }
    *ch = (uint32_t)v;
    return 0;
}

/* Sends msg on channel ch: its id, None when the channel's backlog is full, or NULL with an
 * exception set. Inline in link_send, where ch is 0: channel 0's sends cost what they did. */
static inline PyObject *send_on(LinkObject *l, uint32_t ch, PyObject *msg)
{
    const void *p;
    Py_ssize_t n;
    Py_buffer view = {0};
    if (PyBytes_CheckExact(msg)) { /* the common case, without the buffer protocol's cost */
        p = PyBytes_AS_STRING(msg);
        n = PyBytes_GET_SIZE(msg);
    } else {
        if (PyObject_GetBuffer(msg, &view, PyBUF_SIMPLE) != 0)
            return NULL;
        p = view.buf;
        n = view.len;
    }
    int64_t id = !l->link ? PURE_ECLOSED
                 : ch     ? pure_link_send_on(l->link, ch, p, (size_t)n)
                          : pure_link_send(l->link, p, (size_t)n);
    if (view.obj)
        PyBuffer_Release(&view);
    if (id == PURE_EAGAIN)
        Py_RETURN_NONE; /* the backlog is full: wait for news (on_writable) and retry */
    if (id == PURE_EINVAL && ch)
        return pyp_raise_as("channel", PURE_EINVAL,
                            "channel %u is above this link's highest channel, %u (the smaller "
                            "of max_channels here, %u, and at the peer)",
                            (unsigned)ch, (unsigned)pure_link_peer_channels(l->link),
                            (unsigned)l->ctx->max_channels);
    if (id < 0)
        return pyp_raise((int)id);
    if (ch) { /* its unacked ids are looked up at close */
        l->sent_on[ch / 8] |= (uint8_t)(1u << (ch % 8));
        if (ch > l->sent_top)
            l->sent_top = ch;
    }
    if (pyp_ctx_announce(l->ctx) != 0) /* one flush for all the sends of this turn */
        return NULL;
    return PyLong_FromLongLong(id);
}

static PyObject *link_send(LinkObject *l, PyObject *msg)
{
    return send_on(l, 0, msg);
}

static PyObject *link_send_on(LinkObject *l, PyObject *const *args, Py_ssize_t nargs)
{
    uint32_t ch;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "send_on(channel, msg)");
        return NULL;
    }
    if (channel_arg(args[0], &ch) != 0)
        return NULL;
    return send_on(l, ch, args[1]);
}

/* One message out of the queues: account for it, and grant credit again once half of
 * max_queue is free. */
static PyObject *popped(LinkObject *l, PyObject *m)
{
    l->qlen--;
    l->qbytes -= (uint64_t)PyBytes_GET_SIZE(m);
    if (l->paused && l->qbytes <= l->ctx->max_queue / 2) {
        l->paused = 0;
        if (l->link) {
            pure_link_resume_recv(l->link);
            if (pyp_ctx_announce(l->ctx) != 0) /* the CREDIT frame goes out */
                PyErr_WriteUnraisable(l->ctx->notify);
        }
    }
    return m;
}

static PyObject *link_pop(LinkObject *l, PyObject *unused)
{
    PyObject *m = pyp_ring_pop(&l->q);
    if (!m)
        Py_RETURN_NONE;
    return popped(l, m);
}

/* pop_on(channel): that channel's next message, or None. */
static PyObject *link_pop_on(LinkObject *l, PyObject *arg)
{
    uint32_t ch;
    if (channel_arg(arg, &ch) != 0)
        return NULL;
    if (ch > l->ctx->max_channels)
        return pyp_raise_as("channel", PURE_EINVAL,
                            "channel %u is above this side's max_channels, %u: nothing can "
                            "arrive on it",
                            (unsigned)ch, (unsigned)l->ctx->max_channels);
    pyp_ring *r = pyp_link_ring(l, ch, 0);
    PyObject *m = r ? pyp_ring_pop(r) : NULL;
    if (!m)
        Py_RETURN_NONE;
    return popped(l, m);
}

/* pop_any(): (channel, message) of the message that arrived first of all those queued, or
 * None. A walk over the channels used: a link uses a few. */
static PyObject *link_pop_any(LinkObject *l, PyObject *unused)
{
    pyp_ring *best = l->q.len ? &l->q : NULL;
    for (size_t i = 0; i < l->nchq; i++) {
        pyp_ring *r = &l->chq[i];
        if (r->len && (!best || r->seq[r->head] < best->seq[best->head]))
            best = r;
    }
    if (!best)
        Py_RETURN_NONE;
    PyObject *m = popped(l, pyp_ring_pop(best));
    PyObject *t = Py_BuildValue("(kN)", (unsigned long)best->channel, m);
    return t; /* on failure m was released by Py_BuildValue's N */
}

static PyObject *link_pop_datagram(LinkObject *l, PyObject *unused)
{
    PyObject *m = pyp_ring_pop(&l->dq);
    if (!m)
        Py_RETURN_NONE;
    l->dqbytes -= (uint64_t)PyBytes_GET_SIZE(m);
    return m;
}

static PyObject *link_send_datagram(LinkObject *l, PyObject *msg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(msg, &view, PyBUF_SIMPLE) != 0)
        return NULL;
    int rc = l->link ? pure_link_send_datagram(l->link, view.buf, (size_t)view.len) : PURE_ECLOSED;
    Py_ssize_t n = view.len;
    PyBuffer_Release(&view);
    if (rc == PURE_EMSGSIZE)
        return pyp_raise_as("datagram", rc,
                            "a datagram of %zd bytes is larger than this link's datagram_max, "
                            "%zu bytes now (what one packet holds on this path, within both "
                            "sides' max_datagram_size)",
                            n, pure_link_datagram_max(l->link));
    if (rc == PURE_EINVAL)
        return pyp_raise_as("datagram", rc,
                            "this link takes no datagrams: max_datagram_size is 0 here or at "
                            "the peer (datagram_max is 0)");
    if (rc == PURE_EAGAIN)
        return pyp_raise_as("", rc,
                            "%d bytes of datagrams already wait for the congestion window: "
                            "send fewer, or later",
                            PURE_DATAGRAM_QUEUE);
    if (rc)
        return pyp_raise(rc);
    if (pyp_ctx_announce(l->ctx) != 0)
        return NULL;
    Py_RETURN_NONE;
}

/* set_priority(channel, urgency, incremental) */
static PyObject *link_set_priority(LinkObject *l, PyObject *args)
{
    PyObject *cho;
    int urgency, incremental;
    uint32_t ch;
    if (!PyArg_ParseTuple(args, "Oip", &cho, &urgency, &incremental) || channel_arg(cho, &ch) != 0)
        return NULL;
    if (urgency < 0 || urgency > PURE_URGENCY_MAX) {
        PyErr_Format(PyExc_ValueError, "urgency must be 0 (most urgent) to %d, got %d",
                     PURE_URGENCY_MAX, urgency);
        return NULL;
    }
    if (ch > l->ctx->max_channels)
        return pyp_raise_as("channel", PURE_EINVAL,
                            "channel %u is above this side's max_channels, %u", (unsigned)ch,
                            (unsigned)l->ctx->max_channels);
    int rc =
        l->link ? pure_link_set_priority(l->link, ch, (uint8_t)urgency, incremental) : PURE_ESTATE;
    if (rc == PURE_ESTATE)
        return pyp_raise(PURE_ECLOSED);
    if (rc)
        return pyp_raise(rc);
    Py_RETURN_NONE;
}

/* unacked(channel): (first_unacked, next_id) of that channel's ids while the link is open. */
static PyObject *link_unacked(LinkObject *l, PyObject *arg)
{
    uint32_t ch;
    uint64_t first = 0, next = 0;
    if (channel_arg(arg, &ch) != 0)
        return NULL;
    if (ch > l->ctx->max_channels)
        return pyp_raise_as("channel", PURE_EINVAL,
                            "channel %u is above this side's "
                            "max_channels, %u",
                            (unsigned)ch, (unsigned)l->ctx->max_channels);
    if (l->link) {
        pure_link_channel_unacked(l->link, ch, &first, &next);
    } else if (ch == 0) {
        first = l->first_unacked;
        next = l->next_id;
    } else if (l->chan_unacked) {
        PyObject *k = PyLong_FromUnsignedLong(ch);
        PyObject *v = k ? PyDict_GetItemWithError(l->chan_unacked, k) : NULL;
        Py_XDECREF(k);
        if (v) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return Py_BuildValue("(KK)", first, next);
}

/* channels_unacked(): messages on channels 1.. not yet acknowledged, all together (0 once
 * every channel's are: Link.close ends channel 0's stream only then). */
static PyObject *link_channels_unacked(LinkObject *l, PyObject *unused)
{
    uint64_t n = 0;
    for (uint32_t ch = 1; l->link && ch <= l->sent_top; ch++) {
        uint64_t first, next;
        if ((l->sent_on[ch / 8] & (1u << (ch % 8))) &&
            pure_link_channel_unacked(l->link, ch, &first, &next) == 0)
            n += next - first;
    }
    return PyLong_FromUnsignedLongLong(n);
}

static PyObject *link_close(LinkObject *l, PyObject *args)
{
    unsigned long long code = 0;
    const char *reason = "";
    if (!PyArg_ParseTuple(args, "|Ks", &code, &reason))
        return NULL;
    if (!l->link)
        Py_RETURN_FALSE;
    int rc = pure_link_close(l->link, code, reason);
    if (rc == PURE_ESTATE)
        Py_RETURN_FALSE; /* already closing */
    if (rc)
        return pyp_raise(rc);
    pyp_link_dirty(l); /* the CLOSE goes out with the next flush */
    Py_RETURN_TRUE;
}

static PyObject *link_abort(LinkObject *l, PyObject *args)
{
    unsigned long long code = 0;
    const char *reason = "";
    if (!PyArg_ParseTuple(args, "|Ks", &code, &reason))
        return NULL;
    if (!l->link)
        Py_RETURN_FALSE;
    int rc = pure_link_abort(l->link, code, reason);
    if (rc == PURE_ESTATE)
        Py_RETURN_FALSE;
    if (rc)
        return pyp_raise(rc);
    Py_RETURN_TRUE;
}

static PyObject *link_finish(LinkObject *l, PyObject *unused)
{
    if (!l->link)
        return pyp_raise(PURE_ECLOSED);
    int rc = pure_link_finish(l->link);
    if (rc && rc != PURE_ESTATE)
        return pyp_raise(rc);
    pyp_link_dirty(l);
    Py_RETURN_NONE;
}

static int put_u64(PyObject *d, const char *k, uint64_t v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    int rc = o ? PyDict_SetItemString(d, k, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *link_stats(LinkObject *l, PyObject *unused)
{
    if (!l->link) /* closed: as they were then (the core has freed the link) */
        return l->final_stats ? PyDict_Copy(l->final_stats) : PyDict_New();
    return pyp_link_stats(l, l->link);
}

PyObject *pyp_link_stats(LinkObject *l, pure_link *link)
{
    pure_link_stats s;
    pure_link_stats_get(link, &s);
    PyObject *d = Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsK}", "rtt_ns", s.rtt_ns,
        "rtt_min_ns", s.rtt_min_ns, "rtt_var_ns", s.rtt_var_ns, "cwnd", s.cwnd, "bytes_in_flight",
        s.bytes_in_flight, "packets_sent", s.packets_sent, "packets_received", s.packets_received,
        "bytes_sent", s.bytes_sent, "bytes_received", s.bytes_received, "packets_lost",
        s.packets_lost, "bytes_retransmitted", s.bytes_retransmitted, "ptos", s.ptos,
        "random_losses", s.random_losses, "messages_sent", s.messages_sent, "messages_received",
        s.messages_received, "messages_acked", s.messages_acked, "recv_window", s.recv_window,
        "rekeys", s.rekeys, "keepalives", s.keepalives, "path_changes", s.path_changes,
        "dropped_auth", s.dropped_auth, "dropped_replay", s.dropped_replay, "paced_bursts",
        s.paced_bursts, "datagram_size", s.datagram_size, "ecn_ce_received", s.ecn_ce_received,
        "ecn_ce_reported", s.ecn_ce_reported, "backlog",
        (unsigned long long)pure_link_backlog(link), "queued", (unsigned long long)l->qlen,
        "queued_bytes", (unsigned long long)l->qbytes);
    /* Channels and datagrams (docs/channels.md): pure_link_datagram_stats, and what waits here
     * for Python. */
    pure_datagram_stats ds;
    pure_link_datagram_stats(link, &ds);
    if (!d || put_u64(d, "max_channel", pure_link_peer_channels(link)) ||
        put_u64(d, "datagram_max", pure_link_datagram_max(link)) ||
        put_u64(d, "datagrams_sent", ds.sent) || put_u64(d, "datagrams_received", ds.received) ||
        put_u64(d, "datagrams_lost", ds.lost) || put_u64(d, "datagrams_dropped", ds.dropped) ||
        put_u64(d, "datagrams_queued", l->dq.len) ||
        put_u64(d, "datagrams_overflowed", l->dq_overflowed)) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *get_int(LinkObject *l, void *off)
{
    return PyLong_FromLong(*(int *)((char *)l + (size_t)off));
}
static PyObject *get_u64(LinkObject *l, void *off)
{
    return PyLong_FromUnsignedLongLong(*(uint64_t *)((char *)l + (size_t)off));
}
static PyObject *get_obj(LinkObject *l, void *off)
{
    PyObject *o = *(PyObject **)((char *)l + (size_t)off);
    if (!o)
        o = Py_None;
    Py_INCREF(o);
    return o;
}
static PyObject *get_open(LinkObject *l, void *unused)
{
    return PyBool_FromLong(l->link != NULL);
}
static PyObject *get_queued(LinkObject *l, void *unused)
{
    return PyLong_FromSize_t(l->qlen);
}
static PyObject *get_max_channel(LinkObject *l, void *unused)
{
    return PyLong_FromUnsignedLong(l->link ? pure_link_peer_channels(l->link) : 0);
}
static PyObject *get_datagram_max(LinkObject *l, void *unused)
{
    return PyLong_FromSize_t(l->link ? pure_link_datagram_max(l->link) : 0);
}
static PyObject *get_local_max_channels(LinkObject *l, void *unused)
{
    return PyLong_FromUnsignedLong(l->ctx->max_channels);
}
static PyObject *get_backlog(LinkObject *l, void *unused)
{
    return PyLong_FromUnsignedLongLong(l->link ? pure_link_backlog(l->link) : 0);
}
static PyObject *get_in_flight(LinkObject *l, void *unused)
{
    if (!l->link)
        return PyLong_FromLong(0);
    pure_link_stats st;
    pure_link_stats_get(l->link, &st);
    return PyLong_FromUnsignedLongLong(st.bytes_in_flight);
}
static PyObject *get_peer_addr(LinkObject *l, void *unused)
{
    if (!l->link)
        Py_RETURN_NONE;
    char s[PURE_ADDR_STRLEN];
    pure_addr_to_string(pure_link_peer_addr(l->link), s, sizeof s);
    return PyUnicode_FromString(s);
}
static PyObject *get_owner(LinkObject *l, void *unused)
{
    Py_INCREF(l->owner);
    return l->owner;
}
static int set_owner(LinkObject *l, PyObject *v, void *unused)
{
    if (!v)
        v = Py_None;
    Py_INCREF(v);
    Py_SETREF(l->owner, v);
    return 0;
}

#define OFF(f) (void *)offsetof(LinkObject, f)
static PyGetSetDef link_getset[] = {
    {"open", (getter)get_open, NULL, "the core still holds the link", NULL},
    {"accepted", (getter)get_int, NULL, "made by a listener", OFF(accepted)},
    {"established", (getter)get_int, NULL, "the handshake completed", OFF(established)},
    {"peer_finished", (getter)get_int, NULL, "the peer ended its stream", OFF(peer_finished)},
    {"closed", (getter)get_int, NULL, "on_closed ran", OFF(closed)},
    {"close_error", (getter)get_int, NULL, "0 or a PURE_E* code", OFF(close_error)},
    {"peer_code", (getter)get_u64, NULL, "the peer's close code", OFF(peer_code)},
    {"first_unacked", (getter)get_u64, NULL, "first id never acknowledged", OFF(first_unacked)},
    {"next_id", (getter)get_u64, NULL, "the id the next message would have had", OFF(next_id)},
    {"reason", (getter)get_obj, NULL, "the peer's close reason", OFF(reason)},
    {"service", (getter)get_obj, NULL, "the service name", OFF(service)},
    {"peer_key", (getter)get_obj, NULL, "the peer's static public key", OFF(peer_key)},
    {"queued", (getter)get_queued, NULL, "messages waiting for a pop, every channel", NULL},
    {"max_channel", (getter)get_max_channel, NULL,
     "the highest channel this link may send on (pure_link_peer_channels)", NULL},
    {"local_max_channels", (getter)get_local_max_channels, NULL, "this side's max_channels", NULL},
    {"datagram_max", (getter)get_datagram_max, NULL,
     "the largest datagram send_datagram takes now (0: none)", NULL},
    {"chan_unacked", (getter)get_obj, NULL,
     "at close: channel -> (first_unacked, next_id) of channels 1.. with ids not acknowledged",
     OFF(chan_unacked)},
    {"backlog", (getter)get_backlog, NULL, "bytes sent and not yet acknowledged", NULL},
    {"in_flight", (getter)get_in_flight, NULL, "bytes sent and neither acked nor lost", NULL},
    {"peer_addr", (getter)get_peer_addr, NULL, "the peer's address", NULL},
    {"owner", (getter)get_owner, (setter)set_owner, "the Python-level link", NULL},
    {NULL}};

static PyMethodDef link_methods[] = {
    {"send", (PyCFunction)link_send, METH_O,
     "Accepts one message: its id, or None when the backlog is full."},
    {"send_on", (PyCFunction)(void (*)(void))link_send_on, METH_FASTCALL,
     "send_on(channel, msg): its id on that channel, or None when its backlog is full."},
    {"pop", (PyCFunction)link_pop, METH_NOARGS, "Channel 0's next message, or None."},
    {"pop_on", (PyCFunction)link_pop_on, METH_O, "pop_on(channel): its next message, or None."},
    {"pop_any", (PyCFunction)link_pop_any, METH_NOARGS,
     "(channel, message) of the first to arrive of those queued, or None."},
    {"send_datagram", (PyCFunction)link_send_datagram, METH_O, "Queues one datagram."},
    {"pop_datagram", (PyCFunction)link_pop_datagram, METH_NOARGS,
     "The next received datagram, or None."},
    {"set_priority", (PyCFunction)link_set_priority, METH_VARARGS,
     "set_priority(channel, urgency, incremental)"},
    {"unacked", (PyCFunction)link_unacked, METH_O, "unacked(channel) -> (first_unacked, next_id)"},
    {"channels_unacked", (PyCFunction)link_channels_unacked, METH_NOARGS,
     "Messages on channels 1.. not yet acknowledged."},
    {"close", (PyCFunction)link_close, METH_VARARGS, "close(code=0, reason='') graceful close"},
    {"abort", (PyCFunction)link_abort, METH_VARARGS, "abort(code=0, reason='') close at once"},
    {"finish", (PyCFunction)link_finish, METH_NOARGS, "Ends this side's stream."},
    {"stats", (PyCFunction)link_stats, METH_NOARGS, "The link's counters."},
    {NULL}};

static int link_traverse(LinkObject *l, visitproc visit, void *arg)
{
    Py_VISIT(l->owner);
    Py_VISIT((PyObject *)l->ctx);
    return 0;
}

static int link_clear(LinkObject *l)
{
    Py_CLEAR(l->owner);
    return 0;
}

static void link_dealloc(LinkObject *l)
{
    PyObject_GC_UnTrack(l);
    /* Only a closed link can die: the core holds a reference to an open one. */
    pyp_ring_free(&l->q);
    for (size_t i = 0; i < l->nchq; i++)
        pyp_ring_free(&l->chq[i]);
    PyMem_Free(l->chq);
    pyp_ring_free(&l->dq);
    Py_CLEAR(l->chan_unacked);
    Py_CLEAR(l->final_stats);
    Py_CLEAR(l->owner);
    Py_CLEAR(l->service);
    Py_CLEAR(l->peer_key);
    Py_CLEAR(l->reason);
    Py_CLEAR(l->ctx);
    PyObject_GC_Del(l);
}

PyTypeObject PureLinkType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pure._core.Link",
    .tp_basicsize = sizeof(LinkObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One Pure link (made by Context.connect or by a listener).",
    .tp_dealloc = (destructor)link_dealloc,
    .tp_traverse = (traverseproc)link_traverse,
    .tp_clear = (inquiry)link_clear,
    .tp_methods = link_methods,
    .tp_getset = link_getset,
};
