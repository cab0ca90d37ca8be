/*
 * flow_cuda.h — flow's CUDA backend: one device, its memory (the runtime's BFC
 * allocator over cudaMalloc regions), host<->device copies recorded as data_transfer
 * phases, MatMul through cuBLAS, elementwise / reduction / softmax kernels.
 *
 * Built only when nvcc is found (target flow_cuda); the CPU build never links
 * CUDA. Where no GPU is usable, flow_cuda_open fails with FLOW_UNIMPLEMENTED
 * and the driver probe's plain reason, and the caller runs on the CPU.
 * Device tensors are ordinary flow_tensors whose data pointer is device
 * memory: never read them on the host; pass them only to flow_cuda_*.
 * All f32. Ops are asynchronous on the device's stream; downloads and
 * flow_cuda_sync wait.
 */
#ifndef FLOW_CUDA_H
#define FLOW_CUDA_H

#include "flow.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flow_cuda flow_cuda;

/* Probes the driver first (record/gpu), then opens device `ordinal`, a
 * stream and a cuBLAS handle; starts the CUPTI collector when a recorder is
 * open. Recorded as device_init. NULL with st = FLOW_UNIMPLEMENTED "GPU
 * unavailable, running on the CPU: <reason>" when there is no usable GPU. */
flow_cuda *flow_cuda_open(int ordinal, flow_status *st);
/* Synchronises, frees, and stops the collector it started. */
void flow_cuda_close(flow_cuda *g);
const char *flow_cuda_device_name(const flow_cuda *g);
/* 1 if device memory goes through the runtime's BFC allocator. */
int flow_cuda_uses_bfc(const flow_cuda *g);

typedef struct flow_cuda_stats {
	uint64_t h2d_bytes, d2h_bytes, h2d_copies, d2h_copies;
	uint64_t kernels, gemms;
	uint64_t device_allocs, device_bytes_in_use, device_peak;
} flow_cuda_stats;
void flow_cuda_stats_get(const flow_cuda *g, flow_cuda_stats *out);

/* An uninitialised device tensor. */
flow_tensor *flow_cuda_empty(flow_cuda *g, int ndim, const int64_t *dims, flow_status *st);
/* host -> device (data_transfer phase "h2d"). f32 only. */
flow_tensor *flow_cuda_upload(flow_cuda *g, const flow_tensor *host, flow_status *st);
/* host -> an existing device tensor of the same element count (data_transfer
 * phase "h2d"). wait = 0 only enqueues the copy on the device's stream: the
 * host buffer must stay untouched until flow_cuda_sync (use pinned memory
 * from flow_cuda_host_pinned so the copy is truly asynchronous). */
int flow_cuda_upload_into(flow_cuda *g, flow_tensor *dev, const flow_tensor *host, int wait,
			  flow_status *st);
/* device -> host into a new host tensor (data_transfer phase "d2h"); waits. */
flow_tensor *flow_cuda_download(flow_cuda *g, const flow_tensor *dev, flow_status *st);
/* Host memory that copies can DMA from directly (cudaMallocHost), wrapped as
 * a host tensor; falls back to ordinary memory with st untouched if pinning
 * is refused. */
flow_tensor *flow_cuda_host_pinned(flow_cuda *g, int ndim, const int64_t *dims, flow_status *st);
int flow_cuda_sync(flow_cuda *g, flow_status *st);

/* The ops. Outputs are new device tensors (*out). 0 or -1 with st naming
 * the op and the CUDA/cuBLAS error. */
int flow_cuda_matmul(flow_cuda *g, const flow_tensor *a, const flow_tensor *b, int transpose_a,
		     int transpose_b, flow_tensor **out, flow_status *st);
/* "Add" "Sub" "Mul" "Div" "Maximum": b has a's shape, one element, or a's
 * last dimension (a bias row broadcast over rows). */
int flow_cuda_binary(flow_cuda *g, const char *op, const flow_tensor *a, const flow_tensor *b,
		     flow_tensor **out, flow_status *st);
/* "Relu" "Sigmoid" "Tanh" "Exp" "Neg" */
int flow_cuda_unary(flow_cuda *g, const char *op, const flow_tensor *x, flow_tensor **out,
		    flow_status *st);
/* Sum over the last axis (rank >= 1: [.., n] -> [..]), or over everything
 * when all != 0 (-> scalar). */
int flow_cuda_sum(flow_cuda *g, const flow_tensor *x, int all, flow_tensor **out, flow_status *st);
/* Softmax over the last axis. */
int flow_cuda_softmax(flow_cuda *g, const flow_tensor *x, flow_tensor **out, flow_status *st);

#ifdef __cplusplus
}
#endif
#endif
