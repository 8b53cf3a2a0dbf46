/* SPDX-License-Identifier: MIT */
/* pure.h: the public API of Pure, a secure, reliable message transport over UDP.
 *
 * Pure carries messages (byte strings up to a configured size, framed by a u32 length) over
 * encrypted, authenticated *links*. One side connects (the initiator, which knows the other's
 * static public key); the other side's context accepts the link and hands it to a named
 * *service*. Messages are delivered whole, in order, exactly once; nothing accepted by
 * pure_link_send() is dropped silently.
 *
 * The core is sans-I/O: it never touches a socket, a clock or a thread. The application (or
 * Pure's optional I/O loop, pure_loop_*) feeds it datagrams and the current time and sends the
 * datagrams it produces:
 *
 *     pure_ctx_read(ctx, &from, buf, len, now);        // each datagram received
 *     while ((n = pure_ctx_write(ctx, out, cap, &seg, &to, now)) > 0)
 *         send n bytes to `to`, split into `seg`-byte datagrams (one GSO burst)
 *     sleep until pure_ctx_deadline(ctx), then pure_ctx_timeout(ctx, now)
 *
 * Times are nanoseconds on any monotonic clock the caller chooses (the simulator uses virtual
 * time starting at 0). Calls that take no time use the context's clock if it was given one
 * (pure_ctx_set_clock: pure_loop_new gives pure_now), else the last time it was given.
 *
 * Thread safety: a pure_ctx and all its links belong to one thread at a time. No function may be
 * called on a context (or any of its links) while another thread uses it; callbacks run on the
 * calling thread, inside pure_ctx_read/pure_ctx_write/pure_ctx_timeout, and may call any
 * pure_link_* function on any link of the same context, but must not free the context. Distinct
 * contexts are independent and may be used from different threads. pure_strerror, pure_version,
 * pure_keygen and pure_public_key are thread-safe.
 *
 * Errors: functions return 0 (or a non-negative count) on success and a negative PURE_E* code on
 * failure; pure_strerror() names each code. pure_err_is_fatal() says whether a code means the link
 * is gone. Each function's comment lists every code it returns, in its sentence that begins
 * "Returns" (tests/unit/errlist_test.c checks the lists against the code both ways).
 */
#ifndef PURE_H
#define PURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PURE_BUILDING)
#define PURE_API __attribute__((visibility("default")))
#else
#define PURE_API
#endif

/* ---- Version ------------------------------------------------------------------------------ */

/* The version of this header (semantic versioning; docs/abi.md says what each part promises).
 * CMake reads these lines for the library's version and pure.pc's. */
#define PURE_VERSION_MAJOR 0
#define PURE_VERSION_MINOR 2
#define PURE_VERSION_PATCH 0
#define PURE_VERSION_STRING "0.2.0"
/* One number for comparisons: #if PURE_VERSION_NUMBER >= 0x000200 */
#define PURE_VERSION_NUMBER                                                                        \
    ((PURE_VERSION_MAJOR << 16) | (PURE_VERSION_MINOR << 8) | PURE_VERSION_PATCH)

/* The version of the library linked at run time, "MAJOR.MINOR.PATCH": compare it with
 * PURE_VERSION_STRING to detect a program built against other headers. Never NULL. */
PURE_API const char *pure_version(void);

/* ---- Errors ------------------------------------------------------------------------------- */

#define PURE_OK 0
#define PURE_EINVAL -1  /* an argument is invalid (NULL, out of range, malformed text) */
#define PURE_ENOMEM -2  /* an allocation failed */
#define PURE_EAGAIN -3  /* try later: the backlog is full (wait for on_writable) */
#define PURE_ECRYPTO -4 /* a packet or handshake failed authentication */
#define PURE_EPROTO -5  /* the peer broke the protocol (malformed frame, bad preamble) */
/* PURE_ECLOSED: the link is closing or closed, nothing more can be sent (from pure_ctx_read:
 * the datagram ended its link; in on_closed: the context was freed with the link open). */
#define PURE_ECLOSED -6   /* the link is closing or closed */
#define PURE_ETIMEDOUT -7 /* the peer went silent for the idle timeout (or never answered) */
#define PURE_EREFUSED -8  /* the responder has no such service */
#define PURE_EACCES -9    /* the responder does not allow this initiator's key */
#define PURE_EKEY -10     /* the responder could not authenticate us: wrong peer public key? */
#define PURE_EMSGSIZE -11 /* the message is larger than the configured maximum */
#define PURE_ENOBUFS -12  /* the caller's output buffer is too small */
#define PURE_ELIMIT -13   /* too many links */
#define PURE_ESTATE -14   /* not allowed in the link's current state */
#define PURE_EFLOW -15    /* the peer sent beyond the credit it was given */
#define PURE_EIO -16      /* an operating-system call failed (I/O loop only; see errno) */
#define PURE_ERESET -17   /* the peer closed the link with an error code */
/* PURE_EUNREACH: the network (an ICMP error) or this host (a send that failed) says the peer's
 * address cannot be reached: nothing listens on that port, no route, a firewall refuses, or the
 * socket's address family cannot reach it (pure_ctx_unreachable; on_closed's peer_code then says
 * which, a PURE_UNREACH_* kind). Only a handshake under way ends so, never an open link. */
#define PURE_EUNREACH -18
/* PURE_ENOTPURE: what answers at the peer's address is not a Pure server: it answered the
 * handshake with datagrams that cannot be Pure (another UDP service on that port?). */
#define PURE_ENOTPURE -19
/* the server is draining (pure_ctx_drain, which also refuses new links with it, or
 * pure_ctx_shutdown with PURE_SHUTDOWN_MOVED): connect again through the fleet's address and
 * resend the messages first_unacked .. next_id - 1 (docs/fleet.md) */
#define PURE_EMOVED -20
/* PURE_EVERSION: the peer speaks another version of Pure's protocol (it answered our INIT with a
 * VERSION reply): upgrade one side. on_closed's peer_code is the newest version the peer listed
 * (this library speaks version 1, PURE_PROTOCOL_VERSION in docs/protocol.md). */
#define PURE_EVERSION -21
/* PURE_EFULL: the link holds its queue limit (pure_link_set_queue_limit) in messages not yet
 * acknowledged: its peer is not keeping up. Nothing was queued; the link is as it was. */
#define PURE_EFULL -22
/* PURE_EALREADY: too late for what was asked (pure_link_cancel: the message was acknowledged
 * already, or its cancel is under way). Not fatal. */
#define PURE_EALREADY -23

/* A short English description of an error code ("unknown error" for others). Never NULL. */
PURE_API const char *pure_strerror(int err);

/* 1 if err means the link is gone, 0 if the call failed and changed nothing about the link.
 * Exactly: a function whose call ends a link (pure_ctx_read, pure_ctx_burst_too_big) returns
 * PURE_ECLOSED, and so does pure_link_send on a link that can carry no more (closed, closing, or
 * finished by pure_link_finish or pure_link_close); every other code a function returns means
 * the call failed (a dropped datagram, a bad argument, a full backlog, no memory) and did
 * nothing to the link: correct the call or retry. So the fatal codes are PURE_ECLOSED and the
 * reasons only on_closed carries, which no function returns (PURE_ETIMEDOUT, PURE_EREFUSED,
 * PURE_EACCES, PURE_EKEY, PURE_EFLOW, PURE_ERESET, PURE_EUNREACH, PURE_ENOTPURE, PURE_EMOVED,
 * PURE_EVERSION). PURE_ESTATE is not fatal: the call does not apply now (the link already finishing
 * or closing, a walk running) and did nothing. In on_closed the link is gone whatever info->error
 * is: it may also be PURE_EPROTO, PURE_ECRYPTO, PURE_EMSGSIZE or PURE_ENOMEM, which functions
 * return only for failures that leave a link as it was. */
PURE_API int pure_err_is_fatal(int err);

/* ---- Keys --------------------------------------------------------------------------------- */

#define PURE_KEY_LEN 32

/* Fills priv with a new X25519 private key from the operating system's random source.
 * Returns 0, PURE_EINVAL (NULL), or PURE_ECRYPTO if no randomness was available. */
PURE_API int pure_keygen(uint8_t priv[PURE_KEY_LEN]);

/* Computes the public key of a private key. Returns 0, PURE_EINVAL (NULL) or PURE_ECRYPTO (the
 * crypto library failed). */
PURE_API int pure_public_key(uint8_t pub[PURE_KEY_LEN], const uint8_t priv[PURE_KEY_LEN]);

/* Base64 (standard alphabet, with padding: 44 characters) text of a 32-byte key into out, which
 * must hold 45 bytes. */
PURE_API void pure_key_to_base64(char out[45], const uint8_t key[PURE_KEY_LEN]);

/* Parses a base64 key (surrounding white space allowed). Returns 0, or PURE_EINVAL if the text is
 * not exactly 32 bytes of base64 (or an argument is NULL). */
PURE_API int pure_key_from_base64(uint8_t key[PURE_KEY_LEN], const char *text);

/* ---- Addresses ---------------------------------------------------------------------------- */

/* A peer address as opaque bytes (the I/O layer stores a struct sockaddr_in/in6 here). The core
 * only compares and copies them. */
typedef struct pure_addr {
    uint32_t len;
    uint8_t bytes[28];
} pure_addr;

/* ---- Context, links, callbacks ------------------------------------------------------------ */

typedef struct pure_ctx pure_ctx;
typedef struct pure_link pure_link;

/* Why a link closed, passed to on_closed. */
typedef struct pure_close_info {
    /* 0 for a graceful close by either side, else a PURE_E* code. */
    int error;
    uint64_t peer_code; /* the peer's close code: its application's code (error
                           PURE_ERESET), 0 (error 0), or Pure's own code 1..0xff;
                           with error PURE_EUNREACH, the PURE_UNREACH_* kind reported;
                           with PURE_EVERSION, the newest protocol version the peer
                           speaks */
    const char *reason; /* the peer's reason text (may be ""); with PURE_EUNREACH, what
                           the network said ("port unreachable", ...); valid during the
                           callback */
    /* Messages this side accepted but the peer never acknowledged: ids first_unacked .. next_id-1
     * (pure_link_send returns ids counting from 0). Every message below first_unacked was
     * delivered to the peer's application. When the peer closed (pure_link_close, abort or
     * pure_ctx_shutdown, whatever the error), its CLOSE says how far its application read, so
     * the list is exact: none of those ids was delivered, and error 0 with first_unacked ==
     * next_id means the peer received every message. After a timeout, or when this side ended
     * the link first, the ids are those not acknowledged: some may have arrived. */
    uint64_t first_unacked;
    uint64_t next_id;
} pure_close_info;

/* Callbacks from the core to the application. Any may be NULL. `user` is the link's user pointer
 * (pure_link_set_user; for links a listener accepts, NULL until on_accept sets it). */
typedef struct pure_callbacks {
    /* Responder side: an initiator completed the handshake for `service` with static key
     * `peer_key`. Return 0 to accept the link (and set its user pointer here), or a negative code
     * to refuse it (the initiator sees PURE_EREFUSED). */
    int (*on_accept)(pure_link *link, const char *service, const uint8_t peer_key[PURE_KEY_LEN],
                     void *ctx_user);
    /* Initiator side: the handshake completed; messages queued before it now flow. */
    void (*on_established)(pure_link *link, void *user);
    /* A whole message arrived. `data` is valid only until the callback returns. */
    void (*on_message)(pure_link *link, void *user, const uint8_t *data, size_t len);
    /* The backlog has room again after pure_link_send returned PURE_EAGAIN. */
    void (*on_writable)(pure_link *link, void *user);
    /* The peer ended its stream (pure_link_finish): every message it sent has been delivered. */
    void (*on_peer_finished)(pure_link *link, void *user);
    /* The link is closed; after this returns the link is freed and must not be used. It runs
     * exactly once for every link the application knows of (an initiator's link once
     * pure_connect returned 0, a responder's once on_accept accepted it), whatever ends it:
     * either side's close or abort, a timeout, a protocol error, pure_ctx_free. No other
     * callback of the link runs after it, from any path. */
    void (*on_closed)(pure_link *link, void *user, const pure_close_info *info);
    /* ---- added in 0.2 (settings.version 2; new callbacks only ever go at the end) ---- */
    /* The peer acknowledged messages: every message with an id up to acked_through_id (the ids
     * pure_link_send returned) has reached the peer's Pure, which will deliver it even if this
     * side aborts now. Runs once per ACK that completes one or more messages, so ids may jump.
     * Everything accepted so far is acknowledged when acked_through_id + 1 equals the number of
     * messages sent (pure_link_stats.messages_sent), i.e. when pure_link_backlog(link) == 0.
     * May call any pure_link_* function. Not called after on_closed. */
    void (*on_acked)(pure_link *link, void *user, uint64_t acked_through_id);
    /* ---- settings.version 6: channels (pure_link_send_on) ---- */
    /* A whole message arrived on channel 1..max_channels (channel 0's messages keep arriving
     * through on_message). Each channel's messages arrive in the order its sender sent them,
     * each once, whatever is lost or held up on another channel. `data` is valid only until
     * the callback returns. May call any pure_link_* function, as on_message may. */
    void (*on_channel_message)(pure_link *link, void *user, uint32_t channel, const uint8_t *data,
                               size_t len);
    /* on_acked for channel 1..max_channels: every message with an id up to acked_through_id
     * on that channel (the ids pure_link_send_on returned for it) has reached the peer's Pure.
     * Runs once per ACK and channel that completes messages, so ids may jump. May call any
     * pure_link_* function. Not called after on_closed. */
    void (*on_channel_acked)(pure_link *link, void *user, uint32_t channel,
                             uint64_t acked_through_id);
    /* An unreliable datagram arrived (pure_link_send_datagram): whole, at most once, in no
     * particular order with anything else. `data` is valid only until the callback returns.
     * May call any pure_link_* function. */
    void (*on_datagram)(pure_link *link, void *user, const uint8_t *data, size_t len);
    /* ---- settings.version 7: cancels (pure_link_cancel, pure_link_send_on_deadline) ---- */
    /* Message `id` of channel 1..max_channels was cancelled, and no part of it was or will be
     * delivered. With PURE_CANCELLED_SENT in flags it is a message this side sent (its cancel,
     * or its deadline with PURE_CANCELLED_DEADLINE too, won the race against its delivery): this
     * comes before the on_channel_acked whose acked_through_id covers the id. Without it the
     * peer cancelled its message `id` on that channel (the ids of its pure_link_send_on), and
     * what had arrived of it was dropped. May call any pure_link_* function. Not called after
     * on_closed. */
    void (*on_channel_cancelled)(pure_link *link, void *user, uint32_t channel, uint64_t id,
                                 uint32_t flags);
} pure_callbacks;

/* Flags of on_channel_cancelled. */
#define PURE_CANCELLED_SENT 0x1     /* a message this side sent (else one the peer sent) */
#define PURE_CANCELLED_DEADLINE 0x2 /* its deadline passed (pure_link_send_on_deadline) */

/* Congestion controllers (pure_settings.congestion). */
enum pure_cc_algo {
    PURE_CC_NEWRENO = 1,
    PURE_CC_CUBIC = 2
};

/* The most pure_settings.idle_timeout, keepalive, handshake_timeout and rekey_after_time may be
 * (365 days, in ns), and max_ack_delay (16.384 s, QUIC's bound: 2^14 ms). Larger values, as
 * UINT64_MAX for "never", are refused: deadlines are a time plus these. */
#define PURE_TIMEOUT_MAX (365ull * 86400 * 1000000000)
#define PURE_MAX_ACK_DELAY_MAX (16384ull * 1000000)

/* Bounds of pure_settings.rekey_after_packets: packets one transmit key may seal. The least (256
 * since 0.2.0; 16 before) leaves a key's last quarter, 64 packets, for the exchange's round trip:
 * smaller keys ran out under load (docs/crypto.md). */
#define PURE_REKEY_MAX_PACKETS (1ull << 23)
#define PURE_REKEY_MIN_PACKETS 256

/* 2 since 0.2 (pure_callbacks.on_acked); 3 added the limits against hostile peers; 4 the link
 * index partition (index_top_bits); 5 the fleet's server id; 6 channels (max_channels,
 * pure_callbacks.on_channel_message); 7 cancels (pure_callbacks.on_channel_cancelled, no new
 * field). pure_ctx_new still takes 1, and then never reads the fields and callbacks that version
 * did not have. */
#define PURE_SETTINGS_VERSION 7

/* Settings of a context. Initialise with pure_settings_default, then change fields. Unknown future
 * fields keep their defaults: `version` lets the library grow this struct without breaking callers.
 */
typedef struct pure_settings {
    uint32_t version;                  /* PURE_SETTINGS_VERSION */
    uint8_t private_key[PURE_KEY_LEN]; /* this endpoint's static key (required) */
    int allow_any;                /* responder: accept any initiator key (default 0: allow list) */
    uint32_t max_udp_payload;     /* largest datagram sent, bytes (default 1472, min 1200): links
                                     start at 1200 and search up to it (1200: no search) */
    uint32_t max_message_size;    /* largest message, bytes (default 16 MiB) */
    uint64_t send_backlog;        /* bytes of unacknowledged messages per link (default 8 MiB) */
    uint64_t send_queue;          /* bytes accepted but not yet sent before
                                     pure_link_send says PURE_EAGAIN (default 256 KiB, so
                                     messages are sealed while still in cache; 0: only
                                     send_backlog limits) */
    uint64_t recv_window;         /* initial receive credit per link and channel (default 1 MiB;
                                     announced to the peer in the handshake, so the two sides may
                                     differ; a peer built before 0.2's parameters assumes its own) */
    uint64_t recv_window_max;     /* receive credit may grow to this (default 16 MiB) */
    uint64_t idle_timeout;        /* ns an ack-eliciting packet may go unanswered before
                                     the peer is taken for dead (default 30 s; at least three
                                     probe timeouts, as RFC 9000 section 10.1). Besides
                                     data in flight, a link probes its peer with a PING
                                     after idle_timeout / 2 of silence while it has reason
                                     to expect it to speak: for idle_timeout after this
                                     side sent a message, while the peer's message is
                                     incomplete, and while a graceful close waits. A dead
                                     peer is then found within 1.5 x idle_timeout. A link
                                     with nothing to wait for has no timer and is not
                                     closed for silence unless keepalive is set. At most
                                     PURE_TIMEOUT_MAX, as are the next two. */
    uint64_t keepalive;           /* ns of quiet after which this side sends a PING on an idle
                                     link (default 0: none; set it on one side only) */
    uint64_t handshake_timeout;   /* ns before an unanswered handshake fails (default 10 s) */
    uint64_t max_ack_delay;       /* ns a receiver may hold an ACK (default 5 ms; at most
                                     PURE_MAX_ACK_DELAY_MAX) */
    uint32_t ack_every;           /* ACK after this many ack-eliciting packets (default 24), or
                                     once the first of them has waited 1 ms, whichever comes
                                     first */
    int congestion;               /* PURE_CC_CUBIC (default) or PURE_CC_NEWRENO */
    uint32_t max_links;           /* links per context (default 1,000,000) */
    uint32_t handshake_load;      /* a cookie is demanded while more handshakes than this are
                                     half-open (or than half of max_half_open, if fewer), or
                                     more INITs than this in the last second cost a DH and made
                                     no link (default 1024; 0 = always demand one) */
    uint64_t rekey_after_packets; /* the most packets one transmit key seals (default and
                                     at most PURE_REKEY_MAX_PACKETS = 2^23, AES-128-GCM's
                                     confidentiality limit, RFC 9001 section 6.6; at least
                                     PURE_REKEY_MIN_PACKETS = 256; a version 1 or 2 caller's
                                     larger value is taken as 2^23). New keys are sought
                                     from half of them; if the peer has not completed the
                                     rekey when the key is down to its last packet, the
                                     link closes with PURE_ECRYPTO, that packet its CLOSE */
    uint64_t rekey_after_time;    /* new keys after this many ns, while data is sent
                                     (default 120 s; at most PURE_TIMEOUT_MAX) */
    const pure_callbacks *callbacks; /* may be NULL */
    void *user;                      /* passed to on_accept */
    /* Injected allocator (default malloc/free). */
    void *(*alloc)(void *alloc_user, size_t size);
    void (*free)(void *alloc_user, void *p, size_t size);
    void *alloc_user;
    /* Randomness source (default: the crypto backend's, i.e. the OS). Tests inject a seeded PRNG so
     * runs repeat exactly. Returns 0 or a negative code. */
    int (*random)(void *random_user, uint8_t *buf, size_t len);
    void *random_user;
    /* Crypto backend (test hook): NULL = the default backend (kernel randomness; Nettle/OpenSSL
     * for X25519, SHA-256, HMAC; per key the fastest AES-GCM: VAES code, GnuTLS or OpenSSL).
     * Tests and fuzzers may pass the null backend. */
    const void *crypto;
    /* Optional with an injected allocator: grows a block keeping its first old_size bytes, or
     * returns NULL (the block stays valid). Default: realloc when alloc/free are the defaults;
     * with an injected allocator and no realloc, buffers grow by alloc, copy and free. A send
     * ring that doubles in place (glibc moves large blocks with mremap) touches no fresh memory
     * for the bytes it already holds: page faults cost ~14 us each on some VMs. */
    void *(*realloc)(void *alloc_user, void *p, size_t old_size, size_t new_size);

    /* ---- version 3: limits against hostile peers (docs/protocol.md, "Threat model") ---- */
    uint64_t max_receive_memory; /* bytes all of a context's links may hold in partly
                                    received messages and out-of-order data at once
                                    (default 256 MiB; at least max_message_size). At it, a
                                    link that needs more memory gets no new credit and
                                    what it cannot hold is dropped for the peer to send
                                    again, until memory is freed; one link at a time may
                                    finish its message past it, so at most this +
                                    max_message_size + 4 KiB per link is held
                                    (docs/protocol.md, "Receive memory"); with
                                    channels, one channel at a time may too, up to
                                    3 x max_message_size more ("Channels"). */
    uint64_t max_failed_opens;   /* packets per receive key that fail authentication before
                                    the link closes with PURE_ECRYPTO, telling the peer
                                    (default 2^36, under AES-GCM's integrity limit of 2^52
                                    forgeries; at least 1). Counted in 32 bits per key: a
                                    value above 2^32 - 1 acts as 2^32 - 1. Each new key
                                    (every rekey) starts from zero; a packet naming a key
                                    the link does not hold is dropped without counting */
    int respond_to_unknown;      /* responder: answer an INIT that does not authenticate or
                                    names a key not allowed (default 1; 0 = silent: such
                                    INITs are dropped and counted, no reply) */
    uint32_t max_half_open;      /* responder: half-open handshakes per context (default
                                    16384); INITs over it are dropped and counted */
    uint32_t half_open_per_addr; /* responder under load: half-open handshakes per source IP
                                    address (IPv6: per /64) whose INIT proved that address
                                    with a cookie; a spoofed INIT is never charged to the
                                    address it names (default 64) */
    uint32_t inits_per_addr;     /* responder under load: INITs per second each source IP
                                    (IPv6: /64) may make the responder work on, counted only
                                    for INITs that proved the address, burst the same
                                    (default 32) */
    /* Wall clock, ns since 1970 (the INIT's timestamp, against replay). Default: the system's
     * CLOCK_REALTIME. Tests inject one so runs repeat exactly. */
    uint64_t (*realtime)(void *realtime_user);
    void *realtime_user;

    /* ---- version 4: one context per thread (pure_loop.h, "Every core") ---- */
    uint32_t index_top_bits; /* the top index_top_bits bits of every link index this
                                context draws equal index_top (default 0: indices wholly
                                random; at most PURE_INDEX_TOP_BITS_MAX). Contexts that
                                share one port each take a different index_top, so a
                                packet's receiver index names the context that owns the
                                link; the remaining bits stay random. */
    uint32_t index_top;      /* below 2^index_top_bits */

    /* ---- version 5: a fleet of servers behind one address (docs/fleet.md) ---- */
    uint32_t server_id_bits; /* the server_id_bits bits just below the index_top_bits of
                                every link index this context draws equal server_id
                                (default 0: none; at most PURE_SERVER_ID_BITS_MAX, and
                                index_top_bits + server_id_bits at most 16, so at least
                                16 bits stay random). A director routes a packet to the
                                server its receiver index names; an observer learns the
                                server too, which the index (constant across rebinding)
                                already links. */
    uint32_t server_id;      /* below 2^server_id_bits */

    /* ---- version 6: channels (pure_link_send_on; docs/protocol.md, "Channels") ---- */
    uint32_t max_channels;      /* channels 1..max_channels a link may use besides channel 0, each
                                   way (default 16, at most PURE_MAX_CHANNELS; 0: none). A peer
                                   that sends on a channel above it is closed with PURE_EPROTO.
                                   A channel costs nothing until first used; then ~400 bytes
                                   for the life of the link, plus its buffers while it has
                                   data. Its receive buffers count in max_receive_memory; its
                                   send buffer has its own send_backlog and send_queue. */
    uint32_t max_datagram_size; /* largest unreliable datagram this side sends or takes
                                   (pure_link_send_datagram), bytes (default 65535:
                                   whatever one packet holds; 0: none). A peer that sends
                                   a larger one, or any while it is 0, is closed with
                                   PURE_EPROTO. */
} pure_settings;

/* The most channels a link may carry besides channel 0 (pure_settings.max_channels). */
#define PURE_MAX_CHANNELS 255
/* Urgency levels of pure_link_set_priority: 0 (most urgent) .. 7; every channel starts at 3. */
#define PURE_URGENCY_MAX 7

/* The most bits of a link index pure_settings.index_top_bits may fix (256 partitions). */
#define PURE_INDEX_TOP_BITS_MAX 8
/* The most bits pure_settings.server_id_bits may take (256 servers). */
#define PURE_SERVER_ID_BITS_MAX 8

/* Fills s with the defaults above (private_key zero: the caller must set it). */
PURE_API void pure_settings_default(pure_settings *s);

/* Creates a context. Copies what it needs from s (the callbacks table must outlive the context).
 * Returns 0, PURE_EINVAL (NULL, an invalid private key, a wrong version, a limit out of range),
 * PURE_ENOMEM, or PURE_ECRYPTO (no randomness: the random source failed). */
PURE_API int pure_ctx_new(const pure_settings *s, pure_ctx **out);

/* Frees a context and all its links at once, wiping all keys. No packet is sent; on_closed runs
 * (error PURE_ECLOSED, with the messages never acknowledged) for every link the application
 * knows of that had not closed, so the application can free what it keeps per link. Must not be
 * called from a callback.
 *
 * Since the core sends nothing by itself, a program that wants its peers told before it frees
 * the context (rather than leaving them to find out at their idle_timeout) does, in order:
 * pure_ctx_shutdown(ctx, PURE_SHUTDOWN_ALL, now) (or only pure_link_abort on some links),
 * then pure_ctx_write until it returns 0, sending each burst, then pure_ctx_free. The CLOSE of
 * a pure_link_abort, too, only leaves with a later pure_ctx_write. Pure's I/O loop does the
 * writing in pure_loop_free (pure_loop.h). */
PURE_API void pure_ctx_free(pure_ctx *ctx);

/* What pure_ctx_shutdown ends (flags, or-ed). */
#define PURE_SHUTDOWN_CLOSES                                                                       \
    0x1u /* links whose graceful close (pure_link_close) still waits                               \
            for the peer's acknowledgements: they close at once, with                              \
            the code and reason given to pure_link_close */
#define PURE_SHUTDOWN_OPEN                                                                         \
    0x2u /* every other link not yet closing: open links close with                                \
            code 0 and reason "shutdown"; handshakes are dropped */
#define PURE_SHUTDOWN_ALL (PURE_SHUTDOWN_CLOSES | PURE_SHUTDOWN_OPEN)
#define PURE_SHUTDOWN_MOVED                                                                        \
    0x4u /* with PURE_SHUTDOWN_OPEN: a server of a fleet draining; its                             \
            open links close with Pure's "moved" code, which the peer                              \
            sees as PURE_EMOVED (go elsewhere) with the exact ids it                               \
            must resend */

/* Ends the links `flags` names at once, for a program about to stop: each open one goes to
 * closing with its CLOSE queued for the next pure_ctx_write (which the caller must then call
 * until it returns 0, sending each burst), and on_closed runs for each inside this call with
 * error PURE_ECLOSED and the ids its peer never acknowledged. The peer hears a close (its
 * on_closed: error 0, or PURE_ERESET for an application's code, with an exact report of what
 * arrived; with PURE_SHUTDOWN_MOVED, PURE_EMOVED). Links already closing are left as they are
 * (their CLOSE is queued already). Returns 0, PURE_EINVAL (NULL, unknown flags) or PURE_ESTATE
 * (called from a callback of this context, pure_ctx_links' visitor included, or inside
 * pure_ctx_free; nothing was done). */
PURE_API int pure_ctx_shutdown(pure_ctx *ctx, unsigned flags, uint64_t now);

/* Drains a server of a fleet (docs/fleet.md, "Drain") while it keeps running: from now on every
 * INIT that would have made a link is refused with the RESP status "moved" (the initiator's
 * on_closed: PURE_EMOVED, at once rather than at its handshake timeout), and every open link this
 * context accepted closes with Pure's close code 5, "moved" (the peer: PURE_EMOVED with the exact
 * ids to resend elsewhere; here on_closed runs inside this call with PURE_ECLOSED, as for
 * pure_ctx_shutdown). A handshake under way finishes and its link then closes the same way,
 * unseen by on_accept; links whose graceful close still waits go on waiting; links this context
 * opened itself are left alone. The CLOSE packets leave with the next pure_ctx_write, as for
 * pure_ctx_shutdown. There is no way back: a drained server is meant to be stopped. Returns 0,
 * PURE_EINVAL (NULL) or PURE_ESTATE (called from a callback of this context or inside
 * pure_ctx_free; nothing was done). */
PURE_API int pure_ctx_drain(pure_ctx *ctx, uint64_t now);

/* Registers a service name (1..63 bytes) the context accepts links for. Returns 0, PURE_EINVAL or
 * PURE_ENOMEM. Links naming an unregistered service are refused (the initiator sees
 * PURE_EREFUSED). */
PURE_API int pure_ctx_add_service(pure_ctx *ctx, const char *name);

/* Adds an initiator public key to the allow list (used unless allow_any). Returns 0, PURE_EINVAL
 * (NULL) or PURE_ENOMEM. */
PURE_API int pure_ctx_allow(pure_ctx *ctx, const uint8_t pub[PURE_KEY_LEN]);

/* This context's static public key. */
PURE_API const uint8_t *pure_ctx_public_key(const pure_ctx *ctx);

/* Feeds one received datagram. The data is decrypted in place (the buffer is modified).
 * Returns 0 when the datagram was used; PURE_ECLOSED when it ended its link; or a code for a
 * datagram dropped with its link as it was: PURE_EPROTO malformed, PURE_ECRYPTO failed
 * authentication, PURE_EINVAL (NULL arguments, or an unknown link or stale packet), PURE_ENOMEM
 * (no memory for the link's buffers: the peer sends it again; running out of memory while data
 * flows closes no link: what could not be held is not acknowledged and comes again, and bytes
 * already acknowledged are fed again a few milliseconds later). After PURE_ECLOSED on_closed has
 * run and says why: the peer's CLOSE or refusal, or what the datagram held broke the protocol
 * (its error then PURE_EPROTO, PURE_EFLOW for data past the credit given, PURE_EMSGSIZE for a
 * message over max_message_size), or a forgery reached max_failed_opens
 * (PURE_ECRYPTO). Drops other than PURE_ENOMEM and NULL arguments are counted in
 * pure_ctx_stats. Dropping is normal for junk from the network; the caller need not act on any
 * of these codes. */
PURE_API int pure_ctx_read(pure_ctx *ctx, const pure_addr *from, uint8_t *data, size_t len,
                           uint64_t now);

/* pure_ctx_read for an I/O layer that knows the datagram's ECN bits (RFC 3168: the two low bits
 * of the IP TOS / IPv6 traffic class, as IP_RECVTOS and IPV6_RECVTCLASS report them; 3 is CE,
 * Congestion Experienced). A CE-marked packet of a link is counted and reported to the peer,
 * which slows down as for a loss taken as congestion, but loses nothing; an ECN-marking AQM
 * (CoDel with ECN, as fq_codel does by default) then keeps the queue short without drops. For
 * marks to appear, the sender's packets must carry ECT(0) (2): the I/O layer sets IP_TOS and
 * IPV6_TCLASS to 2 on its sockets, as pure_loop does. pure_ctx_read is this with ecn 0. Returns
 * what pure_ctx_read returns. */
PURE_API int pure_ctx_read_ecn(pure_ctx *ctx, const pure_addr *from, uint8_t *data, size_t len,
                               unsigned ecn, uint64_t now);

/* pure_ctx_read_ecn for an I/O layer that knows when the datagram reached the host (`arrived`,
 * on the same clock as `now`: the kernel's receive timestamp, SO_TIMESTAMPNS, mapped onto it, as
 * pure_loop does). RTT samples and the ACK delays this side reports are measured from the
 * arrival, so time a datagram waited in the socket queue of a busy loop counts as the receiving
 * host's delay, not the path's: a server saturated by a thousand links then still sees its
 * clients' network round trip, and sizes its pacing bursts by it rather than shrinking them to
 * two packets while its own queue grows. An `arrived` later than `now` is taken as `now`;
 * pure_ctx_read_ecn is this with arrived == now. Returns what pure_ctx_read returns. */
PURE_API int pure_ctx_read_at(pure_ctx *ctx, const pure_addr *from, uint8_t *data, size_t len,
                              unsigned ecn, uint64_t arrived, uint64_t now);

/* After a batch of reads, tells the core whether the I/O layer's socket still holds datagrams
 * it has not read (more != 0: it stopped at its read budget) or was drained (0). While it holds
 * some, a probe timeout due after the arrival of the newest datagram read (pure_ctx_read_at's
 * `arrived`) waits: the ACK it waits for may be among the unread datagrams, and a loop that
 * falls behind its socket would otherwise probe every link at once (10,000 links did, at a
 * 30 ms stall, and the probes deepened the queue). Time a backlog holds a probe back is what
 * the socket queue adds to every datagram. An I/O layer that never calls this keeps RFC 9002's
 * timers as they are. pure_loop calls it after every wakeup's reads. */
PURE_API void pure_ctx_read_backlog(pure_ctx *ctx, int more);

/* Writes the next burst of datagrams for one destination into buf (cap bytes; at least
 * max_udp_payload). Every datagram in the burst is *segment bytes long except possibly the last,
 * so the caller can send the burst with one UDP_SEGMENT sendmsg, or split it. Returns the burst's
 * length, 0 when nothing is to be sent now, PURE_EINVAL (NULL), or PURE_ENOBUFS if cap is too
 * small (under max_udp_payload). *to receives the
 * destination. Call until it returns 0 after every read batch, send, and timeout. */
PURE_API int64_t pure_ctx_write(pure_ctx *ctx, uint8_t *buf, size_t cap, size_t *segment,
                                pure_addr *to, uint64_t now);

/* Tells the core that the burst pure_ctx_write returned last could not be sent because its
 * datagrams are larger than the path allows (sendmsg failed with EMSGSIZE). If the burst was a
 * path MTU probe (below), the probe counts as lost and nothing else changes. Otherwise the link
 * behind it sends smaller datagrams from then on (1452, 1400, 1280, then 1200 bytes) and sends
 * that burst's data again at once; the loss is not taken as congestion. Returns 0; PURE_EINVAL
 * if no open link sent the last burst (or ctx is NULL); PURE_ECLOSED if the link already used
 * 1200-byte datagrams: the path cannot carry Pure, and the link is closed. Its on_closed has
 * then run, with error PURE_EMSGSIZE.
 *
 * Path MTU: a link's datagrams start at 1200 bytes of UDP payload, which every path carries.
 * Once it sends in bulk it probes larger sizes up to max_udp_payload (padded PINGs, whose loss
 * is not congestion) and uses the largest acknowledged, within a round trip on common paths; it
 * falls back to 1200 when full-size packets vanish while smaller ones arrive (a black hole:
 * Packet Too Big filtered) and searches again after 10 minutes (RFC 8899, docs/protocol.md).
 * The I/O layer must set don't-fragment on its sockets (Linux: IP_MTU_DISCOVER and
 * IPV6_MTU_DISCOVER = *_PMTUDISC_PROBE, as pure_loop does), or the kernel fragments what the
 * probes should find too large. */
PURE_API int pure_ctx_burst_too_big(pure_ctx *ctx, uint64_t now);

/* Tells the core that a router says the path to `addr` carries at most `size` bytes of UDP
 * payload: an ICMP "fragmentation needed" or ICMPv6 Packet Too Big read from the socket's error
 * queue (Linux: IP_RECVERR with ee_errno EMSGSIZE; size is ee_info, the MTU, less the IP and
 * UDP headers: 28 for IPv4, 48 for IPv6), with `quoted` the start of the datagram it quotes. A
 * hint only (RFC 8899 section 4.6), as an ICMP error is easy to forge: it is taken only for an
 * open link sending to addr whose own packet the quote holds (its header: the peer's index and
 * a packet number the link used), only to lower the size, never below 1200; the link then stops
 * probing above it, and if its datagrams are larger it goes back to 1200 bytes at once and
 * probes `size`, using it once a probe of it is acknowledged. At most 100 hints a second are
 * looked at. Returns 1 if a link took the hint, 0 if none did (or it was ignored), PURE_EINVAL
 * (ctx or addr NULL). */
PURE_API int pure_ctx_packet_too_big(pure_ctx *ctx, const pure_addr *addr, uint32_t size,
                                     const uint8_t *quoted, size_t quoted_len, uint64_t now);

/* Kinds of pure_ctx_unreachable reports. The first three come from the network (an ICMP or ICMPv6
 * destination unreachable error read from the socket's error queue), the last two from this
 * host (a send to the address failed). */
enum pure_unreach_kind {
    PURE_UNREACH_PORT = 1,  /* port unreachable: the host is there, nothing listens on the port */
    PURE_UNREACH_HOST = 2,  /* host or network unreachable, no route (from a router or the host) */
    PURE_UNREACH_ADMIN = 3, /* administratively prohibited: a firewall refuses */
    PURE_UNREACH_LOCAL = 4, /* this host has no route there (sendmsg: ENETUNREACH, EHOSTUNREACH) */
    PURE_UNREACH_FAMILY = 5 /* the socket's address family cannot reach the address (an IPv6
                               address from an IPv4 socket: EAFNOSUPPORT) */
};

/* After a hint that a handshake failed (a REJECT for our INIT, a VERSION reply saying the peer
 * speaks other protocol versions, a datagram from the peer's address that cannot be Pure, an ICMP
 * error that quotes too little of the INIT to prove it is real), the INIT goes again at once and
 * every quarter of the grace, and the handshake ends with that hint's error when the grace has
 * passed with no RESP: this long, or twice the time from the first INIT to the hint if that is
 * longer. A forged hint cannot end a handshake the real responder answers
 * within the grace. ns. */
#define PURE_HS_HINT_GRACE_MIN 200000000ull

/* Tells the core that `addr` cannot be reached, as the I/O layer learnt it: an ICMP error the
 * kernel queued for the socket (Linux: IP_RECVERR / IPV6_RECVERR, read with MSG_ERRQUEUE, whose
 * msg_name is the original destination; kinds PORT, HOST, ADMIN), with `quoted` the start of the
 * datagram the error quotes (the payload MSG_ERRQUEUE returns; NULL, 0 if none), or a send to
 * `addr` that this host refused (kinds LOCAL, FAMILY; quoted unused). Only initiator handshakes
 * under way to addr (INIT sent, no RESP yet) are affected: open links and responder links never
 * are, since an ICMP error is easy to forge for anyone who can guess the addresses and ports
 * (docs/protocol.md, "Threat model"). A local kind, or an ICMP error whose quote holds the INIT's
 * first 37 bytes (type, our random index and ephemeral key: only someone who saw the INIT knows
 * them), ends the handshake at once; a quote that differs from the INIT is ignored; a shorter
 * quote (routers may quote only the UDP header) counts as a hint (PURE_HS_HINT_GRACE_MIN). The
 * link's on_closed gets PURE_EUNREACH, peer_code the kind and reason a text. Returns the number
 * of handshakes it ended or warned (0: the report concerned none), or PURE_EINVAL (ctx or addr
 * NULL, an unknown kind). */
PURE_API int pure_ctx_unreachable(pure_ctx *ctx, const pure_addr *addr, int kind,
                                  const uint8_t *quoted, size_t quoted_len, uint64_t now);

/* The time at which pure_ctx_timeout should next be called (UINT64_MAX: no timer armed). */
PURE_API uint64_t pure_ctx_deadline(const pure_ctx *ctx);

/* Runs every timer due at `now` (retransmission, ACK delay, idle timeout, keepalive, pacing,
 * handshake retries). Callbacks may fire. Then call pure_ctx_write. */
PURE_API void pure_ctx_timeout(pure_ctx *ctx, uint64_t now);

/* Counters of a context. */
typedef struct pure_ctx_stats {
    uint64_t links;                /* links alive (any state) */
    uint64_t handshakes_started;   /* as initiator */
    uint64_t handshakes_accepted;  /* as responder, completed */
    uint64_t handshakes_refused;   /* refused: unknown service or key not allowed */
    uint64_t cookies_sent;         /* cookie replies sent under load */
    uint64_t dropped_malformed;    /* datagrams too short or of an unknown type */
    uint64_t dropped_auth;         /* datagrams that failed authentication */
    uint64_t dropped_replay;       /* packets seen before or too old */
    uint64_t dropped_unknown_link; /* no link with that index */
    uint64_t timers_fired;         /* timer callbacks run (idle links should fire none) */
    uint64_t datagrams_in, datagrams_out;
    uint64_t bursts_out; /* pure_ctx_write results (a burst holds one or more) */
} pure_ctx_stats;

/* Copies the context's counters. */
PURE_API void pure_ctx_stats_get(const pure_ctx *ctx, pure_ctx_stats *st);

/* What hostile traffic cost a context, and what its defences dropped (docs/protocol.md, "Threat
 * model"). A struct apart from pure_ctx_stats so it can grow: pure_ctx_guard_stats_get writes
 * only the first `size` bytes (pass sizeof, from the header the program was built with). */
typedef struct pure_guard_stats {
    uint64_t dh_ops;                 /* X25519 operations the handshakes did, both roles (a
                                        message that fails half-way counts whole; the static-
                                        static `ss` of a peer key seen lately is cached, and
                                        not counted) */
    uint64_t inits_replayed;         /* INITs dropped as replays (seen before, or a timestamp not
                                        above the greatest seen from that key) */
    uint64_t inits_throttled;        /* INITs dropped by the per-address token bucket */
    uint64_t inits_half_open_cap;    /* INITs dropped: too many half-open links (address or
                                        context) */
    uint64_t inits_bad_mac;          /* INITs whose outer MAC failed: no DH was done */
    uint64_t inits_silent;           /* INITs left unanswered (respond_to_unknown = 0) */
    uint64_t inits_duplicate;        /* resent INITs answered from the link they made */
    uint64_t cookie_replies_bad;     /* COOKIE replies dropped: forged, wrong address or late */
    uint64_t rejects_bad;            /* REJECTs dropped: forged or wrong address */
    uint64_t failed_opens;           /* link packets that failed authentication under one of
                                        their link's keys (max_failed_opens counts these) */
    uint64_t links_integrity_closed; /* links closed at max_failed_opens */
    uint64_t rx_memory;              /* bytes held now for partly received messages and
                                        out-of-order data */
    uint64_t rx_memory_peak;         /* the most rx_memory ever was */
    uint64_t rx_memory_stalls;       /* times a link was held back (no new credit, buffers not
                                        grown) because of max_receive_memory */
    uint64_t in_flight;              /* bytes all links had in flight at the end of the last
                                        call on the context */
    uint64_t in_flight_peak;         /* the most in_flight was at the end of a call */
    uint64_t in_flight_waits;        /* times a link with data to send waited for the context's
                                        max_in_flight (pure_ctx_set_max_in_flight): in the
                                        queue, or held above its share */
    /* ---- since the version reply (0.2) ---- */
    uint64_t inits_other_version; /* INITs of a protocol version this context does not speak
                                     (answered with a VERSION reply, unless silent, under
                                     load or over the REJECT rate) */
    uint64_t versions_bad;        /* VERSION replies dropped: forged, from the wrong address,
                                     or listing our own version */
    /* ---- since fair shares of the flight limit and read backlogs (0.2) ---- */
    uint64_t in_flight_wakes; /* links woken from the queue for the context's max_in_flight to
                                 take a turn (a link within its share needs none) */
    uint64_t ptos_deferred;   /* probe timeouts held back while the I/O layer's socket held
                                 unread datagrams (pure_ctx_read_backlog) */
} pure_guard_stats;

/* Copies up to `size` bytes of the context's guard counters into st. */
PURE_API void pure_ctx_guard_stats_get(const pure_ctx *ctx, pure_guard_stats *st, size_t size);

/* Limits the bytes all the context's links together may have in flight (sent, neither
 * acknowledged nor declared lost) to `bytes`; 0 (the default) sets no limit. Each link's own
 * congestion window still applies. When the limit is reached, each link may still keep its fair
 * share in flight (the limit divided among the links that have packets in flight or wait for
 * room), so a link whose reply just arrived sends its next one at once; a link above its share
 * waits for its own ACKs, and links with nothing in flight take turns, oldest first. New data
 * stays in the send rings meanwhile. Probes and ACKs are never held back.
 *
 * Why: the links share one socket, and so do the peer's. Many links each within its own window
 * can together put more in flight than the receiving socket's buffer holds; the kernel then
 * drops whole flights of many links at once and each waits a probe timeout. pure_loop_new sets
 * this to its socket's receive buffer; call it after pure_loop_new to choose otherwise. Lowering
 * it takes nothing back: links wait until the flight falls below it. Not thread-safe, like every
 * call on a context. */
PURE_API void pure_ctx_set_max_in_flight(pure_ctx *ctx, uint64_t bytes);

/* Gives the context a clock: clock(user) returns the time on the monotonic clock, in ns, that
 * the program passes as `now` to pure_ctx_* calls. The calls that take no time and start
 * something timed (pure_link_close, pure_link_abort, pure_link_resume_recv, and a send whose
 * queue is watched: pure_link_set_queue_limit) then read it. Without a clock (the default) they
 * use the last time the context was given, which may be long past: after a quiet spell with
 * nothing due (an idle link has no timer) the program gives the context no time, and a close
 * asked for then counted its give-up (idle_timeout) from that old time: it ended at once with
 * PURE_ETIMEDOUT while its messages were still going out. pure_loop_new gives its context
 * pure_now; a program that drives the context itself sets its own clock, or calls
 * pure_ctx_timeout(ctx, now) before such calls. NULL removes it. pure_link_send does not read
 * it (it is the per-message path). */
PURE_API void pure_ctx_set_clock(pure_ctx *ctx, uint64_t (*clock)(void *user), void *user);

/* Calls visit(link, user, arg) for each link of the context the application knows of and
 * on_closed has not yet reported: initiator links from pure_connect (also while their handshake
 * runs) and responder links on_accept accepted. The order is unspecified. visit returns 0 to go
 * on, non-zero to stop. visit may call any pure_link_* function on any link, including
 * pure_link_close and pure_link_abort (a link it ends is not visited again, and on_closed
 * runs as usual), but not pure_connect (it returns PURE_ESTATE while the walk runs) nor the
 * pure_ctx_* functions. Returns the number of links visited (0 for NULL arguments, or inside
 * pure_ctx_free). Use it to close every link at shutdown, or to print per-link statistics. */
PURE_API uint64_t pure_ctx_links(pure_ctx *ctx,
                                 int (*visit)(pure_link *link, void *user, void *arg), void *arg);

/* ---- Links -------------------------------------------------------------------------------- */

/* Starts a link to the responder at `to` whose static public key is peer_key, for `service`.
 * The handshake's first datagram is produced by the next pure_ctx_write. Messages may be sent
 * right away; they flow once the handshake completes (on_established). Returns 0 and *out, or
 * PURE_EINVAL (bad service name, NULL), PURE_ENOMEM, PURE_ELIMIT (max_links), PURE_ECRYPTO (the
 * random source failed) or PURE_ESTATE (inside pure_ctx_links or pure_ctx_free); no link was
 * made then. Failures after this call arrive through on_closed: PURE_ETIMEDOUT (no answer
 * within handshake_timeout), PURE_EREFUSED, PURE_EACCES, PURE_EKEY (the responder rejected our
 * INIT: peer_key is not its key), PURE_EUNREACH (pure_ctx_unreachable: nothing listens there, no
 * route, the wrong address family) or PURE_ENOTPURE (what answers there is not Pure). The last
 * three come within a round trip (an ICMP error quoting our INIT), or PURE_HS_HINT_GRACE_MIN
 * after the first hint (docs/protocol.md, "Failing fast"), as does PURE_EKEY. */
PURE_API int pure_connect(pure_ctx *ctx, const pure_addr *to, const uint8_t peer_key[PURE_KEY_LEN],
                          const char *service, void *user, pure_link **out, uint64_t now);

/* Accepts one message for delivery: copies it into the link's send buffer (the only copy).
 * Returns the message's id (0, 1, 2, ... per link) or:
 *   PURE_EAGAIN   the backlog is full: send_backlog bytes not yet acknowledged, or send_queue
 *                 bytes accepted but not yet sent (also while the handshake runs: nothing is
 *                 sent before it completes); wait for on_writable and retry (an application
 *                 that cannot wait, e.g. one replying from on_message, queues the message
 *                 itself or sets send_queue to 0);
 *   PURE_EFULL    the link's queue limit is reached (pure_link_set_queue_limit: the peer is
 *                 not keeping up);
 *   PURE_EMSGSIZE len > max_message_size;
 *   PURE_ECLOSED  the link is finishing or closing (after pure_link_finish/close);
 *   PURE_ENOMEM   the send buffer could not be allocated: nothing was queued and no
 *                 on_writable follows, so try again later (what was accepted before is still
 *                 delivered: a link short of memory sends nothing it could not track, and
 *                 sends again bytes whose loss or acknowledgement it could not record);
 *   PURE_EINVAL   link is NULL, or msg is NULL with len > 0. */
PURE_API int64_t pure_link_send(pure_link *link, const void *msg, size_t len);

/* Channels: independent ordered message sequences inside one link, named by a number the sender
 * chooses (docs/channels.md). No round trip opens or closes one. A loss, a retransmission or a
 * huge message on one channel never delays delivery on another: the peer delivers each
 * channel's messages, in its sender's order and each once, through on_channel_message as soon
 * as they are whole. Channel 0 is the link's stream of pure_link_send (on_message, on_acked,
 * on_closed's ids); channels 1..max_channels each number their messages 0, 1, 2, ... of their
 * own (pure_link_channel_unacked gives a channel's ids as on_closed does channel 0's). A
 * channel's send backlog is limited as channel 0's (send_backlog, send_queue), by itself.
 * pure_link_finish ends channel 0's stream only; closing ends every channel.
 *
 * pure_link_send_on accepts one message for channel `channel` (0: exactly pure_link_send).
 * Returns the message's id on that channel (0, 1, 2, ... per channel) or:
 *   PURE_EINVAL   link is NULL, msg is NULL with len > 0, or channel is above
 *                 pure_link_peer_channels (or this side's max_channels);
 *   PURE_EAGAIN   the channel's backlog is full (send_backlog or send_queue): wait for
 *                 on_writable and retry;
 *   PURE_EFULL    the link's queue limit is reached (pure_link_set_queue_limit);
 *   PURE_EMSGSIZE len > max_message_size;
 *   PURE_ECLOSED  the link is finishing or closing (after pure_link_finish/close);
 *   PURE_ENOMEM   the channel or its send buffer could not be allocated. */
PURE_API int64_t pure_link_send_on(pure_link *link, uint32_t channel, const void *msg, size_t len);

/* The highest channel this link may send on: the channels both sides take, the smaller of this
 * side's max_channels and the peer's, which its transport parameters announced in the handshake
 * (0 from a peer that announced none: one built before channels, which would close the link
 * on a channel frame). Before an initiator's handshake completes it is this side's
 * max_channels: messages on those channels are taken and wait; if the peer then takes fewer
 * and one of them waits on a channel above its limit, the link closes at once, on_closed
 * reporting PURE_EINVAL. 0 for NULL. */
PURE_API uint32_t pure_link_peer_channels(const pure_link *link);

/* Sets the priority of this side's sending on `channel` (0 included), at any time: `urgency`
 * 0..PURE_URGENCY_MAX, lower first, strictly (RFC 9218's levels; every channel starts at 3,
 * incremental; a more urgent channel that the peer's credit holds back does not hold back the
 * others); among channels of one level, `incremental` ones share packets round-robin, and a
 * non-incremental one goes alone until it has nothing left to send (the lowest channel number
 * first). It orders both new data and retransmissions, so an urgent message queued behind
 * megabytes of another channel's leaves in the next packet. Each packet carries one channel's
 * data. Returns 0, PURE_EINVAL (NULL, channel above max_channels, urgency above 7),
 * PURE_ESTATE (on_closed ran) or PURE_ENOMEM. */
PURE_API int pure_link_set_priority(pure_link *link, uint32_t channel, uint8_t urgency,
                                    int incremental);

/* The ids of channel `channel`'s messages not acknowledged: *first_unacked .. *next_id - 1, as
 * on_closed's info gives for channel 0 (which this returns for channel 0). Inside on_closed,
 * when the peer closed, its CLOSE said how far its application read each channel, so the list
 * is exact as for channel 0. Returns 0 or PURE_EINVAL (NULL, channel above max_channels). */
PURE_API int pure_link_channel_unacked(const pure_link *link, uint32_t channel,
                                       uint64_t *first_unacked, uint64_t *next_id);

/* ---- Shared sends and slow peers (docs/channels.md, "Shared sends and slow peers") ---- */

/* A shared buffer: one immutable message body that many links send without a copy per link
 * (pure_link_send_shared). Each link packetises and retransmits straight from it, and holds a
 * reference until the peer has acknowledged the whole message or the link is freed, whatever
 * ends it (a close, abort, timeout, pure_ctx_shutdown or pure_ctx_free). The reference count is
 * atomic, so a buffer may go to links of several contexts on different threads (the allocator
 * of the context that made it then frees it, from whichever thread drops the last reference:
 * the default malloc is fine). */
typedef struct pure_shared pure_shared;

/* Wraps len bytes at data, which the caller owns and must leave unchanged and valid until
 * release(user, data, len) runs: once, when the last reference is dropped (the caller's, by
 * pure_shared_unref, or a link's). release runs inside pure_shared_unref or inside whichever
 * call on a context drops the last reference (pure_ctx_read of an ACK, pure_ctx_timeout,
 * pure_link_abort, pure_ctx_free, ...); it may free or reuse data and call pure_shared_* on
 * other buffers, but no other function of Pure. release may be NULL. The caller holds one
 * reference (*out). Returns 0, PURE_EINVAL (ctx or out NULL, data NULL with len > 0),
 * PURE_EMSGSIZE (len above the context's max_message_size) or PURE_ENOMEM. */
PURE_API int pure_shared_new(pure_ctx *ctx, const void *data, size_t len,
                             void (*release)(void *user, const void *data, size_t len), void *user,
                             pure_shared **out);
/* pure_shared_new on one copy of data, which Pure frees with the buffer: for a body that is
 * valid only for a while, such as on_message's data. Returns 0, PURE_EINVAL (ctx or out NULL,
 * data NULL with len > 0), PURE_EMSGSIZE (len above max_message_size) or PURE_ENOMEM. */
PURE_API int pure_shared_copy(pure_ctx *ctx, const void *data, size_t len, pure_shared **out);
/* Drops the caller's reference (the one pure_shared_new or pure_shared_copy gave); the buffer
 * lives on while links hold theirs. Call it once per buffer, when done sending it (NULL: no-op). */
PURE_API void pure_shared_unref(pure_shared *sh);
/* The buffer's bytes and (if len is not NULL) their length; NULL for NULL. */
PURE_API const void *pure_shared_data(const pure_shared *sh, size_t *len);

/* Queues the message whose body is sh on channel `channel` (1..pure_link_peer_channels): as
 * pure_link_send_on, but nothing is copied; the link takes a reference. The message is one like
 * any other for the peer (on_channel_message) and in the channel's order and ids. send_queue
 * does not apply (it bounds copies waiting in the ring); send_backlog does, shared bytes
 * included, and so does the link's queue limit. Channel 0 takes no shared sends (its ring keeps
 * its per-message fast path): send a shared feed on a channel. Returns the message's id on the
 * channel, or:
 *   PURE_EINVAL   link or sh NULL, channel 0, or above pure_link_peer_channels (or max_channels);
 *   PURE_EFULL    the link's queue limit is reached (pure_link_set_queue_limit);
 *   PURE_EAGAIN   the channel's send_backlog is full: wait for on_writable and retry;
 *   PURE_EMSGSIZE the body is larger than max_message_size;
 *   PURE_ECLOSED  the link is finishing or closing (after pure_link_finish/close);
 *   PURE_ENOMEM   the channel or its queue could not be allocated.
 * On an error the link took no reference. */
PURE_API int64_t pure_link_send_shared(pure_link *link, uint32_t channel, pure_shared *sh);

/* Watches the link's send queues and limits them: from now on a send (pure_link_send,
 * pure_link_send_on, pure_link_send_shared) that would make the bytes the link holds not
 * acknowledged, every channel together and framing included, exceed `bytes` returns PURE_EFULL
 * (unless nothing is queued: one larger message goes alone), and on_writable follows once they
 * are at most half of it. 0 sets no limit but still watches: pure_link_queue_stats then dates
 * messages. PURE_EFULL, unlike PURE_EAGAIN (the link's own buffers, which a healthy peer also
 * meets under a burst), says the peer holds too much: pause sending to it, drop it
 * (pure_link_abort), or skip what it has not had. A watched link keeps ~100 bytes per channel
 * (max_channels + 1) for its life. Returns 0, PURE_EINVAL (NULL), PURE_ESTATE (on_closed ran)
 * or PURE_ENOMEM. */
PURE_API int pure_link_set_queue_limit(pure_link *link, uint64_t bytes);

/* What a link (or one channel of it) holds to send. */
#define PURE_CHANNEL_ALL 0xffffffffu /* pure_link_queue_stats: every channel together */
typedef struct pure_queue_stats {
    uint64_t bytes;        /* accepted and not acknowledged (sent or not), framing included */
    uint64_t bytes_unsent; /* of those, not yet sent once */
    uint64_t bytes_shared; /* of those, in shared buffers (pure_link_send_shared) */
    uint64_t messages;     /* messages accepted and not acknowledged */
    uint64_t oldest_at;    /* when the oldest of them was accepted: the `now` of the pure_ctx_*
                              call during which it was (that time or earlier, never later); 0
                              if none, or the link is not watched (pure_link_set_queue_limit) */
    uint64_t oldest_age;   /* now - oldest_at (the `now` passed), ns; 0 if oldest_at is 0 */
    uint64_t limit;        /* the queue limit (0: none) */
    uint64_t full;         /* sends that met the limit (PURE_EFULL) */
} pure_queue_stats;

/* Copies up to `size` bytes (pass sizeof) of the statistics of `channel`'s send queue, or of
 * every channel's together with PURE_CHANNEL_ALL (oldest_at: the oldest of all); channel 0 is
 * the link's stream. `now` is the current time on the clock given to pure_ctx_* (an idle
 * context hears of no time between its calls). A slow peer shows as bytes and oldest_age
 * that grow while a healthy one's stay near a round trip's worth. Ages are known for messages
 * accepted since the link is watched (pure_link_set_queue_limit; call it in on_accept, or
 * after pure_connect); messages queued before are dated by that call. Returns 0 or
 * PURE_EINVAL (link or st NULL, a channel above max_channels other than PURE_CHANNEL_ALL). */
PURE_API int pure_link_queue_stats(const pure_link *link, uint32_t channel, uint64_t now,
                                   pure_queue_stats *st, size_t size);

/* Cancels and deadlines (docs/channels.md, "Cancel and deadlines"), on channels 1..max_channels
 * only (channel 0's stream has none, so its path costs nothing more). A cancelled message is
 * never sent or sent again; the peer drops what arrived of it and its on_channel_cancelled
 * reports (channel, id): it never delivers part of a message. A message whose bytes all went
 * may have been delivered before the cancel arrives: then the delivery stands. Each message has
 * exactly one outcome on both sides, and this side learns which: on_channel_cancelled with
 * PURE_CANCELLED_SENT if the cancel won, none if the message was delivered; either way the id is
 * then covered by on_channel_acked, so on_channel_acked's ids and pure_link_channel_unacked's
 * first_unacked count messages delivered or reported cancelled (on_closed's ids not acknowledged
 * were neither: none of them was delivered when the peer closed, as for any message). Needs a
 * peer that reads cancels: one built before them announces none (pure_link_cancel then returns
 * PURE_EINVAL; deadlines are then not kept).
 *
 * pure_link_cancel abandons message `id` (as pure_link_send_on returned it) of `channel`: queued,
 * partly sent, or sent and not yet acknowledged. Returns 0 (the cancel is under way: the outcome
 * comes as above), or:
 *   PURE_EINVAL   link is NULL, channel is 0 or above max_channels, id was never returned on
 *                 that channel, or the peer does not read cancels;
 *   PURE_EALREADY the message was acknowledged already (on_channel_acked covers it, or is
 *                 about to), or a cancel of it is under way;
 *   PURE_ESTATE   the handshake has not completed (whether the peer reads cancels is unknown);
 *   PURE_ECLOSED  the link is closing or closed (a graceful close still waiting for its
 *                 acknowledgements takes cancels: they let it end sooner);
 *   PURE_ENOMEM   the cancel could not be recorded (nothing changed). */
PURE_API int pure_link_cancel(pure_link *link, uint32_t channel, uint64_t id);

/* pure_link_send_on with a deadline: if the message is not acknowledged by `deadline` (a time
 * on the clock of the `now` given to pure_ctx_* calls, in ns), it is cancelled as by
 * pure_link_cancel, and if the cancel wins on_channel_cancelled reports it with
 * PURE_CANCELLED_SENT | PURE_CANCELLED_DEADLINE (PR-SCTP's timed reliability, per message). The
 * deadline is acted on by the link's timer (pure_ctx_timeout), once the handshake
 * completed; toward a peer that does not read cancels it is dropped. Returns the message's id or
 * the codes of pure_link_send_on:
 *   PURE_EINVAL   link is NULL, msg is NULL with len > 0, channel is 0 or above
 *                 pure_link_peer_channels (or this side's max_channels);
 *   PURE_EAGAIN   the channel's backlog is full: wait for on_writable and retry;
 *   PURE_EFULL    the link's queue limit is reached (pure_link_set_queue_limit);
 *   PURE_EMSGSIZE len > max_message_size;
 *   PURE_ECLOSED  the link is finishing or closing;
 *   PURE_ENOMEM   the channel, its send buffer or the deadline could not be allocated. */
PURE_API int64_t pure_link_send_on_deadline(pure_link *link, uint32_t channel, const void *msg,
                                            size_t len, uint64_t deadline);

/* Datagrams: unreliable messages that fit one packet (docs/channels.md, "Datagrams"). Each is
 * sent once, never retransmitted, congestion-controlled and paced with everything else, and
 * delivered to the peer's on_datagram whole or not at all, never twice, in no order with
 * channels or other datagrams. One datagram per packet (beside channel data and ACKs).
 *
 * pure_link_send_datagram queues a copy of len bytes for the next packet the window and pacer
 * allow. Returns 0 (queued: it may still be lost, which pure_link_datagram_stats counts) or:
 *   PURE_EINVAL   link is NULL, data is NULL with len > 0, or the link takes no datagrams
 *                 (pure_link_datagram_max is 0: max_datagram_size 0 on either side);
 *   PURE_EMSGSIZE len > pure_link_datagram_max(link);
 *   PURE_EAGAIN   64 KiB of datagrams wait already (PURE_DATAGRAM_QUEUE: the window or the
 *                 pacer holds them): nothing was queued; send fewer or later;
 *   PURE_ECLOSED  the link is closing or closed (after pure_link_close or abort);
 *   PURE_ENOMEM   the queue could not be allocated.
 * A datagram queued when the path's datagram size falls below it (a black hole found by the
 * path MTU search) is dropped and counted in `dropped`, as are those still queued at close. */
PURE_API int pure_link_send_datagram(pure_link *link, const void *data, size_t len);

/* The largest datagram pure_link_send_datagram takes now: what one packet holds at the path's
 * current datagram size (1200 bytes until the path MTU search finds more: 1169 bytes of
 * payload), within both sides' max_datagram_size. It may grow with the path MTU search and
 * fall after a black hole. 0 for NULL or when either side takes none. */
PURE_API size_t pure_link_datagram_max(const pure_link *link);

/* The largest datagram the peer takes, as its transport parameters announced (0 from a peer
 * that announced none); before an initiator's handshake completes, this side's
 * max_datagram_size (datagrams queued then that the peer turns out not to take are dropped and
 * counted). 0 for NULL. */
PURE_API size_t pure_link_peer_datagram_max(const pure_link *link);

/* What became of the link's datagrams (counted from its first). */
#define PURE_DATAGRAM_QUEUE 65536
typedef struct pure_datagram_stats {
    uint64_t sent;     /* went out in a packet */
    uint64_t received; /* delivered to on_datagram */
    uint64_t lost;     /* went out in a packet declared lost (the peer may still have had it, if
                          only the acknowledgement was lost) */
    uint64_t dropped;  /* never went out: too large for the path after it shrank, or still
                          queued when the link closed */
} pure_datagram_stats;

/* Copies the link's datagram counters (all 0 for a link that never sent or received one). From
 * on_closed on, sent + dropped is every datagram pure_link_send_datagram queued (those still
 * queued are counted dropped before on_closed runs). A datagram that arrives while this side has
 * no memory for the link's datagram state is not delivered, and its packet is not acknowledged:
 * the sender counts it lost. */
PURE_API void pure_link_datagram_stats(const pure_link *link, pure_datagram_stats *st);

/* Ends this side's stream after the messages already accepted (the peer gets on_peer_finished once
 * it has them all). Further sends return PURE_ECLOSED. Returns 0 or PURE_ESTATE. */
PURE_API int pure_link_finish(pure_link *link);

/* Close codes: 0 for a normal close, or an application's own code from PURE_CLOSE_APP up (the
 * peer's on_closed shows it as peer_code with error PURE_ERESET). Codes 1..0xff are Pure's. */
#define PURE_CLOSE_APP 0x100

/* Closes the link gracefully: no new messages are accepted (pure_link_send returns PURE_ECLOSED),
 * every message already accepted is sent and acknowledged by the peer, and then the peer is told
 * (code, reason up to 47 bytes). on_closed follows once that is done (inside this call if
 * everything was acknowledged already, else from a later pure_ctx_* call): error 0 with
 * first_unacked == next_id once everything was acknowledged; if the peer stops acknowledging
 * (dead, or giving no credit) for idle_timeout, PURE_ETIMEDOUT with the ids it never
 * acknowledged. Messages from the peer are still delivered until then. Returns 0, PURE_EINVAL
 * (a code in 1..0xff), or PURE_ESTATE if the link is already closing. The link stays valid until
 * on_closed. */
PURE_API int pure_link_close(pure_link *link, uint64_t code, const char *reason);

/* Closes the link at once: messages not yet acknowledged are dropped, the peer is told (code,
 * reason) in one CLOSE packet, and on_closed runs before this returns (error 0; first_unacked ..
 * next_id - 1 are the messages the peer may not have). Use it to give up on a peer, or from
 * on_message to refuse more. Returns 0, PURE_EINVAL (a code in 1..0xff), or PURE_ESTATE if
 * on_closed already ran. After it returns
 * the link must not be used (it is freed at the end of the current pure_ctx_* call, or now). */
PURE_API int pure_link_abort(pure_link *link, uint64_t code, const char *reason);

/* Receive backpressure. pure_link_pause_recv stops granting the peer receive credit: messages
 * the peer sent within the credit it already holds still arrive through on_message (at most
 * the link's receive window, pure_link_stats.recv_window bytes, 1 MiB by default and up to
 * recv_window_max), then the peer can send no more and its pure_link_send returns PURE_EAGAIN
 * once its own send_queue/send_backlog fill. Use it when on_message cannot keep up, e.g. a
 * service whose replies meet PURE_EAGAIN: pause, queue the replies of what still arrives, and
 * resume from on_writable once they are out. pure_link_resume_recv grants credit again (a
 * CREDIT frame goes out with the next pure_ctx_write, if one is due).
 * A paused link is not closed for the peer's silence: the peer is alive while it answers, and
 * the usual liveness rules (idle_timeout above) still find a dead one. Pausing does not stop
 * on_peer_finished or a close from the peer. Both are idempotent and may be called from any
 * callback or outside one, also before the handshake completes. Return 0, PURE_EINVAL (NULL) or
 * PURE_ESTATE (the link is closing or closed). */
PURE_API int pure_link_pause_recv(pure_link *link);
PURE_API int pure_link_resume_recv(pure_link *link);
/* 1 while the link is paused (pure_link_pause_recv), else 0. */
PURE_API int pure_link_recv_is_paused(const pure_link *link);

/* Sets the link's user pointer: the `user` argument of every callback of this link from then
 * on (pure_connect sets it first; for a responder's link set it in on_accept). Pure never
 * dereferences it. Free what it points to in on_closed. */
PURE_API void pure_link_set_user(pure_link *link, void *user);
/* The link's user pointer (NULL until set on a responder's link). */
PURE_API void *pure_link_user(const pure_link *link);
/* The peer's static public key (after the handshake; the configured key for an initiator). */
PURE_API const uint8_t *pure_link_peer_key(const pure_link *link);
/* The peer's current address. */
PURE_API const pure_addr *pure_link_peer_addr(const pure_link *link);
/* Bytes accepted by pure_link_send and not yet acknowledged (the backlog). */
PURE_API uint64_t pure_link_backlog(const pure_link *link);

/* Per-link statistics. */
typedef struct pure_link_stats {
    uint64_t rtt_ns, rtt_min_ns, rtt_var_ns;
    uint64_t cwnd, bytes_in_flight;
    uint64_t packets_sent, packets_received, bytes_sent, bytes_received;
    uint64_t packets_lost, bytes_retransmitted, ptos;
    uint64_t random_losses; /* losses not taken as congestion: no queueing delay above
                               max(2 ms, min(6 ms, half the queueing seen lately)) and a
                               loss rate of 20% or less (docs/congestion.md) */
    /* messages_sent and messages_acked count channel 0's messages (the ids pure_link_send
     * returns and on_acked reports; pure_link_channel_unacked gives another channel's);
     * messages_received counts the messages delivered on every channel (datagrams not included) */
    uint64_t messages_sent, messages_received, messages_acked;
    uint64_t recv_window; /* current receive credit window */
    uint64_t rekeys, keepalives, path_changes;
    uint64_t dropped_auth, dropped_replay;
    uint64_t paced_bursts;    /* bursts of data the pacer ended before the buffer was full
                                 (the window and the data would have allowed more) */
    uint64_t datagram_size;   /* the largest datagram (UDP payload) the link sends now: what the
                                 path MTU search found (1200 until it ran) */
    uint64_t ecn_ce_received; /* the peer's packets that arrived marked CE (ECN: a queue on the
                                 way was congested; see pure_ctx_read_ecn) */
    uint64_t ecn_ce_reported; /* this link's packets the peer reported marked CE: each report
                                 of more is a congestion signal, like a loss */
} pure_link_stats;

/* Copies the link's statistics. */
PURE_API void pure_link_stats_get(const pure_link *link, pure_link_stats *st);

#ifdef __cplusplus
}
#endif

#endif
