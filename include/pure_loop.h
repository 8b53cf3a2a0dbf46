/* SPDX-License-Identifier: MIT */
/* pure_loop.h: Pure's optional I/O loop, which drives one pure_ctx over one Linux UDP socket
 * (IPv4 or IPv6) with epoll, GSO send bursts (UDP_SEGMENT), GRO receive (UDP_GRO) and
 * sendmmsg/recvmmsg where those are missing.
 *
 * The loop owns the socket and the clock; the application owns the context, its callbacks and
 * its links. A typical client:
 *
 *     pure_ctx_new(&settings, &ctx);                 // callbacks in settings
 *     pure_loop_new(ctx, "0.0.0.0:0", &loop);
 *     pure_addr_from_string(&to, "127.0.0.1:4433");
 *     pure_connect(ctx, &to, server_key, "echo", app, &link, pure_now());
 *     pure_loop_run(loop, PURE_LOOP_FOREVER);        // returns after pure_loop_stop()
 *     pure_loop_free(loop);
 *     pure_ctx_free(ctx);                            // on_closed for links still open
 *
 * Free the loop before the context, and do not use the loop (pure_loop_stop, say) from an
 * on_closed that pure_ctx_free runs: by then the loop is gone. Links still open when the
 * context is freed are reported closed with PURE_ECLOSED.
 *
 * Every wakeup the loop reads what the socket holds (a bounded batch), feeds each datagram to
 * pure_ctx_read, then runs pure_ctx_timeout if due, then sends everything pure_ctx_write
 * produces, one sendmsg per burst. It sleeps until pure_ctx_deadline or the next datagram.
 * Many links share the one socket; nothing is allocated per datagram.
 *
 * Times are pure_now() nanoseconds: pass pure_now() as `now` to pure_connect and friends.
 *
 * Thread safety: a loop and its context belong to one thread at a time (the one in
 * pure_loop_run). pure_loop_stop is the exception: any thread, and signal handlers, may call it.
 */
#ifndef PURE_LOOP_H
#define PURE_LOOP_H

#include <stdint.h>

#include "pure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pure_loop pure_loop;

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC): the time base the loop gives the core. */
PURE_API uint64_t pure_now(void);

/* ---- Memory -------------------------------------------------------------------------------- */

/* Blocks of at least this many bytes go to huge-page-backed mappings (below: malloc). 2 MiB, one
 * huge page: a smaller block mapped on its own would take a whole zeroed huge page, and a busy
 * link's ring of 256 KiB to 1 MiB times 1,000 links was 2 GB of them (it was 256 KiB in 0.1.0; a
 * single streaming link now pays ~260 more small-page faults, ~4 ms a million messages). */
#define PURE_HUGE_MIN ((size_t)2 << 20)

/* Sets s->alloc, s->free and s->realloc (and alloc_user) to an allocator that backs blocks of
 * PURE_HUGE_MIN bytes and more, in practice the send ring of a link that streams fast, with
 * transparent huge pages: each is its own mapping, rounded up to and aligned on 2 MiB and advised
 * MADV_HUGEPAGE. Touching fresh memory is a page fault per 4 KiB page, and a ring of a few MiB
 * costs milliseconds of CPU in faults before it is warm; a huge page is one fault per 2 MiB.
 * Where THP is off or no huge page is free, the kernel uses small pages: nothing fails. The cost:
 * a large block occupies whole 2 MiB pages (a link's ring is freed when it falls idle). The
 * `pure` CLI uses this. */
PURE_API void pure_settings_use_huge_pages(pure_settings *s);

/* The allocator's functions (pure_settings.alloc/free/realloc signatures), for tests and for
 * applications that wrap them. */
PURE_API void *pure_huge_alloc(void *user, size_t n);
PURE_API void pure_huge_free(void *user, void *p, size_t n);
PURE_API void *pure_huge_realloc(void *user, void *p, size_t old, size_t n);

/* ---- Addresses ---------------------------------------------------------------------------- */

/* Bytes pure_addr_to_string needs at most, with the terminating NUL. */
#define PURE_ADDR_STRLEN 64

/* Parses "A.B.C.D:PORT" or "[IPv6]:PORT" (numeric hosts only, no name lookup; port 0..65535,
 * decimal digits only) into a struct sockaddr_in or sockaddr_in6 stored in a->bytes, with
 * a->len its size. Returns 0, or PURE_EINVAL for anything else (a missing port, a host name,
 * brackets around IPv4, trailing junk). */
PURE_API int pure_addr_from_string(pure_addr *a, const char *host_port);

/* Writes "A.B.C.D:PORT" or "[IPv6]:PORT" for an address made by pure_addr_from_string or the
 * loop. out must hold cap bytes (PURE_ADDR_STRLEN is always enough). Returns 0, or PURE_EINVAL
 * if a does not hold an IPv4/IPv6 socket address or cap is too small (out is then ""). */
PURE_API int pure_addr_to_string(const pure_addr *a, char *out, size_t cap);

/* ---- The loop ----------------------------------------------------------------------------- */

/* Creates a loop for ctx and binds its UDP socket to `bind` ("127.0.0.1:0", "[::1]:4433",
 * "0.0.0.0:4433", "[::]:0"; port 0 picks a free port). The socket is non-blocking, has 64 MiB
 * receive and send buffers where the system allows (SO_RCVBUFFORCE first, then SO_RCVBUF),
 * and GRO on where the kernel has it. It sets the context's limit on bytes in flight to the
 * receive buffer granted (pure_ctx_set_max_in_flight: the peer's socket is taken to be like
 * this one; call that after pure_loop_new to choose otherwise). An IPv6 wildcard socket also
 * takes IPv4 (mapped addresses). The socket queues ICMP errors (IP_RECVERR, IPV6_RECVERR),
 * which the loop reads and passes to pure_ctx_unreachable, so a handshake to a closed port or
 * an unreachable host fails at once. The context must outlive the loop. Returns 0 and *out, or:
 *   PURE_EINVAL  NULL arguments or `bind` is not a numeric address (pure_addr_from_string);
 *   PURE_ENOMEM  the loop's buffers could not be allocated;
 *   PURE_EIO     socket, bind or epoll failed (errno says why: EADDRINUSE, EACCES, ...). */
PURE_API int pure_loop_new(pure_ctx *ctx, const char *bind, pure_loop **out);

/* Says goodbye, closes the socket and frees the loop (not the context). First, so that no peer
 * is left to find out at its idle timeout: graceful closes still waiting for the peer's
 * acknowledgements end at once (pure_ctx_shutdown with PURE_SHUTDOWN_CLOSES: their on_closed
 * runs here, with error PURE_ECLOSED and the ids never acknowledged, the loop still whole), and
 * everything the core has queued is sent — the CLOSE of every pure_link_abort and of those
 * closes among it — giving a full socket up to 20 ms to drain (best effort: a CLOSE lost on
 * the way is not sent again). Links the application left open stay open, for the context may
 * be driven on; to end them too, call pure_ctx_shutdown(ctx, PURE_SHUTDOWN_ALL, pure_now())
 * first. */
PURE_API void pure_loop_free(pure_loop *loop);

/* The local port the socket is bound to (the one the kernel chose for port 0). */
PURE_API uint16_t pure_loop_port(const pure_loop *loop);

/* The local address the socket is bound to. */
PURE_API const pure_addr *pure_loop_local_addr(const pure_loop *loop);

/* pure_loop_run's timeout for "until pure_loop_stop". */
#define PURE_LOOP_FOREVER UINT64_MAX

/* Runs the loop: receives, runs timers, sends, sleeps, until pure_loop_stop is called (from a
 * callback, an fd handler, another thread or a signal handler) or timeout_ns nanoseconds have
 * passed (PURE_LOOP_FOREVER: no limit; 0: one pass without sleeping). Callbacks of the context
 * run inside. Returns 0 (stopped or timed out), or PURE_EIO if epoll or the socket failed in a
 * way the loop cannot continue from (errno says why). Network errors on single datagrams
 * (unreachable, refused, too big) are counted in the stats, never returned; the core hears of
 * them (pure_ctx_unreachable, pure_ctx_burst_too_big), which may end a handshake under way. A stop
 * request made while the loop was not running makes the next run return at once. */
PURE_API int pure_loop_run(pure_loop *loop, uint64_t timeout_ns);

/* Asks pure_loop_run to return at its next wakeup (and wakes it). Async-signal-safe and
 * thread-safe: only sets a flag and writes to an eventfd. */
PURE_API void pure_loop_stop(pure_loop *loop);

/* Called by pure_loop_run when a watched descriptor is readable (or at end of file / error). */
typedef void (*pure_loop_fd_cb)(pure_loop *loop, int fd, void *user);

/* Watches fd for readability (level-triggered: the handler is called again on the next wakeup
 * while data remains, so read at least once per call or unwatch the fd). After the handler, the
 * loop flushes what the context wants to send, so a handler may call pure_link_send. Up to 8
 * descriptors. Returns 0, PURE_ELIMIT (8 already), PURE_EINVAL (fd already watched or negative)
 * or PURE_EIO with errno (EPERM: epoll cannot watch regular files or /dev/null; read those
 * directly, they never block). */
PURE_API int pure_loop_watch_fd(pure_loop *loop, int fd, pure_loop_fd_cb cb, void *user);

/* Stops watching fd. Returns 0, or PURE_EINVAL if it was not watched. */
PURE_API int pure_loop_unwatch_fd(pure_loop *loop, int fd);

/* Turns GSO sends (on by default where the kernel has it) or GRO receives off or back on: for
 * tests of the fallbacks (sendmmsg, recvmmsg) and for comparisons. Turning on what the kernel
 * lacks is harmless: the loop detects it and falls back. Returns 0 or PURE_EINVAL. */
PURE_API int pure_loop_set_gso(pure_loop *loop, int on);
PURE_API int pure_loop_set_gro(pure_loop *loop, int on);

/* Counters of a loop. */
typedef struct pure_loop_stats {
    uint64_t sendmsg_calls;      /* sendmsg + sendmmsg system calls that sent something */
    uint64_t packets_sent;       /* datagrams handed to the kernel */
    uint64_t gso_bursts;         /* sendmsg calls carrying more than one datagram (UDP_SEGMENT) */
    uint64_t recvmsg_calls;      /* recvmsg + recvmmsg calls that returned data */
    uint64_t datagrams_received; /* datagrams fed to pure_ctx_read (after splitting GRO buffers) */
    uint64_t gro_segments;       /* datagrams that arrived coalesced, in GRO buffers of 2 or more */
    uint64_t gro_buffers;        /* receives that held 2 or more coalesced datagrams */
    uint64_t send_blocked;       /* sends that met a full socket buffer (EAGAIN: waited) */
    uint64_t send_errors;        /* bursts the kernel refused (unreachable, too big): dropped */
    uint64_t recv_errors;        /* receive errors, ICMP errors read from the error queue, and
                                    truncated datagrams: dropped */
    uint64_t recv_empty;         /* receive calls that found the socket empty (EAGAIN) */
    uint64_t wakeups;            /* returns from epoll */
    uint64_t timer_wakeups;      /* returns from epoll with no event: the core's deadline came */
    uint64_t timeouts;           /* pure_ctx_timeout calls */
    int gso;                     /* 1 while GSO sends are in use */
    int gro;                     /* 1 while GRO receives are in use */
} pure_loop_stats;

/* Copies the loop's counters. */
PURE_API void pure_loop_stats_get(const pure_loop *loop, pure_loop_stats *st);

/* ---- Every core: a group of loops sharing one port ----------------------------------------- */

/* A server uses every core with one context and one loop per thread, all on one UDP port: a
 * group. Each loop has its own socket, bound to the same address with SO_REUSEPORT; socket i of
 * the kernel's reuseport group is loop i's. A classic BPF program (SO_ATTACH_REUSEPORT_CBPF)
 * steers every datagram to the loop whose context owns the link it names: DATA, COOKIE and
 * REJECT by their receiver index, RESP by its second (receiver) index, whose top bits are the
 * owning context's number (pure_settings.index_top). A link so stays on its thread whatever its
 * peer's address does (NAT rebinding). An INIT goes to thread (lowest byte of its sender index)
 * mod n, so one client's links spread and every copy of one INIT lands on the same thread.
 * The kernel steers a GRO or GSO train (several datagrams in one buffer) by its first datagram:
 * a loop hands any datagram of such a train that another loop owns to that loop (a bounded
 * queue per loop and an eventfd: pure_loop_steer_stats), so no context ever reads a packet for
 * another context's link. docs/performance.md, "Every core", has the whole picture.
 *
 * The loops share nothing else: run each with pure_loop_run on its own thread (contexts and
 * their callbacks stay on that thread); pure_loop_stop on any of them from anywhere. */

/* Threads a group may have: the index partition has at most 8 bits (PURE_INDEX_TOP_BITS_MAX). */
#define PURE_LOOP_GROUP_MAX 256

typedef struct pure_loop_group pure_loop_group;

/* Sets s->index_top_bits and s->index_top for the context of thread `thread` (0-based) of a
 * group of `threads`: the fewest bits that number them all, and `thread`. One thread: no
 * partition (0, 0). Returns 0, or PURE_EINVAL (threads 0 or above PURE_LOOP_GROUP_MAX, thread
 * not below threads). */
PURE_API int pure_settings_set_thread(pure_settings *s, unsigned thread, unsigned threads);

/* Divides the budgets a context keeps for all of its links by `threads`, rounding up, so that a
 * group of that many contexts made from these settings holds no more than one context would:
 * max_receive_memory (at least max_message_size), max_links, max_half_open and handshake_load
 * (0, "always demand a cookie", stays 0) each become at least 1. Call it once per settings, after
 * setting the budgets the whole server should have. The per-address limits (half_open_per_addr,
 * inits_per_addr) are left as they are: a client's links spread over the threads, and so does an
 * address's share of each. One thread: nothing changes. Returns 0, or PURE_EINVAL (s NULL,
 * threads 0 or above PURE_LOOP_GROUP_MAX). */
PURE_API int pure_settings_share_budgets(pure_settings *s, unsigned threads);

/* Creates n loops, loop i for ctxs[i] (made with settings passed to
 * pure_settings_set_thread(s, i, n)), each with its own socket bound to `bind` with
 * SO_REUSEPORT, in order; port 0 picks a free port for the first and the others bind to it.
 * Attaches the steering program, then checks the kernel's socket order: it sends each socket a
 * probe datagram from a socket of its own (to the loopback address for a wildcard bind) and
 * requires socket i to receive probe i. Datagrams from elsewhere that arrive during that check
 * (at most a second) are dropped. Returns 0 and *out, or:
 *   PURE_EINVAL  NULL arguments, n 0 or above PURE_LOOP_GROUP_MAX, `bind` not an address;
 *   PURE_ENOMEM  out of memory;
 *   PURE_EIO     socket, bind, the program's attach or the check failed (errno says why;
 *                after the check, EADDRINUSE: a probe reached another of the group's sockets;
 *                ETIMEDOUT: a probe reached none of them in a second, as when another socket,
 *                say another process's, already holds a place in the port's reuseport group). */
PURE_API int pure_loop_group_new(pure_ctx *const *ctxs, unsigned n, const char *bind,
                                 pure_loop_group **out);

/* Loop i (i < n) of the group; NULL for i out of range. Do not pure_loop_free it: the group
 * does. */
PURE_API pure_loop *pure_loop_group_loop(const pure_loop_group *g, unsigned i);

/* Frees every loop of the group (not the contexts). No loop may be running. */
PURE_API void pure_loop_group_free(pure_loop_group *g);

/* Counters of a loop's part in its group (all zero outside a group). */
typedef struct pure_loop_steer_stats {
    uint64_t handed_off;      /* datagrams this loop received that another loop owns: queued
                                 to that loop */
    uint64_t handed_in;       /* datagrams other loops queued to this one, read by its context */
    uint64_t handoff_dropped; /* datagrams this loop could not queue to their owner (its queue
                                 full, or longer than 2048 bytes): dropped, the peer resends */
} pure_loop_steer_stats;

/* Copies the loop's steering counters: size is sizeof(pure_loop_steer_stats) as the caller knows
 * it, so the struct can grow. */
PURE_API void pure_loop_steer_stats_get(const pure_loop *loop, pure_loop_steer_stats *st,
                                        size_t size);

#ifdef __cplusplus
}
#endif

#endif
