/* SPDX-License-Identifier: MIT */
/* link.c: pure._core.Link, one pure_link and the whole messages it received, queued (a ring
 * of bytes objects) until Python pops them. The queue is bounded by Context.max_queue: past
 * it the link stops granting the peer credit (pure_link_pause_recv), and pop() grants it again
 * at half, so a slow consumer slows the sender instead of growing this process. */
#include <string.h>

#include "core.h"

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

static PyObject *link_send(LinkObject *l, PyObject *msg)
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
    int64_t id = l->link ? pure_link_send(l->link, p, (size_t)n) : PURE_ECLOSED;
    if (view.obj)
        PyBuffer_Release(&view);
    if (id == PURE_EAGAIN)
        Py_RETURN_NONE; /* the backlog is full: wait for news (on_writable) and retry */
    if (id < 0)
        return pyp_raise((int)id);
    if (pyp_ctx_announce(l->ctx) != 0) /* one flush for all the sends of this turn */
        return NULL;
    return PyLong_FromLongLong(id);
}

static PyObject *link_pop(LinkObject *l, PyObject *unused)
{
    if (l->qlen == 0)
        Py_RETURN_NONE;
    PyObject *m = l->q[l->qhead];
    l->qhead = (l->qhead + 1) % l->qcap;
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
    return m; /* the queue's reference becomes the caller's */
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

static PyObject *link_stats(LinkObject *l, PyObject *unused)
{
    if (!l->link)
        return PyDict_New();
    pure_link_stats s;
    pure_link_stats_get(l->link, &s);
    return Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsK}", "rtt_ns", s.rtt_ns, "rtt_min_ns",
        s.rtt_min_ns, "rtt_var_ns", s.rtt_var_ns, "cwnd", s.cwnd, "bytes_in_flight",
        s.bytes_in_flight, "packets_sent", s.packets_sent, "packets_received", s.packets_received,
        "bytes_sent", s.bytes_sent, "bytes_received", s.bytes_received, "packets_lost",
        s.packets_lost, "bytes_retransmitted", s.bytes_retransmitted, "ptos", s.ptos,
        "random_losses", s.random_losses, "messages_sent", s.messages_sent, "messages_received",
        s.messages_received, "messages_acked", s.messages_acked, "recv_window", s.recv_window,
        "rekeys", s.rekeys, "keepalives", s.keepalives, "path_changes", s.path_changes,
        "dropped_auth", s.dropped_auth, "dropped_replay", s.dropped_replay, "paced_bursts",
        s.paced_bursts, "datagram_size", s.datagram_size, "ecn_ce_received", s.ecn_ce_received,
        "ecn_ce_reported", s.ecn_ce_reported, "backlog",
        (unsigned long long)pure_link_backlog(l->link), "queued",
        (unsigned long long)l->qlen, "queued_bytes", (unsigned long long)l->qbytes);
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
    {"queued", (getter)get_queued, NULL, "messages waiting for pop()", NULL},
    {"backlog", (getter)get_backlog, NULL, "bytes sent and not yet acknowledged", NULL},
    {"in_flight", (getter)get_in_flight, NULL, "bytes sent and neither acked nor lost", NULL},
    {"peer_addr", (getter)get_peer_addr, NULL, "the peer's address", NULL},
    {"owner", (getter)get_owner, (setter)set_owner, "the Python-level link", NULL},
    {NULL}};

static PyMethodDef link_methods[] = {
    {"send", (PyCFunction)link_send, METH_O,
     "Accepts one message: its id, or None when the backlog is full."},
    {"pop", (PyCFunction)link_pop, METH_NOARGS, "The next received message, or None."},
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
    for (size_t i = 0; i < l->qlen; i++)
        Py_DECREF(l->q[(l->qhead + i) % l->qcap]);
    PyMem_Free(l->q);
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
