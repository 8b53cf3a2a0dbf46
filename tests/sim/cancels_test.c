/* SPDX-License-Identifier: MIT */
/* cancels_test: cancels and deadlines of channel messages in the simulator (pure_link_cancel,
 * pure_link_send_on_deadline). Every scenario checks both sides' accounting: the server sees each
 * id of each channel exactly once and in order, either delivered whole (its bytes checked) or
 * reported cancelled, never part of one; the client's on_channel_cancelled(SENT) names exactly
 * the ids the server reported cancelled, none of them after on_channel_acked covered it, and
 * on_channel_acked ends covering every id. Scenarios: a queued message never sent; a huge
 * message cut while partly sent (the rest of the channel flows on); cancels racing the
 * acknowledgement of a message whose bytes are all in flight (both outcomes reached, under loss
 * too); deadlines expiring under loss (no timer left once all is settled); the API's errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "registry.h"
#include "sim.h"
#include "test.h"
#include "tparams.h"

#define NCH 4
#define MAXID 4096

enum {
    NONE = 0,
    DELIVERED = 1,
    CANCELLED = 2
};

typedef struct cx {
    sim *s;
    int cli, srv;
    pure_link *cl, *sl;
    uint64_t sent[NCH];     /* the client's ids per channel */
    uint64_t srv_next[NCH]; /* the server: the next id it expects (delivered or cancelled) */
    uint8_t srv_fate[NCH][MAXID];
    uint8_t cli_cancelled[NCH][MAXID];
    uint8_t cli_deadline[NCH][MAXID]; /* the cancel came with PURE_CANCELLED_DEADLINE */
    uint64_t acked[NCH];              /* on_channel_acked: last id + 1 */
    uint64_t bad;                     /* any broken rule */
    uint64_t srv_cancels, cli_cancels;
    uint64_t abort_at;         /* the server aborts once channel 1 reaches this id (0: no) */
    int closed;                /* the client's on_closed ran */
    int srv_error, srv_closed; /* the server's on_closed */
    int cli_error;             /* the client's */
    uint64_t close_first[NCH], close_next[NCH];
} cx;

static void fill(uint8_t *m, size_t len, uint32_t ch, uint64_t id)
{
    memcpy(m, &id, 8);
    for (size_t i = 8; i < len; i++)
        m[i] = (uint8_t)(id * 31 + i + ch * 7);
}

static void on_channel_message(pure_link *l, void *user, uint32_t ch, const uint8_t *d, size_t len)
{
    cx *c = user;
    uint64_t id;
    if (l != c->sl || ch >= NCH || len < 8) {
        c->bad++;
        return;
    }
    memcpy(&id, d, 8);
    for (size_t i = 8; i < len; i++)
        if (d[i] != (uint8_t)(id * 31 + i + ch * 7)) {
            c->bad++; /* a partial or mixed message */
            break;
        }
    if (id != c->srv_next[ch] || id >= MAXID) {
        c->bad++;
        return;
    }
    c->srv_fate[ch][id] = DELIVERED;
    c->srv_next[ch]++;
    if (ch == 1 && c->abort_at && c->srv_next[1] == c->abort_at)
        pure_link_abort(l, PURE_CLOSE_APP, "enough");
}

static void on_channel_cancelled(pure_link *l, void *user, uint32_t ch, uint64_t id, uint32_t flags)
{
    cx *c = user;
    if (ch >= NCH || id >= MAXID) {
        c->bad++;
        return;
    }
    if (l == c->sl) { /* the peer's message: in its place in the order, once */
        if (flags != 0 || id != c->srv_next[ch])
            c->bad++;
        c->srv_fate[ch][id] = CANCELLED;
        c->srv_next[ch]++;
        c->srv_cancels++;
    } else { /* ours: before any acknowledgement covers it, once */
        if (!(flags & PURE_CANCELLED_SENT) || id < c->acked[ch] || c->cli_cancelled[ch][id])
            c->bad++;
        c->cli_cancelled[ch][id] = 1;
        c->cli_deadline[ch][id] = (flags & PURE_CANCELLED_DEADLINE) != 0;
        c->cli_cancels++;
    }
}

static void on_channel_acked(pure_link *l, void *user, uint32_t ch, uint64_t through)
{
    cx *c = user;
    if (l != c->cl || ch >= NCH || through + 1 <= c->acked[ch])
        c->bad++;
    else
        c->acked[ch] = through + 1;
}

static int on_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    (void)svc, (void)key;
    cx *c = user;
    c->sl = l;
    pure_link_set_user(l, c);
    return 0;
}

static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    (void)info;
    cx *c = user;
    if (c && l == c->cl) {
        c->closed = 1;
        c->cli_error = info->error;
        for (uint32_t ch = 0; ch < NCH; ch++)
            pure_link_channel_unacked(l, ch, &c->close_first[ch], &c->close_next[ch]);
        c->cl = NULL;
    }
    if (c && l == c->sl) {
        c->srv_error = info->error;
        c->srv_closed = 1;
        c->sl = NULL;
    }
}

static const pure_callbacks CB = {.on_accept = on_accept,
                                  .on_closed = on_closed,
                                  .on_channel_message = on_channel_message,
                                  .on_channel_acked = on_channel_acked,
                                  .on_channel_cancelled = on_channel_cancelled};

static int srv_no_cancel; /* the server announces channels but not cancels (an older peer) */
static uint32_t cli_max_channels = 16; /* the client's (the server takes 16) */

static cx *cx_new(uint64_t seed, const sim_path *p, int connect_now)
{
    cx *c = calloc(1, sizeof *c);
    c->s = sim_new(seed);
    for (int server = 0; server < 2; server++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &CB;
        st.user = c;
        st.allow_any = 1;
        st.send_queue = 0; /* megabytes may wait unsent (the queued cases) */
        if (!server)
            st.max_channels = cli_max_channels;
        int ep = sim_add(c->s, &st);
        if (server && srv_no_cancel) {
            pure_test_wire tw = {.set_announce = 1,
                                 .announce = {.max_channels = 16,
                                              .max_datagram_size = 65535,
                                              .features = PURE_TP_F_ECN}};
            pure_test_set_wire(sim_ctx(c->s, ep), &tw);
        }
        if (server) {
            c->srv = ep;
            pure_ctx_add_service(sim_ctx(c->s, ep), "svc");
        } else {
            c->cli = ep;
        }
    }
    sim_set_path(c->s, c->cli, c->srv, p);
    sim_set_path(c->s, c->srv, c->cli, p);
    pure_addr to = sim_addr(c->s, c->srv);
    pure_connect(sim_ctx(c->s, c->cli), &to, pure_ctx_public_key(sim_ctx(c->s, c->srv)), "svc", c,
                 &c->cl, 0);
    if (connect_now)
        sim_run(c->s, NULL, NULL, 3 * SIM_S);
    return c;
}

static int64_t send_msg(cx *c, uint32_t ch, size_t len, uint64_t deadline)
{
    static uint8_t m[8 << 20];
    fill(m, len, ch, c->sent[ch]);
    int64_t id = deadline ? pure_link_send_on_deadline(c->cl, ch, m, len, deadline)
                          : pure_link_send_on(c->cl, ch, m, len);
    if (id >= 0) {
        if ((uint64_t)id != c->sent[ch])
            c->bad++;
        c->sent[ch]++;
    }
    return id;
}

/* Both sides agree on every id of every channel, and everything is settled. */
static void check_accounts(cx *c)
{
    CHECK_EQ(c->bad, 0);
    for (int ch = 1; ch < NCH; ch++) {
        CHECK_EQ(c->srv_next[ch], c->sent[ch]);
        CHECK_EQ(c->acked[ch], c->sent[ch]);
        uint64_t first = 0, next = 0;
        CHECK_EQ(pure_link_channel_unacked(c->cl, (uint32_t)ch, &first, &next), 0);
        CHECK_EQ(first, c->sent[ch]);
        CHECK_EQ(next, c->sent[ch]);
        for (uint64_t id = 0; id < c->sent[ch] && id < MAXID; id++)
            if ((c->srv_fate[ch][id] == CANCELLED) != c->cli_cancelled[ch][id]) {
                printf("channel %d id %llu: server %d, client cancelled %d\n", ch,
                       (unsigned long long)id, c->srv_fate[ch][id], c->cli_cancelled[ch][id]);
                pure_test_failures++;
            }
    }
    CHECK_EQ(c->srv_cancels, c->cli_cancels);
}

/* A message queued behind another that has not gone yet: cancelled before any of it is sent,
 * it never crosses the network, and the messages after it arrive. */
static void test_cancel_queued(void)
{
    sim_path p = {.delay = 10 * SIM_MS, .bandwidth = 100000000};
    cx *c = cx_new(1, &p, 1);
    CHECK(c->cl && c->sl);
    CHECK_EQ(send_msg(c, 1, 100, 0), 0);
    CHECK_EQ(send_msg(c, 1, 4 << 20, 0), 1); /* not a byte of it has gone */
    for (int i = 0; i < 5; i++)
        send_msg(c, 1, 300, 0);
    uint64_t before = sim_bytes(c->s, c->cli, c->srv);
    CHECK_EQ(pure_link_cancel(c->cl, 1, 1), 0);
    CHECK_EQ(pure_link_cancel(c->cl, 1, 1), PURE_EALREADY); /* under way */
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 2 * SIM_S);
    CHECK(sim_bytes(c->s, c->cli, c->srv) - before < 100000); /* the 4 MiB never went */
    CHECK_EQ(c->srv_fate[1][0], DELIVERED);
    CHECK_EQ(c->srv_fate[1][1], CANCELLED);
    CHECK_EQ(c->cli_cancelled[1][1], 1);
    CHECK_EQ(c->srv_fate[1][6], DELIVERED);
    CHECK_EQ(pure_link_cancel(c->cl, 1, 0), PURE_EALREADY); /* acknowledged */
    CHECK_EQ(pure_link_cancel(c->cl, 1, 1), PURE_EALREADY); /* cancelled and counted */
    check_accounts(c);
    sim_free(c->s);
    free(c);
}

/* A huge message cut while partly sent, under loss: the receiver drops what it assembled (no
 * partial delivery), the rest of it never goes, and the channel's later messages and another
 * channel's arrive whole. */
static void test_cancel_partly_sent(void)
{
    sim_path p = {.delay = 10 * SIM_MS, .bandwidth = 100000000, .loss = 0.02};
    cx *c = cx_new(2, &p, 1);
    CHECK(c->cl && c->sl);
    send_msg(c, 2, 6 << 20, 0);
    for (int i = 0; i < 20; i++) {
        send_msg(c, 2, 1000 + (size_t)i * 500, 0);
        send_msg(c, 3, 2000, 0);
    }
    uint64_t before = sim_bytes(c->s, c->cli, c->srv);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 150 * SIM_MS);
    uint64_t partway = sim_bytes(c->s, c->cli, c->srv) - before;
    CHECK(partway > 100000 && partway < (5u << 20)); /* part of it went */
    CHECK_EQ(pure_link_cancel(c->cl, 2, 0), 0);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 5 * SIM_S);
    CHECK(sim_bytes(c->s, c->cli, c->srv) - before < (6u << 20));
    CHECK_EQ(c->srv_fate[2][0], CANCELLED);
    CHECK_EQ(c->cli_cancelled[2][0], 1);
    check_accounts(c);
    sim_free(c->s);
    free(c);
}

/* Cancels racing acknowledgements: a message whose bytes are all sent is cancelled at every
 * moment of its round trip, on a clean path and a lossy one. Early, the cancel wins (the
 * receiver had not all of it); late, the receiver had delivered it: the delivery stands, no
 * cancel is reported on either side, and the acknowledgement covers it. Both outcomes must
 * occur, and every time both sides agree. */
static void test_cancel_races(void)
{
    for (int lossy = 0; lossy < 2; lossy++) {
        sim_path p = {.delay = 10 * SIM_MS,
                      .jitter = lossy ? 2 * SIM_MS : 0,
                      .loss = lossy ? 0.15 : 0,
                      .duplicate = lossy ? 0.02 : 0,
                      .reorder = lossy ? 0.05 : 0,
                      .reorder_delay = 3 * SIM_MS};
        cx *c = cx_new(3 + (uint64_t)lossy, &p, 1);
        CHECK(c->cl && c->sl);
        uint64_t won = 0, lost_race = 0, too_late = 0;
        for (int k = 0; k < 200 && c->cl; k++) {
            uint32_t ch = 1 + (uint32_t)(k % 3);
            int64_t id = send_msg(c, ch, 200 + (size_t)(k * 37) % 3000, 0);
            /* the packet leaves at once; its ACK returns ~20 ms later */
            sim_run(c->s, NULL, NULL, sim_now(c->s) + (uint64_t)(k % 25) * SIM_MS);
            int rc = pure_link_cancel(c->cl, ch, (uint64_t)id);
            if (rc == PURE_EALREADY)
                too_late++;
            else if (rc != 0)
                c->bad++;
            sim_run(c->s, NULL, NULL, sim_now(c->s) + (uint64_t)(k % 7) * SIM_MS);
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 10 * SIM_S);
        for (int ch = 1; ch < NCH; ch++)
            for (uint64_t id = 0; id < c->sent[ch]; id++)
                if (c->cli_cancelled[ch][id])
                    won++;
        lost_race = 200 - won - too_late; /* cancel returned 0 but the delivery stood */
        printf("lossy %d: cancel won %llu, delivered first %llu, acknowledged first %llu\n", lossy,
               (unsigned long long)won, (unsigned long long)lost_race,
               (unsigned long long)too_late);
        CHECK(won > 0);
        CHECK(lost_race > 0);
        CHECK(too_late > 0);
        check_accounts(c);
        sim_free(c->s);
        free(c);
    }
}

/* Deadlines under loss: messages with a deadline a few round trips away on a lossy, slow path;
 * those not acknowledged in time are cancelled (reported with PURE_CANCELLED_DEADLINE on this
 * side), the rest delivered; accounts agree; and once everything settled the link keeps no
 * timer for them (an idle link has none at all). */
static void test_deadline_under_loss(void)
{
    sim_path p = {.delay = 20 * SIM_MS, .bandwidth = 20000000, .loss = 0.2};
    cx *c = cx_new(5, &p, 1);
    CHECK(c->cl && c->sl);
    for (int k = 0; k < 300 && c->cl; k++) {
        uint32_t ch = 1 + (uint32_t)(k % 2);
        send_msg(c, ch, 500 + (size_t)(k * 101) % 20000, sim_now(c->s) + 80 * SIM_MS);
        if (k % 10 == 0)
            send_msg(c, 3, 1000, 0); /* no deadline: always delivered */
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 3 * SIM_MS);
    }
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 10 * SIM_S);
    uint64_t expired = 0;
    for (int ch = 1; ch < NCH; ch++)
        for (uint64_t id = 0; id < c->sent[ch]; id++) {
            if (c->cli_cancelled[ch][id] && !c->cli_deadline[ch][id])
                c->bad++;
            expired += c->cli_cancelled[ch][id];
        }
    printf("%llu of %llu messages missed their deadline\n", (unsigned long long)expired,
           (unsigned long long)(c->sent[1] + c->sent[2]));
    CHECK(expired > 0);
    CHECK(expired < c->sent[1] + c->sent[2]);
    for (uint64_t id = 0; id < c->sent[3]; id++)
        CHECK_EQ(c->srv_fate[3][id], DELIVERED);
    check_accounts(c);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 60 * SIM_S);
    CHECK(c->cl != NULL);
    CHECK_EQ(pure_ctx_deadline(sim_ctx(c->s, c->cli)), UINT64_MAX);
    sim_free(c->s);
    free(c);
}

/* A deadline met: the message is acknowledged in time, nothing is cancelled, and its deadline
 * leaves no timer behind. */
static void test_deadline_met(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    cx *c = cx_new(6, &p, 1);
    CHECK(c->cl && c->sl);
    for (int i = 0; i < 10; i++)
        send_msg(c, 1, 100, sim_now(c->s) + SIM_S);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 3 * SIM_S);
    CHECK_EQ(c->cli_cancels, 0);
    check_accounts(c);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + 60 * SIM_S);
    CHECK_EQ(pure_ctx_deadline(sim_ctx(c->s, c->cli)), UINT64_MAX);
    sim_free(c->s);
    free(c);
}

/* The peer closes while cancels are under way: on_closed's ids per channel stay exact. Below
 * first_unacked every id was delivered or reported cancelled, as the server saw it; from it on
 * none was delivered (those the client reported cancelled were not either). */
static void test_close_with_cancels(void)
{
    for (int lossy = 0; lossy < 2; lossy++) {
        sim_path p = {.delay = 10 * SIM_MS, .loss = lossy ? 0.1 : 0};
        cx *c = cx_new(9 + (uint64_t)lossy, &p, 1);
        CHECK(c->cl && c->sl);
        c->abort_at = 25;
        for (int i = 0; i < 60; i++) {
            send_msg(c, 1, 3000, 0);
            send_msg(c, 2, 500, 0);
        }
        for (uint64_t id = 5; id < 60; id += 3) {
            sim_run(c->s, NULL, NULL, sim_now(c->s) + 2 * SIM_MS);
            if (c->cl) {
                int rc = pure_link_cancel(c->cl, 1, id);
                CHECK(rc == 0 || rc == PURE_EALREADY);
                rc = pure_link_cancel(c->cl, 2, id);
                CHECK(rc == 0 || rc == PURE_EALREADY);
            }
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 10 * SIM_S);
        CHECK(c->closed);
        CHECK_EQ(c->bad, 0);
        for (int ch = 1; ch <= 2; ch++) {
            CHECK_EQ(c->close_next[ch], 60);
            for (uint64_t id = 0; id < 60; id++) {
                if (id < c->close_first[ch]) {
                    CHECK(c->srv_fate[ch][id] != NONE);
                    CHECK_EQ(c->srv_fate[ch][id] == CANCELLED, c->cli_cancelled[ch][id]);
                } else {
                    CHECK(c->srv_fate[ch][id] != DELIVERED);
                }
                if (c->cli_cancelled[ch][id])
                    CHECK(c->srv_fate[ch][id] != DELIVERED);
            }
        }
        printf("lossy %d: channel 1 first unacked %llu, channel 2 %llu\n", lossy,
               (unsigned long long)c->close_first[1], (unsigned long long)c->close_first[2]);
        sim_free(c->s);
        free(c);
    }
}

/* A hostile sender: the client's link is made to send a CHAN_CANCEL of its choosing (its cancel
 * table written directly, as a broken or malicious peer would). */
static void forge_cancel(cx *c, uint32_t ch, uint64_t id, uint64_t start, uint64_t end, int sent)
{
    pure_chan *k = pure_chans_get(c->cl->chans, &c->cl->ctx->alloc, ch, 1 << 20, 1 << 20, 1 << 20);
    pure_cancels *x = pure_cancels_get(&k->cx, &c->cl->ctx->alloc);
    pure_cancel_out o = {.start = start, .end = end, .id = id, .owed = 1, .sent = (uint8_t)sent};
    CHECK(pure_cancels_out_add(x, &c->cl->ctx->alloc, &o) != NULL);
    c->cl->chans->cancel_due = 1;
    pure_ctx_mark_pending(c->cl->ctx, c->cl);
}

/* Bad cancels from the network close the link with a protocol error, and nothing else breaks: a
 * CHAN_CANCEL naming the wrong id for the message at the in-order point, one longer than any
 * message the receiver takes, two ranges ahead that overlap, one on a channel above the
 * receiver's max_channels. A cancel of a range the receiver already passed is answered
 * "delivered" and changes nothing, unless its sender never sent all of it: then the answer is
 * impossible and the sender closes the link. */
static void test_bad_cancels(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    for (int k = 0; k < 6; k++) {
        cli_max_channels = k == 3 ? 64 : 16; /* its table reaches channel 40 */
        cx *c = cx_new(20 + (uint64_t)k, &p, 1);
        cli_max_channels = 16;
        CHECK(c->cl && c->sl);
        send_msg(c, 1, 100, 0); /* channel 1: [0, 112) delivered */
        sim_run(c->s, NULL, NULL, sim_now(c->s) + 100 * SIM_MS);
        CHECK_EQ(c->srv_next[1], 1);
        switch (k) {
        case 0: forge_cancel(c, 1, 5, 104, 200, 0); break;               /* not id 1 */
        case 1: forge_cancel(c, 1, 1, 104, 104 + (17u << 20), 0); break; /* over 16 MiB */
        case 2:                                                          /* overlapping */
            forge_cancel(c, 1, 3, 1000, 1100, 0);
            forge_cancel(c, 1, 4, 1050, 1200, 0);
            break;
        case 3: forge_cancel(c, 40, 0, 0, 10, 0); break; /* above max_channels (16) */
        case 4: forge_cancel(c, 1, 0, 0, 104, 1); break; /* delivered already */
        case 5: /* the same, but the sender never sent all of it: "delivered" is a lie */
            forge_cancel(c, 1, 0, 0, 104, 0);
            break;
        }
        sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_S);
        if (k < 4) {
            if (!c->srv_closed)
                fprintf(stderr, "bad cancel %d: the server did not close\n", k);
            CHECK(c->srv_closed);
            CHECK_EQ(c->srv_error, PURE_EPROTO);
        } else if (k == 5) { /* the client (the cancel's sender) finds the answer impossible */
            CHECK(c->cl == NULL && c->closed);
            CHECK_EQ(c->cli_error, PURE_EPROTO);
        } else {
            CHECK(!c->srv_closed && c->cl && c->sl);
            CHECK_EQ(c->srv_cancels, 0);
            CHECK_EQ(send_msg(c, 1, 50, 0), 1); /* the channel goes on */
            sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_S);
            CHECK_EQ(c->srv_fate[1][1], DELIVERED);
        }
        sim_free(c->s);
        free(c);
    }
}

/* The errors pure.h lists. */
static void test_errors(void)
{
    sim_path p = {.delay = 5 * SIM_MS};
    cx *c = cx_new(7, &p, 0);
    CHECK_EQ(send_msg(c, 1, 100, 0), 0);
    CHECK_EQ(pure_link_cancel(c->cl, 1, 0), PURE_ESTATE); /* the handshake runs */
    sim_run(c->s, NULL, NULL, 200 * SIM_MS);
    CHECK(c->cl && c->sl);
    CHECK_EQ(pure_link_cancel(NULL, 1, 0), PURE_EINVAL);
    CHECK_EQ(pure_link_cancel(c->cl, 0, 0), PURE_EINVAL);   /* channel 0 has no cancels */
    CHECK_EQ(pure_link_cancel(c->cl, 17, 0), PURE_EINVAL);  /* above max_channels */
    CHECK_EQ(pure_link_cancel(c->cl, 2, 0), PURE_EINVAL);   /* never used */
    CHECK_EQ(pure_link_cancel(c->cl, 1, 1), PURE_EINVAL);   /* id never returned */
    CHECK_EQ(pure_link_cancel(c->cl, 1, 0), PURE_EALREADY); /* acknowledged */
    CHECK_EQ(pure_link_send_on_deadline(c->cl, 0, "x", 1, 1), PURE_EINVAL);
    CHECK_EQ(pure_link_send_on_deadline(NULL, 1, "x", 1, 1), PURE_EINVAL);
    CHECK_EQ(pure_link_send_on_deadline(c->cl, 1, NULL, 1, 1), PURE_EINVAL);
    CHECK_EQ(pure_link_send_on_deadline(c->cl, 1, "x", 17 << 20, 1), PURE_EMSGSIZE);
    CHECK_EQ(pure_link_finish(c->cl), 0);
    CHECK_EQ(pure_link_send_on_deadline(c->cl, 1, "x", 1, 1), PURE_ECLOSED);
    CHECK_EQ(pure_link_close(c->cl, 0, "bye"), 0);
    sim_run(c->s, NULL, NULL, sim_now(c->s) + SIM_S);
    CHECK_EQ(c->bad, 0);
    CHECK(c->cl == NULL); /* closed */
    sim_free(c->s);
    free(c);
    /* a peer that takes channels but not cancels (built before them) */
    srv_no_cancel = 1;
    c = cx_new(8, &p, 1);
    srv_no_cancel = 0;
    CHECK(c->cl && c->sl);
    send_msg(c, 1, 100, 0);
    CHECK_EQ(pure_link_cancel(c->cl, 1, 0), PURE_EINVAL);
    sim_free(c->s);
    free(c);
}

int main(void)
{
    RUN(test_cancel_queued);
    RUN(test_cancel_partly_sent);
    RUN(test_cancel_races);
    RUN(test_deadline_under_loss);
    RUN(test_deadline_met);
    RUN(test_close_with_cancels);
    RUN(test_bad_cancels);
    RUN(test_errors);
    return pure_test_finish();
}
