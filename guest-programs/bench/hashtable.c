// hashtable: open-addressing (linear probing, backward-shift deletion) hash table with 64-bit keys:
// bulk inserts, hit/miss lookups and deletes; prints counts and a checksum.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BITS 21
#define CAP (1u << BITS)
#define MASK (CAP - 1)
#define EMPTY 0ull
#define ROUNDS 6

struct entry {
    uint64_t key; /* 0 = empty */
    uint64_t value;
};

static struct entry *table;
static size_t count;

static inline uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static int insert(uint64_t key, uint64_t value)
{
    size_t i = mix(key) & MASK;
    while (table[i].key != EMPTY) {
        if (table[i].key == key) {
            table[i].value = value;
            return 0;
        }
        i = (i + 1) & MASK;
    }
    table[i].key = key;
    table[i].value = value;
    count++;
    return 1;
}

static struct entry *lookup(uint64_t key)
{
    size_t i = mix(key) & MASK;
    while (table[i].key != EMPTY) {
        if (table[i].key == key)
            return &table[i];
        i = (i + 1) & MASK;
    }
    return NULL;
}

static int erase(uint64_t key)
{
    size_t i = mix(key) & MASK;
    while (table[i].key != key) {
        if (table[i].key == EMPTY)
            return 0;
        i = (i + 1) & MASK;
    }
    /* Backward-shift: move later entries of the cluster into the hole when allowed. */
    size_t hole = i;
    for (size_t j = (i + 1) & MASK; table[j].key != EMPTY; j = (j + 1) & MASK) {
        size_t home = mix(table[j].key) & MASK;
        if (((j - home) & MASK) >= ((j - hole) & MASK)) {
            table[hole] = table[j];
            hole = j;
        }
    }
    table[hole].key = EMPTY;
    table[hole].value = 0;
    count--;
    return 1;
}

static uint64_t key_of(uint64_t i)
{
    return mix(i * 0x9e3779b97f4a7c15ull + 12345) | 1; /* never the empty key */
}

int main(void)
{
    table = calloc(CAP, sizeof *table);
    uint64_t check = 0, hits = 0, misses = 0, deleted = 0;
    const uint64_t n = CAP / 2 + CAP / 8; /* ~62% load */
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t base = (uint64_t)round * n / 2;
        for (uint64_t i = 0; i < n; i++)
            insert(key_of(base + i), i ^ (uint64_t)round);
        /* lookups: half present, half absent */
        for (uint64_t i = 0; i < n; i++) {
            struct entry *e = lookup(key_of(base + i / 2 + (i & 1) * 3 * n));
            if (e) {
                hits++;
                check = (check ^ e->value) * 0x100000001b3ull;
            } else {
                misses++;
            }
        }
        /* delete every third key, then re-insert some */
        for (uint64_t i = 0; i < n; i += 3)
            deleted += (uint64_t)erase(key_of(base + i));
        for (uint64_t i = 0; i < n; i += 6)
            insert(key_of(base + i), i * 7);
        check = (check ^ count) * 0x100000001b3ull;
        /* drop everything from this round before the next */
        for (uint64_t i = 0; i < n; i++)
            deleted += (uint64_t)erase(key_of(base + i));
    }
    printf("hashtable: hits=%llu misses=%llu deleted=%llu left=%zu checksum=%016llx\n",
           (unsigned long long)hits, (unsigned long long)misses, (unsigned long long)deleted,
           count, (unsigned long long)check);
    free(table);
    return 0;
}
