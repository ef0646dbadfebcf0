// StaticKVCache: one arena carved into per-layer K/V views (see kv_cache.hpp).
#include "cache/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "staticlm/error.hpp"

namespace staticlm {

StaticKVCache::StaticKVCache(std::span<const KvLayerSpec> layers, int max_seq, KvType type,
                             bool ring_sliding, int q_max)
    : max_seq_(max_seq), type_(type) {
    if (max_seq < 1)
        throw Error(ErrorKind::config, "max_seq must be >= 1, got " + std::to_string(max_seq));
    const size_t elem = type == KvType::f16 ? 2 : 4;
    const int n = int(layers.size());
    views_.resize(size_t(n));
    owner_.assign(size_t(n), 0);

    // First pass: sizes of owning layers.
    std::vector<size_t> offsets(size_t(n), 0);
    size_t total = 0;
    for (int il = 0; il < n; ++il) {
        const KvLayerSpec& s = layers[size_t(il)];
        if (s.kv_source < 0 || s.kv_source > il)
            throw Error(ErrorKind::config, "layer " + std::to_string(il) +
                                               " reads K/V of layer " +
                                               std::to_string(s.kv_source) +
                                               ", which is not an earlier or the same layer");
        if (s.kv_source != il) continue;
        if (s.n_kv_heads < 1 || s.head_dim < 1)
            throw Error(ErrorKind::config,
                        "layer " + std::to_string(il) + " has no K/V heads or head_dim");
        int slots = max_seq;
        if (ring_sliding && s.window > 0) slots = std::min(max_seq, s.window + q_max);
        // A "ring" of max_seq slots never wraps: it is full storage and must
        // neither limit rewind nor be left out of the per-token cost.
        if (slots < max_seq) {
            ring_keep_.push_back(slots - s.window);
        } else {
            bytes_per_token_ += 2 * size_t(s.n_kv_heads) * size_t(s.head_dim) * elem;
        }
        KvView& v = views_[size_t(il)];
        v.n_slots = slots;
        v.n_kv_heads = s.n_kv_heads;
        v.head_dim = s.head_dim;
        v.type = type;
        owner_[size_t(il)] = 1;
        offsets[size_t(il)] = total;
        total += 2 * align64(size_t(s.n_kv_heads) * size_t(slots) * size_t(s.head_dim) * elem);
    }
    arena_ = Buffer(total);
    for (int il = 0; il < n; ++il) {
        if (!owner_[size_t(il)]) continue;
        KvView& v = views_[size_t(il)];
        const size_t half =
            align64(size_t(v.n_kv_heads) * size_t(v.n_slots) * size_t(v.head_dim) * elem);
        v.k = arena_.data() + offsets[size_t(il)];
        v.v = arena_.data() + offsets[size_t(il)] + half;
    }
    for (int il = 0; il < n; ++il)
        if (!owner_[size_t(il)]) views_[size_t(il)] = views_[size_t(layers[size_t(il)].kv_source)];
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
