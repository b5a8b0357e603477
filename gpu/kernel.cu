// SPDX-License-Identifier: Apache-2.0
// kernel.cu - the GPU work the PC sampling programs run: a short busy loop
// per thread, its result written so that it is not optimized away. Built
// to a fatbin (sm_90 code and compute_90 PTX) and embedded in the host
// programs, which load it with the driver API (gpu.c).
extern "C" __global__ void busy(unsigned long long *out, unsigned iters)
{
	unsigned long long x = threadIdx.x + 1ull * blockIdx.x * blockDim.x;
	for (unsigned i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	out[threadIdx.x + blockIdx.x * blockDim.x] = x;
}
