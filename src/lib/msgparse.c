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
}

static int reserve(pure_msgparse *m, const pure_alloc *a, uint32_t need)
{
    if (need <= m->body_cap)
        return 0;
    uint32_t cap = m->body_cap ? m->body_cap : 4096;
    while (cap < need)
        cap = cap > UINT32_MAX / 2 ? need : cap * 2;
    uint8_t *b = pure_mem_alloc(a, cap);
    if (!b)
        return PURE_ENOMEM;
    if (m->body_have)
        memcpy(b, m->body, m->body_have);
    pure_mem_free(a, m->body, m->body_cap);
    m->body = b;
    m->body_cap = cap;
    return 0;
}

int pure_msgparse_feed(pure_msgparse *m, const pure_alloc *a, const uint8_t *p, size_t n,
                       pure_msg_fn fn, void *arg)
{
    const uint8_t *end = p + n;
    if (!m->preamble_done) {
        while (p < end && m->hdr_have < 4)
            m->hdr[m->hdr_have++] = *p++;
        if (m->hdr_have < 4)
            return 0;
        if (memcmp(m->hdr, PURE_STREAM_PREAMBLE, 4) != 0)
            return PURE_EPROTO;
        m->preamble_done = 1;
        m->hdr_have = 0;
    }
    while (p < end) {
        if (!m->in_body) {
            /* Fast path: a whole message inside this piece is delivered where it lies. */
            if (m->hdr_have == 0 && end - p >= 4) {
                uint32_t len = pure_get_u32be(p);
                if (len > m->max_len)
                    return PURE_EMSGSIZE;
                if ((size_t)(end - p - 4) >= len) {
                    if (fn(arg, p + 4, len))
                        return 1;
                    p += 4 + (size_t)len;
                    continue;
                }
                m->body_len = len;
                p += 4;
            } else {
                while (p < end && m->hdr_have < 4)
                    m->hdr[m->hdr_have++] = *p++;
                if (m->hdr_have < 4)
                    return 0;
                m->body_len = pure_get_u32be(m->hdr);
                m->hdr_have = 0;
                if (m->body_len > m->max_len)
                    return PURE_EMSGSIZE;
            }
            m->in_body = 1;
            m->body_have = 0;
            if (reserve(m, a, m->body_len ? m->body_len : 1))
                return PURE_ENOMEM;
        }
        size_t take = (size_t)(m->body_len - m->body_have);
        if (take > (size_t)(end - p))
            take = (size_t)(end - p);
        memcpy(m->body + m->body_have, p, take);
        m->body_have += (uint32_t)take;
        p += take;
        if (m->body_have == m->body_len) {
            m->in_body = 0;
            if (fn(arg, m->body, m->body_len))
                return 1;
        }
    }
    return 0;
}

int pure_msgparse_at_boundary(const pure_msgparse *m)
{
    return !m->in_body && m->hdr_have == 0;
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
