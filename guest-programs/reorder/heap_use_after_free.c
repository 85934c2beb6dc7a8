/* A session is freed on logout, but the "current session" pointer still points at it, and a
 * later touch writes through it. Natively the write lands in the freed chunk's bytes the
 * allocator does not use, and nothing shows it. With freed blocks kept from reuse and filled,
 * the write changes the fill, and suppression ends at the write through the stale pointer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
    char name[16];
    int id;
    int touched;
};

static struct session *current;

static void logout(struct session *s) {
    free(s); /* the session goes, but current still points at it */
}

static void touch(void) {
    current->touched = 1; /* root */
}

int main(int argc, char **argv) {
    struct session *s = malloc(sizeof *s);
    strcpy(s->name, argc > 1 ? argv[1] : "guest");
    s->id = 7;
    s->touched = 0;
    current = s;
    logout(s);
    touch();
    char *report = malloc(100);
    snprintf(report, 100, "logged out");
    puts(report);
    free(report);
    return 0;
}
