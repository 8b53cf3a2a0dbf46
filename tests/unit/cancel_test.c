/* SPDX-License-Identifier: MIT */
/* cancel_test: cancel.c and chan_cancel.c, a channel's cancelled messages below the link layer.
 * Sending: locating a message by id, a cancel of a queued message (new bytes jump over it), of a
 * partly sent one (never sent again, even when a packet of it is lost), the send buffer held at it
 * until the answer and then released with its id counted, and the errors (unknown id, acknowledged,
 * twice). Receiving: ranges kept by offset, overlaps refused, the limit, answers compacted once
 * done. Deadlines: pushed in id order, pruned as acknowledged, the earliest found. */
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "chan.h"
#include "chan_cancel.h"
#include "pure.h"
#include "shared.h"
#include "test.h"

static void *t_alloc(void *u, size_t n)
{
    (void)u;
    return malloc(n);
}
static void t_free(void *u, void *p, size_t n)
{
    (void)u, (void)n;
    free(p);
}
static void *t_realloc(void *u, void *p, size_t old, size_t n)
{
    (void)u, (void)old;
    return realloc(p, n);
}
static const pure_alloc A = {t_alloc, t_free, NULL, t_realloc};

static pure_chan *chan_with(pure_chans **t, const size_t *lens, int n)
{
    static uint8_t m[8192];
    *t = pure_chans_new(&A, 4);
    pure_chan *c = pure_chans_get(*t, &A, 1, 1 << 20, 1 << 20, 1 << 20);
    c->credit.peer = 1 << 20;
    for (int i = 0; i < n; i++)
        CHECK_EQ(pure_chan_write(c, &A, m, lens[i], 1 << 20, 0), i);
    return c;
}

/* Sends up to n bytes of the channel's next run; returns where it went. */
static uint64_t send_run(pure_chan *c, uint64_t n, uint64_t *len)
{
    uint64_t off;
    int retx;
    uint64_t want = pure_chan_next_run(c, &A, &off, &retx);
    *len = want < n ? want : n;
    pure_chan_on_sent(c, &A, off, *len, retx);
    return off;
}

static void test_msg_range(void)
{
    pure_chans *t;
    const size_t lens[] = {10, 0, 300, 7};
    pure_chan *c = chan_with(&t, lens, 4);
    uint64_t s, e;
    pure_chan_msg_range(c, 0, &s, &e);
    CHECK(s == 0 && e == 14);
    pure_chan_msg_range(c, 3, &s, &e);
    CHECK(s == 14 + 4 + 304 && e == s + 11);
    pure_chan_msg_range(c, 1, &s, &e); /* backwards from the cached walk */
    CHECK(s == 14 && e == 18);
    pure_chan_msg_range(c, 2, &s, &e);
    CHECK(s == 18 && e == 322);
    pure_chans_free(t, &A, &A);
}

/* On a channel whose messages include shared bodies (pure_link_send_shared: the ring holds their
 * length prefixes but not their bytes), messages are located by stream offset all the same. The
 * merge of cancels with shared sends first read the ring by stream offset: the prefix after a
 * shared body came from the wrong place (link_fuzz found it). */
static void test_msg_range_shared(void)
{
    pure_chans *t;
    const size_t lens[] = {10};
    pure_chan *c = chan_with(&t, lens, 1);
    static uint8_t body[300];
    pure_shared *sh = pure_shared_make(&A, body, sizeof body, 0, NULL, NULL);
    CHECK(sh != NULL);
    CHECK_EQ(pure_shq_write_shared(&c->sb, &c->shq, &A, sh, 1 << 20), 0);
    c->next_msg_id++;
    pure_shared_drop(sh); /* the queue holds its own reference */
    static uint8_t m[7];
    CHECK_EQ(pure_chan_write(c, &A, m, sizeof m, 1 << 20, 0), 2);
    uint64_t s, e;
    pure_chan_msg_range(c, 1, &s, &e);
    CHECK(s == 14 && e == 14 + 4 + 300);
    pure_chan_msg_range(c, 2, &s, &e);
    CHECK(s == 318 && e == 318 + 4 + 7);
    CHECK_EQ(pure_chan_cancel(c, &A, 2, 0), 0);
    CHECK_EQ(pure_chan_cancel(c, &A, 1, 0), 0);
    pure_chans_free(t, &A, &A);
}

/* A queued message: new bytes jump over it; its bytes hold the buffer until the answer. */
static void test_cancel_queued(void)
{
    pure_chans *t;
    const size_t lens[] = {100, 5000, 100};
    pure_chan *c = chan_with(&t, lens, 3);
    uint64_t len;
    CHECK_EQ(send_run(c, 104, &len), 0);
    CHECK_EQ(pure_chan_cancel(c, &A, 1, 0), 0);
    CHECK_EQ(c->send_next, 104 + 5004); /* jumped over it */
    CHECK_EQ(send_run(c, 100000, &len), 104 + 5004);
    CHECK_EQ(len, 104);
    CHECK(!pure_chan_has_data(c));
    CHECK_EQ(pure_chan_cancel(c, &A, 1, 0), PURE_EALREADY); /* under way */
    CHECK_EQ(pure_chan_cancel(c, &A, 3, 0), PURE_EINVAL);   /* never written */
    /* everything sent is acknowledged; the buffer stops at the cancelled message */
    pure_chan_on_acked(c, &A, 0, 104);
    pure_chan_on_acked(c, &A, 5108, 104);
    CHECK_EQ(pure_chan_release_acked(c), 1);
    CHECK_EQ(c->msgs_acked, 1);
    CHECK_EQ(c->sb.base, 104);
    CHECK_EQ(pure_chan_cancel(c, &A, 0, 0), PURE_EALREADY); /* acknowledged */
    /* the answer: released, both counted */
    pure_cancel_out *o = pure_cancels_out_find(c->cx, 1);
    CHECK(o && o->owed && !o->sent && o->start == 104 && o->end == 5108);
    o->answered = 1;
    CHECK_EQ(pure_chan_cancel(c, &A, 1, 0), PURE_EALREADY); /* answered, not yet counted */
    CHECK_EQ(pure_chan_release_acked(c), 1);
    CHECK_EQ(c->msgs_acked, 3);
    CHECK_EQ(c->cx->nout, 0); /* counted: forgotten */
    CHECK_EQ(c->sb.base, c->sb.end);
    CHECK(pure_chan_quiet(c));
    pure_chan_shrink(c, &A, &A);
    CHECK(c->cx == NULL);
    pure_chans_free(t, &A, &A);
}

/* A partly sent message whose packet is lost: its bytes never go again, the rest of it never
 * goes, the message after it does. */
static void test_cancel_partly_sent(void)
{
    pure_chans *t;
    const size_t lens[] = {3000, 50};
    pure_chan *c = chan_with(&t, lens, 2);
    uint64_t len;
    CHECK_EQ(send_run(c, 1000, &len), 0);
    CHECK_EQ(pure_chan_cancel(c, &A, 0, 0), 0);
    CHECK_EQ(pure_cancels_out_find(c->cx, 0)->sent, 0);
    pure_chan_on_lost(c, &A, 0, 1000);
    CHECK_EQ(send_run(c, 100000, &len), 3004); /* not the lost bytes: the next message */
    CHECK_EQ(len, 54);
    CHECK(!pure_chan_has_data(c));
    /* a message sent whole can be cancelled too (the peer may have it: sent = 1) */
    pure_chans_free(t, &A, &A);
    const size_t one[] = {10};
    c = chan_with(&t, one, 1);
    send_run(c, 100, &len);
    CHECK_EQ(pure_chan_cancel(c, &A, 0, PURE_CANCELLED_DEADLINE), 0);
    pure_cancel_out *o = pure_cancels_out_find(c->cx, 0);
    CHECK(o && o->sent && o->flags == PURE_CANCELLED_DEADLINE);
    pure_chan_on_lost(c, &A, 0, 14);
    CHECK(send_run(c, 100, &len) == 14 && len == 0); /* nothing to send again */
    pure_chans_free(t, &A, &A);
}

static void test_in_ranges(void)
{
    pure_cancels x;
    memset(&x, 0, sizeof x);
    int err = 0;
    pure_cancel_in a = {.start = 100, .end = 200, .id = 5, .skip = 1, .reply = PURE_REPLY_OWED};
    pure_cancel_in b = {.start = 20, .end = 40, .id = 2, .skip = 1, .reply = PURE_REPLY_OWED};
    pure_cancel_in over = {.start = 150, .end = 250, .id = 6, .skip = 1};
    CHECK(pure_cancels_in_add(&x, &A, &a, PURE_CANCEL_IN_MAX, &err) != NULL);
    CHECK(pure_cancels_in_add(&x, &A, &b, PURE_CANCEL_IN_MAX, &err) != NULL);
    CHECK(pure_cancels_in_add(&x, &A, &over, PURE_CANCEL_IN_MAX, &err) == NULL);
    CHECK_EQ(err, PURE_EPROTO);
    CHECK_EQ(pure_cancels_next_skip(&x), 20);
    CHECK(pure_cancels_in_find(&x, 5) && pure_cancels_in_find(&x, 5)->start == 100);
    CHECK(pure_cancels_in_find(&x, 6) == NULL);
    x.in[0].skip = 0; /* skipped, answer still owed: kept */
    pure_cancels_in_compact(&x);
    CHECK_EQ(x.nin, 2);
    CHECK_EQ(pure_cancels_next_skip(&x), 100);
    x.in[0].reply = PURE_REPLY_DONE; /* and answered: gone */
    pure_cancels_in_compact(&x);
    CHECK_EQ(x.nin, 1);
    CHECK_EQ(x.in[0].id, 5);
    /* the limit */
    for (uint32_t i = 0; x.nin < PURE_CANCEL_IN_MAX; i++) {
        pure_cancel_in e = {.start = 1000 + i * 10, .end = 1008 + i * 10, .id = 10 + i, .skip = 1};
        CHECK(pure_cancels_in_add(&x, &A, &e, PURE_CANCEL_IN_MAX, &err) != NULL);
    }
    pure_cancel_in more = {.start = 1ull << 40, .end = (1ull << 40) + 8, .id = 1ull << 30};
    CHECK(pure_cancels_in_add(&x, &A, &more, PURE_CANCEL_IN_MAX, &err) == NULL);
    CHECK_EQ(err, PURE_EAGAIN);
    more.start = 10; /* the one at the in-order point is never refused */
    more.end = 18;
    CHECK(pure_cancels_in_add(&x, &A, &more, UINT32_MAX, &err) != NULL);
    free(x.in);
}

static void test_deadlines(void)
{
    pure_cancels x;
    memset(&x, 0, sizeof x);
    CHECK_EQ(pure_cancels_dl_min(&x), UINT64_MAX);
    for (uint64_t id = 0; id < 100; id++) {
        CHECK_EQ(pure_cancels_dl_reserve(&x, &A), 0);
        pure_cancels_dl_push(&x, id, 1000 - id);
    }
    CHECK_EQ(pure_cancels_dl_min(&x), 901);
    pure_cancels_dl_prune(&x, 50);
    CHECK_EQ(x.ndl, 50);
    CHECK_EQ(x.dl[x.head].id, 50);
    CHECK_EQ(pure_cancels_dl_min(&x), 901);
    uint32_t cap = x.capdl;
    for (uint64_t id = 100; id < 150; id++) { /* slides the live ones down: no growth */
        CHECK_EQ(pure_cancels_dl_reserve(&x, &A), 0);
        pure_cancels_dl_push(&x, id, 5000);
    }
    CHECK_EQ(x.capdl, cap);
    CHECK_EQ(x.ndl, 100);
    pure_cancels_dl_prune(&x, 1000);
    CHECK_EQ(x.ndl, 0);
    CHECK_EQ(x.head, 0);
    CHECK_EQ(pure_cancels_dl_min(&x), UINT64_MAX);
    free(x.dl);
}

int main(void)
{
    RUN(test_msg_range);
    RUN(test_msg_range_shared);
    RUN(test_cancel_queued);
    RUN(test_cancel_partly_sent);
    RUN(test_in_ranges);
    RUN(test_deadlines);
    return pure_test_finish();
}
