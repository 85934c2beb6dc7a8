// recursion: call-heavy workload: recursive fib, Ackermann, binary tree build/traverse/free,
// and a recursive permutation count (n-queens); prints the results.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) static uint64_t fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noipa)) static unsigned ack(unsigned m, unsigned n)
{
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}

struct tree {
    struct tree *left, *right;
    uint64_t value;
};

__attribute__((noipa)) static struct tree *build(int depth, uint64_t seed)
{
    struct tree *t = malloc(sizeof *t);
    t->value = seed * 2654435761u % 1000003;
    if (depth > 0) {
        t->left = build(depth - 1, seed * 2 + 1);
        t->right = build(depth - 1, seed * 2 + 2);
    } else {
        t->left = t->right = NULL;
    }
    return t;
}

__attribute__((noipa)) static uint64_t walk(const struct tree *t, int depth)
{
    if (!t)
        return 0;
    return t->value * (uint64_t)(depth + 1) + walk(t->left, depth + 1) * 3 +
           walk(t->right, depth + 1);
}

__attribute__((noipa)) static void release(struct tree *t)
{
    if (!t)
        return;
    release(t->left);
    release(t->right);
    free(t);
}

__attribute__((noipa)) static int queens(int n, int row, unsigned cols, unsigned d1, unsigned d2)
{
    if (row == n)
        return 1;
    int count = 0;
    for (int c = 0; c < n; c++) {
        unsigned bc = 1u << c, b1 = 1u << (row + c), b2 = 1u << (row - c + n - 1);
        if ((cols & bc) || (d1 & b1) || (d2 & b2))
            continue;
        count += queens(n, row + 1, cols | bc, d1 | b1, d2 | b2);
    }
    return count;
}

int main(void)
{
    uint64_t f = fib(41);
    unsigned a = ack(2, 3000) + ack(3, 10);
    uint64_t w = 0;
    for (int r = 0; r < 20; r++) {
        struct tree *t = build(18, (uint64_t)r);
        w = w * 31 + walk(t, 0);
        release(t);
    }
    int q = queens(13, 0, 0, 0, 0);
    printf("recursion: fib(41)=%llu ack=%u tree=%016llx queens(13)=%d\n", (unsigned long long)f,
           a, (unsigned long long)w, q);
    return 0;
}
