// recursion: fib, Ackermann, mutual recursion (is_even/is_odd), and a 100k-frame deep recursion.
#include <stdio.h>

__attribute__((noipa)) static unsigned long fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noipa)) static unsigned long ack(unsigned long m, unsigned long n)
{
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}

static int is_odd(unsigned n);

__attribute__((noipa)) static int is_even(unsigned n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noipa)) static int is_odd(unsigned n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

/* One real stack frame per level: the volatile buffer is written before and read after the call. */
__attribute__((noipa)) static unsigned long deep(unsigned long n)
{
    volatile unsigned char buf[16];
    if (n == 0)
        return 0;
    buf[n % 16] = (unsigned char)n;
    unsigned long r = deep(n - 1);
    return r * 3 + buf[n % 16];
}

/* Recursion that passes many arguments (some on the stack) and returns a struct. */
struct pair { unsigned long a, b; };

typedef unsigned long ul;

__attribute__((noipa)) static struct pair many_args(int depth, ul a, ul b, ul c, ul d,
                                                   ul e, ul f, ul g, ul h)
{
    if (depth == 0)
        return (struct pair){ a + c + e + g, b + d + f + h };
    struct pair p = many_args(depth - 1, b, c, d, e, f, g, h, a + depth);
    return (struct pair){ p.a * 7 + p.b, p.b ^ (p.a + depth) };
}

int main(void)
{
    for (unsigned n = 0; n <= 25; n += 5)
        printf("fib(%u) = %lu\n", n, fib(n));
    printf("ack(2,3) = %lu\n", ack(2, 3));
    printf("ack(3,5) = %lu\n", ack(3, 5));
    printf("ack(3,6) = %lu\n", ack(3, 6));
    printf("is_even(10001) = %d, is_odd(10001) = %d\n", is_even(10001), is_odd(10001));
    printf("deep(100000) = %lu\n", deep(100000));
    struct pair p = many_args(1000, 1, 2, 3, 4, 5, 6, 7, 8);
    printf("many_args = %lu %lu\n", p.a, p.b);
    return 0;
}
