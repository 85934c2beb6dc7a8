# asm_loop: integer loops without libc (adc/sbb, mul/div, shifts and rotates, bsf/bsr, cmov/setcc,
# bswap, xchg, cmpxchg, lock xadd, loop, rep stos/movs/cmps/scas), each result printed as hex.
# rtgrind-test: variants=nostdlib
        .text
        .globl _start
_start:
        /* 1. Sum of Collatz step counts for n = 1..20000. */
        xor     %r12d, %r12d            /* total steps */
        mov     $1, %ebx
1:      mov     %rbx, %rax
        xor     %ecx, %ecx
2:      cmp     $1, %rax
        je      4f
        test    $1, %al
        jz      3f
        lea     1(%rax,%rax,2), %rax    /* 3n+1 */
        inc     %rcx
        jmp     2b
3:      shr     $1, %rax
        inc     %rcx
        jmp     2b
4:      add     %rcx, %r12
        inc     %rbx
        cmp     $20000, %rbx
        jbe     1b
        mov     %r12, %rdi
        call    print_hex

        /* 2. 128-bit accumulation with adc and a 64x64->128 mul, then sbb. */
        xor     %r8d, %r8d              /* low */
        xor     %r9d, %r9d              /* high */
        movabs  $0x9e3779b97f4a7c15, %r10
        mov     $1000, %ecx
5:      mov     %r10, %rax
        mul     %rcx                    /* rdx:rax = r10 * rcx */
        add     %rax, %r8
        adc     %rdx, %r9
        loop    5b
        mov     %r9, %rdi
        call    print_hex
        mov     %r8, %rdi
        sub     %r10, %rdi
        sbb     $0, %r9
        xor     %r9, %rdi
        call    print_hex

        /* 3. Signed and unsigned division, cqo. */
        mov     $-1000000007, %rax
        cqo
        mov     $97, %rcx
        idiv    %rcx                    /* rax = quotient, rdx = remainder (negative) */
        imul    $1000, %rax, %rdi
        add     %rdx, %rdi
        call    print_hex
        mov     $0xfffffffffff, %rax
        xor     %edx, %edx
        mov     $12345, %rcx
        div     %rcx
        shl     $20, %rax
        or      %rdx, %rax
        mov     %rax, %rdi
        call    print_hex

        /* 4. Rotates, shifts by cl, bsf/bsr, bswap, cmov and setcc over a hash loop. */
        movabs  $0x0123456789abcdef, %rax
        xor     %r11d, %r11d
        mov     $500, %r13d
6:      mov     %r13d, %ecx
        and     $63, %ecx
        rol     %cl, %rax
        xor     %r13, %rax
        mov     %rax, %rdx
        shr     $7, %rdx
        sar     $3, %rax
        xor     %rdx, %rax
        bswap   %rax
        bsf     %rax, %rsi
        bsr     %rax, %rdi
        add     %rsi, %r11
        add     %rdi, %r11
        cmp     %rsi, %rdi
        cmovb   %rsi, %rdi
        setg    %dl
        movzbl  %dl, %edx
        add     %rdx, %r11
        ror     $13, %r11
        dec     %r13d
        jnz     6b
        mov     %r11, %rdi
        call    print_hex

        /* 5. xchg, cmpxchg, lock xadd on memory in .bss. */
        movq    $100, counter(%rip)
        mov     $5, %eax
        lock xadd %rax, counter(%rip)   /* counter = 105, rax = 100 */
        mov     $105, %eax
        mov     $777, %ecx
        lock cmpxchg %rcx, counter(%rip) /* equal: counter = 777 */
        mov     $1, %eax
        mov     $888, %ecx
        cmpxchg %rcx, counter(%rip)     /* not equal: rax = 777, counter unchanged */
        mov     $42, %edx
        xchg    %rdx, counter(%rip)     /* counter = 42, rdx = 777 */
        shl     $32, %rax
        add     counter(%rip), %rax
        add     %rdx, %rax
        mov     %rax, %rdi
        call    print_hex

        /* 6. rep stosb / rep movsq / repe cmpsb / repne scasb over a .bss buffer. */
        lea     buf(%rip), %rdi
        mov     $'a', %eax
        mov     $256, %ecx
        rep stosb
        movb    $'z', buf+200(%rip)
        lea     buf(%rip), %rsi
        lea     buf2(%rip), %rdi
        mov     $32, %ecx
        rep movsq
        lea     buf(%rip), %rsi
        lea     buf2(%rip), %rdi
        mov     $256, %ecx
        repe cmpsb                      /* all equal: rcx ends at 0 */
        mov     %rcx, %r14
        lea     buf2(%rip), %rdi
        mov     $'z', %eax
        mov     $256, %ecx
        repne scasb                     /* finds z at 200: rcx = 256 - 201 */
        shl     $16, %r14
        or      %rcx, %r14
        mov     %r14, %rdi
        call    print_hex

        mov     $60, %eax
        xor     %edi, %edi
        syscall
        hlt

/* print_hex(rdi): writes 16 hex digits and a newline to stdout. Preserves callee-saved regs. */
        .globl  print_hex
print_hex:
        sub     $24, %rsp
        mov     $15, %ecx
7:      mov     %edi, %eax
        and     $15, %eax
        lea     hexdigits(%rip), %rdx
        movzbl  (%rdx,%rax), %eax
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
        add     $24, %rsp
        ret

        .section .rodata
hexdigits: .ascii "0123456789abcdef"

        .bss
        .align  8
counter: .quad  0
buf:    .skip   256
buf2:   .skip   256
