/* SPDX-License-Identifier: MIT */
/* errlist_test.c: every public function's error list in include/pure.h against the code, both
 * ways. scripts/error_lists.sh extracts, at build time, the PURE_E* codes each function's
 * comment documents (pure_error_lists.h); this test drives each function through its error
 * paths (bad arguments, closed links, full queues, forged datagrams, too-large messages, a
 * failing allocator and random source) and checks that every code returned is in that
 * function's list, that every listed code was returned at least once (or is named below as not
 * reachable from a test, with the reason), and that every function with a list was called.
 * It also checks pure_err_is_fatal's contract where a call can end a link: pure_ctx_read and
 * pure_ctx_burst_too_big return PURE_ECLOSED exactly when on_closed ran during the call. Runs
 * on the null crypto backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "link.h"
#include "pure.h"
#include "pure_error_lists.h"
#include "test.h"

#define NFN (sizeof pure_doc_error_lists / sizeof pure_doc_error_lists[0])

/* Codes a test cannot make a function return, and why. */
static const struct {
    const char *fn;
    int code;
    const char *why;
} unreachable[] = {
    {"pure_keygen", PURE_ECRYPTO, "the OS random source (getrandom) cannot be made to fail"},
    {"pure_public_key", PURE_ECRYPTO,
     "X25519 of any 32 bytes succeeds; only an internal library failure returns it"},
};

static int seen[64][PURE_DOC_MAX_CODES];
static int called[64];

static size_t fn_index(const char *fn)
{
    for (size_t i = 0; i < NFN; i++)
        if (strcmp(pure_doc_error_lists[i].fn, fn) == 0)
            return i;
    fprintf(stderr, "%s: not in pure.h's table\n", fn);
    pure_test_failures++;
    return 0;
}

/* Records what fn returned: a negative code must be one its comment in pure.h lists. */
static int64_t got(const char *fn, int64_t rc, int line)
{
    size_t f = fn_index(fn);
    const pure_doc_errors *d = &pure_doc_error_lists[f];
    called[f] = 1;
    pure_test_checks++;
    if (rc >= 0)
        return rc;
    for (int i = 0; i < d->n; i++)
        if (d->codes[i] == rc) {
            seen[f][i] = 1;
            return rc;
        }
    fprintf(stderr, "errlist_test.c:%d: %s returned %lld (%s), which pure.h does not list\n", line,
            fn, (long long)rc, pure_strerror((int)rc));
    pure_test_failures++;
    return rc;
}
#define GOT(fn, args) got(#fn, (int64_t)fn args, __LINE__)

/* ---- two endpoints on the null backend, with an allocator and a random source that fail on
 * demand ---- */

static int fail_alloc, fail_random;

static void *t_alloc(void *u, size_t n)
{
    (void)u;
    return fail_alloc ? NULL : malloc(n);
}

static void t_free(void *u, void *p, size_t n)
{
    (void)u, (void)n;
    free(p);
}

/* A failing source returns a code no function documents: a function passing it through shows. */
static int t_random(void *user, uint8_t *buf, size_t len)
{
    uint64_t *s = user;
    if (fail_random)
        return -99;
    for (size_t i = 0; i < len; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(*s >> 56);
    }
    return 0;
}

typedef struct ep {
    pure_ctx *ctx;
    pure_addr addr;
    uint64_t rng;
    pure_link *link; /* the newest link: connected, or accepted */
    int closes, in_on_closed_rc[6];
    int probe_in_on_closed;
} ep;

static int on_accept(pure_link *l, const char *service, const uint8_t key[PURE_KEY_LEN], void *u)
{
    (void)service, (void)key;
    ep *e = u;
    e->link = l;
    pure_link_set_user(l, e);
    return 0;
}

static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    (void)info;
    ep *e = user;
    if (!e)
        return; /* a link connected without a user pointer */
    e->closes++;
    if (e->probe_in_on_closed) { /* the link is gone: these calls do not apply any more */
        e->in_on_closed_rc[0] = (int)GOT(pure_link_abort, (l, 0, NULL));
        e->in_on_closed_rc[1] = (int)GOT(pure_link_pause_recv, (l));
        e->in_on_closed_rc[2] = (int)GOT(pure_link_resume_recv, (l));
        e->in_on_closed_rc[3] = (int)GOT(pure_link_set_priority, (l, 1, 0, 0));
        e->in_on_closed_rc[4] = (int)GOT(pure_link_set_queue_limit, (l, 1));
        e->in_on_closed_rc[5] = (int)GOT(pure_link_cancel, (l, 1, 0));
    }
    if (e->link == l)
        e->link = NULL;
}

static const pure_callbacks CB = {.on_accept = on_accept, .on_closed = on_closed};

static void settings_for(pure_settings *s, ep *e, uint8_t id)
{
    pure_settings_default(s);
    memset(s->private_key, id, PURE_KEY_LEN);
    s->crypto = &pure_crypto_null;
    s->allow_any = 1;
    s->callbacks = &CB;
    s->user = e;
    s->alloc = t_alloc;
    s->free = t_free;
    s->random = t_random;
    s->random_user = &e->rng;
}

static void ep_init(ep *e, uint8_t id)
{
    memset(e, 0, sizeof *e);
    pure_settings s;
    settings_for(&s, e, id);
    e->rng = id;
    e->addr.len = 6;
    e->addr.bytes[3] = id;
    CHECK_EQ(GOT(pure_ctx_new, (&s, &e->ctx)), 0);
    CHECK_EQ(GOT(pure_ctx_add_service, (e->ctx, "svc")), 0);
}

/* pure_ctx_read, checked against pure_err_is_fatal's contract: PURE_ECLOSED exactly when the
 * datagram ended a link (on_closed ran). */
static int rd(ep *to, const ep *from, uint8_t *d, size_t n, uint64_t now)
{
    int before = to->closes;
    int rc = (int)GOT(pure_ctx_read, (to->ctx, &from->addr, d, n, now));
    CHECK_EQ(pure_err_is_fatal(rc), to->closes > before);
    return rc;
}

static uint8_t wbuf[65536];

/* One burst from `from` (0 if none), its length and segment size in *seg. */
static int64_t wr(ep *from, size_t *seg, uint64_t now)
{
    pure_addr to;
    return GOT(pure_ctx_write, (from->ctx, wbuf, sizeof wbuf, seg, &to, now));
}

static void deliver(ep *from, ep *to, int64_t n, size_t seg, uint64_t now)
{
    for (int64_t off = 0; off < n; off += (int64_t)seg)
        rd(to, from, wbuf + off, (size_t)(n - off) < seg ? (size_t)(n - off) : seg, now);
}

static void pump(ep *a, ep *b, uint64_t now)
{
    for (int round = 0; round < 50; round++) {
        int moved = 0;
        ep *side[2] = {a, b};
        for (int i = 0; i < 2; i++) {
            size_t seg;
            int64_t n;
            while ((n = wr(side[i], &seg, now)) > 0) {
                deliver(side[i], side[1 - i], n, seg, now);
                moved = 1;
            }
        }
        if (!moved)
            return;
    }
}

static pure_link *connect_pair(ep *c, ep *s, uint64_t now)
{
    pure_link *l = NULL;
    CHECK_EQ(GOT(pure_connect, (c->ctx, &s->addr, pure_ctx_public_key(s->ctx), "svc", c, &l, now)),
             0);
    c->link = l;
    pump(c, s, now);
    CHECK(s->link != NULL);
    return l;
}

/* ---- the functions ---- */

static void test_keys(void)
{
    uint8_t k[PURE_KEY_LEN], pub[PURE_KEY_LEN];
    char text[45];
    CHECK_EQ(GOT(pure_keygen, (NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_keygen, (k)), 0);
    CHECK_EQ(GOT(pure_public_key, (NULL, k)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_public_key, (pub, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_public_key, (pub, k)), 0);
    pure_key_to_base64(text, pub);
    CHECK_EQ(GOT(pure_key_from_base64, (k, text)), 0);
    CHECK_EQ(GOT(pure_key_from_base64, (k, "not a key")), PURE_EINVAL);
    CHECK_EQ(GOT(pure_key_from_base64, (k, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_key_from_base64, (NULL, text)), PURE_EINVAL);
}

static void test_ctx_setup(void)
{
    ep e;
    memset(&e, 0, sizeof e);
    pure_settings s;
    pure_ctx *ctx = NULL;
    settings_for(&s, &e, 3);
    CHECK_EQ(GOT(pure_ctx_new, (NULL, &ctx)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_new, (&s, NULL)), PURE_EINVAL);
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_ctx_new, (&s, &ctx)), PURE_ENOMEM);
    fail_alloc = 0;
    fail_random = 1;
    CHECK_EQ(GOT(pure_ctx_new, (&s, &ctx)), PURE_ECRYPTO);
    fail_random = 0;
    CHECK_EQ(GOT(pure_ctx_new, (&s, &ctx)), 0);
    CHECK_EQ(GOT(pure_ctx_add_service, (ctx, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_add_service, (NULL, "x")), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_allow, (ctx, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_allow, (NULL, s.private_key)), PURE_EINVAL);
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_ctx_add_service, (ctx, "x")), PURE_ENOMEM);
    CHECK_EQ(GOT(pure_ctx_allow, (ctx, s.private_key)), PURE_ENOMEM);
    fail_alloc = 0;
    uint8_t buf[2048];
    size_t seg;
    pure_addr to;
    CHECK_EQ(GOT(pure_ctx_write, (ctx, NULL, sizeof buf, &seg, &to, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_write, (ctx, buf, 100, &seg, &to, 0)), PURE_ENOBUFS);
    CHECK_EQ(GOT(pure_ctx_write, (ctx, buf, sizeof buf, &seg, &to, 0)), 0);
    CHECK_EQ(GOT(pure_ctx_burst_too_big, (NULL, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_burst_too_big, (ctx, 0)), PURE_EINVAL); /* no burst yet */
    CHECK_EQ(GOT(pure_ctx_unreachable, (NULL, &to, PURE_UNREACH_PORT, NULL, 0, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_unreachable, (ctx, NULL, PURE_UNREACH_PORT, NULL, 0, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_unreachable, (ctx, &to, 0, NULL, 0, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_unreachable, (ctx, &to, PURE_UNREACH_FAMILY + 1, NULL, 0, 0)),
             PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_unreachable, (ctx, &to, PURE_UNREACH_PORT, NULL, 0, 0)), 0);
    pure_ctx_free(ctx);
}

static int connect_inside_walk_rc;
static int shutdown_inside_walk_rc;
static int drain_inside_walk_rc;
static int visit_connect(pure_link *l, void *user, void *arg)
{
    (void)l, (void)user;
    ep *e = arg;
    pure_link *out = NULL;
    connect_inside_walk_rc = (int)GOT(
        pure_connect, (e->ctx, &e->addr, pure_ctx_public_key(e->ctx), "svc", NULL, &out, 0));
    shutdown_inside_walk_rc = (int)GOT(pure_ctx_shutdown, (e->ctx, PURE_SHUTDOWN_ALL, 0));
    drain_inside_walk_rc = (int)GOT(pure_ctx_drain, (e->ctx, 0));
    return 1;
}

static void test_connect(void)
{
    ep c, s;
    ep_init(&c, 0x11);
    ep_init(&s, 0x12);
    uint8_t key[PURE_KEY_LEN]; /* kept past pure_ctx_free(s.ctx) */
    memcpy(key, pure_ctx_public_key(s.ctx), sizeof key);
    pure_link *l = NULL;
    CHECK_EQ(GOT(pure_connect, (NULL, &s.addr, key, "svc", NULL, &l, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_connect, (c.ctx, &s.addr, key, "", NULL, &l, 0)), PURE_EINVAL);
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_connect, (c.ctx, &s.addr, key, "svc", NULL, &l, 0)), PURE_ENOMEM);
    fail_alloc = 0;
    fail_random = 1;
    CHECK_EQ(GOT(pure_connect, (c.ctx, &s.addr, key, "svc", NULL, &l, 0)), PURE_ECRYPTO);
    fail_random = 0;
    connect_pair(&c, &s, 0);
    CHECK_EQ(GOT(pure_ctx_links, (c.ctx, visit_connect, &c)), 1);
    CHECK_EQ(connect_inside_walk_rc, PURE_ESTATE);
    CHECK_EQ(shutdown_inside_walk_rc, PURE_ESTATE);
    CHECK_EQ(drain_inside_walk_rc, PURE_ESTATE);
    CHECK_EQ(GOT(pure_ctx_drain, (NULL, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_shutdown, (NULL, PURE_SHUTDOWN_ALL, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_shutdown, (c.ctx, 0x100, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_shutdown, (c.ctx, PURE_SHUTDOWN_ALL, 0)), 0);
    pure_ctx_free(c.ctx);
    pure_ctx_free(s.ctx);

    /* max_links */
    pure_settings st;
    ep one;
    memset(&one, 0, sizeof one);
    settings_for(&st, &one, 0x13);
    st.max_links = 1;
    CHECK_EQ(GOT(pure_ctx_new, (&st, &one.ctx)), 0);
    CHECK_EQ(GOT(pure_connect, (one.ctx, &s.addr, key, "svc", NULL, &l, 0)), 0);
    CHECK_EQ(GOT(pure_connect, (one.ctx, &s.addr, key, "svc", NULL, &l, 0)), PURE_ELIMIT);
    pure_ctx_free(one.ctx);
}

static void test_link_calls(void)
{
    ep c, s;
    ep_init(&c, 0x21);
    ep_init(&s, 0x22);
    pure_link *l = NULL;
    CHECK_EQ(GOT(pure_connect, (c.ctx, &s.addr, pure_ctx_public_key(s.ctx), "svc", &c, &l, 0)), 0);
    static uint8_t big[64 << 10];
    /* channels: the table is made on first use */
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_link_set_priority, (l, 1, 0, 1)), PURE_ENOMEM);
    CHECK_EQ(GOT(pure_link_send_on, (l, 2, "x", 1)), PURE_ENOMEM);
    /* datagrams: the queue is made on first use; before the handshake they wait */
    CHECK_EQ(GOT(pure_link_send_datagram, (l, "x", 1)), PURE_ENOMEM);
    fail_alloc = 0;
    CHECK_EQ(GOT(pure_link_send_datagram, (NULL, "x", 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_datagram, (l, NULL, 1)), PURE_EINVAL);
    CHECK_EQ(pure_link_datagram_max(l), 1200 - 12 - 16 - 3);
    CHECK_EQ(GOT(pure_link_send_datagram, (l, big, pure_link_datagram_max(l) + 1)), PURE_EMSGSIZE);
    int drc = 0;
    for (int i = 0; i < 100 && drc == 0; i++)
        drc = GOT(pure_link_send_datagram, (l, big, 1000));
    CHECK_EQ(drc, PURE_EAGAIN);
    CHECK_EQ(GOT(pure_link_set_priority, (NULL, 1, 0, 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_set_priority, (l, 1, PURE_URGENCY_MAX + 1, 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_set_priority, (l, 17, 0, 1)), PURE_EINVAL); /* max_channels 16 */
    CHECK_EQ(GOT(pure_link_set_priority, (l, 1, 0, 1)), 0);
    CHECK_EQ(GOT(pure_link_send_on, (NULL, 1, "x", 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_on, (l, 1, NULL, 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_on, (l, 17, "x", 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_on, (l, 1, big, (size_t)(1u << 30) + 1)), PURE_EMSGSIZE);
    int64_t crc = 0;
    for (int i = 0; i < 1000 && crc >= 0; i++)
        crc = GOT(pure_link_send_on, (l, 1, big, sizeof big));
    CHECK_EQ(crc, PURE_EAGAIN);
    /* deadlines and cancels (cancel_test.c has their outcomes) */
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 1, big, sizeof big, 1)), PURE_EAGAIN);
    CHECK_EQ(GOT(pure_link_send_on_deadline, (NULL, 1, "x", 1, 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 0, "x", 1, 1)), PURE_EINVAL); /* no channel 0 */
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 3, big, (size_t)(1u << 30) + 1, 1)),
             PURE_EMSGSIZE);
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 3, "x", 1, 1)), PURE_ENOMEM);
    fail_alloc = 0;
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 3, "x", 1, UINT64_MAX - 1)), 0);
    CHECK_EQ(GOT(pure_link_cancel, (l, 3, 0)), PURE_ESTATE); /* the handshake runs */
    uint64_t first = 9, next = 9;
    CHECK_EQ(GOT(pure_link_channel_unacked, (NULL, 1, &first, &next)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_channel_unacked, (l, 1, &first, &next)), 0);
    CHECK_EQ(first, 0);
    CHECK(next > 0);
    CHECK_EQ(GOT(pure_link_send, (NULL, "x", 1)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send, (l, NULL, 1)), PURE_EINVAL);
    /* an empty message may come as NULL: no memcpy from NULL (UBSan's nonnull check) */
    CHECK(GOT(pure_link_send, (l, NULL, 0)) >= 0);
    CHECK(GOT(pure_link_send_on, (l, 6, NULL, 0)) >= 0);
    CHECK(GOT(pure_link_send_on_deadline, (l, 6, NULL, 0, UINT64_MAX - 1)) >= 0);
    pure_shared *empty = NULL;
    CHECK_EQ(GOT(pure_shared_copy, (c.ctx, NULL, 0, &empty)), 0);
    pure_shared_unref(empty);
    CHECK_EQ(GOT(pure_link_send, (l, big, (size_t)(1u << 30) + 1)), PURE_EMSGSIZE);
    fail_alloc = 1; /* the send buffer must grow for 64 KiB */
    CHECK_EQ(GOT(pure_link_send, (l, big, sizeof big)), PURE_ENOMEM);
    fail_alloc = 0;
    int64_t rc = 0;
    for (int i = 0; i < 1000 && rc >= 0; i++) /* nothing leaves before the handshake completes */
        rc = GOT(pure_link_send, (l, big, sizeof big));
    CHECK_EQ(rc, PURE_EAGAIN);
    CHECK(!pure_err_is_fatal((int)rc));
    c.link = l;
    pump(&c, &s, 0);
    CHECK(s.link != NULL);
    CHECK_EQ(GOT(pure_link_cancel, (NULL, 1, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_cancel, (l, 0, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_cancel, (l, 3, 1)), PURE_EINVAL);   /* never sent */
    CHECK_EQ(GOT(pure_link_cancel, (l, 3, 0)), PURE_EALREADY); /* acknowledged */
    int64_t cid = GOT(pure_link_send_on, (l, 4, "z", 1));
    CHECK(cid >= 0);
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_link_cancel, (l, 4, (uint64_t)cid)), PURE_ENOMEM);
    fail_alloc = 0;
    CHECK_EQ(GOT(pure_link_cancel, (l, 4, (uint64_t)cid)), 0);
    /* pause and resume, finish, close */
    /* a message not yet acknowledged: the close asked for below waits for it */
    CHECK(pure_link_send(l, "y", 1) >= 0);
    CHECK_EQ(GOT(pure_link_pause_recv, (NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_resume_recv, (NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_pause_recv, (l)), 0);
    CHECK_EQ(GOT(pure_link_resume_recv, (l)), 0);
    CHECK_EQ(GOT(pure_link_finish, (l)), 0);
    CHECK_EQ(GOT(pure_link_finish, (l)), PURE_ESTATE);
    rc = GOT(pure_link_send, (l, "x", 1));
    CHECK_EQ(rc, PURE_ECLOSED); /* finished: nothing more can be sent */
    CHECK_EQ(GOT(pure_link_send_on, (l, 1, "x", 1)), PURE_ECLOSED);
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 1, "x", 1, 1)), PURE_ECLOSED);
    CHECK_EQ(GOT(pure_link_send_datagram, (l, "x", 1)), 0); /* finished: datagrams still go */
    CHECK(pure_err_is_fatal((int)rc));
    CHECK_EQ(GOT(pure_link_close, (l, 5, NULL)), PURE_EINVAL); /* 1..0xff are Pure's */
    CHECK_EQ(GOT(pure_link_abort, (l, 5, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_close, (l, 0, "bye")), 0);
    CHECK_EQ(GOT(pure_link_close, (l, 0, "again")), PURE_ESTATE);
    CHECK_EQ(GOT(pure_link_send_datagram, (l, "x", 1)), PURE_ECLOSED);
    /* the responder's link: aborted, its CLOSE ends the initiator's link when read; calls from
     * on_closed find the link gone */
    c.probe_in_on_closed = 1;
    s.probe_in_on_closed = 1;
    CHECK_EQ(GOT(pure_link_abort, (s.link, PURE_CLOSE_APP, "done")), 0);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(s.in_on_closed_rc[i], PURE_ESTATE);
    CHECK_EQ(s.in_on_closed_rc[5], PURE_ECLOSED); /* the link is gone: a cancel is too late */
    int closes = c.closes, eclosed = 0;
    size_t seg;
    int64_t n;
    while ((n = wr(&s, &seg, 0)) > 0)
        for (int64_t off = 0; off < n; off += (int64_t)seg)
            eclosed += rd(&c, &s, wbuf + off, (size_t)(n - off) < seg ? (size_t)(n - off) : seg,
                          0) == PURE_ECLOSED;
    CHECK_EQ(eclosed, 1);
    CHECK_EQ(c.closes, closes + 1);
    pure_ctx_free(c.ctx);
    pure_ctx_free(s.ctx);
}

/* Every way pure_ctx_read drops a datagram, and one that ends its link. */
static int shared_released;
static void count_release(void *user, const void *data, size_t len)
{
    (void)user, (void)data, (void)len;
    shared_released++;
}

/* Shared sends, the queue limit and the queue statistics. */
static void test_shared_calls(void)
{
    ep c, s;
    ep_init(&c, 0x41);
    ep_init(&s, 0x42);
    static uint8_t big[64 << 10];
    pure_shared *sh = NULL, *bigsh = NULL, *one = NULL;
    CHECK_EQ(GOT(pure_shared_new, (NULL, big, 10, NULL, NULL, &sh)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_shared_new, (c.ctx, NULL, 10, NULL, NULL, &sh)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_shared_new, (c.ctx, big, 10, NULL, NULL, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_shared_new, (c.ctx, big, (size_t)(1u << 30) + 1, NULL, NULL, &sh)),
             PURE_EMSGSIZE);
    CHECK_EQ(GOT(pure_shared_copy, (NULL, big, 10, &sh)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_shared_copy, (c.ctx, NULL, 10, &sh)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_shared_copy, (c.ctx, big, (size_t)(1u << 30) + 1, &sh)), PURE_EMSGSIZE);
    fail_alloc = 1;
    CHECK_EQ(GOT(pure_shared_new, (c.ctx, big, 10, NULL, NULL, &sh)), PURE_ENOMEM);
    CHECK_EQ(GOT(pure_shared_copy, (c.ctx, big, 10, &sh)), PURE_ENOMEM);
    fail_alloc = 0;
    CHECK_EQ(GOT(pure_shared_new, (c.ctx, big, sizeof big, count_release, NULL, &sh)), 0);
    CHECK_EQ(GOT(pure_shared_copy, (c.ctx, "x", 1, &one)), 0);
    size_t dlen = 0;
    CHECK(pure_shared_data(sh, &dlen) == big && dlen == sizeof big);
    /* a body larger than the link's context takes: made by a context that takes more */
    {
        ep wide;
        memset(&wide, 0, sizeof wide);
        pure_settings st;
        settings_for(&st, &wide, 0x43);
        st.max_message_size = 32u << 20; /* c's: 16 MiB */
        CHECK_EQ(GOT(pure_ctx_new, (&st, &wide.ctx)), 0);
        CHECK_EQ(GOT(pure_shared_new, (wide.ctx, big, (16u << 20) + 1, NULL, NULL, &bigsh)), 0);
        pure_ctx_free(wide.ctx); /* the buffer outlives the context that made it */
    }
    pure_link *l = NULL;
    CHECK_EQ(GOT(pure_connect, (c.ctx, &s.addr, pure_ctx_public_key(s.ctx), "svc", &c, &l, 0)), 0);
    fail_alloc = 1; /* the channel table is made on first use */
    CHECK_EQ(GOT(pure_link_send_shared, (l, 1, sh)), PURE_ENOMEM);
    CHECK_EQ(GOT(pure_link_set_queue_limit, (l, 0)), PURE_ENOMEM);
    fail_alloc = 0;
    CHECK_EQ(GOT(pure_link_send_shared, (NULL, 1, sh)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_shared, (l, 1, NULL)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_shared, (l, 0, sh)), PURE_EINVAL); /* channel 0 takes none */
    CHECK_EQ(GOT(pure_link_send_shared, (l, 17, sh)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_send_shared, (l, 1, bigsh)), PURE_EMSGSIZE);
    pure_shared_unref(bigsh);
    CHECK_EQ(GOT(pure_link_set_queue_limit, (NULL, 0)), PURE_EINVAL);
    pure_queue_stats q;
    CHECK_EQ(GOT(pure_link_queue_stats, (NULL, 1, 0, &q, sizeof q)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_queue_stats, (l, 1, 0, NULL, sizeof q)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_link_queue_stats, (l, 17, 0, &q, sizeof q)), PURE_EINVAL);
    /* send_backlog (8 MiB) counts shared bytes: nothing leaves before the handshake */
    int64_t rc = 0;
    int sent = 0;
    for (int i = 0; i < 1000 && rc >= 0; i++, sent++)
        rc = GOT(pure_link_send_shared, (l, 1, sh));
    CHECK_EQ(rc, PURE_EAGAIN);
    sent--;
    CHECK_EQ(GOT(pure_link_queue_stats, (l, 1, 0, &q, sizeof q)), 0);
    CHECK_EQ(q.messages, (uint64_t)sent);
    CHECK_EQ(q.bytes, (uint64_t)sent * (4 + sizeof big));
    CHECK_EQ(q.bytes_shared, (uint64_t)sent * sizeof big);
    CHECK_EQ(q.bytes_unsent, q.bytes);
    /* the queue limit: every channel together */
    CHECK_EQ(GOT(pure_link_set_queue_limit, (l, 1000)), 0);
    CHECK_EQ(GOT(pure_link_send_shared, (l, 2, one)), PURE_EFULL);
    CHECK_EQ(GOT(pure_link_send_on, (l, 3, "x", 1)), PURE_EFULL);
    CHECK_EQ(GOT(pure_link_send_on_deadline, (l, 3, "x", 1, UINT64_MAX - 1)), PURE_EFULL);
    CHECK_EQ(GOT(pure_link_send, (l, "x", 1)), PURE_EFULL);
    CHECK(!pure_err_is_fatal(PURE_EFULL));
    CHECK_EQ(GOT(pure_link_queue_stats, (l, PURE_CHANNEL_ALL, 0, &q, sizeof q)), 0);
    CHECK_EQ(q.full, 4);
    CHECK_EQ(q.limit, 1000);
    CHECK_EQ(q.messages, (uint64_t)sent); /* channel 0 holds only its preamble */
    CHECK_EQ(GOT(pure_link_set_queue_limit, (l, 0)), 0);
    CHECK_EQ(GOT(pure_link_finish, (l)), 0);
    CHECK_EQ(GOT(pure_link_send_shared, (l, 1, one)), PURE_ECLOSED);
    pure_shared_unref(one);
    pure_shared_unref(sh);
    CHECK_EQ(shared_released, 0); /* the link still holds its references */
    pure_ctx_free(c.ctx);
    CHECK_EQ(shared_released, 1); /* freed with the link, once */
    pure_ctx_free(s.ctx);
}

static void test_read(void)
{
    ep c, s;
    ep_init(&c, 0x31);
    ep_init(&s, 0x32);
    pure_link *l = connect_pair(&c, &s, 0);
    uint8_t d[64] = {PURE_PKT_DATA0};
    CHECK_EQ(GOT(pure_ctx_read, (NULL, &c.addr, d, 1, 0)), PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_read, (s.ctx, NULL, d, 1, 0)), PURE_EINVAL);
    CHECK_EQ(rd(&s, &c, d, 0, 0), PURE_EPROTO);
    CHECK_EQ(rd(&s, &c, d, 3, 0), PURE_EPROTO);        /* too short */
    CHECK_EQ(rd(&s, &c, d, sizeof d, 0), PURE_EINVAL); /* no link with index 0 */
    /* a real packet, forged: fails authentication */
    CHECK(GOT(pure_link_send, (l, "hello", 5)) >= 0);
    size_t seg;
    int64_t n = wr(&c, &seg, 0);
    CHECK(n > 0);
    static uint8_t copy[65536];
    memcpy(copy, wbuf, (size_t)n);
    wbuf[seg - 1] ^= 1;
    CHECK_EQ(rd(&s, &c, wbuf, seg, 0), PURE_ECRYPTO);
    memcpy(wbuf, copy, (size_t)n);
    deliver(&c, &s, n, seg, 0);
    CHECK_EQ(rd(&s, &c, copy, seg, 0), PURE_EINVAL); /* again: a replay */
    pump(&c, &s, 0);
    /* the responder's link falls idle and gives its buffers back; a packet that then finds no
     * memory is dropped, the link as it was */
    uint64_t now = 0;
    for (int i = 0; i < 100 && s.link->b; i++) {
        now = pure_ctx_deadline(s.ctx);
        CHECK(now < 20ull * 1000000000);
        pure_ctx_timeout(s.ctx, now);
        pure_ctx_timeout(c.ctx, now);
        pump(&c, &s, now);
    }
    CHECK(s.link->b == NULL);
    CHECK(GOT(pure_link_send, (l, "again", 5)) >= 0);
    n = wr(&c, &seg, now);
    CHECK(n > 0);
    fail_alloc = 1;
    CHECK_EQ(rd(&s, &c, wbuf, (size_t)n < seg ? (size_t)n : seg, now), PURE_ENOMEM);
    fail_alloc = 0;
    CHECK(s.link != NULL);
    pure_ctx_free(c.ctx);
    pure_ctx_free(s.ctx);
}

/* Path MTU: the first bulk burst (1200-byte datagrams) starts a search; a probe this host refuses
 * is a lost probe, nothing more; the search finds 1472; then refused bursts step the size down
 * to 1200, and a refused burst at 1200 ends the link with PURE_ECLOSED. */
static void test_burst_too_big(void)
{
    ep c, s;
    ep_init(&c, 0x41);
    ep_init(&s, 0x42);
    pure_link *l = connect_pair(&c, &s, 0);
    static uint8_t big[16 << 10];
    pure_link_stats st;
    CHECK(GOT(pure_link_send, (l, big, sizeof big)) >= 0);
    size_t seg;
    int64_t n = wr(&c, &seg, 0);
    CHECK(n > 2 * 1200);
    CHECK_EQ(seg, 1200);
    deliver(&c, &s, n, seg, 0);
    uint64_t now = pure_ctx_deadline(s.ctx); /* the ACK's delay: room in the window */
    CHECK(now < 1000000000);
    pure_ctx_timeout(s.ctx, now);
    while ((n = wr(&s, &seg, now)) > 0)
        deliver(&s, &c, n, seg, now);
    n = wr(&c, &seg, now); /* the probe of the maximum, alone */
    CHECK_EQ(n, 1472);
    CHECK_EQ(seg, 1472);
    int closes = c.closes;
    CHECK_EQ(GOT(pure_ctx_burst_too_big, (c.ctx, now)), 0);
    CHECK_EQ(c.closes, closes);
    pure_link_stats_get(l, &st);
    CHECK_EQ(st.datagram_size, 1200);
    /* the ladder's probes go and are acknowledged, the maximum's among them */
    for (int i = 0; i < 20 && st.datagram_size != 1472; i++) {
        now += 5000000;
        pure_ctx_timeout(c.ctx, now);
        pure_ctx_timeout(s.ctx, now);
        pump(&c, &s, now);
        pure_link_stats_get(l, &st);
    }
    CHECK_EQ(st.datagram_size, 1472);
    int rc = 0, steps = 0;
    while (rc == 0 && steps < 10) {
        CHECK(GOT(pure_link_send, (l, big, sizeof big)) >= 0);
        CHECK(wr(&c, &seg, now) > 0);
        closes = c.closes;
        rc = (int)GOT(pure_ctx_burst_too_big, (c.ctx, now));
        CHECK_EQ(pure_err_is_fatal(rc), c.closes > closes);
        steps++;
    }
    CHECK_EQ(rc, PURE_ECLOSED);
    CHECK_EQ(steps, 5); /* 1452, 1400, 1280, 1200, then the end */
    pure_ctx_free(c.ctx);
    pure_ctx_free(s.ctx);
}

/* A Packet Too Big hint: taken for a link's own packet at its address, ignored otherwise. */
static void test_packet_too_big(void)
{
    ep c, s;
    ep_init(&c, 0x43);
    ep_init(&s, 0x44);
    pure_link *l = connect_pair(&c, &s, 0);
    static uint8_t big[16 << 10];
    CHECK(GOT(pure_link_send, (l, big, sizeof big)) >= 0);
    size_t seg;
    int64_t n = wr(&c, &seg, 0);
    CHECK(n > 0);
    static uint8_t quote[64];
    memcpy(quote, wbuf, sizeof quote);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (NULL, &s.addr, 1300, quote, sizeof quote, 0)),
             PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (c.ctx, NULL, 1300, quote, sizeof quote, 0)),
             PURE_EINVAL);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (c.ctx, &c.addr, 1300, quote, sizeof quote, 0)), 0);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (c.ctx, &s.addr, 1300, quote, 8, 0)), 0);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (c.ctx, &s.addr, 1100, quote, sizeof quote, 0)), 0);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (c.ctx, &s.addr, 1300, quote, sizeof quote, 0)), 1);
    CHECK_EQ(GOT(pure_ctx_packet_too_big, (c.ctx, &s.addr, 1300, quote, sizeof quote, 0)), 0);
    pure_ctx_free(c.ctx);
    pure_ctx_free(s.ctx);
}

/* Every listed code was seen (or is named unreachable) and every listed function called. */
static void test_every_documented_code_returned(void)
{
    for (size_t f = 0; f < NFN; f++) {
        const pure_doc_errors *d = &pure_doc_error_lists[f];
        if (d->n > 0 && !called[f]) {
            fprintf(stderr, "%s: documents error codes but this test never calls it\n", d->fn);
            pure_test_failures++;
        }
        for (int i = 0; i < d->n; i++) {
            int excused = 0;
            for (size_t u = 0; u < sizeof unreachable / sizeof unreachable[0]; u++)
                excused |=
                    strcmp(unreachable[u].fn, d->fn) == 0 && unreachable[u].code == d->codes[i];
            pure_test_checks++;
            if (!seen[f][i] && !excused) {
                fprintf(stderr, "%s: pure.h lists %s, never returned here\n", d->fn,
                        pure_strerror(d->codes[i]));
                pure_test_failures++;
            }
            if (seen[f][i] && excused) {
                fprintf(stderr, "%s: %d is listed as unreachable but was returned\n", d->fn,
                        d->codes[i]);
                pure_test_failures++;
            }
        }
    }
}

int main(void)
{
    RUN(test_keys);
    RUN(test_ctx_setup);
    RUN(test_connect);
    RUN(test_link_calls);
    RUN(test_shared_calls);
    RUN(test_read);
    RUN(test_burst_too_big);
    RUN(test_packet_too_big);
    RUN(test_every_documented_code_returned);
    return pure_test_finish();
}
