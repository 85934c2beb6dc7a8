// compress: LZ77 (hash-chain matcher) compression and decompression of generated,
// semi-compressible data, repeated for several rounds; prints sizes and a checksum.
// With an argument, the data is instead the first 4 MiB read from that file (`-`: standard
// input; generated data fills what it lacks), the same in every round: benches/live-load.sh
// runs it so under `--tool=taint --taint-input=stdin`, every byte compressed an input byte.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_SIZE (4u << 20)
#define ROUNDS 16
#define HASH_BITS 15
#define WINDOW (1u << 16)
#define MIN_MATCH 4
#define MAX_MATCH 258
#define MAX_CHAIN 48

static uint32_t rng = 2463534242u;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Text-like data: words from a small vocabulary, numbers, and occasional random bytes. */
static void generate(uint8_t *p, size_t n)
{
    static const char *words[] = { "the ", "quick ", "brown ", "fox ", "jumps ", "over ",
                                   "lazy ", "dog ", "compression ", "binary ", "translation ",
                                   "register ", "memory ", "shadow ", "block ", "cache ",
                                   "\n", ", ", ". ", "value=" };
    size_t i = 0;
    while (i < n) {
        uint32_t r = next();
        if (r % 50 == 0) {
            for (int k = 0; k < 8 && i < n; k++)
                p[i++] = (uint8_t)next();
        } else if (r % 7 == 0) {
            char num[16];
            int len = snprintf(num, sizeof num, "%u ", (r >> 8) % 100000);
            for (int k = 0; k < len && i < n; k++)
                p[i++] = (uint8_t)num[k];
        } else {
            const char *w = words[(r >> 8) % (sizeof words / sizeof *words)];
            while (*w && i < n)
                p[i++] = (uint8_t)*w++;
        }
    }
}

static inline uint32_t hash4(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return (v * 2654435761u) >> (32 - HASH_BITS);
}

/* Output format: a flag byte for every 8 items; literal = 1 byte, match = 3 bytes
 * (16-bit distance, length - MIN_MATCH as one byte, lengths up to 259). */
static size_t compress(const uint8_t *in, size_t n, uint8_t *out, int32_t *head, int32_t *prev)
{
    for (size_t i = 0; i < (1u << HASH_BITS); i++)
        head[i] = -1;
    size_t o = 0, i = 0;
    size_t flag_pos = o++;
    int nitems = 0;
    uint8_t flags = 0;
    while (i < n) {
        size_t best_len = 0, best_dist = 0;
        if (i + MIN_MATCH <= n) {
            uint32_t h = hash4(in + i);
            int32_t cand = head[h];
            int chain = MAX_CHAIN;
            size_t limit = n - i < MAX_MATCH ? n - i : MAX_MATCH;
            while (cand >= 0 && i - (size_t)cand < WINDOW && chain--) {
                const uint8_t *a = in + cand, *b = in + i;
                if (a[best_len] == b[best_len]) {
                    size_t l = 0;
                    while (l < limit && a[l] == b[l])
                        l++;
                    if (l > best_len) {
                        best_len = l;
                        best_dist = i - (size_t)cand;
                        if (l == limit)
                            break;
                    }
                }
                cand = prev[cand & (WINDOW - 1)];
            }
            prev[i & (WINDOW - 1)] = head[h];
            head[h] = (int32_t)i;
        }
        if (best_len >= MIN_MATCH) {
            flags |= (uint8_t)(1u << nitems);
            out[o++] = (uint8_t)best_dist;
            out[o++] = (uint8_t)(best_dist >> 8);
            out[o++] = (uint8_t)(best_len - MIN_MATCH);
            /* insert the skipped positions into the hash chains */
            for (size_t k = 1; k < best_len; k++) {
                size_t j = i + k;
                if (j + MIN_MATCH <= n) {
                    uint32_t h = hash4(in + j);
                    prev[j & (WINDOW - 1)] = head[h];
                    head[h] = (int32_t)j;
                }
            }
            i += best_len;
        } else {
            out[o++] = in[i++];
        }
        if (++nitems == 8) {
            out[flag_pos] = flags;
            flag_pos = o++;
            nitems = 0;
            flags = 0;
        }
    }
    out[flag_pos] = flags;
    return o;
}

static size_t decompress(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t flags = in[i++];
        for (int k = 0; k < 8 && i < n; k++) {
            if (flags & (1u << k)) {
                size_t dist = in[i] | (size_t)in[i + 1] << 8;
                size_t len = (size_t)in[i + 2] + MIN_MATCH;
                i += 3;
                const uint8_t *src = out + o - dist;
                for (size_t l = 0; l < len; l++)
                    out[o + l] = src[l];
                o += len;
            } else {
                out[o++] = in[i++];
            }
        }
    }
    return o;
}

int main(int argc, char **argv)
{
    uint8_t *data = malloc(DATA_SIZE);
    size_t given = 0;
    if (argc > 1) {
        FILE *f = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "rb");
        if (!f) {
            perror(argv[1]);
            return 1;
        }
        given = fread(data, 1, DATA_SIZE, f);
        generate(data + given, DATA_SIZE - given);
    }
    uint8_t *comp = malloc(DATA_SIZE + DATA_SIZE / 8 + 16);
    uint8_t *back = malloc(DATA_SIZE + MAX_MATCH);
    int32_t *head = malloc(sizeof(int32_t) << HASH_BITS);
    int32_t *prev = malloc(sizeof(int32_t) * WINDOW);
    uint64_t check = 0;
    size_t total_in = 0, total_out = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (argc < 2)
            generate(data, DATA_SIZE);
        size_t clen = compress(data, DATA_SIZE, comp, head, prev);
        size_t dlen = decompress(comp, clen, back);
        if (dlen != DATA_SIZE || memcmp(data, back, DATA_SIZE) != 0) {
            printf("round %d: roundtrip FAILED\n", round);
            return 1;
        }
        for (size_t i = 0; i < clen; i += 7)
            check = check * 1099511628211ull + comp[i];
        total_in += DATA_SIZE;
        total_out += clen;
    }
    printf("compress: in=%zu out=%zu ratio=%.4f checksum=%016llx\n", total_in, total_out,
           (double)total_out / (double)total_in, (unsigned long long)check);
    free(data);
    free(comp);
    free(back);
    free(head);
    free(prev);
    return 0;
}
