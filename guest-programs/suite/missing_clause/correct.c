/* reorder: decides which stock items to reorder.
 *
 * usage: reorder [THRESHOLD] < items
 * stdin: one item per line: "NAME STOCK ONORDER FLAG", where ONORDER is the
 * quantity already ordered from the supplier and FLAG is 'a' (active) or 'd'
 * (discontinued).  An item is reordered when its stock is below THRESHOLD
 * (default 10), it is active, and nothing is already on order for it.  The
 * reorder quantity tops the stock up to twice the threshold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item {
    char name[32];
    int stock;
    int on_order;
    char flag;
};

static int parse_item(const char *line, struct item *it)
{
    char flag[8];
    if (sscanf(line, "%31s %d %d %7s", it->name, &it->stock, &it->on_order, flag) != 4)
        return 0;
    if (it->stock < 0 || it->on_order < 0)
        return 0;
    if (strcmp(flag, "a") != 0 && strcmp(flag, "d") != 0)
        return 0;
    it->flag = flag[0];
    return 1;
}

static int needs_reorder(const struct item *it, int threshold)
{
    int active = it->flag == 'a';
    if (it->stock < threshold && active && it->on_order == 0)
        return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int threshold = 10;
    char line[128];
    int items = 0, orders = 0, skipped = 0, low = 0;
    long units = 0;

    if (argc > 1) {
        threshold = atoi(argv[1]);
        if (threshold <= 0) {
            printf("bad threshold\n");
            return 0;
        }
    }
    while (fgets(line, sizeof line, stdin)) {
        struct item it;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!parse_item(line, &it)) {
            skipped++;
            continue;
        }
        items++;
        if (it.stock >= threshold)
            continue;
        low++;
        if (needs_reorder(&it, threshold)) {
            int qty = 2 * threshold - it.stock;
            printf("order %s %d\n", it.name, qty);
            orders++;
            units += qty;
        } else if (it.flag == 'd' && it.stock == 0) {
            printf("gone %s\n", it.name);
        } else if (it.on_order > 0) {
            printf("pending %s %d\n", it.name, it.on_order);
        }
    }
    printf("%d items, %d low, %d orders, %ld units, %d skipped\n", items, low, orders,
           units, skipped);
    return 0;
}
