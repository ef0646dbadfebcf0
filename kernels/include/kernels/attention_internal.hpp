// Shared facts of the attention kernels (not part of the kernel API): the
// per-thread scratch layout that attention_scratch_bytes() sizes and every
// target's kernels/simd/attention.cpp uses, and the argument check.
#pragma once

#include <cstddef>

#include "kernels/kernels.hpp"

namespace staticlm::kernels::detail {

// A work item is one kv head and up to kAttnMaxLanes "lanes" (query head ×
// query row pairs that read that kv head): each K/V tile is converted to fp32
// once and reused by every lane, so GQA/MQA groups and prefill rows share the
// conversion. 16 lanes keep the per-thread state within L1/L2 for head_dim up
// to 512 while amortising the conversion 16×.
constexpr int kAttnMaxLanes = 16;

// head_dim is padded with zeros to a multiple of the widest vector (16 floats)
// so inner loops never need a tail.
constexpr int kAttnVector = 16;
constexpr int attn_padded_dim(int head_dim) {
    return (head_dim + kAttnVector - 1) / kAttnVector * kAttnVector;
}

// Keys per tile. Each tile costs every lane one softmax step (a horizontal
// max and sum, a scalar exp, one vector exp per kW keys, the rescale of its
// accumulator): against the 2·head_dim FMAs per key that is about a third of
// the work at 32 keys and head_dim 64, a tenth at 128 keys. Wider heads need
// fewer keys for the same share, and the staged fp32 K and V tiles
// (2 × tile × head_dim × 4 bytes) stay at 64 KiB: 128 keys up to head_dim 64,
// 64 up to 128, 16 above.
constexpr int attn_tile_keys(int head_dim) {
    return attn_padded_dim(head_dim) <= 64 ? 128 : attn_padded_dim(head_dim) <= 128 ? 64 : 16;
}

// Keys per tile of the shared-range path (decode: every lane of the item sees
// the same keys). The same as the staged path's, on purpose: with the same
// tile boundaries (both on the grid of absolute positions) the two paths do
// the same fp32 operations in the same order for a lane, so a row's output
// does not depend on whether it was prefilled or decoded (the runtime's split
// invariance; with q8 activations and an f16 cache a last-bit difference can
// flip a rounding and show as PEIR ~4e-3).
constexpr int attn_shared_tile_keys(int head_dim) { return attn_tile_keys(head_dim); }

// How attention() lays out its work: lanes per work item and work items, for
// t query rows of n_heads heads over n_kv_heads kv heads on nt threads. Lanes
// compute independently of the item they share (tiles sit on an absolute key
// grid), so splitting a kv head's lanes over more items keeps every row
// bit-identical; splitting its keys does not. With fewer items than threads
// (decode with few kv heads) items get fewer lanes, down to 1.
struct AttnItems {
    int item_lanes = 0;
    int chunks = 0;   // work items per kv head
    int n_items = 0;
};
constexpr AttnItems attn_items(int t, int n_heads, int n_kv_heads, int nt) {
    const int lanes_per_g = n_heads / n_kv_heads * t;
    const int want_chunks = (nt + n_kv_heads - 1) / n_kv_heads;
    int lanes = (lanes_per_g + want_chunks - 1) / want_chunks;
    lanes = lanes < 1 ? 1 : lanes > kAttnMaxLanes ? kAttnMaxLanes : lanes;
    AttnItems r;
    r.item_lanes = lanes;
    r.chunks = (lanes_per_g + lanes - 1) / lanes;
    r.n_items = n_kv_heads * r.chunks;
    return r;
}
// The key range of an item is split over threads (and the parts merged, which
// reorders the sums) exactly when there are more threads than items.
constexpr bool attn_splits_keys(int t, int n_heads, int n_kv_heads, int nt) {
    return nt > 1 && attn_items(t, n_heads, n_kv_heads, nt).n_items < nt;
}

// Per-thread scratch, each part 64-byte aligned (offsets in floats):
//   kt   [tile][d_pad]   K tile converted to fp32
//   vt   [tile][d_pad]   V tile converted to fp32
//   qs   [lanes][d_pad]  queries multiplied by scale, zero padded
//   acc  [lanes][d_pad]  unnormalised output (running Σ p·v)
//   pt   [lanes][tile]   probabilities of the current tile
//   ml   [lanes][2]      running max and running sum
//   ps   [lanes][stile]  scores, then probabilities, of a shared-range tile
//   red  [8][16][16]     per-key partial dot products before the horizontal sum
struct AttnScratchLayout {
    size_t kt = 0, vt = 0, qs = 0, acc = 0, pt = 0, ml = 0, ps = 0, red = 0;
    size_t floats = 0;  // per thread, a multiple of 16
};

constexpr size_t attn_round16(size_t n) { return (n + 15) / 16 * 16; }

constexpr AttnScratchLayout attn_scratch_layout(int head_dim) {
    const size_t d = size_t(attn_padded_dim(head_dim));
    const size_t tile = size_t(attn_tile_keys(head_dim));
    const size_t lanes = kAttnMaxLanes;
    AttnScratchLayout s;
    s.kt = 0;
    s.vt = s.kt + attn_round16(tile * d);
    s.qs = s.vt + attn_round16(tile * d);
    s.acc = s.qs + attn_round16(lanes * d);
    s.pt = s.acc + attn_round16(lanes * d);
    s.ml = s.pt + attn_round16(lanes * tile);
    s.ps = s.ml + attn_round16(lanes * 2);
    s.red = s.ps + attn_round16(lanes * size_t(attn_shared_tile_keys(head_dim)));
    s.floats = s.red + attn_round16(8 * 16 * 16);
    return s;
}

// Throws Error(input) on inconsistent shapes and Error(capacity) when a ring
// cache is too small to hold every position the block needs.
void check_attention_args(const AttentionArgs& a);

}  // namespace staticlm::kernels::detail
