/* SPDX-License-Identifier: MIT */
/* serve.c: `pure serve`: a listener offering the built-in services — drain (count messages and
 * bytes, confirm the count when the peer finishes), echo (send every message back) and sink
 * (discard) — until SIGINT or SIGTERM, then a graceful close of every link. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char serve_help[] =
    "usage: pure serve --listen ADDR:PORT (--key FILE | --ephemeral)\n"
    "                  [--allow FILE | --allow-any] [--silent] [--services LIST]\n"
    "                  [--keepalive SECONDS] [--stats-every SECONDS] [--verbose]\n"
    "\n"
    "Accepts links on a UDP socket and serves them until SIGINT or SIGTERM, then closes\n"
    "every link gracefully and exits 0. First prints one JSON line on stdout:\n"
    "  {\"port\": N, \"public_key\": \"...\"}\n"
    "(clients pass public_key as --peer-key).\n"
    "\n"
    "  --listen ADDR:PORT  address to bind: 127.0.0.1:4433, [::1]:4433, 0.0.0.0:0 (port 0:\n"
    "                      any free port, printed in the JSON line); [::]:PORT takes IPv4 too\n"
    "  --key FILE          this server's private key (made by pure keygen)\n"
    "  --ephemeral         a new random key for this run instead of --key\n"
    "  --allow FILE        accept only clients whose public key is listed in FILE (one\n"
    "                      pure-pub:... key per line; # starts a comment)\n"
    "  --allow-any         accept any client key (the default with --ephemeral; with --key,\n"
    "                      one of --allow/--allow-any is required)\n"
    "  --silent            answer nothing to a client that does not know this server's public\n"
    "                      key or whose key is not allowed (no REJECT, no refusal): a probe\n"
    "                      cannot tell a Pure server is there\n"
    "  --services LIST     comma-separated services to offer (default drain,echo,sink):\n"
    "                        drain  counts messages and body bytes; when the client finishes\n"
    "                               its stream, replies with one 16-byte message (u64 count,\n"
    "                               u64 bytes, big-endian) and finishes\n"
    "                        echo   sends every message back, in order; finishes after the\n"
    "                               client finishes and every echo is out\n"
    "                        sink   discards messages; finishes when the client finishes\n"
    "  --keepalive SECONDS send a keepalive PING on each idle link after SECONDS of quiet\n"
    "                      (default 0: none; set it on one side of a link only)\n"
    "  --stats-every SECONDS  every SECONDS, JSON lines on stdout: one per open link\n"
    "                      {\"stats\": \"link\", \"t\": S, \"id\": N, \"service\": ..., \"peer\": ...,\n"
    "                      \"messages_received\": N, \"bytes_received\": N, \"messages_sent\": N,\n"
    "                      \"messages_acked\": N, \"backlog\": N, \"queued\": N, \"rtt_us\": X,\n"
    "                      \"packets_lost\": N}, then one total {\"stats\": \"total\", \"t\": S,\n"
    "                      \"links\": N, \"accepted\": N, \"closed\": N, \"messages_received\": N,\n"
    "                      \"bytes_received\": N, \"datagrams_in\": N, \"datagrams_out\": N,\n"
    "                      \"handshakes_refused\": N, \"dropped\": N, \"core_links\": N,\n"
    "                      \"handshakes_accepted\": N, \"cookies_sent\": N, then the guard\n"
    "                      counters of pure_guard_stats: \"dh_ops\", \"inits_replayed\",\n"
    "                      \"inits_throttled\", \"inits_half_open_cap\", \"inits_bad_mac\",\n"
    "                      \"inits_silent\", \"inits_duplicate\", \"cookie_replies_bad\",\n"
    "                      \"rejects_bad\", \"failed_opens\", \"links_integrity_closed\",\n"
    "                      \"rx_memory\", \"rx_memory_peak\", \"rx_memory_stalls\"} (t: seconds\n"
    "                      since start; totals count closed links too; core_links: every\n"
    "                      link the core holds, half-open and closing ones included)\n"
    "  --verbose           on stderr: a line per link opened, and per link closed with its\n"
    "                      counters and the loop's (RTT, cwnd, losses, datagrams per call);\n"
    "                      on exit, the listener's counters: datagrams, handshakes, cookies,\n"
    "                      and what was dropped (malformed, failed authentication, replays,\n"
    "                      unknown links)\n"
    "\n"
    "exit codes: 0 stopped by a signal; 1 runtime failure (socket error);\n"
    "            2 usage error (bad flag, address, key or allow file, address in use)\n";

enum svc_kind {
    SVC_DRAIN = 1,
    SVC_ECHO = 2,
    SVC_SINK = 4
};

static const struct {
    const char *name;
    enum svc_kind kind;
} services[] = {{"drain", SVC_DRAIN}, {"echo", SVC_ECHO}, {"sink", SVC_SINK}};

/* An echo held back by a full backlog, resent on on_writable. While any is queued the link's
 * receive is paused (pure_link_pause_recv), so the queue holds at most what the client had in
 * flight: its receive window. */
typedef struct qmsg {
    struct qmsg *next;
    size_t len;
    uint8_t data[];
} qmsg;

/* Echo queues beyond this close the link (a safety net: the pause bounds them well below). */
#define QUEUE_MAX (64u << 20)

typedef struct srv_link {
    struct srv_link *prev, *next;
    struct server *srv;
    pure_link *link;
    enum svc_kind kind;
    uint64_t id; /* order of acceptance, from 1: names the link in --stats-every */
    uint64_t messages, bytes;
    qmsg *qhead, *qtail;
    size_t qbytes;
    int finish_when_empty;
    /* Set by on_closed: the link is gone and sl->link must never be touched again. The struct
     * itself lives on in srv->dead until the outermost callback returns, because a call made
     * from a callback (pure_link_send, _close, _finish) may run on_closed before it returns to
     * the callback, which still holds sl. */
    int closed;
} srv_link;

typedef struct server {
    pure_ctx *ctx;
    pure_loop *loop;
    srv_link *links;
    srv_link *dead; /* closed links, freed by the outermost callback (see srv_link.closed) */
    int depth;      /* callbacks under way (they nest) */
    int verbose;
    uint64_t accepted, closed;
    uint64_t messages, bytes; /* received on every link, closed ones included */
} server;

static void sl_free_queue(srv_link *sl)
{
    while (sl->qhead) {
        qmsg *q = sl->qhead;
        sl->qhead = q->next;
        free(q);
    }
    sl->qtail = NULL;
    sl->qbytes = 0;
}

/* Sends the queue's head messages until the backlog is full again, then finishes if asked. */
static void sl_flush(srv_link *sl)
{
    while (sl->qhead && !sl->closed) {
        qmsg *q = sl->qhead;
        int64_t rc = pure_link_send(sl->link, q->data, q->len);
        if (rc == PURE_EAGAIN)
            return;
        if (rc < 0 && pure_err_is_fatal((int)rc))
            return; /* on_closed follows or has run */
        sl->qhead = q->next;
        sl->qbytes -= q->len;
        free(q);
    }
    if (sl->closed)
        return;
    sl->qtail = NULL;
    pure_link_resume_recv(sl->link); /* the replies are out: take requests again */
    if (sl->finish_when_empty) {
        sl->finish_when_empty = 0;
        pure_link_finish(sl->link);
    }
}

/* Sends a reply now, or queues it behind earlier ones: nothing is ever dropped. */
static void sl_send(srv_link *sl, const uint8_t *d, size_t n)
{
    if (!sl->qhead) {
        int64_t rc = pure_link_send(sl->link, d, n);
        if (rc >= 0 || rc != PURE_EAGAIN)
            return; /* sent, or the link is closing: on_closed tells */
    }
    if (sl->qbytes + n > QUEUE_MAX) {
        pure_link_abort(sl->link, PURE_CLOSE_APP,
                        "echo backlog over 64 MiB: the client is not reading replies");
        return;
    }
    pure_link_pause_recv(sl->link); /* no new credit until the queue is out */
    qmsg *q = malloc(sizeof *q + n);
    if (!q) {
        pure_link_abort(sl->link, PURE_CLOSE_APP, "server out of memory");
        return;
    }
    q->next = NULL;
    q->len = n;
    memcpy(q->data, d, n);
    if (sl->qtail)
        sl->qtail->next = q;
    else
        sl->qhead = q;
    sl->qtail = q;
    sl->qbytes += n;
}

static void log_link(const srv_link *sl, const char *what, const char *detail)
{
    if (!sl->srv->verbose)
        return;
    char addr[PURE_ADDR_STRLEN], key[CLI_KEY_TEXT];
    pure_addr_to_string(pure_link_peer_addr(sl->link), addr, sizeof addr);
    cli_key_text(key, pure_link_peer_key(sl->link), 0);
    fprintf(stderr, "pure serve: %s %s from %s key %s: %llu messages, %llu bytes%s%s\n", what,
            sl->kind == SVC_DRAIN  ? "drain"
            : sl->kind == SVC_ECHO ? "echo"
                                   : "sink",
            addr, key, (unsigned long long)sl->messages, (unsigned long long)sl->bytes,
            detail ? ": " : "", detail ? detail : "");
}

static int on_accept(pure_link *link, const char *service, const uint8_t *key, void *user)
{
    server *srv = user;
    enum svc_kind kind = 0;
    for (size_t i = 0; i < sizeof services / sizeof *services; i++)
        if (strcmp(service, services[i].name) == 0)
            kind = services[i].kind;
    if (!kind)
        return PURE_EREFUSED; /* the core only offers registered names; be sure anyway */
    srv_link *sl = calloc(1, sizeof *sl);
    if (!sl)
        return PURE_ENOMEM;
    sl->srv = srv;
    sl->link = link;
    sl->kind = kind;
    sl->next = srv->links;
    if (srv->links)
        srv->links->prev = sl;
    srv->links = sl;
    srv->accepted++;
    sl->id = srv->accepted;
    pure_link_set_user(link, sl);
    log_link(sl, "accepted", NULL);
    return 0;
}

static void free_dead(server *srv)
{
    while (srv->dead) {
        srv_link *sl = srv->dead;
        srv->dead = sl->next;
        free(sl);
    }
}

/* The link's state for a callback, or NULL if the link is already closed: the core must not call
 * after on_closed, but if it does, serve must not crash (it once did, on SIGINT). A callback
 * that gets sl brackets its work with leave(srv), which frees closed links' state once no
 * callback holds any. */
static srv_link *enter(void *user)
{
    srv_link *sl = user;
    if (!sl || sl->closed)
        return NULL;
    sl->srv->depth++;
    return sl;
}

static void leave(server *srv)
{
    if (--srv->depth == 0)
        free_dead(srv);
}

static void on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    server *srv = sl->srv;
    sl->messages++;
    sl->bytes += n;
    srv->messages++;
    srv->bytes += n;
    if (sl->kind == SVC_ECHO)
        sl_send(sl, d, n);
    leave(srv);
}

static void on_writable(pure_link *link, void *user)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    server *srv = sl->srv;
    sl_flush(sl);
    leave(srv);
}

static void on_peer_finished(pure_link *link, void *user)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    server *srv = sl->srv;
    if (sl->kind == SVC_DRAIN) {
        uint8_t reply[16];
        for (int i = 0; i < 8; i++) {
            reply[i] = (uint8_t)(sl->messages >> (56 - 8 * i));
            reply[8 + i] = (uint8_t)(sl->bytes >> (56 - 8 * i));
        }
        sl_send(sl, reply, sizeof reply);
    }
    if (!sl->closed) { /* else sl_send closed the link */
        if (sl->qhead)
            sl->finish_when_empty = 1;
        else
            pure_link_finish(link);
    }
    leave(srv);
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    char why[320];
    if (info->error == 0)
        snprintf(why, sizeof why, "closed%s%s", *info->reason ? " by the peer: " : "",
                 info->reason);
    else
        snprintf(why, sizeof why, "%s%s%s", pure_strerror(info->error), *info->reason ? ": " : "",
                 info->reason);
    log_link(sl, "closed", why);
    server *srv = sl->srv;
    if (srv->verbose && srv->loop) { /* no loop while pure_ctx_free closes the last links */
        pure_link_stats ls;
        pure_link_stats_get(link, &ls);
        cli_print_stats("serve", &ls, srv->loop);
    }
    srv->closed++;
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        srv->links = sl->next;
    if (sl->next)
        sl->next->prev = sl->prev;
    sl_free_queue(sl);
    sl->closed = 1;
    sl->link = NULL;
    sl->next = srv->dead;
    srv->dead = sl;
    pure_link_set_user(link, NULL);
    leave(srv);
}

static const pure_callbacks callbacks = {
    .on_accept = on_accept,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_peer_finished = on_peer_finished,
    .on_closed = on_closed,
};

static const char *kind_name(enum svc_kind k)
{
    return k == SVC_DRAIN ? "drain" : k == SVC_ECHO ? "echo" : "sink";
}

/* The guard counters (pure_guard_stats) in the order of pure.h, named as there: the total line
 * prints every one (a field added to the struct goes here too). */
#define GUARD(f)                                                                                   \
    {                                                                                              \
#f, offsetof(pure_guard_stats, f)                                                          \
    }
static const struct {
    const char *name;
    size_t offset;
} guard_fields[] = {
    GUARD(dh_ops),
    GUARD(inits_replayed),
    GUARD(inits_throttled),
    GUARD(inits_half_open_cap),
    GUARD(inits_bad_mac),
    GUARD(inits_silent),
    GUARD(inits_duplicate),
    GUARD(cookie_replies_bad),
    GUARD(rejects_bad),
    GUARD(failed_opens),
    GUARD(links_integrity_closed),
    GUARD(rx_memory),
    GUARD(rx_memory_peak),
    GUARD(rx_memory_stalls),
};
#undef GUARD

/* --stats-every: a JSON line per open link, then the totals, on stdout. */
static void print_stats(const server *srv, uint64_t t_ns)
{
    double t = (double)t_ns / 1e9;
    uint64_t open = 0;
    for (const srv_link *sl = srv->links; sl; sl = sl->next, open++) {
        pure_link_stats ls;
        char addr[PURE_ADDR_STRLEN];
        pure_link_stats_get(sl->link, &ls);
        pure_addr_to_string(pure_link_peer_addr(sl->link), addr, sizeof addr);
        printf("{\"stats\": \"link\", \"t\": %.3f, \"id\": %llu, \"service\": \"%s\", "
               "\"peer\": \"%s\", \"messages_received\": %llu, \"bytes_received\": %llu, "
               "\"messages_sent\": %llu, \"messages_acked\": %llu, \"backlog\": %llu, "
               "\"queued\": %llu, \"rtt_us\": %.1f, \"packets_lost\": %llu}\n",
               t, (unsigned long long)sl->id, kind_name(sl->kind), addr,
               (unsigned long long)sl->messages, (unsigned long long)sl->bytes,
               (unsigned long long)ls.messages_sent, (unsigned long long)ls.messages_acked,
               (unsigned long long)pure_link_backlog(sl->link), (unsigned long long)sl->qbytes,
               (double)ls.rtt_ns / 1e3, (unsigned long long)ls.packets_lost);
    }
    pure_ctx_stats cs;
    pure_ctx_stats_get(srv->ctx, &cs);
    pure_guard_stats gs;
    memset(&gs, 0, sizeof gs);
    pure_ctx_guard_stats_get(srv->ctx, &gs, sizeof gs);
    printf("{\"stats\": \"total\", \"t\": %.3f, \"links\": %llu, \"accepted\": %llu, "
           "\"closed\": %llu, \"messages_received\": %llu, \"bytes_received\": %llu, "
           "\"datagrams_in\": %llu, \"datagrams_out\": %llu, \"handshakes_refused\": %llu, "
           "\"dropped\": %llu, \"core_links\": %llu, \"handshakes_accepted\": %llu, "
           "\"cookies_sent\": %llu",
           t, (unsigned long long)open, (unsigned long long)srv->accepted,
           (unsigned long long)srv->closed, (unsigned long long)srv->messages,
           (unsigned long long)srv->bytes, (unsigned long long)cs.datagrams_in,
           (unsigned long long)cs.datagrams_out, (unsigned long long)cs.handshakes_refused,
           (unsigned long long)(cs.dropped_malformed + cs.dropped_auth + cs.dropped_replay +
                                cs.dropped_unknown_link),
           (unsigned long long)cs.links, (unsigned long long)cs.handshakes_accepted,
           (unsigned long long)cs.cookies_sent);
    for (size_t i = 0; i < sizeof guard_fields / sizeof *guard_fields; i++) {
        uint64_t v;
        memcpy(&v, (const uint8_t *)&gs + guard_fields[i].offset, sizeof v);
        printf(", \"%s\": %llu", guard_fields[i].name, (unsigned long long)v);
    }
    printf("}\n");
    fflush(stdout);
}

/* Reads an allow file into the context. Returns 0 or CLI_USAGE (message printed). */
static int load_allow(pure_ctx *ctx, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pure serve: cannot read the --allow file %s: %s\n", path, strerror(errno));
        return CLI_USAGE;
    }
    char line[512];
    int lineno = 0, keys = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            continue;
        uint8_t key[PURE_KEY_LEN];
        int krc = cli_public_key_from_text(key, p);
        if (krc == CLI_KEY_WRONG_KIND) {
            fprintf(stderr,
                    "pure serve: %s line %d is a private key (pure-priv:...): list the "
                    "clients' public keys (pure pubkey < KEYFILE), and delete that line\n",
                    path, lineno);
            fclose(f);
            return CLI_USAGE;
        }
        if (krc != 0) {
            fprintf(stderr,
                    "pure serve: %s line %d is not a public key: expected pure-pub: and 44 base64 "
                    "characters (as printed by pure pubkey), one per line\n",
                    path, lineno);
            fclose(f);
            return CLI_USAGE;
        }
        if (pure_ctx_allow(ctx, key) != 0) {
            fclose(f);
            fprintf(stderr, "pure serve: out of memory reading %s\n", path);
            return CLI_FAIL;
        }
        keys++;
    }
    fclose(f);
    if (keys == 0)
        fprintf(stderr, "pure serve: warning: %s lists no keys: every client will be refused\n",
                path);
    return 0;
}

/* Parses "drain,echo" into a mask. Returns 0 or CLI_USAGE. */
static int parse_services(const char *list, unsigned *mask)
{
    *mask = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned k = 0;
        for (size_t i = 0; i < sizeof services / sizeof *services; i++)
            if (strlen(services[i].name) == n && memcmp(p, services[i].name, n) == 0)
                k = services[i].kind;
        if (!k)
            return cli_usage("serve",
                             "unknown service '%.*s' in --services (known: drain, "
                             "echo, sink)",
                             (int)n, p);
        *mask |= k;
        p += n;
        if (*p == ',')
            p++;
    }
    if (!*mask)
        return cli_usage("serve", "--services lists no service");
    return 0;
}

int cli_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                         {"key", required_argument, NULL, 'k'},
                                         {"ephemeral", no_argument, NULL, 'e'},
                                         {"allow", required_argument, NULL, 'a'},
                                         {"allow-any", no_argument, NULL, 'A'},
                                         {"services", required_argument, NULL, 's'},
                                         {"keepalive", required_argument, NULL, 'K'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"stats-every", required_argument, NULL, 'E'},
                                         {"silent", no_argument, NULL, 'S'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *listen = NULL, *keyfile = NULL, *allow = NULL, *svc = "drain,echo,sink";
    int ephemeral = 0, allow_any = 0, verbose = 0, silent = 0, c;
    uint64_t keepalive = 0, stats_every = 0;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen = optarg; break;
        case 'k': keyfile = optarg; break;
        case 'e': ephemeral = 1; break;
        case 'a': allow = optarg; break;
        case 'A': allow_any = 1; break;
        case 'S': silent = 1; break;
        case 's': svc = optarg; break;
        case 'v': verbose = 1; break;
        case 'K':
            if (cli_parse_seconds(optarg, &keepalive))
                return cli_usage("serve", "--keepalive '%s' is not a number of seconds", optarg);
            break;
        case 'E':
            if (cli_parse_seconds(optarg, &stats_every) || stats_every < 1000000u)
                return cli_usage("serve",
                                 "--stats-every '%s' is not a number of seconds "
                                 "(0.001 or more)",
                                 optarg);
            break;
        case 'h': fputs(serve_help, stdout); return CLI_OK;
        default: return cli_bad_option("serve", c, argv);
        }
    }
    if (optind < argc)
        return cli_usage("serve", "unexpected argument '%s'", argv[optind]);
    if (!listen)
        return cli_usage("serve", "--listen ADDR:PORT is required (e.g. --listen 127.0.0.1:4433)");
    if (!!keyfile + ephemeral != 1)
        return cli_usage("serve", "give exactly one of --key FILE (a key from pure keygen) or "
                                  "--ephemeral (a new key for this run)");
    if (allow && allow_any)
        return cli_usage("serve", "--allow and --allow-any contradict each other");
    if (keyfile && !allow && !allow_any)
        return cli_usage("serve", "with --key, say who may connect: --allow FILE (client public "
                                  "keys) or --allow-any");
    unsigned mask;
    if (parse_services(svc, &mask))
        return CLI_USAGE;
    pure_addr bind_addr;
    if (pure_addr_from_string(&bind_addr, listen) != 0)
        return cli_usage("serve",
                         "--listen '%s' is not an address: expected ADDR:PORT such as "
                         "127.0.0.1:4433, [::1]:4433 or 0.0.0.0:0",
                         listen);

    server srv;
    memset(&srv, 0, sizeof srv);
    srv.verbose = verbose;
    pure_settings st;
    pure_settings_default(&st);
    pure_settings_use_huge_pages(&st); /* a streaming link's ring: few page faults */
    if (keyfile) {
        if (cli_read_key_file("serve", keyfile, st.private_key))
            return CLI_USAGE;
    } else if (pure_keygen(st.private_key) != 0) {
        fprintf(stderr, "pure serve: no randomness available for --ephemeral\n");
        return CLI_FAIL;
    }
    st.allow_any = allow_any || (ephemeral && !allow);
    st.keepalive = keepalive;
    st.respond_to_unknown = !silent;
    st.callbacks = &callbacks;
    st.user = &srv;
    int rc = pure_ctx_new(&st, &srv.ctx);
    memset(st.private_key, 0, sizeof st.private_key);
    if (rc) {
        fprintf(stderr, "pure serve: cannot create the context: %s\n", pure_strerror(rc));
        return CLI_FAIL;
    }
    for (size_t i = 0; i < sizeof services / sizeof *services; i++)
        if ((mask & services[i].kind) && pure_ctx_add_service(srv.ctx, services[i].name)) {
            pure_ctx_free(srv.ctx);
            return CLI_FAIL;
        }
    if (allow && (rc = load_allow(srv.ctx, allow)) != 0) {
        pure_ctx_free(srv.ctx);
        return rc;
    }
    rc = pure_loop_new(srv.ctx, listen, &srv.loop);
    if (rc) {
        fprintf(stderr, "pure serve: cannot listen on %s: %s\n", listen,
                rc == PURE_EIO ? strerror(errno) : pure_strerror(rc));
        pure_ctx_free(srv.ctx);
        return rc == PURE_EIO ? CLI_USAGE : CLI_FAIL;
    }
    cli_stop_on_signals(srv.loop);
    char pub[CLI_KEY_TEXT];
    cli_key_text(pub, pure_ctx_public_key(srv.ctx), 0);
    printf("{\"port\": %u, \"public_key\": \"%s\"}\n", pure_loop_port(srv.loop), pub);
    fflush(stdout);

    uint64_t t_start = pure_now(), next_stats = t_start + stats_every;
    for (;;) {
        uint64_t now = pure_now();
        if (!stats_every) {
            rc = pure_loop_run(srv.loop, PURE_LOOP_FOREVER);
            break;
        }
        if (now >= next_stats) {
            print_stats(&srv, now - t_start);
            while (next_stats <= now) /* no burst of lines after a stall */
                next_stats += stats_every;
        }
        rc = pure_loop_run(srv.loop, next_stats - now);
        if (rc || cli_signals_received())
            break;
    }
    int code = CLI_OK;
    if (rc) {
        perror("pure serve: the socket failed");
        code = CLI_FAIL;
    } else {
        /* Graceful shutdown: every link sends what it had accepted and then CLOSE; give that up
         * to a second (a closing link lingers a few RTTs to repeat its CLOSE). */
        for (srv_link *sl = srv.links, *next; sl; sl = next) {
            next = sl->next;
            pure_link_close(sl->link, 0, "server shutting down");
        }
        uint64_t until = pure_now() + 1000000000u;
        pure_ctx_stats cs;
        for (;;) {
            pure_ctx_stats_get(srv.ctx, &cs);
            uint64_t now = pure_now();
            if (cs.links == 0 || now >= until)
                break;
            if (pure_loop_run(srv.loop, until - now < 10000000u ? until - now : 10000000u))
                break;
        }
        /* A graceful close first sends everything the link had accepted, which can take longer
         * than the second: abort the links still at it, so their peers get a CLOSE now rather
         * than wait out their idle timeout. */
        for (srv_link *sl = srv.links, *next; sl; sl = next) {
            next = sl->next;
            pure_link_abort(sl->link, 0, "server shutting down");
        }
        pure_loop_run(srv.loop, 0); /* one pass: sends the CLOSE packets */
    }
    cli_stop_on_signals(NULL);
    if (verbose) {
        pure_ctx_stats cst;
        pure_ctx_stats_get(srv.ctx, &cst);
        fprintf(stderr,
                "pure serve: stopped after %llu links; datagrams in %llu out %llu; handshakes "
                "accepted %llu refused %llu, cookies sent %llu; dropped: malformed %llu, "
                "failed authentication %llu, replayed %llu, unknown link %llu\n",
                (unsigned long long)srv.accepted, (unsigned long long)cst.datagrams_in,
                (unsigned long long)cst.datagrams_out, (unsigned long long)cst.handshakes_accepted,
                (unsigned long long)cst.handshakes_refused, (unsigned long long)cst.cookies_sent,
                (unsigned long long)cst.dropped_malformed, (unsigned long long)cst.dropped_auth,
                (unsigned long long)cst.dropped_replay,
                (unsigned long long)cst.dropped_unknown_link);
    }
    pure_loop_free(srv.loop);
    srv.loop = NULL;
    pure_ctx_free(srv.ctx); /* runs on_closed for links that did not finish closing */
    return code;
}
