// streams_graph.cu: GPU work with a known shape for scripts/gpu-check.sh.
// Four streams, each: pinned HtoD copy, two kernels, DtoH copy; a pageable
// synchronous copy and a memset; then a CUDA graph captured from a stream
// (copy, two kernels, copy) and replayed. The work done before capture also
// serves as the warm-up after which CUPTI must still see the graph's kernels
// (a known CUPTI trap). The results are checked on the host.
//
// Prints one line: "streams_graph: kernels=K memcpys=M memsets=S graph_launches=G ok"
// and exits 0; on any CUDA error one line naming the call, exit 1.
//
// The spin kernels are latency-bound dependent multiply-adds on few blocks
// (16 x 128 threads): by estimate (not measured: no GPU at hand when this was
// written) ~200 us each at 100000 iterations, ~50 us in the graph, on an
// H100, so that four streams side by side mostly run on separate SMs, a
// kernel's time is about the same alone (ncu replays each kernel alone) as
// beside the others, and the spins outweigh the short add_one kernels, whose
// few microseconds carry the most measurement noise. argv[1]: iterations.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                          \
	do {                                                                                 \
		cudaError_t e_ = (call);                                                     \
		if (e_ != cudaSuccess) {                                                     \
			fprintf(stderr, "streams_graph: %s failed: %s (%s)\n", #call,        \
				cudaGetErrorString(e_), cudaGetErrorName(e_));                 \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

enum { NSTREAMS = 4, N = 16 * 128, BLOCKS = 16, THREADS = 128, GRAPH_REPLAYS = 10 };

// x[i] = x[i] * a + b, iterated `iters` times (a spin with a checkable result)
__global__ void spin_axpb(float *x, int n, float a, float b, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	for (int k = 0; k < iters; k++)
		v = v * a + b;
	x[i] = v;
}

__global__ void add_one(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += 1.0f;
}

static float host_spin(float v, float a, float b, int iters)
{
	for (int k = 0; k < iters; k++)
		v = v * a + b;
	return v;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100000;
	long kernels = 0, memcpys = 0, memsets = 0;
	size_t bytes = N * sizeof(float);

	cudaStream_t s[NSTREAMS];
	float *h[NSTREAMS], *d[NSTREAMS];
	for (int k = 0; k < NSTREAMS; k++) {
		CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
		CHECK(cudaMallocHost(&h[k], bytes));
		CHECK(cudaMalloc(&d[k], bytes));
		for (int i = 0; i < N; i++)
			h[k][i] = (float)(k + 1);
	}
	// streams side by side: a = 1 (exact), b = 0 keeps the value; add_one adds 1
	for (int k = 0; k < NSTREAMS; k++) {
		CHECK(cudaMemcpyAsync(d[k], h[k], bytes, cudaMemcpyHostToDevice, s[k]));
		spin_axpb<<<BLOCKS, THREADS, 0, s[k]>>>(d[k], N, 1.0f, 0.0f, iters);
		CHECK(cudaGetLastError());
		add_one<<<BLOCKS, THREADS, 0, s[k]>>>(d[k], N);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpyAsync(h[k], d[k], bytes, cudaMemcpyDeviceToHost, s[k]));
		kernels += 2;
		memcpys += 2;
	}
	for (int k = 0; k < NSTREAMS; k++)
		CHECK(cudaStreamSynchronize(s[k]));
	for (int k = 0; k < NSTREAMS; k++)
		if (h[k][0] != (float)(k + 2) || h[k][N - 1] != (float)(k + 2)) {
			fprintf(stderr, "streams_graph: stream %d result %g, expected %g\n", k, h[k][0], (float)(k + 2));
			return 1;
		}

	// pageable, synchronous copy and a memset on the legacy stream
	float *pageable = (float *)malloc(bytes);
	for (int i = 0; i < N; i++)
		pageable[i] = 3.0f;
	CHECK(cudaMemset(d[0], 0, bytes));
	memsets++;
	CHECK(cudaMemcpy(d[0], pageable, bytes, cudaMemcpyHostToDevice));
	memcpys++;
	add_one<<<BLOCKS, THREADS>>>(d[0], N);
	CHECK(cudaGetLastError());
	kernels++;
	CHECK(cudaMemcpy(pageable, d[0], bytes, cudaMemcpyDeviceToHost));
	memcpys++;
	if (pageable[0] != 4.0f) {
		fprintf(stderr, "streams_graph: sync copy result %g, expected 4\n", pageable[0]);
		return 1;
	}

	// a CUDA graph captured from stream 1: copy in, spin, add, copy out
	for (int i = 0; i < N; i++)
		h[1][i] = 0.0f;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	CHECK(cudaStreamBeginCapture(s[1], cudaStreamCaptureModeGlobal));
	cudaMemcpyAsync(d[1], h[1], bytes, cudaMemcpyHostToDevice, s[1]);
	spin_axpb<<<BLOCKS, THREADS, 0, s[1]>>>(d[1], N, 1.0f, 0.5f, iters / 4);
	add_one<<<BLOCKS, THREADS, 0, s[1]>>>(d[1], N);
	cudaMemcpyAsync(h[1], d[1], bytes, cudaMemcpyDeviceToHost, s[1]);
	CHECK(cudaStreamEndCapture(s[1], &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	for (int r = 0; r < GRAPH_REPLAYS; r++) {
		CHECK(cudaGraphLaunch(exec, s[1]));
		kernels += 2;
		memcpys += 2;
	}
	CHECK(cudaStreamSynchronize(s[1]));
	// replays run in order on the stream: each copies in the last one's result
	float want = 0.0f;
	for (int r = 0; r < GRAPH_REPLAYS; r++)
		want = host_spin(want, 1.0f, 0.5f, iters / 4) + 1.0f;
	if (h[1][0] != want) {
		fprintf(stderr, "streams_graph: graph result %g, expected %g\n", h[1][0], want);
		return 1;
	}
	CHECK(cudaDeviceSynchronize());

	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	for (int k = 0; k < NSTREAMS; k++) {
		CHECK(cudaStreamDestroy(s[k]));
		CHECK(cudaFreeHost(h[k]));
		CHECK(cudaFree(d[k]));
	}
	free(pageable);
	printf("streams_graph: kernels=%ld memcpys=%ld memsets=%ld graph_launches=%d ok\n", kernels, memcpys,
	       memsets, GRAPH_REPLAYS);
	return 0;
}
