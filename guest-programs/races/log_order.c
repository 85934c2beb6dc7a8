/* Lost log entries (issue 23's failure loop, a wrong output): two workers append to a shared
 * log through an unsynchronized index, reading it, formatting the entry (a switch point here:
 * rtgrind switches threads at sched_yield, as a preemption would) and storing it back. Under
 * the round-robin schedule each worker overwrites the other's slots, so the main thread prints
 * three entries instead of six and log_order.expected (the output of a correct run: per worker,
 * its entries in its own order) differs: `--failure=output:log_order.expected`. The root cause
 * is the race on the index `n`: the store of the incremented index (WAW with the other
 * worker's store, WAR with its load), which the printed count and slots were defined by. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#define PER 3
static const char *entries[2][PER] = {
    {"A open", "A read", "A close"},
    {"B open", "B write", "B close"},
};
static const char *log_[2 * PER];
static int n;
static void append(const char *entry) {
    int i = n; /* race index load */
    sched_yield();
    log_[i] = entry; /* slot store */
    n = i + 1; /* race index store */
}
static void *worker(void *arg) {
    const char **mine = arg;
    for (int k = 0; k < PER; k++)
        append(mine[k]); /* call append */
    return NULL;
}
int main(void) {
    pthread_t t[2];
    for (int w = 0; w < 2; w++)
        pthread_create(&t[w], NULL, worker, entries[w]);
    for (int w = 0; w < 2; w++)
        pthread_join(t[w], NULL);
    printf("%d entries\n", n); /* failure */
    for (int w = 0; w < 2; w++) {
        printf("%c:", "AB"[w]);
        for (int i = 0; i < n; i++)
            if (log_[i] && log_[i][0] == "AB"[w])
                printf(" [%s]", log_[i]);
        printf("\n");
    }
    return 0;
}
