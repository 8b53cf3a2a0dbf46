/* SPDX-License-Identifier: MIT */
/* registry.c: what a context keeps of its links, for the modules that serve them: the slabs
 * link structs come from, the table of links by local index and of unvalidated links by INIT
 * tag (both table.c), the timer heap entry of each link (timerheap.c), the list of links with
 * something to send, the queue of control replies that belong to no link, the services and
 * allow list lookups, and the context's random and wall-clock sources. */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "registry.h"

int pure_ctx_random(pure_ctx *ctx, uint8_t *buf, size_t len)
{
    if (ctx->s.random)
        return ctx->s.random(ctx->s.random_user, buf, len);
    return ctx->crypto->random(buf, len);
}

pure_sscache *pure_ctx_sscache(pure_ctx *ctx)
{
    if (!ctx->ssc) {
        ctx->ssc = pure_mem_alloc(&ctx->alloc, sizeof *ctx->ssc);
        if (ctx->ssc)
            memset(ctx->ssc, 0, sizeof *ctx->ssc);
    }
    return ctx->ssc;
}

/* Keys and hashes of the two link tables (table.h): by local index, by INIT tag. */
static uint64_t link_index_of(const void *item)
{
    return ((const pure_link *)item)->local_index;
}

static uint32_t index_hash(uint64_t index)
{
    /* indices are random already; mix anyway so a weak random source cannot cluster them */
    return (uint32_t)index * 2654435761u;
}

static uint64_t link_tag_of(const void *item)
{
    return ((const pure_link *)item)->init_tag;
}

static uint32_t tag_hash(uint64_t tag)
{
    return (uint32_t)((tag * 0x9e3779b97f4a7c15ull) >> 32);
}

int pure_ctx_service_index(const pure_ctx *ctx, const char *name, size_t len)
{
    for (uint32_t i = 0; i < ctx->n_services; i++)
        if (strlen(ctx->services[i]) == len && memcmp(ctx->services[i], name, len) == 0)
            return (int)i;
    return -1;
}

int64_t pure_ctx_allow_index(const pure_ctx *ctx, const uint8_t key[PURE_KEY_LEN])
{
    for (uint32_t i = 0; i < ctx->n_allow; i++)
        if (memcmp(ctx->allow[i], key, PURE_KEY_LEN) == 0)
            return i;
    return ctx->s.allow_any ? -1 : -2;
}

uint64_t pure_ctx_realtime(const pure_ctx *ctx)
{
    if (ctx->s.realtime)
        return ctx->s.realtime(ctx->s.realtime_user);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int pure_ctx_allowed(const pure_ctx *ctx, const uint8_t key[PURE_KEY_LEN])
{
    if (ctx->s.allow_any)
        return 1;
    for (uint32_t i = 0; i < ctx->n_allow; i++)
        if (memcmp(ctx->allow[i], key, PURE_KEY_LEN) == 0)
            return 1;
    return 0;
}

int pure_addr_equal(const pure_addr *a, const pure_addr *b)
{
    return a->len == b->len && memcmp(a->bytes, b->bytes, a->len < 28 ? a->len : 28) == 0;
}

/* The bytes that name a host: a sockaddr_in's address, a sockaddr_in6's, else all but the port. */
static size_t host_of(const pure_addr *a, const uint8_t **p)
{
    uint16_t family;
    memcpy(&family, a->bytes, 2);
    if (a->len == 16 && family == 2) { /* AF_INET: family, port, address */
        *p = a->bytes + 4;
        return 4;
    }
    if (a->len == 28 && family == 10) { /* AF_INET6: family, port, flow info, address */
        *p = a->bytes + 8;
        return 16;
    }
    *p = a->bytes;
    size_t n = a->len <= sizeof a->bytes ? a->len : sizeof a->bytes;
    return n > 2 ? n - 2 : n;
}

int pure_addr_same_host(const pure_addr *a, const pure_addr *b)
{
    const uint8_t *pa, *pb;
    size_t na = host_of(a, &pa), nb = host_of(b, &pb);
    return na == nb && memcmp(pa, pb, na) == 0;
}

int pure_ctx_table_add(pure_ctx *ctx, pure_link *link)
{
    if (ctx->table.used >= ctx->s.max_links)
        return PURE_ELIMIT;
    if (pure_table_reserve(&ctx->table, &ctx->alloc))
        return PURE_ENOMEM;
    for (int tries = 0; tries < 64; tries++) {
        uint32_t idx;
        if (pure_ctx_random(ctx, (uint8_t *)&idx, sizeof idx))
            return PURE_ECRYPTO;
        /* The top bits name this context (pure_settings.index_top): the top, because the
         * table's hash multiplies, and a product's low bits come from the index's low bits. */
        if (ctx->s.index_top_bits)
            idx = (idx & (UINT32_MAX >> ctx->s.index_top_bits)) |
                  ctx->s.index_top << (32 - ctx->s.index_top_bits);
        /* Just below them, the server id a fleet's director routes on (docs/fleet.md). */
        if (ctx->s.server_id_bits) {
            uint32_t shift = 32 - ctx->s.index_top_bits - ctx->s.server_id_bits;
            uint32_t mask = ((1u << ctx->s.server_id_bits) - 1) << shift;
            idx = (idx & ~mask) | ctx->s.server_id << shift;
        }
        if (idx == 0 || pure_ctx_table_find(ctx, idx))
            continue;
        link->local_index = idx;
        return pure_table_add(&ctx->table, &ctx->alloc, link); /* room was made: cannot fail */
    }
    return PURE_ECRYPTO;
}

pure_link *pure_ctx_table_find(pure_ctx *ctx, uint32_t index)
{
    return pure_table_find(&ctx->table, index, NULL, NULL);
}

void pure_ctx_table_remove(pure_ctx *ctx, pure_link *link)
{
    pure_table_remove(&ctx->table, link);
}

pure_link *pure_ctx_link_new(pure_ctx *ctx)
{
    if (!ctx->free_links) {
        if (pure_ctx_grow_array(ctx, (void **)&ctx->slabs, &ctx->cap_slabs, ctx->n_slabs,
                                sizeof *ctx->slabs))
            return NULL;
        pure_link *slab = pure_mem_alloc(&ctx->alloc, PURE_LINK_SLAB * sizeof *slab);
        if (!slab)
            return NULL;
        ctx->slabs[ctx->n_slabs++] = slab;
        for (int i = PURE_LINK_SLAB - 1; i >= 0; i--) {
            slab[i].dead_next = ctx->free_links;
            ctx->free_links = &slab[i];
        }
    }
    pure_link *l = ctx->free_links;
    ctx->free_links = l->dead_next;
    memset(l, 0, sizeof *l);
    return l;
}

void pure_ctx_link_free(pure_ctx *ctx, pure_link *link)
{
    link->dead_next = ctx->free_links;
    ctx->free_links = link;
}

int pure_ctx_hs_add(pure_ctx *ctx, pure_link *link)
{
    if (pure_table_add(&ctx->hs_table, &ctx->alloc, link))
        return PURE_ENOMEM;
    link->in_hs_table = 1;
    return 0;
}

static int hs_match(const void *item, void *arg)
{
    const pure_link *l = item;
    return l->state == PURE_LS_UNVALIDATED && l->remote_index == *(const uint32_t *)arg;
}

pure_link *pure_ctx_hs_find(pure_ctx *ctx, uint64_t tag, uint32_t sender)
{
    return pure_table_find(&ctx->hs_table, tag, hs_match, &sender);
}

void pure_ctx_hs_remove(pure_ctx *ctx, pure_link *link)
{
    if (!link->in_hs_table)
        return;
    link->in_hs_table = 0;
    pure_table_remove(&ctx->hs_table, link);
}

void pure_ctx_timer_set(pure_ctx *ctx, pure_link *link, uint64_t deadline)
{
    /* out of memory: the link stays off the heap and keeps running on traffic alone */
    (void)pure_timerheap_set(&ctx->timers, &ctx->alloc, link, deadline);
}

void pure_ctx_mark_pending(pure_ctx *ctx, pure_link *link)
{
    if (link->in_pending || link->state == PURE_LS_CLOSED)
        return;
    link->in_pending = 1;
    link->pending_next = NULL;
    if (ctx->pending_tail)
        ctx->pending_tail->pending_next = link;
    else
        ctx->pending_head = link;
    ctx->pending_tail = link;
}

pure_link *pure_ctx_pending_pop(pure_ctx *ctx)
{
    pure_link *l = ctx->pending_head;
    if (l) {
        ctx->pending_head = l->pending_next;
        if (!ctx->pending_head)
            ctx->pending_tail = NULL;
        l->in_pending = 0;
        l->pending_next = NULL;
        if (l->b) /* pure_link_send's next message puts it back on the list (link.c) */
            l->b->send_fast_end = 0;
    }
    return l;
}

pure_ctl *pure_ctx_ctl_push(pure_ctx *ctx, const pure_addr *to)
{
    if (ctx->ctl_len == PURE_CTL_QUEUE)
        return NULL; /* replies are best effort: the peer retries */
    pure_ctl *c = &ctx->ctl[(ctx->ctl_head + ctx->ctl_len++) % PURE_CTL_QUEUE];
    c->to = *to;
    c->len = 0;
    return c;
}

const pure_ctl *pure_ctx_ctl_pop(pure_ctx *ctx)
{
    if (!ctx->ctl_len)
        return NULL;
    const pure_ctl *c = &ctx->ctl[ctx->ctl_head];
    ctx->ctl_head = (ctx->ctl_head + 1) % PURE_CTL_QUEUE;
    ctx->ctl_len--;
    return c;
}

void pure_registry_init(pure_ctx *ctx)
{
    pure_table_init(&ctx->table, link_index_of, index_hash);
    pure_table_init(&ctx->hs_table, link_tag_of, tag_hash);
    pure_timerheap_init(&ctx->timers, offsetof(pure_link, deadline), offsetof(pure_link, heap_pos));
}

void pure_registry_free(pure_ctx *ctx)
{
    pure_timerheap_free(&ctx->timers, &ctx->alloc);
    pure_table_free(&ctx->hs_table, &ctx->alloc);
    for (uint32_t i = 0; i < ctx->n_slabs; i++)
        pure_mem_free(&ctx->alloc, ctx->slabs[i], PURE_LINK_SLAB * sizeof(pure_link));
    pure_mem_free(&ctx->alloc, ctx->slabs, ctx->cap_slabs * sizeof *ctx->slabs);
}

int pure_ctx_grow_array(pure_ctx *ctx, void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    uint32_t nc = *cap ? *cap * 2 : 8;
    void *p = pure_mem_alloc(&ctx->alloc, nc * elem);
    if (!p)
        return PURE_ENOMEM;
    if (*arr)
        memcpy(p, *arr, *cap * elem);
    pure_mem_free(&ctx->alloc, *arr, *cap * elem);
    *arr = p;
    *cap = nc;
    return 0;
}
