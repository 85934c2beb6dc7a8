/* A worker thread overflows a buffer on its own stack: it copies a job's name into a 16-byte
 * buffer with strcpy, and the name is longer, so the copy runs over the saved frame pointer and
 * the return address. The worker crashes when it returns (SIGSEGV on a non-canonical address;
 * SIGABRT from __stack_chk_fail when built with -fstack-protector). No race is involved (the
 * main thread only creates and joins the worker): the root cause is the overflowing copy. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
struct job {
    const char *name;
    int id;
};
__attribute__((noinline)) static int label(const struct job *j, char *out, size_t size) {
    char buf[16];
    strcpy(buf, j->name); /* overflow */
    return snprintf(out, size, "%d:%s", j->id, buf);
} /* crash */
static char result[64];
static void *work(void *arg) {
    return (void *)(long)label(arg, result, sizeof result);
}
int main(int argc, char **argv) {
    struct job j = {argc > 1 ? argv[1] : "a job name that is far longer than sixteen bytes", 7};
    pthread_t t;
    void *len;
    pthread_create(&t, NULL, work, &j);
    pthread_join(t, &len);
    printf("%ld %s\n", (long)len, result);
    return 0;
}
