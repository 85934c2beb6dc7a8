// corrupt_copy: issue 30's suppression workload, a corrupt length driving a hot copy loop.
// A name is copied into a fixed field beside the ring's length; a name of 16 bytes or more
// overflows into that length. Then 10 million bytes are copied round the ring (index i %
// length), and the length is checked (assert). With a short name (`corrupt_copy ring`) the
// length stays 4096 and one checksum line is printed; with the overflow (`corrupt_copy
// AAAAAAAAAAAAAAAA$'\x01\x01\x01\x01'`) the length is 16843009: the loop stays in bounds (the
// ring is 10 MB) and the check fails (SIGABRT). Under `--tool=suppress` the search suppresses
// the strcpy; its suppression run then goes round the loop with the length corrupt.
// benches/live-load.sh runs it.
#include <assert.h>
#include <stdio.h>
#include <string.h>

#define COUNT 10000000ul
#define RING (10u << 20)

struct header {
    char name[16];
    unsigned long length;
};

static unsigned char src[1 << 16];
static unsigned char ring[RING];

int main(int argc, char **argv)
{
    struct header h;
    h.length = 4096;
    strcpy(h.name, argc > 1 ? argv[1] : "ring");
    for (unsigned i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    for (unsigned long i = 0; i < COUNT; i++)
        ring[i % h.length] = src[i & 0xffff];
    assert(h.length <= RING);
    unsigned long sum = 0;
    for (unsigned i = 0; i < 4096; i++)
        sum = sum * 31 + ring[i];
    printf("%.16s %lu\n", h.name, sum);
    return 0;
}
