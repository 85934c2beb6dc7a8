// vecstate: vector registers (ymm upper halves in use, and SSE code with them in their initial
// state), a rounding mode set in MXCSR and x87 registers, each kept across many basic blocks.
// Under `--tool=count --callout-bench=full|light` a call-out runs at every block start: the
// output must be the native one (tests/tools.rs, issue 30's cheaper full call-out).
#include <immintrin.h>
#include <stdio.h>

__attribute__((noinline)) static unsigned long avx2(unsigned long n) {
    __m256i a = _mm256_set_epi64x(1, 2, 3, 4), b = _mm256_set_epi64x(5, 6, 7, 8);
    unsigned long k = 0;
    for (unsigned long i = 0; i < n; i++) {
        a = _mm256_add_epi64(a, b);
        if (i % 3 == 0) // a block boundary inside the loop
            b = _mm256_xor_si256(b, a);
        __asm__ volatile("" : "+x"(a), "+x"(b));
        k += i & 1;
    }
    __m256i s = _mm256_add_epi64(a, b);
    return (unsigned long)_mm256_extract_epi64(s, 0) ^ (unsigned long)_mm256_extract_epi64(s, 3) ^ k;
}

__attribute__((noinline, target("no-avx"))) static double sse(unsigned long n) {
    double x = 1.0, y = 0.1;
    for (unsigned long i = 0; i < n; i++) {
        x = x * 1.0000001 + y;
        if (i % 5 == 0)
            y = y / 3.0;
        __asm__ volatile("" : "+x"(x), "+x"(y));
    }
    return x + y;
}

__attribute__((noinline)) static long double x87(unsigned long n) {
    long double x = 1.0L, y = 3.0L;
    for (unsigned long i = 0; i < n; i++) {
        x = x * 1.0000001L + 1.0L / y;
        if (i % 7 == 0)
            y += 1.0L;
        __asm__ volatile("" : "+t"(x));
    }
    return x;
}

int main(void) {
    unsigned long n = 100000;
    printf("avx2 %lx\n", avx2(n));
    printf("sse %.17g\n", sse(n));
    unsigned csr = _mm_getcsr();
    _mm_setcsr((csr & ~0x6000u) | 0x4000u); // round up
    double up = sse(n);
    _mm_setcsr(csr);
    printf("sse up %.17g\n", up);
    printf("x87 %.21Lg\n", x87(n));
    return 0;
}
