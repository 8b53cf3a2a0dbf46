/* SPDX-License-Identifier: MIT */
/* aead_limits_test: the AEAD's limits on a link, in the simulator. A transmit key seals at most
 * rekey_after_packets packets: the rekey starts at half of them, and a link whose peer never
 * answers it closes with PURE_ECRYPTO, its CLOSE the key's last packet. Packets that fail to open
 * count against their receive key, and the key that reaches max_failed_opens closes the link
 * with PURE_ECRYPTO; a new key starts from zero. The receive key a rekey retires opens late
 * packets until three probe timeouts after the peer's first packet under the new one, and is
 * then wiped: a packet under it is dropped unopened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rekey.h"
#include "sim.h"
#include "support/talloc.h"
#include "test.h"
#include "wire.h"

typedef struct side {
    pure_link *link;
    int established, closes, error, messages;
} side;

/* What the tap saw of one endpoint's DATA packets: runs of one key phase are one key's packets,
 * in the order they were sealed. */
typedef struct keyruns {
    uint64_t packets, runs, run, max_run, min_done_run;
    int phase;
} keyruns;

typedef struct world {
    sim *s;
    int cli, srv;
    side c, sv;
    keyruns kr[2];
    uint8_t tmpl[2048]; /* the latest server->client DATA packet, to forge from */
    size_t tmpl_len;
    int record; /* keep server->client DATA packets in rec[] */
    uint8_t rec[8][2048];
    size_t rec_len[8];
    int n_rec;
    uint64_t forged_pn;
} world;

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    (void)svc, (void)k;
    world *w = u;
    w->sv.link = l;
    pure_link_set_user(l, &w->sv);
    return 0;
}

static void on_established(pure_link *l, void *u)
{
    (void)l;
    ((side *)u)->established = 1;
}

static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    (void)l, (void)d, (void)n;
    ((side *)u)->messages++;
}

static void on_closed(pure_link *l, void *u, const pure_close_info *info)
{
    (void)l;
    side *s = u;
    s->closes++;
    s->error = info->error;
    s->link = NULL;
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_closed = on_closed};

static void tap(void *arg, int from, int to, const uint8_t *d, size_t n)
{
    world *w = arg;
    if (n < PURE_DATA_HEADER + PURE_TAG_LEN || (d[0] != PURE_PKT_DATA0 && d[0] != PURE_PKT_DATA1))
        return;
    keyruns *k = &w->kr[from];
    int phase = d[0] & 1;
    if (k->packets == 0 || phase != k->phase) {
        if (k->packets && (k->min_done_run == 0 || k->run < k->min_done_run))
            k->min_done_run = k->run;
        if (k->packets)
            k->runs++;
        k->phase = phase;
        k->run = 0;
    }
    k->packets++;
    if (++k->run > k->max_run)
        k->max_run = k->run;
    if (from == w->srv && to == w->cli && n <= sizeof w->tmpl) {
        memcpy(w->tmpl, d, n);
        w->tmpl_len = n;
        if (w->record && w->n_rec < 8) {
            memcpy(w->rec[w->n_rec], d, n);
            w->rec_len[w->n_rec++] = n;
        }
    }
}

/* Client and server; the client's settings take its packet and failed-open limits. */
static world *world_new(uint64_t seed, uint64_t cli_packets, uint64_t cli_failed)
{
    world *w = calloc(1, sizeof *w);
    w->s = sim_new(seed);
    for (int i = 0; i < 2; i++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &cbs;
        st.user = w;
        st.allow_any = 1;
        if (i == 0) {
            st.rekey_after_packets = cli_packets;
            st.max_failed_opens = cli_failed;
        }
        int ep = sim_add(w->s, &st);
        if (i == 0)
            w->cli = ep;
        else
            w->srv = ep;
    }
    pure_ctx_add_service(sim_ctx(w->s, w->srv), "svc");
    sim_set_tap(w->s, tap, w);
    w->forged_pn = 1000000;
    pure_addr to = sim_addr(w->s, w->srv);
    CHECK_EQ(pure_connect(sim_ctx(w->s, w->cli), &to, pure_ctx_public_key(sim_ctx(w->s, w->srv)),
                          "svc", &w->c, &w->c.link, sim_now(w->s)),
             0);
    return w;
}

static void world_free(world *w)
{
    sim_free(w->s);
    free(w);
}

static int established(void *arg)
{
    world *w = arg;
    return w->c.established && w->sv.link;
}

static void run_for(world *w, uint64_t ns)
{
    sim_run(w->s, NULL, NULL, sim_now(w->s) + ns);
}

/* One message from the server, so the client has received DATA (and the tap a template). */
static void server_says(world *w, size_t len)
{
    static uint8_t m[4096];
    CHECK(pure_link_send(w->sv.link, m, len) >= 0);
    run_for(w, 100 * SIM_MS);
}

/* A forged server->client packet under the key of `phase`: a real packet's body with a fresh
 * packet number (ahead of the replay window, so only the tag can refuse it). */
static void forge(world *w, int phase)
{
    uint8_t d[2048];
    size_t n = w->tmpl_len;
    memcpy(d, w->tmpl, n);
    d[0] = (uint8_t)(PURE_PKT_DATA0 | phase);
    uint64_t pn = w->forged_pn++;
    for (int i = 0; i < 7; i++)
        d[5 + i] = (uint8_t)(pn >> (48 - 8 * i));
    sim_inject(w->s, w->srv, w->cli, d, n, 0);
}

static pure_guard_stats guard_of(world *w, int ep)
{
    pure_guard_stats g;
    pure_ctx_guard_stats_get(sim_ctx(w->s, ep), &g, sizeof g);
    return g;
}

static int dir_keys_zero(const pure_dir_keys *k)
{
    static const pure_dir_keys zero;
    return memcmp(k, &zero, sizeof zero) == 0;
}

/* Client and server with rekey_after_packets = `packets` on both sides, over path p both ways,
 * the link established. */
static uint64_t rx_budget; /* world_both: both sides' max_receive_memory and max_message_size
                            * when not 0 */
static int cli_talloc;     /* world_both: the client allocates through support/talloc.h */

static world *world_both(uint64_t seed, uint64_t packets, const sim_path *p)
{
    world *w = calloc(1, sizeof *w);
    w->s = sim_new(seed);
    for (int i = 0; i < 2; i++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &cbs;
        st.user = w;
        st.allow_any = 1;
        st.rekey_after_packets = packets;
        if (rx_budget)
            st.max_receive_memory = st.max_message_size = rx_budget;
        if (cli_talloc && i == 0)
            st.alloc = t_alloc, st.free = t_free, st.realloc = NULL;
        int ep = sim_add(w->s, &st);
        *(i == 0 ? &w->cli : &w->srv) = ep;
    }
    pure_ctx_add_service(sim_ctx(w->s, w->srv), "svc");
    sim_set_tap(w->s, tap, w);
    sim_set_path(w->s, w->cli, w->srv, p);
    sim_set_path(w->s, w->srv, w->cli, p);
    pure_addr to = sim_addr(w->s, w->srv);
    CHECK_EQ(pure_connect(sim_ctx(w->s, w->cli), &to, pure_ctx_public_key(sim_ctx(w->s, w->srv)),
                          "svc", &w->c, &w->c.link, sim_now(w->s)),
             0);
    CHECK(sim_run(w->s, established, w, 5 * SIM_S));
    return w;
}

/* A transfer with rekey_after_packets = 1000 on both sides: every key the client used sealed
 * 500..999 packets (the rekey starts at half and completes before the limit), none more than
 * 1000 on either side, and everything arrives. */
static void test_rekey_at_half_never_past_limit(void)
{
    /* A window of at most ~260 packets (BDP plus queue): the exchange's round trip fits in the
     * 500 packets left after it starts, however slow start happens to overshoot. */
    sim_path p = {.delay = 10 * SIM_MS, .bandwidth = 50000000ull, .queue = 256 << 10, .loss = 0.01};
    world *w = world_both(11, 1000, &p);
    static uint8_t m[1200];
    int sent = 0;
    while (sent < 6000 && w->c.link && sim_now(w->s) < 120 * SIM_S) {
        int64_t rc = pure_link_send(w->c.link, m, sizeof m);
        if (rc == PURE_EAGAIN)
            run_for(w, 5 * SIM_MS);
        else if (rc >= 0)
            sent++;
        else
            break;
    }
    run_for(w, 5 * SIM_S);
    CHECK_EQ(w->sv.messages, 6000);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(w->sv.closes, 0);
    keyruns *c = &w->kr[w->cli], *s = &w->kr[w->srv];
    printf("client: %llu packets under %llu keys, each %llu..%llu; server's longest key %llu\n",
           (unsigned long long)c->packets, (unsigned long long)c->runs + 1,
           (unsigned long long)c->min_done_run, (unsigned long long)c->max_run,
           (unsigned long long)s->max_run);
    CHECK(c->runs >= 5);
    CHECK(c->min_done_run >= 500); /* the rekey starts at half the limit, not before */
    CHECK(c->max_run <= 1000);
    CHECK(s->max_run <= 1000);
    if (w->c.link)
        CHECK(w->c.link->st.rekeys >= 5);
    world_free(w);
}

/* The server never answers the client's rekey (its link takes every request for a stale
 * duplicate): the client's key seals exactly rekey_after_packets packets, the last its CLOSE,
 * and the link closes with PURE_ECRYPTO on the client, PURE_EPROTO (its CLOSE) on the server. */
static void test_unanswered_rekey_closes_at_limit(void)
{
    world *w = world_new(12, 256, 1ull << 36);
    CHECK(sim_run(w->s, established, w, 5 * SIM_S));
    w->sv.link->ck_gen += 1000; /* requests name generation ck_gen + 1: never this one's */
    static uint8_t m[1 << 20];
    CHECK(pure_link_send(w->c.link, m, sizeof m) >= 0);
    pure_link *cl = w->c.link;
    run_for(w, 10 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.error, PURE_ECRYPTO);
    CHECK_EQ(w->sv.closes, 1);
    CHECK_EQ(w->sv.error, PURE_EPROTO);
    CHECK_EQ(w->kr[w->cli].packets, 256); /* one key, every one of its packets, no more */
    CHECK_EQ(w->kr[w->cli].runs, 0);
    CHECK(w->sv.messages < 1); /* the megabyte could not all go under 256 packets */
    (void)cl;
    world_free(w);
}

/* max_failed_opens = 100: 99 forged packets leave the link open and delivering; the 100th
 * closes it with PURE_ECRYPTO, counted in the guard's stats, and the peer hears of it. */
static void test_integrity_limit_closes_link(void)
{
    world *w = world_new(13, PURE_REKEY_MAX_PACKETS, 100);
    CHECK(sim_run(w->s, established, w, 5 * SIM_S));
    server_says(w, 100);
    CHECK_EQ(w->c.messages, 1);
    CHECK(w->tmpl_len > 0);
    for (int i = 0; i < 99; i++)
        forge(w, 0);
    run_for(w, 10 * SIM_MS);
    pure_guard_stats g = guard_of(w, w->cli);
    CHECK_EQ(g.failed_opens, 99);
    CHECK_EQ(g.links_integrity_closed, 0);
    CHECK_EQ(w->c.closes, 0);
    if (w->c.link) {
        CHECK_EQ(w->c.link->rx_failed[0], 99);
        CHECK_EQ(w->c.link->st.dropped_auth, 99);
    }
    server_says(w, 300); /* still delivers */
    CHECK_EQ(w->c.messages, 2);
    forge(w, 0);
    run_for(w, 10 * SIM_MS);
    g = guard_of(w, w->cli);
    CHECK_EQ(g.failed_opens, 100);
    CHECK_EQ(g.links_integrity_closed, 1);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.error, PURE_ECRYPTO);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->sv.closes, 1); /* the client's CLOSE reached it */
    CHECK_EQ(w->sv.error, PURE_EPROTO);
    world_free(w);
}

/* Runs until both links have switched to phase 1 with no rekey under way. */
static int rekeyed(void *arg)
{
    world *w = arg;
    return w->c.link && w->sv.link && w->c.link->key_phase == 1 && w->sv.link->key_phase == 1 &&
           !w->c.link->rk && !w->sv.link->rk;
}

/* A rekey restarts the count: 99 forgeries under the first key, a rekey, 99 under the new one
 * leave the link open; once the old key is retired, forgeries naming it are dropped without
 * touching any key; the new key's 100th forgery closes the link. */
static void test_rekey_restarts_failed_open_count(void)
{
    world *w = world_new(14, PURE_REKEY_MAX_PACKETS, 100);
    CHECK(sim_run(w->s, established, w, 5 * SIM_S));
    server_says(w, 100);
    for (int i = 0; i < 99; i++)
        forge(w, 0);
    run_for(w, 10 * SIM_MS);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(pure_rekey_start(w->c.link, sim_now(w->s)), 0);
    CHECK(sim_run(w->s, rekeyed, w, sim_now(w->s) + 2 * SIM_S));
    server_says(w, 100); /* the template is now under phase 1 */
    CHECK_EQ(w->c.messages, 2);
    for (int i = 0; i < 99; i++)
        forge(w, 1);
    run_for(w, 10 * SIM_MS);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(guard_of(w, w->cli).failed_opens, 198);
    if (w->c.link)
        CHECK_EQ(w->c.link->rx_failed[1], 99);
    server_says(w, 100);
    CHECK_EQ(w->c.messages, 3);
    /* the old key is gone by now (three probe timeouts after the server's first new packet) */
    CHECK(w->c.link && w->c.link->rx_retire == PURE_RX_RETIRE_NONE);
    CHECK(w->c.link && dir_keys_zero(&w->c.link->rx[0]));
    uint64_t auth0 = w->c.link ? w->c.link->st.dropped_auth : 0;
    for (int i = 0; i < 10; i++)
        forge(w, 0);
    run_for(w, 10 * SIM_MS);
    CHECK_EQ(guard_of(w, w->cli).failed_opens, 198); /* no key tried */
    CHECK(w->c.link && w->c.link->st.dropped_auth == auth0 + 10);
    CHECK_EQ(w->c.closes, 0);
    forge(w, 1);
    run_for(w, 10 * SIM_MS);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.error, PURE_ECRYPTO);
    CHECK_EQ(guard_of(w, w->cli).links_integrity_closed, 1);
    world_free(w);
}

static int client_retire_timed(void *arg)
{
    world *w = arg;
    return w->c.link && w->c.link->rx_retire == PURE_RX_RETIRE_TIMED;
}

/* The previous receive key after a rekey: it opens a late packet until three probe timeouts
 * after the peer's first packet under the new key, then it is wiped (key, IV, AEAD context) and
 * a late packet under it is dropped without being opened. */
static void test_old_receive_key_wiped_after_3_pto(void)
{
    world *w = world_new(15, PURE_REKEY_MAX_PACKETS, 1ull << 36);
    CHECK(sim_run(w->s, established, w, 5 * SIM_S));
    server_says(w, 100);
    /* server packets under the first key that never arrive: kept to play late */
    uint64_t now = sim_now(w->s);
    sim_path hole = {
        .delay = 10 * SIM_MS, .blackhole_start = now, .blackhole_end = now + 30 * SIM_MS};
    sim_set_path(w->s, w->srv, w->cli, &hole);
    w->record = 1;
    static uint8_t m[3000];
    for (int i = 0; i < 3; i++)
        CHECK(pure_link_send(w->sv.link, m, sizeof m) >= 0);
    run_for(w, 30 * SIM_MS);
    w->record = 0;
    run_for(w, 200 * SIM_MS); /* the server sends them again */
    CHECK_EQ(w->c.messages, 4);
    CHECK(w->n_rec >= 2);
    for (int i = 0; i < w->n_rec; i++)
        CHECK_EQ(w->rec[i][0], PURE_PKT_DATA0);

    CHECK_EQ(pure_rekey_start(w->c.link, sim_now(w->s)), 0);
    CHECK(sim_run(w->s, client_retire_timed, w, sim_now(w->s) + 2 * SIM_S));
    pure_link *cl = w->c.link;
    if (!cl || !cl->b) {
        CHECK(0);
        world_free(w);
        return;
    }
    CHECK_EQ(cl->key_phase, 1);
    CHECK(cl->rx[0].ready); /* still here for late packets */
    /* wiped three probe timeouts after the server's first packet under the new key (just now;
     * the RTT sample that packet brought came after, so the PTO moved a little) */
    uint64_t at = cl->b->rx_retire_at;
    uint64_t pto = pure_rtt_pto(&cl->rtt, sim_ctx(w->s, w->cli)->s.max_ack_delay);
    CHECK(at > sim_now(w->s) + 2 * pto && at <= sim_now(w->s) + 4 * pto);
    /* a late packet under the old key still opens */
    uint64_t got = cl->st.packets_received, auth = cl->st.dropped_auth;
    sim_inject(w->s, w->srv, w->cli, w->rec[0], w->rec_len[0], 0);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(cl->st.packets_received, got + 1);
    CHECK_EQ(cl->st.dropped_auth, auth);
    sim_run(w->s, NULL, NULL, at - 1);
    CHECK(cl->rx[0].ready);
    sim_run(w->s, NULL, NULL, at);
    CHECK_EQ(cl->rx_retire, PURE_RX_RETIRE_NONE);
    CHECK(dir_keys_zero(&cl->rx[0]));
    CHECK(cl->rx[1].ready && cl->tx.ready); /* the keys in use stay */
    /* a late packet under it now is dropped unopened: no key, no failed open */
    got = cl->st.packets_received;
    auth = cl->st.dropped_auth;
    uint64_t replay = cl->st.dropped_replay, failed = guard_of(w, w->cli).failed_opens;
    sim_inject(w->s, w->srv, w->cli, w->rec[1], w->rec_len[1], 0);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(cl->st.packets_received, got);
    CHECK_EQ(cl->st.dropped_auth, auth + 1);
    CHECK_EQ(cl->st.dropped_replay, replay);
    CHECK_EQ(guard_of(w, w->cli).failed_opens, failed);
    /* the server retired its own old receive key too */
    run_for(w, 1 * SIM_S);
    CHECK(w->sv.link && w->sv.link->rx_retire == PURE_RX_RETIRE_NONE &&
          dir_keys_zero(&w->sv.link->rx[0]));
    CHECK_EQ(w->c.closes + w->sv.closes, 0);
    world_free(w);
}

/* Both sides send bulk over a fast path whose window holds more packets than a key has left
 * when its rekey starts (rekey_after_packets 1024; 1 Gbit/s, 4 ms and a deep queue: several
 * hundred packets a round trip). The side that answers a rekey keeps sending under its old key
 * for the round trip until the starter's first packet under the new one arrives; it held
 * nothing back, so its key ran out and the link closed with PURE_ECRYPTO (the soak's
 * closes-and-aborts scenario at this limit: dozens of links in 10 seeds). Now both sides hold
 * data in their key's last quarter until the switch: no key seals more than the limit, the
 * link stays open, everything arrives. */
static void test_answering_side_holds_its_last_quarter(void)
{
    sim_path p = {.delay = 2 * SIM_MS, .bandwidth = 1000000000ull, .queue = 4 << 20};
    world *w = world_both(21, 1024, &p);
    static uint8_t m[16384];
    int sent[2] = {0, 0};
    while ((sent[0] < 3000 || sent[1] < 3000) && w->c.link && w->sv.link &&
           sim_now(w->s) < 60 * SIM_S) {
        int progress = 0;
        for (int k = 0; k < 2; k++) {
            pure_link *l = k ? w->sv.link : w->c.link;
            while (sent[k] < 3000 && pure_link_send(l, m, sizeof m) >= 0)
                sent[k]++, progress = 1;
        }
        run_for(w, progress ? SIM_MS : 5 * SIM_MS);
    }
    run_for(w, 2 * SIM_S);
    keyruns *c = &w->kr[w->cli], *s = &w->kr[w->srv];
    printf("client: %llu packets under %llu keys, longest %llu; server: %llu under %llu, "
           "longest %llu\n",
           (unsigned long long)c->packets, (unsigned long long)c->runs + 1,
           (unsigned long long)c->max_run, (unsigned long long)s->packets,
           (unsigned long long)s->runs + 1, (unsigned long long)s->max_run);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(w->sv.closes, 0);
    CHECK_EQ(w->sv.messages, 3000);
    CHECK_EQ(w->c.messages, 3000);
    CHECK(c->runs >= 10 && s->runs >= 10);
    CHECK(c->max_run <= 1024 && s->max_run <= 1024);
    world_free(w);
}

/* Both sides start a rekey at once and the responder drops the initiator's request (here: it
 * takes it for a stale duplicate; in the soak, it had no memory to answer, "the peer will ask
 * again"). The responder's own request then reaches the initiator, which keeps its own and
 * ignored the peer's: neither was ever answered, and the heavier sender's key ran out (the soak's
 * allocation scenario, PURE_ECRYPTO). The initiator now says its request again when it sees the
 * peer's: the exchange completes on both sides. */
static void test_crossed_requests_one_dropped(void)
{
    world *w = world_new(22, PURE_REKEY_MAX_PACKETS, 1ull << 36);
    CHECK(sim_run(w->s, established, w, 5 * SIM_S));
    server_says(w, 100);
    pure_link *cl = w->c.link, *sl = w->sv.link;
    sl->ck_gen += 1000; /* the client's request looks stale: dropped unanswered */
    CHECK_EQ(pure_rekey_start(cl, sim_now(w->s)), 0);
    run_for(w, 100 * SIM_MS); /* the request went and was acknowledged */
    sl->ck_gen -= 1000;
    CHECK_EQ(pure_rekey_start(sl, sim_now(w->s)), 0); /* the server's own, same generation */
    run_for(w, 500 * SIM_MS);
    CHECK(w->c.link && w->sv.link);
    CHECK_EQ(cl->st.rekeys, 1);
    CHECK_EQ(sl->st.rekeys, 1);
    CHECK(cl->rk == NULL && sl->rk == NULL);
    server_says(w, 100); /* and the new keys carry data */
    CHECK_EQ(w->c.messages, 2);
    world_free(w);
}

/* Ten seeds of both sides sending 16 KiB messages over a fast, lossy, reordering path with
 * 256-packet keys; returns the most packets any key of either side sealed, and counts closes and
 * missing messages in *fails. */
static uint64_t bulk_both_ways(const sim_path *p, int *fails)
{
    uint64_t longest = 0;
    for (uint64_t seed = 31; seed < 31 + 10; seed++) {
        world *w = world_both(seed, 256, p);
        static uint8_t m[16384];
        int sent[2] = {0, 0};
        while ((sent[0] < 1000 || sent[1] < 1000) && w->c.link && w->sv.link &&
               sim_now(w->s) < 60 * SIM_S) {
            int progress = 0;
            while (sent[0] < 1000 && pure_link_send(w->c.link, m, sizeof m) >= 0)
                sent[0]++, progress = 1;
            while (sent[1] < 1000 && pure_link_send(w->sv.link, m, sizeof m) >= 0)
                sent[1]++, progress = 1;
            run_for(w, progress ? SIM_MS : 5 * SIM_MS);
        }
        run_for(w, 2 * SIM_S);
        for (int k = 0; k < 2; k++)
            if (w->kr[k].max_run > longest)
                longest = w->kr[k].max_run;
        *fails += w->c.closes + w->sv.closes + (w->sv.messages != 1000) + (w->c.messages != 1000);
        world_free(w);
    }
    return longest;
}

/* A key's last quarter is the exchange's: data waits there, but ACKs went at once on every gap,
 * reordering or packet dropped for the receive budget. With 256-packet keys and 1 Gbit/s of
 * messages each way they spent the quarter before the exchange's round trip was over: the soak's
 * closes and aborts at this setting closed links with PURE_ECRYPTO (65 ACK-only packets in 3.5
 * ms: reordering; one per packet: a 4 MiB receive budget shared by 100 links). There ACKs now
 * wait for ack_every packets or max_ack_delay. Here the longest key of either side sealed 220-249
 * of its 256 packets on a reordering path and ran out with a receive budget; now ~200 and none
 * runs out. */
static void test_acks_spare_a_small_keys_last_quarter(void)
{
    sim_path p = {.delay = 2 * SIM_MS,
                  .bandwidth = 1000000000ull,
                  .queue = 4 << 20,
                  .loss = 0.03,
                  .reorder = 0.05,
                  .reorder_delay = 3 * SIM_MS};
    int fails = 0;
    uint64_t longest = bulk_both_ways(&p, &fails);
    printf("reordering: longest key %llu of 256 packets\n", (unsigned long long)longest);
    CHECK(longest <= 224); /* at most an eighth of the key past three quarters */
    rx_budget = 256 << 10; /* packets dropped for the budget: each owed an ACK */
    uint64_t longest_budget = bulk_both_ways(&p, &fails);
    rx_budget = 0;
    printf("a 256 KiB receive budget: longest key %llu\n", (unsigned long long)longest_budget);
    CHECK(longest_budget <= 224);
    CHECK_EQ(fails, 0);
}

/* The exchange's replies lost for over three probe timeouts, then one gets through (the server
 * takes each request for a stale duplicate until then, as if each reply were lost: the soak lost
 * three in a row at 3% loss). The client holds data in its key's last quarter and asks again
 * every probe timeout; it held for three probe timeouts only, then sent data again and ran its
 * key out (PURE_ECRYPTO) before the next request's answer could come. It now holds for eight: the
 * exchange completes, the link stays open and everything arrives. */
static void test_replies_lost_three_times(void)
{
    sim_path p = {.delay = 5 * SIM_MS, .bandwidth = 1000000000ull, .queue = 1 << 20};
    world *w = world_both(23, 256, &p);
    pure_link *cl = w->c.link, *sl = w->sv.link;
    uint64_t max_ack_delay = sim_ctx(w->s, w->cli)->s.max_ack_delay;
    static uint8_t m[16384];
    int sent = 0, deaf = 0;
    uint64_t deaf_since = 0;
    while (sent < 3000 && w->c.link && w->sv.link && sim_now(w->s) < 60 * SIM_S) {
        while (sent < 3000 && pure_link_send(cl, m, sizeof m) >= 0)
            sent++;
        if (!deaf && cl->rk && cl->st.rekeys >= 2) { /* the third exchange has just started */
            deaf = 1;
            deaf_since = sim_now(w->s);
            sl->ck_gen += 1000;
        }
        if (deaf == 1 && sim_now(w->s) >= deaf_since + 4 * pure_rtt_pto(&cl->rtt, max_ack_delay)) {
            deaf = 2; /* four probe timeouts without an answer: the next request is answered */
            sl->ck_gen -= 1000;
        }
        run_for(w, SIM_MS / 4);
    }
    run_for(w, 2 * SIM_S);
    CHECK_EQ(deaf, 2);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(w->sv.closes, 0);
    CHECK_EQ(w->sv.messages, 3000);
    CHECK(w->c.link && w->c.link->st.rekeys >= 3);
    CHECK(w->kr[w->cli].max_run <= 256);
    world_free(w);
}

/* One write's burst (up to 64 packets) may cross half the key's packets. The exchange was looked
 * for only when a write began, so it started up to a burst late: a 64-packet key (the least was
 * 16 then) went from 22 to its last packet in one burst with no exchange started, and the link
 * closed with PURE_ECRYPTO (the soak's closes and aborts at that setting). It now starts at the
 * packet that reaches half. Here the window is opened by a transfer; after a pause that fills the
 * pacer the key is set 100 packets in and one write of the client's context is taken by hand. */
static void test_burst_crosses_half(void)
{
    sim_path p = {.delay = 2 * SIM_MS, .bandwidth = 1000000000ull, .queue = 4 << 20};
    world *w = world_both(24, 256, &p);
    pure_link *cl = w->c.link;
    pure_ctx *cctx = sim_ctx(w->s, w->cli);
    static uint8_t m[16384], buf[64 * 1500];
    int sent = 0;
    while (sent < 300 && pure_link_send(cl, m, sizeof m) >= 0)
        sent++;
    run_for(w, 500 * SIM_MS);
    CHECK(w->c.link && !cl->rk);
    cl->keys_packets = 100;
    for (int i = 0; i < 8 && pure_link_send(cl, m, sizeof m) >= 0; i++)
        sent++;
    size_t seg = 0;
    pure_addr to;
    int64_t n = pure_ctx_write(cctx, buf, sizeof buf, &seg, &to, sim_now(w->s));
    printf("one write: %lld bytes in %zu-byte packets, the key %llu packets in\n", (long long)n,
           seg, (unsigned long long)cl->keys_packets);
    CHECK(cl->keys_packets > 128); /* the burst crossed half */
    CHECK(cl->rk != NULL);         /* and the exchange started in it */
    /* that burst is lost on the way; the rest goes through the simulator */
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(w->sv.messages, sent);
    CHECK(w->c.link && w->c.link->st.rekeys >= 1);
    world_free(w);
}

/* The client holds its data in its key's last quarter (its request unanswered: the server takes
 * it for stale) when the server's next message waits in its ring behind a lost packet, and the
 * resent packet fills the gap while the client has no memory to assemble that message: its bytes
 * are acknowledged, so nothing but the retry for memory (the pace timer, PURE_NOMEM_RETRY away)
 * brings them on. The hold set the same timer to its own next look (the request asked again, a
 * probe timeout on) and so put the retry off: the message came 169 ms after memory did. It now
 * keeps the earlier of the two: 1 ms. */
static void test_hold_keeps_a_memory_retry(void)
{
    sim_path p = {.delay = 50 * SIM_MS, .bandwidth = 100000000ull, .queue = 1 << 20};
    cli_talloc = 1;
    world *w = world_both(25, 1024, &p);
    cli_talloc = 0;
    pure_link *cl = w->c.link, *sl = w->sv.link;
    static uint8_t m[1 << 20];
    sl->ck_gen += 1000; /* the client's requests go unanswered */
    cl->keys_packets = 800;
    CHECK_EQ(pure_rekey_start(cl, sim_now(w->s)), 0);
    CHECK(pure_link_send(cl, m, sizeof m) >= 0); /* data to hold */
    run_for(w, 5 * SIM_MS);
    uint64_t t0 = sim_now(w->s);
    sim_path lossy = p;
    lossy.blackhole_start = t0, lossy.blackhole_end = t0 + SIM_MS;
    sim_set_path(w->s, w->srv, w->cli, &lossy);
    CHECK(pure_link_send(sl, m, 100) >= 0); /* M1: one packet, lost */
    run_for(w, 2 * SIM_MS);
    CHECK(pure_link_send(sl, m, 20000) >= 0); /* M2: in the client's ring behind the gap */
    run_for(w, 60 * SIM_MS);
    t_fail = 1; /* no memory when M1's copy fills the gap */
    run_for(w, 200 * SIM_MS);
    CHECK_EQ(w->c.messages, 1);      /* M1, which needed no memory to be delivered */
    CHECK(cl->b && cl->b->rx_nomem); /* M2's bytes wait for memory */
    t_fail = 0;
    uint64_t back = sim_now(w->s);
    while (w->c.messages < 2 && sim_now(w->s) < back + 5 * SIM_S)
        run_for(w, SIM_MS);
    printf("M2 delivered %.0f ms after memory came back\n", (double)(sim_now(w->s) - back) / 1e6);
    CHECK_EQ(w->c.messages, 2);
    CHECK(sim_now(w->s) - back <= 50 * SIM_MS);
    world_free(w);
    CHECK_EQ(t_live, 0);
}

int main(void)
{
    RUN(test_rekey_at_half_never_past_limit);
    RUN(test_unanswered_rekey_closes_at_limit);
    RUN(test_integrity_limit_closes_link);
    RUN(test_rekey_restarts_failed_open_count);
    RUN(test_old_receive_key_wiped_after_3_pto);
    RUN(test_answering_side_holds_its_last_quarter);
    RUN(test_crossed_requests_one_dropped);
    RUN(test_acks_spare_a_small_keys_last_quarter);
    RUN(test_replies_lost_three_times);
    RUN(test_burst_crosses_half);
    RUN(test_hold_keeps_a_memory_retry);
    return pure_test_finish();
}
