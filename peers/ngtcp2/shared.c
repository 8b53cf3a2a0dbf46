/* SPDX-License-Identifier: MIT */
/* What the ngtcp2 peer's modes share (shared.h). */
#define _GNU_SOURCE
#include "shared.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

const char NQ_PRIORITY[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
                           "+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
                           "%DISABLE_TLS13_COMPAT_MODE";

uint64_t nq_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

void nq_fill_callbacks(ngtcp2_callbacks *cb, int server,
                       ngtcp2_handshake_completed handshake_completed,
                       ngtcp2_recv_stream_data recv_stream_data,
                       ngtcp2_get_new_connection_id new_cid)
{
    memset(cb, 0, sizeof *cb);
    if (server) {
        cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    } else {
        cb->client_initial = ngtcp2_crypto_client_initial_cb;
        cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
    }
    cb->recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb->handshake_completed = handshake_completed;
    cb->encrypt = ngtcp2_crypto_encrypt_cb;
    cb->decrypt = ngtcp2_crypto_decrypt_cb;
    cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb->recv_stream_data = recv_stream_data;
    cb->rand = nq_rand_cb;
    cb->get_new_connection_id = new_cid;
    cb->update_key = ngtcp2_crypto_update_key_cb;
    cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

void nq_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx)
{
    (void)rand_ctx;
    (void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, destlen);
}

/* ---- TLS ---- */

int nq_server_cred(gnutls_certificate_credentials_t *cred, const char *prog)
{
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    unsigned char serial[8];
    time_t t = time(NULL);
    int rv;

    gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial);
    serial[0] &= 0x7f;
    if ((rv = gnutls_x509_privkey_init(&key)) < 0 ||
        (rv = gnutls_x509_privkey_generate(
             key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
        (rv = gnutls_x509_crt_init(&crt)) < 0 || (rv = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
        (rv = gnutls_x509_crt_set_serial(crt, serial, sizeof serial)) < 0 ||
        (rv = gnutls_x509_crt_set_activation_time(crt, t - 3600)) < 0 ||
        (rv = gnutls_x509_crt_set_expiration_time(crt, t + 30 * 86400)) < 0 ||
        (rv = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9)) <
            0 ||
        (rv = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
                                                   GNUTLS_FSAN_SET)) < 0 ||
        (rv = gnutls_x509_crt_set_key(crt, key)) < 0 ||
        (rv = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
        (rv = gnutls_certificate_allocate_credentials(cred)) < 0 ||
        (rv = gnutls_certificate_set_x509_key(*cred, &crt, 1, key)) < 0) {
        fprintf(stderr, "%s: making the self-signed certificate: %s\n", prog, gnutls_strerror(rv));
        rv = -1;
    } else {
        rv = 0;
    }
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return rv;
}

int nq_tls_session(gnutls_session_t *tls, gnutls_certificate_credentials_t cred, int server,
                   const char *alpn, ngtcp2_crypto_conn_ref *ref, const char *prog)
{
    gnutls_datum_t proto = {(unsigned char *)alpn, (unsigned)strlen(alpn)};
    const char *errpos = NULL, *what = "gnutls_init";
    unsigned flags = GNUTLS_NO_END_OF_EARLY_DATA |
                     (server ? (GNUTLS_SERVER | GNUTLS_NO_TICKETS) : GNUTLS_CLIENT);
    int rv;

    *tls = NULL;
    if ((rv = gnutls_init(tls, flags)) < 0)
        goto fail;
    what = "the GnuTLS priority string";
    if ((rv = gnutls_priority_set_direct(*tls, NQ_PRIORITY, &errpos)) < 0)
        goto fail;
    what = "ngtcp2_crypto_gnutls_configure_*_session";
    rv = server ? ngtcp2_crypto_gnutls_configure_server_session(*tls)
                : ngtcp2_crypto_gnutls_configure_client_session(*tls);
    if (rv != 0) {
        rv = GNUTLS_E_INTERNAL_ERROR;
        goto fail;
    }
    what = "gnutls_credentials_set";
    if ((rv = gnutls_credentials_set(*tls, GNUTLS_CRD_CERTIFICATE, cred)) < 0)
        goto fail;
    what = "gnutls_alpn_set_protocols";
    if ((rv = gnutls_alpn_set_protocols(*tls, &proto, 1, GNUTLS_ALPN_MANDATORY)) < 0)
        goto fail;
    if (!server)
        gnutls_server_name_set(*tls, GNUTLS_NAME_DNS, "localhost", 9);
    gnutls_session_set_ptr(*tls, ref);
    return 0;
fail:
    fprintf(stderr, "%s: %s%s%s: %s\n", prog, what, errpos ? " near " : "", errpos ? errpos : "",
            gnutls_strerror(rv));
    if (*tls)
        gnutls_deinit(*tls);
    *tls = NULL;
    return -1;
}

void nq_socket_bufs(int fd, int bytes)
{
    int v = bytes;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) != 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    v = bytes;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
}

/* ---- connection IDs ---- */

void nq_make_cid(ngtcp2_cid *cid, uint32_t idx)
{
    cid->datalen = NQ_CID_LEN;
    cid->data[0] = (uint8_t)(idx >> 24);
    cid->data[1] = (uint8_t)(idx >> 16);
    cid->data[2] = (uint8_t)(idx >> 8);
    cid->data[3] = (uint8_t)idx;
    gnutls_rnd(GNUTLS_RND_RANDOM, cid->data + 4, NQ_CID_LEN - 4);
}

/* ---- expiry heap ---- */

static void heap_swap(nq_heap *h, uint32_t a, uint32_t b)
{
    nq_timer *t = h->v[a];
    h->v[a] = h->v[b];
    h->v[b] = t;
    h->v[a]->pos = a;
    h->v[b]->pos = b;
}

static void heap_up(nq_heap *h, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->v[p]->exp <= h->v[i]->exp)
            break;
        heap_swap(h, p, i);
        i = p;
    }
}

static void heap_down(nq_heap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l]->exp < h->v[m]->exp)
            m = l;
        if (r < h->n && h->v[r]->exp < h->v[m]->exp)
            m = r;
        if (m == i)
            break;
        heap_swap(h, m, i);
        i = m;
    }
}

void nq_heap_remove(nq_heap *h, nq_timer *t)
{
    uint32_t i = t->pos;
    if (i == NQ_NOT_QUEUED)
        return;
    t->pos = NQ_NOT_QUEUED;
    h->n--;
    if (i == h->n)
        return;
    h->v[i] = h->v[h->n];
    h->v[i]->pos = i;
    heap_up(h, i);
    heap_down(h, h->v[i]->pos);
}

int nq_heap_set(nq_heap *h, nq_timer *t, uint64_t exp)
{
    if (exp == UINT64_MAX) {
        nq_heap_remove(h, t);
        t->exp = exp;
        return 0;
    }
    t->exp = exp;
    if (t->pos != NQ_NOT_QUEUED) {
        heap_up(h, t->pos);
        heap_down(h, t->pos);
        return 0;
    }
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? 2 * h->cap : 1024;
        nq_timer **v = realloc(h->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    t->pos = h->n;
    h->v[h->n++] = t;
    heap_up(h, t->pos);
    return 0;
}

/* ---- first-DCID table ---- */

static uint64_t key8(const uint8_t *d, size_t n)
{
    uint64_t k = 0;
    memcpy(&k, d, n < 8 ? n : 8);
    return k ? k : 1;
}

static size_t slot(const nq_cidmap *m, uint64_t k)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & m->mask;
}

int nq_cidmap_init(nq_cidmap *m, size_t expect)
{
    size_t n = 1024;
    while (n < 2 * expect)
        n *= 2;
    m->key = calloc(n, sizeof *m->key);
    m->val = calloc(n, sizeof *m->val);
    m->mask = n - 1;
    m->n = 0;
    if (!m->key || !m->val) {
        free(m->key);
        free(m->val);
        return -1;
    }
    return 0;
}

uint32_t nq_cidmap_find(const nq_cidmap *m, const uint8_t *cid, size_t len)
{
    uint64_t k = key8(cid, len);
    for (size_t i = slot(m, k);; i = (i + 1) & m->mask) {
        if (m->key[i] == 0)
            return 0;
        if (m->key[i] == k)
            return m->val[i];
    }
}

static void put(nq_cidmap *m, uint64_t k, uint32_t v)
{
    size_t i = slot(m, k);
    while (m->key[i] != 0 && m->key[i] != k)
        i = (i + 1) & m->mask;
    m->n += m->key[i] == 0;
    m->key[i] = k;
    m->val[i] = v;
}

int nq_cidmap_add(nq_cidmap *m, const uint8_t *cid, size_t len, uint32_t val)
{
    if (2 * (m->n + 1) > m->mask + 1) { /* keep it at most half full */
        nq_cidmap old = *m;
        if (nq_cidmap_init(m, 2 * (old.mask + 1)) != 0) {
            *m = old;
            return -1;
        }
        for (size_t i = 0; i <= old.mask; i++)
            if (old.key[i])
                put(m, old.key[i], old.val[i]);
        free(old.key);
        free(old.val);
    }
    put(m, key8(cid, len), val);
    return 0;
}

void nq_cidmap_del(nq_cidmap *m, const uint8_t *cid, size_t len)
{
    uint64_t k = key8(cid, len);
    size_t i = slot(m, k);
    while (m->key[i] != k) {
        if (m->key[i] == 0)
            return;
        i = (i + 1) & m->mask;
    }
    /* backward-shift deletion: move later members of the probe run into the hole */
    for (size_t j = (i + 1) & m->mask; m->key[j] != 0; j = (j + 1) & m->mask) {
        size_t home = slot(m, m->key[j]);
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->key[i] = m->key[j];
            m->val[i] = m->val[j];
            i = j;
        }
    }
    m->key[i] = 0;
    m->val[i] = 0;
    m->n--;
}
