/* Counts the words of a line; the loop test stops one character early, so a one-letter last
 * word is lost. Expected output for "to be a": "3". */
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "to be a";
    size_t len = strlen(s);
    int words = 0, in_word = 0;
    for (size_t i = 0; i < len - 1; i++) { /* faulty: should be i < len */
        int letter = s[i] != ' ';
        words += letter & !in_word;
        in_word = letter;
    }
    printf("%d\n", words);
    return 0;
}
