// gen_data: writes a fixed pseudo-random, semi-compressible file (text-like log records, numbers,
// some binary noise) to argv[1]; 50 MiB by default, or argv[2] MiB. Input for the gzip -9
// benchmark; the same bytes on every run. (A generator, not a benchmark kernel.)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>


static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s OUTPUT-FILE [SIZE-MIB]\n", argv[0]);
        return 2;
    }
    const size_t SIZE = (argc == 3 ? strtoul(argv[2], NULL, 10) : 50) << 20;
    static const char *words[] = {
        "error", "warning", "info", "debug", "request", "response", "user", "session",
        "timeout", "connection", "database", "query", "cache", "miss", "hit", "the", "a",
        "of", "to", "and", "in", "is", "for", "on", "with", "translation", "block", "shadow",
    };
    const size_t nwords = sizeof words / sizeof *words;
    unsigned char *buf = malloc(SIZE);
    if (!buf) {
        perror("malloc");
        return 1;
    }
    size_t i = 0;
    unsigned long line = 0;
    while (i < SIZE) {
        char rec[512];
        int len;
        uint32_t r = next();
        if (r % 40 == 0) {
            /* a run of binary noise */
            size_t n = 16 + r % 200;
            for (size_t k = 0; k < n && i < SIZE; k++)
                buf[i++] = (unsigned char)next();
            continue;
        }
        len = snprintf(rec, sizeof rec, "%08lu %02u:%02u:%02u [%s] ", line++, r % 24,
                       (r >> 5) % 60, (r >> 11) % 60, words[(r >> 17) % 4]);
        int nw = 3 + (int)(next() % 12);
        for (int w = 0; w < nw && len < 400; w++) {
            uint32_t q = next();
            if (q % 6 == 0)
                len += snprintf(rec + len, sizeof rec - (size_t)len, "id=%u ", q >> 12);
            else
                len += snprintf(rec + len, sizeof rec - (size_t)len, "%s ",
                                words[(q >> 8) % nwords]);
        }
        rec[len++] = '\n';
        for (int k = 0; k < len && i < SIZE; k++)
            buf[i++] = (unsigned char)rec[k];
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(buf, 1, SIZE, f) != SIZE || fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    free(buf);
    return 0;
}
