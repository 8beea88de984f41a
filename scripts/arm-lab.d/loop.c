/*
 * The aarch64 lab's exact-count workload: a whole program of known instruction count.
 *
 * Built with `aarch64-linux-gnu-gcc -static -nostdlib -DITERATIONS=N`, it has no C library
 * and no start-up code: from exec to exit the CPU retires exactly these user instructions,
 *
 *     2 (load N) + 4 x N (the loop) + 3 (exit) = 4N + 5,
 *
 * so `instructions:u` counted from exec (perf stat, counterhal stat) must give 4N + 5 on a
 * PMU that counts exactly (QEMU with -icount shift=0 and one vCPU), and counterhal and perf
 * must agree to the instruction.
 */
#ifndef ITERATIONS
#error "build with -DITERATIONS=N (1 <= N < 2^32)"
#endif

#define STRING(x) #x
#define VALUE(x) STRING(x)

__asm__(
    "    .text\n"
    "    .global _start\n"
    "_start:\n"
    /* x0 = N, in two instructions whatever N is (below 2^32). */
    "    movz x0, #(" VALUE(ITERATIONS) " & 0xffff)\n"
    "    movk x0, #((" VALUE(ITERATIONS) " >> 16) & 0xffff), lsl #16\n"
    /* Four instructions per turn. */
    "1:  add x1, x1, #1\n"
    "    add x2, x2, #1\n"
    "    subs x0, x0, #1\n"
    "    b.ne 1b\n"
    /* exit(0): the svc is the last user instruction. */
    "    mov x0, #0\n"
    "    mov x8, #93\n"
    "    svc #0\n");
