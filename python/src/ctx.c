/* SPDX-License-Identifier: MIT */
/* ctx.c: pure._core.Context, one pure_ctx driven over one UDP socket from the asyncio loop's
 * thread. The Python side watches fileno() with loop.add_reader and calls on_readable(), which
 * reads up to 16 recvmmsg/GRO batches into pure_ctx_read, runs due timers and sends every GSO
 * burst the core has; it schedules on_timer() with loop.call_at at deadline(). Each of these
 * returns the links that changed (a list, or None), so Python wakes its waiters once per
 * batch. News that come up outside those calls (a send that needs a flush, a close) call
 * `notify` once until Python next takes the news. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define READ_BUDGET 16 /* recvmmsg calls per on_readable, as Pure's own loop (loop.c) */

static PyObject *take_news(CtxObject *c)
{
    c->announced = 0;
    if (PyList_GET_SIZE(c->dirty) == 0)
        Py_RETURN_NONE;
    PyObject *fresh = PyList_New(0);
    if (!fresh)
        return NULL;
    PyObject *news = c->dirty;
    c->dirty = fresh;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(news); i++)
        ((LinkObject *)PyList_GET_ITEM(news, i))->in_dirty = 0;
    return news;
}

/* ---- sending: Pure's own loop's flush (src/io/loop.c), with EAGAIN reported to Python ---- */

int pyp_ctx_flush(CtxObject *c)
{
    if (!c->open)
        return 0;
    int bursts = 0;
    uint64_t now = pure_now();
    for (;;) {
        if (!c->blocked) {
            if (bursts++)
                now = pure_now(); /* the pacer refilled while the last burst went out */
            int64_t n =
                pure_ctx_write(c->ctx, c->sbuf, PURE_UDP_BUF, &c->held_seg, &c->held_to, now);
            if (n <= 0)
                return 0;
            c->held_len = (size_t)n;
            c->held_off = 0;
        }
        c->udp.too_big = 0;
        int rc =
            pure_udp_send(&c->udp, c->sbuf, c->held_len, c->held_seg, &c->held_to, &c->held_off);
        if (c->udp.too_big)
            pure_ctx_burst_too_big(c->ctx, now);
        if (rc == PURE_EAGAIN) {
            c->blocked = 1; /* Python watches the socket for writing: on_writable() */
            return 0;
        }
        if (rc < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        c->blocked = 0;
    }
}

static void run_timers(CtxObject *c)
{
    uint64_t now = pure_now();
    if (pure_ctx_deadline(c->ctx) <= now) {
        pure_ctx_timeout(c->ctx, now);
        c->lst.timeouts++;
    }
}

static PyObject *closed_error(void)
{
    return pyp_raise(PURE_ECLOSED);
}

static PyObject *ctx_on_readable(CtxObject *c, PyObject *unused)
{
    if (!c->open)
        Py_RETURN_NONE;
    c->in_io = 1;
    c->lst.wakeups++;
    int rc = pure_udp_recv(&c->udp, c->ctx, READ_BUDGET);
    /* the budget ran out: probe timeouts past what was read wait for the rest (as loop.c) */
    pure_ctx_read_backlog(c->ctx, rc > 0);
    run_timers(c);
    int f = pyp_ctx_flush(c);
    c->in_io = 0;
    if (rc == PURE_EIO)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (f)
        return NULL;
    return take_news(c);
}

/* on_timer, on_writable and service are one thing: due timers, then every burst. */
static uint64_t clock_now(void *user)
{
    (void)user;
    return pure_now();
}

static PyObject *ctx_service(CtxObject *c, PyObject *unused)
{
    if (!c->open)
        return take_news(c);
    c->in_io = 1;
    run_timers(c);
    int f = pyp_ctx_flush(c);
    c->in_io = 0;
    if (f)
        return NULL;
    return take_news(c);
}

static PyObject *ctx_deadline(CtxObject *c, PyObject *unused)
{
    if (!c->open)
        Py_RETURN_NONE;
    uint64_t d = pure_ctx_deadline(c->ctx);
    if (c->blocked) /* the burst waits for the socket, not for a timer */
        d = UINT64_MAX;
    if (d == UINT64_MAX)
        Py_RETURN_NONE;
    return PyFloat_FromDouble((double)d / 1e9); /* loop.time(): CLOCK_MONOTONIC seconds too */
}

static PyObject *ctx_fileno(CtxObject *c, PyObject *unused)
{
    return PyLong_FromLong(c->open ? c->udp.fd : -1);
}

static int parse_addr(PyObject *s, pure_addr *a)
{
    const char *t = PyUnicode_AsUTF8(s);
    if (!t)
        return -1;
    if (pure_addr_from_string(a, t) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "bad address %R: expected a numeric HOST:PORT, e.g. 127.0.0.1:4433 or "
                     "[::1]:4433",
                     s);
        return -1;
    }
    return 0;
}

static int key_arg(PyObject *o, const uint8_t **out, const char *what)
{
    if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) != PURE_KEY_LEN) {
        PyErr_Format(PyExc_ValueError, "%s must be %d bytes", what, PURE_KEY_LEN);
        return -1;
    }
    *out = (const uint8_t *)PyBytes_AS_STRING(o);
    return 0;
}

static PyObject *ctx_connect(CtxObject *c, PyObject *args)
{
    PyObject *addr, *key;
    const char *service;
    if (!PyArg_ParseTuple(args, "UOs", &addr, &key, &service))
        return NULL;
    if (!c->open)
        return closed_error();
    pure_addr to;
    const uint8_t *k;
    if (parse_addr(addr, &to) || key_arg(key, &k, "server_key"))
        return NULL;
    LinkObject *l = pyp_link_new(c, NULL);
    if (!l)
        return NULL;
    l->service = PyUnicode_FromString(service);
    Py_INCREF(key);
    l->peer_key = key;
    if (!l->service) {
        Py_DECREF(l);
        return NULL;
    }
    pure_link *link;
    int rc = pure_connect(c->ctx, &to, k, service, l, &link, pure_now());
    if (rc) {
        Py_DECREF(l);
        return pyp_raise(rc);
    }
    l->link = link;
    Py_INCREF(l);                 /* the core's reference, dropped in on_closed */
    if (pyp_ctx_announce(c) != 0) /* the INIT goes out with the next flush */
        PyErr_WriteUnraisable(c->notify);
    return (PyObject *)l;
}

static PyObject *ctx_close(CtxObject *c, PyObject *unused)
{
    if (c->open) {
        c->open = 0;
        c->in_io = 1;
        pure_ctx_free(c->ctx); /* on_closed (PURE_ECLOSED) for every link still open */
        c->ctx = NULL;
        c->in_io = 0;
        pure_udp_close(&c->udp);
    }
    return take_news(c);
}

/* Server.drain (docs/fleet.md): pure_ctx_drain, then the CLOSE packets go out at once. */
static PyObject *ctx_drain(CtxObject *c, PyObject *unused)
{
    if (!c->open)
        return take_news(c);
    c->in_io = 1;
    int rc = pure_ctx_drain(c->ctx, pure_now());
    int f = rc == 0 ? pyp_ctx_flush(c) : 0;
    c->in_io = 0;
    if (rc)
        return pyp_raise(rc);
    if (f)
        return NULL;
    return take_news(c);
}

static PyObject *ctx_stats(CtxObject *c, PyObject *unused)
{
    if (!c->open)
        return PyDict_New();
    pure_ctx_stats s;
    pure_ctx_stats_get(c->ctx, &s);
    return Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsKsK}", "links", s.links, "handshakes_started",
        s.handshakes_started, "handshakes_accepted", s.handshakes_accepted, "handshakes_refused",
        s.handshakes_refused, "cookies_sent", s.cookies_sent, "dropped_malformed",
        s.dropped_malformed, "dropped_auth", s.dropped_auth, "dropped_replay", s.dropped_replay,
        "dropped_unknown_link", s.dropped_unknown_link, "timers_fired", s.timers_fired,
        "datagrams_in", s.datagrams_in, "datagrams_out", s.datagrams_out, "bursts_out",
        s.bursts_out, "sendmsg_calls", (unsigned long long)c->lst.sendmsg_calls, "gso_bursts",
        (unsigned long long)c->lst.gso_bursts, "recvmsg_calls",
        (unsigned long long)c->lst.recvmsg_calls, "gro_buffers",
        (unsigned long long)c->lst.gro_buffers, "send_blocked",
        (unsigned long long)c->lst.send_blocked, "send_errors",
        (unsigned long long)c->lst.send_errors, "recv_errors",
        (unsigned long long)c->lst.recv_errors, "recv_empty", (unsigned long long)c->lst.recv_empty,
        "wakeups", (unsigned long long)c->lst.wakeups, "timeouts",
        (unsigned long long)c->lst.timeouts);
}

static PyObject *ctx_get_port(CtxObject *c, void *unused)
{
    return PyLong_FromLong((long)(c->local.bytes[2] << 8 | c->local.bytes[3]));
}

static PyObject *ctx_get_address(CtxObject *c, void *unused)
{
    char s[PURE_ADDR_STRLEN];
    pure_addr_to_string(&c->local, s, sizeof s);
    return PyUnicode_FromString(s);
}

static PyObject *ctx_get_public_key(CtxObject *c, void *unused)
{
    if (!c->open)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)pure_ctx_public_key(c->ctx), PURE_KEY_LEN);
}

static PyObject *ctx_get_blocked(CtxObject *c, void *unused)
{
    return PyBool_FromLong(c->blocked);
}

static PyObject *ctx_get_closed(CtxObject *c, void *unused)
{
    return PyBool_FromLong(!c->open);
}

/* Registers each service name of an iterable. Returns 0, or -1 with an exception set. */
static int add_services(pure_ctx *ctx, PyObject *services)
{
    PyObject *it = PyObject_GetIter(services), *o;
    if (!it)
        return -1;
    while ((o = PyIter_Next(it))) {
        const char *name = PyUnicode_AsUTF8(o);
        int rc = name ? pure_ctx_add_service(ctx, name) : 0;
        Py_DECREF(o);
        if (!name || rc) {
            Py_DECREF(it);
            if (name)
                PyErr_Format(PyExc_ValueError, "bad service name (1..63 bytes): %s",
                             pure_strerror(rc));
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* Adds each 32-byte key of an iterable to the allow list. Returns 0, or -1 with an exception. */
static int add_allowed(pure_ctx *ctx, PyObject *allow)
{
    PyObject *it = PyObject_GetIter(allow), *o;
    if (!it)
        return -1;
    while ((o = PyIter_Next(it))) {
        const uint8_t *pk;
        int bad = key_arg(o, &pk, "an allowed key");
        int rc = bad ? 0 : pure_ctx_allow(ctx, pk);
        Py_DECREF(o);
        if (bad || rc) {
            Py_DECREF(it);
            if (!bad)
                pyp_raise(rc);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* Opens the socket and its send buffer. Returns 0, or -1 with an exception set. */
static int open_socket(CtxObject *c)
{
    c->sbuf = PyMem_Malloc(PURE_UDP_BUF);
    if (!c->sbuf) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = pure_udp_open(&c->udp, &c->local, &c->lst, 0);
    if (rc) {
        if (rc == PURE_EIO)
            PyErr_SetFromErrno(PyExc_OSError);
        else
            pyp_raise(rc);
        return -1;
    }
    /* As Pure's loop: never more in flight than a socket like ours can hold. */
    pure_ctx_set_max_in_flight(c->ctx, pure_udp_rcvbuf(&c->udp));
    pure_ctx_set_clock(c->ctx, clock_now, NULL); /* calls from coroutines between wakeups */
    return 0;
}

static uint64_t seconds_ns(double s, uint64_t dflt)
{
    return s > 0 ? (uint64_t)(s * 1e9) : dflt;
}

/* The channel and datagram settings (-1: the library's default) into s and c. Returns 0, or
 * -1 with ValueError set. */
static int channel_settings(CtxObject *c, pure_settings *s, long long max_channels,
                            long long max_dgram, long long dgram_queue)
{
    if (max_channels > PURE_MAX_CHANNELS || max_channels < -1) {
        PyErr_Format(PyExc_ValueError, "max_channels must be 0 to %d, got %lld", PURE_MAX_CHANNELS,
                     max_channels);
        return -1;
    }
    if (max_dgram > 65535 || max_dgram < -1) {
        PyErr_Format(PyExc_ValueError,
                     "max_datagram_size must be 0 (no datagrams) to 65535 bytes, got %lld",
                     max_dgram);
        return -1;
    }
    if (dgram_queue < 0) {
        PyErr_Format(PyExc_ValueError, "datagram_queue must not be negative, got %lld",
                     dgram_queue);
        return -1;
    }
    if (max_channels >= 0)
        s->max_channels = (uint32_t)max_channels;
    if (max_dgram >= 0)
        s->max_datagram_size = (uint32_t)max_dgram;
    c->max_channels = s->max_channels;
    c->dgram_queue = dgram_queue ? (uint64_t)dgram_queue : 1;
    return 0;
}

/* Context(private_key, bind, *, services=(), allow=(), allow_any=False, notify=None,
 *         max_queue=4 MiB, handshake_timeout=0, idle_timeout=0, keepalive=0,
 *         max_message_size=0, send_backlog=0, send_queue=-1, respond_to_unknown=True,
 *         max_channels=-1, max_datagram_size=-1, datagram_queue=1 MiB)
 * Times in seconds (0: the library's default); sizes in bytes (0: the default; -1 for the
 * channel and datagram limits, where 0 means none). */
static int ctx_init(CtxObject *c, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"private_key",      "bind",
                             "services",         "allow",
                             "allow_any",        "notify",
                             "max_queue",        "handshake_timeout",
                             "idle_timeout",     "keepalive",
                             "max_message_size", "send_backlog",
                             "send_queue",       "respond_to_unknown",
                             "max_channels",     "max_datagram_size",
                             "datagram_queue",   NULL};
    PyObject *key, *bind, *services = NULL, *allow = NULL, *notify = Py_None;
    int allow_any = 0, respond = 1;
    long long max_queue = 4u << 20, max_msg = 0, backlog = 0;
    long long send_queue = -1, max_channels = -1, max_dgram = -1, dgram_queue = 1 << 20;
    double hs_to = 0, idle_to = 0, keepalive = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OU|$OOpOLdddLLLpLLL", kwlist, &key, &bind,
                                     &services, &allow, &allow_any, &notify, &max_queue, &hs_to,
                                     &idle_to, &keepalive, &max_msg, &backlog, &send_queue,
                                     &respond, &max_channels, &max_dgram, &dgram_queue))
        return -1;
    const uint8_t *k;
    if (c->open || c->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Context already initialised");
        return -1;
    }
    if (key_arg(key, &k, "private_key") || parse_addr(bind, &c->local))
        return -1;
    if (!(hs_to >= 0) || !(idle_to >= 0) || !(keepalive >= 0)) { /* NaN too */
        PyErr_SetString(PyExc_ValueError, "times must not be negative");
        return -1;
    }
    /* sizes: checked here, not wrapped or truncated into the C fields (2**32 + 5 bytes was a
     * max_message_size of 5, -1 a send_backlog of 2**64 - 1) */
    if (max_queue < 0 || backlog < 0 || send_queue < -1) {
        PyErr_SetString(PyExc_ValueError,
                        "max_queue and send_backlog must not be negative, send_queue not below -1");
        return -1;
    }
    if (max_msg < 0 || max_msg > (1 << 30)) {
        PyErr_Format(PyExc_ValueError,
                     "max_message_size must be 1 to %d bytes (0: the default), got %lld", 1 << 30,
                     max_msg);
        return -1;
    }
    if (backlog > 0 && backlog < 4096) {
        PyErr_Format(PyExc_ValueError,
                     "send_backlog must be at least 4096 bytes (0: the default), got %lld",
                     backlog);
        return -1;
    }
    double most = (double)PURE_TIMEOUT_MAX / 1e9;
    if (hs_to > most || idle_to > most || keepalive > most) {
        /* converted to ns, a larger time is past what uint64_t holds (undefined in C) */
        PyErr_Format(PyExc_ValueError, "times must be at most %.0f seconds (365 days)", most);
        return -1;
    }
    pure_settings s;
    pure_settings_default(&s);
    if (channel_settings(c, &s, max_channels, max_dgram, dgram_queue) != 0)
        return -1;
    memcpy(s.private_key, k, PURE_KEY_LEN);
    s.allow_any = allow_any;
    s.respond_to_unknown = respond;
    s.handshake_timeout = seconds_ns(hs_to, s.handshake_timeout);
    s.idle_timeout = seconds_ns(idle_to, s.idle_timeout);
    s.keepalive = seconds_ns(keepalive, s.keepalive);
    if (max_msg)
        s.max_message_size = (uint32_t)max_msg;
    if (s.max_receive_memory < s.max_message_size)
        s.max_receive_memory = s.max_message_size; /* the budget holds one message at least */
    if (backlog)
        s.send_backlog = (uint64_t)backlog;
    if (send_queue >= 0)
        s.send_queue = (uint64_t)send_queue;
    s.callbacks = &pyp_callbacks;
    s.user = c;
    /* A link that streams fast gets a ring of a few MiB: huge pages spare the page faults. */
    pure_settings_use_huge_pages(&s);
    c->max_queue = max_queue ? (uint64_t)max_queue : 1;
    int rc = pure_ctx_new(&s, &c->ctx);
    if (rc) {
        pyp_raise(rc);
        return -1;
    }
    if ((services && add_services(c->ctx, services)) || (allow && add_allowed(c->ctx, allow)) ||
        open_socket(c)) {
        pure_ctx_free(c->ctx);
        c->ctx = NULL;
        return -1;
    }
    Py_INCREF(notify);
    Py_XSETREF(c->notify, notify);
    c->open = 1;
    return 0;
}

static PyObject *ctx_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
    CtxObject *c = (CtxObject *)t->tp_alloc(t, 0);
    if (!c)
        return NULL;
    c->udp.fd = -1;
    c->dirty = PyList_New(0);
    if (!c->dirty) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static int ctx_traverse(CtxObject *c, visitproc visit, void *arg)
{
    Py_VISIT(c->notify);
    Py_VISIT(c->dirty);
    return 0;
}

static int ctx_clear(CtxObject *c)
{
    Py_CLEAR(c->notify);
    return 0;
}

static void ctx_dealloc(CtxObject *c)
{
    PyObject_GC_UnTrack(c);
    if (c->open) {
        c->open = 0;
        c->in_io = 1;
        pure_ctx_free(c->ctx);
        pure_udp_close(&c->udp);
    }
    Py_CLEAR(c->notify);
    Py_CLEAR(c->dirty);
    PyMem_Free(c->sbuf);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef ctx_methods[] = {
    {"on_readable", (PyCFunction)ctx_on_readable, METH_NOARGS,
     "Reads what the socket holds (GRO/recvmmsg batches), runs due timers, sends; returns the "
     "links with news, or None."},
    {"service", (PyCFunction)ctx_service, METH_NOARGS,
     "Runs due timers and sends every burst; returns the links with news, or None."},
    {"deadline", (PyCFunction)ctx_deadline, METH_NOARGS,
     "When service() should next run, in loop.time() seconds, or None."},
    {"fileno", (PyCFunction)ctx_fileno, METH_NOARGS, "The UDP socket's descriptor."},
    {"connect", (PyCFunction)ctx_connect, METH_VARARGS,
     "connect(address, server_key, service) -> Link"},
    {"close", (PyCFunction)ctx_close, METH_NOARGS,
     "Frees the context (every open link closes with PURE_ECLOSED) and closes the socket; "
     "returns the links with news."},
    {"drain", (PyCFunction)ctx_drain, METH_NOARGS,
     "Drains the context (pure_ctx_drain): its links close with 'moved', new ones are refused "
     "with it; returns the links with news."},
    {"stats", (PyCFunction)ctx_stats, METH_NOARGS, "The context's and its socket's counters."},
    {NULL}};

static PyGetSetDef ctx_getset[] = {
    {"port", (getter)ctx_get_port, NULL, "the bound UDP port", NULL},
    {"address", (getter)ctx_get_address, NULL, "the bound address, HOST:PORT", NULL},
    {"public_key", (getter)ctx_get_public_key, NULL, "this context's public key", NULL},
    {"blocked", (getter)ctx_get_blocked, NULL, "a burst waits for the socket to drain", NULL},
    {"closed", (getter)ctx_get_closed, NULL, "close() ran", NULL},
    {NULL}};

PyTypeObject PureCtxType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pure._core.Context",
    .tp_basicsize = sizeof(CtxObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One Pure context over one UDP socket, driven from an asyncio loop.",
    .tp_new = ctx_new,
    .tp_init = (initproc)ctx_init,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_traverse = (traverseproc)ctx_traverse,
    .tp_clear = (inquiry)ctx_clear,
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
};
