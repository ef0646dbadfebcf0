// StaticKVCache: bytes_needed() equals what the constructor allocates, store()
// writes the documented [n_kv_heads][n_slots][head_dim] layout (slot p %
// n_slots, f16, f32 or q8), and windows near INT_MAX neither overflow nor
// inflate a ring (issue 18: sliding_window 2^31-1 with --ring).
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
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
    for (KvType kv : {KvType::f16, KvType::f32, KvType::q8})
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
    CHECK(StaticKVCache::row_bytes(KvType::f16, 8) == 16);
    CHECK(StaticKVCache::row_bytes(KvType::f32, 8) == 32);
    CHECK(StaticKVCache::row_bytes(KvType::q8, 8) == 8 + 4);      // one partial block
    CHECK(StaticKVCache::row_bytes(KvType::q8, 256) == 256 + 32);  // 8 scales
    // Per token, full storage: K and V of layer 0 (2 heads × hd 8) and of layer 1
    // (1 head × hd 16); layer 2 reads layer 1. q8: 2·2·(8+4) + 2·(16+4) = 88.
    CHECK(StaticKVCache(kSpecs, 16, KvType::f16, false, 3).bytes_per_token() == 2 * 2 * 16 + 2 * 32);
    CHECK(StaticKVCache(kSpecs, 16, KvType::q8, false, 3).bytes_per_token() == 88);
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

TEST_CASE("kv cache: a q8 cache stores each row as the quantizer writes it") {
    const int hd = 40, n_kv = 2, max_seq = 8;
    const std::vector<KvLayerSpec> specs = {{n_kv, hd, 0, 0}};
    StaticKVCache c(specs, max_seq, KvType::q8, false, 4);
    const size_t row = kernels::kv_row_bytes(KvType::q8, hd);
    const size_t ld = size_t(n_kv * hd) + 3;
    std::vector<float> k(2 * ld), v(2 * ld);
    for (size_t i = 0; i < k.size(); ++i) {
        k[i] = float(int(i % 13)) - 6.0f;
        v[i] = 0.1f * float(int(i % 7));
    }
    c.store(kernels::table(), 0, 5, 2, k.data(), v.data(), ld);  // positions 5, 6
    std::vector<std::byte> want(row);
    std::vector<float> back(static_cast<size_t>(hd));
    for (int i = 0; i < 2; ++i)
        for (int h = 0; h < n_kv; ++h) {
            const size_t at = (size_t(h) * max_seq + size_t(5 + i)) * row;
            const float* src = k.data() + size_t(i) * ld + size_t(h) * hd;
            kernels::quantize_kv_row_q8(src, hd, want.data());
            CHECK(std::memcmp(static_cast<const std::byte*>(c.view(0).k) + at, want.data(), row) == 0);
            kernels::quantize_kv_row_q8(v.data() + size_t(i) * ld + size_t(h) * hd, hd, want.data());
            CHECK(std::memcmp(static_cast<const std::byte*>(c.view(0).v) + at, want.data(), row) == 0);
            // Within half a step of its block's scale (max |k| 6: 6/127/2).
            kernels::dequantize_kv_row_q8(static_cast<const std::byte*>(c.view(0).k) + at, hd, back.data());
            for (int e = 0; e < hd; ++e) CHECK(std::fabs(back[size_t(e)] - src[e]) <= 6.0f / 127.0f / 2.0f * 1.0001f);
        }
}

TEST_CASE("kv cache: q8 rows copy and save with their scales, bit for bit") {
    const int hd = 40, max_seq = 16;
    const std::vector<KvLayerSpec> specs = {{2, hd, 0, 0}, {1, 72, 1, 0}};
    StaticKVCache a(specs, max_seq, KvType::q8, false, 4), b(specs, max_seq, KvType::q8, false, 4);
    for (int il = 0; il < 2; ++il) {
        const size_t ld = size_t(2 * 72);
        std::vector<float> k(6 * ld), v(6 * ld);
        for (size_t i = 0; i < k.size(); ++i) {
            k[i] = std::sin(0.37f * float(i) + float(il));
            v[i] = std::cos(0.11f * float(i));
        }
        a.store(kernels::table(), il, 0, 6, k.data(), v.data(), ld);
    }
    b.copy_positions(a, 1, 7, 4);  // positions 1..4 of a to 7..10 of b
    std::vector<std::byte> sa(a.positions_bytes(0, 4)), sb(b.positions_bytes(0, 4));
    REQUIRE(sa.size() == 2 * 2 * 4 * kernels::kv_row_bytes(KvType::q8, hd));
    for (int il = 0; il < 2; ++il) {
        sa.resize(a.positions_bytes(il, 4));
        sb.resize(b.positions_bytes(il, 4));
        a.read_positions(il, 1, 5, sa.data());
        b.read_positions(il, 7, 11, sb.data());
        CHECK(std::memcmp(sa.data(), sb.data(), sa.size()) == 0);
    }
    // A state written back lands bit for bit, and a cache of another type is refused.
    StaticKVCache c(specs, max_seq, KvType::q8, false, 4);
    c.write_positions(1, 1, 5, sa.data(), 1);
    std::vector<std::byte> sc(sa.size());
    c.read_positions(1, 1, 5, sc.data());
    CHECK(sc == sa);
    StaticKVCache f(specs, max_seq, KvType::f16, false, 4);
    test::expect_error([&] { f.copy_positions(a, 0, 0, 2); }, ErrorKind::input, {"different layers or types"});
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
