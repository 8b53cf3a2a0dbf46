/* SPDX-License-Identifier: MIT */
/* common.c: option, key and address parsing for every subcommand, signal handling, and the
 * client's account of why a link failed. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pure %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'pure %s --help'.\n", cmd);
    return CLI_USAGE;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *opt = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':')
        return cli_usage(cmd, "option %s needs a value", opt);
    return cli_usage(cmd, "unknown option %s", opt);
}

int cli_client_options(const char *cmd, const char *help, unsigned allow, int argc, char **argv,
                       cli_client_opts *o)
{
    static const struct option opts[] = {{"peer-key", required_argument, NULL, 'p'},
                                         {"key", required_argument, NULL, 'k'},
                                         {"service", required_argument, NULL, 'S'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"size", required_argument, NULL, 'z'},
                                         {"stats", no_argument, NULL, 's'},
                                         {"handshake-timeout", required_argument, NULL, 'H'},
                                         {"channel", required_argument, NULL, 'c'},
                                         {"cc", required_argument, NULL, 'C'},
                                         {"stats-every", required_argument, NULL, 'E'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    /* the options only some commands take, by the flag in `allow` that admits them */
    static const struct {
        int c;
        unsigned flag;
    } optional[] = {{'k', CLI_OPT_KEY},        {'S', CLI_OPT_SERVICE}, {'s', CLI_OPT_STATS},
                    {'z', CLI_OPT_SIZE},       {'c', CLI_OPT_CHANNEL}, {'C', CLI_OPT_CC},
                    {'E', CLI_OPT_STATS_EVERY}};
    int c, idx;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, &idx)) != -1) {
        for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
            if (c == optional[i].c && !(allow & optional[i].flag)) /* another command's */
                return cli_usage(cmd, "unknown option --%s", opts[idx].name);
        switch (c) {
        case 'p': o->peer = optarg; break;
        case 'k': o->keyfile = optarg; break;
        case 'S': o->service = optarg; break;
        case 's': o->stats = 1; break;
        case 'z':
            if (cli_parse_count(optarg, 1u << 20, &o->size))
                return cli_usage(cmd, "--size '%s' is not a message size in bytes (0 to 1048576)",
                                 optarg);
            break;
        case 't':
            if (cli_parse_seconds(optarg, &o->timeout) || o->timeout == 0)
                return cli_usage(cmd, "--timeout '%s' is not a positive number of seconds", optarg);
            break;
        case 'c':
            if (cli_parse_count(optarg, PURE_MAX_CHANNELS, &o->channel))
                return cli_usage(cmd, "--channel '%s' is not a channel (0 to 255)", optarg);
            break;
        case 'H':
            if (cli_parse_seconds(optarg, &o->handshake_timeout) || o->handshake_timeout == 0)
                return cli_usage(cmd,
                                 "--handshake-timeout '%s' is not a positive number of "
                                 "seconds",
                                 optarg);
            break;
        case 'C':
            if (strcmp(optarg, "cubic") == 0)
                o->congestion = PURE_CC_CUBIC;
            else if (strcmp(optarg, "newreno") == 0)
                o->congestion = PURE_CC_NEWRENO;
            else
                return cli_usage(cmd, "--cc '%s' is not a congestion controller (cubic or newreno)",
                                 optarg);
            break;
        case 'E':
            if (cli_parse_seconds(optarg, &o->stats_every) || o->stats_every < 1000000u)
                return cli_usage(
                    cmd, "--stats-every '%s' is not a number of seconds (0.001 or more)", optarg);
            break;
        case 'h': fputs(help, stdout); return CLI_OK;
        default: return cli_bad_option(cmd, c, argv);
        }
    }
    if ((allow & CLI_OPT_SERVICE) && (!o->service || !*o->service || strlen(o->service) > 63))
        return cli_usage(cmd, "--service '%s' is not a service name (1 to 63 bytes)",
                         o->service ? o->service : "");
    return -1;
}

double cli_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_linger(pure_loop *loop, pure_ctx *ctx)
{
    uint64_t until = pure_now() + 200000000u;
    pure_ctx_stats cs;
    for (;;) {
        pure_ctx_stats_get(ctx, &cs);
        uint64_t now = pure_now();
        if (cs.links == 0 || now >= until || cli_signals_received())
            break;
        if (pure_loop_run(loop, until - now < 10000000u ? until - now : 10000000u))
            break;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void cli_sort_u64(uint64_t *v, uint64_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
}

double cli_quantile_us(const uint64_t *sorted, uint64_t n, double q)
{
    uint64_t k = (uint64_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)sorted[k - 1] / 1e3;
}

int cli_parse_count(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (d > max || v > (max - d) / 10) /* d > max: max - d would wrap */
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int cli_parse_seconds(const char *s, uint64_t *ns)
{
    uint64_t whole = 0, frac = 0, scale = 1000000000u;
    int nonzero = 0; /* a digit other than 0: the value is not 0, however small */
    const char *p = s;
    if (!p || !*p)
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        nonzero |= *p != '0';
        if (whole > 86400)
            return -1;
    }
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            nonzero |= *p != '0';
            if (scale > 1) {
                scale /= 10;
                frac += (uint64_t)(*p - '0') * scale;
            }
        }
    }
    if (*p || p == s)
        return -1;
    *ns = whole * 1000000000u + frac;
    /* below a nanosecond is not 0 (for --keepalive, 0 is "none"): refused, not rounded to it */
    return *ns > 86400ull * 1000000000u || (nonzero && *ns == 0) ? -1 : 0;
}

void cli_key_text(char out[CLI_KEY_TEXT], const uint8_t key[PURE_KEY_LEN], int priv)
{
    char b64[45];
    pure_key_to_base64(b64, key);
    snprintf(out, CLI_KEY_TEXT, "%s%s", priv ? CLI_PRIV_PREFIX : CLI_PUB_PREFIX, b64);
    memset(b64, 0, sizeof b64);
}

/* Skips leading white space; returns the text after `prefix` if it starts with it, else NULL. */
static const char *after_prefix(const char *text, const char *prefix)
{
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    size_t n = strlen(prefix);
    return strncmp(text, prefix, n) == 0 ? text + n : NULL;
}

int cli_public_key_from_text(uint8_t key[PURE_KEY_LEN], const char *text)
{
    if (after_prefix(text, CLI_PRIV_PREFIX))
        return CLI_KEY_WRONG_KIND;
    const char *b64 = after_prefix(text, CLI_PUB_PREFIX);
    return pure_key_from_base64(key, b64 ? b64 : text) == 0 ? 0 : CLI_KEY_MALFORMED;
}

int cli_private_key_from_text(uint8_t key[PURE_KEY_LEN], const char *text)
{
    if (after_prefix(text, CLI_PUB_PREFIX))
        return CLI_KEY_WRONG_KIND;
    const char *b64 = after_prefix(text, CLI_PRIV_PREFIX);
    if (!b64) /* bare base64 could as well be a public key */
        return pure_key_from_base64(key, text) == 0 ? CLI_KEY_BARE : CLI_KEY_MALFORMED;
    return pure_key_from_base64(key, b64) == 0 ? 0 : CLI_KEY_MALFORMED;
}

int cli_parse_key(const char *cmd, const char *what, const char *text, uint8_t key[PURE_KEY_LEN])
{
    switch (cli_public_key_from_text(key, text)) {
    case 0: return 0;
    case CLI_KEY_WRONG_KIND:
        memset(key, 0, PURE_KEY_LEN);
        fprintf(stderr,
                "pure %s: %s is a private key (pure-priv:...), not a public key: give "
                "the public key (pure pubkey < FILE prints it), and keep the private key "
                "off command lines\n",
                cmd, what);
        return CLI_USAGE;
    default:
        return cli_usage(cmd,
                         "%s '%.60s' is not a public key: expected pure-pub: and 44 "
                         "characters of base64 (as printed by pure pubkey / pure serve)",
                         what, text);
    }
}

int cli_read_private_key(const char *cmd, const char *what, const char *text,
                         uint8_t key[PURE_KEY_LEN])
{
    int rc = cli_private_key_from_text(key, text);
    if (rc == 0)
        return 0;
    memset(key, 0, PURE_KEY_LEN);
    if (rc == CLI_KEY_WRONG_KIND)
        fprintf(stderr,
                "pure %s: %s holds a public key (pure-pub:...), not a private key: give "
                "the file pure keygen wrote\n",
                cmd, what);
    else if (rc == CLI_KEY_BARE)
        fprintf(stderr,
                "pure %s: %s holds bare base64, which may be a public key: private keys "
                "are written pure-priv:... since pure 0.2; if it is a private key from "
                "pure 0.1, prefix it with pure-priv:\n",
                cmd, what);
    else
        fprintf(stderr,
                "pure %s: %s does not hold a private key: expected one line "
                "pure-priv: and 44 base64 characters (make one with: pure keygen)\n",
                cmd, what);
    return CLI_USAGE;
}

int cli_read_small(FILE *f, char *buf, size_t cap)
{
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    if (ferror(f))
        return -errno;
    return !feof(f);
}

int cli_read_key_file(const char *cmd, const char *path, uint8_t key[PURE_KEY_LEN])
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pure %s: cannot read key file %s: %s\n", cmd, path, strerror(errno));
        return CLI_USAGE;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077))
        fprintf(stderr,
                "pure %s: warning: private key file %s is readable by %s (mode %04o): "
                "chmod 600 %s\n",
                cmd, path, (st.st_mode & 007) ? "everyone" : "its group",
                (unsigned)(st.st_mode & 07777), path);
    char buf[256], what[300];
    int big = cli_read_small(f, buf, sizeof buf);
    fclose(f);
    if (big < 0) {
        memset(buf, 0, sizeof buf);
        fprintf(stderr, "pure %s: cannot read key file %s: %s\n", cmd, path, strerror(-big));
        return CLI_USAGE;
    }
    snprintf(what, sizeof what, "key file %s", path);
    int rc = big ? (fprintf(stderr,
                            "pure %s: key file %s does not hold a private key: it is "
                            "larger than one key (make one with: pure keygen > %s)\n",
                            cmd, path, path),
                    CLI_USAGE)
                 : cli_read_private_key(cmd, what, buf, key);
    memset(buf, 0, sizeof buf);
    return rc;
}

int cli_peer_addr(const char *cmd, const char *text, pure_addr *a)
{
    if (pure_addr_from_string(a, text) != 0) {
        /* not numeric: look the name up once ("localhost:4433") */
        const char *colon = strrchr(text, ':');
        char host[256];
        int ok = 0;
        if (colon && colon != text && (size_t)(colon - text) < sizeof host && text[0] != '[') {
            memcpy(host, text, (size_t)(colon - text));
            host[colon - text] = 0;
            uint64_t port;
            struct addrinfo hints, *res = NULL;
            memset(&hints, 0, sizeof hints);
            hints.ai_socktype = SOCK_DGRAM;
            if (cli_parse_count(colon + 1, 65535, &port) == 0 &&
                getaddrinfo(host, NULL, &hints, &res) == 0 && res) {
                /* sin_port and sin6_port sit at the same offset */
                uint16_t p = htons((uint16_t)port);
                memset(a, 0, sizeof *a);
                if (res->ai_addrlen <= sizeof a->bytes) {
                    memcpy(a->bytes, res->ai_addr, res->ai_addrlen);
                    memcpy(a->bytes + 2, &p, sizeof p);
                    a->len = (uint32_t)res->ai_addrlen;
                    ok = 1;
                }
            }
            if (res)
                freeaddrinfo(res);
        }
        if (!ok)
            return cli_usage(cmd,
                             "'%s' is not an address: expected HOST:PORT such as "
                             "127.0.0.1:4433 or [::1]:4433",
                             text);
    }
    char s[PURE_ADDR_STRLEN];
    pure_addr_to_string(a, s, sizeof s);
    if (strcmp(strrchr(s, ':'), ":0") == 0)
        return cli_usage(cmd, "'%s' has port 0: give the port pure serve printed", text);
    return 0;
}

const char *cli_any_bind(const pure_addr *a)
{
    return a->len == sizeof(struct sockaddr_in) ? "0.0.0.0:0" : "[::]:0";
}

static pure_loop *volatile stop_loop;
static volatile sig_atomic_t stop_signals, last_signal;

static void on_signal(int sig)
{
    last_signal = sig;
    stop_signals++;
    pure_loop *l = stop_loop;
    if (l)
        pure_loop_stop(l);
}

int cli_stop_on_signals(pure_loop *loop)
{
    stop_loop = loop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout shows up as a write error instead */
    return stop_signals;
}

int cli_signals_received(void)
{
    return stop_signals;
}

int cli_signal_exit_code(void)
{
    return 128 + (last_signal ? last_signal : SIGINT);
}

/* For a loopback target nothing listens on: whether the same port is taken on the other family's
 * loopback address, which is what a server listening on IPv4 only (or IPv6 only) looks like
 * from a client that picked the other family. A bind that fails with EADDRINUSE says so without
 * sending anything. Fills `other` ("127.0.0.1:4433") and returns 1 if so. */
static int other_family_in_use(const pure_addr *to, char *other, size_t cap)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, to->bytes, to->len < sizeof ss ? to->len : sizeof ss);
    pure_addr alt;
    memset(&alt, 0, sizeof alt);
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
        if ((ntohl(s4->sin_addr.s_addr) >> 24) != 127)
            return 0;
        struct sockaddr_in6 s6;
        memset(&s6, 0, sizeof s6);
        s6.sin6_family = AF_INET6;
        s6.sin6_port = s4->sin_port;
        s6.sin6_addr = in6addr_loopback;
        memcpy(alt.bytes, &s6, sizeof s6);
        alt.len = sizeof s6;
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
        if (!IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
            return 0;
        struct sockaddr_in s4;
        memset(&s4, 0, sizeof s4);
        s4.sin_family = AF_INET;
        s4.sin_port = s6->sin6_port;
        s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        memcpy(alt.bytes, &s4, sizeof s4);
        alt.len = sizeof s4;
    } else {
        return 0;
    }
    int fam = alt.len == sizeof(struct sockaddr_in) ? AF_INET : AF_INET6;
    int fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int taken = bind(fd, (const struct sockaddr *)alt.bytes, alt.len) != 0 && errno == EADDRINUSE;
    close(fd);
    if (taken)
        pure_addr_to_string(&alt, other, cap);
    return taken;
}

int cli_link_failed(const cli_client *c, const pure_close_info *info)
{
    char pub[CLI_KEY_TEXT];
    cli_key_text(pub, c->our_pub, 0);
    switch (info->error) {
    case PURE_EREFUSED:
        fprintf(stderr,
                "pure %s: the server refused service '%s' (is pure serve running with "
                "--services %s?)\n",
                c->cmd, c->service, c->service);
        return CLI_REFUSED;
    case PURE_EACCES:
        fprintf(stderr,
                "pure %s: the server at %s does not allow our key %s (add it to the server's "
                "--allow file, or run pure serve with --allow-any)\n",
                c->cmd, c->server, pub);
        return CLI_REFUSED;
    case PURE_EKEY:
        fprintf(stderr,
                "pure %s: the server at %s rejected the handshake: it does not have the "
                "private key of --peer-key %s (use the public_key that pure serve printed)\n",
                c->cmd, c->server, c->peer_key_text);
        return CLI_REFUSED;
    case PURE_ETIMEDOUT:
        /* No answer and no ICMP error (a firewall that drops, a host that is down, a server
         * started with --silent): name what to check, and the address a name resolved to, since
         * localhost may be ::1 or 127.0.0.1. */
        if (!c->established)
            fprintf(stderr,
                    "pure %s: no answer from %s%s%s%s within %.1f s: is pure serve running "
                    "there, on that port, listening on %s?\n",
                    c->cmd, c->server, strcmp(c->server, c->server_addr) ? " (" : "",
                    strcmp(c->server, c->server_addr) ? c->server_addr : "",
                    strcmp(c->server, c->server_addr) ? ")" : "",
                    (double)c->handshake_timeout / 1e9,
                    c->ipv6 ? "IPv6 ([::1] or [::]; a server on 127.0.0.1 or 0.0.0.0 does not "
                              "hear IPv6)"
                            : "IPv4 (127.0.0.1, 0.0.0.0 or [::]; a server on [::1] does not "
                              "hear IPv4)");
        else
            fprintf(stderr, "pure %s: the server at %s went silent (idle timeout)\n", c->cmd,
                    c->server);
        return CLI_FAIL;
    case PURE_EUNREACH: {
        /* the network (ICMP) or this host said so within a round trip: name what it said */
        char other[PURE_ADDR_STRLEN];
        const char *fam = c->ipv6 ? "IPv6" : "IPv4";
        switch (info->peer_code) {
        case PURE_UNREACH_PORT:
            if (other_family_in_use(&c->to, other, sizeof other))
                fprintf(stderr,
                        "pure %s: nothing listens on %s over %s (ICMP port unreachable), but "
                        "port %s is in use on %s: is pure serve listening on %s only? Connect "
                        "to %s, or serve on [::]:PORT for both\n",
                        c->cmd, c->server_addr, fam, strrchr(other, ':') + 1, other,
                        c->ipv6 ? "IPv4" : "IPv6", other);
            else
                fprintf(stderr,
                        "pure %s: %s: connection refused: nothing listens on that UDP port "
                        "(ICMP port unreachable); is pure serve running there, on that port?\n",
                        c->cmd, c->server_addr);
            break;
        case PURE_UNREACH_HOST:
            fprintf(stderr,
                    "pure %s: %s: host unreachable: the network has no route to it (ICMP host "
                    "unreachable); check the address\n",
                    c->cmd, c->server_addr);
            break;
        case PURE_UNREACH_ADMIN:
            fprintf(stderr,
                    "pure %s: %s: a firewall refuses UDP to it (ICMP administratively "
                    "prohibited)\n",
                    c->cmd, c->server_addr);
            break;
        case PURE_UNREACH_FAMILY:
            fprintf(stderr, "pure %s: %s: cannot send there: our socket is not %s\n", c->cmd,
                    c->server_addr, fam);
            break;
        default:
            fprintf(stderr, "pure %s: %s: this host has no route to it (%s)\n", c->cmd,
                    c->server_addr, info->reason ? info->reason : "");
        }
        return CLI_FAIL;
    }
    case PURE_ENOTPURE:
        fprintf(stderr,
                "pure %s: %s is not a Pure server: it answered with datagrams that are not "
                "Pure (another UDP service on that port? use the port pure serve printed)\n",
                c->cmd, c->server_addr);
        return CLI_FAIL;
    case PURE_EVERSION:
        fprintf(stderr,
                "pure %s: %s speaks version %llu of the Pure protocol, this pure speaks version "
                "1: upgrade the older of the two\n",
                c->cmd, c->server_addr, (unsigned long long)info->peer_code);
        return CLI_FAIL;
    case PURE_ERESET:
        fprintf(stderr, "pure %s: the server closed the link with error code %llu: %s\n", c->cmd,
                (unsigned long long)info->peer_code,
                info->reason && *info->reason ? info->reason : "(no reason given)");
        return CLI_FAIL;
    default:
        fprintf(stderr, "pure %s: the link to %s failed: %s\n", c->cmd, c->server,
                pure_strerror(info->error));
        return CLI_FAIL;
    }
}

void cli_print_stats(const char *cmd, const pure_link_stats *ls, const pure_loop *loop)
{
    pure_loop_stats st;
    pure_loop_stats_get(loop, &st);
    if (ls)
        fprintf(stderr,
                "pure %s: link: rtt %.1f us (min %.1f, var %.1f), cwnd %llu B, packets sent %llu "
                "received %llu, lost %llu (random %llu), retransmitted %llu B, PTOs %llu, "
                "recv window %llu B, rekeys %llu, paced bursts %llu, datagrams of %llu B, ECN CE "
                "received %llu reported %llu\n",
                cmd, (double)ls->rtt_ns / 1e3, (double)ls->rtt_min_ns / 1e3,
                (double)ls->rtt_var_ns / 1e3, (unsigned long long)ls->cwnd,
                (unsigned long long)ls->packets_sent, (unsigned long long)ls->packets_received,
                (unsigned long long)ls->packets_lost, (unsigned long long)ls->random_losses,
                (unsigned long long)ls->bytes_retransmitted, (unsigned long long)ls->ptos,
                (unsigned long long)ls->recv_window, (unsigned long long)ls->rekeys,
                (unsigned long long)ls->paced_bursts, (unsigned long long)ls->datagram_size,
                (unsigned long long)ls->ecn_ce_received, (unsigned long long)ls->ecn_ce_reported);
    fprintf(
        stderr,
        "pure %s: loop: sendmsg calls %llu, packets %llu (%.1f per call), GSO bursts %llu%s, "
        "send blocked %llu, send errors %llu; recvmsg calls %llu, datagrams %llu (%.1f per "
        "call), GRO segments %llu in %llu buffers%s, empty reads %llu; wakeups %llu (timer %llu), "
        "timeouts %llu\n",
        cmd, (unsigned long long)st.sendmsg_calls, (unsigned long long)st.packets_sent,
        st.sendmsg_calls ? (double)st.packets_sent / (double)st.sendmsg_calls : 0.0,
        (unsigned long long)st.gso_bursts, st.gso ? "" : " (GSO off)",
        (unsigned long long)st.send_blocked, (unsigned long long)st.send_errors,
        (unsigned long long)st.recvmsg_calls, (unsigned long long)st.datagrams_received,
        st.recvmsg_calls ? (double)st.datagrams_received / (double)st.recvmsg_calls : 0.0,
        (unsigned long long)st.gro_segments, (unsigned long long)st.gro_buffers,
        st.gro ? "" : " (GRO off)", (unsigned long long)st.recv_empty,
        (unsigned long long)st.wakeups, (unsigned long long)st.timer_wakeups,
        (unsigned long long)st.timeouts);
}

int cli_client_open(cli_client *c, const char *keyfile, uint64_t timeout, const pure_callbacks *cb,
                    const pure_addr *to, pure_ctx **ctx, pure_loop **loop)
{
    pure_settings st;
    pure_settings_default(&st);
    pure_settings_use_huge_pages(&st);   /* a streaming link's ring: few page faults */
    st.max_channels = PURE_MAX_CHANNELS; /* --channel: any; a channel costs nothing unused */
    if (keyfile) {
        if (cli_read_key_file(c->cmd, keyfile, st.private_key))
            return CLI_USAGE;
    } else if (pure_keygen(st.private_key) != 0) {
        fprintf(stderr, "pure %s: no randomness available for a key\n", c->cmd);
        return CLI_FAIL;
    }
    pure_public_key(c->our_pub, st.private_key);
    c->ipv6 = to->len != sizeof(struct sockaddr_in);
    c->to = *to;
    pure_addr_to_string(to, c->server_addr, sizeof c->server_addr);
    /* the handshake gives up at its budget: half the run's timeout unless given */
    if (c->handshake_timeout)
        st.handshake_timeout = c->handshake_timeout;
    else if (timeout / 2 < st.handshake_timeout)
        st.handshake_timeout = timeout / 2;
    c->handshake_timeout = st.handshake_timeout;
    if (c->congestion)
        st.congestion = c->congestion;
    st.callbacks = cb;
    int rc = pure_ctx_new(&st, ctx);
    memset(st.private_key, 0, sizeof st.private_key);
    if (rc) {
        fprintf(stderr, "pure %s: cannot create the context: %s\n", c->cmd, pure_strerror(rc));
        return CLI_FAIL;
    }
    if (pure_loop_new(*ctx, cli_any_bind(to), loop) != 0) {
        fprintf(stderr, "pure %s: cannot open a UDP socket: %s\n", c->cmd, strerror(errno));
        pure_ctx_free(*ctx);
        *ctx = NULL;
        return CLI_FAIL;
    }
    return CLI_OK;
}
