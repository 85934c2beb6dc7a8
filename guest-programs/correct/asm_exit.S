# asm_exit: exit status 7 via SYS_exit (not exit_group), after a little register arithmetic.
# rtgrind-test: variants=nostdlib
# rtgrind-test: exit=7
        .text
        .globl _start
_start:
        mov     $3, %edi
        lea     1(%rdi,%rdi,1), %edi    /* 3*2+1 = 7 */
        mov     $60, %eax               /* SYS_exit */
        syscall
        hlt
