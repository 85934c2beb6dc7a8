/* A discount applies to orders of more than 100 units; the faulty predicate uses >= where >
 * is meant. After the decision, a checksum loop runs 400 branch instances that have nothing
 * to do with the price printed first: last-executed-first switches them all before the
 * faulty one, the dependence order (prior) starts with it. Correct output for "100":
 * "price 1000\ncheck 6506\n". */
#include <stdio.h>
#include <stdlib.h>
static int discounted(int units) {
    if (units >= 100) /* faulty: should be > */
        return 1;
    return 0;
}
int main(int argc, char **argv) {
    int units = atoi(argv[1]);
    int d = discounted(units);
    unsigned check = 0;
    for (int i = 0; i < 200; i++) {
        if (i % 3 == 0)
            check += i;
        else
            check ^= i;
    }
    int price = units * (10 - d);
    printf("price %d\n", price);
    printf("check %u\n", check);
    return 0;
}
