// Shared implementations of the FormatInfo hooks (kernels/formats/format.hpp)
// that several formats fill the same way: GGUF ingestion of the block
// families (symmetric 32-element blocks, Q4_1/Q5_1, Q4_K/Q5_K, Q6_K) and the
// scalar reference rows over the ref:: quantizers. Internal to the formats'
// entries.
#pragma once

#include <cstring>
#include <vector>

#include "kernels/formats/format.hpp"
#include "kernels/ref.hpp"

namespace staticlm::kernels::detail {

// Arrays laid end to end in one scratch buffer; with a null base it only
// counts the bytes.
class Carve {
public:
    explicit Carve(std::byte* base) : base_(base) {}
    template <class T>
    T* next(size_t count) {
        const size_t at = (used_ + alignof(T) - 1) / alignof(T) * alignof(T);
        used_ = at + count * sizeof(T);
        return base_ ? reinterpret_cast<T*>(base_ + at) : nullptr;
    }
    size_t used() const { return used_; }

private:
    std::byte* base_;
    size_t used_ = 0;
};

// The element index of the first of `count` blocks of `per` elements whose
// half a[i] (or b[i]) is inf or NaN, or -1.
inline int64_t first_bad_half(const uint16_t* a, const uint16_t* b, size_t count, int per) {
    for (size_t i = 0; i < count; ++i)
        if ((a[i] & 0x7c00) == 0x7c00 || (b && (b[i] & 0x7c00) == 0x7c00)) return int64_t(i) * per;
    return -1;
}

// GGUF Q8_0 / Q5_0 / Q4_0 as int8 quants [cap][k] and half scales [cap][k/32]
// (ggml_to_q8_quants), packed by Pack (pack_q8_quants, pack_q4_quants, ...).
template <void (*Pack)(const int8_t*, const uint16_t*, int, int, int, int, std::byte*)>
struct GivenQuantsIngest {
    struct Fields {
        int8_t* q;
        uint16_t* scales;
    };
    static Fields fields(Carve& c, int cap, int k) {
        Fields f;
        f.q = c.next<int8_t>(size_t(cap) * size_t(k));
        f.scales = c.next<uint16_t>(size_t(cap) * size_t(k / kQ8Group));
        return f;
    }
    static size_t scratch_bytes(int cap, int k) {
        Carve c(nullptr);
        fields(c, cap, k);
        return c.used();
    }
    static int64_t read(GgmlType t, const std::byte* src, int k, int row, int count, int cap, std::byte* s) {
        Carve c(s);
        const Fields f = fields(c, cap, k);
        const size_t groups = size_t(k / kQ8Group);
        uint16_t* sc = f.scales + size_t(row) * groups;
        ggml_to_q8_quants(t, src, f.q + size_t(row) * size_t(k), sc, int64_t(count) * k);
        return first_bad_half(sc, nullptr, size_t(count) * groups, kQ8Group);
    }
    static void pack(std::byte* s, int cap, int n, int k, int n0, int n1, std::byte* dst) {
        Carve c(s);
        const Fields f = fields(c, cap, k);
        Pack(f.q, f.scales, n, k, n0, n1, dst);
    }
    static constexpr GgufIngest hook(std::span<const GgmlType> native, std::span<const GgmlType> takes) {
        return {native, takes, scratch_bytes, read, pack};
    }
};

// GGUF Q4_1 / Q5_1 (type T) as values [cap][k] and halves d, m [cap][k/32].
template <GgmlType T, void (*Pack)(const uint8_t*, const uint16_t*, const uint16_t*, int, int, int, int, std::byte*)>
struct AffineGIngest {
    struct Fields {
        uint8_t* q;
        uint16_t *d, *m;
    };
    static Fields fields(Carve& c, int cap, int k) {
        Fields f;
        f.q = c.next<uint8_t>(size_t(cap) * size_t(k));
        f.d = c.next<uint16_t>(size_t(cap) * size_t(k / kQ8Group));
        f.m = c.next<uint16_t>(size_t(cap) * size_t(k / kQ8Group));
        return f;
    }
    static size_t scratch_bytes(int cap, int k) {
        Carve c(nullptr);
        fields(c, cap, k);
        return c.used();
    }
    static int64_t read(GgmlType t, const std::byte* src, int k, int row, int count, int cap, std::byte* s) {
        Carve c(s);
        const Fields f = fields(c, cap, k);
        const size_t groups = size_t(k / kQ8Group), at = size_t(row) * groups;
        ggml_q41_fields(t, src, int64_t(count) * k, f.q + size_t(row) * size_t(k), f.d + at, f.m + at);
        return first_bad_half(f.d + at, f.m + at, size_t(count) * groups, kQ8Group);
    }
    static void pack(std::byte* s, int cap, int n, int k, int n0, int n1, std::byte* dst) {
        Carve c(s);
        const Fields f = fields(c, cap, k);
        Pack(f.q, f.d, f.m, n, k, n0, n1, dst);
    }
    static constexpr GgmlType kTypes[] = {T};
    static constexpr GgufIngest hook() { return {kTypes, kTypes, scratch_bytes, read, pack}; }
};

// GGUF Q4_K / Q5_K (type T, fields by Read) as values [cap][k], 6-bit sc and m
// [cap][k/32], halves d and dmin [cap][k/256].
template <GgmlType T,
          void (*Read)(const void*, int64_t, uint8_t*, uint8_t*, uint8_t*, uint16_t*, uint16_t*),
          void (*Pack)(const uint8_t*, const uint8_t*, const uint8_t*, const uint16_t*, const uint16_t*, int, int,
                       int, int, std::byte*)>
struct AffineKIngest {
    static constexpr int kSuper = 256;
    struct Fields {
        uint8_t *q, *sc, *m;
        uint16_t *d, *dmin;
    };
    static Fields fields(Carve& c, int cap, int k) {
        Fields f;
        f.q = c.next<uint8_t>(size_t(cap) * size_t(k));
        f.sc = c.next<uint8_t>(size_t(cap) * size_t(k / kQ8Group));
        f.m = c.next<uint8_t>(size_t(cap) * size_t(k / kQ8Group));
        f.d = c.next<uint16_t>(size_t(cap) * size_t(k / kSuper));
        f.dmin = c.next<uint16_t>(size_t(cap) * size_t(k / kSuper));
        return f;
    }
    static size_t scratch_bytes(int cap, int k) {
        Carve c(nullptr);
        fields(c, cap, k);
        return c.used();
    }
    static int64_t read(GgmlType, const std::byte* src, int k, int row, int count, int cap, std::byte* s) {
        Carve c(s);
        const Fields f = fields(c, cap, k);
        const size_t g = size_t(row) * size_t(k / kQ8Group), at = size_t(row) * size_t(k / kSuper);
        Read(src, int64_t(count) * k, f.q + size_t(row) * size_t(k), f.sc + g, f.m + g, f.d + at, f.dmin + at);
        return first_bad_half(f.d + at, f.dmin + at, size_t(count) * size_t(k / kSuper), kSuper);
    }
    static void pack(std::byte* s, int cap, int n, int k, int n0, int n1, std::byte* dst) {
        Carve c(s);
        const Fields f = fields(c, cap, k);
        Pack(f.q, f.sc, f.m, f.d, f.dmin, n, k, n0, n1, dst);
    }
    static constexpr GgmlType kTypes[] = {T};
    static constexpr GgufIngest hook() { return {kTypes, kTypes, scratch_bytes, read, pack}; }
};

// GGUF blocks of type T (ggml block struct Block of Per elements) copied into
// the scratch as they lie in the file, [cap] rows of k / Per blocks, for the
// formats whose pack reads ggml blocks itself (q2k, q3k, iq4nl, iq4xs). A
// block's NHalves half scales at byte DOff are checked: the first inf or NaN
// one is reported by its element index.
template <GgmlType T, class Block, int Per, size_t DOff, int NHalves,
          void (*Pack)(const void*, int, int, int, int, std::byte*)>
struct BlockCopyIngest {
    static size_t row_bytes(int k) { return size_t(k / Per) * sizeof(Block); }
    static size_t scratch_bytes(int cap, int k) { return size_t(cap) * row_bytes(k); }
    static int64_t read(GgmlType, const std::byte* src, int k, int row, int count, int, std::byte* s) {
        std::byte* dst = s + size_t(row) * row_bytes(k);
        std::memcpy(dst, src, size_t(count) * row_bytes(k));
        const size_t blocks = size_t(count) * size_t(k / Per);
        for (size_t b = 0; b < blocks; ++b) {
            uint16_t h[NHalves];
            std::memcpy(h, dst + b * sizeof(Block) + DOff, sizeof h);
            if (first_bad_half(h, nullptr, NHalves, 0) >= 0) return int64_t(b) * Per;
        }
        return -1;
    }
    static void pack(std::byte* s, int, int n, int k, int n0, int n1, std::byte* dst) { Pack(s, n, k, n0, n1, dst); }
    static constexpr GgmlType kTypes[] = {T};
    static constexpr GgufIngest hook() { return {kTypes, kTypes, scratch_bytes, read, pack}; }
};

// ---- reference rows (FormatInfo::ref_row) over the ref:: quantizers

// Symmetric formats: ref quantizer Q gives q [k_pad] and scales [k_pad / 32].
template <void (*Q)(const float*, int, int8_t*, float*)>
void ref_row_symmetric(const float* x, int k, float* out) {
    const int k_pad = (k + kQ8Group - 1) / kQ8Group * kQ8Group;
    std::vector<int8_t> q(static_cast<size_t>(k_pad));
    std::vector<float> s(size_t(k_pad / kQ8Group));
    Q(x, k, q.data(), s.data());
    for (int i = 0; i < k; ++i) out[i] = float(q[size_t(i)]) * s[size_t(i / kQ8Group)];
}

// Affine formats: ref quantizer Q gives n [k_pad], ws and wm [k_pad / 32] with
// w = ws·n - wm (k_pad: k rounded up to Pad).
template <void (*Q)(const float*, int, uint8_t*, float*, float*), int Pad>
void ref_row_affine(const float* x, int k, float* out) {
    const int k_pad = (k + Pad - 1) / Pad * Pad;
    std::vector<uint8_t> n(static_cast<size_t>(k_pad));
    std::vector<float> ws(size_t(k_pad / kQ8Group)), wm(ws.size());
    Q(x, k, n.data(), ws.data(), wm.data());
    for (int i = 0; i < k; ++i) {
        const size_t g = size_t(i / kQ8Group);
        out[i] = ws[g] * float(n[size_t(i)]) - wm[g];
    }
}

}  // namespace staticlm::kernels::detail
