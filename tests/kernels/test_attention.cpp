// Attention over a static KV cache: every runnable target against the scalar
// reference (f16/f32 caches, head dims, GQA/MQA, blocks, windows, ring caches,
// scales, threads) and q8 caches (the quantizer and the reference's reading of
// it checked by hand), plus hand-computed cases that check the reference itself.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

// |kernel - reference| on outputs in [-1, 1]: fp32 dot products of up to 512
// terms with scores up to ~30 (scale 1.0) against a double reference.
constexpr float kOutTol = 2e-4f;
// Two double-precision references of the same data (ring vs full storage).
constexpr float kRefTol = 1e-6f;
// Hand-computed cases: exact apart from exp/division rounding in fp32.
constexpr float kHandTol = 1e-6f;

// Deterministic value in [-1, 1] of (which, kv head, position, element).
float value(int which, int g, int p, int e) {
    uint32_t x = uint32_t(which) * 0x9E3779B9u ^ uint32_t(g) * 0x85EBCA6Bu ^
                 uint32_t(p) * 0xC2B2AE35u ^ uint32_t(e) * 0x27D4EB2Fu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    x *= 0x297A2D39u;
    x ^= x >> 15;
    return float(x & 0xFFFFFF) / float(0x7FFFFF) - 1.0f;
}

// A K or V cache [n_kv][n_slots] rows of kv_row_bytes(type, d), stored just
// past an aligned start so the kernels see a pointer no vector load may assume
// aligned. Positions 0..last are written in
// order into slot p % n_slots, so a ring keeps the latest n_slots of them.
struct Cache {
    KvType type;
    // f16 and f32: one element past (aligned for the element type, as the
    // cache's arena always is); q8: one byte past (its fp32 scales are read
    // unaligned anyway).
    size_t skew;
    std::vector<std::byte> bytes;
    Cache(KvType type, int which, int n_kv, int n_slots, int d, int last)
        : type(type), skew(type == KvType::f16 ? 2 : type == KvType::f32 ? 4 : 1) {
        const size_t row = kv_row_bytes(type, d);
        bytes.assign(size_t(n_kv) * size_t(n_slots) * row + skew, std::byte{0});
        std::vector<float> x(static_cast<size_t>(d));
        for (int g = 0; g < n_kv; ++g)
            for (int p = 0; p <= last; ++p) {
                for (int e = 0; e < d; ++e) x[size_t(e)] = value(which, g, p, e);
                std::byte* dst = bytes.data() + skew + (size_t(g) * n_slots + size_t(p % n_slots)) * row;
                for (int e = 0; e < d; ++e) {
                    if (type == KvType::f16) {
                        const uint16_t h = f32_to_f16(x[size_t(e)]);
                        std::memcpy(dst + 2 * size_t(e), &h, 2);
                    } else if (type == KvType::f32) {
                        std::memcpy(dst + 4 * size_t(e), &x[size_t(e)], 4);
                    }
                }
                if (type == KvType::q8) quantize_kv_row_q8(x.data(), d, dst);
            }
    }
    const void* data() const { return bytes.data() + skew; }
};

struct Case {
    KvType kv_type = KvType::f16;
    int d = 8, n_heads = 1, n_kv = 1, t = 1, pos0 = 0, window = 0;
    float scale = 1.0f;
};

std::string describe(const Case& c, int n_slots) {
    return std::string("kv ") + kv_type_name(c.kv_type) + " d " + std::to_string(c.d) +
           " heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv) + " t " +
           std::to_string(c.t) + " pos0 " + std::to_string(c.pos0) + " window " +
           std::to_string(c.window) + " scale " + std::to_string(c.scale) + " slots " +
           std::to_string(n_slots);
}

// Query rows with padding between rows (ldq > n_heads·d) and a misaligned start.
struct Block {
    size_t ld;
    std::vector<float> buf;
    Block(int t, int n_heads, int d, float fill) : ld(size_t(n_heads) * d + 3) {
        buf.assign(1 + ld * t, fill);
    }
    float* data() { return buf.data() + 1; }
};

Block make_queries(const Case& c) {
    Block q(c.t, c.n_heads, c.d, 0.0f);
    for (int i = 0; i < c.t; ++i)
        for (int h = 0; h < c.n_heads; ++h)
            for (int e = 0; e < c.d; ++e) q.data()[i * q.ld + size_t(h) * c.d + e] = value(2, h, i, e);
    return q;
}

AttentionArgs make_args(const Case& c, Block& q, const Cache& k, const Cache& v, int n_slots,
                        Block& out) {
    AttentionArgs a;
    a.q = q.data();
    a.ldq = q.ld;
    a.k = k.data();
    a.v = v.data();
    a.kv_type = c.kv_type;
    a.n_slots = n_slots;
    a.out = out.data();
    a.ldo = out.ld;
    a.t = c.t;
    a.pos0 = c.pos0;
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv;
    a.head_dim = c.d;
    a.window = c.window;
    a.scale = c.scale;
    return a;
}

// Runs `fn` (a target's kernel) with misaligned scratch and compares all
// outputs with `want`; the padding between output rows must stay untouched.
void check_kernel(AttentionFn fn, const AttentionArgs& args_in, const Block& want, int n_threads,
                  const std::string& what) {
    Block out(args_in.t, args_in.n_heads, args_in.head_dim, -7.0f);
    AttentionArgs args = args_in;
    args.out = out.data();
    args.ldo = out.ld;
    std::vector<std::byte> scratch(
        attention_scratch_bytes(args.t, args.n_heads, args.head_dim, n_threads) + 4);
    fn(args, scratch.data() + 4, n_threads);
    const size_t row = size_t(args.n_heads) * args.head_dim;
    float worst = 0.0f;
    bool padding_ok = out.buf[0] == -7.0f;
    for (int i = 0; i < args.t; ++i) {
        for (size_t e = 0; e < row; ++e) {
            const float got = out.buf[1 + i * out.ld + e], ref = want.buf[1 + i * want.ld + e];
            const float diff = std::fabs(got - ref);
            worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
        }
        for (size_t e = row; e < out.ld; ++e) padding_ok &= out.buf[1 + i * out.ld + e] == -7.0f;
    }
    CHECK_MESSAGE(worst <= kOutTol, what, " threads ", n_threads, ": max|diff| ", worst);
    CHECK_MESSAGE(padding_ok, what, ": wrote outside the output rows");
}

std::vector<Target> runnable_targets() {
    std::vector<Target> out;
    for (Target t : compiled_targets())
        if (target_supported(t)) out.push_back(t);
    return out;
}

// The best target runs every case on 1 and 2 threads; the others alternate
// (the threading code is the same source in every target, and each extra
// multi-threaded run is costly on a loaded 2-core machine).
std::vector<int> thread_counts(Target target, const Case& c) {
    if (target == best_target()) return {1, 2};
    return {1 + (c.t + c.pos0 + c.window + c.d / 8) % 2};
}

// Reference on full storage, the same on a ring (window > 0) as a check of the
// reference's slot mapping, then every target on both layouts.
void run_case(const Case& c) {
    const int last = c.pos0 + c.t - 1;
    const int full_slots = last + 3;  // more slots than positions: unused slots are never read
    const Cache kf(c.kv_type, 0, c.n_kv, full_slots, c.d, last);
    const Cache vf(c.kv_type, 1, c.n_kv, full_slots, c.d, last);
    Block q = make_queries(c);
    Block want(c.t, c.n_heads, c.d, 0.0f);
    const AttentionArgs full = make_args(c, q, kf, vf, full_slots, want);
    ref::attention(full);

    const int ring_slots = c.window + c.t;
    if (c.window > 0 && ring_slots < last + 1) {  // positions wrap around the ring
        static thread_local std::vector<Cache> keep;  // keeps the ring alive for the args
        keep.clear();
        keep.emplace_back(c.kv_type, 0, c.n_kv, ring_slots, c.d, last);
        keep.emplace_back(c.kv_type, 1, c.n_kv, ring_slots, c.d, last);
        Block ring_ref(c.t, c.n_heads, c.d, 0.0f);
        const AttentionArgs ring = make_args(c, q, keep[0], keep[1], ring_slots, ring_ref);
        ref::attention(ring);
        float worst = 0.0f;
        for (size_t i = 0; i < want.buf.size(); ++i)
            worst = std::max(worst, std::fabs(want.buf[i] - ring_ref.buf[i]));
        CHECK_MESSAGE(worst <= kRefTol, describe(c, ring_slots), ": ring reference differs");
        for (Target target : runnable_targets())
            for (int threads : thread_counts(target, c))
                check_kernel(table_for(target).attention, ring, want, threads,
                             std::string(target_name(target)) + " " + describe(c, ring_slots));
    }
    for (Target target : runnable_targets())
        for (int threads : thread_counts(target, c))
            check_kernel(table_for(target).attention, full, want, threads,
                         std::string(target_name(target)) + " " + describe(c, full_slots));
}

}  // namespace

TEST_CASE("attention reference: two keys with known scores give known weights") {
    // scores q·k·scale = 0 and ln 3 → weights 1/4 and 3/4; out = v0/4 + 3·v1/4.
    for (KvType type : {KvType::f32, KvType::f16, KvType::q8}) {
        CAPTURE(kv_type_name(type));
        const int d = 8;
        std::vector<float> q(d, 0.0f), kf(2 * d, 0.0f), vf(2 * d, 0.0f), out(d, 0.0f);
        q[0] = 1.0f;
        kf[d + 0] = 1.0f;  // k0 = 0, k1 = e0
        vf[0] = 4.0f;      // v0 = 4 e0
        vf[d + 1] = 8.0f;  // v1 = 8 e1
        std::vector<uint16_t> kh(kf.size()), vh(vf.size());
        for (size_t i = 0; i < kf.size(); ++i) kh[i] = f32_to_f16(kf[i]), vh[i] = f32_to_f16(vf[i]);
        // q8: each row one block; 1, 4 and 8 are q = 127 times scale x/127.
        const size_t q8_row = kv_row_bytes(KvType::q8, d);
        std::vector<std::byte> kq(2 * q8_row), vq(2 * q8_row);
        for (int j = 0; j < 2; ++j) {
            quantize_kv_row_q8(kf.data() + j * d, d, kq.data() + j * q8_row);
            quantize_kv_row_q8(vf.data() + j * d, d, vq.data() + j * q8_row);
        }
        AttentionArgs a;
        a.q = q.data();
        a.ldq = d;
        a.k = type == KvType::f16 ? static_cast<const void*>(kh.data()) : type == KvType::q8 ? static_cast<const void*>(kq.data()) : kf.data();
        a.v = type == KvType::f16 ? static_cast<const void*>(vh.data()) : type == KvType::q8 ? static_cast<const void*>(vq.data()) : vf.data();
        a.kv_type = type;
        a.n_slots = 2;
        a.out = out.data();
        a.ldo = d;
        a.t = 1;
        a.pos0 = 1;
        a.n_heads = a.n_kv_heads = 1;
        a.head_dim = d;
        a.scale = std::log(3.0f);
        const float expect[d] = {1.0f, 6.0f, 0, 0, 0, 0, 0, 0};
        ref::attention(a);
        for (int e = 0; e < d; ++e) CHECK(out[e] == doctest::Approx(expect[e]).epsilon(kHandTol));
        for (Target target : runnable_targets()) {
            for (int threads : {1, 2}) {
                std::fill(out.begin(), out.end(), -1.0f);
                std::vector<std::byte> scratch(attention_scratch_bytes(1, 1, d, threads));
                table_for(target).attention(a, scratch.data(), threads);
                for (int e = 0; e < d; ++e)
                    CHECK_MESSAGE(std::fabs(out[e] - expect[e]) <= kHandTol * 8, target_name(target),
                                  " element ", e, " = ", out[e]);
            }
        }
        // Window 1: only the row's own key, weight exactly 1.
        a.window = 1;
        ref::attention(a);
        CHECK(out[0] == 0.0f);
        CHECK(out[1] == 8.0f);
        for (Target target : runnable_targets()) {
            std::fill(out.begin(), out.end(), -1.0f);
            std::vector<std::byte> scratch(attention_scratch_bytes(1, 1, d, 2));
            table_for(target).attention(a, scratch.data(), 2);
            CHECK(out[0] == doctest::Approx(0.0f));
            CHECK(out[1] == doctest::Approx(8.0f).epsilon(kHandTol));
        }
    }
}

TEST_CASE("q8 KV rows: scale max|x|/127 per 32 values, round to nearest, exact dequantization") {
    // 40 values: a full block with max 127 (scale exactly 1) and a block of 8.
    std::vector<float> x(40, 0.0f);
    x[0] = 127.0f;
    x[1] = 0.5f;    // a tie: away from zero -> 1
    x[2] = -1.5f;   // -> -2
    x[3] = 2.49f;   // -> 2
    x[31] = -127.0f;
    x[32] = 0.25f;  // second block: max 0.5 -> scale 0.5/127
    x[33] = -0.5f;
    REQUIRE(kv_row_bytes(KvType::q8, 40) == size_t(40 + 2 * 4));
    CHECK(kv_row_bytes(KvType::q8, 64) == 72);
    CHECK(kv_row_bytes(KvType::f16, 64) == 128);
    std::vector<std::byte> row(kv_row_bytes(KvType::q8, 40));
    quantize_kv_row_q8(x.data(), 40, row.data());
    const auto* q = reinterpret_cast<const int8_t*>(row.data());
    CHECK(q[0] == 127);
    CHECK(q[1] == 1);
    CHECK(q[2] == -2);
    CHECK(q[3] == 2);
    CHECK(q[4] == 0);
    CHECK(q[31] == -127);
    CHECK(q[32] == 64);  // 0.25 / (0.5/127) = 63.5 -> 64
    CHECK(q[33] == -127);
    float s0, s1;
    std::memcpy(&s0, row.data() + 40, 4);
    std::memcpy(&s1, row.data() + 44, 4);
    CHECK(s0 == 1.0f);
    CHECK(s1 == 0.5f / 127.0f);
    std::vector<float> y(40);
    dequantize_kv_row_q8(row.data(), 40, y.data());
    CHECK(y[1] == 1.0f);
    CHECK(y[33] == -127.0f * (0.5f / 127.0f));
    // An all-zero block has scale 0; a NaN poisons only its own block.
    x[35] = NAN;
    quantize_kv_row_q8(x.data(), 40, row.data());
    std::memcpy(&s1, row.data() + 44, 4);
    CHECK(std::isnan(s1));
    CHECK(q[32] == 0);
    CHECK(q[1] == 1);
    std::fill(x.begin(), x.end(), 0.0f);
    quantize_kv_row_q8(x.data(), 40, row.data());
    std::memcpy(&s0, row.data() + 40, 4);
    CHECK(s0 == 0.0f);
    CHECK(q[0] == 0);
}

TEST_CASE("attention with window 1 returns each row's own value vector") {
    Case c{KvType::f32, 16, 4, 2, 7, 5, 1, 0.25f};
    const int last = c.pos0 + c.t - 1;
    const Cache k(c.kv_type, 0, c.n_kv, last + 1, c.d, last), v(c.kv_type, 1, c.n_kv, last + 1, c.d, last);
    Block q = make_queries(c), out(c.t, c.n_heads, c.d, 0.0f);
    const AttentionArgs a = make_args(c, q, k, v, last + 1, out);
    ref::attention(a);
    for (int i = 0; i < c.t; ++i)
        for (int h = 0; h < c.n_heads; ++h)
            for (int e = 0; e < c.d; ++e)
                CHECK(out.data()[i * out.ld + size_t(h) * c.d + e] ==
                      doctest::Approx(value(1, h / 2, c.pos0 + i, e)).epsilon(kHandTol));
}

TEST_CASE("attention kernels match the reference on every runnable target") {
    struct Heads {
        int n_heads, n_kv;
    };
    const Heads heads[] = {{3, 3}, {4, 2}, {16, 2}, {5, 1}};  // GQA 1, 2, 8 and MQA
    int n = 0, outer = 0;
    for (KvType type : {KvType::f16, KvType::f32, KvType::q8})
        for (int d : {8, 16, 64, 80, 256, 512})
            for (Heads hd : heads) {
                ++outer;
                int inner = 0;
                for (int t : {1, 2, 7, 16, 33})
                    for (int pos0 : {0, 5, 100})
                        for (int window : {0, 1, 4, 8}) {
                            // Sanitizer pass: a third of (t, pos0, window), a different
                            // third for each (type, d, heads) in turn.
                            if (test::kSanitized && (inner++ + outer) % 3 != 0) continue;
                            Case c{type, d, hd.n_heads, hd.n_kv, t, pos0, window, 1.0f};
                            // Alternate the scale so both occur for every other parameter.
                            if ((n++ + t) % 2) c.scale = 1.0f / std::sqrt(float(d));
                            run_case(c);
                        }
            }
}

TEST_CASE("attention decode over a long context (split across threads)") {
    for (int d : {64, 256})
        for (int pos0 : {511, 3000}) {
            run_case({KvType::f16, d, 8, 1, 1, pos0, 0, 1.0f / std::sqrt(float(d))});
            run_case({KvType::f16, d, 32, 8, 1, pos0, 0, 1.0f / std::sqrt(float(d))});
            run_case({KvType::f32, d, 8, 8, 1, pos0, 1024, 1.0f});
            run_case({KvType::q8, d, 32, 8, 1, pos0, 0, 1.0f / std::sqrt(float(d))});
        }
}

TEST_CASE("attention decode: lane blocks, register chunks, tile and ring edges") {
    // One query row: every lane of a kv head sees the same keys, the path that
    // takes lanes in blocks of 8/4/2/1 and head_dim in register chunks. Group
    // sizes 3, 6, 7, 16 split into mixed blocks; d 48 and 80 leave chunk
    // remainders, d 8 a partial vector on AVX-512; positions 63/64, 127/128,
    // 255/256 and 300 end, start and cross key tiles (attn_tile_keys: 128 keys
    // for d <= 64, 64 for d <= 128, 16 above).
    struct Heads {
        int n_heads, n_kv;
    };
    const Heads heads[] = {{6, 2}, {7, 1}, {16, 1}, {12, 4}};
    int n = 0;
    for (KvType type : {KvType::f16, KvType::f32, KvType::q8})
        for (int d : {8, 48, 64, 80, 128, 256})
            for (Heads hd : heads)
                for (int pos0 : {63, 64, 127, 128, 255, 256, 300})
                    for (int window : {0, 100}) {
                        if (n++ % 3 != 0 && !(d == 64 || d == 256)) continue;  // keep the run short
                        run_case({type, d, hd.n_heads, hd.n_kv, 1, pos0, window,
                                  1.0f / std::sqrt(float(d))});
                    }
}

TEST_CASE("attention: a decoded row equals the same row of a prefill block, bit for bit") {
    // The runtime's split invariance needs this: decode (one row, all lanes of
    // a kv head share the keys) and prefill take different code paths but the
    // same tiles and the same fp32 operations per lane. One thread: a decode
    // with fewer kv heads than threads splits the keys and merges.
    struct Shape {
        int d, n_heads, n_kv;
    };
    for (KvType type : {KvType::f16, KvType::f32, KvType::q8})
        for (Shape sh : {Shape{64, 32, 8}, Shape{256, 8, 1}, Shape{80, 6, 2}, Shape{8, 3, 1}, Shape{72, 4, 2}})
            for (int last : {40, 300}) {
                const int t = 8;
                const Cache k(type, 0, sh.n_kv, last + 1, sh.d, last), v(type, 1, sh.n_kv, last + 1, sh.d, last);
                Case block{type, sh.d, sh.n_heads, sh.n_kv, t, last - t + 1, 0, 1.0f / std::sqrt(float(sh.d))};
                Case one = block;
                one.t = 1;
                one.pos0 = last;
                Block qb = make_queries(block), ob(t, sh.n_heads, sh.d, 0.0f);
                Block q1(1, sh.n_heads, sh.d, 0.0f), o1(1, sh.n_heads, sh.d, 0.0f);
                const size_t row = size_t(sh.n_heads) * sh.d;
                for (size_t e = 0; e < row; ++e) q1.data()[e] = qb.data()[size_t(t - 1) * qb.ld + e];
                const AttentionArgs ab = make_args(block, qb, k, v, last + 1, ob);
                const AttentionArgs a1 = make_args(one, q1, k, v, last + 1, o1);
                for (Target target : runnable_targets()) {
                    std::vector<std::byte> sb(attention_scratch_bytes(t, sh.n_heads, sh.d, 1));
                    std::vector<std::byte> s1(attention_scratch_bytes(1, sh.n_heads, sh.d, 1));
                    table_for(target).attention(ab, sb.data(), 1);
                    table_for(target).attention(a1, s1.data(), 1);
                    int differ = 0;
                    for (size_t e = 0; e < row; ++e)
                        differ += o1.data()[e] != ob.data()[size_t(t - 1) * ob.ld + e];
                    CHECK_MESSAGE(differ == 0, target_name(target), " ", describe(one, last + 1), ": ",
                                  differ, " elements differ");
                }
            }
}

TEST_CASE("attention rejects bad shapes and too small ring caches") {
    std::vector<float> q(64, 0.0f), kv(64, 0.0f), out(64, 0.0f);
    AttentionArgs a;
    a.q = q.data();
    a.ldq = 8;
    a.k = kv.data();
    a.v = kv.data();
    a.kv_type = KvType::f32;
    a.n_slots = 4;
    a.out = out.data();
    a.ldo = 8;
    a.t = 1;
    a.pos0 = 3;
    a.n_heads = 1;
    a.n_kv_heads = 1;
    a.head_dim = 8;
    std::vector<std::byte> scratch(attention_scratch_bytes(1, 1, 8, 1));
    for (Target target : runnable_targets()) {
        AttentionArgs bad = a;
        bad.n_heads = 3;
        bad.n_kv_heads = 2;
        CHECK_THROWS_AS(table_for(target).attention(bad, scratch.data(), 1), Error);
        bad = a;
        bad.pos0 = 4;  // position 0..4 needed, 4 slots
        try {
            table_for(target).attention(bad, scratch.data(), 1);
            FAIL("no error for a too small cache");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::capacity);
        }
        bad.window = 4;  // positions 1..4 fit in 4 slots
        CHECK_NOTHROW(table_for(target).attention(bad, scratch.data(), 1));
        bad = a;
        bad.t = 0;  // an empty block writes nothing
        out[0] = 5.0f;
        table_for(target).attention(bad, scratch.data(), 1);
        CHECK(out[0] == 5.0f);
    }
}

TEST_CASE("attention: every row of a prefill block equals the row decoded alone, bit for bit") {
    // A prefill block's lanes take the shared-range path for the tiles below
    // their item's first row and the staged path for the diagonal tiles; a
    // decoded row takes the shared path throughout. Blocks that end just
    // before, on and after tile edges (128 keys for d 64, 64 for d 80/128, 16
    // for d 256), odd lengths, GQA 1/3/4/8 and MQA, every cache type, 1 and 2
    // threads (enough items that no key range is split).
    struct Shape {
        int d, n_heads, n_kv;
    };
    const Shape shapes[] = {{64, 32, 8}, {64, 6, 2}, {80, 3, 3}, {128, 8, 1}, {256, 8, 1}, {8, 5, 1}};
    int n = 0, kept = 0;
    for (KvType type : {KvType::f16, KvType::f32, KvType::q8})
        for (Shape sh : shapes)
            for (int last : {127, 128, 129, 200, 383})
                for (int t : {5, 17, 40}) {
                    if (n++ % 2 != 0 && sh.d != 64) continue;  // keep the run short
                    // Under ASan a third: each run of three kept cases keeps one, a
                    // different t from run to run.
                    const int r = kept++;
                    if (test::kSanitized && (r + r / 3) % 3 != 0) continue;
                    const Cache k(type, 0, sh.n_kv, last + 1, sh.d, last), v(type, 1, sh.n_kv, last + 1, sh.d, last);
                    Case block{type, sh.d, sh.n_heads, sh.n_kv, t, last - t + 1, 0, 1.0f / std::sqrt(float(sh.d))};
                    Block qb = make_queries(block), ob(t, sh.n_heads, sh.d, 0.0f);
                    const AttentionArgs ab = make_args(block, qb, k, v, last + 1, ob);
                    const size_t row = size_t(sh.n_heads) * sh.d;
                    for (Target target : runnable_targets()) {
                        const int threads = target == best_target() ? 2 : 1;
                        if (attention_rows_exact(t, sh.n_heads, sh.n_kv, threads) == false) continue;
                        std::vector<std::byte> sb(attention_scratch_bytes(t, sh.n_heads, sh.d, threads));
                        table_for(target).attention(ab, sb.data(), threads);
                        int differ = 0;
                        for (int i = 0; i < t; ++i) {
                            Case one = block;
                            one.t = 1;
                            one.pos0 = block.pos0 + i;
                            Block q1(1, sh.n_heads, sh.d, 0.0f), o1(1, sh.n_heads, sh.d, 0.0f);
                            for (size_t e = 0; e < row; ++e) q1.data()[e] = qb.data()[size_t(i) * qb.ld + e];
                            const AttentionArgs a1 = make_args(one, q1, k, v, last + 1, o1);
                            std::vector<std::byte> s1(attention_scratch_bytes(1, sh.n_heads, sh.d, 1));
                            table_for(target).attention(a1, s1.data(), 1);
                            for (size_t e = 0; e < row; ++e)
                                differ += o1.data()[e] != ob.data()[size_t(i) * ob.ld + e];
                        }
                        CHECK_MESSAGE(differ == 0, target_name(target), " threads ", threads, " ",
                                      describe(block, last + 1), ": ", differ, " elements differ");
                    }
                }
}

TEST_CASE("attention prefill blocks deep in the cache match the reference") {
    // Blocks whose items run many shared-range tiles before their diagonal
    // tiles, and windows that start mid-tile (the staged path).
    for (KvType type : {KvType::f16, KvType::q8, KvType::f32})
        for (int d : {64, 128, 256}) {
            const float scale = 1.0f / std::sqrt(float(d));
            run_case({type, d, 2048 / d, 512 / d, 37, 600, 0, scale});  // 32/8, 16/4, 8/2 heads
            run_case({type, d, 8, 2, 19, 450, 200, scale});
        }
}
