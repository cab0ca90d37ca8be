/* kernels.h — launch wrappers of kernels.cu (private to demo/flow/cuda). Each
 * returns the cudaError_t of the launch as an int. */
#ifndef FLOW_CUDA_KERNELS_H
#define FLOW_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { FCU_ADD, FCU_SUB, FCU_MUL, FCU_DIV, FCU_MAX };
enum { FCU_RELU, FCU_SIGMOID, FCU_TANH, FCU_EXP, FCU_NEG };

/* y[i] = a[i] op b[i % nb], i < n (nb = n: same shape; 1: scalar; cols: row bias) */
int fcu_binary(int op, const float *a, const float *b, float *y, int64_t n, int64_t nb, cudaStream_t s);
int fcu_unary(int op, const float *x, float *y, int64_t n, cudaStream_t s);
int fcu_row_sum(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s);
int fcu_softmax(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
