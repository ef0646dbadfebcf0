// StaticKVCache: one arena carved into per-layer K/V views (see kv_cache.hpp).
// layout() is the one place that sizes the arena; the constructor and
// bytes_needed() both use it, so the memory check and the allocation agree.
#include "cache/kv_cache.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "staticlm/error.hpp"

namespace staticlm {

namespace {

constexpr uint64_t kOverflow = std::numeric_limits<uint64_t>::max();

// a * b, or kOverflow.
uint64_t mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? kOverflow : r;
}
uint64_t add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? kOverflow : r;
}
uint64_t align64_checked(uint64_t n) { return n > kOverflow - 63 ? kOverflow : (n + 63) & ~uint64_t{63}; }

struct LayerLayout {
    bool owner = false;
    int slots = 0;
    uint64_t offset = 0;  // of k; v follows at offset + half
    uint64_t half = 0;    // aligned bytes of k (and of v)
};

// Validates the specs and lays out every owning layer; returns the arena size
// (kOverflow when it does not fit in 64 bits).
uint64_t layout(std::span<const KvLayerSpec> layers, int max_seq, KvType type, bool ring_sliding,
                int q_max, std::vector<LayerLayout>& out) {
    if (max_seq < 1)
        throw Error(ErrorKind::config, "max_seq must be >= 1, got " + std::to_string(max_seq));
    if (type != KvType::f16 && type != KvType::f32 && type != KvType::q8)
        throw Error(ErrorKind::config, "KV type " + std::to_string(int(type)) + " is not f16, f32 or q8");
    out.assign(layers.size(), LayerLayout{});
    uint64_t total = 0;
    for (size_t il = 0; il < layers.size(); ++il) {
        const KvLayerSpec& s = layers[il];
        if (s.kv_source < 0 || size_t(s.kv_source) > il)
            throw Error(ErrorKind::config, "layer " + std::to_string(il) + " reads K/V of layer " +
                                               std::to_string(s.kv_source) +
                                               ", which is not an earlier or the same layer");
        if (size_t(s.kv_source) != il) continue;
        if (s.n_kv_heads < 1 || s.head_dim < 1)
            throw Error(ErrorKind::config,
                        "layer " + std::to_string(il) + " has no K/V heads or head_dim");
        LayerLayout& l = out[il];
        l.owner = true;
        l.slots = max_seq;
        // In 64 bits: a window near INT_MAX plus q_max must not wrap.
        if (ring_sliding && s.window > 0)
            l.slots = int(std::min<int64_t>(max_seq, int64_t(s.window) + int64_t(q_max)));
        l.half = align64_checked(
            mul(mul(uint64_t(s.n_kv_heads), uint64_t(l.slots)), StaticKVCache::row_bytes(type, s.head_dim)));
        l.offset = total;
        total = add(total, mul(2, l.half));
    }
    return total;
}

}  // namespace

uint64_t StaticKVCache::bytes_needed(std::span<const KvLayerSpec> layers, int max_seq, KvType type,
                                     bool ring_sliding, int q_max) {
    std::vector<LayerLayout> l;
    return layout(layers, max_seq, type, ring_sliding, q_max, l);
}

StaticKVCache::StaticKVCache(std::span<const KvLayerSpec> layers, int max_seq, KvType type,
                             bool ring_sliding, int q_max)
    : max_seq_(max_seq), type_(type) {
    std::vector<LayerLayout> lay;
    const uint64_t total = layout(layers, max_seq, type, ring_sliding, q_max, lay);
    if (total == kOverflow || total > std::numeric_limits<size_t>::max())
        throw Error(ErrorKind::capacity, "KV cache of max_seq " + std::to_string(max_seq) +
                                             " does not fit in the address space");
    const int n = int(layers.size());
    views_.resize(size_t(n));
    owner_.assign(size_t(n), 0);
    arena_ = Buffer(size_t(total));
    for (int il = 0; il < n; ++il) {
        const LayerLayout& l = lay[size_t(il)];
        if (!l.owner) continue;
        const KvLayerSpec& s = layers[size_t(il)];
        // A "ring" of max_seq slots never wraps: it is full storage and must
        // neither limit rewind nor be left out of the per-token cost.
        if (l.slots < max_seq)
            ring_keep_.push_back(l.slots - s.window);
        else
            bytes_per_token_ += 2 * size_t(s.n_kv_heads) * row_bytes(type, s.head_dim);
        KvView& v = views_[size_t(il)];
        v.n_slots = l.slots;
        v.n_kv_heads = s.n_kv_heads;
        v.head_dim = s.head_dim;
        v.type = type;
        v.k = arena_.data() + l.offset;
        v.v = arena_.data() + l.offset + l.half;
        owner_[size_t(il)] = 1;
    }
    for (int il = 0; il < n; ++il)
        if (!owner_[size_t(il)]) views_[size_t(il)] = views_[size_t(layers[size_t(il)].kv_source)];
}

void StaticKVCache::store(const kernels::KernelTable& kt, int il, int pos0, int t, const float* k,
                          const float* v, size_t ld) {
    const KvView& view = views_[size_t(il)];
    const size_t hd = size_t(view.head_dim);
    const size_t row = row_bytes(type_, view.head_dim);
    for (int i = 0; i < t; ++i) {
        const size_t slot = size_t((pos0 + i) % view.n_slots);
        for (int h = 0; h < view.n_kv_heads; ++h) {
            // (kv head h, slot) of [n_kv_heads][n_slots][head_dim]
            const size_t off = (size_t(h) * size_t(view.n_slots) + slot) * row;
            const float* ks = k + size_t(i) * ld + size_t(h) * hd;
            const float* vs = v + size_t(i) * ld + size_t(h) * hd;
            auto* kd = static_cast<std::byte*>(view.k) + off;
            auto* vd = static_cast<std::byte*>(view.v) + off;
            if (type_ == KvType::f16) {
                kt.to_f16(ks, hd, reinterpret_cast<uint16_t*>(kd));
                kt.to_f16(vs, hd, reinterpret_cast<uint16_t*>(vd));
            } else if (type_ == KvType::q8) {
                kernels::quantize_kv_row_q8(ks, view.head_dim, kd);
                kernels::quantize_kv_row_q8(vs, view.head_dim, vd);
            } else {
                std::memcpy(kd, ks, hd * sizeof(float));
                std::memcpy(vd, vs, hd * sizeof(float));
            }
        }
    }
}

void StaticKVCache::copy_positions(const StaticKVCache& src, int src_pos0, int dst_pos0, int n) {
    if (n == 0) return;
    auto fail = [](const std::string& what) { throw Error(ErrorKind::input, "KV copy: " + what); };
    if (src.views_.size() != views_.size() || src.type_ != type_) fail("the caches have different layers or types");
    if (n < 0 || src_pos0 < 0 || dst_pos0 < 0 || src_pos0 > src.max_seq_ - n || dst_pos0 > max_seq_ - n)
        fail("positions " + std::to_string(src_pos0) + "+" + std::to_string(n) + " -> " + std::to_string(dst_pos0) +
             " outside the caches' max_seq " + std::to_string(src.max_seq_) + " / " + std::to_string(max_seq_));
    // Everything is checked before anything is written.
    for (size_t il = 0; il < views_.size(); ++il) {
        if (owner_[il] != src.owner_[il]) fail("layer " + std::to_string(il) + " owns K/V in one cache only");
        if (!owner_[il]) continue;
        const KvView& d = views_[il];
        const KvView& s = src.views_[il];
        if (d.n_kv_heads != s.n_kv_heads || d.head_dim != s.head_dim)
            fail("layer " + std::to_string(il) + " has different heads or head_dim");
        if (std::min(n, d.n_slots) > s.n_slots)
            fail("layer " + std::to_string(il) + ": the source ring holds " + std::to_string(s.n_slots) +
                 " positions, " + std::to_string(std::min(n, d.n_slots)) + " are needed");
    }
    for (size_t il = 0; il < views_.size(); ++il) {
        if (!owner_[il]) continue;
        const KvView& d = views_[il];
        const KvView& s = src.views_[il];
        const int keep = std::min(n, d.n_slots);  // a ring holds only its last n_slots positions
        const size_t row = row_bytes(type_, d.head_dim);
        for (int h = 0; h < d.n_kv_heads; ++h) {
            // [n_kv_heads][n_slots][head_dim]: runs of consecutive slots up to a ring's wrap.
            const auto* sk = static_cast<const std::byte*>(s.k) + size_t(h) * size_t(s.n_slots) * row;
            const auto* sv = static_cast<const std::byte*>(s.v) + size_t(h) * size_t(s.n_slots) * row;
            auto* dk = static_cast<std::byte*>(d.k) + size_t(h) * size_t(d.n_slots) * row;
            auto* dv = static_cast<std::byte*>(d.v) + size_t(h) * size_t(d.n_slots) * row;
            for (int i = n - keep; i < n;) {
                const int ss = (src_pos0 + i) % s.n_slots, ds = (dst_pos0 + i) % d.n_slots;
                const int run = std::min({n - i, s.n_slots - ss, d.n_slots - ds});
                std::memcpy(dk + size_t(ds) * row, sk + size_t(ss) * row, size_t(run) * row);
                std::memcpy(dv + size_t(ds) * row, sv + size_t(ss) * row, size_t(run) * row);
                i += run;
            }
        }
    }
}

int StaticKVCache::min_slots() const {
    int m = max_seq_;
    for (size_t il = 0; il < views_.size(); ++il)
        if (owner_[il]) m = std::min(m, views_[il].n_slots);
    return m;
}

size_t StaticKVCache::positions_bytes(int il, int n_positions) const {
    const KvView& view = views_[size_t(il)];
    return 2 * size_t(view.n_kv_heads) * size_t(n_positions) * row_bytes(type_, view.head_dim);
}

namespace {

// Calls fn(cache row, offset in the state buffer, row bytes) for each (K/V,
// head, position) row of positions p0 .. p1-1, where the buffer holds
// positions buf_p0 .. p1-1 as [K, V][n_kv_heads][p1 - buf_p0] rows.
template <class Fn>
void for_each_row(const KvView& view, int p0, int p1, int buf_p0, Fn&& fn) {
    const size_t row = StaticKVCache::row_bytes(view.type, view.head_dim);
    const size_t n_buf = size_t(p1 - buf_p0);
    size_t plane = 0;  // (K/V, head) index
    for (void* base : {view.k, view.v})
        for (int h = 0; h < view.n_kv_heads; ++h, ++plane)
            for (int p = p0; p < p1; ++p) {
                const size_t slot = size_t(p % view.n_slots);
                fn(static_cast<std::byte*>(base) + (size_t(h) * size_t(view.n_slots) + slot) * row,
                   (plane * n_buf + size_t(p - buf_p0)) * row, row);
            }
}

}  // namespace

void StaticKVCache::read_positions(int il, int p0, int p1, std::byte* out) const {
    for_each_row(views_[size_t(il)], p0, p1, p0,
                 [&](const std::byte* slot, size_t at, size_t n) { std::memcpy(out + at, slot, n); });
}

void StaticKVCache::write_positions(int il, int p0, int p1, const std::byte* in, int in_p0) {
    for_each_row(views_[size_t(il)], p0, p1, in_p0,
                 [&](std::byte* slot, size_t at, size_t n) { std::memcpy(slot, in + at, n); });
}

int StaticKVCache::max_rewind(int pos, int high_water) const {
    // A ring of W + extra slots holds position q until q + W + extra is written.
    // After rewinding to r = pos - n, a step needs r - W + 1 .. r - 1, which are
    // intact while r - W + 1 + W + extra > high_water - 1, i.e.
    // n <= pos - high_water + extra + 1.
    int limit = pos;
    for (int extra : ring_keep_) limit = std::min(limit, pos - high_water + extra + 1);
    return std::max(limit, 0);
}

}  // namespace staticlm
