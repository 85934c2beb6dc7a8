// sort: glibc qsort (comparator called through a function pointer) and a hand-written merge sort
// on millions of pseudo-random ints; verifies order and prints a checksum.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (2u << 20)
#define ROUNDS 3

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void insertion_sort(int *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int v = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* Top-down merge sort with an insertion-sort cutoff, ping-ponging between a and tmp. */
static void merge_sort(int *a, int *tmp, size_t n)
{
    if (n <= 24) {
        insertion_sort(a, n);
        return;
    }
    size_t mid = n / 2;
    merge_sort(a, tmp, mid);
    merge_sort(a + mid, tmp, n - mid);
    if (a[mid - 1] <= a[mid])
        return;
    memcpy(tmp, a, mid * sizeof *a);
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < n)
        a[k++] = tmp[i] <= a[j] ? tmp[i++] : a[j++];
    while (i < mid)
        a[k++] = tmp[i++];
}

static uint64_t digest(const int *a, size_t n, int *sorted_ok)
{
    uint64_t h = 1469598103934665603ull;
    *sorted_ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (i && a[i - 1] > a[i])
            *sorted_ok = 0;
        if (i % 97 == 0)
            h = (h ^ (uint32_t)a[i]) * 1099511628211ull;
    }
    return h;
}

int main(void)
{
    int *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *tmp = malloc(N * sizeof *tmp);
    uint64_t check = 0;
    int ok = 1;
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < N; i++)
            a[i] = (int)(next() % 100000000u) - 50000000; /* many distinct, some duplicates */
        memcpy(b, a, N * sizeof *a);

        qsort(a, N, sizeof *a, cmp_int);
        merge_sort(b, tmp, N);

        int s1, s2;
        check = check * 31 + digest(a, N, &s1);
        check = check * 31 + digest(b, N, &s2);
        ok &= s1 && s2 && memcmp(a, b, N * sizeof *a) == 0;

        /* Re-sort nearly sorted data (reverse runs) with both. */
        for (size_t i = 0; i + 64 <= N; i += 4096)
            for (size_t l = 0, r = 63; l < r; l++, r--) {
                int t = a[i + l];
                a[i + l] = a[i + r];
                a[i + r] = t;
            }
        memcpy(b, a, N * sizeof *a);
        qsort(a, N, sizeof *a, cmp_int);
        merge_sort(b, tmp, N);
        check = check * 31 + digest(a, N, &s1) + digest(b, N, &s2);
        ok &= s1 && s2;
    }
    printf("sort: n=%u rounds=%d ok=%d checksum=%016llx\n", N, ROUNDS, ok,
           (unsigned long long)check);
    free(a);
    free(b);
    free(tmp);
    return !ok;
}
