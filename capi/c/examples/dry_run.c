/*
 * dry_run.c: wasi_cuda_launch on kargs_host_call, for any runtime (see dry_run.h).
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include "dry_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* The dry run, as kargs_host_call's callback: records the checked launch (without host
 * pointers), checks what a device that reads host memory would use (host_ptr is memory +
 * guest_offset, inside memory), and answers what it was told to. */
static int32_t dry_run_launch(void *ctx, const kargs_launch *launch)
{
    dry_run_host *host = ctx;
    launch_record *record = &host->record;
    size_t i;
    host->launches++;
    record->kernel_id = launch->kernel_id;
    memcpy(record->grid, launch->grid, sizeof record->grid);
    memcpy(record->block, launch->block, sizeof record->block);
    record->shared_mem = launch->shared_mem_bytes;
    record->n_args = launch->args_len;
    for (i = 0; i < launch->args_len; i++) {
        const kargs_arg *a = &launch->args[i];
        record->args[i].tag = a->tag;
        record->args[i].bits = a->bits;
        record->args[i].guest_offset = a->guest_offset;
        record->args[i].len = a->len;
        record->args[i].byte_offset = a->byte_offset;
        if (a->tag == KARGS_TAG_PTR &&
            (a->host_ptr != host->memory + a->guest_offset ||
             (uint64_t)a->guest_offset + a->len > host->memory_len))
            host->bad_host_ptrs++;
    }
    host->recorded = 1;
    return host->answer;
}

int32_t dry_run_init(dry_run_host *host, int enabled, int32_t answer)
{
    int32_t rc;
    memset(host, 0, sizeof *host);
    rc = kargs_declaration_parse(VECTOR_ADD_DECLARATION, strlen(VECTOR_ADD_DECLARATION),
                                 &host->vector_add, &host->error, host->message,
                                 sizeof host->message);
    if (rc != 0) return rc;
    host->kernels[0].id = VECTOR_ADD_KERNEL_ID;
    host->kernels[0].declaration = &host->vector_add;
    host->kargs.kernels = host->kernels;
    host->kargs.kernels_len = 1;
    host->kargs.launch = dry_run_launch;
    host->kargs.ctx = host;
    host->kargs.max_shared_mem_bytes = 0; /* KARGS_DEFAULT_MAX_SHARED_MEM_BYTES */
    host->kargs.enabled = enabled ? 1 : 0;
    host->kargs.trusted = 0;
    host->answer = answer;
    return 0;
}

int32_t dry_run_call(dry_run_host *host, uint8_t *memory, size_t memory_len,
                     const kargs_call *call)
{
    int32_t rc;
    host->recorded = 0;
    host->memory = memory;
    host->memory_len = memory_len;
    rc = kargs_host_call(&host->kargs, memory, memory_len, call, &host->error, host->message,
                         sizeof host->message);
    if (host->recorded) host->record.result = rc;
    host->code = rc;
    return rc;
}

uint8_t *read_module(const char *path, uint32_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *bytes = NULL;
    long size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && size < (1L << 30) &&
        fseek(f, 0, SEEK_SET) == 0 && (bytes = malloc((size_t)size)) != NULL &&
        fread(bytes, 1, (size_t)size, f) == (size_t)size) {
        *len = (uint32_t)size;
    } else {
        free(bytes);
        bytes = NULL;
    }
    fclose(f);
    return bytes;
}
