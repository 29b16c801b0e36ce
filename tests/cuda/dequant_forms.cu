// Every scale and bias a bf16 pair can hold, through the decode matmul's dequantization forms
// (src/cuda/k_matmul_fragments.cuh) on the device itself: the bits form of the one-rounding rule against
// the float rule of ops::affine_single_rounding_exact, and wherever a form is allowed, its weights against
// the reference bf16(f32(scale * q) + bias) for every code.
#include "cuda/dequant_forms.hpp"
#include "cuda/k_matmul_fragments.cuh"

namespace plumb::cuda::testing {

namespace {

using matmul::fma_bf16x2;

__device__ uint16_t reference_bits(float scale, float bias, uint32_t code) {
  const float value = __fadd_rn(__fmul_rn(scale, static_cast<float>(code)), bias);
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

__device__ bool float_rule(float scale, float bias) {
  const float s = fabsf(scale), b = fabsf(bias);
  return s >= 0x1p-100f && s < 0x1p100f && b < 0x1p100f && (b == 0.0f || b >= __fmul_rn(s, 0x1p-15f));
}

// Counts a failure and keeps the first one's entry, code, expected and got bits.
__device__ void note_failure(DequantFormCounts* counts, unsigned long long* count, uint32_t entry,
                             uint32_t code, uint32_t expected, uint32_t got) {
  atomicAdd(count, 1ull);
  if (atomicExch(&counts->claimed, 1u) != 0u) return;
  counts->first_entry = entry;
  counts->first_code = code;
  counts->first_expected = expected;
  counts->first_got = got;
}

// One thread per (scale, bias) pair: blockIdx.x is the scale's bits, the thread's loop the bias's.
__global__ void enumerate_kernel(DequantFormCounts* counts) {
  const uint32_t scale_bits = blockIdx.x;
  const float scale = __uint_as_float(scale_bits << 16);
  unsigned long long exact = 0, subnormal = 0;
  for (uint32_t bias_bits = threadIdx.x; bias_bits < 65536u; bias_bits += blockDim.x) {
    const uint32_t entry = scale_bits | bias_bits << 16;
    const float bias = __uint_as_float(bias_bits << 16);
    if (ops::affine_single_rounding_exact_bits(entry) != float_rule(scale, bias))
      note_failure(counts, &counts->rule_mismatches, entry, 0, float_rule(scale, bias),
                   ops::affine_single_rounding_exact_bits(entry));
    const matmul::FormTests tests = matmul::form_tests(entry);  // the decode kernel's bitwise tests
    if (tests.exact != ops::affine_single_rounding_exact_bits(entry))
      note_failure(counts, &counts->rule_mismatches, entry, 0, ops::affine_single_rounding_exact_bits(entry),
                   tests.exact);
    if (!ops::affine_single_rounding_exact_bits(entry)) continue;
    ++exact;
    const uint32_t scale_pair = scale_bits * 0x10001u, bias_pair = bias_bits * 0x10001u;
    const bool small = tests.subnormal;
    subnormal += small ? 1 : 0;
    for (uint32_t q = 0; q < 16; ++q) {
      const uint32_t high = 15u - q;  // every code in both halves
      const uint32_t want = reference_bits(scale, bias, q) | uint32_t{reference_bits(scale, bias, high)}
                                                                 << 16;
      // The packed form: bf16 128 + q, less 128, then one fma.
      const uint32_t magic = (q | high << 16) | 0x43004300u;
      const uint32_t packed = matmul::packed_pair(magic, scale_pair, bias_pair);
      if (packed != want) note_failure(counts, &counts->packed_mismatches, entry, q, want, packed);
      if (small) {
        // Byte 1 of the word holds the pair, as lane t = 1 reads it.
        const uint32_t word = (q | high << 4) << 8;
        const uint32_t got = matmul::subnormal_pair(word, 0x4040u | 0x0101u,
                                                    scale_pair + matmul::kSubnormalScaleOffset, bias_pair);
        if (got != want) note_failure(counts, &counts->subnormal_mismatches, entry, q, want, got);
      }
    }
  }
  atomicAdd(&counts->exact_entries, exact);
  atomicAdd(&counts->subnormal_entries, subnormal);
}

}  // namespace

bool enumerate_dequant_forms(DequantFormCounts& result) {
  DequantFormCounts* counts = nullptr;
  if (cudaMalloc(&counts, sizeof(DequantFormCounts)) != cudaSuccess) return false;
  const DequantFormCounts start{};
  bool ok = cudaMemcpy(counts, &start, sizeof(start), cudaMemcpyHostToDevice) == cudaSuccess;
  if (ok) {
    enumerate_kernel<<<65536, 256>>>(counts);
    ok = cudaGetLastError() == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess &&
         cudaMemcpy(&result, counts, sizeof(result), cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  cudaFree(counts);
  return ok;
}

}  // namespace plumb::cuda::testing
