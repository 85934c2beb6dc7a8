/* quota: charges users' disk usage against a quota.
 *
 * usage: quota LIMIT < records
 *
 * Record N (from 1) is user N's "used reserved": the blocks the user used and
 * the blocks reserved for them.  A user is charged used + reserved, but never
 * more than LIMIT.  Prints each user's charge (with a note when it is within
 * a tenth of LIMIT), then the number of users, the total charged and the mean
 * charge.  A record with a negative count is reported and skipped.
 */
#include <stdio.h>
#include <stdlib.h>

/* Kept out of line, as a larger program's would be. */
__attribute__((noinline)) int charge(int user, int used, int reserved, int limit)
{
    int charged;

    charged = used + reserved < limit ? used + reserved : limit;
    printf("user %d: %d\n", user, charged);
    if (limit - charged <= limit / 10)
        printf("  user %d is near the limit\n", user);
    return charged;
}

int main(int argc, char **argv)
{
    int used, reserved;
    int limit, users = 0, total = 0;

    if (argc != 2)
    {
        fprintf(stderr, "usage: quota LIMIT\n");
        return 2;
    }
    limit = atoi(argv[1]);
    if (limit <= 0)
    {
        printf("bad limit '%s'\n", argv[1]);
        return 1;
    }
    while (scanf("%d %d", &used, &reserved) == 2)
    {
        if (used < 0 || reserved < 0)
        {
            printf("user %d: bad record\n", users + 1);
            continue;
        }
        users++;
        total += charge(users, used, reserved, limit);
    }
    if (users == 0)
    {
        printf("no users\n");
        return 0;
    }
    printf("%d users, %d blocks, %d each on average (limit %d)\n", users, total, total / users, limit);
    return 0;
}
