// f32 / f16 / bf16 weights: panel packing round trips, and every runnable
// target's matmul against the scalar reference (kernels/ref_matmul_float.cpp)
// over odd shapes, strides, misaligned pointers and 1 or 2 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

// Weak: present only when the avx512 target is compiled in. Lets the test build
// the avx512 table as a CPU without AVX512-BF16 would see it.
namespace staticlm::kernels::avx512 {
__attribute__((weak)) void fill_table(KernelTable& table, const CpuFeatures& cpu);
}

namespace {

// Error budgets, relative to Σ|x·w| of the output (the scale of its rounding
// error): fp32 FMA accumulation over k ≤ 2048 terms in a few interleaved sums.
constexpr double kAccRelTol = 2e-5;
constexpr double kAbsTol = 1e-30;

constexpr WeightType kFloatTypes[] = {WeightType::f32, WeightType::f16, WeightType::bf16};

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
}

// A packed matrix with its own 64-byte-aligned storage.
struct Packed {
    Buffer buf;
    PackedMatrix w;
};

Packed pack_all(WeightType type, SrcType src_type, const void* src, int n, int k) {
    Packed p;
    const size_t bytes = packed_bytes(type, n, k);
    p.buf = Buffer(std::max<size_t>(bytes, 64));
    pack_weights(type, src_type, src, n, k, 0, n, p.buf.data());
    p.w = PackedMatrix{type, n, k, p.buf.data(), bytes};
    return p;
}

// The weights as the kernel sees them, row-major [n][k]: f32 floats, or the
// f16 / bf16 bits that packing from f32 produces.
struct RefWeights {
    std::vector<float> f32;
    std::vector<uint16_t> bits;
};

RefWeights ref_weights(WeightType type, const std::vector<float>& w) {
    RefWeights r;
    if (type == WeightType::f32) {
        r.f32 = w;
    } else {
        r.bits.resize(w.size());
        for (size_t i = 0; i < w.size(); ++i)
            r.bits[i] = type == WeightType::f16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
    }
    return r;
}

float ref_weight(WeightType type, const RefWeights& r, size_t i) {
    switch (type) {
        case WeightType::f32:
            return r.f32[i];
        case WeightType::f16:
            return f16_to_f32(r.bits[i]);
        default:
            return bf16_to_f32(r.bits[i]);
    }
}

void ref_matmul(WeightType type, const RefWeights& r, int n, int k, const float* x, size_t ldx,
                int m, float* y, size_t ldy) {
    switch (type) {
        case WeightType::f32:
            return ref::matmul_f32(r.f32.data(), n, k, x, ldx, m, y, ldy);
        case WeightType::f16:
            return ref::matmul_f16(r.bits.data(), n, k, x, ldx, m, y, ldy);
        default:
            return ref::matmul_bf16(r.bits.data(), n, k, x, ldx, m, y, ldy);
    }
}

// A table's matmul for a weight type, and whether it rounds x to bf16
// (the vdpbf16ps contract).
struct Case {
    std::string name;
    MatmulFn fn;
    bool x_as_bf16;
};

std::vector<Case> cases_for(WeightType type) {
    std::vector<Case> out;
    const CpuFeatures cpu = cpu_features();
    for (Target t : compiled_targets()) {
        if (!target_supported(t)) continue;
        const KernelTable& kt = table_for(t);
        MatmulFn fn = type == WeightType::f32   ? kt.matmul_f32
                      : type == WeightType::f16 ? kt.matmul_f16
                                                : kt.matmul_bf16;
        // avx512-amx runs the bf16 format on AMX-BF16 tiles (16-row blocks,
        // k % 32 == 0) and vdpbf16ps elsewhere: x rounded to bf16 as well.
        const bool dp = type == WeightType::bf16 &&
                        (t == Target::avx512 || t == Target::avx512_amx) && cpu.avx512_bf16;
        out.push_back({target_name(t), fn, dp});
        if (dp && t == Target::avx512 && avx512::fill_table) {  // the shift-convert body of BF16-less AVX-512 CPUs
            KernelTable plain;
            CpuFeatures no_bf16 = cpu;
            no_bf16.avx512_bf16 = false;
            avx512::fill_table(plain, no_bf16);
            out.push_back({"avx512-vnni (no bf16)", plain.matmul_bf16, false});
        }
    }
    return out;
}

// Runs one shape on one kernel and checks it against the reference: x and y
// are misaligned by one float and strided (ldx > k, ldy > n); y's padding
// columns must keep their sentinel.
void check_shape(const Case& c, WeightType type, int m, int n, int k, int n_threads,
                 uint32_t seed) {
    CAPTURE(c.name);
    CAPTURE(weight_type_name(type));
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(n_threads);
    const std::vector<float> w = random_floats(size_t(n) * k, seed);
    const size_t ldx = size_t(k) + 3;
    const size_t ldy = size_t(n) + 5;
    std::vector<float> xbuf = random_floats(size_t(m) * ldx + 1, seed + 1);
    const float* x = xbuf.data() + 1;

    const RefWeights rw = ref_weights(type, w);
    // The reference sees x as the kernel multiplies it.
    std::vector<float> xr(x, x + size_t(m) * ldx);
    if (c.x_as_bf16)
        for (float& v : xr) v = bf16_to_f32(f32_to_bf16(v));
    std::vector<float> want(size_t(m) * ldy);
    ref_matmul(type, rw, n, k, xr.data(), ldx, m, want.data(), ldy);

    Packed p = pack_all(type, SrcType::f32, w.data(), n, k);
    const float kSentinel = 12345.0f;
    std::vector<float> ybuf(size_t(m) * ldy + 1, kSentinel);
    float* y = ybuf.data() + 1;
    Buffer scratch(std::max<size_t>(matmul_scratch_bytes(type, m, k), 64));
    c.fn(p.w, x, ldx, m, y, ldy, scratch.data(), n_threads);

    int bad = 0;
    for (int i = 0; i < m && bad < 5; ++i) {
        for (int j = 0; j < n; ++j) {
            double mag = 0.0;
            for (int kk = 0; kk < k; ++kk)
                mag += std::fabs(double(xr[size_t(i) * ldx + kk]) *
                                 ref_weight(type, rw, size_t(j) * k + kk));
            const double got = y[size_t(i) * ldy + j];
            const double exp = want[size_t(i) * ldy + j];
            if (!(std::fabs(got - exp) <= kAccRelTol * mag + kAbsTol)) {
                ++bad;
                FAIL_CHECK("y[" << i << "][" << j << "] = " << got << ", want " << exp
                                << " (sum|xw| " << mag << ")");
            }
        }
        for (size_t j = size_t(n); j < ldy; ++j)
            if (y[size_t(i) * ldy + j] != kSentinel) {
                ++bad;
                FAIL_CHECK("y[" << i << "][" << j << "] past n was written");
            }
    }
    if (m > 0) CHECK(ybuf[0] == kSentinel);  // nothing before y
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("float packed sizes follow the panel layouts") {
    // 33 rows -> 3 panels of 16; rounded up to 64 bytes.
    CHECK(packed_bytes(WeightType::f32, 33, 17) == 3 * 17 * 16 * 4);
    CHECK(packed_bytes(WeightType::f16, 33, 17) == align64(3 * 17 * 16 * 2));
    CHECK(packed_bytes(WeightType::bf16, 33, 17) == 3 * 18 * 16 * 2);
    CHECK(packed_bytes(WeightType::f16, 0, 17) == 0);
    CHECK(padded_k(WeightType::bf16, 17) == 18);
    CHECK(matmul_scratch_bytes(WeightType::f16, 5, 17) == 0);
    // bf16 activation rows: whole blocks of 16 rows (the AMX tiles').
    CHECK(matmul_scratch_bytes(WeightType::bf16, 5, 17) == 16 * 64);
    CHECK(matmul_scratch_bytes(WeightType::bf16, 2, 33) == 16 * 128);
    CHECK(matmul_scratch_bytes(WeightType::bf16, 17, 33) == 32 * 128);
    CHECK(matmul_scratch_bytes(WeightType::bf16, 0, 33) == 0);
}

TEST_CASE("float panels hold the documented element positions") {
    // W[row][k] = row * 100 + k, exact in every format.
    const int n = 18, k = 3;
    std::vector<float> w(size_t(n) * k);
    for (int r = 0; r < n; ++r)
        for (int kk = 0; kk < k; ++kk) w[size_t(r) * k + kk] = float(r * 100 + kk);
    Packed f32 = pack_all(WeightType::f32, SrcType::f32, w.data(), n, k);
    const float* pf = reinterpret_cast<const float*>(f32.w.data);
    CHECK(pf[1 * 16 + 5] == 501.0f);            // panel 0, k=1, row 5
    CHECK(pf[3 * 16 + 2 * 16 + 1] == 1702.0f);  // panel 1, k=2, row 17
    CHECK(pf[3 * 16 + 0 * 16 + 2] == 0.0f);     // row 18: padding
    Packed f16 = pack_all(WeightType::f16, SrcType::f32, w.data(), n, k);
    const uint16_t* ph = reinterpret_cast<const uint16_t*>(f16.w.data);
    CHECK(ph[2 * 16 + 7] == f32_to_f16(702.0f));
    Packed bf = pack_all(WeightType::bf16, SrcType::f32, w.data(), n, k);
    const uint16_t* pb = reinterpret_cast<const uint16_t*>(bf.w.data);
    // [panel][k_pad2/2 = 2][16][2]
    CHECK(pb[0 * 32 + 4 * 2 + 1] == f32_to_bf16(401.0f));            // pair 0, row 4, k=1
    CHECK(pb[1 * 32 + 4 * 2 + 0] == f32_to_bf16(402.0f));            // pair 1, row 4, k=2
    CHECK(pb[1 * 32 + 4 * 2 + 1] == 0);                              // k=3: padding
    CHECK(pb[2 * 32 + 1 * 32 + 1 * 2 + 0] == f32_to_bf16(1702.0f));  // panel 1, pair 1, row 17
}

TEST_CASE("float pack -> unpack round trip from every source type") {
    const int n = 37, k = 19;
    const std::vector<float> w = random_floats(size_t(n) * k, 7, -3.0f, 3.0f);
    std::vector<uint16_t> w16(w.size()), wb16(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
        w16[i] = f32_to_f16(w[i]);
        wb16[i] = f32_to_bf16(w[i]);
    }
    for (WeightType type : kFloatTypes) {
        for (SrcType src : {SrcType::f32, SrcType::f16, SrcType::bf16}) {
            CAPTURE(weight_type_name(type));
            CAPTURE(int(src));
            const void* s = src == SrcType::f32   ? static_cast<const void*>(w.data())
                            : src == SrcType::f16 ? static_cast<const void*>(w16.data())
                                                  : static_cast<const void*>(wb16.data());
            Packed p = pack_all(type, src, s, n, k);
            // Packing panel-aligned halves separately gives the same bytes.
            Buffer halves(p.w.bytes);
            pack_weights(type, src, s, n, k, 16, n, halves.data());
            pack_weights(type, src, s, n, k, 0, 16, halves.data());
            CHECK(std::memcmp(halves.data(), p.w.data, p.w.bytes) == 0);

            std::vector<float> row(k);
            int bad = 0;
            for (int r = 0; r < n; ++r) {
                unpack_row(p.w, r, 2.0f, row.data());
                for (int kk = 0; kk < k; ++kk) {
                    const size_t i = size_t(r) * k + kk;
                    const float v = src == SrcType::f32   ? w[i]
                                    : src == SrcType::f16 ? f16_to_f32(w16[i])
                                                          : bf16_to_f32(wb16[i]);
                    const float want = type == WeightType::f32   ? v
                                       : type == WeightType::f16 ? f16_to_f32(f32_to_f16(v))
                                                                 : bf16_to_f32(f32_to_bf16(v));
                    if (row[kk] != 2.0f * want) ++bad;
                }
            }
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("float packing rejects bad row ranges and rows") {
    const std::vector<float> w(40 * 4, 1.0f);
    Buffer buf(packed_bytes(WeightType::f16, 40, 4));
    CHECK_THROWS_AS(pack_weights(WeightType::f16, SrcType::f32, w.data(), 40, 4, 8, 40, buf.data()),
                    Error);
    CHECK_THROWS_AS(pack_weights(WeightType::f16, SrcType::f32, w.data(), 40, 4, 0, 41, buf.data()),
                    Error);
    CHECK_NOTHROW(pack_weights(WeightType::f16, SrcType::f32, w.data(), 40, 4, 32, 40, buf.data()));
    PackedMatrix pm{WeightType::f16, 40, 4, buf.data(), buf.size()};
    std::vector<float> row(4);
    CHECK_THROWS_AS(unpack_row(pm, 40, 1.0f, row.data()), Error);
    CHECK_THROWS_AS(unpack_row(pm, -1, 1.0f, row.data()), Error);
}

TEST_CASE("float matmul: hand-computed 2x2 case on every target") {
    // W = [[1, 2, 3], [4, 5, 6]], x = [[1, 1, 1], [1, 0, -1]]
    // y = x·Wᵀ = [[6, 15], [-2, -2]] exactly (all values exact in bf16 and f16).
    const float w[] = {1, 2, 3, 4, 5, 6};
    const float x[] = {1, 1, 1, 1, 0, -1};
    for (WeightType type : kFloatTypes) {
        Packed p = pack_all(type, SrcType::f32, w, 2, 3);
        Buffer scratch(std::max<size_t>(matmul_scratch_bytes(type, 2, 3), 64));
        for (const Case& c : cases_for(type)) {
            CAPTURE(c.name);
            CAPTURE(weight_type_name(type));
            float y[4] = {0, 0, 0, 0};
            c.fn(p.w, x, 3, 2, y, 2, scratch.data(), 1);
            CHECK(y[0] == 6.0f);
            CHECK(y[1] == 15.0f);
            CHECK(y[2] == -2.0f);
            CHECK(y[3] == -2.0f);
        }
    }
}

TEST_CASE("float matmul matches the reference on every target, odd shapes") {
    const int ms[] = {0, 1, 2, 3, 5, 16, 17, 64};
    const int ns[] = {1, 15, 16, 17, 33};
    // 32 and 96: whole AMX k steps (avx512-amx's bf16 tiles), one and three.
    const int ks[] = {1, 2, 3, 15, 16, 17, 32, 63, 96, 100};
    uint32_t seed = 1;
    for (WeightType type : kFloatTypes)
        for (const Case& c : cases_for(type))
            for (int m : ms)
                for (int n : ns)
                    for (int k : ks)
                        for (int threads : {1, 2}) check_shape(c, type, m, n, k, threads, seed++);
}

TEST_CASE("float matmul matches the reference across cache tiles and threads") {
    // Shapes that span several m-tiles (≥ 8 micro-blocks of rows) and several
    // n-tiles (k = 2048 f32 panels exceed one tile's weight budget).
    struct Shape {
        int m, n, k;
    };
    const Shape shapes[] = {
        {1, 80, 2048}, {3, 300, 129}, {100, 80, 2048}, {230, 50, 40}, {13, 40, 301},
        {150, 47, 64}};  // AMX: 16-row blocks across m-tiles, a last block of 6 rows
    uint32_t seed = 1000;
    for (WeightType type : kFloatTypes)
        for (const Case& c : cases_for(type))
            for (const Shape& s : shapes)
                for (int threads : {1, 2, 3}) check_shape(c, type, s.m, s.n, s.k, threads, seed++);
}

namespace {

// Raw bits of a source element, its value as the scalar conversions decode it,
// and the panel element the scalar conversions make of it (a same-type
// source is copied bit for bit).
uint32_t src_bits(SrcType st, const void* src, size_t i) {
    if (st == SrcType::f32) {
        uint32_t b;
        std::memcpy(&b, static_cast<const float*>(src) + i, 4);
        return b;
    }
    return static_cast<const uint16_t*>(src)[i];
}

uint32_t expected_element(WeightType type, SrcType st, uint32_t bits) {
    if ((type == WeightType::f16 && st == SrcType::f16) ||
        (type == WeightType::bf16 && st == SrcType::bf16))
        return bits;
    float v;
    if (st == SrcType::f32)
        std::memcpy(&v, &bits, 4);
    else
        v = st == SrcType::f16 ? f16_to_f32(uint16_t(bits)) : bf16_to_f32(uint16_t(bits));
    if (type == WeightType::f16) return f32_to_f16(v);
    if (type == WeightType::bf16) return f32_to_bf16(v);
    uint32_t out;
    std::memcpy(&out, &v, 4);
    return out;
}

// One panel in the documented layout, element by element with the scalar conversions.
std::vector<uint8_t> ref_float_panel(WeightType type, SrcType st, const void* src, size_t ld,
                                     int rows, int k) {
    const int kp = padded_k(type, k);
    // One panel without the 64-byte rounding packed_bytes adds at the end of a matrix.
    std::vector<uint8_t> out(size_t(kp) * 16 * (type == WeightType::f32 ? 4 : 2), 0);
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < kp; ++c) {
            const uint32_t e =
                r < rows && c < k
                    ? expected_element(type, st, src_bits(st, src, size_t(r) * ld + size_t(c)))
                    : 0;
            if (type == WeightType::f32) {
                std::memcpy(out.data() + (size_t(c) * 16 + size_t(r)) * 4, &e, 4);
            } else {
                const uint16_t h = uint16_t(e);
                const size_t idx = type == WeightType::f16
                                       ? size_t(c) * 16 + size_t(r)
                                       : size_t(c / 2) * 32 + size_t(r) * 2 + size_t(c & 1);
                std::memcpy(out.data() + idx * 2, &h, 2);
            }
        }
    return out;
}

}  // namespace

TEST_CASE("float pack_panel equals the scalar conversions on every target") {
    std::mt19937 rng(31);
    std::uniform_int_distribution<uint32_t> bits32;
    std::uniform_int_distribution<int> bits16(0, 0xffff), kind(0, 3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (Target t : compiled_targets()) {
        if (!target_supported(t)) continue;
        const KernelTable& kt = table_for(t);
        REQUIRE(bool(kt.pack_panel));
        for (int k : {1, 2, 7, 16, 17, 255, 256, 257, 513}) {
            for (int rows : {0, 1, 9, 16}) {
                const size_t ld = size_t(k) + size_t(rows % 2);
                const size_t count = size_t(std::max(rows, 1)) * ld;
                // f32 sources: normal values, f16/bf16 rounding ties and overflow, subnormals,
                // inf and NaN; 16-bit sources: every bit pattern (NaNs, subnormals, infs).
                std::vector<float> f(count);
                for (float& x : f) {
                    switch (kind(rng)) {
                        case 0:
                            x = normal(rng);
                            break;
                        case 1:
                            x = normal(rng) * 70000.0f;
                            break;
                        case 2:
                            x = normal(rng) * 1e-6f;
                            break;  // f16 subnormal range
                        default: {
                            const uint32_t b = bits32(rng);
                            std::memcpy(&x, &b, 4);
                        }
                    }
                }
                std::vector<uint16_t> h(count + 1);
                for (uint16_t& x : h) x = uint16_t(bits16(rng));
                struct Case {
                    SrcType st;
                    const void* data;
                };
                // The 16-bit source starts at an odd element: misaligned rows.
                for (const Case& c :
                     {Case{SrcType::f32, f.data()}, Case{SrcType::f16, h.data() + 1},
                      Case{SrcType::bf16, h.data() + 1}}) {
                    for (WeightType type : kFloatTypes) {
                        const std::string target = target_name(t);
                        CAPTURE(target);
                        CAPTURE(k);
                        CAPTURE(rows);
                        CAPTURE(int(c.st));
                        const std::string type_name = weight_type_name(type);
                        CAPTURE(type_name);
                        const std::vector<uint8_t> expect =
                            ref_float_panel(type, c.st, c.data, ld, rows, k);
                        std::vector<std::byte> dst(expect.size() + 2, std::byte{0x5a});
                        kt.pack_panel(type, c.st, c.data, ld, rows, k, dst.data() + 2);
                        CHECK(std::memcmp(dst.data() + 2, expect.data(), expect.size()) == 0);
                    }
                }
            }
        }
    }
}
