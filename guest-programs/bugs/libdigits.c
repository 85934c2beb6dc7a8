/* A formatting library (for digits_wrong.c): the digits come from a table, as glibc's
 * _itoa_word takes them, so the character written is chosen by the value, not computed from
 * it. */
static const char digits[] = "0123456789abcdef";

char *format_number(unsigned long value, char *end) {
    do
        *--end = digits[value % 10];
    while ((value /= 10) != 0);
    return end;
}
