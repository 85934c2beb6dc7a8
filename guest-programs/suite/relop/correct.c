/* ship: prices parcels by weight tier and destination zone.
 *
 * usage: ship [-s] ZONE < parcels
 * stdin: one parcel weight in grams per line; blank lines and lines starting
 * with '#' are skipped.  ZONE is 1, 2 or 3.  A parcel of exactly a tier's
 * limit belongs to that tier.  With -s only the summary line is printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTIERS 4

static const int tier_limit[NTIERS] = {500, 1000, 2000, 5000};
static const int tier_price[NTIERS] = {350, 520, 780, 1250};
static const char *tier_name[NTIERS] = {"letter", "small", "medium", "large"};

/* The tier of a parcel, or -1 if it is too heavy to ship. */
static int tier_of(int grams)
{
    int i;
    for (i = 0; i < NTIERS; i++) {
        if (grams <= tier_limit[i])
            return i;
    }
    return -1;
}

/* Price in cents: the tier price, plus 40% for zone 2 and 90% for zone 3. */
static int price_of(int tier, int zone)
{
    int base = tier_price[tier];
    if (zone == 2)
        return base + base * 40 / 100;
    if (zone == 3)
        return base + base * 90 / 100;
    return base;
}

static int parse_weight(const char *line, int *grams)
{
    char *end;
    long v = strtol(line, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    if (end == line || *end != '\0' || v <= 0 || v > 1000000)
        return 0;
    *grams = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int summary_only = 0, zone, argi = 1;
    int count[NTIERS] = {0};
    int shipped = 0, rejected = 0, bad = 0;
    long total = 0;
    char line[128];

    if (argi < argc && strcmp(argv[argi], "-s") == 0) {
        summary_only = 1;
        argi++;
    }
    if (argi >= argc) {
        printf("usage: ship [-s] ZONE\n");
        return 0;
    }
    zone = atoi(argv[argi]);
    if (zone < 1 || zone > 3) {
        printf("bad zone %s\n", argv[argi]);
        return 0;
    }
    while (fgets(line, sizeof line, stdin)) {
        int grams, tier, cents;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!parse_weight(line, &grams)) {
            bad++;
            if (!summary_only)
                printf("bad line\n");
            continue;
        }
        tier = tier_of(grams);
        if (tier < 0) {
            rejected++;
            if (!summary_only)
                printf("%d g: too heavy\n", grams);
            continue;
        }
        cents = price_of(tier, zone);
        count[tier]++;
        shipped++;
        total += cents;
        if (!summary_only)
            printf("%d g: %s %d.%02d\n", grams, tier_name[tier], cents / 100, cents % 100);
    }
    printf("shipped %d rejected %d bad %d total %ld.%02ld", shipped, rejected, bad,
           total / 100, total % 100);
    for (int i = 0; i < NTIERS; i++)
        printf(" %s=%d", tier_name[i], count[i]);
    printf("\n");
    return 0;
}
