// The shared matmul check of the weight-format tests (format_matmul_harness.hpp).
#include "format_matmul_harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/formats/format.hpp"

namespace staticlm::kernels::harness {

namespace {
constexpr float kGuard = -777.0f;
}

std::vector<float> random_values(size_t count, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = d(rng);
    return v;
}

std::vector<float> exact_acts(int rows, int k, int min_expo, std::mt19937& rng) {
    constexpr int G = kQ8Group;
    std::vector<float> v(size_t(rows) * size_t(k));
    std::uniform_int_distribution<int> small(-8, 8), expo(min_expo, 0), pos(0, G - 1), sign(0, 1);
    for (int r = 0; r < rows; ++r)
        for (int g0 = 0; g0 < k; g0 += G) {
            const float scale = std::ldexp(1.0f, expo(rng));
            const int len = std::min(G, k - g0);
            const int big = pos(rng) % len;
            for (int i = 0; i < len; ++i)
                v[size_t(r) * size_t(k) + size_t(g0 + i)] =
                    float(i == big ? (sign(rng) ? 127 : -127) : small(rng)) * scale;
        }
    return v;
}

PackedMatrix pack_from_floats(const KernelTable& kt, WeightType type, const std::vector<float>& src, int n, int k,
                              Buffer& buf) {
    const size_t bytes = packed_bytes(type, n, k);
    buf = Buffer(std::max<size_t>(bytes, 64));
    const size_t panel = format_info(type).panel_bytes(k);
    for (int p0 = 0; p0 < n; p0 += kPanelRows)
        kt.pack_panel(type, SrcType::f32, src.data() + size_t(p0) * size_t(k), size_t(k), std::min(kPanelRows, n - p0),
                      k, buf.data() + size_t(p0 / kPanelRows) * panel);
    return {type, n, k, buf.data(), bytes};
}

MatmulRun run_matmul(const KernelTable& kt, const PackedMatrix& w, int m, int threads, bool exact, std::mt19937& rng,
                     int min_expo, size_t x_pad, size_t y_pad) {
    INFO(weight_type_name(w.type), " m = ", m, ", n = ", w.n, ", k = ", w.k, ", threads = ", threads,
         ", act_bits = ", w.act_bits);
    MatmulRun run;
    run.type = w.type;
    run.m = m;
    run.n = w.n;
    run.k = w.k;
    run.threads = threads;
    run.act_bits = w.act_bits;
    run.ldx = size_t(w.k) + x_pad;
    run.ldy = size_t(w.n) + y_pad;
    run.xbuf.assign(size_t(m) * run.ldx + 1, 0.0f);
    const std::vector<float> xv =
        exact ? exact_acts(m, w.k, min_expo, rng) : random_values(size_t(m) * size_t(w.k), rng);
    for (int r = 0; r < m; ++r)
        std::memcpy(run.xbuf.data() + 1 + size_t(r) * run.ldx, xv.data() + size_t(r) * size_t(w.k),
                    sizeof(float) * size_t(w.k));
    run.ybuf.assign(size_t(m) * run.ldy + 1, kGuard);
    Buffer scratch(std::max<size_t>(matmul_scratch_bytes(w.type, m, w.k), 64));
    matmul(kt, w, run.x(), run.ldx, m, run.ybuf.data() + 1, run.ldy, scratch.data(), threads);
    return run;
}

void check_outputs(const MatmulRun& run, const std::vector<float>& yref, bool exact, const std::vector<double>& wabs,
                   size_t ldw) {
    const int m = run.m, n = run.n, k = run.k;
    INFO(weight_type_name(run.type), " m = ", m, ", n = ", n, ", k = ", k, ", threads = ", run.threads,
         ", act_bits = ", run.act_bits);
    const float *x = run.x(), *y = run.y();
    REQUIRE(yref.size() >= size_t(m) * size_t(n));
    if (!exact) REQUIRE(wabs.size() >= (n ? size_t(n - 1) * ldw + size_t(k) : 0));
    int bad = 0;
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c) {
            const float got = y[size_t(r) * run.ldy + size_t(c)], want = yref[size_t(r) * size_t(n) + size_t(c)];
            bool ok = got == want;
            if (!exact) {
                double mag = 0;
                for (int i = 0; i < k; ++i)
                    mag += std::fabs(double(x[size_t(r) * run.ldx + size_t(i)])) * wabs[size_t(c) * ldw + size_t(i)];
                ok = std::fabs(double(got) - double(want)) <= 1e-5 * mag + 1e-30;
            }
            if (!ok && bad++ < 5) FAIL_CHECK("row ", r, " col ", c, ": ", got, " != ", want);
        }
    for (int r = 0; r + 1 < m; ++r)
        for (size_t c = size_t(n); c < run.ldy; ++c)
            if (y[size_t(r) * run.ldy + c] != kGuard && bad++ < 5) FAIL_CHECK("wrote past n");
    CHECK(run.ybuf[0] == kGuard);
    CHECK(bad == 0);
}

std::vector<double> abs_values(const std::vector<float>& w) {
    std::vector<double> a(w.size());
    for (size_t i = 0; i < w.size(); ++i) a[i] = std::fabs(double(w[i]));
    return a;
}

void check_signed(const KernelTable& kt, const SignedRef& f, PackedMatrix w, const std::vector<int8_t>& wq,
                  const std::vector<float>& ws, int m, int threads, bool exact, std::mt19937& rng, int act_bits) {
    w.act_bits = act_bits;
    const int n = w.n, k = w.k, kp = padded_k(f.type, k);
    const MatmulRun run = run_matmul(kt, w, m, threads, exact, rng, -2, f.x_pad, f.y_pad);
    std::vector<float> yref(size_t(m) * size_t(n) + 1);
    f.matmul(wq.data(), ws.data(), n, k, run.x(), run.ldx, m, yref.data(), size_t(n), act_bits);
    std::vector<double> wabs;
    if (!exact)
        for (size_t i = 0; i < wq.size(); ++i) wabs.push_back(std::fabs(double(ws[i / size_t(f.sub)]) * wq[i]));
    check_outputs(run, yref, exact, wabs, size_t(kp));
}

void check_affine(const KernelTable& kt, const AffineRef& f, PackedMatrix w, const std::vector<uint8_t>& wn,
                  const std::vector<float>& ws, const std::vector<float>& wm, int m, int threads, bool exact,
                  std::mt19937& rng, int act_bits) {
    w.act_bits = act_bits;
    const int n = w.n, k = w.k, kp = padded_k(f.type, k);
    const MatmulRun run = run_matmul(kt, w, m, threads, exact, rng, -2, f.x_pad, f.y_pad);
    std::vector<float> yref(size_t(m) * size_t(n) + 1);
    f.matmul(wn.data(), ws.data(), wm.data(), n, k, run.x(), run.ldx, m, yref.data(), size_t(n), act_bits);
    std::vector<double> wabs;
    if (!exact)
        for (size_t i = 0; i < wn.size(); ++i) {
            const size_t h = i / size_t(f.sub);
            wabs.push_back(std::fabs(double(ws[h]) * wn[i]) + std::fabs(double(wm[h])));
        }
    check_outputs(run, yref, exact, wabs, size_t(kp));
}

namespace {

// The float-source check of a SignedRef (sf) or an AffineRef (af) format.
void check_from_floats(const KernelTable& kt, const SignedRef* sf, const AffineRef* af, int n, int k,
                       std::mt19937& rng) {
    constexpr struct {
        int m, act_bits;
    } kRuns[] = {{1, 8}, {5, 8}, {64, 8}, {1, 16}, {17, 16}};
    const WeightType type = sf ? sf->type : af->type;
    const int sub = sf ? sf->sub : af->sub;
    const std::vector<float> src = random_values(size_t(n) * size_t(k), rng);
    Buffer buf;
    const PackedMatrix w = pack_from_floats(kt, type, src, n, k, buf);
    const int kp = padded_k(type, k);
    std::vector<int8_t> wq(sf ? size_t(n) * size_t(kp) : 0);
    std::vector<uint8_t> wn(af ? size_t(n) * size_t(kp) : 0);
    std::vector<float> ws(size_t(n) * size_t(kp / sub)), wm(af ? ws.size() : 0);
    for (int r = 0; r < n; ++r) {
        const float* x = src.data() + size_t(r) * size_t(k);
        const size_t at = size_t(r) * size_t(kp), h = size_t(r) * size_t(kp / sub);
        if (sf)
            sf->quantize_row(x, k, wq.data() + at, ws.data() + h);
        else
            af->quantize_row(x, k, wn.data() + at, ws.data() + h, wm.data() + h);
    }
    for (const auto& run : kRuns) {
        if (sf)
            check_signed(kt, *sf, w, wq, ws, run.m, 2, false, rng, run.act_bits);
        else
            check_affine(kt, *af, w, wn, ws, wm, run.m, 2, false, rng, run.act_bits);
    }
}

}  // namespace

void check_signed_from_floats(const KernelTable& kt, const SignedRef& f, int n, int k, std::mt19937& rng) {
    check_from_floats(kt, &f, nullptr, n, k, rng);
}

void check_affine_from_floats(const KernelTable& kt, const AffineRef& f, int n, int k, std::mt19937& rng) {
    check_from_floats(kt, nullptr, &f, n, k, rng);
}

}  // namespace staticlm::kernels::harness
