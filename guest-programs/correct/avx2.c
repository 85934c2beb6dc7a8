// avx2: AVX2 integer ops (add/mullo/shuffle/permute/blend/gather/maskload/maskstore) and FMA loops
// with 256-bit intrinsics, checked against scalar reference results.
// rtgrind-test: cflags=-mavx2 -mfma
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 4096

static int32_t a[N], b[N], c[N], ref[N];
static double x[N], y[N], z[N], zref[N];

static uint64_t hash32(const int32_t *p, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint32_t)p[i]) * 1099511628211ull;
    return h;
}

int main(void)
{
    printf("cpu supports avx2=%d fma=%d\n", __builtin_cpu_supports("avx2") != 0,
           __builtin_cpu_supports("fma") != 0);

    uint32_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        a[i] = (int32_t)(s >> 4);
        s = s * 1103515245u + 12345u;
        b[i] = (int32_t)(s >> 7) - (1 << 23);
    }

    /* 1. c = (a + b) * 3 ^ (a >> 5), vector vs scalar. */
    const __m256i three = _mm256_set1_epi32(3);
    for (int i = 0; i < N; i += 8) {
        __m256i va = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i r = _mm256_mullo_epi32(_mm256_add_epi32(va, vb), three);
        r = _mm256_xor_si256(r, _mm256_srai_epi32(va, 5));
        _mm256_storeu_si256((__m256i *)(c + i), r);
    }
    for (int i = 0; i < N; i++)
        ref[i] = (int32_t)(((uint32_t)a[i] + (uint32_t)b[i]) * 3u) ^ (a[i] >> 5);
    printf("add/mullo/xor/srai: match=%d hash=%016llx\n", memcmp(c, ref, sizeof c) == 0,
           (unsigned long long)hash32(c, N));

    /* 2. Horizontal-ish reductions: min/max/abs/sum with 64-bit accumulation. */
    __m256i vmin = _mm256_set1_epi32(INT32_MAX), vmax = _mm256_set1_epi32(INT32_MIN);
    __m256i vsum = _mm256_setzero_si256();
    for (int i = 0; i < N; i += 8) {
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + i));
        vmin = _mm256_min_epi32(vmin, vb);
        vmax = _mm256_max_epi32(vmax, vb);
        __m256i ab = _mm256_abs_epi32(vb);
        vsum = _mm256_add_epi64(vsum, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(ab)));
        vsum = _mm256_add_epi64(vsum, _mm256_cvtepu32_epi64(_mm256_extracti128_si256(ab, 1)));
    }
    int32_t mn[8], mx[8];
    int64_t sm[4];
    _mm256_storeu_si256((__m256i *)mn, vmin);
    _mm256_storeu_si256((__m256i *)mx, vmax);
    _mm256_storeu_si256((__m256i *)sm, vsum);
    int32_t rmin = mn[0], rmax = mx[0];
    for (int i = 1; i < 8; i++) {
        rmin = mn[i] < rmin ? mn[i] : rmin;
        rmax = mx[i] > rmax ? mx[i] : rmax;
    }
    int32_t smin = INT32_MAX, smax = INT32_MIN;
    int64_t ssum = 0;
    for (int i = 0; i < N; i++) {
        smin = b[i] < smin ? b[i] : smin;
        smax = b[i] > smax ? b[i] : smax;
        ssum += b[i] < 0 ? -(int64_t)b[i] : b[i];
    }
    printf("min/max/abs-sum: %d %d %lld match=%d\n", rmin, rmax,
           (long long)(sm[0] + sm[1] + sm[2] + sm[3]),
           rmin == smin && rmax == smax && sm[0] + sm[1] + sm[2] + sm[3] == ssum);

    /* 3. Byte shuffles, cross-lane permutes and blends. */
    const __m256i rev = _mm256_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                         15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m256i perm = _mm256_setr_epi32(7, 0, 6, 1, 5, 2, 4, 3);
    uint64_t h = 0;
    for (int i = 0; i < N; i += 8) {
        __m256i va = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i r = _mm256_shuffle_epi8(va, rev);
        r = _mm256_permutevar8x32_epi32(r, perm);
        r = _mm256_blend_epi32(r, vb, 0x5a);
        r = _mm256_permute4x64_epi64(r, 0x1b);
        r = _mm256_sad_epu8(r, _mm256_setzero_si256());
        uint64_t q[4];
        _mm256_storeu_si256((__m256i *)q, r);
        h = h * 31 + q[0] + q[1] * 3 + q[2] * 5 + q[3] * 7;
        int mask = _mm256_movemask_epi8(_mm256_cmpgt_epi32(va, vb));
        h ^= (uint32_t)mask;
    }
    printf("shuffle/permute/blend/sad/movemask: %016llx\n", (unsigned long long)h);

    /* 4. Gathers: table lookups through vector indices. */
    static int32_t table[1024];
    for (int i = 0; i < 1024; i++)
        table[i] = i * i - 7 * i;
    int64_t gsum = 0, rsum = 0;
    for (int i = 0; i < N; i += 8) {
        __m256i idx = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(a + i)),
                                       _mm256_set1_epi32(1023));
        __m256i g = _mm256_i32gather_epi32(table, idx, 4);
        int32_t gv[8];
        _mm256_storeu_si256((__m256i *)gv, g);
        for (int j = 0; j < 8; j++) {
            gsum += gv[j];
            rsum += table[a[i + j] & 1023];
        }
    }
    double dtab[256];
    for (int i = 0; i < 256; i++)
        dtab[i] = i * 0.5;
    __m256d gd = _mm256_i32gather_pd(dtab, _mm_setr_epi32(3, 100, 255, 0), 8);
    double gdo[4];
    _mm256_storeu_pd(gdo, gd);
    printf("gather: sum=%lld match=%d pd=%g,%g,%g,%g\n", (long long)gsum, gsum == rsum, gdo[0],
           gdo[1], gdo[2], gdo[3]);

    /* 5. Masked loads and stores at the end of a buffer. */
    int32_t tail[5] = { 1, 2, 3, 4, 5 };
    __m256i m = _mm256_setr_epi32(-1, -1, -1, -1, -1, 0, 0, 0);
    __m256i lv = _mm256_maskload_epi32(tail, m);
    lv = _mm256_add_epi32(lv, _mm256_set1_epi32(100));
    _mm256_maskstore_epi32(tail, m, lv);
    printf("maskload/maskstore: %d %d %d %d %d\n", tail[0], tail[1], tail[2], tail[3], tail[4]);

    /* 6. FMA: z = x*y + z over doubles, against scalar fma(). */
    for (int i = 0; i < N; i++) {
        x[i] = (a[i] % 1000) * 0.001;
        y[i] = (b[i] % 777) * 0.01;
        z[i] = zref[i] = i * 0.5;
    }
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < N; i += 4) {
            __m256d vx = _mm256_loadu_pd(x + i), vy = _mm256_loadu_pd(y + i);
            __m256d vz = _mm256_loadu_pd(z + i);
            _mm256_storeu_pd(z + i, _mm256_fmadd_pd(vx, vy, vz));
        }
        for (int i = 0; i < N; i++)
            zref[i] = __builtin_fma(x[i], y[i], zref[i]);
    }
    double zs = 0;
    for (int i = 0; i < N; i++)
        zs += z[i];
    printf("fmadd_pd: sum=%.10g bit-exact=%d\n", zs, memcmp(z, zref, sizeof z) == 0);

    __m256 fa = _mm256_set1_ps(1.5f), fb = _mm256_setr_ps(1, 2, 3, 4, 5, 6, 7, 8);
    __m256 fc = _mm256_fmsub_ps(fa, fb, _mm256_set1_ps(0.25f));
    fc = _mm256_fnmadd_ps(fc, fb, _mm256_set1_ps(100.0f));
    float fo[8];
    _mm256_storeu_ps(fo, fc);
    printf("fmsub/fnmadd ps: %g %g %g %g %g %g %g %g\n", fo[0], fo[1], fo[2], fo[3], fo[4], fo[5],
           fo[6], fo[7]);

    /* 7. 256-bit double math: abs (andnot of the sign bit), sqrt, div, hadd. */
    __m256d acc = _mm256_setzero_pd();
    const __m256d sign = _mm256_set1_pd(-0.0);
    for (int i = 0; i < N; i += 4) {
        __m256d v = _mm256_andnot_pd(sign, _mm256_loadu_pd(z + i));
        acc = _mm256_add_pd(acc, _mm256_div_pd(_mm256_sqrt_pd(v), _mm256_set1_pd(3.0)));
    }
    acc = _mm256_hadd_pd(acc, acc);
    double ao[4];
    _mm256_storeu_pd(ao, acc);
    printf("sqrt/div/hadd: %.10g\n", ao[0] + ao[2]);
    return 0;
}
