/* SPDX-License-Identifier: MIT */
/* table_test.c: the hash table of pointers (table.c): the edge cases, allocation failure, and a
 * randomized run against a reference array, on a weak hash that forces long probe runs, wrap
 * around the table's end, deletion in the middle of a run, duplicate keys and growth. */
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "support/talloc.h"
#include "table.h"
#include "test.h"

static const pure_alloc A = {t_alloc, t_free, NULL, NULL};

typedef struct item {
    uint64_t key;
    int id;
} item;

static uint64_t key_of(const void *p)
{
    return ((const item *)p)->key;
}
/* a hash that keeps the key as is: tests place items in chosen slots */
static uint32_t ident(uint64_t k)
{
    return (uint32_t)k;
}
/* a weak hash: 16 home slots only, so runs are long and cross the table's end */
static uint32_t weak(uint64_t k)
{
    return (uint32_t)(k % 16) * 4 + 40;
}
static uint32_t mix(uint64_t k)
{
    return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Every held item sits in its probe run: no empty slot between its home and its slot. */
static int runs_unbroken(const pure_table *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->slot[i])
            continue;
        n++;
        for (uint32_t j = t->hash(t->key_of(t->slot[i])) & (t->cap - 1); j != i;
             j = (j + 1) & (t->cap - 1))
            if (!t->slot[j])
                return 0;
    }
    return n == t->used && (t->cap == 0 || t->used * 2 <= t->cap);
}

static void test_empty(void)
{
    pure_table t;
    pure_table_init(&t, key_of, ident);
    item x = {5, 1};
    CHECK(pure_table_find(&t, 5, NULL, NULL) == NULL);
    CHECK_EQ(pure_table_remove(&t, &x), 0);
    pure_table_free(&t, &A);
    CHECK_EQ(t.cap, 0);
    CHECK_EQ(t_live, 0);
}

static void test_wrap_and_middle_delete(void)
{
    pure_table t;
    pure_table_init(&t, key_of, ident);
    /* four items homed at the last two slots of 64: the run wraps to slots 0 and 1 */
    item it[4] = {{62, 0}, {63, 1}, {62 + 64, 2}, {63 + 64, 3}};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pure_table_add(&t, &A, &it[i]), 0);
    CHECK_EQ(t.cap, 64);
    CHECK(t.slot[62] == &it[0] && t.slot[63] == &it[1] && t.slot[0] == &it[2] &&
          t.slot[1] == &it[3]);
    /* deleting the head of the run moves the wrapped items back across the end */
    CHECK_EQ(pure_table_remove(&t, &it[0]), 1);
    CHECK(t.slot[62] == &it[2] && t.slot[63] == &it[1] && t.slot[0] == &it[3] && !t.slot[1]);
    for (int i = 1; i < 4; i++)
        CHECK(pure_table_find(&t, it[i].key, NULL, NULL) == &it[i]);
    CHECK(pure_table_find(&t, 62, NULL, NULL) == NULL);
    CHECK(runs_unbroken(&t));
    /* an item after the run's gap, homed before it, is still found: remove the middle */
    CHECK_EQ(pure_table_remove(&t, &it[1]), 1);
    CHECK(pure_table_find(&t, it[3].key, NULL, NULL) == &it[3]);
    CHECK(pure_table_find(&t, it[2].key, NULL, NULL) == &it[2]);
    CHECK(runs_unbroken(&t));
    CHECK_EQ(pure_table_remove(&t, &it[1]), 0); /* not held any more */
    CHECK_EQ(t.used, 2);
    /* an item homed in the run but not displaced stays where it is */
    item z = {0, 9};
    CHECK_EQ(pure_table_add(&t, &A, &z), 0);
    CHECK(pure_table_find(&t, 0, NULL, NULL) == &z);
    CHECK(runs_unbroken(&t));
    pure_table_free(&t, &A);
    CHECK_EQ(t_live, 0);
}

static int id_is(const void *p, void *arg)
{
    return ((const item *)p)->id == *(int *)arg;
}

static void test_duplicates_and_match(void)
{
    pure_table t;
    pure_table_init(&t, key_of, mix);
    item it[3] = {{7, 0}, {7, 1}, {7, 2}};
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pure_table_add(&t, &A, &it[i]), 0);
    for (int i = 0; i < 3; i++)
        CHECK(pure_table_find(&t, 7, id_is, &i) == &it[i]);
    int none = 5;
    CHECK(pure_table_find(&t, 7, id_is, &none) == NULL);
    CHECK(pure_table_find(&t, 7, NULL, NULL) == &it[0]);
    CHECK_EQ(pure_table_remove(&t, &it[1]), 1);
    int one = 1, two = 2;
    CHECK(pure_table_find(&t, 7, id_is, &one) == NULL);
    CHECK(pure_table_find(&t, 7, id_is, &two) == &it[2]);
    pure_table_free(&t, &A);
}

static void test_growth_and_enomem(void)
{
    pure_table t;
    pure_table_init(&t, key_of, mix);
    static item it[200];
    t_fail = 1;
    CHECK_EQ(pure_table_add(&t, &A, &it[0]), PURE_ENOMEM);
    CHECK_EQ(t.cap, 0);
    CHECK_EQ(t.used, 0);
    t_fail = 0;
    for (int i = 0; i < 200; i++) {
        it[i].key = (uint64_t)i * 1000003u;
        it[i].id = i;
        if (i == 32) { /* 32 held in 64 slots: the 33rd needs growth, which fails */
            CHECK_EQ(t.cap, 64);
            t_fail = 1;
            CHECK_EQ(pure_table_reserve(&t, &A), PURE_ENOMEM);
            CHECK_EQ(pure_table_add(&t, &A, &it[i]), PURE_ENOMEM);
            t_fail = 0;
            CHECK_EQ(t.used, 32);
            CHECK(pure_table_find(&t, it[31].key, NULL, NULL) == &it[31]);
        }
        CHECK_EQ(pure_table_add(&t, &A, &it[i]), 0);
    }
    CHECK_EQ(t.cap, 512);
    CHECK_EQ(t.used, 200);
    for (int i = 0; i < 200; i++)
        CHECK(pure_table_find(&t, it[i].key, NULL, NULL) == &it[i]);
    CHECK(runs_unbroken(&t));
    CHECK_EQ(pure_table_reserve(&t, &A), 0); /* room already: no allocation */
    CHECK_EQ(t.cap, 512);
    pure_table_free(&t, &A);
    CHECK_EQ(t_live, 0);
    CHECK_EQ(t_size_mismatch, 0);
}

/* ---- randomized run against a reference array ---- */

#define N_ITEMS 300

static void model_run(uint32_t (*hash)(uint64_t), uint64_t key_range, unsigned seed)
{
    static item it[N_ITEMS];
    static int held[N_ITEMS];
    pure_table t;
    pure_table_init(&t, key_of, hash);
    srand(seed);
    memset(held, 0, sizeof held);
    for (int i = 0; i < N_ITEMS; i++) {
        it[i].key = (uint64_t)rand() % key_range;
        it[i].id = i;
    }
    int bad_find = 0, bad_runs = 0;
    for (int op = 0; op < 20000; op++) {
        int i = rand() % N_ITEMS, r = rand() % 8;
        if (r < 4) {
            if (!held[i]) {
                CHECK_EQ(pure_table_add(&t, &A, &it[i]), 0);
                held[i] = 1;
            } else {
                CHECK_EQ(pure_table_remove(&t, &it[i]), 1);
                held[i] = 0;
            }
        } else if (r < 7) {
            CHECK_EQ(pure_table_remove(&t, &it[i]), held[i]);
            held[i] = 0;
        } else { /* re-key a free item: keys come and go as links do */
            if (!held[i])
                it[i].key = (uint64_t)rand() % key_range;
        }
        /* every item held is found (under its own id), no item not held is */
        for (int k = 0; k < N_ITEMS; k++) {
            item *f = pure_table_find(&t, it[k].key, id_is, &it[k].id);
            if ((f == &it[k]) != held[k])
                bad_find++;
        }
        if (!runs_unbroken(&t))
            bad_runs++;
    }
    uint32_t n = 0;
    for (int k = 0; k < N_ITEMS; k++)
        n += (uint32_t)held[k];
    CHECK_EQ(t.used, n);
    CHECK_EQ(bad_find, 0);
    CHECK_EQ(bad_runs, 0);
    pure_table_free(&t, &A);
    CHECK_EQ(t_live, 0);
}

static void test_model_weak_hash(void)
{
    model_run(weak, 1u << 20, 1);
}
static void test_model_few_keys(void)
{
    model_run(mix, 40, 2);
}
static void test_model_mixed(void)
{
    model_run(mix, UINT64_MAX, 3);
}
static void test_model_ident_wrap(void)
{
    model_run(ident, 1u << 16, 4);
}

int main(void)
{
    RUN(test_empty);
    RUN(test_wrap_and_middle_delete);
    RUN(test_duplicates_and_match);
    RUN(test_growth_and_enomem);
    RUN(test_model_weak_hash);
    RUN(test_model_few_keys);
    RUN(test_model_mixed);
    RUN(test_model_ident_wrap);
    return pure_test_finish();
}
