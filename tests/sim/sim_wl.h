/* SPDX-License-Identifier: MIT */
/* sim_wl.h: a service workload on the simulator: one client endpoint opens many links at once to an
 * echo service on a server endpoint and sends each a planned sequence of messages (sizes from a
 * seeded mix of tiny, medium and huge, with the limits' edges), the service answers every
 * message from inside on_message (queueing in the application on PURE_EAGAIN, as pure.h tells
 * users to), and both sides check every message whole, in order, once, byte for byte, and hash
 * each direction. Either side may close, abort or vanish at random moments; the harness checks
 * the callback contract (on_closed once per link, nothing after it) and what each close reports
 * against what the peer really received; an injected allocator proves everything is freed. */
#ifndef PURE_SIM_WL_H
#define PURE_SIM_WL_H

#include <stdint.h>

#include "sim.h"

typedef struct wl_cfg {
    uint64_t seed;
    uint32_t links;              /* links opened at once */
    uint32_t messages;           /* messages per link, client to server (each echoed) */
    uint32_t max_size;           /* largest planned message (sizes mix 0..64 B, ..16 KiB, ..max) */
    uint32_t max_message_size;   /* both sides' limit; 0: 4 MiB */
    int echo;                    /* the service echoes every message */
    double client_close;         /* fraction of links the client closes gracefully mid-way */
    double client_abort;         /* ... aborts mid-way */
    double server_close;         /* fraction of links the server closes gracefully mid-way */
    double server_abort;         /* ... aborts mid-way */
    sim_path path;               /* both directions */
    uint64_t idle_timeout;       /* 0: 5 s */
    int null_crypto;             /* the null backend (fast, for huge runs) */
    int keep_open;               /* do not close links that finished (the long run's rounds) */
    uint32_t channels;           /* link i carries everything (hello, messages, echoes) on channel
                                    i % (channels + 1) (pure_link_send_on; 0: channel 0 only) */
    int shared;                  /* on channels 1..channels, every message goes as a shared buffer
                                    of its own (pure_shared_new, pure_link_send_shared); wl_free
                                    checks that each was released exactly once */
    double cancels;              /* on channels 1..: this fraction of the client's messages is
                                    cancelled two sends later (pure_link_cancel), as many again get
                                    a deadline 1..16 ms away (pure_link_send_on_deadline); the server
                                    echoes a cancelled message as the 4 bytes "CNCL", and both sides'
                                    reports are checked to agree */
    uint64_t max_receive_memory; /* both sides' receive budget (0: the default) */
    uint32_t fail_every;         /* once every handshake is done, every fail_every-th
                                    allocation of either side is refused (0: none); a send or reply
                                    refused with PURE_ENOMEM is made again 10 ms later, as an
                                    application short of memory would */
    int datagrams; /* beside each message the client sends an unreliable datagram (sized up to
                      pure_link_datagram_max, its bytes derived from link and index) and the
                      server echoes each as a datagram: each must arrive whole and at most
                      once, and each side's pure_datagram_stats must agree with what its
                      application queued and got */
    uint64_t rekey_packets; /* both sides' rekey_after_packets (0: the default, 2^23): keys
                               change every few hundred packets under everything else */
    int finish; /* links on channel 0 end with a half-close: the client calls pure_link_finish
                   once it has sent everything (before the echoes are in), the server's
                   on_peer_finished must come after the last message, and the server closes
                   once its echoes are sent; the client must get every echo */
    void (*tweak)(pure_settings *s, int server); /* adjusts both sides' settings last (NULL:
                                                    none): settings_test's edges */
} wl_cfg;

typedef struct wl wl;

/* Builds the simulator, both endpoints and the links' plans (links are connected by wl_start). */
wl *wl_new(const wl_cfg *cfg);
sim *wl_sim(wl *w);
int wl_client(const wl *w);
int wl_server(const wl *w);
/* Connects every link. */
void wl_start(wl *w);
/* Runs until every link is closed on both sides (or `until`). Returns 1 if all closed. */
int wl_run(wl *w, uint64_t until);
/* The server process dies: its datagrams stop both ways and its context is never called again
 * (freed at wl_free without reporting anything: a killed process reports nothing). */
void wl_kill_server(wl *w);
/* A new server process at the same address and key (after wl_kill_server). */
void wl_restart_server(wl *w);
/* Starts `n` more rounds of `messages` on every link still open (keep_open runs). */
void wl_more(wl *w, uint32_t messages);
/* Frees the client's context with its links alive (they must all be reported closed). */
void wl_free_client(wl *w);
/* Checks every invariant; prints what broke with the seed; returns the number of violations. */
int wl_check(wl *w, const char *name);
/* The latest time a client link was reported closed (0 if none). */
uint64_t wl_last_client_close(const wl *w);
/* Client links reported closed with `error`. */
uint32_t wl_client_closed_with(const wl *w, int error);
/* Messages delivered in both directions so far. */
uint64_t wl_delivered(const wl *w);
/* Allocations refused so far (wl_cfg.fail_every). */
uint64_t wl_refused_allocations(const wl *w);
/* Rekeys the links made, both sides, counted as each closed. */
uint64_t wl_rekeys(const wl *w);
/* Bytes the two contexts hold now (injected allocator). */
int64_t wl_live_bytes(const wl *w);
/* Frees everything; then checks that both allocators are back to zero. Returns violations. */
int wl_free(wl *w);

#endif
