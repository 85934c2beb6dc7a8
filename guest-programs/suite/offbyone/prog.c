/* doy: day-of-year and weekday of dates, and the gap between consecutive ones.
 *
 * usage: doy [-g] < dates
 * stdin: one date per line as YYYY-MM-DD (years 1601..9999).  For each date
 * prints its day of the year and its weekday; with -g also prints the number
 * of days since the previous valid date.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int days_before[13] = {0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
static const int month_len[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
static const char *weekday[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int valid(int y, int m, int d)
{
    int len;
    if (y < 1601 || y > 9999 || m < 1 || m > 12 || d < 1)
        return 0;
    len = month_len[m];
    if (m == 2 && is_leap(y))
        len = 29;
    return d <= len;
}

/* Day of the year, 1 for January 1st. */
static int day_of_year(int y, int m, int d)
{
    int doy = days_before[m] + d;
    if (is_leap(y)) {
        if (m > 3) /* FAULT */
            doy++;
    }
    return doy;
}

/* Days since 1601-01-01 (a Monday), given the day of the year. */
static long day_number(int y, int doy)
{
    long py = y - 1601;
    long days = py * 365 + py / 4 - py / 100 + py / 400;
    return days + doy - 1;
}

int main(int argc, char **argv)
{
    int gaps = argc > 1 && strcmp(argv[1], "-g") == 0;
    char line[64];
    long prev = -1;
    int n = 0, bad = 0;

    while (fgets(line, sizeof line, stdin)) {
        int y, m, d, doy;
        char extra;
        long num;
        if (sscanf(line, "%d-%d-%d%c", &y, &m, &d, &extra) < 3 || !valid(y, m, d)) {
            bad++;
            printf("invalid: %s", line);
            if (strchr(line, '\n') == NULL)
                printf("\n");
            continue;
        }
        doy = day_of_year(y, m, d);
        num = day_number(y, doy);
        printf("%04d-%02d-%02d day %d %s", y, m, d, doy, weekday[num % 7]);
        if (gaps && prev >= 0)
            printf(" gap %ld", num - prev);
        printf("\n");
        prev = num;
        n++;
    }
    printf("%d dates, %d invalid\n", n, bad);
    return 0;
}
