// jit_smc: JIT-style generated code: RWX and W^X (RW -> mprotect RX) buffers, rewriting code that
// has already run, munmap + remap at the same address, immediates patched in a hot loop, code
// patched by other generated code in the same page, and a generated trampoline back into C.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

typedef int (*fn0)(void);
typedef int (*fn1)(int);
typedef void (*patch_fn)(void *, int);
typedef long (*fn2)(long, long);

static size_t page;

/* mov eax, imm32 ; ret */
static void emit_ret_const(unsigned char *p, int32_t v)
{
    p[0] = 0xb8;
    memcpy(p + 1, &v, 4);
    p[5] = 0xc3;
}

/* int sum(int n): eax = n + (n-1) + ... + 1, with a backward branch inside the generated code.
 * xor eax,eax; test edi,edi; jle done; loop: add eax,edi; dec edi; jnz loop; done: ret */
static const unsigned char sum_code[] = { 0x31, 0xc0, 0x85, 0xff, 0x7e, 0x06, 0x01, 0xf8,
                                          0xff, 0xcf, 0x75, 0xfa, 0xc3 };
enum { SUM_OP_OFFSET = 6 };

static long c_callback(long a, long b)
{
    return a * 1000 + b;
}

static void *map(int prot)
{
    void *p = mmap(NULL, page, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        _exit(1);
    }
    return p;
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);

    /* 1. RWX buffer: write, call, rewrite, call again. */
    unsigned char *rwx = map(PROT_READ | PROT_WRITE | PROT_EXEC);
    emit_ret_const(rwx, 42);
    fn0 f = (fn0)rwx;
    printf("rwx first: %d\n", f());
    emit_ret_const(rwx, 1234567);
    printf("rwx rewritten: %d\n", f());
    rwx[1] = 7; /* patch a single byte of the immediate */
    printf("rwx one byte patched: %d\n", f());

    /* 2. A loop that patches the immediate before each call: every call must see the new code. */
    long total = 0;
    for (int i = 0; i < 2000; i++) {
        int32_t v = i * 3 - 1000;
        memcpy(rwx + 1, &v, 4);
        total += f();
    }
    printf("patched-immediate loop total: %ld\n", total);

    /* 3. Code with a loop inside; then flip add -> sub in place. */
    memcpy(rwx + 64, sum_code, sizeof sum_code);
    fn1 sum = (fn1)(rwx + 64);
    printf("generated sum(100)=%d sum(0)=%d\n", sum(100), sum(0));
    rwx[64 + SUM_OP_OFFSET] = 0x29; /* sub eax, edi */
    printf("after add->sub patch: sum(100)=%d\n", sum(100));

    /* 4. Generated code patches other generated code in the same page: mov [rdi], esi ; ret */
    static const unsigned char store_code[] = { 0x89, 0x37, 0xc3 };
    memcpy(rwx + 128, store_code, sizeof store_code);
    emit_ret_const(rwx + 192, 5);
    patch_fn patch = (patch_fn)(rwx + 128);
    fn0 target = (fn0)(rwx + 192);
    long acc = 0;
    for (int i = 0; i < 100; i++) {
        acc += target();
        patch(rwx + 193, i * i);
    }
    printf("code patched by generated code: acc=%ld last=%d\n", acc, target());

    /* 5. Trampoline from generated code into C: mov rax, imm64 ; jmp rax */
    unsigned char *t = rwx + 256;
    uint64_t cb = (uint64_t)(uintptr_t)c_callback;
    t[0] = 0x48;
    t[1] = 0xb8;
    memcpy(t + 2, &cb, 8);
    t[10] = 0xff;
    t[11] = 0xe0;
    printf("trampoline to C: %ld\n", ((fn2)t)(12, 34));
    munmap(rwx, page);

    /* 6. W^X: write while RW, mprotect to RX, call; back to RW, rewrite, RX again, call. */
    unsigned char *wx = map(PROT_READ | PROT_WRITE);
    emit_ret_const(wx, 100);
    mprotect(wx, page, PROT_READ | PROT_EXEC);
    fn0 g = (fn0)wx;
    printf("w^x first: %d\n", g());
    for (int round = 1; round <= 5; round++) {
        mprotect(wx, page, PROT_READ | PROT_WRITE);
        emit_ret_const(wx, 100 + round * round);
        mprotect(wx, page, PROT_READ | PROT_EXEC);
        printf("w^x round %d: %d\n", round, g());
    }

    /* 7. munmap, then map again at the same address with different code. */
    munmap(wx, page);
    unsigned char *again = mmap(wx, page, PROT_READ | PROT_WRITE | PROT_EXEC,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (again == MAP_FAILED) {
        perror("mmap again");
        return 1;
    }
    printf("remapped at the same address: %s\n", again == wx ? "yes" : "no");
    emit_ret_const(again, -77);
    printf("remapped code: %d\n", ((fn0)again)());
    memcpy(again, sum_code, sizeof sum_code);
    printf("remapped sum(10): %d\n", ((fn1)again)(10));
    munmap(again, page);

    /* 8. Many small functions generated into one buffer, each called, then all regenerated. */
    unsigned char *many = map(PROT_READ | PROT_WRITE | PROT_EXEC);
    long s1 = 0, s2 = 0;
    for (int i = 0; i < 256; i++)
        emit_ret_const(many + i * 16, i);
    for (int i = 0; i < 256; i++)
        s1 += ((fn0)(many + i * 16))();
    for (int i = 0; i < 256; i++)
        emit_ret_const(many + i * 16, i * 1000);
    for (int i = 0; i < 256; i++)
        s2 += ((fn0)(many + i * 16))();
    printf("many functions: before=%ld after=%ld\n", s1, s2);
    munmap(many, page);
    return 0;
}
