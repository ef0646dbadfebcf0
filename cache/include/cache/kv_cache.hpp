// StaticKVCache: the KV cache of one session, allocated once as one arena.
// Layer il owns k/v views [n_kv_heads][n_slots] rows (head_dim f16 or f32
// values, or q8: head_dim int8 and a scale per 32, kernels::kv_row_bytes) unless
// its kv_source is another layer, whose views it then reads (Gemma 4 KV
// sharing). Position p of a layer lives in slot p % n_slots: full storage has
// n_slots = max_seq; ring storage for a sliding layer keeps window + q_max slots.
// The cache alone knows this layout: writers call store(), the memory check
// calls bytes_needed(), and the attention kernel reads the views it documents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm {

struct KvLayerSpec {
    int n_kv_heads = 0;
    int head_dim = 0;
    int kv_source = 0;  // == own index when the layer owns its K/V
    int window = 0;     // sliding window W, 0 for full attention
};

// What the attention kernel reads (kernels::AttentionArgs takes these fields).
struct KvView {
    void* k = nullptr;  // [n_kv_heads][n_slots] rows of kernels::kv_row_bytes(type, head_dim)
    void* v = nullptr;  // [n_kv_heads][n_slots] rows
    int n_slots = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    KvType type = KvType::f16;
};

class StaticKVCache {
public:
    StaticKVCache() = default;
    // ring_sliding: sliding layers keep window + q_max slots instead of max_seq.
    StaticKVCache(std::span<const KvLayerSpec> layers, int max_seq, KvType type, bool ring_sliding,
                  int q_max);
    StaticKVCache(const StaticKVCache&) = delete;
    StaticKVCache& operator=(const StaticKVCache&) = delete;
    StaticKVCache(StaticKVCache&&) = default;
    StaticKVCache& operator=(StaticKVCache&&) = default;

    // Bytes of one cached row (head_dim values of one kv head and position).
    static size_t row_bytes(KvType type, int head_dim) { return kernels::kv_row_bytes(type, head_dim); }
    // The arena size the constructor would allocate for these arguments,
    // computed without allocating (UINT64_MAX when it does not fit in 64 bits).
    // Throws like the constructor on invalid layer specs.
    static uint64_t bytes_needed(std::span<const KvLayerSpec> layers, int max_seq, KvType type,
                                 bool ring_sliding, int q_max);

    // Writes the K/V rows of t tokens at positions pos0 .. pos0+t-1 into layer
    // il's own storage (converting to f16, or quantizing to q8, as the cache
    // holds them). k and v are
    // [t][n_kv_heads][head_dim] fp32 with row stride ld floats. il must own its K/V.
    void store(const kernels::KernelTable& kt, int il, int pos0, int t, const float* k,
               const float* v, size_t ld);

    // Copies the K/V of positions src_pos0 .. src_pos0 + n - 1 of every layer
    // that owns K/V in src to positions dst_pos0 .. dst_pos0 + n - 1 here (slot
    // p % n_slots on each side), bit for bit. A ring keeps its last n_slots
    // positions, so only the last min(n, n_slots) of a ring layer are copied;
    // src must still hold those. Throws Error(input) when the caches differ in
    // layers, heads, head_dim or type, or a range does not fit.
    void copy_positions(const StaticKVCache& src, int src_pos0, int dst_pos0, int n);
    // Slots of the smallest ring layer (max_seq when there is none).
    int min_slots() const;
    // Saved state: the raw K then V rows of positions p0 .. p1-1 of layer il's
    // own storage, each [n_kv_heads][p1 - p0] rows as stored (f16, f32, or q8
    // values with their scales: a q8 cache restores bit for bit). The positions must still be held: p1 - p0 <= the layer's slots.
    size_t positions_bytes(int il, int n_positions) const;
    void read_positions(int il, int p0, int p1, std::byte* out) const;
    // Stores positions p0 .. p1-1 from `in`, which holds positions in_p0 .. p1-1
    // (in_p0 <= p0) in read_positions' layout.
    void write_positions(int il, int p0, int p1, const std::byte* in, int in_p0);

    // The K/V a layer reads (its own, or its source layer's).
    const KvView& view(int il) const { return views_[size_t(il)]; }
    bool owns(int il) const { return owner_[size_t(il)]; }
    int n_layers() const { return int(views_.size()); }
    int max_seq() const { return max_seq_; }
    KvType type() const { return type_; }
    size_t bytes() const { return arena_.size(); }
    // Bytes one more token costs in full-storage layers (ring layers cost nothing per token).
    size_t bytes_per_token() const { return bytes_per_token_; }
    // The largest n that rewind(n) may use at position pos, when positions up
    // to high_water - 1 have been written: every ring must still hold the
    // window in front of pos - n. Without rings, pos.
    int max_rewind(int pos, int high_water) const;

private:
    Buffer arena_;
    std::vector<KvView> views_;
    std::vector<char> owner_;
    std::vector<int> ring_keep_;  // per ring layer: slots beyond the window (= q_max)
    int max_seq_ = 0;
    KvType type_ = KvType::f16;
    size_t bytes_per_token_ = 0;
};

}  // namespace staticlm
