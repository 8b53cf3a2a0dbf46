/* SPDX-License-Identifier: MIT */
#include "msgparse.h"

#include <string.h>

#include "pure.h"
#include "varint.h"
#include "wire.h"

void pure_msgparse_init(pure_msgparse *m, uint32_t max_len)
{
    memset(m, 0, sizeof *m);
    m->max_len = max_len;
    m->cap_limit = UINT32_MAX;
}

/* The size a buffer of `cap` bytes grows to so it holds `need` bytes of a message of `len`:
 * doubling (from PURE_MSGPARSE_MIN), never past len. Doubling keeps the copies linear in the
 * message's size; the cap at len means a buffer is at most twice what arrived, and never more than
 * the message. */
static uint32_t grown(uint32_t cap, uint32_t need, uint32_t len)
{
    uint64_t c = (uint64_t)cap * 2;
    if (c < PURE_MSGPARSE_MIN)
        c = PURE_MSGPARSE_MIN;
    while (c < need)
        c *= 2;
    return c > len ? len : (uint32_t)c;
}

/* Makes the buffer hold at least `need` bytes of the current message, as far as cap_limit allows.
 * Returns 0, PURE_EAGAIN (the limit allows less: the buffer grew as far as it may) or
 * PURE_ENOMEM. */
static int reserve(pure_msgparse *m, const pure_alloc *a, uint32_t need)
{
    if (need <= m->body_cap)
        return 0;
    uint32_t cap = grown(m->body_cap, need, m->body_len);
    int rc = 0;
    if (cap > m->cap_limit) {
        cap = m->cap_limit;
        if (need > cap)
            rc = PURE_EAGAIN;
        if (cap <= m->body_cap)
            return rc;
    }
    uint8_t *b = pure_mem_realloc(a, m->body, m->body_cap, cap);
    if (!b)
        return PURE_ENOMEM;
    m->body = b;
    m->body_cap = cap;
    return rc;
}

int pure_msgparse_feed(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                       pure_msg_fn fn, void *arg)
{
    return pure_msgparse_feed_inline(m, a, p, n, fn, arg);
}

int pure_msgparse_feed_slow(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                            pure_msg_fn fn, void *arg)
{
    const uint8_t *end = p + n;
    m->unfed = 0;
    if (!m->preamble_done) {
        while (p < end && m->hdr_have < 4)
            m->hdr[m->hdr_have++] = *p++;
        if (m->hdr_have < 4)
            return 0;
        if (memcmp(m->hdr, PURE_STREAM_PREAMBLE, 4) != 0)
            return PURE_EPROTO;
        m->preamble_done = 1;
        m->hdr_have = 0;
        goto boundary;
    }
    while (p < end) {
        if (!m->in_body) {
            if (m->hdr_have == 0 && end - p >= 4) {
                /* at a boundary: the fast path left this message, which is not whole here (or
                 * whose length is over max_len) */
                m->body_len = pure_get_u32be(p);
                p += 4;
            } else {
                while (p < end && m->hdr_have < 4)
                    m->hdr[m->hdr_have++] = *p++;
                if (m->hdr_have < 4)
                    return 0;
                m->body_len = pure_get_u32be(m->hdr);
                m->hdr_have = 0;
            }
            if (m->body_len > m->max_len)
                return PURE_EMSGSIZE;
            m->in_body = 1;
            m->body_have = 0;
        }
        /* Only the bytes in hand are given room: an announced length costs nothing by itself. */
        size_t take = (size_t)(m->body_len - m->body_have);
        if (take > (size_t)(end - p))
            take = (size_t)(end - p);
        int rc = 0;
        if (take) {
            rc = reserve(m, a, m->body_have + (uint32_t)take);
            if (rc == PURE_ENOMEM) {
                m->unfed = (size_t)(end - p); /* none of it taken: fed again later */
                return rc;
            }
            if (rc == PURE_EAGAIN && take > m->body_cap - m->body_have)
                take = m->body_cap - m->body_have;
            if (take)
                memcpy(m->body + m->body_have, p, take);
            m->body_have += (uint32_t)take;
            p += take;
            if (rc == PURE_EAGAIN) {
                m->unfed = (size_t)(end - p);
                return rc;
            }
        }
        if (m->body_have == m->body_len) {
            m->in_body = 0;
            int stop = fn(arg, m->body_len ? m->body : (const uint8_t *)"", m->body_len);
            if (m->body_cap > PURE_MSGPARSE_KEEP) /* a big message is gone: so is its memory */
                pure_msgparse_free(m, a);
            if (stop) {
                m->unfed = (size_t)(end - p);
                return 1;
            }
            goto boundary;
        }
    }
    return 0;
boundary: /* whole messages may follow: back to the fast path with what is left */
    if (p == end)
        return 0;
    m->unfed = (size_t)(end - p);
    return PURE_MSGPARSE_AT_BOUNDARY;
}

void pure_msgparse_abandon(pure_msgparse *m)
{
    m->hdr_have = 0;
    m->in_body = 0;
    m->body_len = 0;
    m->body_have = 0;
    m->unfed = 0;
}

int pure_msgparse_at_boundary(const pure_msgparse *m)
{
    return !m->in_body && m->hdr_have == 0;
}

int pure_msgparse_wants_memory(const pure_msgparse *m)
{
    return m->in_body && m->body_cap < m->body_len;
}

void pure_msgparse_shrink(pure_msgparse *m, const pure_alloc *a)
{
    if (!m->in_body && m->body) {
        pure_mem_free(a, m->body, m->body_cap);
        m->body = NULL;
        m->body_cap = 0;
    }
}

void pure_msgparse_free(pure_msgparse *m, const pure_alloc *a)
{
    pure_mem_free(a, m->body, m->body_cap);
    m->body = NULL;
    m->body_cap = 0;
}
