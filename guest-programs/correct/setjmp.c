// setjmp: setjmp/longjmp across several frames, nested jump buffers, values preserved in volatiles.
#include <setjmp.h>
#include <stdio.h>

static jmp_buf outer, inner;
static int trace[64];
static int ntrace;

__attribute__((noipa)) static void level3(int v)
{
    trace[ntrace++] = 3;
    if (v % 3 == 0)
        longjmp(inner, v);          /* caught by the inner setjmp */
    if (v % 3 == 1)
        longjmp(outer, v + 100);    /* skips the inner handler entirely */
    trace[ntrace++] = 30;
}

__attribute__((noipa)) static void level2(int v)
{
    volatile char pad[200];         /* a frame of some size that longjmp discards */
    pad[v % 200] = (char)v;
    trace[ntrace++] = 2;
    level3(v + pad[v % 200] - v);
    trace[ntrace++] = 20;
}

__attribute__((noipa)) static int level1(int v)
{
    int r = setjmp(inner);
    if (r != 0) {
        trace[ntrace++] = 11;
        return r * 2;
    }
    trace[ntrace++] = 1;
    level2(v);
    trace[ntrace++] = 10;
    return -1;
}

/* Recursion 50 deep, then longjmp to the top. */
static jmp_buf deep_env;
__attribute__((noipa)) static void dive(int n)
{
    volatile int local = n;     /* keeps a frame per level */
    if (n < 0)
        return;
    if (n > 0)
        dive(n - 1);
    longjmp(deep_env, 77 + local);
}

/* longjmp(env, 0) must make setjmp return 1. */
static jmp_buf zero_env;
__attribute__((noipa)) static void jump_zero(void) { longjmp(zero_env, 0); }

int main(void)
{
    for (volatile int v = 0; v < 6; v++) {
        ntrace = 0;
        volatile int result = 0;
        int r = setjmp(outer);
        if (r == 0)
            result = level1(v);
        else
            result = -r;
        printf("v=%d result=%d trace:", v, result);
        for (int i = 0; i < ntrace; i++)
            printf(" %d", trace[i]);
        printf("\n");
    }

    volatile int counter = 0;
    int r = setjmp(deep_env);
    counter++;
    if (r == 0)
        dive(50);
    printf("deep longjmp returned %d, counter=%d\n", r, counter);

    r = setjmp(zero_env);
    if (r == 0)
        jump_zero();
    printf("longjmp with 0 gives setjmp=%d\n", r);

    /* A loop driven entirely by longjmp. */
    static jmp_buf loop_env;
    volatile int iter = 0;
    volatile unsigned long acc = 1;
    if (setjmp(loop_env) < 1000) {
        acc = acc * 6364136223846793005ul + (unsigned long)iter;
        iter++;
        if (iter < 1000)
            longjmp(loop_env, iter);
    }
    printf("longjmp loop: iter=%d acc=%016lx\n", iter, (unsigned long)acc);
    return 0;
}
