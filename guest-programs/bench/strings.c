// strings: string-processing workload dominated by glibc's vectorized routines (strlen, strchr,
// strrchr, memchr, memcmp, strcmp, memcpy, memmove, memset, strstr) over strings of many sizes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLINES 4000
#define ROUNDS 2500

static uint32_t rng = 0x12345678u;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static size_t pick_len(void)
{
    uint32_t r = next();
    switch (r % 8) {
    case 0: return r >> 8 & 7;               /* tiny */
    case 1: case 2: return 8 + (r >> 8) % 56;
    case 3: case 4: return 64 + (r >> 8) % 192;
    case 5: case 6: return 256 + (r >> 8) % 768;
    default: return 1024 + (r >> 8) % 3072;
    }
}

int main(void)
{
    static const char alphabet[] = "etaoinshrdlcumwfgypbvkjxqz     ETAOIN.,;:-0123456789";
    char **lines = malloc(NLINES * sizeof *lines);
    size_t *lens = malloc(NLINES * sizeof *lens);
    size_t total = 0;
    for (int i = 0; i < NLINES; i++) {
        size_t len = pick_len();
        lines[i] = malloc(len + 1);
        for (size_t k = 0; k < len; k++)
            lines[i][k] = alphabet[next() % (sizeof alphabet - 1)];
        lines[i][len] = 0;
        /* plant some needles */
        if (len > 20 && next() % 4 == 0)
            memcpy(lines[i] + next() % (len - 12), "needle-xyz", 10);
        lens[i] = len;
        total += len;
    }

    char *buf = malloc(8192), *buf2 = malloc(8192);
    uint64_t check = 0;
    static const char *needles[] = { "needle-xyz", "the", "qz", "ETAOIN", "0123", "zzzz" };
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t s = 0;
        for (int i = 0; i < NLINES; i++) {
            const char *l = lines[i];
            size_t len = strlen(l);
            s += len;
            const char *c = strchr(l, alphabet[(i + round) % 26]);
            s += c ? (size_t)(c - l) : 7;
            const char *r = strrchr(l, 'e');
            s += r ? (size_t)(r - l) : 3;
            const void *m = memchr(l, ':', len);
            s += m ? (size_t)((const char *)m - l) : 5;

            /* copy with varying alignment, compare with the neighbour */
            size_t off = (size_t)(i + round) & 63;
            memcpy(buf + off, l, len + 1);
            const char *other = lines[(i + 1) % NLINES];
            size_t ml = len < lens[(i + 1) % NLINES] ? len : lens[(i + 1) % NLINES];
            int cmp = memcmp(buf + off, other, ml);
            s += (size_t)((cmp > 0) - (cmp < 0) + 1);
            s += (size_t)(strcmp(buf + off, l) == 0);

            if (len > 16) {
                memmove(buf + off + 3, buf + off, len - 3);
                s += (unsigned char)buf[off + len / 2];
            }
            memset(buf2 + off, (int)(len & 0x7f), len);
            s += (unsigned char)buf2[off + len / 3];

            if ((i & 3) == 0) {
                const char *f = strstr(l, needles[(i >> 2) % 6]);
                s += f ? (size_t)(f - l) + 1 : 0;
            }
        }
        check = check * 1099511628211ull + s;
    }
    printf("strings: lines=%d bytes=%zu rounds=%d checksum=%016llx\n", NLINES, total, ROUNDS,
           (unsigned long long)check);
    for (int i = 0; i < NLINES; i++)
        free(lines[i]);
    free(lines);
    free(lens);
    free(buf);
    free(buf2);
    return 0;
}
