/* Two independent faults in one output: no single branch instance fixes both. Expected
 * output: "3 4". */
#include <stdio.h>
int main(void) {
    int a = 0, b = 0;
    for (int i = 0; i < 3; i++) a++;
    for (int i = 0; i < 4; i++) b++;
    if (a == 3) a = 30; /* fault 1 */
    if (b == 4) b = 40; /* fault 2 */
    printf("%d %d\n", a, b);
    return 0;
}
