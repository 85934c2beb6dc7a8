/* A signal sent from one thread to another orders the sender's past before the handler: main
 * fills `message` and then sends SIGUSR1 to the worker with pthread_kill; the worker's handler
 * reads it. No race there. The one race is `late`, which main writes after sending, so nothing
 * orders that write before the handler's read of it. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char message[16];
static int late;
static char seen[16];
static int seen_late;
static volatile sig_atomic_t got;
static void on_usr1(int sig) {
    (void)sig;
    memcpy(seen, message, sizeof seen); /* ordered read */
    seen_late = late;                   /* racing read */
    got = 1;
}
static void *worker(void *arg) {
    while (!got)
        usleep(1000);
    printf("%s %d\n", seen, seen_late >= 0);
    return arg;
}
int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
    strcpy(message, "handed over");
    pthread_kill(w, SIGUSR1);
    late = 1; /* racing write */
    pthread_join(w, NULL);
    return 0;
}
