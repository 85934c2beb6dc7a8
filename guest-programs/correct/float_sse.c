// float_sse: scalar double/float/long double (x87) math with libm, rounding modes (MXCSR/x87 CW),
// NaN/inf/denormals, conversions, and SSE/SSE2/SSE4.1 intrinsics; printed with %.10g.
// rtgrind-test: cflags=-lm
#include <emmintrin.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static volatile double vd = 1.0;  /* volatile inputs keep the compiler from folding everything */

static void libm(void)
{
    double s = 0;
    for (int i = 1; i <= 1000; i++) {
        double x = i * 0.01 * vd;
        s += sqrt(x) + sin(x) * cos(x) + exp(-x) + log(x) + atan2(x, 1.5) + pow(x, 0.3);
    }
    printf("libm double sum: %.10g\n", s);
    float f = 0;
    for (int i = 1; i <= 1000; i++) {
        float x = (float)(i * 0.01 * vd);
        f += sqrtf(x) + sinf(x) + expf(-x) + logf(x);
    }
    printf("libm float sum: %.6g\n", f);
    printf("hypot=%.10g cbrt=%.10g tanh=%.10g fmod=%.10g\n", hypot(3 * vd, 4), cbrt(27 * vd),
           tanh(0.5 * vd), fmod(10.5 * vd, 3));
    printf("floor=%g ceil=%g round=%g trunc=%g rint=%g\n", floor(-2.5 * vd), ceil(-2.5 * vd),
           round(-2.5 * vd), trunc(-2.5 * vd), rint(-2.5 * vd));
}

static void x87(void)
{
    long double a = 1.0L * vd, s = 0;
    for (int i = 1; i <= 200; i++) {
        s += a / i;
        a *= 1.01L;
    }
    printf("long double: %.15Lg sqrtl=%.15Lg sizeof=%zu\n", s, sqrtl(2.0L * vd),
           sizeof(long double));
    printf("LDBL_EPSILON<DBL_EPSILON: %d\n", LDBL_EPSILON < DBL_EPSILON);
}

static void special(void)
{
    double zero = 0.0 * vd, inf = 1.0 / zero, nan = zero / zero;
    printf("inf=%g -inf=%g nan is nan=%d nan==nan=%d isinf=%d\n", inf, -inf, isnan(nan),
           nan == nan, isinf(inf));
    double den = DBL_MIN / 1024 * vd;
    printf("denormal: %.10g fpclassify subnormal=%d x*2^600/2^600=%.10g\n", den,
           fpclassify(den) == FP_SUBNORMAL, den * 0x1p600 * 0x1p-600);
    printf("copysign=%g signbit(-0.0)=%d\n", copysign(3.0 * vd, -0.0), signbit(-0.0 * vd) != 0);
    printf("conversions: (int)-3.7=%d (long)1e15=%ld (float)1/3=%.9g (unsigned)3e9=%u\n",
           (int)(-3.7 * vd), (long)(1e15 * vd), (float)(1.0 / 3.0 * vd), (unsigned)(3e9 * vd));
}

/* Through pointers so libm's rint/lrint run (gcc's inline rint assumes round-to-nearest). */
static double (*volatile rint_fn)(double) = rint;
static long (*volatile lrint_fn)(double) = lrint;

static void rounding(void)
{
    static const int modes[] = { FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO };
    static const char *names[] = { "nearest", "upward", "downward", "towardzero" };
    for (int m = 0; m < 4; m++) {
        fesetround(modes[m]);
        volatile double a = 1.0, b = 3.0;
        volatile float fa = 2.0f, fb = 3.0f;
        volatile long double la = 1.0L, lb = 3.0L;
        volatile double m25 = -2.5, p25 = 2.5;
        /* volatile results: the operations must happen before the mode is restored */
        volatile double q = a / b;
        volatile float fq = fa / fb;
        volatile long double lq = la / lb;
        volatile double r = rint_fn(m25);
        volatile long l = lrint_fn(p25);
        fesetround(FE_TONEAREST);
        double qc = q;
        float fqc = fq;
        uint64_t bits;
        memcpy(&bits, &qc, sizeof bits);
        uint32_t fbits;
        memcpy(&fbits, &fqc, sizeof fbits);
        printf("%-10s 1/3 bits=%016llx 2f/3f bits=%08x ld 1/3=%.20Lg "
               "rint(-2.5)=%g lrint(2.5)=%ld\n",
               names[m], (unsigned long long)bits, fbits, lq, r, l);
    }
    feclearexcept(FE_ALL_EXCEPT);
    volatile double z = 0.0;
    volatile double x = 1.0 / z;
    (void)x;
    printf("FE_DIVBYZERO raised: %d\n", fetestexcept(FE_DIVBYZERO) != 0);
}

static void sse(void)
{
    __m128d acc = _mm_setzero_pd();
    for (int i = 0; i < 1000; i++) {
        __m128d v = _mm_set_pd(i * 0.5 * vd, i * 0.25 * vd);
        acc = _mm_add_pd(acc, _mm_sqrt_pd(_mm_mul_pd(v, v)));
    }
    double out[2];
    _mm_storeu_pd(out, acc);
    printf("sse2 pd: %.10g %.10g\n", out[0], out[1]);

    __m128 fa = _mm_set_ps(1.5f, -2.25f, 3.0f, 4.75f);
    __m128 fb = _mm_set_ps(0.5f, 8.0f, -1.0f, 2.0f);
    float fo[4];
    _mm_storeu_ps(fo, _mm_add_ps(_mm_mul_ps(fa, fb), _mm_min_ps(fa, fb)));
    printf("sse ps: %g %g %g %g\n", fo[0], fo[1], fo[2], fo[3]);
    __m128i conv = _mm_cvtps_epi32(_mm_set_ps(2.5f, -1.5f, 100.7f, -0.4f));
    int ci[4];
    _mm_storeu_si128((__m128i *)ci, conv);
    printf("cvtps2dq: %d %d %d %d\n", ci[0], ci[1], ci[2], ci[3]);

    /* Integer SSE2: checksums over a buffer. */
    int16_t data[1024];
    for (int i = 0; i < 1024; i++)
        data[i] = (int16_t)((i * 7919) % 2000 - 1000);
    __m128i sum32 = _mm_setzero_si128(), mx = _mm_set1_epi16(-32768);
    __m128i ones = _mm_set1_epi16(1);
    for (int i = 0; i < 1024; i += 8) {
        __m128i v = _mm_loadu_si128((const __m128i *)(data + i));
        sum32 = _mm_add_epi32(sum32, _mm_madd_epi16(v, ones));
        mx = _mm_max_epi16(mx, v);
    }
    int s[4];
    _mm_storeu_si128((__m128i *)s, sum32);
    int16_t m[8];
    _mm_storeu_si128((__m128i *)m, mx);
    int maxv = m[0];
    for (int i = 1; i < 8; i++)
        maxv = m[i] > maxv ? m[i] : maxv;
    printf("sse2 int: sum=%d max=%d\n", s[0] + s[1] + s[2] + s[3], maxv);

    __m128i a = _mm_set_epi32(5, -3, 100, 7), b = _mm_set_epi32(5, 4, -100, 9);
    int mask = _mm_movemask_epi8(_mm_cmpgt_epi32(a, b));
    __m128i sh = _mm_shuffle_epi32(a, _MM_SHUFFLE(0, 1, 2, 3));
    __m128i pk = _mm_packs_epi32(_mm_slli_epi32(a, 12), b);
    int sv[4];
    _mm_storeu_si128((__m128i *)sv, sh);
    int16_t pv[8];
    _mm_storeu_si128((__m128i *)pv, pk);
    printf("cmpgt mask=%04x shuffle=%d,%d,%d,%d packs=%d,%d,%d,%d,%d,%d,%d,%d\n", mask, sv[0],
           sv[1], sv[2], sv[3], pv[0], pv[1], pv[2], pv[3], pv[4], pv[5], pv[6], pv[7]);
    __m128i sad = _mm_sad_epu8(_mm_set1_epi8(10), _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                               11, 12, 13, 14, 15));
    uint64_t sd[2];
    _mm_storeu_si128((__m128i *)sd, sad);
    printf("psadbw: %llu %llu\n", (unsigned long long)sd[0], (unsigned long long)sd[1]);
}

/* A plain loop gcc -O2 may auto-vectorize. */
static void autovec(void)
{
    static float a[4096], b[4096], c[4096];
    for (int i = 0; i < 4096; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = (float)(4096 - i) * 0.25f;
    }
    for (int r = 0; r < 10; r++)
        for (int i = 0; i < 4096; i++)
            c[i] = c[i] * 0.5f + a[i] * b[i];
    double s = 0;
    for (int i = 0; i < 4096; i++)
        s += c[i];
    printf("autovec: %.10g\n", s);
}

int main(void)
{
    libm();
    x87();
    special();
    rounding();
    sse();
    autovec();
    return 0;
}
