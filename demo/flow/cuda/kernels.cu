/* flow's CUDA kernels (f32): elementwise with row broadcast, row sums, and
 * a numerically stable row softmax. Launch wrappers are extern "C" and return
 * the cudaError_t of the launch, so the C side reports it. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

namespace {

__global__ void binary_kernel(int op, const float *a, const float *b, float *y, int64_t n, int64_t nb)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)blockDim.x * gridDim.x) {
		float x = a[i], z = b[nb == n ? i : i % nb];
		float r;
		switch (op) {
		case FCU_ADD: r = x + z; break;
		case FCU_SUB: r = x - z; break;
		case FCU_MUL: r = x * z; break;
		case FCU_DIV: r = x / z; break;
		default: r = fmaxf(x, z); break;
		}
		y[i] = r;
	}
}

__global__ void unary_kernel(int op, const float *x, float *y, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)blockDim.x * gridDim.x) {
		float v = x[i], r;
		switch (op) {
		case FCU_RELU: r = v > 0.f ? v : 0.f; break;
		case FCU_SIGMOID: r = 1.f / (1.f + expf(-v)); break;
		case FCU_TANH: r = tanhf(v); break;
		case FCU_EXP: r = expf(v); break;
		default: r = -v; break;
		}
		y[i] = r;
	}
}

/* Block-wide reduction in shared memory; blockDim.x is a power of two. */
template <bool MAX> __device__ float block_reduce(float v, float *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			sh[threadIdx.x] = MAX ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s])
					      : sh[threadIdx.x] + sh[threadIdx.x + s];
		__syncthreads();
	}
	float r = sh[0];
	__syncthreads();
	return r;
}

/* One block per row. */
__global__ void row_sum_kernel(const float *x, float *y, int64_t cols)
{
	extern __shared__ float sh[];
	const float *row = x + blockIdx.x * cols;
	float acc = 0.f;
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		acc += row[j];
	float s = block_reduce<false>(acc, sh);
	if (threadIdx.x == 0)
		y[blockIdx.x] = s;
}

__global__ void softmax_kernel(const float *x, float *y, int64_t cols)
{
	extern __shared__ float sh[];
	const float *row = x + blockIdx.x * cols;
	float *out = y + blockIdx.x * cols;
	float m = -INFINITY;
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		m = fmaxf(m, row[j]);
	m = block_reduce<true>(m, sh);
	float acc = 0.f;
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
		float e = expf(row[j] - m);
		out[j] = e;
		acc += e;
	}
	float s = block_reduce<false>(acc, sh);
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		out[j] /= s;
}

unsigned grid_for(int64_t n, unsigned block)
{
	int64_t g = (n + block - 1) / block;
	return (unsigned)(g > 65535 ? 65535 : (g < 1 ? 1 : g));
}

unsigned row_block(int64_t cols)
{
	unsigned b = 32;
	while (b < 256 && (int64_t)b < cols)
		b <<= 1;
	return b;
}

} // namespace

extern "C" int fcu_binary(int op, const float *a, const float *b, float *y, int64_t n, int64_t nb,
			  cudaStream_t s)
{
	binary_kernel<<<grid_for(n, 256), 256, 0, s>>>(op, a, b, y, n, nb);
	return (int)cudaGetLastError();
}

extern "C" int fcu_unary(int op, const float *x, float *y, int64_t n, cudaStream_t s)
{
	unary_kernel<<<grid_for(n, 256), 256, 0, s>>>(op, x, y, n);
	return (int)cudaGetLastError();
}

extern "C" int fcu_row_sum(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s)
{
	unsigned b = row_block(cols);
	row_sum_kernel<<<(unsigned)rows, b, b * sizeof(float), s>>>(x, y, cols);
	return (int)cudaGetLastError();
}

extern "C" int fcu_softmax(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s)
{
	unsigned b = row_block(cols);
	softmax_kernel<<<(unsigned)rows, b, b * sizeof(float), s>>>(x, y, cols);
	return (int)cudaGetLastError();
}
