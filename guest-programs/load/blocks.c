// blocks: a loop of N (argv[1], default 20,000,000) iterations whose body is one basic block,
// so a run enters N translated blocks. benches/callout.sh runs it under `--tool=count
// --callout-bench=full|light` (a call-out at every block's start) against plain
// `--tool=count`: the difference over N is the cost of one call-out.
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000ul, sum = 0;
    for (unsigned long i = 0; i < n; i++) {
        sum += i ^ (sum >> 3);
        __asm__ volatile("" : "+r"(sum));
    }
    printf("%lu\n", sum);
    return 0;
}
