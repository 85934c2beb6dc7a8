/* grep -F -w style: find whether a word occurs as a whole word in a line. The faulty
 * predicate gives up at the first occurrence that is not a whole word instead of looking for
 * the next one, so "concatenate the cat" seems to have no whole "cat". */
#include <stdio.h>
#include <string.h>
#include <ctype.h>
static int whole_word(const char *line, const char *word) {
    size_t n = strlen(word);
    const char *p = line;
    while ((p = strstr(p, word)) != NULL) {
        int left = p == line || !isalnum((unsigned char)p[-1]);
        int right = !isalnum((unsigned char)p[n]);
        int whole = left & right;
        if (whole)
            return 1;
        if (!whole) /* faulty: gives up instead of trying the next occurrence */
            return 0;
        p++;
    }
    return 0;
}
static const char *const answers[2] = { "no match", "match" };
int main(int argc, char **argv) {
    const char *word = argc > 1 ? argv[1] : "cat";
    const char *line = argc > 2 ? argv[2] : "concatenate the cat";
    puts(answers[whole_word(line, word)]);
    return 0;
}
