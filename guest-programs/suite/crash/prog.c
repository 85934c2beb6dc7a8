/* rpn: a small reverse-Polish calculator with named operators.
 *
 * usage: rpn TOKEN...
 * Each token is an integer, which is pushed, or an operator name:
 *   add sub mul div mod neg dup swap drop max min
 * After the last token the stack is printed bottom to top.  An unknown
 * operator, a stack underflow or a division by zero is reported and ends the
 * calculation.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_MAX 16

struct op {
    const char *name;
    int arity;
    char code;
};

/* The operator table, terminated by an entry with a NULL name. */
static const struct op ops[] = {
    {"add", 2, '+'}, {"sub", 2, '-'}, {"mul", 2, '*'}, {"div", 2, '/'},
    {"mod", 2, '%'}, {"neg", 1, 'n'}, {"dup", 1, 'd'}, {"swap", 2, 's'},
    {"drop", 1, 'x'}, {"max", 2, 'M'}, {"min", 2, 'm'},
    {NULL, 0, 0},
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]) - 1)

static const struct op *lookup(const char *name)
{
    for (int i = 0; i <= NOPS; i++) { /* FAULT */
        if (ops[i].name[0] == name[0] && strcmp(ops[i].name, name) == 0)
            return &ops[i];
    }
    return NULL;
}

static int is_number(const char *s)
{
    if (*s == '-' && s[1])
        s++;
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    long st[STACK_MAX];
    int sp = 0;

    for (int i = 1; i < argc; i++) {
        const char *tok = argv[i];
        const struct op *op;
        long a, b;
        if (is_number(tok)) {
            if (sp == STACK_MAX) {
                printf("error: stack full\n");
                break;
            }
            st[sp++] = atol(tok);
            continue;
        }
        op = lookup(tok);
        if (op == NULL) {
            printf("error: unknown operator '%s'\n", tok);
            break;
        }
        if (sp < op->arity) {
            printf("error: %s needs %d operands\n", op->name, op->arity);
            break;
        }
        b = st[sp - 1];
        a = op->arity == 2 ? st[sp - 2] : 0;
        if ((op->code == '/' || op->code == '%') && b == 0) {
            printf("error: division by zero\n");
            break;
        }
        if (op->code == 'd' && sp == STACK_MAX) {
            printf("error: stack full\n");
            break;
        }
        sp -= op->arity;
        switch (op->code) {
        case '+': st[sp++] = a + b; break;
        case '-': st[sp++] = a - b; break;
        case '*': st[sp++] = a * b; break;
        case '/': st[sp++] = a / b; break;
        case '%': st[sp++] = a % b; break;
        case 'n': st[sp++] = -b; break;
        case 'd': st[sp++] = b; st[sp++] = b; break;
        case 's': st[sp++] = b; st[sp++] = a; break;
        case 'x': break;
        case 'M': st[sp++] = a > b ? a : b; break;
        case 'm': st[sp++] = a < b ? a : b; break;
        }
    }
    printf("stack:");
    for (int i = 0; i < sp; i++)
        printf(" %ld", st[i]);
    printf("\n");
    return 0;
}
