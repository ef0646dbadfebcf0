// Matmul benchmarks: q8/f16/bf16/f32 weights at the real Llama-3.2-1B and
// Gemma-4-E2B projection shapes, M = 1 (decode, GB/s of weights vs read
// bandwidth) and M = 16..512 (prefill, GOPS vs the arithmetic peak); and the
// fused products of the graph (q/k/v, gate/up) against separate calls.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace staticlm::bench {
namespace {

using kernels::PackedMatrix;

struct Shape {
    int k, n;
    bool vocab;  // the lm_head: prefill computes it for one row only, so few M
};

// Llama-3.2-1B: hidden 2048, q/o 2048, k/v 512 (8 kv heads × 64), FFN 8192, vocab 128256.
// Gemma-4-E2B: hidden 1536, q 2048 (8 × 256), kv 256, FFN 6144 (12288 on the
// double-wide layers), vocab 262144.
constexpr Shape kShapes[] = {
    {2048, 2048, false}, {2048, 512, false},  {2048, 8192, false},  {8192, 2048, false},
    {2048, 128256, true}, {1536, 2048, false}, {1536, 256, false},  {1536, 6144, false},
    {1536, 12288, false}, {6144, 1536, false}, {1536, 262144, true},
};
constexpr int kMs[] = {1, 16, 64, 512};

// The packed weights of the shape being benchmarked, plus copies for rotation.
// One set is kept at a time: benchmarks of one (type, n, k) are registered
// consecutively, so each shape is packed once.
struct PackedSet {
    WeightType type = WeightType::f32;
    int n = 0, k = 0;
    size_t bytes = 0;   // one copy
    size_t stride = 0;  // between copies
    int copies = 0;
    Buffer buf;

    PackedMatrix matrix(int copy) const {
        return PackedMatrix{type, n, k, buf.data() + size_t(copy) * stride, bytes};
    }
};

PackedSet g_set;

// The bf16 source of the current shape, kept while its four weight types are
// packed one after the other (generating 400M values takes seconds).
struct Source {
    int n = 0, k = 0;
    Buffer buf;  // [n][k] bf16
};
Source g_source;

const Buffer& source(int n, int k) {
    if (g_source.n != n || g_source.k != k) {
        g_source = Source{};
        g_source.n = n;
        g_source.k = k;
        g_source.buf = Buffer(size_t(n) * size_t(k) * 2);
        fill_bf16(g_source.buf.as<uint16_t>(), size_t(n) * size_t(k),
                  uint64_t(n) * 131 + uint64_t(k), 0.05f);
    }
    return g_source.buf;
}

const PackedSet& packed(WeightType type, int n, int k, int copies) {
    PackedSet& s = g_set;
    if (s.copies > 0 && s.type == type && s.n == n && s.k == k && s.copies >= copies) return s;
    s = PackedSet{};  // frees the previous shape first
    s.type = type;
    s.n = n;
    s.k = k;
    s.bytes = kernels::packed_bytes(type, n, k);
    s.stride = align64(s.bytes);
    s.copies = copies;
    s.buf = Buffer(s.stride * size_t(copies));
    {
        // bf16 source, as checkpoints store it: [n][k], deterministic per (n, k).
        const Buffer& src = source(n, k);
        constexpr int kRowsPerTask = 64 * kernels::kPanelRows;
        const int n_tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
        kernels::parallel_for(options().threads, n_tasks, [&](int t, const kernels::Team&) {
            const int n0 = t * kRowsPerTask;
            kernels::pack_weights(type, SrcType::bf16, src.data(), n, k, n0,
                                  std::min(n, n0 + kRowsPerTask), s.buf.data());
        });
    }
    for (int c = 1; c < copies; ++c)
        std::memcpy(s.buf.data() + size_t(c) * s.stride, s.buf.data(), s.bytes);
    return s;
}

struct Case {
    WeightType type;
    int m, k, n;
};

// The peak of the arithmetic the format's matmul uses (bf16 dot products only
// where the CPU has them).
double peak_for(WeightType type) {
    const Ceilings& c = ceilings();
    switch (weight_type_info(type).math) {
        case WeightMath::int8: return c.int8_gops;
        case WeightMath::bf16: return c.bf16_gflops > 0 ? c.bf16_gflops : c.fp32_gflops;
        case WeightMath::fp32: return c.fp32_gflops;
    }
    return c.fp32_gflops;
}

void bm_matmul(benchmark::State& st, Case c) {
    const kernels::KernelTable& kt = kernels::table();
    const int threads = options().threads;
    const size_t wbytes = kernels::packed_bytes(c.type, c.n, c.k);
    const int copies = c.m == 1 ? rotation_copies(wbytes) : 1;
    const PackedSet& set = packed(c.type, c.n, c.k, copies);

    Buffer x(size_t(c.m) * size_t(c.k) * 4);  // [m][k]
    Buffer y(size_t(c.m) * size_t(c.n) * 4);  // [m][n]
    Buffer scratch(kernels::matmul_scratch_bytes(c.type, c.m, c.k));
    fill_f32(x.as<float>(), size_t(c.m) * size_t(c.k), 7, 1.0f);

    int copy = 0;
    CallTimer timer;
    for (auto _ : st) {
        const PackedMatrix w = set.matrix(copy);
        timer.start();
        kernels::matmul(kt, w, x.as<float>(), size_t(c.k), c.m, y.as<float>(), size_t(c.n),
                        scratch.data(), threads);
        benchmark::ClobberMemory();
        timer.stop();
        if (++copy == set.copies) copy = 0;
    }
    const double seconds = timer.seconds(options().mean);
    if (timer.calls() == 0 || seconds <= 0) return;
    if (c.m == 1) {
        const double gbs = double(wbytes) / seconds * 1e-9;
        set_figure(st, "GB/s", gbs, "ratio_bw", ceilings().read_gb_per_s);
    } else {
        const double gops = 2.0 * c.m * double(c.n) * c.k / seconds * 1e-9;
        set_figure(st, "GOPS", gops, "ratio_peak", peak_for(c.type));
    }
    st.counters["copies"] = set.copies;
}

// lm_head shapes: decode for every format; a few prefill rows only for the
// formats a real run would use there (the f32/bf16 lm_head at M > 1 takes
// seconds). Keyed by name: a format not listed gets decode only.
struct HeadRows {
    const char* format;
    int max_m;
};
constexpr HeadRows kHeadRows[] = {{"q8", 64}, {"f16", 16}};

bool wanted(const Shape& s, WeightType type, int m) {
    if (!s.vocab || m == 1) return true;
    for (const HeadRows& h : kHeadRows)
        if (std::string(h.format) == weight_type_name(type)) return m <= h.max_m;
    return false;
}

void add(const Case& c) {
    const std::string name = std::string("matmul/") + weight_type_name(c.type) + "/K" +
                             std::to_string(c.k) + "/N" + std::to_string(c.n) + "/M" +
                             std::to_string(c.m);
    benchmark::RegisterBenchmark(name.c_str(), bm_matmul, c)->UseRealTime();
}

// Products that read the same rows, as the graph runs them: one fused
// matmul_many call (one parallel region, x converted once) against the same
// products as separate matmul calls. Llama-3.2-1B: q/k/v K2048 -> 2048, 512,
// 512; gate/up K2048 -> 8192 twice.
struct Group {
    const char* name;
    int k;
    std::vector<int> ns;
};

struct GroupCase {
    WeightType type;
    const Group* group;
    int m;
    bool fused;
};

void bm_matmul_group(benchmark::State& st, GroupCase c) {
    const kernels::KernelTable& kt = kernels::table();
    const int threads = options().threads, k = c.group->k, m = c.m;
    const size_t n_mats = c.group->ns.size();
    std::vector<size_t> bytes, offset;
    size_t set_bytes = 0;
    for (int n : c.group->ns) {
        bytes.push_back(kernels::packed_bytes(c.type, n, k));
        offset.push_back(set_bytes);
        set_bytes += align64(bytes.back());
    }
    const int copies = m == 1 ? rotation_copies(set_bytes) : 1;
    Buffer w(set_bytes * size_t(copies));
    std::vector<Buffer> ys;
    for (size_t i = 0; i < n_mats; ++i) {
        const int n = c.group->ns[i];
        Buffer src(size_t(n) * size_t(k) * 2);
        fill_bf16(src.as<uint16_t>(), size_t(n) * size_t(k), uint64_t(n) * 131 + i, 0.05f);
        kernels::pack_weights(c.type, SrcType::bf16, src.data(), n, k, 0, n, w.data() + offset[i]);
        ys.emplace_back(size_t(m) * size_t(n) * 4);
    }
    for (int cp = 1; cp < copies; ++cp) std::memcpy(w.data() + set_bytes * size_t(cp), w.data(), set_bytes);
    Buffer x(size_t(m) * size_t(k) * 4);
    Buffer scratch(kernels::matmul_scratch_bytes(c.type, m, k));
    fill_f32(x.as<float>(), size_t(m) * size_t(k), 7, 1.0f);

    int copy = 0;
    CallTimer timer;
    std::vector<PackedMatrix> mats(n_mats);
    std::vector<kernels::MatmulOut> outs(n_mats);
    for (auto _ : st) {
        for (size_t i = 0; i < n_mats; ++i) {
            mats[i] = PackedMatrix{c.type, c.group->ns[i], k,
                                   w.data() + set_bytes * size_t(copy) + offset[i], bytes[i]};
            outs[i] = {&mats[i], ys[i].as<float>(), size_t(c.group->ns[i])};
        }
        timer.start();
        if (c.fused)
            kernels::matmul_many(kt, outs.data(), int(n_mats), x.as<float>(), size_t(k), m,
                                 scratch.data(), threads);
        else
            for (const kernels::MatmulOut& o : outs)
                kernels::matmul(kt, *o.w, x.as<float>(), size_t(k), m, o.y, o.ldy, scratch.data(),
                                threads);
        benchmark::ClobberMemory();
        timer.stop();
        if (++copy == copies) copy = 0;
    }
    const double seconds = timer.seconds(options().mean);
    if (timer.calls() == 0 || seconds <= 0) return;
    double weights = 0, ops = 0;
    for (size_t i = 0; i < n_mats; ++i) {
        weights += double(bytes[i]);
        ops += 2.0 * m * double(c.group->ns[i]) * k;
    }
    if (m == 1)
        set_figure(st, "GB/s", weights / seconds * 1e-9, "ratio_bw", ceilings().read_gb_per_s);
    else
        set_figure(st, "GOPS", ops / seconds * 1e-9, "ratio_peak", peak_for(c.type));
    st.counters["copies"] = copies;
}

const Group kGroups[] = {{"qkv", 2048, {2048, 512, 512}}, {"gate_up", 2048, {8192, 8192}}};
const Group kQuickGroup = {"qkv", 256, {256, 64, 64}};

void add_group(WeightType type, const Group& g, int m) {
    for (bool fused : {false, true}) {
        const std::string name = std::string("matmul_many/") + weight_type_name(type) + "/" +
                                 g.name + "/K" + std::to_string(g.k) + "/M" + std::to_string(m) +
                                 (fused ? "/fused" : "/separate");
        benchmark::RegisterBenchmark(name.c_str(), bm_matmul_group, GroupCase{type, &g, m, fused})
            ->UseRealTime();
    }
}

}  // namespace

void release_matmul_weights() {
    g_set = PackedSet{};
    g_source = Source{};
}

void register_matmul(const Options& opts) {
    if (opts.quick) {
        for (WeightType t : weight_types())
            for (int m : {1, 16}) add({t, m, 2048, 512});
        for (int m : {1, 16}) add_group(WeightType::q8, kQuickGroup, m);
        return;
    }
    for (const Shape& s : kShapes)
        for (WeightType t : weight_types())
            for (int m : kMs)
                if (wanted(s, t, m)) add({t, m, s.k, s.n});
    for (const Group& g : kGroups)
        for (WeightType t : {WeightType::q8, WeightType::f16})
            for (int m : {1, 64, 512}) add_group(t, g, m);
}

}  // namespace staticlm::bench
