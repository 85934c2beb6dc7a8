/* An uninitialized read in a worker that is properly synchronized (issue 23; the mysqld-3
 * case of the dissertation's Table 6.1): loading a table needs a selected database, but none
 * was selected, so the worker reads the database's name through a pointer the main thread
 * left NULL before it created the worker (the creation orders the two: no race). The root
 * cause is that definition of the NULL. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
struct database {
    char name[16];
};
static struct database *current;
static void select_database(struct database *db) {
    current = db; /* defines the selection */
}
static void *load_table(void *arg) {
    const char *file = arg;
    size_t n = strlen(current->name); /* crash */
    printf("loading %s into %zu\n", file, n);
    return NULL;
}
int main(int argc, char **argv) {
    static struct database sales = {"sales"};
    select_database(argc > 1 ? &sales : NULL);
    pthread_t t;
    pthread_create(&t, NULL, load_table, "data.csv");
    pthread_join(t, NULL);
    return 0;
}
