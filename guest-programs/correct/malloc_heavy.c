// malloc_heavy: many malloc/calloc/realloc/free of varied sizes incl. large mmap'd blocks and
// aligned allocations; every block is filled with a pattern and verified before it is freed.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 2048

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct slot {
    unsigned char *p;
    size_t size;
    unsigned char tag;
};
static struct slot slots[SLOTS];
static unsigned long errors, checksum;

static size_t pick_size(void)
{
    uint64_t r = next();
    switch (r % 16) {
    case 0: return 0;
    case 1: return 1 + (r >> 8) % 8;                        /* tiny */
    case 2: case 3: case 4: case 5: case 6: return 8 + (r >> 8) % 120;
    case 7: case 8: case 9: return 128 + (r >> 8) % 2000;
    case 10: case 11: return 2048 + (r >> 8) % 30000;
    case 12: return 32768 + (r >> 8) % 100000;
    case 13: return 140000 + (r >> 8) % 300000;             /* above the mmap threshold */
    default: return 16 + (r >> 8) % 500;
    }
}

static void fill(struct slot *s)
{
    for (size_t i = 0; i < s->size; i++)
        s->p[i] = (unsigned char)(s->tag + i * 7);
}

static void verify(const struct slot *s, size_t upto)
{
    for (size_t i = 0; i < upto; i++)
        if (s->p[i] != (unsigned char)(s->tag + i * 7)) {
            errors++;
            return;
        }
    if (upto)
        checksum = checksum * 1000003 + s->p[upto / 2] + upto;
}

int main(void)
{
    unsigned long allocs = 0, reallocs = 0, frees = 0, large = 0;
    for (int iter = 0; iter < 20000; iter++) {
        struct slot *s = &slots[next() % SLOTS];
        uint64_t op = next() % 10;
        if (!s->p) {
            s->size = pick_size();
            s->tag = (unsigned char)next();
            if (op < 2) {
                s->p = calloc(1, s->size ? s->size : 1);
                for (size_t i = 0; i < s->size; i++)
                    if (s->p[i]) {
                        errors++;
                        break;
                    }
            } else if (op < 3) {
                size_t align = (size_t)16 << (next() % 8); /* 16 .. 2048 */
                void *p = NULL;
                if (posix_memalign(&p, align, s->size ? s->size : 1) != 0)
                    p = NULL;
                if ((uintptr_t)p % align)
                    errors++;
                s->p = p;
            } else {
                s->p = malloc(s->size ? s->size : 1);
            }
            if (!s->p) {
                printf("allocation of %zu failed\n", s->size);
                return 1;
            }
            large += s->size >= 128 * 1024;
            allocs++;
            fill(s);
        } else if (op < 4) {
            size_t nsize = pick_size();
            verify(s, s->size);
            unsigned char *np = realloc(s->p, nsize ? nsize : 1);
            if (!np) {
                printf("realloc to %zu failed\n", nsize);
                return 1;
            }
            s->p = np;
            verify(s, nsize < s->size ? nsize : s->size); /* contents kept up to the old size */
            s->size = nsize;
            fill(s);
            reallocs++;
        } else {
            verify(s, s->size);
            free(s->p);
            s->p = NULL;
            frees++;
        }
    }
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].p) {
            verify(&slots[i], slots[i].size);
            free(slots[i].p);
            frees++;
        }

    /* Grow one block by doubling through realloc up to 64 MiB (mremap path for big blocks). */
    size_t sz = 16;
    unsigned char *big = malloc(sz);
    memset(big, 0xAB, sz);
    while (sz < (64u << 20)) {
        big = realloc(big, sz * 2);
        memset(big + sz, (int)(sz & 0xff), sz);
        sz *= 2;
    }
    unsigned long bsum = 0;
    for (size_t i = 0; i < sz; i += 4093)
        bsum += big[i];
    free(big);

    /* A linked list of small nodes, freed in a different order than allocated. */
    struct node { struct node *next; long v; } *head = NULL;
    for (long i = 0; i < 100000; i++) {
        struct node *n = malloc(sizeof *n);
        n->v = i;
        n->next = head;
        head = n;
    }
    long lsum = 0;
    while (head) {
        struct node *n = head;
        head = n->next;
        lsum += n->v;
        free(n);
    }

    void *aa = aligned_alloc(4096, 4096 * 3);
    int aligned_ok = ((uintptr_t)aa % 4096) == 0;
    free(aa);

    printf("allocs=%lu reallocs=%lu frees=%lu large=%lu\n", allocs, reallocs, frees, large);
    printf("errors=%lu checksum=%016lx\n", errors, checksum);
    printf("doubling realloc: size=%zu sum=%lu\n", sz, bsum);
    printf("list sum=%ld aligned_alloc ok=%d\n", lsum, aligned_ok);
    return errors != 0;
}
