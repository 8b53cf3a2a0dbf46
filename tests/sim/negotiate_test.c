/* SPDX-License-Identifier: MIT */
/* negotiate_test: transport parameters and protocol versions in whole handshakes
 * (docs/protocol.md, "Transport parameters", "Protocol versions"). Peers with features on and off,
 * and one built before parameters (its INIT and RESP exactly the old ones), connect, each sees
 * what the other announced, and the link carries messages; unknown parameters are skipped; ECN
 * frames go only to a peer that announced it reads them;
 * malformed ones end the handshake with PURE_EPROTO on the side that parsed them; a peer of
 * another protocol version gets a VERSION reply and the initiator fails with PURE_EVERSION after
 * the hint's grace, in the simulator and over real sockets, while the responder counts the INIT;
 * forged VERSION replies change nothing; a silent responder sends none. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pure_loop.h"
#include "sim.h"
#include "test.h"
#include "tparams.h"
#include "wire.h"

typedef struct app {
    pure_link *link;
    int established, closes, messages, chan_messages;
    pure_close_info info;
    char reason[96];
    uint64_t closed_at;
} app;

typedef struct world {
    sim *s;
    int cli, srv;
    app c, sv;
    uint8_t init[512], resp[512];
    size_t init_len, resp_len;
    int inits, resps, versions;
    size_t version_len;
} world;

static world *W;

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    world *w = u;
    w->sv.link = l;
    pure_link_set_user(l, &w->sv);
    return 0;
}

static void on_established(pure_link *l, void *u)
{
    ((app *)u)->established = 1;
}

static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    ((app *)u)->messages++;
}

static void on_channel_message(pure_link *l, void *u, uint32_t ch, const uint8_t *d, size_t n)
{
    ((app *)u)->chan_messages++;
}

static void on_closed(pure_link *l, void *u, const pure_close_info *info)
{
    app *a = u;
    a->closes++;
    a->info = *info;
    snprintf(a->reason, sizeof a->reason, "%s", info->reason ? info->reason : "");
    a->info.reason = NULL;
    a->closed_at = W ? sim_now(W->s) : 0;
    a->link = NULL;
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_channel_message = on_channel_message,
                                   .on_closed = on_closed};

static void tap(void *arg, int from, int to, const uint8_t *d, size_t n)
{
    world *w = arg;
    if (!n || n > sizeof w->init)
        return;
    if (from == w->cli && (d[0] == PURE_PKT_INIT || d[0] == PURE_PKT_INIT_V)) {
        memcpy(w->init, d, n);
        w->init_len = n;
        w->inits++;
    } else if (from == w->srv && d[0] == PURE_PKT_RESP) {
        memcpy(w->resp, d, n);
        w->resp_len = n;
        w->resps++;
    } else if (from == w->srv && d[0] == PURE_PKT_VERSION) {
        w->versions++;
        w->version_len = n;
    }
}

/* recv_window of the client and of the server (0: the default) */
static world *world_new_windows(uint64_t seed, int silent, uint64_t cwin, uint64_t swin)
{
    world *w = calloc(1, sizeof *w);
    W = w;
    w->s = sim_new(seed);
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &cbs;
    st.user = w;
    st.allow_any = 1;
    uint64_t def = st.recv_window;
    st.recv_window = cwin ? cwin : def;
    w->cli = sim_add(w->s, &st);
    st.respond_to_unknown = !silent;
    st.recv_window = swin ? swin : def;
    w->srv = sim_add(w->s, &st);
    CHECK_EQ(pure_ctx_add_service(sim_ctx(w->s, w->srv), "svc"), 0);
    sim_set_tap(w->s, tap, w);
    return w;
}

static world *world_new(uint64_t seed, int silent)
{
    return world_new_windows(seed, silent, 0, 0);
}

static void world_free(world *w)
{
    sim_free(w->s);
    free(w);
    W = NULL;
}

static pure_ctx *cctx(world *w)
{
    return sim_ctx(w->s, w->cli);
}
static pure_ctx *sctx(world *w)
{
    return sim_ctx(w->s, w->srv);
}

static void connect_srv(world *w)
{
    pure_addr srv = sim_addr(w->s, w->srv);
    CHECK_EQ(pure_connect(cctx(w), &srv, pure_ctx_public_key(sctx(w)), "svc", &w->c, &w->c.link,
                          sim_now(w->s)),
             0);
}

static void run_for(world *w, uint64_t ns)
{
    sim_run(w->s, NULL, NULL, sim_now(w->s) + ns);
}

/* The link carries a message each way. */
static void check_link_works(world *w)
{
    CHECK(w->c.established);
    CHECK(w->c.link != NULL && w->sv.link != NULL);
    if (!w->c.link || !w->sv.link)
        return;
    CHECK(pure_link_send(w->c.link, "ping", 4) >= 0);
    CHECK(pure_link_send(w->sv.link, "pong", 4) >= 0);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->sv.messages, 1);
    CHECK_EQ(w->c.messages, 1);
    CHECK_EQ(w->c.closes, 0);
    CHECK_EQ(w->sv.closes, 0);
}

static void announce(pure_ctx *ctx, uint64_t channels, uint64_t dgram, uint64_t features)
{
    pure_test_wire tw = {
        .set_announce = 1,
        .announce = {.max_channels = channels, .max_datagram_size = dgram, .features = features}};
    CHECK_EQ(pure_test_set_wire(ctx, &tw), 0);
}

static void no_params(pure_ctx *ctx)
{
    pure_test_wire tw = {.no_params = 1};
    CHECK_EQ(pure_test_set_wire(ctx, &tw), 0);
}

static void check_peer(const pure_link *l, int known, uint32_t ch, uint32_t dg, int ecn)
{
    CHECK(l != NULL);
    if (!l)
        return;
    CHECK_EQ(pure_tp_peer_known(l), known);
    CHECK_EQ(pure_tp_peer_channels(l), ch);
    CHECK_EQ(pure_tp_peer_datagram_max(l), dg);
    CHECK_EQ(pure_tp_peer_ecn(l), ecn);
}

/* Both announce: each link holds what the other side announced (values above 16 bits clamp). */
static void test_both_on(void)
{
    world *w = world_new(1, 0);
    announce(cctx(w), 4, 1200, PURE_TP_F_ECN);
    announce(sctx(w), 16, 100000, 0x80 | PURE_TP_F_ECN); /* 0x80: a bit this build ignores */
    connect_srv(w);
    run_for(w, 1 * SIM_S);
    check_peer(w->c.link, 1, 16, 65535, 1);
    check_peer(w->sv.link, 1, 4, 1200, 1);
    /* anti-amplification: the RESP, parameters and all, stays under the INIT */
    CHECK_EQ(w->init_len, 142 + 3 + 10);
    CHECK_EQ(w->resp_len, 62 + 13); /* 16, 100000 and 0x81 take 1, 4 and 2 bytes */
    check_link_works(w);
    world_free(w);
}

/* The defaults: each side announces its max_channels (16), its max_datagram_size (65535) and
 * that it reads ECN frames; channels and datagrams then work both ways. */
static void test_defaults(void)
{
    world *w = world_new(7, 0);
    connect_srv(w);
    run_for(w, 1 * SIM_S);
    check_peer(w->c.link, 1, 16, 65535, 1);
    check_peer(w->sv.link, 1, 16, 65535, 1);
    CHECK_EQ(pure_link_peer_channels(w->c.link), 16);
    CHECK_EQ(pure_link_peer_datagram_max(w->sv.link), 65535);
    check_link_works(w);
    world_free(w);
}

/* Features off on one side (a new build announcing nothing) and on on the other, both ways round:
 * each sees what the other announced, zeros included, and the link works. */
static void test_off_to_on(void)
{
    world *w = world_new(2, 0);
    announce(cctx(w), 0, 0, 0);
    announce(sctx(w), 8, 1400, PURE_TP_F_ECN);
    connect_srv(w); /* nothing announced, but a set is sent */
    run_for(w, 1 * SIM_S);
    check_peer(w->c.link, 1, 8, 1400, 1);
    check_peer(w->sv.link, 1, 0, 0, 0);
    check_link_works(w);
    world_free(w);

    w = world_new(3, 0);
    announce(cctx(w), 2, 1300, PURE_TP_F_ECN);
    announce(sctx(w), 0, 0, 0);
    connect_srv(w);
    run_for(w, 1 * SIM_S);
    check_peer(w->c.link, 1, 0, 0, 0);
    check_peer(w->sv.link, 1, 2, 1300, 1);
    check_link_works(w);
    world_free(w);
}

/* An initiator built before parameters (its INIT exactly the old layout: 142 + service bytes) to
 * a responder with features on: the responder takes it, knows the peer announced nothing, and
 * answers with the old RESP (62 bytes exactly, which that initiator requires), so neither side
 * uses what the other lacks. And a responder that sends no parameters (as one built before them
 * would answer, had it taken the INIT): the new initiator knows it announced nothing. */
static void test_peer_without_params(void)
{
    world *w = world_new(4, 0);
    no_params(cctx(w));
    announce(sctx(w), 8, 1400, PURE_TP_F_ECN);
    connect_srv(w);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->init_len, 142 + 3);
    CHECK_EQ(w->resp_len, 62);
    check_peer(w->c.link, 0, 0, 0, 0);
    check_peer(w->sv.link, 0, 0, 0, 0);
    check_link_works(w);
    world_free(w);

    w = world_new(5, 0);
    announce(cctx(w), 8, 1400, PURE_TP_F_ECN);
    no_params(sctx(w));
    connect_srv(w);
    run_for(w, 1 * SIM_S);
    CHECK(w->init_len > 142 + 3);
    CHECK_EQ(w->resp_len, 62);
    check_peer(w->c.link, 0, 0, 0, 0);
    check_peer(w->sv.link, 1, 8, 1400, 1);
    check_link_works(w);
    world_free(w);
}

/* ECN frames go only to a peer that announced it reads them: a client sends 3 MB through a
 * CoDel queue that marks CE (20 Mbit/s, 20 ms each way); the server sees the marks either way, but
 * reports them (and the client hears of them) only if the client announced PURE_TP_F_ECN. A peer
 * from before ECN closes the link as a protocol error on an ECN frame; this one would read it, so
 * the count it heard is the check. */
static void ecn_run(int client_reads_ecn, uint64_t *ce_received, uint64_t *ce_reported,
                    int *delivered)
{
    world *w = world_new(40 + (uint64_t)client_reads_ecn, 0);
    sim_bottleneck b = {.rate = 20000000, .limit_packets = 1000, .codel = 1, .ecn = 1};
    int fwd = sim_bottleneck_add(w->s, &b), rev = sim_bottleneck_add(w->s, &b);
    sim_path d = {.delay = 20 * SIM_MS};
    sim_set_path(w->s, w->cli, w->srv, &d);
    sim_set_path(w->s, w->srv, w->cli, &d);
    sim_path_bottleneck(w->s, w->cli, w->srv, fwd);
    sim_path_bottleneck(w->s, w->srv, w->cli, rev);
    if (!client_reads_ecn)
        announce(cctx(w), 0, 0, 0);
    connect_srv(w);
    static uint8_t msg[1000];
    int sent = 0;
    for (int step = 0; step < 500 && sent < 3000 && w->c.link; step++) {
        while (sent < 3000 && pure_link_send(w->c.link, msg, sizeof msg) >= 0)
            sent++;
        run_for(w, 10 * SIM_MS);
    }
    CHECK_EQ(sent, 3000);
    run_for(w, 3 * SIM_S);
    pure_link_stats cs = {0}, ss = {0};
    CHECK(w->c.link != NULL && w->sv.link != NULL);
    if (w->c.link && w->sv.link) {
        pure_link_stats_get(w->c.link, &cs);
        pure_link_stats_get(w->sv.link, &ss);
    }
    *ce_received = ss.ecn_ce_received;
    *ce_reported = cs.ecn_ce_reported;
    *delivered = w->sv.messages;
    CHECK_EQ(w->c.closes + w->sv.closes, 0);
    world_free(w);
}

/* Two sides with different recv_window: each starts at the credit the other announced, not at its
 * own window. Before the parameter both assumed their own: the side with the larger window sent
 * past the other's credit and the link closed with a flow-control error. 3 MiB each way on
 * channel 0 and 1 MiB on channel 2, either side the small one. */
static void test_different_windows(void)
{
    static uint8_t msg[16384];
    for (int small_server = 0; small_server < 2; small_server++) {
        world *w = small_server ? world_new_windows(7, 0, 0, 64 * 1024)
                                : world_new_windows(7, 0, 64 * 1024, 0);
        connect_srv(w);
        run_for(w, 1 * SIM_S);
        CHECK(w->c.link && w->sv.link);
        if (!w->c.link || !w->sv.link) {
            world_free(w);
            continue;
        }
        CHECK_EQ(pure_tp_peer_window(w->c.link), small_server ? 64 * 1024 : 1u << 20);
        CHECK_EQ(pure_tp_peer_window(w->sv.link), small_server ? 1u << 20 : 64 * 1024);
        int sent[2][2] = {{0}};
        for (int round = 0; round < 400; round++) {
            app *sides[2] = {&w->c, &w->sv};
            for (int i = 0; i < 2; i++) {
                pure_link *l = sides[i]->link;
                while (l && sent[i][0] < 192 && pure_link_send(l, msg, sizeof msg) >= 0)
                    sent[i][0]++;
                while (l && sent[i][1] < 64 && pure_link_send_on(l, 2, msg, sizeof msg) >= 0)
                    sent[i][1]++;
            }
            run_for(w, 50 * SIM_MS);
        }
        CHECK_EQ(w->c.closes, 0);
        CHECK_EQ(w->sv.closes, 0);
        if (w->c.closes || w->sv.closes)
            fprintf(stderr, "  small %s: closed: %s / %s\n", small_server ? "server" : "client",
                    w->c.reason, w->sv.reason);
        CHECK_EQ(w->sv.messages, 192);
        CHECK_EQ(w->c.messages, 192);
        CHECK_EQ(w->sv.chan_messages, 64);
        CHECK_EQ(w->c.chan_messages, 64);
        world_free(w);
    }
}

static void test_ecn_only_to_readers(void)
{
    uint64_t rec1, rep1, rec0, rep0;
    int del1, del0;
    ecn_run(1, &rec1, &rep1, &del1);
    ecn_run(0, &rec0, &rep0, &del0);
    printf("ECN: a client that reads it heard of %llu of %llu marks; one that does not, %llu of "
           "%llu\n",
           (unsigned long long)rep1, (unsigned long long)rec1, (unsigned long long)rep0,
           (unsigned long long)rec0);
    CHECK(rec1 > 0 && rep1 > 0);
    CHECK(rec0 > 0);
    CHECK_EQ(rep0, 0);
    CHECK_EQ(del1, 3000);
    CHECK_EQ(del0, 3000);
}

static void raw_params(pure_ctx *ctx, const char *hex)
{
    static uint8_t raw[PURE_TPARAMS_ROOM];
    pure_test_wire tw = {.raw = raw, .raw_len = pure_test_unhex(raw, sizeof raw, hex)};
    CHECK_EQ(pure_test_set_wire(ctx, &tw), 0);
}

/* Parameters of a later version (unknown ids, and up to PURE_TPARAMS_ROOM bytes of them) are
 * skipped; the known ones among them count. */
static void test_unknown_params(void)
{
    world *w = world_new(6, 0);
    char hex[2 * PURE_TPARAMS_ROOM + 1];
    /* id 0x40 and length 89 (2-byte varints 4040, 4059), 89 bytes of value, then max_channels
     * 3: 96 bytes in all */
    snprintf(hex, sizeof hex, "4040%04x", 0x4000 | 89);
    for (int i = 0; i < 89; i++)
        strcat(hex, "ab");
    strcat(hex, "010103");
    raw_params(cctx(w), hex);
    connect_srv(w);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->init_len, 142 + 3 + PURE_TPARAMS_ROOM);
    check_peer(w->sv.link, 1, 3, 0, 0);
    check_peer(w->c.link, 1, 16, 65535, 1); /* the server's defaults */
    check_link_works(w);
    world_free(w);
}

/* Malformed parameters in the INIT: the responder answers with a refusal (status 4) and keeps
 * nothing; the initiator fails with PURE_EPROTO at once (one round trip), not at its timeout. */
static void test_malformed_init_params(void)
{
    /* a known id twice, a length past the end, an unknown id twice, a value not filling its
     * length, a varint cut short */
    static const char *const bad[] = {"010101010102", "0105", "0a000a00", "0102ffff", "40"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        world *w = world_new(10 + i, 0);
        raw_params(cctx(w), bad[i]);
        connect_srv(w);
        run_for(w, 1 * SIM_S);
        CHECK_EQ(w->c.closes, 1);
        CHECK_EQ(w->c.info.error, PURE_EPROTO);
        CHECK_EQ(w->c.closed_at, 20 * SIM_MS); /* the refusal's round trip */
        CHECK(strstr(w->c.reason, "transport parameters") != NULL);
        CHECK(w->sv.link == NULL);
        pure_ctx_stats ss;
        pure_ctx_stats_get(sctx(w), &ss);
        CHECK(ss.dropped_malformed >= 1);
        CHECK_EQ(ss.handshakes_refused, 1);
        world_free(w);
    }
}

/* Malformed parameters in the RESP: the initiator ends the handshake with PURE_EPROTO; the
 * responder's link never sees the initiator's first packet and never reaches its application. */
static void test_malformed_resp_params(void)
{
    world *w = world_new(20, 0);
    raw_params(sctx(w), "0302ffff");
    connect_srv(w);
    run_for(w, 12 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EPROTO);
    CHECK_EQ(w->c.closed_at, 20 * SIM_MS);
    CHECK(strstr(w->c.reason, "transport parameters") != NULL);
    CHECK(!w->c.established);
    CHECK(w->sv.link == NULL); /* never accepted */
    pure_ctx_stats ss;
    pure_ctx_stats_get(sctx(w), &ss);
    CHECK_EQ(ss.handshakes_accepted, 0);
    world_free(w);
}

static void speak(pure_ctx *ctx, uint32_t version)
{
    pure_test_wire tw = {.version = version};
    CHECK_EQ(pure_test_set_wire(ctx, &tw), 0);
}

/* An initiator of version 2 to a responder of version 1: a VERSION reply listing 1; the
 * initiator fails with PURE_EVERSION (peer_code 1) after the grace (the reply at 20 ms, the end
 * at 220 ms), not at its 10 s timeout; the responder counts the INIT and keeps nothing. */
static void test_newer_initiator(void)
{
    world *w = world_new(30, 0);
    speak(cctx(w), 2);
    connect_srv(w);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->init[0], PURE_PKT_INIT_V);
    CHECK_EQ(pure_get_u32be(w->init + 1), 2);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EVERSION);
    CHECK_EQ(w->c.info.peer_code, 1);
    CHECK_EQ(w->c.closed_at, 20 * SIM_MS + PURE_HS_HINT_GRACE_MIN);
    CHECK(strstr(w->c.reason, "version") != NULL);
    CHECK(w->versions >= 1);
    CHECK_EQ(w->version_len, PURE_VERSION_FIXED + 4); /* 25 bytes for an INIT of 155 */
    CHECK(w->version_len < w->init_len);
    pure_guard_stats g;
    pure_ctx_guard_stats_get(sctx(w), &g, sizeof g);
    CHECK_EQ(g.inits_other_version, (uint64_t)w->inits);
    CHECK_EQ(g.dh_ops, 0); /* nothing spent on it */
    pure_ctx_stats ss;
    pure_ctx_stats_get(sctx(w), &ss);
    CHECK_EQ(ss.handshakes_accepted, 0);
    CHECK(w->sv.link == NULL);
    printf("version 2 -> 1: %s (peer speaks %llu) after %.1f ms; the responder counted %llu "
           "INITs of another version\n",
           pure_strerror(w->c.info.error), (unsigned long long)w->c.info.peer_code,
           (double)w->c.closed_at / 1e6, (unsigned long long)g.inits_other_version);
    world_free(w);
}

/* An initiator of version 1 to a responder that speaks only version 2: the same from the other
 * side (peer_code 2). */
static void test_newer_responder(void)
{
    world *w = world_new(31, 0);
    speak(sctx(w), 2);
    connect_srv(w);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EVERSION);
    CHECK_EQ(w->c.info.peer_code, 2);
    CHECK_EQ(w->c.closed_at, 20 * SIM_MS + PURE_HS_HINT_GRACE_MIN);
    pure_guard_stats g;
    pure_ctx_guard_stats_get(sctx(w), &g, sizeof g);
    CHECK(g.inits_other_version >= 1);
    world_free(w);
}

/* A silent responder answers nothing to an INIT of another version (a scan must not find it): the
 * initiator times out; the responder counts it. */
static void test_silent_no_version_reply(void)
{
    world *w = world_new(32, 1);
    speak(cctx(w), 2);
    connect_srv(w);
    run_for(w, 12 * SIM_S);
    CHECK_EQ(w->versions, 0);
    CHECK_EQ(w->c.info.error, PURE_ETIMEDOUT);
    pure_guard_stats g;
    pure_ctx_guard_stats_get(sctx(w), &g, sizeof g);
    CHECK(g.inits_other_version >= 2);
    CHECK(g.inits_silent >= 2);
    world_free(w);
}

/* A VERSION reply for the client's INIT, as the responder makes it, with `versions`. */
static int read_version(world *w, const pure_addr *from, const uint32_t *versions, size_t k,
                        int spoil_echo)
{
    uint8_t r[PURE_VERSION_FIXED + 4 * 8];
    r[0] = PURE_PKT_VERSION;
    memcpy(r + 1, w->init + 1, 4);
    memcpy(r + 5, w->init + PURE_INIT_FIXED, PURE_VERSION_ECHO_LEN);
    r[5] ^= (uint8_t)spoil_echo;
    for (size_t i = 0; i < k; i++)
        pure_put_u32be(r + PURE_VERSION_FIXED + 4 * i, versions[i]);
    return pure_ctx_read(cctx(w), from, r, PURE_VERSION_FIXED + 4 * k, sim_now(w->s));
}

/* Forged VERSION replies lose to the real RESP: a wrong echo, another address, a list with our
 * own version are dropped and counted; a good-looking one (an on-path forger) is a hint only and
 * the RESP within the grace opens the link. Malformed ones are junk. */
static void test_forged_version(void)
{
    world *w = world_new(33, 0);
    pure_addr srv = sim_addr(w->s, w->srv), other = srv;
    other.bytes[3] = 77;
    connect_srv(w);
    run_for(w, 1 * SIM_MS);
    const uint32_t v2[] = {2, 3}, v1[] = {3, 1};
    CHECK_EQ(read_version(w, &srv, v2, 2, 1), PURE_ECRYPTO);   /* wrong echo */
    CHECK_EQ(read_version(w, &other, v2, 2, 0), PURE_ECRYPTO); /* elsewhere */
    CHECK_EQ(read_version(w, &srv, v1, 2, 0), PURE_ECRYPTO);   /* lists ours */
    pure_guard_stats g;
    pure_ctx_guard_stats_get(cctx(w), &g, sizeof g);
    CHECK_EQ(g.versions_bad, 3);
    CHECK_EQ(read_version(w, &srv, v2, 2, 0), 0); /* a hint */
    uint8_t shortv[PURE_VERSION_FIXED + 2] = {PURE_PKT_VERSION};
    CHECK_EQ(pure_ctx_read(cctx(w), &srv, shortv, sizeof shortv, sim_now(w->s)), PURE_EPROTO);
    run_for(w, 2 * SIM_S);
    CHECK(w->c.established);
    CHECK_EQ(w->c.closes, 0);
    check_link_works(w);
    world_free(w);
}

/* ---- over real sockets: a client of version 2 and a server of version 1, each with its own
 * pure_loop (the server's on a thread) ---- */

typedef struct rside {
    pure_ctx *ctx;
    pure_loop *loop;
    pure_link *link;
    int closes, error;
    uint64_t peer_code;
} rside;

static void r_closed(pure_link *l, void *u, const pure_close_info *info)
{
    rside *s = u;
    s->closes++;
    s->error = info->error;
    s->peer_code = info->peer_code;
    pure_loop_stop(s->loop);
}

static const pure_callbacks r_cbs = {.on_closed = r_closed};

static void *r_serve(void *arg)
{
    rside *s = arg;
    CHECK_EQ(pure_loop_run(s->loop, PURE_LOOP_FOREVER), 0);
    return NULL;
}

static int r_side(rside *s, int server)
{
    memset(s, 0, sizeof *s);
    pure_settings st;
    pure_settings_default(&st);
    CHECK_EQ(pure_keygen(st.private_key), 0);
    st.callbacks = &r_cbs;
    st.allow_any = server;
    if (pure_ctx_new(&st, &s->ctx) != 0)
        return -1;
    if (server)
        CHECK_EQ(pure_ctx_add_service(s->ctx, "svc"), 0);
    return pure_loop_new(s->ctx, "127.0.0.1:0", &s->loop);
}

static void real_mismatch(uint32_t cli_version, uint32_t srv_version)
{
    rside srv, cli;
    if (r_side(&srv, 1) != 0 || r_side(&cli, 0) != 0) {
        CHECK(0);
        return;
    }
    if (cli_version)
        speak(cli.ctx, cli_version);
    if (srv_version)
        speak(srv.ctx, srv_version);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, r_serve, &srv), 0);
    char to_s[PURE_ADDR_STRLEN];
    snprintf(to_s, sizeof to_s, "127.0.0.1:%u", pure_loop_port(srv.loop));
    pure_addr to;
    CHECK_EQ(pure_addr_from_string(&to, to_s), 0);
    uint64_t t0 = pure_now();
    CHECK_EQ(pure_connect(cli.ctx, &to, pure_ctx_public_key(srv.ctx), "svc", &cli, &cli.link, t0),
             0);
    CHECK_EQ(pure_loop_run(cli.loop, 5ull * SIM_S), 0);
    uint64_t took = pure_now() - t0;
    pure_loop_stop(srv.loop);
    pthread_join(th, NULL);
    CHECK_EQ(cli.closes, 1);
    CHECK_EQ(cli.error, PURE_EVERSION);
    CHECK_EQ(cli.peer_code, srv_version ? srv_version : PURE_PROTOCOL_VERSION);
    CHECK(took >= PURE_HS_HINT_GRACE_MIN && took < 1 * SIM_S);
    pure_guard_stats g;
    pure_ctx_guard_stats_get(srv.ctx, &g, sizeof g);
    CHECK(g.inits_other_version >= 1);
    printf("over loopback, client version %u to server version %u: %s after %.1f ms\n",
           cli_version ? cli_version : 1, srv_version ? srv_version : 1, pure_strerror(cli.error),
           (double)took / 1e6);
    pure_loop_free(cli.loop);
    pure_ctx_free(cli.ctx);
    pure_loop_free(srv.loop);
    pure_ctx_free(srv.ctx);
}

static void test_real_sockets(void)
{
    real_mismatch(2, 0);
    real_mismatch(0, 2);
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_both_on);
    RUN(test_off_to_on);
    RUN(test_peer_without_params);
    RUN(test_unknown_params);
    RUN(test_ecn_only_to_readers);
    RUN(test_different_windows);
    RUN(test_malformed_init_params);
    RUN(test_malformed_resp_params);
    RUN(test_newer_initiator);
    RUN(test_newer_responder);
    RUN(test_silent_no_version_reply);
    RUN(test_forged_version);
    RUN(test_real_sockets);
    return pure_test_finish();
}
