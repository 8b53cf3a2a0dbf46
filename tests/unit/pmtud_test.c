/* SPDX-License-Identifier: MIT */
/* pmtud_test.c: the path MTU search on its own: the ladder, a search on a 1500, 1400 and 1280
 * path, random loss of a probe, black holes by loss and by timeout, Packet Too Big hints (valid
 * and not), a host's refusal, the raise timer, and what an idle link keeps. */
#include "pmtud.h"
#include "test.h"

#define S 1000000000ull
#define BASE 1200
#define LIMIT 1472

/* The path: datagrams up to `mtu` bytes of payload arrive, larger ones vanish. Sends every probe
 * the search asks for and answers it at once. Returns the probes sent. */
static int round_trip(pure_pmtud *p, uint16_t mtu, uint64_t now)
{
    uint16_t sent[16];
    int n = 0;
    for (uint16_t s; n < 16 && (s = pure_pmtud_probe_size(p, now)) != 0;) {
        pure_pmtud_on_probe_sent(p, s);
        sent[n++] = s;
    }
    for (int i = 0; i < n; i++) {
        if (sent[i] <= mtu)
            pure_pmtud_on_probe_acked(p, sent[i], now);
        else
            pure_pmtud_on_probe_lost(p, sent[i], now);
    }
    return n;
}

/* Runs a whole search; returns the round trips it took. */
static int search(pure_pmtud *p, uint16_t mtu, uint64_t now)
{
    int rounds = 0;
    while (round_trip(p, mtu, now) > 0 && rounds < 20)
        rounds++;
    return rounds;
}

static void fresh(pure_pmtud *p)
{
    pure_pmtud_init(p, BASE, LIMIT, BASE, 0, 0);
}

static void test_ladder(void)
{
    pure_pmtud p;
    fresh(&p);
    CHECK_EQ(pure_pmtud_step(&p, 0), LIMIT);
    int n = 0;
    for (unsigned i = 1; i < 16; i++) {
        uint16_t s = pure_pmtud_step(&p, i);
        if (s) {
            CHECK(s > BASE && s < LIMIT);
            n++;
        }
    }
    CHECK_EQ(n, 8); /* 1464 .. 1232: 1472 is the maximum itself */
    /* a jumbo maximum probes itself and every common size */
    pure_pmtud_init(&p, BASE, 8952, BASE, 0, 0);
    CHECK_EQ(pure_pmtud_step(&p, 0), 8952);
    CHECK_EQ(pure_pmtud_step(&p, 1), 1472);
    /* the maximum at the base: nothing to search */
    pure_pmtud_init(&p, BASE, BASE, BASE, 0, 0);
    CHECK_EQ(p.state, PURE_PMTUD_DISABLED);
    CHECK_EQ(pure_pmtud_on_burst(&p, 0), 0);
    CHECK_EQ(pure_pmtud_probe_size(&p, 100 * 600 * S), 0);
    CHECK_EQ(pure_pmtud_on_pto(&p, 5), 0);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
}

static void test_no_search_before_bulk(void)
{
    pure_pmtud p;
    fresh(&p);
    CHECK_EQ(p.state, PURE_PMTUD_BASE);
    CHECK_EQ(pure_pmtud_probe_size(&p, 0), 0);
    CHECK(!pure_pmtud_due(&p));
    CHECK_EQ(pure_pmtud_on_burst(&p, 0), 1);
    CHECK(pure_pmtud_due(&p));
    CHECK_EQ(pure_pmtud_on_burst(&p, 0), 0); /* once */
}

/* A 1500-byte path: one probe, one round trip. 1400 and 1280 paths (IPv4 and IPv6): the maximum
 * is lost, the ladder finds the size in the second round trip; one more round tries the next
 * step up, then the search is complete. */
static void test_search_finds_the_size(void)
{
    static const uint16_t paths[] = {1472, 1452, 1372, 1352, 1252, 1232};
    for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        pure_pmtud p;
        fresh(&p);
        pure_pmtud_on_burst(&p, 0);
        CHECK_EQ(round_trip(&p, paths[i], 0), 1);
        if (paths[i] != LIMIT) {
            CHECK_EQ(pure_pmtud_size(&p), BASE);
            CHECK(round_trip(&p, paths[i], 0) > 1);
        }
        CHECK_EQ(pure_pmtud_size(&p), paths[i]);
        int more = search(&p, paths[i], 0);
        CHECK_EQ(more, paths[i] == LIMIT ? 0 : PURE_PMTUD_MAX_PROBES - 2);
        CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
        CHECK_EQ(pure_pmtud_size(&p), paths[i]);
        CHECK_EQ(p.raise_at, PURE_PMTUD_RAISE_NS);
    }
    /* an uncommon MTU: the largest common size below it */
    pure_pmtud p;
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    search(&p, 1300, 0);
    CHECK_EQ(pure_pmtud_size(&p), 1252);
    /* nothing above the base gets through */
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    search(&p, 1210, 0);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
}

/* Probes lost at random: the maximum's in the first round, so the ladder (the maximum again
 * among them) finds it; then in the ladder round the maximum's again, so the size found is 1464
 * and the next round probes the maximum once more. */
static void test_random_probe_loss(void)
{
    pure_pmtud p;
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    round_trip(&p, 1464, 0); /* as if the 1472 probe were lost */
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(round_trip(&p, LIMIT, 0), 9);
    CHECK_EQ(pure_pmtud_size(&p), LIMIT);
    CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    round_trip(&p, 1464, 0);
    round_trip(&p, 1464, 0);
    CHECK_EQ(pure_pmtud_size(&p), 1464);
    CHECK_EQ(p.state, PURE_PMTUD_SEARCHING);
    CHECK_EQ(pure_pmtud_probe_size(&p, 0), LIMIT);
    search(&p, LIMIT, 0);
    CHECK_EQ(pure_pmtud_size(&p), LIMIT);
    CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
}

/* The raise timer: a complete search runs again once its time has come (when the link sends:
 * no timer), and finds a path that grew. */
static void test_search_again_later(void)
{
    pure_pmtud p;
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    search(&p, 1372, 0);
    CHECK_EQ(pure_pmtud_probe_size(&p, PURE_PMTUD_RAISE_NS - 1), 0);
    CHECK(pure_pmtud_probe_size(&p, PURE_PMTUD_RAISE_NS) > 1372);
    CHECK_EQ(p.state, PURE_PMTUD_SEARCHING);
    search(&p, LIMIT, PURE_PMTUD_RAISE_NS);
    CHECK_EQ(pure_pmtud_size(&p), LIMIT);
}

static void found(pure_pmtud *p, uint16_t size)
{
    fresh(p);
    pure_pmtud_on_burst(p, 0);
    search(p, size, 0);
    CHECK_EQ(pure_pmtud_size(p), size);
}

/* One ACK at `now` that acknowledges packets of these sizes (0 ends the list), sent at `sent`.
 * Returns ack_end's answer. */
static int ack_sent(pure_pmtud *p, uint64_t now, uint64_t sent, uint16_t s1, uint16_t s2)
{
    pure_pmtud_ack_begin(p);
    if (s1)
        pure_pmtud_on_acked(p, s1, sent, now);
    if (s2)
        pure_pmtud_on_acked(p, s2, sent, now);
    return pure_pmtud_ack_end(p);
}

static int ack(pure_pmtud *p, uint64_t now, uint16_t s1, uint16_t s2)
{
    return ack_sent(p, now, now, s1, s2);
}

/* Full-size packets vanish and an ACK acknowledges only smaller ones: back to the base; the
 * search resumes at the next acknowledgement and finds the new, smaller size. Full-size packets
 * acknowledged with the losses (congestion), fewer losses, small packets' losses, or losses of
 * packets sent before a full-size packet that was acknowledged (slow start's tail, found by the
 * time threshold once its queue drained) do not count. Times: packets are sent at S + k ms. */
static void test_black_hole_by_loss(void)
{
    const uint64_t ms = 1000000;
    pure_pmtud p;
    found(&p, LIMIT);
    for (int i = 0; i < PURE_PMTUD_BH_LOSSES; i++)
        pure_pmtud_on_lost(&p, LIMIT, S + (uint64_t)i * ms);
    CHECK_EQ(ack_sent(&p, S + 50 * ms, S + 4 * ms, 100, LIMIT), 0); /* full-size still arrive */
    for (int i = 0; i < PURE_PMTUD_BH_LOSSES - 1; i++)
        pure_pmtud_on_lost(&p, LIMIT, S + (uint64_t)(5 + i) * ms);
    pure_pmtud_on_lost(&p, 500, S + 8 * ms); /* a small packet's loss: not the size */
    CHECK_EQ(ack_sent(&p, S + 60 * ms, S + 9 * ms, 100, 0), 0);
    CHECK_EQ(pure_pmtud_size(&p), LIMIT);
    /* the tail of a congestion event: full-size packets sent before one that was acknowledged
     * (at S + 4 ms), declared lost late, beside small retransmissions acknowledged */
    for (int i = 0; i < 10; i++)
        pure_pmtud_on_lost(&p, LIMIT, S + 3 * ms);
    CHECK_EQ(ack_sent(&p, S + 70 * ms, S + 20 * ms, 100, 0), 0);
    CHECK_EQ(pure_pmtud_size(&p), LIMIT);
    pure_pmtud_on_lost(&p, LIMIT, S + 21 * ms); /* the third since S + 4 ms */
    CHECK_EQ(ack_sent(&p, S + 80 * ms, S + 22 * ms, 100, BASE), 1);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(p.state, PURE_PMTUD_BASE);
    CHECK_EQ(pure_pmtud_probe_size(&p, S), 0); /* waits for the path to answer */
    CHECK_EQ(ack(&p, S, BASE, 0), 0);
    CHECK_EQ(p.state, PURE_PMTUD_SEARCHING);
    search(&p, 1252, S);
    CHECK_EQ(pure_pmtud_size(&p), 1252);
    /* at the base there is nothing to fall back to */
    for (int i = 0; i < 10; i++)
        pure_pmtud_on_lost(&p, 1252, S + 100 * ms);
    CHECK_EQ(ack(&p, S + 200 * ms, 100, 0), 1);
    for (int i = 0; i < 10; i++)
        pure_pmtud_on_lost(&p, BASE, S + 201 * ms);
    CHECK_EQ(ack(&p, S + 300 * ms, 100, 0), 0);
}

/* Probe timeouts in a row with full-size packets: a black hole (every packet of a bulk transfer is
 * full-size, so nothing smaller gets acknowledged first). At the base: ERROR, until a packet is
 * acknowledged. */
static void test_black_hole_by_timeout(void)
{
    pure_pmtud p;
    found(&p, 1372);
    CHECK_EQ(pure_pmtud_on_pto(&p, 1), 0);
    CHECK_EQ(pure_pmtud_size(&p), 1372);
    CHECK_EQ(pure_pmtud_on_pto(&p, PURE_PMTUD_BH_PTOS), 1);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(pure_pmtud_on_pto(&p, PURE_PMTUD_BH_PTOS + 1), 0);
    CHECK_EQ(p.state, PURE_PMTUD_ERROR);
    CHECK_EQ(pure_pmtud_probe_size(&p, S), 0);
    CHECK_EQ(ack(&p, S, BASE, 0), 0);
    CHECK_EQ(p.state, PURE_PMTUD_SEARCHING);
    search(&p, 1372, S);
    CHECK_EQ(pure_pmtud_size(&p), 1372);
}

/* Packet Too Big: ignored below the base or at or above the maximum probed; otherwise probes stop
 * above it, and a size in use above it falls to the base until a probe of the hint is acked. */
static void test_packet_too_big(void)
{
    pure_pmtud p;
    found(&p, LIMIT);
    CHECK_EQ(pure_pmtud_on_ptb(&p, 1100, S), 0);
    CHECK_EQ(pure_pmtud_on_ptb(&p, LIMIT, S), 0);
    CHECK_EQ(pure_pmtud_on_ptb(&p, 60000, S), 0);
    CHECK_EQ(pure_pmtud_size(&p), LIMIT);
    CHECK_EQ(pure_pmtud_on_ptb(&p, 1380, S), 1);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(pure_pmtud_probe_size(&p, S), 1380); /* the hint itself, first */
    CHECK_EQ(round_trip(&p, 1380, S), 1);         /* the hint alone */
    CHECK_EQ(pure_pmtud_size(&p), 1380);
    CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
    /* a hint during a search, for a size above the one in use: only the probes above it stop */
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    CHECK_EQ(pure_pmtud_on_ptb(&p, 1352, 0), 1);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(round_trip(&p, 1352, 0), 1);
    CHECK_EQ(pure_pmtud_size(&p), 1352);
    /* the raise timer forgets the hint */
    CHECK(pure_pmtud_probe_size(&p, PURE_PMTUD_RAISE_NS) == LIMIT);
}

/* This host refuses a size: the size in use and the probes fall to it at once. */
static void test_refused(void)
{
    pure_pmtud p;
    found(&p, LIMIT);
    pure_pmtud_on_refused(&p, 1400, S);
    CHECK_EQ(pure_pmtud_size(&p), 1400);
    CHECK_EQ(pure_pmtud_probe_size(&p, S), 0);
    pure_pmtud_on_refused(&p, 900, S);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    /* during a search: it starts again below the refused size */
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    CHECK_EQ(pure_pmtud_probe_size(&p, 0), LIMIT);
    pure_pmtud_on_probe_sent(&p, LIMIT);
    pure_pmtud_on_refused(&p, 1400, 0);
    CHECK_EQ(pure_pmtud_probe_size(&p, 0), 1400);
    search(&p, 1400, 0);
    CHECK_EQ(pure_pmtud_size(&p), 1400);
    CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
}

/* A probe that lands twice, or one never asked for, changes nothing; a probe acked larger than
 * the size in use is proof whichever search sent it. */
static void test_stray_probes(void)
{
    pure_pmtud p;
    fresh(&p);
    pure_pmtud_on_burst(&p, 0);
    uint16_t s = pure_pmtud_probe_size(&p, 0);
    pure_pmtud_on_probe_sent(&p, s);
    CHECK_EQ(pure_pmtud_on_probe_lost(&p, s, 0), 0);
    CHECK_EQ(pure_pmtud_on_probe_lost(&p, s, 0), 0);
    CHECK_EQ(pure_pmtud_on_probe_lost(&p, 1333, 0), 0);
    CHECK_EQ(pure_pmtud_size(&p), BASE);
    CHECK_EQ(pure_pmtud_on_probe_acked(&p, 1372, 0), 1);
    CHECK_EQ(pure_pmtud_size(&p), 1372);
    CHECK_EQ(pure_pmtud_on_probe_acked(&p, 1300, 0), 0); /* smaller: nothing */
    CHECK_EQ(pure_pmtud_size(&p), 1372);
    search(&p, 1372, 0);
    CHECK_EQ(p.state, PURE_PMTUD_COMPLETE);
}

/* What an idle link keeps: nothing before a search, the time of the next search after one. */
static void test_park(void)
{
    pure_pmtud p;
    fresh(&p);
    uint64_t epoch = 5 * S;
    CHECK_EQ(pure_pmtud_park(&p, epoch), 0);
    pure_pmtud_on_burst(&p, 10 * S);
    CHECK_EQ(pure_pmtud_park(&p, epoch), 1); /* cut short: search again at once */
    search(&p, 1372, 10 * S);
    uint32_t parked = pure_pmtud_park(&p, epoch);
    CHECK_EQ(parked, 1 + (10 * S + PURE_PMTUD_RAISE_NS - epoch) / S);
    pure_pmtud q;
    pure_pmtud_init(&q, BASE, LIMIT, 1372, parked, epoch);
    CHECK_EQ(q.state, PURE_PMTUD_COMPLETE);
    CHECK_EQ(pure_pmtud_size(&q), 1372);
    CHECK_EQ(pure_pmtud_probe_size(&q, 10 * S + PURE_PMTUD_RAISE_NS - 1), 0);
    CHECK(pure_pmtud_probe_size(&q, 10 * S + PURE_PMTUD_RAISE_NS) > 1372);
    /* the size is clamped to the base and the maximum */
    pure_pmtud_init(&q, BASE, LIMIT, 9000, 1, 0);
    CHECK_EQ(pure_pmtud_size(&q), LIMIT);
    pure_pmtud_init(&q, BASE, LIMIT, 100, 0, 0);
    CHECK_EQ(pure_pmtud_size(&q), BASE);
}

int main(void)
{
    RUN(test_ladder);
    RUN(test_no_search_before_bulk);
    RUN(test_search_finds_the_size);
    RUN(test_random_probe_loss);
    RUN(test_search_again_later);
    RUN(test_black_hole_by_loss);
    RUN(test_black_hole_by_timeout);
    RUN(test_packet_too_big);
    RUN(test_refused);
    RUN(test_stray_probes);
    RUN(test_park);
    return pure_test_finish();
}
