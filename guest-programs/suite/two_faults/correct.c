/* stats: summary statistics of a list of integers.
 *
 * usage: stats COMMAND < numbers
 * stdin: whitespace-separated integers (at most 100).
 * COMMAND is one of: sum, mean, minmax, median, var (sample variance), all.
 */
#include <stdio.h>
#include <string.h>

#define MAXN 100

static int read_values(long *v, int max)
{
    int n = 0;
    while (n < max && scanf("%ld", &v[n]) == 1)
        n++;
    return n;
}

static void sort_values(long *v, int n)
{
    for (int i = 1; i < n; i++) {
        long x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

static long sum_of(const long *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

static double median_of(long *v, int n)
{
    sort_values(v, n);
    if (n % 2 == 1)
        return v[n / 2];
    return (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static double variance_of(const long *v, int n)
{
    double mean = (double)sum_of(v, n) / n;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    return ss / (n - 1);
}

int main(int argc, char **argv)
{
    long v[MAXN];
    const char *cmd = argc > 1 ? argv[1] : "all";
    int all = strcmp(cmd, "all") == 0;
    int n = read_values(v, MAXN);

    if (n == 0) {
        printf("no values\n");
        return 0;
    }
    if (all || strcmp(cmd, "sum") == 0)
        printf("sum %ld\n", sum_of(v, n));
    if (all || strcmp(cmd, "mean") == 0)
        printf("mean %.2f\n", (double)sum_of(v, n) / n);
    if (all || strcmp(cmd, "minmax") == 0) {
        long lo = v[0], hi = v[0];
        for (int i = 1; i < n; i++) {
            if (v[i] < lo)
                lo = v[i];
            if (v[i] > hi)
                hi = v[i];
        }
        printf("min %ld max %ld\n", lo, hi);
    }
    if (all || strcmp(cmd, "var") == 0) {
        if (n < 2)
            printf("var n/a\n");
        else
            printf("var %.2f\n", variance_of(v, n));
    }
    if (all || strcmp(cmd, "median") == 0)
        printf("median %.1f\n", median_of(v, n));
    return 0;
}
