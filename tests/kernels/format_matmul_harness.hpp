// The matmul check every weight-format test makes (test_q2k.cpp, test_q3k.cpp,
// test_iq4nl.cpp, test_iq4xs.cpp, test_matmul_low_bit.cpp): kt's matmul of a
// packed matrix on strided, misaligned x and y against the format's scalar
// reference, bitwise where the fp32 sums are exact, else within 1e-5 of Σ|x·w|,
// and nothing written outside y. Plain functions compiled once (in
// format_matmul_harness.cpp): a format gives its reference's output and |w|
// terms (run_matmul, check_outputs), or, with the reference shapes of the
// k-quants, a SignedRef or AffineRef of function pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels::harness {

// count values drawn from N(0, 1).
std::vector<float> random_values(size_t count, std::mt19937& rng);

// Activation rows [rows][k] whose int8 quantization is exact: one element per
// group of kQ8Group is ±127·2^e (the scale 2^e, e in [min_expo, 0]), the
// others small integers · 2^e.
std::vector<float> exact_acts(int rows, int k, int min_expo, std::mt19937& rng);

// src [n][k] packed into buf (at least 64 bytes) by kt's pack_panel, panel by panel.
PackedMatrix pack_from_floats(const KernelTable& kt, WeightType type, const std::vector<float>& src, int n, int k,
                              Buffer& buf);

// One call of kt's matmul: x [m][k] at row stride k + x_pad (exact_acts where
// `exact`, else random_values), one float past an aligned start; y [m][n] at
// stride n + y_pad, the same, its spare floats a guard value. run_matmul and
// check_outputs name the format, m, n, k, threads and act_bits in failures.
struct MatmulRun {
    WeightType type = WeightType::f32;
    int m = 0, n = 0, k = 0, threads = 0, act_bits = 0;
    size_t ldx = 0, ldy = 0;
    std::vector<float> xbuf, ybuf;
    const float* x() const { return xbuf.data() + 1; }
    const float* y() const { return ybuf.data() + 1; }
};
MatmulRun run_matmul(const KernelTable& kt, const PackedMatrix& w, int m, int threads, bool exact, std::mt19937& rng,
                     int min_expo = -2, size_t x_pad = 3, size_t y_pad = 2);

// CHECKs run's y against yref [m][n] (the reference on run.x(), run.ldx):
// equal where `exact`, else within 1e-5 · Σ_i |x_i|·wabs[c·ldw + i] (wabs: the
// |w| terms of column c; unused when exact); the spare columns of every row but
// the last and the float before y still the guard.
void check_outputs(const MatmulRun& run, const std::vector<float>& yref, bool exact,
                   const std::vector<double>& wabs = {}, size_t ldw = 0);

// |w| terms of weights held as floats [n][k]: wabs = |w|, ldw = k.
std::vector<double> abs_values(const std::vector<float>& w);

// A format whose scalar reference takes signed values q [n][k_pad] and a
// scale ws per `sub` weights [n][k_pad / sub] (q3k, q6k: w = ws · q).
struct SignedRef {
    WeightType type;
    int sub;
    void (*quantize_row)(const float* x, int k, int8_t* q, float* ws);
    void (*matmul)(const int8_t* wq, const float* ws, int n, int k, const float* x, size_t ldx, int m, float* y,
                   size_t ldy, int act_bits);
    size_t x_pad = 3, y_pad = 2;  // the checks' x and y row strides: k + x_pad, n + y_pad
};

// An affine format's: unsigned values wn [n][k_pad], a scale ws and a min wm
// per `sub` weights (q2k: w = ws · n - wm per 16; q4k, q5k, q4a, q5a per 32).
struct AffineRef {
    WeightType type;
    int sub;
    void (*quantize_row)(const float* x, int k, uint8_t* wn, float* ws, float* wm);
    void (*matmul)(const uint8_t* wn, const float* ws, const float* wm, int n, int k, const float* x, size_t ldx,
                   int m, float* y, size_t ldy, int act_bits);
    size_t x_pad = 3, y_pad = 2;
};

// One matmul of w (act_bits set here) against f's reference of the fields,
// through run_matmul and check_outputs (|w| terms |ws · q|, or |ws · n| + |wm|).
void check_signed(const KernelTable& kt, const SignedRef& f, PackedMatrix w, const std::vector<int8_t>& wq,
                  const std::vector<float>& ws, int m, int threads, bool exact, std::mt19937& rng, int act_bits = 8);
void check_affine(const KernelTable& kt, const AffineRef& f, PackedMatrix w, const std::vector<uint8_t>& wn,
                  const std::vector<float>& ws, const std::vector<float>& wm, int m, int threads, bool exact,
                  std::mt19937& rng, int act_bits = 8);

// Random floats [n][k] packed by kt against f's reference of f.quantize_row's
// fields: m = 1, 5, 64 with 8-bit activations and m = 1, 17 with 16-bit, two
// threads.
void check_signed_from_floats(const KernelTable& kt, const SignedRef& f, int n, int k, std::mt19937& rng);
void check_affine_from_floats(const KernelTable& kt, const AffineRef& f, int n, int k, std::mt19937& rng);

}  // namespace staticlm::kernels::harness
