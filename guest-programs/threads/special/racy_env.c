// racy_env (not differential: natively its output changes from run to run): prints, on one
// line, every value that rtgrind's repeatable mode (--repeatable=yes) pins: time(NULL),
// gettimeofday, clock_gettime (realtime and monotonic), rdtsc, 16 bytes of getrandom, 8 bytes of
// /dev/urandom, the AT_RANDOM bytes, getpid, a thread's tid, and the addresses of a malloc'd
// block, a stack variable, an mmap and main (ASLR).
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static void *tid_thread(void *arg)
{
    *(long *)arg = syscall(SYS_gettid);
    return NULL;
}

static void hex(char *out, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

int main(void)
{
    time_t t = time(NULL);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    unsigned long long tsc = __rdtsc();

    unsigned char rnd[16] = {0};
    ssize_t got = getrandom(rnd, sizeof rnd, 0);
    unsigned char ur[8] = {0};
    int fd = open("/dev/urandom", O_RDONLY);
    ssize_t urgot = fd >= 0 ? read(fd, ur, sizeof ur) : -1;
    if (fd >= 0)
        close(fd);
    const unsigned char *atr = (const unsigned char *)getauxval(AT_RANDOM);

    char rhex[33], uhex[17], ahex[33];
    hex(rhex, rnd, sizeof rnd);
    hex(uhex, ur, sizeof ur);
    hex(ahex, atr, 16);

    long tid = 0;
    pthread_t th;
    pthread_create(&th, NULL, tid_thread, &tid);
    pthread_join(th, NULL);

    void *heap = malloc(100);
    void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int local = 0;
    printf("time=%lld tod=%lld.%06ld real=%lld.%09ld mono=%lld.%09ld tsc=%llu getrandom=%zd:%s "
           "urandom=%zd:%s at_random=%s pid=%d tid=%ld heap=%p stack=%p mmap=%p main=%p\n",
           (long long)t, (long long)tv.tv_sec, (long)tv.tv_usec, (long long)rt.tv_sec,
           rt.tv_nsec, (long long)mono.tv_sec, mono.tv_nsec, tsc, got, rhex, urgot, uhex, ahex,
           (int)getpid(), tid, heap, (void *)&local, map, (void *)(uintptr_t)main);
    free(heap);
    return 0;
}
