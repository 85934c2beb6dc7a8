# asm_ripdata: RIP-relative loads/stores (incl. with immediates, SSE, push/pop mem) on .data/.bss,
# lea rip-relative, jump tables (absolute and relative entries) through indirect jmp, indirect
# call/jmp through memory, call/ret, ret imm16, enter/leave, push/pop and recursion; no libc.
# rtgrind-test: variants=nostdlib
        .text
        .globl _start
_start:
        /* 1. Sum .data array with RIP-relative base + index, store result in .bss. */
        lea     values(%rip), %rbx
        xor     %eax, %eax
        xor     %ecx, %ecx
1:      add     (%rbx,%rcx,8), %rax
        inc     %ecx
        cmp     $8, %ecx
        jb      1b
        mov     %rax, result(%rip)
        mov     result(%rip), %rdi
        call    print_hex

        /* 2. RIP-relative operands with immediates (the displacement must account for them). */
        movl    $0x11223344, word32(%rip)
        addl    $0x01010101, word32(%rip)
        movb    $0x7f, byte8(%rip)
        cmpb    $0x7f, byte8(%rip)
        sete    flagbyte(%rip)
        movw    $0xbeef, word16(%rip)
        orq     $0x1000, result(%rip)
        mov     word32(%rip), %edi
        shl     $16, %rdi
        or      word16(%rip), %di
        shl     $8, %rdi
        movzbl  flagbyte(%rip), %eax
        or      %rax, %rdi
        call    print_hex
        mov     result(%rip), %rdi
        call    print_hex

        /* 3. push/pop with RIP-relative memory operands. */
        pushq   values+8(%rip)
        pushq   values+16(%rip)
        popq    spill(%rip)             /* spill = values[2] */
        popq    spill+8(%rip)           /* spill+8 = values[1] */
        mov     spill(%rip), %rdi
        sub     spill+8(%rip), %rdi
        call    print_hex

        /* 4. Jump table with absolute 8-byte entries, base via lea rip-relative. */
        xor     %r12d, %r12d
        xor     %r13d, %r13d
2:      mov     %r13d, %eax
        and     $3, %eax
        lea     abs_table(%rip), %rdx
        jmp     *(%rdx,%rax,8)
case0:  add     $1, %r12
        jmp     3f
case1:  imul    $3, %r12, %r12
        jmp     3f
case2:  xor     $0x55, %r12
        jmp     3f
case3:  sub     $7, %r12
3:      inc     %r13d
        cmp     $100, %r13d
        jb      2b
        mov     %r12, %rdi
        call    print_hex

        /* 5. PIC-style jump table of 32-bit offsets relative to the table. */
        xor     %r12d, %r12d
        xor     %r13d, %r13d
4:      mov     %r13d, %eax
        xor     %edx, %edx
        mov     $5, %ecx
        div     %ecx                    /* edx = r13 % 5 */
        lea     rel_table(%rip), %rcx
        movslq  (%rcx,%rdx,4), %rax
        add     %rcx, %rax
        jmp     *%rax
r0:     add     $10, %r12
        jmp     5f
r1:     shl     $1, %r12
        jmp     5f
r2:     add     %r13, %r12
        jmp     5f
r3:     ror     $5, %r12
        jmp     5f
r4:     not     %r12
5:      inc     %r13d
        cmp     $200, %r13d
        jb      4b
        mov     %r12, %rdi
        call    print_hex

        /* 6. Indirect calls: through a register, through RIP-relative memory, through a table. */
        lea     double_it(%rip), %rax
        mov     $21, %edi
        call    *%rax
        mov     %rax, %rdi
        call    *fnptr(%rip)            /* add_one */
        mov     %rax, %rdi
        mov     $1, %ecx
        lea     fn_table(%rip), %rdx
        call    *(%rdx,%rcx,8)          /* double_it */
        mov     %rax, %rdi
        call    print_hex

        /* 7. Tail jump through memory: jmp *ptr(%rip) to a function that returns to our caller. */
        mov     $1000, %edi
        call    tail_caller
        mov     %rax, %rdi
        call    print_hex

        /* 8. Recursion with frames: factorial(20) using enter/leave and stack arguments. */
        mov     $20, %edi
        call    factorial
        mov     %rax, %rdi
        call    print_hex

        /* 9. Stack argument popped by the callee with ret $16. */
        pushq   $0x1234
        pushq   $0x4321
        call    sum_stack_args
        mov     %rax, %rdi
        call    print_hex

        /* 10. SSE with RIP-relative operands. */
        movdqa  vec_a(%rip), %xmm0
        paddd   vec_b(%rip), %xmm0
        movdqa  %xmm0, vec_out(%rip)
        mov     vec_out(%rip), %rdi
        xor     vec_out+8(%rip), %rdi
        call    print_hex

        mov     $231, %eax
        xor     %edi, %edi
        syscall
        hlt

double_it:
        lea     (%rdi,%rdi,1), %rax
        ret
add_one:
        lea     1(%rdi), %rax
        ret

tail_caller:
        add     $5, %rdi
        jmp     *tail_target(%rip)      /* double_it returns straight to our caller */

factorial:                              /* rax = rdi!, one real frame per level */
        enter   $16, $0
        mov     %rdi, -8(%rbp)
        cmp     $1, %rdi
        jbe     6f
        dec     %rdi
        call    factorial
        imul    -8(%rbp), %rax
        leave
        ret
6:      mov     $1, %eax
        leave
        ret

sum_stack_args:                         /* two 8-byte stack arguments, callee pops them */
        push    %rbp
        mov     %rsp, %rbp
        mov     16(%rbp), %rax
        shl     $16, %rax
        add     24(%rbp), %rax
        pop     %rbp
        ret     $16

/* print_hex(rdi): writes 16 hex digits and a newline to stdout. */
print_hex:
        push    %rbx
        sub     $32, %rsp
        lea     hexdigits(%rip), %rbx
        mov     $15, %ecx
7:      mov     %edi, %eax
        and     $15, %eax
        movzbl  (%rbx,%rax), %eax
        mov     %al, (%rsp,%rcx)
        shr     $4, %rdi
        dec     %ecx
        jns     7b
        movb    $10, 16(%rsp)
        mov     $1, %eax
        mov     $1, %edi
        mov     %rsp, %rsi
        mov     $17, %edx
        syscall
        add     $32, %rsp
        pop     %rbx
        ret

        .section .rodata
        .align  8
abs_table:
        .quad   case0, case1, case2, case3
rel_table:
        .long   r0 - rel_table, r1 - rel_table, r2 - rel_table, r3 - rel_table, r4 - rel_table
hexdigits:
        .ascii  "0123456789abcdef"
        .align  16
vec_a:  .long   1, 2, 3, 0x7fffffff
vec_b:  .long   0x10, 0x20, 0x30, 1

        .data
        .align  8
values: .quad   3, 1, 4, 1, 5, 9, 2, 6
fnptr:  .quad   add_one
fn_table:
        .quad   add_one, double_it
tail_target:
        .quad   double_it
word32: .long   0
word16: .word   0
byte8:  .byte   0
flagbyte: .byte 0

        .bss
        .align  16
vec_out: .skip  16
result: .skip   8
spill:  .skip   16
