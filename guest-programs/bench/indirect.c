// indirect: indirect-call-heavy workload: a bytecode interpreter dispatching every instruction
// through a table of function pointers, and objects with a vtable-like struct of function pointers.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- a small stack VM ---- */
struct vm {
    uint64_t stack[256];
    int sp;
    uint64_t locals[8];
    const int32_t *code;
    int pc;
    int running;
};

enum { OP_PUSH, OP_ADD, OP_SUB, OP_MUL, OP_XOR, OP_SHR, OP_DUP, OP_SWAP, OP_DROP, OP_LOAD,
       OP_STORE, OP_DEC, OP_JNZ, OP_JMP, OP_MOD, OP_HALT, NOPS };

typedef void (*op_fn)(struct vm *);

static void op_push(struct vm *m) { m->stack[m->sp++] = (uint64_t)m->code[m->pc++]; }
static void op_add(struct vm *m) { m->sp--; m->stack[m->sp - 1] += m->stack[m->sp]; }
static void op_sub(struct vm *m) { m->sp--; m->stack[m->sp - 1] -= m->stack[m->sp]; }
static void op_mul(struct vm *m) { m->sp--; m->stack[m->sp - 1] *= m->stack[m->sp]; }
static void op_xor(struct vm *m) { m->sp--; m->stack[m->sp - 1] ^= m->stack[m->sp]; }
static void op_shr(struct vm *m) { m->sp--; m->stack[m->sp - 1] >>= m->stack[m->sp] & 63; }
static void op_dup(struct vm *m) { m->stack[m->sp] = m->stack[m->sp - 1]; m->sp++; }
static void op_swap(struct vm *m)
{
    uint64_t t = m->stack[m->sp - 1];
    m->stack[m->sp - 1] = m->stack[m->sp - 2];
    m->stack[m->sp - 2] = t;
}
static void op_drop(struct vm *m) { m->sp--; }
static void op_load(struct vm *m) { m->stack[m->sp++] = m->locals[m->code[m->pc++]]; }
static void op_store(struct vm *m) { m->locals[m->code[m->pc++]] = m->stack[--m->sp]; }
static void op_dec(struct vm *m) { m->stack[m->sp - 1]--; }
static void op_jnz(struct vm *m)
{
    int32_t target = m->code[m->pc++];
    if (m->stack[--m->sp] != 0)
        m->pc = target;
}
static void op_jmp(struct vm *m) { m->pc = m->code[m->pc]; }
static void op_mod(struct vm *m)
{
    m->sp--;
    uint64_t d = m->stack[m->sp];
    m->stack[m->sp - 1] = d ? m->stack[m->sp - 1] % d : 0;
}
static void op_halt(struct vm *m) { m->running = 0; }

static const op_fn dispatch[NOPS] = {
    [OP_PUSH] = op_push, [OP_ADD] = op_add, [OP_SUB] = op_sub, [OP_MUL] = op_mul,
    [OP_XOR] = op_xor, [OP_SHR] = op_shr, [OP_DUP] = op_dup, [OP_SWAP] = op_swap,
    [OP_DROP] = op_drop, [OP_LOAD] = op_load, [OP_STORE] = op_store, [OP_DEC] = op_dec,
    [OP_JNZ] = op_jnz, [OP_JMP] = op_jmp, [OP_MOD] = op_mod, [OP_HALT] = op_halt,
};

static uint64_t run(const int32_t *code, uint64_t n, uint64_t seed)
{
    struct vm m = { .sp = 0, .code = code, .pc = 0, .running = 1 };
    m.locals[0] = n;
    m.locals[1] = seed;
    while (m.running)
        dispatch[m.code[m.pc++]](&m);
    return m.locals[1] ^ m.locals[2];
}

/* locals: 0 = counter, 1 = x (an LCG-ish hash), 2 = acc
 * loop: x = (x * 6364136223846793005 + counter) ^ (x >> 29); acc += x % 1000; counter--; */
static const int32_t program[] = {
    /* 0 */ OP_LOAD, 1, OP_PUSH, 1481765933, OP_PUSH, 1, OP_ADD, OP_MUL,
    /* 8 */ OP_LOAD, 0, OP_ADD,
    /* 11 */ OP_DUP, OP_PUSH, 29, OP_SHR, OP_XOR, OP_STORE, 1,
    /* 18 */ OP_LOAD, 2, OP_LOAD, 1, OP_PUSH, 1000, OP_MOD, OP_ADD, OP_STORE, 2,
    /* 28 */ OP_LOAD, 0, OP_DEC, OP_DUP, OP_STORE, 0, OP_JNZ, 0,
    /* 36 */ OP_HALT,
};

/* ---- objects with a table of function pointers ---- */
struct object;
struct vtable {
    int64_t (*area)(const struct object *);
    int64_t (*perimeter)(const struct object *);
    void (*grow)(struct object *, int64_t);
};
struct object {
    const struct vtable *vt;
    int64_t a, b;
};

static int64_t rect_area(const struct object *o) { return o->a * o->b; }
static int64_t rect_perim(const struct object *o) { return 2 * (o->a + o->b); }
static void rect_grow(struct object *o, int64_t d)
{
    o->a = (o->a + d) % 1000;
    o->b = (o->b + 2 * d) % 1000;
}
static int64_t sq_area(const struct object *o) { return o->a * o->a; }
static int64_t sq_perim(const struct object *o) { return 4 * o->a; }
static void sq_grow(struct object *o, int64_t d) { o->a = (o->a * 3 + d) % 997; }
static int64_t tri_area(const struct object *o) { return o->a * o->b / 2; }
static int64_t tri_perim(const struct object *o)
{
    return o->a + o->b + (o->a > o->b ? o->a : o->b);
}
static void tri_grow(struct object *o, int64_t d)
{
    o->b = (o->b ^ d) % 1009;
    o->a = (o->a + 1) % 500;
}

static const struct vtable vt_rect = { rect_area, rect_perim, rect_grow };
static const struct vtable vt_square = { sq_area, sq_perim, sq_grow };
static const struct vtable vt_tri = { tri_area, tri_perim, tri_grow };

int main(void)
{
    uint64_t vm_result = 0;
    for (unsigned i = 0; i < 6; i++)
        vm_result = vm_result * 31 + run(program, 2500000, i);

    enum { NOBJ = 1024 };
    struct object *objs = malloc(NOBJ * sizeof *objs);
    const struct vtable *vts[3] = { &vt_rect, &vt_square, &vt_tri };
    uint32_t r = 1;
    for (int i = 0; i < NOBJ; i++) {
        r = r * 1103515245u + 12345u;
        objs[i].vt = vts[(r >> 16) % 3];
        objs[i].a = (r >> 8) % 100 + 1;
        objs[i].b = (r >> 4) % 100 + 1;
    }
    int64_t obj_result = 0;
    for (int round = 0; round < 6000; round++) {
        for (int i = 0; i < NOBJ; i++) {
            struct object *o = &objs[i];
            obj_result += o->vt->area(o) - o->vt->perimeter(o);
            o->vt->grow(o, round & 15);
        }
    }
    printf("indirect: vm=%016llx objects=%lld\n", (unsigned long long)vm_result,
           (long long)obj_result);
    free(objs);
    return 0;
}
