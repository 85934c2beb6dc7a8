/* Client requests: a guest program talks to the rtgrind tool it runs under.
 *
 * Natively every request is a no-op that returns its default. Under rtgrind the engine
 * recognises the instruction sequence below (four rotates of rdi adding up to 128, then
 * `xchg rcx, rcx`; see jit/src/instrument.rs, CLIENT_REQUEST) and hands the request block
 * that rax points at to the tool; the answer comes back in rdx. */
#ifndef RTGRIND_H
#define RTGRIND_H

static inline unsigned long rtgrind_request(unsigned long dflt, unsigned long code, unsigned long a1,
                                            unsigned long a2, unsigned long a3, unsigned long a4) {
    volatile unsigned long req[6] = {code, a1, a2, a3, a4, 0};
    unsigned long res = dflt;
    __asm__ volatile("rolq $7, %%rdi\n\trolq $29, %%rdi\n\trolq $57, %%rdi\n\trolq $35, %%rdi\n\txchgq %%rcx, %%rcx"
                     : "+d"(res)
                     : "a"(req)
                     : "cc", "memory");
    return res;
}

/* 1 under rtgrind, 0 natively. */
#define RTGRIND_RUNNING_ON_RTGRIND() rtgrind_request(0, 0x1000, 0, 0, 0, 0)
/* taint: mark LEN bytes at ADDR as (not) derived from input. */
#define RTGRIND_TAINT(addr, len) rtgrind_request(0, 0x2001, (unsigned long)(addr), (len), 0, 0)
#define RTGRIND_UNTAINT(addr, len) rtgrind_request(0, 0x2002, (unsigned long)(addr), (len), 0, 0)
/* taint: write one byte per guest byte of [ADDR, ADDR+LEN) to OUT: 1 if tainted, else 0.
 * Returns 1 if the tool answered. */
#define RTGRIND_GET_TAINT(addr, len, out) rtgrind_request(0, 0x2003, (unsigned long)(addr), (len), (unsigned long)(out), 0)

/* taint --track-origins=yes: the guest pc of the instruction that defined the 8 bytes (the
 * aligned granule) holding ADDR, 0 if none. */
#define RTGRIND_GET_ORIGIN_PC(addr) rtgrind_request(0, 0x2004, (unsigned long)(addr), 0, 0, 0)

#endif
