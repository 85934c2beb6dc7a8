// args_env: argc/argv as passed on the command line (and that argv/envp are NULL-terminated).
// rtgrind-test: args=alpha beta "two words" gamma-123 --flag=value x
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv, char **envp)
{
    printf("argc=%d\n", argc);
    for (int i = 1; i < argc; i++)
        printf("argv[%d]=%s (len %zu)\n", i, argv[i], strlen(argv[i]));
    printf("argv[argc] is %s\n", argv[argc] == NULL ? "NULL" : "not NULL");
    /* The environment differs between runs; only check that it is well formed. */
    int n = 0, bad = 0;
    for (char **e = envp; *e; e++, n++)
        if (!strchr(*e, '='))
            bad++;
    printf("envp well formed: %s\n", bad == 0 ? "yes" : "no");
    return 0;
}
