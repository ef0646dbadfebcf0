// StaticKVCache: bytes_needed() equals what the constructor allocates, store()
// writes the documented [n_kv_heads][n_slots][head_dim] layout (slot p %
// n_slots, f16 or f32), and windows near INT_MAX neither overflow nor
// inflate a ring (issue 18: sliding_window 2^31-1 with --ring).
#include <doctest/doctest.h>

#include <climits>
#include <cstring>
#include <limits>
#include <vector>

#include "cache/kv_cache.hpp"
#include "staticlm/error.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

// Layers: 0 full (2 kv heads, hd 8), 1 sliding W=4 (1 kv head, hd 16), 2 reads layer 1.
const std::vector<KvLayerSpec> kSpecs = {{2, 8, 0, 0}, {1, 16, 1, 4}, {1, 16, 1, 4}};

}  // namespace

TEST_CASE("kv cache: bytes_needed is the arena the constructor allocates") {
    for (KvType kv : {KvType::f16, KvType::f32})
        for (bool ring : {false, true})
            for (int max_seq : {1, 7, 64, 1000}) {
                CAPTURE(max_seq);
                CAPTURE(ring);
                const StaticKVCache c(kSpecs, max_seq, kv, ring, 3);
                CHECK(StaticKVCache::bytes_needed(kSpecs, max_seq, kv, ring, 3) == c.bytes());
                CHECK(c.owns(0));
                CHECK(!c.owns(2));
                CHECK(c.view(2).k == c.view(1).k);
                CHECK(c.view(1).n_slots == (ring ? std::min(max_seq, 4 + 3) : max_seq));
            }
    CHECK(StaticKVCache::element_bytes(KvType::f16) == 2);
    CHECK(StaticKVCache::element_bytes(KvType::f32) == 4);
    // 4096 heads × INT_MAX slots × 2^20 dims × 4 bytes × 2 overflows 64 bits: saturated, not wrapped.
    const std::vector<KvLayerSpec> huge = {{4096, 1 << 20, 0, 0}};
    CHECK(StaticKVCache::bytes_needed(huge, INT_MAX, KvType::f32, false, 1) ==
          std::numeric_limits<uint64_t>::max());
    test::expect_error([] { StaticKVCache::bytes_needed(kSpecs, 0, KvType::f16, false, 1); },
                       ErrorKind::config, {"max_seq must be >= 1, got 0"});
}

TEST_CASE("kv cache: a window near INT_MAX in a ring is full storage (no int overflow)") {
    const std::vector<KvLayerSpec> specs = {{1, 8, 0, INT_MAX}, {1, 8, 1, INT_MAX - 2}};
    const int max_seq = 32, q_max = 16;
    const StaticKVCache ring(specs, max_seq, KvType::f16, true, q_max);
    const StaticKVCache full(specs, max_seq, KvType::f16, false, q_max);
    CHECK(ring.view(0).n_slots == max_seq);
    CHECK(ring.view(1).n_slots == max_seq);
    CHECK(ring.bytes() == full.bytes());
    CHECK(ring.bytes_per_token() == full.bytes_per_token());
    CHECK(ring.max_rewind(20, 30) == 20);  // full storage: rewind is unlimited
    CHECK(StaticKVCache::bytes_needed(specs, max_seq, KvType::f16, true, q_max) == full.bytes());
}

TEST_CASE("kv cache: store writes slot p % n_slots of each kv head, f16 and f32") {
    const int hd = 16, n_kv = 1, max_seq = 64, q_max = 3;
    const std::vector<KvLayerSpec> specs = {{2, 8, 0, 0}, {n_kv, hd, 1, 4}};
    for (KvType kv : {KvType::f16, KvType::f32}) {
        StaticKVCache c(specs, max_seq, kv, /*ring=*/true, q_max);
        const KvView& v = c.view(1);
        REQUIRE(v.n_slots == 7);
        // 3 tokens at positions 9..11 → slots 2, 3, 4; values exact in f16.
        const size_t ld = size_t(n_kv * hd) + 5;
        std::vector<float> k(3 * ld), val(3 * ld);
        for (size_t i = 0; i < k.size(); ++i) {
            k[i] = float(int(i % 97)) * 0.25f;
            val[i] = -float(int(i % 89)) * 0.5f;
        }
        c.store(kernels::table(), 1, 9, 3, k.data(), val.data(), ld);
        for (int i = 0; i < 3; ++i)
            for (int d = 0; d < hd; ++d) {
                const size_t slot = size_t((9 + i) % v.n_slots), at = slot * size_t(hd) + size_t(d);
                float got_k, got_v;
                if (kv == KvType::f32) {
                    got_k = static_cast<const float*>(v.k)[at];
                    got_v = static_cast<const float*>(v.v)[at];
                } else {
                    got_k = kernels::f16_to_f32(static_cast<const uint16_t*>(v.k)[at]);
                    got_v = kernels::f16_to_f32(static_cast<const uint16_t*>(v.v)[at]);
                }
                CHECK(got_k == k[size_t(i) * ld + size_t(d)]);
                CHECK(got_v == val[size_t(i) * ld + size_t(d)]);
            }
    }
}
