/* Shadow propagation, one instruction class per case: each case taints chosen source
 * bytes with a client request, runs the instruction in inline assembly, stores the
 * destination with a plain move (which copies shadow byte for byte) and prints the shadow of
 * the stored bytes, one digit per byte. tests/taint.rs holds the expected lines. */
#include <stdio.h>
#include <string.h>
#include "../include/rtgrind.h"

static unsigned char src[64], dst[64], clean[64];
/* Far from src: more than a summary chunk (256 KiB) away. */
static unsigned char far_away[2 << 20];

static void show(const char *name, const void *p, size_t n) {
    unsigned char t[64];
    memset(t, 9, sizeof t);
    RTGRIND_GET_TAINT(p, n, t);
    printf("%s: ", name);
    for (size_t i = 0; i < n; i++) printf("%d", t[i]);
    printf("\n");
}

static void reset(void) {
    memset(src, 0x11, sizeof src);
    memset(dst, 0, sizeof dst);
    memset(clean, 0x22, sizeof clean);
    RTGRIND_UNTAINT(src, sizeof src);
    RTGRIND_UNTAINT(dst, sizeof dst);
    RTGRIND_UNTAINT(clean, sizeof clean);
}

/* src bytes 2 and 5 tainted */
static void taint25(void) {
    RTGRIND_TAINT(src + 2, 1);
    RTGRIND_TAINT(src + 5, 1);
}

int main(void) {
    if (!RTGRIND_RUNNING_ON_RTGRIND()) {
        puts("not under rtgrind");
        return 1;
    }
    reset(); taint25();
    __asm__ volatile("mov %1, %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src) : "rax");
    show("mov_load_store", dst, 8);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\tmov %2, %%eax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(int *)clean) : "rax");
    show("mov32_zero_extends", dst, 8);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\tmov %2, %%al\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(char *)clean) : "rax");
    show("mov8_keeps_rest", dst, 8);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\tmov %2, %%ax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(short *)clean) : "rax");
    show("mov16_keeps_rest", dst, 8);

    reset(); RTGRIND_TAINT(src, 1);
    __asm__ volatile("mov %2, %%rax\n\tmov %1, %%ah\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(char *)src), "m"(*(long *)clean) : "rax");
    show("mov_high_byte", dst, 8);

    reset(); RTGRIND_TAINT(src + 3, 1);
    __asm__ volatile("mov %2, %%rax\n\tmov %1, %%rbx\n\tadd %%rbx, %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx", "cc");
    show("add_merges", dst, 8);

    reset(); RTGRIND_TAINT(src, 1);
    __asm__ volatile("mov %2, %%rax\n\tmov %1, %%rbx\n\tadd %%ebx, %%eax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx", "cc");
    show("add32_zero_extends", dst, 8);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\txor %%eax, %%eax\n\tmov %%rax, %0\n\tsetz %2" : "=m"(*(long *)dst), "=m"(dst[8]) : "m"(*(long *)src) : "rax", "cc");
    show("xor_zeroing", dst, 9);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\tcmp $5, %%rax\n\tsetz %0" : "=m"(dst[0]) : "m"(*(long *)src) : "rax", "cc");
    show("cmp_taints_flags", dst, 1);

    /* A computation with a memory source spreads any tainted byte of it: 8 bytes, 32 bytes. */
    reset(); RTGRIND_TAINT(src + 5, 1);
    __asm__ volatile("mov %2, %%rax\n\tadd %1, %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "cc");
    show("add_from_memory_spreads", dst, 8);
    reset(); RTGRIND_TAINT(src + 29, 1);
    __asm__ volatile("vmovdqu %2, %%ymm0\n\tvpaddb %1, %%ymm0, %%ymm1\n\tvmovdqu %%ymm1, %0\n\tvzeroupper"
                     : "=m"(*(char(*)[32])dst) : "m"(*(char(*)[32])src), "m"(*(char(*)[32])clean) : "xmm0", "xmm1");
    show("vpaddb_from_memory_spreads", dst, 32);

    /* Copies while the guest's flags are live (set by cmp, read by setz): propagated without
     * touching the flags (a load, a 32-bit move, push and pop, a store). */
    reset(); taint25();
    __asm__ volatile("xor %%ecx, %%ecx\n\tcmp %%rcx, %%rcx\n\tmov %2, %%rax\n\tmov %%eax, %%ebx\n\tpush %%rbx\n\tpop %%rdx\n\tmov %%rdx, %0\n\tsetz %1"
                     : "=m"(*(long *)dst), "=m"(dst[8]) : "m"(*(long *)src) : "rax", "rbx", "rcx", "rdx", "cc");
    show("copies_with_live_flags", dst, 9);

    /* A clean copy over a tainted register while tainted flags are live. */
    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %2, %%rax\n\tcmp $5, %%rax\n\tmov %2, %%rbx\n\tmov %3, %%rbx\n\tmov %%rbx, %0\n\tsetz %1"
                     : "=m"(*(long *)dst), "=m"(dst[8]) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx", "cc");
    show("clean_copy_with_live_flags", dst, 9);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\tmov %2, %%rbx\n\tcmp $5, %%rbx\n\tsetz %0" : "=m"(dst[0]) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx", "cc");
    show("cmp_clean_flags", dst, 1);

    reset(); RTGRIND_TAINT(src, 1);
    __asm__ volatile("mov %1, %%rbx\n\tmov %2, %%rcx\n\tlea 4(%%rbx,%%rcx,2), %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx", "rcx");
    show("lea_merges_base", dst, 8);

    {
        static unsigned char *ptr;
        reset(); ptr = clean; RTGRIND_TAINT(&ptr, 8);
        __asm__ volatile("mov %1, %%rbx\n\tmov (%%rbx), %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(ptr) : "rax", "rbx");
        show("tainted_pointer_clean_data", dst, 8);
    }

    reset(); taint25();
    __asm__ volatile("mov %1, %%rax\n\tpush %%rax\n\tpop %%rcx\n\tmov %%rcx, %0" : "=m"(*(long *)dst) : "m"(*(long *)src) : "rax", "rcx");
    show("push_pop", dst, 8);

    /* One base register, two loads: the second from another 1 TiB slice of memory (the
     * stack, not the program's data), whose shadow lies elsewhere. */
    reset();
    {
        unsigned char local[16];
        memset(local, 0, sizeof local);
        RTGRIND_TAINT(local + 1, 1);
        __asm__ volatile("lea %2, %%rdi\n\tmov (%%rdi), %%rax\n\tlea %3, %%rdi\n\tmov (%%rdi), %%rdx\n\tmov %%rdx, %0\n\tmov %%rax, %1"
                         : "=m"(*(long *)dst), "=m"(*(long *)(dst + 8)) : "m"(*(long *)clean), "m"(*(long *)local) : "rax", "rdx", "rdi");
        show("base_moved_to_another_slice", dst, 16);
    }

    reset(); taint25();
    __asm__ volatile("mov %2, %%rax\n\tmov %3, %%rbx\n\txchg %%rax, %%rbx\n\tmov %%rax, %0\n\tmov %%rbx, %1"
                     : "=m"(*(long *)dst), "=m"(*(long *)(dst + 8)) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx");
    show("xchg_swaps", dst, 16);

    reset(); RTGRIND_TAINT(src, 1);
    __asm__ volatile("mov %2, %%rax\n\tmov %1, %%rbx\n\tcmp %%rcx, %%rcx\n\tcmovz %%rbx, %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rbx", "cc");
    show("cmov_merges", dst, 8);

    reset(); RTGRIND_TAINT(src, 1);
    __asm__ volatile("movzbl %1, %%eax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(src[0]) : "rax");
    show("movzx_copies_low", dst, 8);

    reset(); taint25();
    __asm__ volatile("lea %1, %%rsi\n\tlea %0, %%rdi\n\tmov $16, %%ecx\n\trep movsb" : "=m"(*(char(*)[16])dst) : "m"(*(char(*)[16])src) : "rsi", "rdi", "rcx", "memory");
    show("rep_movsb_copies", dst, 16);

    reset(); RTGRIND_TAINT(src, 1);
    __asm__ volatile("movzbl %1, %%eax\n\tlea %0, %%rdi\n\tmov $8, %%ecx\n\trep stosb" : "=m"(*(char(*)[8])dst) : "m"(src[0]) : "rax", "rdi", "rcx", "memory");
    show("rep_stosb_fills", dst, 8);

    reset(); taint25(); RTGRIND_TAINT(src + 12, 1);
    __asm__ volatile("movdqu %1, %%xmm0\n\tmovdqu %%xmm0, %0" : "=m"(*(char(*)[16])dst) : "m"(*(char(*)[16])src) : "xmm0");
    show("movdqu_copies", dst, 16);

    reset(); RTGRIND_TAINT(src + 7, 1);
    __asm__ volatile("vmovdqu %1, %%ymm0\n\tvpaddb %%ymm0, %%ymm0, %%ymm1\n\tvmovdqu %%ymm1, %0\n\tvzeroupper" : "=m"(*(char(*)[32])dst) : "m"(*(char(*)[32])src) : "xmm0", "xmm1");
    show("vpaddb_spreads", dst, 32);

    reset(); RTGRIND_TAINT(src, 32);
    __asm__ volatile("vmovdqu %1, %%ymm1\n\tvmovdqu %2, %%xmm1\n\tvmovdqu %%ymm1, %0\n\tvzeroupper" : "=m"(*(char(*)[32])dst) : "m"(*(char(*)[32])src), "m"(*(char(*)[16])clean) : "xmm1");
    show("vex128_clears_upper", dst, 32);

    reset(); RTGRIND_TAINT(src, 32);
    __asm__ volatile("vmovdqu %1, %%ymm1\n\tmovdqu %2, %%xmm1\n\tvmovdqu %%ymm1, %0\n\tvzeroupper" : "=m"(*(char(*)[32])dst) : "m"(*(char(*)[32])src), "m"(*(char(*)[16])clean) : "xmm1");
    show("sse_keeps_upper", dst, 32);

    reset(); RTGRIND_TAINT(src, 16);
    __asm__ volatile("movdqu %1, %%xmm0\n\tpxor %%xmm0, %%xmm0\n\tmovdqu %%xmm0, %0" : "=m"(*(char(*)[16])dst) : "m"(*(char(*)[16])src) : "xmm0");
    show("pxor_zeroing", dst, 16);

    reset(); RTGRIND_TAINT(src, 8);
    __asm__ volatile("mov %1, %%rax\n\tcall 1f\n1:\tpop %%rax\n\tmov %%rax, %0" : "=m"(*(long *)dst) : "m"(*(long *)src) : "rax");
    show("call_pushes_clean", dst, 8);

    reset(); taint25(); RTGRIND_TAINT(src + 40, 3);
    memcpy(dst, src, 48);
    show("memcpy_copies", dst, 48);

    reset(); RTGRIND_TAINT(src + 3, 1);
    {
        /* A chunk boundary: copy across a 64 KiB shadow chunk edge. */
        static unsigned char big[3 << 16] __attribute__((aligned(65536)));
        unsigned char *edge = big + (1 << 16) - 4;
        __asm__ volatile("mov %1, %%rax\n\tmov %%rax, %0" : "=m"(*(long *)edge) : "m"(*(long *)src) : "rax");
        show("across_chunks", edge, 8);
    }

    /* Loads through one base register, the tainted byte read only by a later one: two vector
     * loads (a merge); scalar loads with the base moved by a constant between them, and a
     * vector load after them (the fast version checks such loads together, at the first).
     * Earlier cases left ymm0 and ymm1 tainted, which would keep the blocks in their full
     * version. */
    reset();
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\tvpxor %%xmm1, %%xmm1, %%xmm1" : : : "xmm0", "xmm1");
    RTGRIND_TAINT(src + 33, 1);
    __asm__ volatile("lea %1, %%rdi\n\tvmovdqu (%%rdi), %%ymm0\n\tvpminub 32(%%rdi), %%ymm0, %%ymm1\n\tvmovdqu %%ymm1, %0"
                     : "=m"(*(char(*)[32])dst) : "m"(*(char(*)[64])src) : "rdi", "xmm0", "xmm1");
    show("vector_loads_of_a_span", dst, 32);
    reset(); RTGRIND_TAINT(src + 50, 1);
    __asm__ volatile("lea %2, %%rdi\n\tmov (%%rdi), %%rax\n\tmov 8(%%rdi), %%rcx\n\tadd $16, %%rdi\n\tmov 32(%%rdi), %%rdx\n\t"
                     "vmovdqu 16(%%rdi), %%xmm0\n\tmov %%rax, %0\n\tmov %%rdx, %1\n\tvmovdqu %%xmm0, 16%0"
                     : "=m"(*(long *)dst), "=m"(*(long *)(dst + 8)) : "m"(*(char(*)[64])src) : "rax", "rcx", "rdx", "rdi", "xmm0", "cc");
    show("later_load_of_a_span", dst, 32);
    /* Clean stores through a base register over tainted bytes: the fast version checks
     * their shadow rather than clearing it, and must hand over to the full one here. */
    reset(); RTGRIND_TAINT(dst, 32);
    __asm__ volatile("lea %0, %%rdi\n\tmov %1, %%rax\n\tmov %%rax, (%%rdi)\n\tmov %%al, 9(%%rdi)\n\t"
                     "vmovdqu %2, %%xmm0\n\tvmovdqu %%xmm0, 16(%%rdi)"
                     : "=m"(*(char(*)[32])dst) : "m"(*(long *)clean), "m"(*(char(*)[16])clean) : "rax", "rdi", "xmm0");
    show("clean_stores_over_taint", dst, 32);
    /* Pops checked together at the first (a block entered by a call, whose flags are dead
     * at its start, so it runs its fast version: the pushes are in another block): the
     * second pop's slot is tainted. */
    reset(); taint25();
    __asm__ volatile("push %2\n\tpush %3\n\tcall 1f\n1:\n\txor %%ecx, %%ecx\n\tpop %%rcx\n\tpop %%rax\n\tpop %%rdx\n\t"
                     "mov %%rax, %0\n\tmov %%rdx, %1"
                     : "=m"(*(long *)dst), "=m"(*(long *)(dst + 8)) : "m"(*(long *)src), "m"(*(long *)clean) : "rax", "rcx", "rdx");
    show("pops_checked_at_the_first", dst, 16);
    /* A copy of taint far away (the full version's call-out copies it, as a fast version
     * must not: the destination's chunk gets marked), then a load of it in a new block
     * whose fast version checks the summary there. */
    reset(); taint25();
    __asm__ volatile("lea %1, %%rsi\n\tlea %2, %%rdi\n\tmov $16, %%ecx\n\trep movsb\n\tjmp 1f\n1:\n\t"
                     "mov %2, %%rax\n\tmov %%rax, %0\n\tmov 8%2, %%rax\n\tmov %%rax, 8%0"
                     : "=m"(*(char(*)[16])dst) : "m"(*(char(*)[16])src), "m"(*(char(*)[16])(far_away + (1 << 20))) : "rax", "rsi", "rdi", "rcx", "memory");
    show("movs_to_a_far_chunk", dst, 16);
    /* A clean fill over taint in a fast version: the summary is marked there, so the fill
     * clears the shadow. */
    reset(); RTGRIND_TAINT(dst, 16);
    __asm__ volatile("xor %%eax, %%eax\n\tlea %0, %%rdi\n\tmov $12, %%ecx\n\trep stosb"
                     : "=m"(*(char(*)[16])dst) : : "rax", "rdi", "rcx", "memory");
    show("stos_clears_taint", dst, 16);
    return 0;
}
