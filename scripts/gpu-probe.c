/* What the CUDA driver does, on the machine it runs on, about the two things the CUDA backend
 * relies on for kernels it cannot trust: stopping a kernel that runs too long, and going on
 * after a kernel's fault. Built by scripts/gpu-check.sh (any C compiler; no CUDA headers: the
 * few driver entry points are declared here and found with dlopen), run by the bundle's run.sh
 * on a machine with a GPU. Each probe runs in a child process of its own (CUDA is initialised
 * only in the children), so that one probe's sticky error or hung kernel cannot change the
 * next; a child still running after its limit is killed, which is itself a result.
 *
 * Probes:
 *   reset-stops    a kernel that runs for SPIN_SECONDS; cuDevicePrimaryCtxReset 300 ms after
 *                  its launch: how long the reset takes to return (the kernel's remaining time
 *                  means it waited for the kernel).
 *   destroy-stops  the same with a context of its own (cuCtxCreate) and cuCtxDestroy.
 *   kill-stops     the same kernel in a child killed 300 ms after the launch; then, in a new
 *                  process, how long until a small kernel has run (the GPU freed).
 *   fault-primary  a kernel stores through address 0: the sync's code; then
 *                  cuDevicePrimaryCtxReset, cuDevicePrimaryCtxRetain and a launch of a kernel
 *                  that stores 42: each call's code and whether 42 arrived.
 *   fault-created  the same with a context of its own: cuCtxDestroy, a new cuCtxCreate, launch.
 *   fault-other    two contexts of one process: the first faults; does the second still run?
 * Output: one line a probe, "probe NAME: ...". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
static CUresult (*cuCtxDestroy)(CUcontext);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuCtxSynchronize)(void);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuDevicePrimaryCtxReset)(CUdevice);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, CUstream, void **, void **);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);

#define SPIN_SECONDS 8
static const char PTX[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    /* spin(ns): runs until %globaltimer has moved on by ns nanoseconds */
    ".visible .entry spin(.param .u64 ns) {\n"
    "  .reg .u64 %t<4>; .reg .pred %p;\n"
    "  ld.param.u64 %t0, [ns]; mov.u64 %t1, %globaltimer; add.u64 %t2, %t1, %t0;\n"
    "LOOP: mov.u64 %t3, %globaltimer; setp.lt.u64 %p, %t3, %t2; @%p bra LOOP;\n"
    "  ret; }\n"
    /* fault(): a store through address 0 */
    ".visible .entry fault() {\n"
    "  .reg .u64 %a; .reg .u32 %v; mov.u64 %a, 0; mov.u32 %v, 1; st.global.u32 [%a], %v; ret; }\n"
    /* put(p): *p = 42 */
    ".visible .entry put(.param .u64 p) {\n"
    "  .reg .u64 %a; .reg .u32 %v; ld.param.u64 %a, [p]; mov.u32 %v, 42; st.global.u32 [%a], %v; ret; }\n";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void load_driver(void) {
    const char *path = getenv("KARGS_CUDA_DRIVER"); /* the emulated driver's, to try the probes */
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) { printf("no libcuda.so.1: %s\n", dlerror()); exit(3); }
#define SYM(v, name) if (!(*(void **)&v = dlsym(lib, name))) { printf("no %s\n", name); exit(3); }
    SYM(cuInit, "cuInit"); SYM(cuDeviceGet, "cuDeviceGet"); SYM(cuCtxCreate, "cuCtxCreate_v2");
    SYM(cuCtxDestroy, "cuCtxDestroy_v2"); SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    SYM(cuCtxSynchronize, "cuCtxSynchronize"); SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2"); SYM(cuModuleLoadData, "cuModuleLoadData");
    SYM(cuModuleGetFunction, "cuModuleGetFunction"); SYM(cuLaunchKernel, "cuLaunchKernel");
    SYM(cuMemAlloc, "cuMemAlloc_v2"); SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
}

/* Initialises CUDA in this (child) process and makes a context current: the primary one when
 * primary, else one of its own. */
static CUdevice dev;
static CUcontext start(int primary) {
    CUcontext c = 0;
    load_driver();
    if (cuInit(0) || cuDeviceGet(&dev, 0)) { printf("no device\n"); exit(3); }
    CUresult r = primary ? cuDevicePrimaryCtxRetain(&c, dev) : cuCtxCreate(&c, 0, dev);
    if (r || cuCtxSetCurrent(c)) { printf("no context (%d)\n", r); exit(3); }
    return c;
}

static CUfunction fn(const char *name) {
    CUmodule m; CUfunction f;
    CUresult r = cuModuleLoadData(&m, PTX);
    if (!r) r = cuModuleGetFunction(&f, m, name);
    if (r) { printf("module: %d\n", r); exit(3); }
    return f;
}

static CUresult launch_spin(void) {
    unsigned long long ns = SPIN_SECONDS * 1000000000ULL;
    void *params[] = {&ns};
    return cuLaunchKernel(fn("spin"), 1, 1, 1, 32, 1, 1, 0, 0, params, 0);
}

/* Launches put(p) in the current context and says the codes and what arrived. */
static void put42(char *out, size_t len) {
    CUdeviceptr p = 0; unsigned v = 0; CUfunction f; CUmodule m;
    CUresult a = cuMemAlloc(&p, 4), l = cuModuleLoadData(&m, PTX), g = 1, k = 1, s = 1, c = 1;
    if (!l) g = cuModuleGetFunction(&f, m, "put");
    if (!a && !g) { void *params[] = {&p}; k = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, params, 0); }
    if (!k) s = cuCtxSynchronize();
    if (!s) c = cuMemcpyDtoH(&v, p, 4);
    snprintf(out, len, "alloc %d, load %d, launch %d, sync %d, copy %d, value %u%s", a, l, k, s, c, v,
             v == 42 ? " (ran)" : " (did not run)");
}

/* Where the kill-stops child says that its kernel is launched. */
static int ready_fd = -1;

static void probe(const char *name) {
    char buf[256];
    if (!strcmp(name, "reset-stops") || !strcmp(name, "destroy-stops")) {
        int primary = name[0] == 'r';
        CUcontext c = start(primary);
        CUresult l = launch_spin();
        usleep(300000);
        double t1 = now();
        CUresult r = primary ? cuDevicePrimaryCtxReset(dev) : cuCtxDestroy(c);
        double t2 = now();
        printf("probe %s: launch %d; %s 0.30 s after the launch returned %d after %.2f s (the kernel runs %d s)\n",
               name, l, primary ? "cuDevicePrimaryCtxReset" : "cuCtxDestroy", r, t2 - t1, SPIN_SECONDS);
    } else if (!strcmp(name, "kill-stops")) {
        start(1);
        printf("probe kill-stops: launch %d\n", launch_spin());
        fflush(stdout);
        if (write(ready_fd, "x", 1) != 1) exit(4);
        pause(); /* the parent kills this process */
    } else if (!strcmp(name, "after-kill")) {
        start(1);
        double t0 = now();
        put42(buf, sizeof buf);
        printf("probe kill-stops: in a new process right after the kill, a small kernel: %s, %.2f s\n", buf, now() - t0);
    } else if (!strcmp(name, "fault-primary") || !strcmp(name, "fault-created")) {
        int primary = name[6] == 'p';
        CUcontext c = start(primary), fresh = 0;
        CUresult l = cuLaunchKernel(fn("fault"), 1, 1, 1, 1, 1, 1, 0, 0, 0, 0), s = cuCtxSynchronize(), r, n;
        if (primary) {
            r = cuDevicePrimaryCtxReset(dev);
            n = cuDevicePrimaryCtxRetain(&fresh, dev);
        } else {
            r = cuCtxDestroy(c);
            n = cuCtxCreate(&fresh, 0, dev);
        }
        CUresult cur = n ? n : cuCtxSetCurrent(fresh);
        buf[0] = 0;
        if (!cur) put42(buf, sizeof buf);
        printf("probe %s: fault launch %d, sync %d; %s %d; %s %d; set current %d; then: %s\n", name, l, s,
               primary ? "cuDevicePrimaryCtxReset" : "cuCtxDestroy", r,
               primary ? "cuDevicePrimaryCtxRetain" : "cuCtxCreate", n, cur, buf[0] ? buf : "nothing launched");
    } else if (!strcmp(name, "fault-other")) {
        CUcontext a = start(0), b = 0;
        CUresult made = cuCtxCreate(&b, 0, dev);
        put42(buf, sizeof buf);
        CUresult set_a = cuCtxSetCurrent(a);
        CUresult l = cuLaunchKernel(fn("fault"), 1, 1, 1, 1, 1, 1, 0, 0, 0, 0), s = cuCtxSynchronize();
        char after[256];
        CUresult set_b = cuCtxSetCurrent(b);
        put42(after, sizeof after);
        printf("probe fault-other: second context made %d (before the fault: %s); first context %d, fault launch %d, "
               "sync %d; second context %d, then: %s\n", made, buf, set_a, l, s, set_b, after);
    }
    fflush(stdout);
}

/* Runs probe `name` in a child, killed (and said so) if it still runs after `limit` seconds. */
static void child(const char *name, double limit) {
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) { probe(name); _exit(0); }
    int status = 0;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (now() - t0 > limit) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            printf("probe %s: still running after %.0f s: killed\n", name, limit);
            break;
        }
        usleep(10000);
    }
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : 0;
    const char *probes[] = {"reset-stops", "destroy-stops", "fault-primary", "fault-created", "fault-other"};
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
        if (!only || !strcmp(only, probes[i])) child(probes[i], 3.0 * SPIN_SECONDS);
    if (!only || !strcmp(only, "kill-stops")) {
        int fds[2];
        if (pipe(fds)) return 1;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) { close(fds[0]); ready_fd = fds[1]; probe("kill-stops"); _exit(0); }
        close(fds[1]);
        char x;
        if (read(fds[0], &x, 1) == 1) {
            usleep(300000);
            double t0 = now();
            kill(pid, SIGKILL);
            waitpid(pid, 0, 0);
            printf("probe kill-stops: the process killed 0.30 s after the launch, gone after %.2f s\n", now() - t0);
            child("after-kill", 3.0 * SPIN_SECONDS);
        } else {
            waitpid(pid, 0, 0);
            printf("probe kill-stops: the child did not launch\n");
        }
    }
    return 0;
}
