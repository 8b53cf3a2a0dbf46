/* SPDX-License-Identifier: MIT */
/* shared.h is what the ngtcp2 peer's modes have in common: the TLS setup (a self-signed
 * certificate made at run time, a GnuTLS session configured for QUIC), socket buffers, and for
 * the modes that hold many connections on one UDP socket (idle.c, rpc.c) the index-prefixed
 * connection IDs, a min-heap of connection expiries and the table that finds a client's first
 * Initials by the DCID it chose at random.
 */
#ifndef NGTCP2_PEER_SHARED_H
#define NGTCP2_PEER_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

/* The peer is written against Debian's ngtcp2 0.12. Built against 1.x from source
 * (build.sh with NGTCP2_PREFIX; README.md), the names 1.0 changed map to theirs here, and a
 * server's transport parameters say they carry the original DCID, which 1.x requires. (1.x also
 * asserts that no timestamp precedes settings.initial_ts: a server's is its first packet's.) */
#if NGTCP2_VERSION_NUM >= 0x010000
#define ngtcp2_connection_close_error ngtcp2_ccerr
#define ngtcp2_connection_close_error_default ngtcp2_ccerr_default
#define ngtcp2_connection_close_error_set_application_error ngtcp2_ccerr_set_application_error
#define ngtcp2_connection_close_error_set_transport_error_liberr ngtcp2_ccerr_set_liberr
#define NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION NGTCP2_CCERR_TYPE_APPLICATION
#define ngtcp2_conn_get_connection_close_error(conn, ccerr)                                        \
    (*(ccerr) = *ngtcp2_conn_get_ccerr(conn))
#define ngtcp2_conn_is_in_closing_period ngtcp2_conn_in_closing_period
#define ngtcp2_conn_is_in_draining_period ngtcp2_conn_in_draining_period
#define ngtcp2_conn_stat ngtcp2_conn_info
#define ngtcp2_conn_get_conn_stat ngtcp2_conn_get_conn_info
#define NQ_SET_ORIGINAL_DCID(tp, dcid)                                                             \
    ((tp)->original_dcid = (dcid), (tp)->original_dcid_present = 1)
#else
#define NQ_SET_ORIGINAL_DCID(tp, dcid) ((tp)->original_dcid = (dcid))
#endif

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* AES-128-GCM first: it is the suite the comparison wants negotiated. */
extern const char NQ_PRIORITY[];

uint64_t nq_now(void); /* CLOCK_MONOTONIC, ns */

/* ngtcp2's rand callback: GnuTLS's random generator. */
void nq_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx);
/* Zeroes *cb and sets what every mode's connections share: the client's or server's initial
 * callbacks, ngtcp2_crypto's for keys, AEAD and header protection, nq_rand_cb, and the three the
 * mode names (handshake done, stream data, new connection IDs). The mode adds the rest. */
void nq_fill_callbacks(ngtcp2_callbacks *cb, int server,
                       ngtcp2_handshake_completed handshake_completed,
                       ngtcp2_recv_stream_data recv_stream_data,
                       ngtcp2_get_new_connection_id new_cid);

/* Makes a self-signed ECDSA P-256 certificate for "localhost" into *cred. 0, or -1 after
 * printing why (prefixed by prog) on stderr. */
int nq_server_cred(gnutls_certificate_credentials_t *cred, const char *prog);

/* A GnuTLS session for one QUIC connection: TLS 1.3 with NQ_PRIORITY, ALPN `alpn` (mandatory),
 * no tickets on the server, SNI "localhost" on the client; `ref` (its get_conn and user_data
 * set by the caller) becomes the session pointer ngtcp2's crypto helpers find the connection
 * by. 0, or -1 after printing why. */
int nq_tls_session(gnutls_session_t *tls, gnutls_certificate_credentials_t cred, int server,
                   const char *alpn, ngtcp2_crypto_conn_ref *ref, const char *prog);

/* Socket buffers of `bytes` each way (SO_*BUFFORCE, falling back to the capped SO_*BUF). */
void nq_socket_bufs(int fd, int bytes);

/* ---- connection IDs that say which connection they belong to ----
 * Every CID either side issues is NQ_CID_LEN bytes: the connection's index (u32 big-endian),
 * then random bytes. A client's first DCID is NQ_CLIENT_DCID_LEN random bytes, so its length
 * tells it apart. */
#define NQ_CID_LEN 16
#define NQ_CLIENT_DCID_LEN 18

void nq_make_cid(ngtcp2_cid *cid, uint32_t idx);
static inline uint32_t nq_cid_index(const uint8_t *d)
{
    return ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) | ((uint32_t)d[2] << 8) | d[3];
}

/* ---- a min-heap of expiries ----
 * Embed an nq_timer in each connection; the heap holds pointers to them. */
typedef struct nq_timer {
    uint64_t exp;
    uint32_t pos; /* index in the heap; NQ_NOT_QUEUED when not in it */
} nq_timer;
#define NQ_NOT_QUEUED UINT32_MAX

typedef struct nq_heap {
    nq_timer **v;
    uint32_t n, cap;
} nq_heap;

static inline void nq_timer_init(nq_timer *t)
{
    t->exp = UINT64_MAX;
    t->pos = NQ_NOT_QUEUED;
}
/* Puts t in the heap at exp, or moves it there; exp == UINT64_MAX takes it out. 0, or -1 if the
 * heap could not grow (t is then not queued). */
int nq_heap_set(nq_heap *h, nq_timer *t, uint64_t exp);
void nq_heap_remove(nq_heap *h, nq_timer *t);
static inline nq_timer *nq_heap_top(const nq_heap *h)
{
    return h->n ? h->v[0] : NULL;
}

/* ---- a client's first DCID -> connection (open addressing on the DCID's first 8 bytes) ----
 * Values are nonzero (callers store index + 1). */
typedef struct nq_cidmap {
    uint64_t *key; /* 0: empty */
    uint32_t *val;
    size_t mask, n;
} nq_cidmap;

int nq_cidmap_init(nq_cidmap *m, size_t expect); /* 0 or -1 (out of memory) */
uint32_t nq_cidmap_find(const nq_cidmap *m, const uint8_t *cid, size_t len);   /* 0: absent */
int nq_cidmap_add(nq_cidmap *m, const uint8_t *cid, size_t len, uint32_t val); /* grows; 0/-1 */
void nq_cidmap_del(nq_cidmap *m, const uint8_t *cid, size_t len);

#endif
