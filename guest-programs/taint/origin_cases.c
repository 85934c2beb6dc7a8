/* Origins, one rule per case: run under `rtgrind --tool=taint --track-origins=yes`, each case
 * asks for the guest pc that defined some bytes and compares it with the address of the
 * instruction that should have (a local label in the inline assembly). Prints `NAME: ok` or
 * `NAME: WRONG ...`; tests/tools.rs expects every case ok. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "../include/rtgrind.h"

static unsigned long a[8], b[8], c[8];
static unsigned char buf[64], copy[64];
static unsigned long grains[4], got[2], got2[3];
static unsigned char copy2[64];

static void check(const char *name, const void *p, unsigned long want) {
    unsigned long got = RTGRIND_GET_ORIGIN_PC(p);
    if (got == want) printf("%s: ok\n", name);
    else printf("%s: WRONG (defined at %#lx, expected %#lx)\n", name, got, want);
}

int main(void) {
    unsigned long where = 0;
    if (!RTGRIND_RUNNING_ON_RTGRIND()) {
        puts("not under rtgrind");
        return 1;
    }

    /* A computation defines its result. */
    __asm__ volatile("mov %2, %%rax\n\tlea 1f(%%rip), %%rcx\n\tmov %%rcx, %1\n"
                     "1:\tadd $5, %%rax\n\tmov %%rax, %0"
                     : "=m"(a[0]), "=m"(where) : "m"(b[0]) : "rax", "rcx", "cc");
    check("add_defines", &a[0], where);
    unsigned long add_at = where;

    /* Copies keep the original definition: register moves, push/pop, store, load. */
    __asm__ volatile("mov %1, %%rax\n\tmov %%rax, %%rbx\n\tpush %%rbx\n\tpop %%rdx\n\tmov %%rdx, %0"
                     : "=m"(c[0]) : "m"(a[0]) : "rax", "rbx", "rdx");
    check("copies_keep", &c[0], where);

    /* A vector computation defines, vector moves keep. */
    __asm__ volatile("movdqu %2, %%xmm0\n\tlea 1f(%%rip), %%rcx\n\tmov %%rcx, %1\n"
                     "1:\tpaddb %%xmm0, %%xmm0\n\tmovdqu %%xmm0, %%xmm3\n\tmovdqu %%xmm3, %0"
                     : "=m"(*(char(*)[16])&a[2]), "=m"(where) : "m"(*(char(*)[16])&b[2]) : "rcx", "xmm0", "xmm3");
    check("vector_compute_defines", &a[2], where);
    check("vector_copy_keeps_upper_granule", &a[3], where);

    /* A vector register computed twice: the first definition is read by a copy between
     * the two (so its origin must be written), the second is the stored one. */
    {
        unsigned long first = 0, second = 0;
        __asm__ volatile("movdqu %4, %%xmm0\n\tlea 1f(%%rip), %%rcx\n\tmov %%rcx, %2\n\tlea 2f(%%rip), %%rcx\n\tmov %%rcx, %3\n"
                         "1:\tpaddb %%xmm0, %%xmm0\n\tmovdqu %%xmm0, %%xmm4\n"
                         "\tpminub %%xmm4, %%xmm0\n"
                         "2:\tpaddb %%xmm0, %%xmm0\n\tmovdqu %%xmm4, %0\n\tmovdqu %%xmm0, %1"
                         : "=m"(*(char(*)[16])&a[4]), "=m"(*(char(*)[16])&c[4]), "=m"(first), "=m"(second)
                         : "m"(*(char(*)[16])&b[4]) : "rcx", "xmm0", "xmm4");
        check("vector_copy_between_definitions", &a[4], first);
        check("vector_last_definition", &c[4], second);
    }

    /* A library copy keeps it too. */
    __asm__ volatile("mov %2, %%rax\n\tlea 1f(%%rip), %%rcx\n\tmov %%rcx, %1\n"
                     "1:\txor $0x55, %%rax\n\tmov %%rax, %0"
                     : "=m"(*(unsigned long *)(buf + 40)), "=m"(where) : "m"(b[1]) : "rax", "rcx", "cc");
    memcpy(copy, buf, sizeof buf);
    check("memcpy_keeps", copy + 40, where);
    /* So does `rep movsb` (its origins move after it ran). */
    const unsigned char *from = buf;
    unsigned char *to = copy2;
    unsigned long n = sizeof buf;
    __asm__ volatile("rep movsb" : "+S"(from), "+D"(to), "+c"(n) : : "memory");
    check("rep_movsb_keeps", copy2 + 40, where);
    /* To an unaligned destination: the last byte's granule is one more than the source's. */
    from = buf + 40;
    to = copy2 + 13;
    n = 8;
    __asm__ volatile("rep movsb" : "+S"(from), "+D"(to), "+c"(n) : : "memory");
    check("rep_movsb_unaligned_first", copy2 + 13, where);
    check("rep_movsb_unaligned_last", copy2 + 20, where);
    /* `rep stos` gives what it fills rax's origin, from an unaligned start to its end. */
    {
        unsigned char *fill = copy2 + 3;
        unsigned long count = 50;
        __asm__ volatile("mov %3, %%rax\n\tlea 1f(%%rip), %%rdx\n\tmov %%rdx, %2\n"
                         "1:\tadd $7, %%rax\n\trep stosb"
                         : "+D"(fill), "+c"(count), "=m"(where) : "m"(b[2]) : "rax", "rdx", "memory", "cc");
        check("rep_stosb_fill_first", copy2 + 3, where);
        check("rep_stosb_fill_last", copy2 + 52, where);
    }

    /* Stack copies keep it where the stack pointer is not 8-aligned: a push then covers two
     * origin granules, and a load of its upper half reads the second. */
    __asm__ volatile("mov %2, %%rax\n\tmov %%rsp, %%rbx\n\tsub $132, %%rsp\n\tpush %%rax\n\tpush %%rax\n"
                     "\tpop %%rdx\n\tmov 4(%%rsp), %%ecx\n\tmov %%rbx, %%rsp\n\tmov %%rdx, %0\n\tmov %%rcx, %1"
                     : "=m"(c[5]), "=m"(c[6]) : "m"(a[0]) : "rax", "rbx", "rcx", "rdx", "cc");
    check("misaligned_push_pop_keeps", &c[5], add_at);
    check("misaligned_push_upper_half_keeps", &c[6], add_at);
    /* The same with the stack pointer misaligned where a block starts (a jump ends the one
     * before; a fresh definition, so stale granules from the case above cannot pass), the
     * upper half read through another register: the fast version, which assumes the stack
     * pointer 8-aligned, must not run there. */
    __asm__ volatile("mov %3, %%rax\n\tlea 2f(%%rip), %%rcx\n\tmov %%rcx, %2\n2:\tadd $3, %%rax\n"
                     "\tmov %%rsp, %%rbx\n\tsub $132, %%rsp\n\tjmp 1f\n1:\tpush %%rax\n\tpush %%rax\n"
                     "\tpop %%rdx\n\tmov -136(%%rbx), %%ecx\n\tmov %%rbx, %%rsp\n\tmov %%rdx, %0\n\tmov %%rcx, %1"
                     : "=m"(c[7]), "=m"(b[7]), "=m"(where) : "m"(a[0]) : "rax", "rbx", "rcx", "rdx", "cc");
    check("block_with_misaligned_stack_keeps", &c[7], where);
    check("block_with_misaligned_stack_upper_half_keeps", &b[7], where);

    /* Accesses through one base register (its origin granules kept for the block) that
     * moves by a constant between them: an unaligned store covers granules 0 and 1, a load
     * from granule 1 takes its origin, one from granule 2 none. */
    __asm__ volatile("mov %2, %%rax\n\tlea %3, %%rdi\n\tmov %%rax, 3(%%rdi)\n\tadd $8, %%rdi\n"
                     "\tmov 3(%%rdi), %%rdx\n\tmov 11(%%rdi), %%rcx\n\tmov %%rdx, %0\n\tmov %%rcx, %1"
                     : "=m"(got[0]), "=m"(got[1]) : "m"(a[0]), "m"(grains) : "rax", "rcx", "rdx", "rdi", "cc");
    check("moved_base_unaligned_store_keeps", &got[0], add_at);
    check("moved_base_untouched_granule", &got[1], 0);

    /* A general register defined (lea), loaded, copied, then computed on: the copy reads the
     * load's origin (so the load must write it, though the register is redefined after), the
     * computation defines afresh, and `movzx edx, dl` copies a register into itself. */
    {
        unsigned long second = 0;
        __asm__ volatile("lea 1f(%%rip), %%rcx\n\tmov %%rcx, %3\n\tlea (%%rcx), %%rax\n\tmov %4, %%rax\n\tmov %%eax, %%edx\n"
                         "1:\tadd $1, %%eax\n\tmovzx %%dl, %%edx\n\tmov %%rdx, %0\n\tmov %%rax, %1\n"
                         "\tlea (%%rcx), %%rax\n\tmov %4, %%rax\n\tmovzx %%al, %%eax\n\tmov %%rax, %2"
                         : "=m"(got2[0]), "=m"(got2[1]), "=m"(got2[2]), "=m"(second) : "m"(a[0]) : "rax", "rcx", "rdx", "cc");
        check("gpr_copy_between_definitions", &got2[0], add_at);
        check("gpr_last_definition", &got2[1], second);
        check("gpr_self_copy_keeps", &got2[2], add_at);
    }

    /* Constants define nothing: a zeroing idiom, an immediate. */
    __asm__ volatile("mov %1, %%rax\n\txor %%eax, %%eax\n\tmov %%rax, %0" : "=m"(c[1]) : "m"(a[0]) : "rax", "cc");
    check("zeroing_defines_nothing", &c[1], 0);
    __asm__ volatile("movq $7, %0" : "=m"(c[2]));
    check("immediate_defines_nothing", &c[2], 0);

    /* A call defines its return address. */
    __asm__ volatile("lea 1f(%%rip), %%rcx\n\tmov %%rcx, %1\n"
                     "1:\tcall 2f\n2:\tpop %%rax\n\tmov %%rax, %0"
                     : "=m"(c[3]), "=m"(where) : : "rax", "rcx");
    check("call_defines_return_address", &c[3], where);

    /* read() defines its buffer (at the syscall instruction inside libc). */
    int fds[2];
    if (pipe(fds) != 0 || write(fds[1], "hello", 5) != 5 || read(fds[0], c + 4, 5) != 5) return 2;
    unsigned long at = RTGRIND_GET_ORIGIN_PC(c + 4);
    unsigned char insn[2] = {0, 0};
    if (at) memcpy(insn, (void *)at, 2);
    printf("read_defines_buffer: %s\n", insn[0] == 0x0f && insn[1] == 0x05 ? "ok" : "WRONG (not a syscall instruction)");
    return 0;
}
