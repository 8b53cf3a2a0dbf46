/* SPDX-License-Identifier: MIT */
/* bench_idle.c: `pure bench idle`: K links between two processes on loopback, left idle, then
 * woken: memory per link on each side, CPU, packets and timers while idle, handshake and wake
 * times (the idle-links experiment of bench/README.md). The server is a forked child that reports
 * its counters over a pipe. */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const char idle_help[] =
    "usage: pure bench idle --links K --idle SECONDS [--keepalive SECONDS] [--json]\n"
    "\n"
    "Opens K links from this process to a listener in a child process on 127.0.0.1, lets\n"
    "them idle for SECONDS, then sends one message on every link and waits for every reply.\n"
    "Reports, per side: resident memory per link (RSS growth from before the links, divided\n"
    "by K, after the links settle and malloc_trim), CPU per idle link-second, packets sent and\n"
    "timers fired while idle; the time to open all K links and the time for all K to answer\n"
    "on wake-up.\n"
    "\n"
    "  --links K            links to open (1..1000000)\n"
    "  --idle SECONDS       how long the links stay idle\n"
    "  --keepalive SECONDS  the initiator sends a keepalive after this much quiet (default none)\n"
    "  --json               end with one JSON line of the figures\n"
    "\n"
    "exit codes: 0 done; 1 a link failed or the run timed out; 2 usage error\n";

typedef struct srv_report {
    long rss_kb;
    uint64_t links, datagrams_out, timers_fired, cpu_ns, accepted;
} srv_report;

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000 +
           (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000;
}

/* ---- the server (child) ---- */

typedef struct srv {
    pure_ctx *ctx;
    pure_loop *loop;
    int cmd_fd, out_fd;
    uint64_t accepted;
} srv;

static int srv_accept(pure_link *l, const char *svc, const uint8_t *k, void *user)
{
    srv *s = user;
    s->accepted++;
    pure_link_set_user(l, s);
    return 0;
}

static void srv_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    pure_link_send(l, "k", 1); /* one tiny reply: the client counts wake-ups */
}

static void srv_command(pure_loop *loop, int fd, void *user)
{
    srv *s = user;
    char c;
    ssize_t n = read(fd, &c, 1);
    if (n <= 0 || c == 'Q') {
        pure_loop_stop(loop);
        return;
    }
    if (c == 'T')
        malloc_trim(0);
    pure_ctx_stats st;
    pure_ctx_stats_get(s->ctx, &st);
    char buf[256];
    int len = snprintf(buf, sizeof buf, "%ld %llu %llu %llu %llu %llu\n", rss_kb(),
                       (unsigned long long)st.links, (unsigned long long)st.datagrams_out,
                       (unsigned long long)st.timers_fired, (unsigned long long)cpu_ns(),
                       (unsigned long long)s->accepted);
    if (write(s->out_fd, buf, (size_t)len) != len)
        pure_loop_stop(loop);
}

static int run_server(int cmd_fd, int out_fd)
{
    srv s = {.cmd_fd = cmd_fd, .out_fd = out_fd};
    static pure_callbacks cbs = {.on_accept = srv_accept, .on_message = srv_message};
    pure_settings st;
    pure_settings_default(&st);
    pure_keygen(st.private_key);
    st.allow_any = 1;
    st.callbacks = &cbs;
    st.user = &s;
    st.max_links = 2000000;
    st.handshake_load = 4096;
    if (pure_ctx_new(&st, &s.ctx) || pure_ctx_add_service(s.ctx, "idle") ||
        pure_loop_new(s.ctx, "127.0.0.1:0", &s.loop))
        return 1;
    char key[45], line[128];
    pure_key_to_base64(key, pure_ctx_public_key(s.ctx));
    int len = snprintf(line, sizeof line, "%u %s\n", pure_loop_port(s.loop), key);
    if (write(out_fd, line, (size_t)len) != len)
        return 1;
    pure_loop_watch_fd(s.loop, cmd_fd, srv_command, &s);
    pure_loop_run(s.loop, PURE_LOOP_FOREVER);
    pure_loop_free(s.loop);
    pure_ctx_free(s.ctx);
    return 0;
}

/* ---- the client (parent) ---- */

typedef struct cli {
    pure_ctx *ctx;
    pure_loop *loop;
    pure_link **links;
    uint64_t k, started, established, replies, failed;
    pure_addr to;
    uint8_t peer[PURE_KEY_LEN];
    uint64_t goal; /* stop the loop when this counter reaches it */
    uint64_t *watch;
} cli;

static void cli_connect_more(cli *c)
{
    /* at most 512 handshakes under way: a flood of INITs would only meet cookies and retries */
    while (c->started < c->k && c->started - c->established - c->failed < 512) {
        if (pure_connect(c->ctx, &c->to, c->peer, "idle", c, &c->links[c->started], pure_now())) {
            c->failed++;
        }
        c->started++;
    }
}

static void cli_check(cli *c)
{
    if (c->watch && *c->watch + c->failed >= c->goal)
        pure_loop_stop(c->loop);
}

static void cli_established(pure_link *l, void *user)
{
    cli *c = user;
    c->established++;
    cli_connect_more(c);
    cli_check(c);
}

static void cli_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    cli *c = user;
    c->replies++;
    cli_check(c);
}

static void cli_closed(pure_link *l, void *user, const pure_close_info *info)
{
    cli *c = user;
    if (!c->loop)
        return; /* pure_ctx_free at exit: not a failure, and no new link may start now */
    if (c->failed++ < 3)
        fprintf(stderr, "pure bench idle: a link closed: %s%s\n", pure_strerror(info->error),
                c->failed == 3 ? " (further closes not shown)" : "");
    for (uint64_t i = 0; i < c->started; i++)
        if (c->links[i] == l)
            c->links[i] = NULL;
    cli_connect_more(c);
    cli_check(c);
}

static int ask(int cmd_fd, FILE *in, char what, srv_report *r)
{
    if (write(cmd_fd, &what, 1) != 1)
        return -1;
    unsigned long long a, b, c, d, e;
    if (fscanf(in, "%ld %llu %llu %llu %llu %llu", &r->rss_kb, &a, &b, &c, &d, &e) != 6)
        return -1;
    r->links = a;
    r->datagrams_out = b;
    r->timers_fired = c;
    r->cpu_ns = d;
    r->accepted = e;
    return 0;
}

/* Runs the client's loop until the watched counter reaches goal or `limit` ns pass. */
static int run_until(cli *c, uint64_t *watch, uint64_t goal, uint64_t limit)
{
    c->watch = watch;
    c->goal = goal;
    uint64_t end = pure_now() + limit;
    while (*watch + c->failed < goal && pure_now() < end)
        pure_loop_run(c->loop, end - pure_now());
    c->watch = NULL;
    return *watch + c->failed >= goal && c->failed == 0 ? 0 : -1;
}

int cli_bench_idle(int argc, char **argv)
{
    static const struct option opts[] = {{"links", required_argument, NULL, 'k'},
                                         {"idle", required_argument, NULL, 'i'},
                                         {"keepalive", required_argument, NULL, 'a'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    uint64_t k = 0, idle = 0, keepalive = 0;
    int json = 0, have_k = 0, have_idle = 0, o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'k':
            if (cli_parse_count(optarg, 1000000, &k) || k == 0)
                return cli_usage("bench idle", "--links takes a count from 1 to 1000000, not '%s'",
                                 optarg);
            have_k = 1;
            break;
        case 'i':
            if (cli_parse_seconds(optarg, &idle))
                return cli_usage("bench idle", "--idle takes seconds (e.g. 60), not '%s'", optarg);
            have_idle = 1;
            break;
        case 'a':
            if (cli_parse_seconds(optarg, &keepalive) || keepalive == 0)
                return cli_usage("bench idle", "--keepalive takes seconds above 0, not '%s'",
                                 optarg);
            break;
        case 'j': json = 1; break;
        case 'h': fputs(idle_help, stdout); return CLI_OK;
        default: return cli_bad_option("bench idle", o, argv);
        }
    }
    if (optind < argc)
        return cli_usage("bench idle", "unexpected argument '%s'", argv[optind]);
    if (!have_k || !have_idle)
        return cli_usage("bench idle", "both --links K and --idle SECONDS are required");

    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child)) {
        perror("pure bench idle: pipe");
        return CLI_FAIL;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("pure bench idle: fork");
        return CLI_FAIL;
    }
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        _exit(run_server(to_child[0], from_child[1]));
    }
    close(to_child[0]);
    close(from_child[1]);
    FILE *in = fdopen(from_child[0], "r");
    int cmd = to_child[1];
    int rc = CLI_FAIL;
    cli c = {.k = k};
    unsigned port = 0;
    char keytext[64];
    srv_report s0, s1, s2;
    if (!in || fscanf(in, "%u %63s", &port, keytext) != 2 ||
        pure_key_from_base64(c.peer, keytext) != 0) {
        fprintf(stderr, "pure bench idle: the server process did not start\n");
        goto out;
    }
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
    pure_addr_from_string(&c.to, addr);

    long c_rss0 = rss_kb();
    if (ask(cmd, in, 'T', &s0))
        goto out;
    static pure_callbacks cbs = {
        .on_established = cli_established, .on_message = cli_message, .on_closed = cli_closed};
    pure_settings st;
    pure_settings_default(&st);
    pure_keygen(st.private_key);
    st.callbacks = &cbs;
    st.keepalive = keepalive;
    st.max_links = 2000000;
    c.links = calloc(k, sizeof *c.links);
    if (!c.links || pure_ctx_new(&st, &c.ctx) || pure_loop_new(c.ctx, "127.0.0.1:0", &c.loop)) {
        fprintf(stderr, "pure bench idle: could not set up the client\n");
        goto out;
    }
    c_rss0 = rss_kb() > c_rss0 ? rss_kb() : c_rss0; /* the context and loop are not per link */

    /* open the links */
    uint64_t t0 = pure_now();
    cli_connect_more(&c);
    if (run_until(&c, &c.established, k, 600ull * 1000000000)) {
        fprintf(stderr, "pure bench idle: only %llu of %llu links opened\n",
                (unsigned long long)c.established, (unsigned long long)k);
        goto out;
    }
    double hs_seconds = (double)(pure_now() - t0) / 1e9;
    /* settle: let the last ACKs land and the idle links give their buffers back */
    uint64_t dummy = 0;
    run_until(&c, &dummy, 1, 2ull * 1000000000);
    malloc_trim(0);
    long c_rss1 = rss_kb();
    if (getenv("PURE_BENCH_MALLINFO")) {
        struct mallinfo2 mi = mallinfo2();
        fprintf(stderr, "client heap: in use %zu B, free %zu B, mmapped %zu B, rss %ld kB\n",
                mi.uordblks, mi.fordblks, mi.hblkhd, c_rss1);
    }
    if (ask(cmd, in, 'T', &s1))
        goto out;

    /* idle */
    pure_ctx_stats cs0, cs1;
    pure_ctx_stats_get(c.ctx, &cs0);
    uint64_t ccpu0 = cpu_ns();
    uint64_t idle_end = pure_now() + idle;
    while (pure_now() < idle_end)
        pure_loop_run(c.loop, idle_end - pure_now());
    uint64_t ccpu1 = cpu_ns();
    pure_ctx_stats_get(c.ctx, &cs1);
    if (ask(cmd, in, 'S', &s2))
        goto out;

    double cli_bpl = (double)(c_rss1 - c_rss0) * 1024 / (double)k;
    double srv_bpl = (double)(s1.rss_kb - s0.rss_kb) * 1024 / (double)k;
    uint64_t cpk = cs1.datagrams_out - cs0.datagrams_out, spk = s2.datagrams_out - s1.datagrams_out;
    uint64_t ctm = cs1.timers_fired - cs0.timers_fired, stm = s2.timers_fired - s1.timers_fired;
    double link_seconds = (double)k * (double)idle / 1e9;
    double cpu_us = ((double)(ccpu1 - ccpu0) + (double)(s2.cpu_ns - s1.cpu_ns)) / 1e3;
    printf("links %llu, idle %.0f s, keepalive %s\n", (unsigned long long)k, (double)idle / 1e9,
           keepalive ? "on" : "off");
    printf("%-28s %12s %12s\n", "", "client", "server");
    printf("%-28s %12.0f %12.0f\n", "resident bytes per link", cli_bpl, srv_bpl);
    printf("%-28s %12llu %12llu\n", "packets sent while idle", (unsigned long long)cpk,
           (unsigned long long)spk);
    printf("%-28s %12llu %12llu\n", "timers fired while idle", (unsigned long long)ctm,
           (unsigned long long)stm);
    printf("%-28s %12.4f %12.4f\n", "CPU us per idle link-second",
           (double)(ccpu1 - ccpu0) / 1e3 / link_seconds,
           (double)(s2.cpu_ns - s1.cpu_ns) / 1e3 / link_seconds);
    printf("handshakes: %.2f s for all %llu links\n", hs_seconds, (unsigned long long)k);
    /* PURE_BENCH_WAKE_PAUSE=S: print both pids and wait S seconds before the wake-up, so a
     * profiler can attach to just that phase (a diagnostic, like PURE_BENCH_VERBOSE) */
    const char *pause_s = getenv("PURE_BENCH_WAKE_PAUSE");
    if (pause_s && atoi(pause_s) > 0) {
        fprintf(stderr, "pure bench idle: client pid %d, server pid %d; waking in %d s\n",
                (int)getpid(), (int)pid, atoi(pause_s));
        sleep((unsigned)atoi(pause_s));
    }
    /* wake: one message per link, wait for every reply */
    uint64_t t1 = pure_now();
    for (uint64_t i = 0; i < k; i++)
        if (c.links[i])
            pure_link_send(c.links[i], "wake", 4);
    int woke = run_until(&c, &c.replies, k, 60ull * 1000000000) == 0;
    double wake_seconds = (double)(pure_now() - t1) / 1e9;
    if (getenv("PURE_BENCH_VERBOSE")) {
        uint64_t lost = 0, ptos = 0, retx = 0;
        for (uint64_t i = 0; i < k; i++)
            if (c.links[i]) {
                pure_link_stats ls;
                pure_link_stats_get(c.links[i], &ls);
                lost += ls.packets_lost;
                ptos += ls.ptos;
                retx += ls.bytes_retransmitted;
            }
        pure_loop_stats lst;
        pure_loop_stats_get(c.loop, &lst);
        fprintf(stderr,
                "client after wake: %llu lost, %llu PTOs, %llu B resent; loop: %llu sendmsg, "
                "%llu datagrams in, %llu send errors, %llu recv errors\n",
                (unsigned long long)lost, (unsigned long long)ptos, (unsigned long long)retx,
                (unsigned long long)lst.sendmsg_calls, (unsigned long long)lst.datagrams_received,
                (unsigned long long)lst.send_errors, (unsigned long long)lst.recv_errors);
    }
    if (woke)
        printf("wake-up: %.3f s until every link answered\n", wake_seconds);
    else
        printf("wake-up: FAILED: %llu of %llu links answered within %.0f s (%llu links closed)\n",
               (unsigned long long)c.replies, (unsigned long long)k, wake_seconds,
               (unsigned long long)c.failed);

    if (json)
        printf("{\"links\": %llu, \"idle_seconds\": %.0f, \"keepalive\": %s, "
               "\"client_bytes_per_link\": %.0f, \"server_bytes_per_link\": %.0f, "
               "\"packets_while_idle\": %llu, \"timers_fired_while_idle\": %llu, "
               "\"cpu_us_per_link_second\": %.5f, \"handshake_seconds\": %.3f, "
               "\"wake_seconds\": %.3f, \"woke\": %llu}\n",
               (unsigned long long)k, (double)idle / 1e9, keepalive ? "true" : "false", cli_bpl,
               srv_bpl, (unsigned long long)(cpk + spk), (unsigned long long)(ctm + stm),
               cpu_us / link_seconds, hs_seconds, woke ? wake_seconds : -1.0,
               (unsigned long long)c.replies);
    rc = woke ? CLI_OK : CLI_FAIL;
out:
    if (cmd >= 0) {
        char q = 'Q';
        if (write(cmd, &q, 1) != 1)
            kill(pid, SIGTERM);
        close(cmd);
    }
    waitpid(pid, NULL, 0);
    if (in)
        fclose(in);
    if (c.loop)
        pure_loop_free(c.loop);
    c.loop = NULL; /* pure_ctx_free runs on_closed for the links left */
    if (c.ctx)
        pure_ctx_free(c.ctx);
    free(c.links);
    return rc;
}
