# asm_hello: write(2) to stdout and stderr and exit_group(0) with raw syscalls, no libc.
# rtgrind-test: variants=nostdlib
        .text
        .globl _start
_start:
        mov     $1, %eax                /* SYS_write */
        mov     $1, %edi                /* stdout */
        lea     msg(%rip), %rsi
        mov     $msg_len, %edx
        syscall

        mov     $1, %eax
        mov     $2, %edi                /* stderr */
        lea     err(%rip), %rsi
        mov     $err_len, %edx
        syscall

        mov     $231, %eax              /* SYS_exit_group */
        xor     %edi, %edi
        syscall
        hlt

        .section .rodata
msg:    .ascii  "Hello from assembly!\n"
        .set    msg_len, . - msg
err:    .ascii  "and hello to stderr\n"
        .set    err_len, . - err
