// Planted GPU bugs for compute-sanitizer and the CUDA core dump, one per mode, so each tool's
// real output can be recorded as a fixture (issue 31). Built with -lineinfo so the reports
// name this file and line. Usage: kernels MODE, MODE one of
//   oob       a write 1 element past a cudaMalloc'd buffer  (memcheck: Invalid __global__ write)
//   wild      a write 16 TiB past the buffer                 (a real illegal address, core dump)
//   race      shared-memory write/read without a barrier     (racecheck)
//   uninit    a kernel reads cudaMalloc'd memory never set   (initcheck)
//   syncdiv   __syncthreads() in a divergent branch          (synccheck)
//   syncwarp  __syncwarp() with a mask missing the caller    (synccheck)
//   ok        a correct kernel                               (every tool: 0 errors)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            fprintf(stderr, "kernels: %s failed: %s (%s)\n", #call,                     \
                    cudaGetErrorString(err_), cudaGetErrorName(err_));                  \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

__global__ void write_past_end(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f;  // <= : thread n writes one element past the end
}

__global__ void write_wild(float *out, long long offset) {
    out[threadIdx.x + offset] = 2.0f;
}

__global__ void shared_race(int *out) {
    __shared__ int cell[64];
    cell[threadIdx.x] = threadIdx.x;
    // no __syncthreads(): warp 1 reads what warp 0 writes, and the other way round
    out[threadIdx.x] = cell[(threadIdx.x + 32) % 64];
}

__global__ void read_uninit(const float *in, float *out) {
    out[threadIdx.x] = in[threadIdx.x] * 2.0f;
}

__global__ void divergent_barrier(int *out) {
    if (threadIdx.x < 16) __syncthreads();
    out[threadIdx.x] = threadIdx.x;
}

__global__ void bad_syncwarp(int *out) {
    __syncwarp(0x0000ffffu >> 8);  // lanes 8..31 call it with a mask that leaves them out
    out[threadIdx.x] = threadIdx.x;
}

__global__ void fine(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ok";
    printf("kernels: mode %s\n", mode);
    fflush(stdout);
    const int n = 256;
    float *buf = nullptr, *out = nullptr;
    int *ibuf = nullptr;
    CHECK(cudaMalloc(&buf, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMalloc(&ibuf, n * sizeof(int)));
    CHECK(cudaMemset(out, 0, n * sizeof(float)));
    CHECK(cudaMemset(ibuf, 0, n * sizeof(int)));
    if (!strcmp(mode, "oob")) {
        write_past_end<<<2, 256>>>(buf, n);
    } else if (!strcmp(mode, "wild")) {
        write_wild<<<1, 32>>>(buf, 1LL << 42);
    } else if (!strcmp(mode, "race")) {
        shared_race<<<1, 64>>>(ibuf);
    } else if (!strcmp(mode, "uninit")) {
        read_uninit<<<1, n>>>(buf, out);  // buf was never written
    } else if (!strcmp(mode, "syncdiv")) {
        divergent_barrier<<<1, 32>>>(ibuf);
    } else if (!strcmp(mode, "syncwarp")) {
        bad_syncwarp<<<1, 32>>>(ibuf);
    } else if (!strcmp(mode, "ok")) {
        fine<<<1, n>>>(buf, n);
    } else {
        fprintf(stderr, "kernels: unknown mode %s\n", mode);
        return 2;
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    float host[n];
    CHECK(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
    printf("kernels: %s finished without a CUDA error (out[0]=%g)\n", mode, host[0]);
    return 0;
}
