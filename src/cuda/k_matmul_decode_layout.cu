// The decode layout of a 4-bit affine weight (k_matmul_decode_lanes.cu reads it), written once at load from
// the weight's packed codes, scales and biases: each record's codes a lane at a time, its words and form, and
// each slice's runs of subnormal tiles.
#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_decode.cuh"

namespace plumb::cuda::matmul {

namespace {

// What launch_decode_layout writes from: the weight's arrays and the layout's shape.
struct LayoutArgs {
  DecodeParams w;  // the weight's fields (weight_params), with its layout's shape
  char* records;
  int record_bytes;
};

// One thread a lane's 16 bytes of codes of one record (the layout: k_matmul_decode_lanes.cu's header).
__global__ void lane_codes_kernel(LayoutArgs a) {
  wait_for_previous_kernel();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.w.slices * a.w.k_tiles * 32) return;
  const int lane = static_cast<int>(i % 32), g = lane / 4, t = lane % 4;
  const int64_t tile = i / 32 % a.w.k_tiles, slice = i / 32 / a.w.k_tiles;
  uint32_t words[4] = {};
  for (int j = 0; j < kDecodeNTiles; ++j) {
    const int64_t col = min(slice * kDecodeWarpCols + j * 8 + g, a.w.n - 1);
    const auto* row = reinterpret_cast<const uint8_t*>(a.w.packed + col * a.w.row_words);
    for (int s = 0; s < 4; ++s)
      for (int h = 0; h < 2; ++h) {
        const int64_t k = tile * kTileK + 16 * s + 8 * h + 2 * t;
        const uint32_t byte = k < a.w.k ? row[k / 2] : 0u, nibble = 4 * (2 * (s % 2) + h);
        words[2 * j + s / 2] |= (byte & 0xfu) << nibble | (byte >> 4) << (nibble + 16);
      }
  }
  *reinterpret_cast<uint4*>(a.records + i / 32 * a.record_bytes + lane * 16) =
      make_uint4(words[0], words[1], words[2], words[3]);
}

// One thread a record: its columns' words, and the form tile_form gives them.
__global__ void lane_words_kernel(LayoutArgs a) {
  wait_for_previous_kernel();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.w.slices * a.w.k_tiles) return;
  const int64_t tile = i % a.w.k_tiles, slice = i / a.w.k_tiles;
  const int halves = a.w.lane_halves;
  char* record = a.records + i * a.record_bytes;
  auto* words = reinterpret_cast<uint32_t*>(record + LaneLayout::codes_bytes());
  bool exact = true, subnormal = true;
  for (int g = 0; g < 8; ++g)
    for (int h = 0; h < halves; ++h)
      for (int j = 0; j < kDecodeNTiles; ++j) {
        const int64_t col = min(slice * kDecodeWarpCols + j * 8 + g, a.w.n - 1);
        const int64_t k = tile * kTileK + 32 * h;
        const int64_t e = col * a.w.groups + (k >> a.w.group_shift);
        const uint32_t word = k < a.w.k ? a.w.scales[e] | static_cast<uint32_t>(a.w.biases[e]) << 16 : 0u;
        words[(g * halves + h) * kDecodeNTiles + j] = word;
        const FormTests tests = form_tests(word);
        exact &= tests.exact;
        subnormal &= tests.subnormal;
      }
  const TileForm form = subnormal ? TileForm::subnormal : exact ? TileForm::packed : TileForm::f32;
  *reinterpret_cast<uint4*>(record + LaneLayout{0, 0, halves}.form_at()) =
      make_uint4(static_cast<uint32_t>(form), 0u, 0u, 0u);
}

// One thread a slice: each record's run of tiles from it on that take the subnormal form.
__global__ void lane_marks_kernel(LayoutArgs a) {
  wait_for_previous_kernel();
  const int64_t slice = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (slice >= a.w.slices) return;
  const int form_at = LaneLayout{0, 0, a.w.lane_halves}.form_at();
  uint32_t run = 0;
  for (int64_t tile = a.w.k_tiles - 1; tile >= 0; --tile) {
    auto* form =
        reinterpret_cast<uint32_t*>(a.records + (slice * a.w.k_tiles + tile) * a.record_bytes + form_at);
    run = (*form & 0xffu) == static_cast<uint32_t>(TileForm::subnormal) ? run + 1 : 0u;
    *form = (*form & 0xffu) | run << kSubnormalRunShift;
  }
}

}  // namespace

}  // namespace plumb::cuda::matmul

namespace plumb::cuda {

int64_t decode_layout_bytes(const WeightArgs& weight) {
  if (!weight.affine || weight.bits != 4 || !matmul_decode_supports(weight)) return 0;
  return matmul::lane_layout(weight.out, weight.in, weight.group).bytes();
}

cudaError_t launch_decode_layout(const WeightArgs& weight, void* layout, cudaStream_t stream) {
  using namespace matmul;
  if (decode_layout_bytes(weight) == 0 || reinterpret_cast<uintptr_t>(layout) % 16 != 0)
    return cudaErrorInvalidValue;
  LayoutArgs a{};
  a.w = weight_params(weight, layout);
  a.records = static_cast<char*>(layout);
  a.record_bytes = lane_layout(weight.out, weight.in, weight.group).record_bytes();
  constexpr int kThreads = 256;
  const int64_t lanes = a.w.slices * a.w.k_tiles * 32, tiles = a.w.slices * a.w.k_tiles;
  const auto blocks = [](int64_t threads) {
    return dim3(static_cast<unsigned>((threads + kThreads - 1) / kThreads));
  };
  if (const cudaError_t code = launch_dependent(lane_codes_kernel, blocks(lanes), kThreads, 0, stream, a);
      code != cudaSuccess)
    return code;
  if (const cudaError_t code = launch_dependent(lane_words_kernel, blocks(tiles), kThreads, 0, stream, a);
      code != cudaSuccess)
    return code;
  if (const cudaError_t code =
          launch_dependent(lane_marks_kernel, blocks(a.w.slices), kThreads, 0, stream, a);
      code != cudaSuccess)
    return code;
  return cudaGetLastError();
}

}  // namespace plumb::cuda
