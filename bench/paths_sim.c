/* SPDX-License-Identifier: MIT */
/* paths_sim: Pure through real-path bottlenecks in the simulator's virtual time — the "before"
 * matrix for congestion-control work, to compare with what bench/run.py measures through udpfwd.
 * Each row is one bottleneck (a rate each way, a one-way delay, a drop-tail queue of some
 * packets, or CoDel, and optionally random loss on the data direction); in it, separately:
 *  - Pure alone (one link, 16 KiB messages, always more to send): goodput, Pure's own loss
 *    rate (packets_lost / packets_sent) and the share of those losses it did not take as
 *    congestion (random_losses), the bottleneck's queueing delay median and p95;
 *  - the simulator's reference CUBIC flow alone (tests/sim/sim_ref.h), the same figures;
 *  - Pure beside that CUBIC flow (the CUBIC flow starts 2 s later): each one's share;
 *  - two Pure links from different endpoints (the second 2 s later): Jain's fairness index.
 * Measured from 5 s to `seconds` (default 25). Not a test: it prints figures and asserts
 * nothing. Uses the public API, sim.c, sim_ref.c and null crypto (the crypto is not what is
 * measured, and it makes a row take a second or two).
 *
 * With --controls it runs instead, per row, the controls for "Pure + CUBIC": two reference flows
 * (the second 2 s later), and the reference first with Pure 2 s later. --ref ngtcp2-0.12 (or
 * quinn-0.9) makes the reference flows the simulator's model of ngtcp2 0.12's (quinn 0.9's) CUBIC
 * (sim_ref.h) and adds, with
 * --controls, that model first beside an RFC 9438 CUBIC flow.
 *
 * With --drain N it runs instead what `pure drain HOST:PORT N 16384` does through
 * `udpfwd --rate ... --queue-packets ... --delay ...`: Pure alone sends N 16 KiB messages, and it
 * prints the time from connecting until the server has them all, and the bottleneck's counters,
 * to compare with the real-socket run (bench/README.md). --trace MS (with --drain) prints to
 * stderr, every MS of virtual time, the link's window, bytes in flight (both in packets of 1,472
 * bytes), smoothed and minimum RTT, the goodput over the step and the losses so far: where a
 * drain loses its time (docs/congestion.md).
 *
 * Usage: paths_sim [--rate MBIT] [--rtt MS] [--seconds S] [--drain N [--trace MS]] [--json]
 * [--controls]
 * [--ref cubic|ngtcp2-0.12|quinn-0.9] [ROW...] ROW is one of the names printed in the first column
 * (all by default). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "sim.h"
#include "sim_ref.h"

#define MSG_SIZE 16384
#define WARMUP (5 * SIM_S)
#define PKT 1472

typedef struct row {
    const char *name;
    double queue_bdp; /* queue limit in BDPs (0: use queue_pkts) */
    uint32_t queue_pkts;
    int codel;
    double loss; /* random loss on the data direction */
} row;

static const row rows[] = {
    {"q10", 0, 10, 0, 0},         {"q20", 0, 20, 0, 0},      {"q0.25bdp", 0.25, 0, 0, 0},
    {"q1bdp", 1, 0, 0, 0},        {"q4bdp", 4, 0, 0, 0},     {"codel", 0, 1000, 1, 0},
    {"loss0.5%", 1, 0, 0, 0.005}, {"loss2%", 1, 0, 0, 0.02},
};

/* One Pure bulk flow: a client endpoint that keeps its link's backlog full of 16 KiB messages,
 * a server endpoint that counts what arrives. */
typedef struct pflow {
    sim *s;
    int cli, srv;
    pure_link *cl;
    uint64_t start;
    uint64_t limit;  /* messages to send (0: no end) */
    uint64_t queued; /* messages accepted by pure_link_send */
    uint64_t bytes;  /* received by the server */
    uint8_t *msg;
} pflow;

static void pump(pflow *f)
{
    while (f->cl && (f->limit == 0 || f->queued < f->limit) &&
           pure_link_send(f->cl, f->msg, MSG_SIZE) >= 0)
        f->queued++;
}

static int on_accept(pure_link *link, const char *service, const uint8_t *key, void *user)
{
    (void)service, (void)key;
    pure_link_set_user(link, user);
    return 0;
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    (void)link, (void)data;
    ((pflow *)user)->bytes += len;
}

static void on_writable(pure_link *link, void *user)
{
    pflow *f = user;
    if (link == f->cl)
        pump(f);
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    pflow *f = user;
    (void)info;
    if (link == f->cl)
        f->cl = NULL;
}

static const pure_callbacks callbacks = {
    .on_accept = on_accept,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_closed = on_closed,
};

static void pflow_add(pflow *f, sim *s, uint64_t start)
{
    memset(f, 0, sizeof *f);
    f->s = s;
    f->start = start;
    f->msg = calloc(1, MSG_SIZE);
    for (int server = 0; server < 2; server++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &callbacks;
        st.user = f;
        st.allow_any = 1;
        st.crypto = &pure_crypto_null;
        int ep = sim_add(s, &st);
        if (server) {
            f->srv = ep;
            pure_ctx_add_service(sim_ctx(s, ep), "drain");
        } else {
            f->cli = ep;
        }
    }
}

static void pflow_connect(pflow *f)
{
    pure_addr to = sim_addr(f->s, f->srv);
    if (pure_connect(sim_ctx(f->s, f->cli), &to, pure_ctx_public_key(sim_ctx(f->s, f->srv)),
                     "drain", f, &f->cl, sim_now(f->s)) == 0)
        pump(f);
}

static void pflow_stats(const pflow *f, pure_link_stats *st)
{
    memset(st, 0, sizeof *st);
    if (f->cl)
        pure_link_stats_get(f->cl, st);
}

typedef struct cell {
    sim *s;
    int fwd, rev; /* the bottlenecks */
    const row *r;
    uint64_t rate, delay;
} cell;

static void cell_new(cell *c, const row *r, uint64_t rate, uint64_t rtt, uint64_t seed)
{
    c->s = sim_new(seed);
    c->r = r;
    c->rate = rate;
    c->delay = rtt / 2;
    double bdp = (double)rate / 8 * ((double)rtt / 1e9) / PKT;
    sim_bottleneck b = {.rate = rate, .codel = r->codel};
    b.limit_packets = r->queue_bdp > 0 ? (uint32_t)llround(r->queue_bdp * bdp) : r->queue_pkts;
    c->fwd = sim_bottleneck_add(c->s, &b);
    c->rev = sim_bottleneck_add(c->s, &b);
}

/* Routes the pair a (sender) -> b (receiver) through the cell's bottlenecks. */
static void cell_route(cell *c, int a, int b)
{
    sim_path fwd = {.delay = c->delay, .loss = c->r->loss};
    sim_path rev = {.delay = c->delay};
    sim_set_path(c->s, a, b, &fwd);
    sim_set_path(c->s, b, a, &rev);
    sim_path_bottleneck(c->s, a, b, c->fwd);
    sim_path_bottleneck(c->s, b, a, c->rev);
}

/* The reference flows' controller (--ref): the simulator's RFC 9438 CUBIC, or its model of
 * ngtcp2 0.12's or quinn 0.9's (sim_ref.h); refs[ref] names it on the command line and in the
 * tables (refs[ref_i]). */
static const struct {
    const char *arg, *label;
    int cc;
} refs[] = {{"cubic", "CUBIC", SIM_REF_CUBIC},
            {"ngtcp2-0.12", "ngtcp2-0.12", SIM_REF_CUBIC_NGTCP2_012},
            {"quinn-0.9", "quinn-0.9", SIM_REF_CUBIC_QUINN_09}};
static size_t ref_i; /* refs[0], CUBIC, by default */

/* Selects the reference named arg (refs[].arg); returns 0, or -1 if there is none. */
static int ref_select(const char *arg)
{
    for (size_t i = 0; i < sizeof refs / sizeof *refs; i++)
        if (strcmp(arg, refs[i].arg) == 0) {
            ref_i = i;
            return 0;
        }
    return -1;
}

static sim_ref *cell_ref_cc(cell *c, int cc, uint64_t start)
{
    sim_ref *r = sim_ref_new(c->s, cc, PKT, start);
    cell_route(c, sim_ref_sender(r), sim_ref_receiver(r));
    return r;
}

static sim_ref *cell_ref(cell *c, uint64_t start)
{
    return cell_ref_cc(c, refs[ref_i].cc, start);
}

static uint64_t ref_bytes(const sim_ref *r)
{
    sim_ref_stats st;
    sim_ref_stats_get(r, &st);
    return st.bytes_received;
}

typedef struct result {
    double pure_mbit, pure_loss, pure_q50, pure_q95;
    double pure_random; /* share of Pure's losses it did not take as congestion */
    double ref_mbit, ref_loss, ref_q50, ref_q95;
    double mix_pure, mix_ref; /* Mbit/s each, side by side */
    double two_a, two_b, jain;
} result;

static double mbit(uint64_t bytes, uint64_t ns)
{
    return (double)bytes * 8 / ((double)ns / 1e9) / 1e6;
}

static void run_row(const row *r, uint64_t rate, uint64_t rtt, uint64_t end, result *out)
{
    uint64_t span = end - WARMUP;
    sim_bottleneck_stats bs;
    memset(out, 0, sizeof *out);
    /* Pure alone */
    {
        cell c;
        cell_new(&c, r, rate, rtt, 1);
        pflow f;
        pflow_add(&f, c.s, 0);
        cell_route(&c, f.cli, f.srv);
        pflow_connect(&f);
        sim_run(c.s, NULL, NULL, WARMUP);
        pure_link_stats a, b;
        pflow_stats(&f, &a);
        uint64_t b0 = f.bytes;
        sim_bottleneck_stats_reset(c.s, c.fwd);
        sim_run(c.s, NULL, NULL, end);
        pflow_stats(&f, &b);
        sim_bottleneck_stats_get(c.s, c.fwd, &bs);
        out->pure_mbit = mbit(f.bytes - b0, span);
        uint64_t sent = b.packets_sent - a.packets_sent, lost = b.packets_lost - a.packets_lost;
        out->pure_loss = sent ? (double)lost / (double)sent : 0;
        out->pure_random = lost ? (double)(b.random_losses - a.random_losses) / (double)lost : 0;
        out->pure_q50 = (double)bs.qdelay_median / 1e6;
        out->pure_q95 = (double)bs.qdelay_p95 / 1e6;
        sim_free(c.s);
        free(f.msg);
    }
    /* the reference CUBIC flow alone */
    {
        cell c;
        cell_new(&c, r, rate, rtt, 2);
        sim_ref *ref = cell_ref(&c, 0);
        sim_run(c.s, NULL, NULL, WARMUP);
        sim_ref_stats a, b;
        sim_ref_stats_get(ref, &a);
        sim_bottleneck_stats_reset(c.s, c.fwd);
        sim_run(c.s, NULL, NULL, end);
        sim_ref_stats_get(ref, &b);
        sim_bottleneck_stats_get(c.s, c.fwd, &bs);
        out->ref_mbit = mbit(b.bytes_received - a.bytes_received, span);
        out->ref_loss = b.sent > a.sent ? (double)(b.lost - a.lost) / (double)(b.sent - a.sent) : 0;
        out->ref_q50 = (double)bs.qdelay_median / 1e6;
        out->ref_q95 = (double)bs.qdelay_p95 / 1e6;
        sim_ref_free(ref);
        sim_free(c.s);
    }
    /* Pure beside CUBIC */
    {
        cell c;
        cell_new(&c, r, rate, rtt, 3);
        pflow f;
        pflow_add(&f, c.s, 0);
        cell_route(&c, f.cli, f.srv);
        sim_ref *ref = cell_ref(&c, 2 * SIM_S);
        pflow_connect(&f);
        if (getenv("TRACE")) {
            for (uint64_t t = 100 * SIM_MS; t < end; t += 100 * SIM_MS) {
                sim_run(c.s, NULL, NULL, t);
                pure_link_stats ps;
                pflow_stats(&f, &ps);
                sim_ref_stats rs;
                sim_ref_stats_get(ref, &rs);
                printf(
                    "T %.1f pure cwnd %6.1f infl %6.1f srtt %5.1f lost %5llu rand %5llu sent %7llu | ref cwnd %6.1f srtt %5.1f lost %5llu sent %7llu\n",
                    t / 1e9, ps.cwnd / 1472.0, ps.bytes_in_flight / 1472.0, ps.rtt_ns / 1e6,
                    (unsigned long long)ps.packets_lost, (unsigned long long)ps.random_losses,
                    (unsigned long long)ps.packets_sent, rs.cwnd, rs.srtt / 1e6,
                    (unsigned long long)rs.lost, (unsigned long long)rs.sent);
            }
        }
        sim_run(c.s, NULL, NULL, WARMUP);
        uint64_t p0 = f.bytes, r0 = ref_bytes(ref);
        sim_run(c.s, NULL, NULL, end);
        out->mix_pure = mbit(f.bytes - p0, span);
        out->mix_ref = mbit(ref_bytes(ref) - r0, span);
        sim_ref_free(ref);
        sim_free(c.s);
        free(f.msg);
    }
    /* two Pure links */
    {
        cell c;
        cell_new(&c, r, rate, rtt, 4);
        pflow f1, f2;
        pflow_add(&f1, c.s, 0);
        pflow_add(&f2, c.s, 0);
        cell_route(&c, f1.cli, f1.srv);
        cell_route(&c, f2.cli, f2.srv);
        pflow_connect(&f1);
        sim_run(c.s, NULL, NULL, 2 * SIM_S);
        pflow_connect(&f2);
        sim_run(c.s, NULL, NULL, WARMUP);
        uint64_t a0 = f1.bytes, b0 = f2.bytes;
        sim_run(c.s, NULL, NULL, end);
        double x = mbit(f1.bytes - a0, span), y = mbit(f2.bytes - b0, span);
        out->two_a = x;
        out->two_b = y;
        out->jain = x + y > 0 ? (x + y) * (x + y) / (2 * (x * x + y * y)) : 0;
        sim_free(c.s);
        free(f1.msg);
        free(f2.msg);
    }
}

/* Two reference flows through the row's path, controller cc_a from 0 s and cc_b from 2 s:
 * each one's Mbit/s from WARMUP to end in out[0], out[1]. */
static void two_refs(const row *r, uint64_t rate, uint64_t rtt, uint64_t end, uint64_t seed,
                     int cc_a, int cc_b, double out[2])
{
    cell c;
    cell_new(&c, r, rate, rtt, seed);
    sim_ref *a = cell_ref_cc(&c, cc_a, 0), *b = cell_ref_cc(&c, cc_b, 2 * SIM_S);
    sim_run(c.s, NULL, NULL, WARMUP);
    uint64_t a0 = ref_bytes(a), b0 = ref_bytes(b);
    sim_run(c.s, NULL, NULL, end);
    out[0] = mbit(ref_bytes(a) - a0, end - WARMUP);
    out[1] = mbit(ref_bytes(b) - b0, end - WARMUP);
    sim_ref_free(a);
    sim_ref_free(b);
    sim_free(c.s);
}

/* The controls for "Pure + CUBIC": does the flow that starts first keep the larger share for any
 * flow, or only when it is Pure? Two reference CUBIC flows (the second 2 s later), and the
 * reference CUBIC flow first with Pure 2 s later. With --ref ngtcp2-0.12 (quinn-0.9) the reference
 * is that model, and out[4], out[5] are it first with an RFC 9438 CUBIC flow 2 s later (as quinn
 * beside ngtcp2 through udpfwd). */
static void run_controls(const row *r, uint64_t rate, uint64_t rtt, uint64_t end, double out[6])
{
    uint64_t span = end - WARMUP;
    two_refs(r, rate, rtt, end, 5, refs[ref_i].cc, refs[ref_i].cc, out);
    {
        cell c;
        cell_new(&c, r, rate, rtt, 6);
        sim_ref *ref = cell_ref(&c, 0);
        pflow f;
        pflow_add(&f, c.s, 0);
        cell_route(&c, f.cli, f.srv);
        sim_run(c.s, NULL, NULL, 2 * SIM_S);
        pflow_connect(&f);
        sim_run(c.s, NULL, NULL, WARMUP);
        uint64_t p0 = f.bytes, r0 = ref_bytes(ref);
        sim_run(c.s, NULL, NULL, end);
        out[2] = mbit(ref_bytes(ref) - r0, span);
        out[3] = mbit(f.bytes - p0, span);
        sim_ref_free(ref);
        sim_free(c.s);
        free(f.msg);
    }
    out[4] = out[5] = 0;
    if (refs[ref_i].cc != SIM_REF_CUBIC)
        two_refs(r, rate, rtt, end, 7, refs[ref_i].cc, SIM_REF_CUBIC, out + 4);
}

static int drained(void *arg)
{
    const pflow *f = arg;
    return f->bytes >= f->limit * MSG_SIZE;
}

/* Pure alone drains n messages through the row's path. */
static void drain_row(const row *r, uint64_t rate, uint64_t rtt, uint64_t n, int json,
                      uint64_t trace_ns)
{
    cell c;
    cell_new(&c, r, rate, rtt, 1);
    pflow f;
    pflow_add(&f, c.s, 0);
    f.limit = n;
    cell_route(&c, f.cli, f.srv);
    pflow_connect(&f);
    int ok;
    if (trace_ns) {
        /* every trace_ns of virtual time: the window, the flight, the RTTs in packets of PKT
         * bytes and ms, the goodput over the step, and the losses so far (to stderr) */
        uint64_t t = 0, b0 = 0;
        while (!(ok = sim_run(c.s, drained, &f, t += trace_ns)) && t < 600 * SIM_S) {
            pure_link_stats q;
            pflow_stats(&f, &q);
            fprintf(stderr,
                    "%7.3f s  cwnd %6.1f  in flight %6.1f  srtt %6.1f ms  min %5.1f ms  "
                    "%6.1f Mbit/s  lost %" PRIu64 " (random %" PRIu64 ")\n",
                    (double)t / 1e9, (double)q.cwnd / PKT, (double)q.bytes_in_flight / PKT,
                    (double)q.rtt_ns / 1e6, (double)q.rtt_min_ns / 1e6,
                    (double)(f.bytes - b0) * 8 / ((double)trace_ns / 1e9) / 1e6, q.packets_lost,
                    q.random_losses);
            b0 = f.bytes;
        }
    } else {
        ok = sim_run(c.s, drained, &f, 600 * SIM_S);
    }
    double secs = (double)sim_now(c.s) / 1e9;
    pure_link_stats st;
    pflow_stats(&f, &st);
    sim_bottleneck_stats bs;
    sim_bottleneck_stats_get(c.s, c.fwd, &bs);
    double mb = (double)f.bytes * 8 / secs / 1e6;
    if (json)
        printf("{\"row\": \"%s\", \"drain\": %" PRIu64 ", \"done\": %s, \"seconds\": %.3f, "
               "\"mbit\": %.2f, \"forwarded\": %" PRIu64 ", \"queue_drop\": %" PRIu64
               ", \"codel_drop\": %" PRIu64 ", \"qdelay_p50_ms\": %.2f, \"qdelay_p95_ms\": %.2f, "
               "\"packets_sent\": %" PRIu64 ", \"packets_lost\": %" PRIu64 "}\n",
               r->name, n, ok ? "true" : "false", secs, mb, bs.forwarded, bs.dropped_queue,
               bs.dropped_codel, (double)bs.qdelay_median / 1e6, (double)bs.qdelay_p95 / 1e6,
               st.packets_sent, st.packets_lost);
    else
        printf("%-9s | %7.2f %6.1f | %9" PRIu64 " %7" PRIu64 " %7" PRIu64 " | %7.1f %7.1f%s\n",
               r->name, secs, mb, bs.forwarded, bs.dropped_queue, bs.dropped_codel,
               (double)bs.qdelay_median / 1e6, (double)bs.qdelay_p95 / 1e6,
               ok ? "" : "  (not finished)");
    fflush(stdout);
    sim_free(c.s);
    free(f.msg);
}

int main(int argc, char **argv)
{
    double rate_mbit = 50, rtt_ms = 40, seconds = 25;
    int json = 0, controls = 0;
    uint64_t drain = 0, trace_ms = 0;
    const char *only[16];
    int nonly = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
            rate_mbit = atof(argv[++i]);
        else if (strcmp(argv[i], "--rtt") == 0 && i + 1 < argc)
            rtt_ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--drain") == 0 && i + 1 < argc)
            drain = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc &&
                 (trace_ms = strtoull(argv[i + 1], NULL, 10)) > 0 && trace_ms <= 10000)
            i++;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--controls") == 0)
            controls = 1;
        else if (strcmp(argv[i], "--ref") == 0 && i + 1 < argc && ref_select(argv[i + 1]) == 0)
            i++;
        else if (argv[i][0] != '-' && nonly < 16)
            only[nonly++] = argv[i];
        else {
            fprintf(
                stderr,
                "usage: paths_sim [--rate MBIT] [--rtt MS] [--seconds S] [--drain N] "
                "[--trace MS] [--json] [--controls] [--ref cubic|ngtcp2-0.12|quinn-0.9] [ROW...]\n");
            return 2;
        }
    }
    if (rate_mbit < 1 || rate_mbit > 10000 || rtt_ms < 1 || rtt_ms > 1000 || seconds < 6 ||
        seconds > 600) {
        fprintf(stderr, "paths_sim: --rate 1..10000, --rtt 1..1000, --seconds 6..600\n");
        return 2;
    }
    uint64_t rate = (uint64_t)(rate_mbit * 1e6), rtt = (uint64_t)(rtt_ms * 1e6);
    uint64_t end = (uint64_t)(seconds * 1e9);
    double bdp = (double)rate / 8 * (rtt_ms / 1e3) / PKT;
    if (drain > 0) {
        if (!json)
            printf("%.0f Mbit/s each way, %.0f ms RTT: Pure drains %" PRIu64
                   " x 16 KiB\n%-9s | %7s %6s | %9s %7s %7s | %7s %7s\n",
                   rate_mbit, rtt_ms, drain, "row", "seconds", "Mbit/s", "forwarded", "q drop",
                   "codel", "q50 ms", "q95 ms");
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            int want = nonly == 0;
            for (int k = 0; k < nonly; k++)
                want |= strcmp(only[k], rows[i].name) == 0;
            if (want)
                drain_row(&rows[i], rate, rtt, drain, json, trace_ms * 1000000ull);
        }
        return 0;
    }
    if (!json) {
        printf("%.0f Mbit/s each way, %.0f ms RTT (1 BDP = %.0f packets of %d bytes), measured "
               "%.0f..%.0f s; loss on the data direction only\n",
               rate_mbit, rtt_ms, bdp, PKT, WARMUP / 1e9, seconds);
        printf("%-9s | %-36s | %-30s | %-15s | %s\n", "", "Pure alone", "CUBIC (sim_ref) alone",
               "Pure + CUBIC", "2 x Pure");
        printf("%-9s | %6s %6s %5s %7s %7s | %6s %6s %7s %7s | %7s %7s | %6s %6s %5s\n", "row",
               "Mbit/s", "loss%", "rand%", "q50 ms", "q95 ms", "Mbit/s", "loss%", "q50 ms",
               "q95 ms", "Pure", "CUBIC", "1st", "2nd", "Jain");
    }
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row *r = &rows[i];
        int want = nonly == 0;
        for (int k = 0; k < nonly; k++)
            want |= strcmp(only[k], r->name) == 0;
        if (!want)
            continue;
        if (controls) {
            double c[6];
            run_controls(r, rate, rtt, end, c);
            double ja = (c[0] + c[1]) * (c[0] + c[1]) / (2 * (c[0] * c[0] + c[1] * c[1]));
            const char *label = refs[ref_i].label;
            if (json)
                printf("{\"row\": \"%s\", \"ref\": \"%s\", \"two_ref_mbit\": [%.2f, %.2f], "
                       "\"two_ref_jain\": %.3f, \"ref_then_pure_mbit\": [%.2f, %.2f], "
                       "\"ref_then_cubic_mbit\": [%.2f, %.2f]}\n",
                       r->name, label, c[0], c[1], ja, c[2], c[3], c[4], c[5]);
            else if (refs[ref_i].cc == SIM_REF_CUBIC)
                printf("%-9s | 2 x CUBIC %6.1f %6.1f (Jain %.2f) | CUBIC first %6.1f, Pure %6.1f\n",
                       r->name, c[0], c[1], ja, c[2], c[3]);
            else
                printf("%-9s | 2 x %s %6.1f %6.1f (Jain %.2f) | %s first %6.1f, Pure %6.1f | %s "
                       "first %6.1f, CUBIC %6.1f\n",
                       r->name, label, c[0], c[1], ja, label, c[2], c[3], label, c[4], c[5]);
            fflush(stdout);
            continue;
        }
        result x;
        run_row(r, rate, rtt, end, &x);
        if (json) {
            printf(
                "{\"row\": \"%s\", \"rate_mbit\": %.0f, \"rtt_ms\": %.0f, \"pure_mbit\": %.2f, "
                "\"pure_loss\": %.5f, \"pure_random_share\": %.3f, \"pure_qdelay_p50_ms\": %.2f, \"pure_qdelay_p95_ms\": "
                "%.2f, \"cubic_mbit\": %.2f, \"cubic_loss\": %.5f, \"cubic_qdelay_p50_ms\": "
                "%.2f, \"cubic_qdelay_p95_ms\": %.2f, \"mix_pure_mbit\": %.2f, "
                "\"mix_cubic_mbit\": %.2f, \"two_pure_mbit\": [%.2f, %.2f], \"jain\": %.3f}\n",
                r->name, rate_mbit, rtt_ms, x.pure_mbit, x.pure_loss, x.pure_random, x.pure_q50,
                x.pure_q95, x.ref_mbit, x.ref_loss, x.ref_q50, x.ref_q95, x.mix_pure, x.mix_ref,
                x.two_a, x.two_b, x.jain);
        } else {
            printf("%-9s | %6.1f %6.3f %5.0f %7.1f %7.1f | %6.1f %6.3f %7.1f %7.1f | %7.1f %7.1f | "
                   "%6.1f %6.1f %5.2f\n",
                   r->name, x.pure_mbit, x.pure_loss * 100, x.pure_random * 100, x.pure_q50,
                   x.pure_q95, x.ref_mbit, x.ref_loss * 100, x.ref_q50, x.ref_q95, x.mix_pure,
                   x.mix_ref, x.two_a, x.two_b, x.jain);
        }
        fflush(stdout);
    }
    return 0;
}
