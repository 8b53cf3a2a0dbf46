/* SPDX-License-Identifier: MIT */
/* cli.h: the `pure` command's shared parts: the subcommand table's entry type, exit codes,
 * option and key parsing with messages a person can act on, and the client side's link
 * error reporting. */
#ifndef PURE_CLI_H
#define PURE_CLI_H

#include <getopt.h>
#include <stdio.h>
#include <stdint.h>

#include "pure.h"
#include "pure_loop.h"

/* Exit codes (documented in docs/pure.1 and docs/cli.md). */
enum {
    CLI_OK = 0,      /* done as asked */
    CLI_FAIL = 1,    /* runtime failure: count mismatch, link closed with an error, timeout */
    CLI_USAGE = 2,   /* bad flag, argument, address, key text or file */
    CLI_REFUSED = 3, /* the peer refused us: unknown service, key not allowed, wrong peer key */
};

typedef struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *summary;
} cli_cmd;

int cli_keygen(int argc, char **argv);
int cli_pubkey(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_drain(int argc, char **argv);
int cli_send(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_bench_idle(int argc, char **argv);
int cli_bench_handshakes(int argc, char **argv);
int cli_ping(int argc, char **argv);

/* Prints "pure CMD: <message>" and a pointer to --help on stderr; returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports getopt_long's '?' or ':' result for argv[optind - 1]; returns CLI_USAGE. */
int cli_bad_option(const char *cmd, int c, char **argv);

/* Parses a decimal count (digits only, no sign) up to max. Returns 0 or -1. */
int cli_parse_count(const char *s, uint64_t max, uint64_t *out);

/* Parses seconds ("30", "2.5", "0.1") into nanoseconds, at most one day. Returns 0 or -1. */
int cli_parse_seconds(const char *s, uint64_t *ns);

/* Key text: a private key is "pure-priv:" and 44 characters of base64, a public key "pure-pub:"
 * and 44, so one can never pass for the other. Bare base64 is still read as a public key (pure
 * 0.1 printed keys that way), never as a private one. */
#define CLI_PRIV_PREFIX "pure-priv:"
#define CLI_PUB_PREFIX "pure-pub:"
#define CLI_KEY_TEXT 56 /* bytes cli_key_text writes, with the NUL */

/* Writes a key's text (priv: 1 for a private key, 0 for a public one). */
void cli_key_text(char out[CLI_KEY_TEXT], const uint8_t key[PURE_KEY_LEN], int priv);

/* Results of the *_from_text functions besides 0. */
enum {
    CLI_KEY_MALFORMED = -1,
    CLI_KEY_WRONG_KIND = -2,
    CLI_KEY_BARE = -3
};

/* Parses a public key ("pure-pub:..." or bare base64; surrounding white space allowed).
 * Returns 0, CLI_KEY_WRONG_KIND for a private key's text, or CLI_KEY_MALFORMED. */
int cli_public_key_from_text(uint8_t key[PURE_KEY_LEN], const char *text);

/* Parses a private key ("pure-priv:..."). Returns 0, CLI_KEY_WRONG_KIND for a public key's text,
 * CLI_KEY_BARE for bare base64 (key filled in: ambiguous, refused by the CLI), or
 * CLI_KEY_MALFORMED. */
int cli_private_key_from_text(uint8_t key[PURE_KEY_LEN], const char *text);

/* Parses a public key given on the command line; on error prints what `what` should be (and
 * a distinct line for a private key) and returns CLI_USAGE. */
int cli_parse_key(const char *cmd, const char *what, const char *text, uint8_t key[PURE_KEY_LEN]);

/* Parses a private key's text read from `what` (a file name or "stdin", for messages); on error
 * prints one line saying what is wrong (a public key, bare base64, not a key) and returns
 * CLI_USAGE. */
int cli_read_private_key(const char *cmd, const char *what, const char *text,
                         uint8_t key[PURE_KEY_LEN]);

/* Reads what a key's text may take from f into buf (cap bytes, NUL-terminated): 0, or 1 when f
 * holds more than cap - 1 bytes, or -errno when the read fails (a directory opens, and its
 * read fails with EISDIR). */
int cli_read_small(FILE *f, char *buf, size_t cap);

/* Reads a private key file (as written by `pure keygen`); warns on stderr if the file is
 * readable by its group or others; on error prints the file name and the problem and returns
 * CLI_USAGE. */
int cli_read_key_file(const char *cmd, const char *path, uint8_t key[PURE_KEY_LEN]);

/* Parses a peer address "HOST:PORT" (numeric, or a name looked up once) with a non-zero port;
 * on error prints an example and returns CLI_USAGE. */
int cli_peer_addr(const char *cmd, const char *text, pure_addr *a);

/* The wildcard bind address of a's family: "0.0.0.0:0" or "[::]:0". */
const char *cli_any_bind(const pure_addr *a);

/* Makes SIGINT and SIGTERM call pure_loop_stop(loop) (and ignores SIGPIPE); loop may be NULL
 * to detach. Returns the number of stop signals received so far. */
int cli_stop_on_signals(pure_loop *loop);
int cli_signals_received(void);
/* The exit code for a run a signal stopped: 128 + its number (130 SIGINT, 143 SIGTERM). */
int cli_signal_exit_code(void);

/* What a client knows about its link, for error messages. */
typedef struct cli_client {
    const char *cmd; /* "drain", "send" */
    const char *service;
    const char *server; /* as the user typed it */
    const char *peer_key_text;
    uint8_t our_pub[PURE_KEY_LEN];
    int established;
    int ipv6;                           /* the server's address family (set by cli_client_open) */
    char server_addr[PURE_ADDR_STRLEN]; /* the address it resolved to, "[::1]:4433" */
    pure_addr to;                       /* the same, as an address (set by cli_client_open) */
    uint64_t handshake_timeout; /* ns: --handshake-timeout if set before cli_client_open, else
                                   filled in by it */
    int congestion;             /* --cc: a PURE_CC_*, or 0 for the library's default */
} cli_client;

/* Prints why a client's link closed with `err` (a message a person can act on: for PURE_EUNREACH
 * what the network said, and for a loopback port nothing listens on whether the other address
 * family has it) and returns the exit code: CLI_REFUSED for PURE_EREFUSED/EACCES/EKEY, else
 * CLI_FAIL. */
int cli_link_failed(const cli_client *c, const pure_close_info *info);

/* A client's context and I/O loop: the private key from keyfile (or a new one), the handshake
 * limited to c->handshake_timeout if set, else to 10 s or half of `timeout` so a refusal or a
 * wrong key is reported as such before the overall limit, the callbacks, a socket of to's
 * family. Fills c->our_pub, c->ipv6, c->server_addr and c->handshake_timeout.
 * Returns CLI_OK, or an exit code after printing why. */
int cli_client_open(cli_client *c, const char *keyfile, uint64_t timeout, const pure_callbacks *cb,
                    const pure_addr *to, pure_ctx **ctx, pure_loop **loop);

/* The options the client commands share. Set the defaults, then call cli_client_options. */
typedef struct cli_client_opts {
    const char *peer;           /* --peer-key PUBKEY, as typed */
    const char *keyfile;        /* --key FILE */
    const char *service;        /* --service NAME */
    uint64_t timeout;           /* --timeout SECONDS, in ns */
    uint64_t handshake_timeout; /* --handshake-timeout SECONDS, in ns (0: not given) */
    uint64_t size;              /* --size BYTES (0 to 1 MiB) */
    int stats;                  /* --stats */
    uint64_t channel;           /* --channel N (0 to PURE_MAX_CHANNELS) */
    int congestion;             /* --cc cubic|newreno: PURE_CC_*, 0 when not given */
    uint64_t stats_every;       /* --stats-every SECONDS, in ns (0: not given; else >= 1 ms) */
} cli_client_opts;

#define CLI_OPT_KEY 1u          /* --key */
#define CLI_OPT_SERVICE 2u      /* --service (checked: 1 to 63 bytes) */
#define CLI_OPT_STATS 4u        /* --stats */
#define CLI_OPT_SIZE 8u         /* --size */
#define CLI_OPT_CHANNEL 16u     /* --channel */
#define CLI_OPT_CC 32u          /* --cc cubic|newreno (the sender's congestion controller) */
#define CLI_OPT_STATS_EVERY 64u /* --stats-every SECONDS (a stats line every SECONDS) */

/* Parses cmd's options: --peer-key, --timeout, --handshake-timeout and --help always, the others
 * where `allow` has them (any other is an unknown option). Returns -1 with optind at the first
 * positional argument, or the exit code to return: CLI_OK after printing `help`, CLI_USAGE after
 * saying what was wrong. */
int cli_client_options(const char *cmd, const char *help, unsigned allow, int argc, char **argv,
                       cli_client_opts *o);

/* This process's CPU time (user + system), seconds. */
double cli_cpu_seconds(void);
/* Runs the loop until the context holds no link (a closing link repeats its CLOSE for a few
 * probe timeouts, so a lost one is sent again) or for at most 200 ms, or a signal comes. Call
 * it before pure_loop_free, so a client that exits at once after a close does not leave its
 * peer waiting out an idle timeout because the one CLOSE it sent was lost. */
void cli_linger(pure_loop *loop, pure_ctx *ctx);

/* Sorts n values ascending; then cli_quantile_us gives the q-quantile (0..1, nearest rank) of
 * sorted nanosecond values in microseconds. */
void cli_sort_u64(uint64_t *v, uint64_t n);
double cli_quantile_us(const uint64_t *sorted, uint64_t n, double q);

/* Prints a loop's and a link's counters on stderr (--stats). */
void cli_print_stats(const char *cmd, const pure_link_stats *ls, const pure_loop *loop);

#endif
