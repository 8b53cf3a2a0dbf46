/* SPDX-License-Identifier: MIT */
/* module.c: pure._core: keys, error codes and the Context and Link types. */
#include <stdarg.h>

#include "core.h"

static PyObject *error_classes; /* dict: code -> exception class, set by pure._errors */
static PyObject *error_base;

PyObject *pyp_raise(int code)
{
    PyObject *cls = NULL, *key = PyLong_FromLong(code);
    if (error_classes && key)
        cls = PyDict_GetItemWithError(error_classes, key); /* borrowed */
    Py_XDECREF(key);
    PyErr_Clear();
    if (!cls)
        cls = error_base ? error_base : PyExc_RuntimeError;
    PyObject *e = Py_BuildValue("(is)", code, pure_strerror(code));
    if (e) {
        PyErr_SetObject(cls, e);
        Py_DECREF(e);
    }
    return NULL;
}

PyObject *pyp_raise_as(const char *kind, int code, const char *fmt, ...)
{
    PyObject *cls = NULL;
    if (error_classes) {
        cls = PyDict_GetItemString(error_classes, kind); /* borrowed; NULL if none */
        if (!cls) {
            PyObject *key = PyLong_FromLong(code);
            if (key)
                cls = PyDict_GetItemWithError(error_classes, key);
            Py_XDECREF(key);
        }
    }
    PyErr_Clear();
    if (!cls)
        cls = error_base ? error_base : PyExc_RuntimeError;
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    PyObject *e = msg ? Py_BuildValue("(iN)", code, msg) : NULL;
    if (e) {
        PyErr_SetObject(cls, e);
        Py_DECREF(e);
    }
    return NULL;
}

static PyObject *m_set_errors(PyObject *self, PyObject *args)
{
    PyObject *base, *map;
    if (!PyArg_ParseTuple(args, "OO!", &base, &PyDict_Type, &map))
        return NULL;
    Py_INCREF(base);
    Py_XSETREF(error_base, base);
    Py_INCREF(map);
    Py_XSETREF(error_classes, map);
    Py_RETURN_NONE;
}

static PyObject *m_keygen(PyObject *self, PyObject *unused)
{
    uint8_t k[PURE_KEY_LEN];
    int rc = pure_keygen(k);
    if (rc)
        return pyp_raise(rc);
    return PyBytes_FromStringAndSize((const char *)k, PURE_KEY_LEN);
}

static PyObject *m_public_key(PyObject *self, PyObject *arg)
{
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) != PURE_KEY_LEN) {
        PyErr_SetString(PyExc_ValueError, "a private key is 32 bytes");
        return NULL;
    }
    uint8_t pub[PURE_KEY_LEN];
    int rc = pure_public_key(pub, (const uint8_t *)PyBytes_AS_STRING(arg));
    if (rc)
        return pyp_raise(rc);
    return PyBytes_FromStringAndSize((const char *)pub, PURE_KEY_LEN);
}

static PyObject *m_strerror(PyObject *self, PyObject *arg)
{
    long c = PyLong_AsLong(arg);
    if (c == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(pure_strerror((int)c));
}

static PyObject *m_now(PyObject *self, PyObject *unused)
{
    return PyFloat_FromDouble((double)pure_now() / 1e9);
}

static PyMethodDef methods[] = {
    {"_set_errors", m_set_errors, METH_VARARGS, NULL},
    {"keygen", m_keygen, METH_NOARGS, "A new X25519 private key (32 bytes)."},
    {"public_key", m_public_key, METH_O, "The public key of a private key (32 bytes each)."},
    {"strerror", m_strerror, METH_O, "pure_strerror(code)"},
    {"now", m_now, METH_NOARGS, "pure_now() in seconds (CLOCK_MONOTONIC, as loop.time())"},
    {NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "pure._core",
                                    "C half of the pure package: Pure's core on asyncio's thread.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&PureCtxType) < 0 || PyType_Ready(&PureLinkType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    Py_INCREF(&PureCtxType);
    Py_INCREF(&PureLinkType);
    if (PyModule_AddObject(m, "Context", (PyObject *)&PureCtxType) ||
        PyModule_AddObject(m, "Link", (PyObject *)&PureLinkType) ||
        PyModule_AddStringConstant(m, "PURE_VERSION", pure_version()) ||
        PyModule_AddIntConstant(m, "MAX_CHANNELS", PURE_MAX_CHANNELS) ||
        PyModule_AddIntConstant(m, "URGENCY_MAX", PURE_URGENCY_MAX) ||
        PyModule_AddIntConstant(m, "DATAGRAM_QUEUE", PURE_DATAGRAM_QUEUE))
        return NULL;
    static const struct {
        const char *n;
        int v;
    } codes[] = {{"EINVAL", PURE_EINVAL},       {"ENOMEM", PURE_ENOMEM},
                 {"EAGAIN", PURE_EAGAIN},       {"ECRYPTO", PURE_ECRYPTO},
                 {"EPROTO", PURE_EPROTO},       {"ECLOSED", PURE_ECLOSED},
                 {"ETIMEDOUT", PURE_ETIMEDOUT}, {"EREFUSED", PURE_EREFUSED},
                 {"EACCES", PURE_EACCES},       {"EKEY", PURE_EKEY},
                 {"EMSGSIZE", PURE_EMSGSIZE},   {"ENOBUFS", PURE_ENOBUFS},
                 {"ELIMIT", PURE_ELIMIT},       {"ESTATE", PURE_ESTATE},
                 {"EFLOW", PURE_EFLOW},         {"EIO", PURE_EIO},
                 {"ERESET", PURE_ERESET},       {"EUNREACH", PURE_EUNREACH},
                 {"ENOTPURE", PURE_ENOTPURE},   {"EMOVED", PURE_EMOVED},
                 {"EVERSION", PURE_EVERSION},   {"EFULL", PURE_EFULL},
                 {"EALREADY", PURE_EALREADY}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (PyModule_AddIntConstant(m, codes[i].n, codes[i].v))
            return NULL;
    return m;
}
