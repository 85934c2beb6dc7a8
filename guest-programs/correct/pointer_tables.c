// pointer_tables: globals that point at each other (tables of pointers, a pointer one past an
// array's end, function pointers, a structure of pointers), static locals, and functions with
// local arrays, recursion and address-taken locals: what a layout of the globals and frames
// must keep working (issue 24; -O0 keeps every local in its frame).
// rtgrind-test: variants=O0,pie
#include <stdio.h>
#include <string.h>

static int a = 1, b = 2;
static int arr[4] = {5, 6, 7, 8};
static int *const tab[] = {&a, &b, &arr[2]};
static int *arr_end = arr + 4;
static const char *names[] = {"x", "y", "z"};
static struct {
    int *p;
    const char **n;
    int (*f)(int);
} s;
static char buffer[64];
static long counter;

static int twice(int v) { return 2 * v; }
static int thrice(int v) { return 3 * v; }
static int (*ops[])(int) = {twice, thrice};

static int sum_to_end(const int *p) {
    int total = 0;
    while (p < arr_end)
        total += *p++;
    return total;
}

static int depth(int n, char *trail) {
    char mark[8];
    int here = n;
    snprintf(mark, sizeof mark, "%d", n);
    strcat(trail, mark);
    if (n == 0)
        return here;
    return here + depth(n - 1, trail);
}

static void bump(long *where, int by) { *where += by; }

/* A local array of structures walked by index: -O0 computes an element's address from rbp as
 * a value (`add rax, rbp; sub rax, N`), which no operand names (unrtf's optimize_word). */
struct tag {
    const char *name;
    int has_param;
};
static int count_params(void) {
    struct tag tags[] = {{"fs", 1}, {"f", 1}, {"b", 0}, {"", 0}};
    int n = 0;
    for (int i = 0; tags[i].name[0] != '\0'; i++)
        n += tags[i].has_param;
    return n;
}

static int next_id(void) {
    static int id = 100;
    return id++;
}

/* A callee-saved register pushed right after the frame pointer: -O0 saves rbx there, below
 * rbp, and no local may be moved over its slot. */
static long saved_register(const char *word) {
    char copy[16];
    asm volatile("" ::: "rbx");
    strcpy(copy, word);
    return 41 + (long)strlen(copy);
}

/* Its caller (optimized) keeps a value live across the call in a callee-saved register: a
 * local moved over the slot where saved_register keeps rbx would change it. */
__attribute__((optimize("O2"), noinline)) static long keeps_rbx(long n) {
    long a = n * 3 + 1;
    long r = saved_register("x");
    return a * r;
}

static volatile long three = 3;

int main(void) {
    s.p = &b;
    s.n = names;
    s.f = ops[1];
    *tab[0] += 10;
    char trail[64] = "";
    int d = depth(5, trail);
    int local[5];
    for (int i = 0; i < 5; i++)
        local[i] = ops[i % 2](i);
    bump(&counter, local[4]);
    snprintf(buffer, sizeof buffer, "%s-%s-%s", names[0], s.n[1], names[2]);
    printf("%d %d %d %d\n", *tab[0], *tab[1], *tab[2], *s.p);
    printf("sum %d depth %d trail %s\n", sum_to_end(arr), d, trail);
    printf("ops %d %d %d %d %d f=%d\n", local[0], local[1], local[2], local[3], local[4], s.f(7));
    printf("counter %ld buffer %s ids %d %d params %d\n", counter, buffer, next_id(), next_id(), count_params());
    printf("saved %ld\n", keeps_rbx(three));
    return 0;
}
