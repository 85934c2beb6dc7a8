// strings: glibc string/memory functions (AVX2/EVEX variants picked by CPUID) over many sizes and
// alignments, overlapping memmove, and strings that end right before an unmapped page.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUF 4096
static unsigned char src[BUF + 128], dst[BUF + 128], ref[BUF + 128];
static unsigned long mismatches, checksum;

static void mix(unsigned long v)
{
    checksum = (checksum ^ v) * 0x100000001b3ul;
}

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (unsigned char)(seed >> 24);
    }
}

static void check(int ok, const char *what, size_t n, size_t al)
{
    if (!ok && mismatches++ < 10)
        printf("MISMATCH %s n=%zu align=%zu\n", what, n, al);
}

static void test_mem(void)
{
    static const size_t sizes[] = { 0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 95,
                                    127, 128, 129, 255, 256, 257, 511, 1000, 1024, 2049, 4000 };
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        for (size_t sa = 0; sa < 64; sa += 3) {
            for (size_t da = 0; da < 64; da += 5) {
                fill(src, sizeof src, (unsigned)(n * 131 + sa));
                memset(dst, 0xEE, sizeof dst);
                memcpy(dst + da, src + sa, n);
                int ok = memcmp(dst + da, src + sa, n) == 0;
                ok &= da == 0 || dst[da - 1] == 0xEE;
                ok &= dst[da + n] == 0xEE;
                check(ok, "memcpy", n, sa * 100 + da);
                mix(dst[da + n / 2]);

                /* memcmp against a byte-wise reference, with one byte changed */
                if (n) {
                    size_t k = (n * 7 + sa) % n;
                    dst[da + k] ^= (unsigned char)(1 + sa);
                    int r = sign(memcmp(dst + da, src + sa, n));
                    int e = dst[da + k] > src[sa + k] ? 1 : -1;
                    check(r == e, "memcmp", n, sa * 100 + da);
                    mix((unsigned long)(r + 1));
                }

                memset(dst + da, (int)(n & 0xff), n);
                int okset = 1;
                for (size_t i = 0; i < n; i++)
                    okset &= dst[da + i] == (unsigned char)n;
                check(okset && dst[da + n] == 0xEE, "memset", n, da);

                /* memchr for a byte placed at a known position */
                if (n) {
                    memset(dst, 0, sizeof dst);
                    size_t pos = (n * 13 + da) % n;
                    dst[da + pos] = 0x5A;
                    check(memchr(dst + da, 0x5A, n) == dst + da + pos, "memchr", n, da);
                    check(memrchr(dst + da, 0x5A, n) == dst + da + pos, "memrchr", n, da);
                }
            }
        }
    }
}

static void test_memmove(void)
{
    for (size_t n = 0; n <= 600; n += (n < 80 ? 1 : 37)) {
        for (long shift = -70; shift <= 70; shift += 7) {
            fill(src, sizeof src, (unsigned)(n + 1000 * (size_t)(shift + 100)));
            memcpy(dst, src, sizeof dst);
            memcpy(ref, src, sizeof ref);
            size_t from = 100, to = (size_t)(100 + shift);
            memmove(dst + to, dst + from, n);
            for (size_t i = 0; i < n; i++) /* reference through a temporary copy */
                ref[to + i] = src[from + i];
            check(memcmp(dst, ref, 1024) == 0, "memmove", n, (size_t)(shift + 100));
            mix(dst[to + n / 3]);
        }
    }
}

static void test_str(void)
{
    char *s = (char *)src, *d = (char *)dst;
    for (size_t len = 0; len < 300; len++) {
        for (size_t al = 0; al < 64; al += 7) {
            memset(src, 0, sizeof src);
            for (size_t i = 0; i < len; i++)
                s[al + i] = (char)('a' + (i * 7 + len) % 26);
            check(strlen(s + al) == len, "strlen", len, al);
            check(strnlen(s + al, len / 2) == len / 2, "strnlen", len, al);

            char c = (char)('a' + (len * 3) % 26);
            char *want = NULL, *wantr = NULL;
            for (size_t i = 0; i < len; i++)
                if (s[al + i] == c) {
                    if (!want)
                        want = s + al + i;
                    wantr = s + al + i;
                }
            check(strchr(s + al, c) == want, "strchr", len, al);
            check(strrchr(s + al, c) == wantr, "strrchr", len, al);
            check(strchr(s + al, 0) == s + al + len, "strchr-nul", len, al);

            memset(dst, 'Z', sizeof dst);
            char *e = stpcpy(d + (al * 3) % 64, s + al);
            check(e == d + (al * 3) % 64 + len && strcmp(d + (al * 3) % 64, s + al) == 0,
                  "stpcpy", len, al);
            strcpy(d + 1, s + al);
            check(strcmp(d + 1, s + al) == 0, "strcpy", len, al);
            if (len) {
                d[1 + len / 2] = (char)(d[1 + len / 2] + 1);
                check(sign(strcmp(d + 1, s + al)) == 1, "strcmp>", len, al);
                check(sign(strncmp(d + 1, s + al, len / 2)) == 0, "strncmp=", len, al);
                check(sign(strcmp(s + al, d + 1)) == -1, "strcmp<", len, al);
            }
            strcat(strcpy(d, "prefix-"), s + al);
            check(strlen(d) == len + 7, "strcat", len, al);
            mix(strlen(d) * 31 + (unsigned char)d[len / 2]);
        }
    }

    /* strstr/memmem with needles found at known positions and absent */
    char hay[2048];
    for (int i = 0; i < 2047; i++)
        hay[i] = (char)('a' + (i * i + i / 3) % 5);
    hay[2047] = 0;
    for (int nl = 1; nl < 40; nl++) {
        for (int pos = 0; pos + nl < 2047; pos += 97) {
            char needle[64];
            memcpy(needle, hay + pos, (size_t)nl);
            needle[nl] = 0;
            char *f = strstr(hay, needle);
            char *naive = NULL;
            for (int i = 0; i + nl <= 2047 && !naive; i++)
                if (memcmp(hay + i, needle, (size_t)nl) == 0)
                    naive = hay + i;
            check(f == naive, "strstr", (size_t)nl, (size_t)pos);
            check(memmem(hay, 2047, needle, (size_t)nl) == naive, "memmem", (size_t)nl,
                  (size_t)pos);
            mix((unsigned long)(f - hay));
        }
        char absent[64];
        memset(absent, 'z', (size_t)nl);
        absent[nl] = 0;
        check(strstr(hay, absent) == NULL, "strstr-absent", (size_t)nl, 0);
    }
    check(strcasecmp("Hello World", "hELLO wORLD") == 0, "strcasecmp", 0, 0);
    check(strspn("abcabcxyz", "abc") == 6 && strcspn("hello, world", ",") == 5, "strspn", 0, 0);
}

/* Strings and buffers that end exactly at the end of a mapping followed by a PROT_NONE page:
   vectorized routines must never fault by reading past the terminator into the next page. */
static void test_page_end(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)(2 * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    mprotect(m + pg, (size_t)pg, PROT_NONE);
    unsigned long total = 0;
    for (int len = 0; len < 200; len++) {
        char *p = m + pg - len - 1;
        memset(p, 'q', (size_t)len);
        p[len] = 0;
        total += strlen(p);
        total += strchr(p, 'x') == NULL;
        total += strrchr(p, 'q') ? (unsigned long)(strrchr(p, 'q') - p) : 0;
        total += (unsigned long)(memchr(m + pg - len, 'x', (size_t)len) == NULL);
        total += (unsigned long)sign(strcmp(p, p));
        char tmp[256];
        strcpy(tmp, p);
        total += strlen(tmp);
        total += (unsigned long)sign(memcmp(m + pg - len, tmp, (size_t)len));
    }
    printf("page-end: total=%lu\n", total);
    munmap(m, (size_t)(2 * pg));
}

int main(void)
{
    test_mem();
    printf("mem*: mismatches=%lu checksum=%016lx\n", mismatches, checksum);
    test_memmove();
    printf("memmove: mismatches=%lu checksum=%016lx\n", mismatches, checksum);
    test_str();
    printf("str*: mismatches=%lu checksum=%016lx\n", mismatches, checksum);
    test_page_end();
    return mismatches != 0;
}
