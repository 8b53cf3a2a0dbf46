/* SPDX-License-Identifier: MIT */
/* timerheap_test.c: the min-heap of items by deadline (timerheap.c): the edge cases, allocation
 * failure, and a randomized run of set, move, remove and pop against a reference array, checking
 * the minimum, the heap order and every item's back-pointer position after each operation. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "support/talloc.h"
#include "test.h"
#include "timerheap.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

typedef struct item {
    uint32_t pos;
    int id;
    uint64_t deadline;
} item;

static void init(pure_timerheap *h)
{
    pure_timerheap_init(h, offsetof(item, deadline), offsetof(item, pos));
}

static void init_items(item *it, int n)
{
    for (int i = 0; i < n; i++) {
        it[i].pos = PURE_TIMERHEAP_NONE;
        it[i].id = i;
        it[i].deadline = UINT64_MAX;
    }
}

/* Heap order holds by key, every key is at most its item's deadline (equal unless the deadline
 * moved later since) and every item held knows its position. */
static int well_formed(const pure_timerheap *h)
{
    for (uint32_t i = 0; i < h->len; i++) {
        const item *x = h->slot[i].item;
        if (x->pos != i || x->deadline == UINT64_MAX || h->slot[i].key > x->deadline)
            return 0;
        if (i && h->slot[(i - 1) / 2].key > h->slot[i].key)
            return 0;
    }
    return h->len <= h->cap;
}

/* A deadline moved later is not sifted at once: its entry stays where it was, with its old key,
 * until it surfaces; then min and pop_due put it right and answer exactly. */
static void test_later_is_lazy(void)
{
    pure_timerheap h;
    init(&h);
    item it[3];
    init_items(it, 3);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 10), 0);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[1], 20), 0);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[2], 40), 0);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 30), 0); /* later: not moved */
    CHECK(h.slot[0].item == &it[0] && h.slot[0].key == 10 && it[0].deadline == 30);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 50), 0); /* later again: still not moved */
    CHECK(h.slot[0].item == &it[0] && h.slot[0].key == 10);
    CHECK(well_formed(&h));
    CHECK_EQ(pure_timerheap_min(&h), 20); /* surfaced: settled, then the true minimum */
    CHECK(h.slot[0].item == &it[1] && it[0].pos != 0 && h.slot[it[0].pos].key == 50);
    CHECK(pure_timerheap_pop_due(&h, 45) == &it[1]);
    CHECK(pure_timerheap_pop_due(&h, 45) == &it[2]);
    CHECK(pure_timerheap_pop_due(&h, 45) == NULL);      /* it[0] is due at 50, not 10 */
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 5), 0); /* earlier: sifted at once */
    CHECK(h.slot[0].item == &it[0] && h.slot[0].key == 5);
    CHECK(pure_timerheap_pop_due(&h, 5) == &it[0] && it[0].deadline == UINT64_MAX);
    CHECK_EQ(h.len, 0);
    pure_timerheap_free(&h, &A);
}

static void test_empty(void)
{
    pure_timerheap h;
    init(&h);
    CHECK(pure_timerheap_min(&h) == UINT64_MAX);
    CHECK(pure_timerheap_pop_due(&h, UINT64_MAX) == NULL);
    item x;
    init_items(&x, 1);
    CHECK_EQ(pure_timerheap_set(&h, &A, &x, UINT64_MAX), 0); /* off already: nothing to do */
    CHECK_EQ(h.len, 0);
    CHECK_EQ(h.cap, 0);
    pure_timerheap_free(&h, &A);
    CHECK_EQ(t_live, 0);
}

static void test_basic(void)
{
    pure_timerheap h;
    init(&h);
    item it[3];
    init_items(it, 3);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 30), 0);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[1], 10), 0);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[2], 20), 0);
    CHECK(pure_timerheap_min(&h) == 10);
    CHECK(well_formed(&h));
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 5), 0); /* moved earlier */
    CHECK(pure_timerheap_min(&h) == 5);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 50), 0); /* moved later */
    CHECK(pure_timerheap_min(&h) == 10);
    CHECK(pure_timerheap_pop_due(&h, 9) == NULL);
    CHECK(pure_timerheap_pop_due(&h, 10) == &it[1]); /* due exactly at now */
    CHECK(it[1].pos == PURE_TIMERHEAP_NONE && it[1].deadline == UINT64_MAX);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[2], UINT64_MAX), 0); /* removed */
    CHECK(it[2].pos == PURE_TIMERHEAP_NONE);
    CHECK_EQ(h.len, 1);
    CHECK(pure_timerheap_pop_due(&h, UINT64_MAX - 1) == &it[0]);
    CHECK(pure_timerheap_pop_due(&h, UINT64_MAX) == NULL);
    /* equal deadlines: both come out */
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 7), 0);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[1], 7), 0);
    CHECK(pure_timerheap_pop_due(&h, 7) != NULL);
    CHECK(pure_timerheap_pop_due(&h, 7) != NULL);
    CHECK_EQ(h.len, 0);
    pure_timerheap_free(&h, &A);
    CHECK_EQ(t_live, 0);
}

static void test_enomem(void)
{
    pure_timerheap h;
    init(&h);
    item it[9];
    init_items(it, 9);
    t_fail = 1;
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[0], 1), PURE_ENOMEM);
    CHECK(it[0].pos == PURE_TIMERHEAP_NONE && it[0].deadline == UINT64_MAX);
    t_fail = 0;
    for (int i = 0; i < 8; i++)
        CHECK_EQ(pure_timerheap_set(&h, &A, &it[i], (uint64_t)(100 - i)), 0);
    CHECK_EQ(h.cap, 8);
    t_fail = 1;
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[8], 1), PURE_ENOMEM); /* a new item needs growth */
    CHECK(it[8].pos == PURE_TIMERHEAP_NONE && it[8].deadline == UINT64_MAX);
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[3], 1), 0); /* moving one held needs none */
    CHECK_EQ(pure_timerheap_set(&h, &A, &it[4], UINT64_MAX), 0);
    t_fail = 0;
    CHECK(pure_timerheap_min(&h) == 1);
    CHECK(well_formed(&h));
    pure_timerheap_free(&h, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

/* ---- randomized run against a reference array of deadlines ---- */

#define N_ITEMS 200

static void test_model(void)
{
    static item it[N_ITEMS];
    static uint64_t ref[N_ITEMS]; /* UINT64_MAX: off the heap */
    pure_timerheap h;
    init(&h);
    init_items(it, N_ITEMS);
    for (int i = 0; i < N_ITEMS; i++)
        ref[i] = UINT64_MAX;
    srand(7);
    uint64_t now = 0;
    int bad_min = 0, bad_shape = 0, bad_item = 0, bad_pop = 0;
    for (int op = 0; op < 50000; op++) {
        int i = rand() % N_ITEMS, r = rand() % 10;
        /* deadlines in a narrow window, so equal keys are common */
        uint64_t d = now + (uint64_t)(rand() % 64);
        if (r < 6) { /* set: on, or moved earlier, later or to the same deadline */
            CHECK_EQ(pure_timerheap_set(&h, &A, &it[i], d), 0);
            ref[i] = d;
        } else if (r < 8) { /* remove (held or not) */
            CHECK_EQ(pure_timerheap_set(&h, &A, &it[i], UINT64_MAX), 0);
            ref[i] = UINT64_MAX;
        } else { /* time passes: pop everything due, exactly the items the reference says */
            now += (uint64_t)(rand() % 16);
            uint64_t last = 0;
            for (item *x; (x = pure_timerheap_pop_due(&h, now)) != NULL;) {
                if (ref[x->id] > now || ref[x->id] < last || x->deadline != UINT64_MAX ||
                    x->pos != PURE_TIMERHEAP_NONE)
                    bad_pop++;
                last = ref[x->id];
                ref[x->id] = UINT64_MAX;
            }
            for (int k = 0; k < N_ITEMS; k++)
                if (ref[k] <= now)
                    bad_pop++; /* due, but left behind */
        }
        uint64_t min = UINT64_MAX;
        uint32_t n = 0;
        for (int k = 0; k < N_ITEMS; k++) {
            if (ref[k] < min)
                min = ref[k];
            if (ref[k] != UINT64_MAX) {
                n++;
                if (it[k].pos >= h.len || h.slot[it[k].pos].item != &it[k] ||
                    it[k].deadline != ref[k])
                    bad_item++;
            } else if (it[k].pos != PURE_TIMERHEAP_NONE) {
                bad_item++;
            }
        }
        if (pure_timerheap_min(&h) != min)
            bad_min++;
        if (!well_formed(&h) || h.len != n)
            bad_shape++;
    }
    CHECK_EQ(bad_min, 0);
    CHECK_EQ(bad_shape, 0);
    CHECK_EQ(bad_item, 0);
    CHECK_EQ(bad_pop, 0);
    pure_timerheap_free(&h, &A);
    CHECK_EQ(t_live, 0);
}

int main(void)
{
    RUN(test_empty);
    RUN(test_later_is_lazy);
    RUN(test_basic);
    RUN(test_enomem);
    RUN(test_model);
    return pure_test_finish();
}
