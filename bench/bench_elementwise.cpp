// Element-wise kernel benchmarks at the models' hidden/FFN/vocab sizes, one
// row (decode) and 512 rows (prefill): rmsnorm, rope, silu_mul, gelu_tanh_mul,
// softcap. These kernels are single-threaded; the figure is GB/s moved
// (reads + writes), mostly from L1/L2, so no ratio to the DRAM ceiling.
#include <cmath>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace staticlm::bench {
namespace {

enum class Op { rmsnorm, rope, silu_mul, gelu_tanh_mul, softcap };

struct Case {
    Op op;
    int rows;
    int n;             // elements per row (rope: n_heads × head_dim)
    int head_dim = 0;  // rope only
    float theta = 0;   // rope only
};

const char* op_name(Op op) {
    switch (op) {
        case Op::rmsnorm: return "rmsnorm";
        case Op::rope: return "rope";
        case Op::silu_mul: return "silu_mul";
        case Op::gelu_tanh_mul: return "gelu_tanh_mul";
        case Op::softcap: return "softcap";
    }
    return "?";
}

void bm_elementwise(benchmark::State& st, Case c) {
    release_kv_copies();
    const kernels::KernelTable& kt = kernels::table();
    const size_t total = size_t(c.rows) * size_t(c.n);
    Buffer a(total * 4), b(total * 4), out(total * 4);
    fill_f32(a.as<float>(), total, 21, 2.0f);
    fill_f32(b.as<float>(), total, 22, 2.0f);
    std::vector<float> weight(size_t(c.n), 1.0f);
    std::vector<float> inv_freq;
    if (c.op == Op::rope)
        for (int j = 0; j < c.head_dim / 2; ++j)
            inv_freq.push_back(std::pow(c.theta, -2.0f * float(j) / float(c.head_dim)));

    size_t bytes = 0;  // moved per call
    int64_t iters = 0;
    WallTimer timer;
    for (auto _ : st) {
        switch (c.op) {
            case Op::rmsnorm:
                kt.rmsnorm(a.as<float>(), size_t(c.n), c.rows, c.n, weight.data(), 1e-6f,
                           out.as<float>(), size_t(c.n));
                bytes = total * 8;
                break;
            case Op::rope:  // in place; positions as in a block ending at 4096
                kt.rope(a.as<float>(), size_t(c.n), c.rows, c.n / c.head_dim, c.head_dim,
                        4096 - c.rows, inv_freq.data());
                bytes = total * 8;
                break;
            case Op::silu_mul:
                kt.silu_mul(a.as<float>(), b.as<float>(), total, out.as<float>());
                bytes = total * 12;
                break;
            case Op::gelu_tanh_mul:
                kt.gelu_tanh_mul(a.as<float>(), b.as<float>(), total, out.as<float>());
                bytes = total * 12;
                break;
            case Op::softcap:  // in place: values shrink slowly, stay finite
                kt.softcap(a.as<float>(), total, 30.0f);
                bytes = total * 8;
                break;
        }
        benchmark::ClobberMemory();
        ++iters;
    }
    const double seconds = timer.seconds();
    if (iters == 0 || seconds <= 0) return;
    set_figure(st, "GB/s", double(bytes) * double(iters) / seconds * 1e-9, nullptr, 0);
    st.counters["ns/elem"] = seconds / double(iters) / double(total) * 1e9;
}

void add(const Case& c, const std::string& what) {
    const std::string name = std::string("elem/") + op_name(c.op) + "/" + what + "/rows" +
                             std::to_string(c.rows);
    benchmark::RegisterBenchmark(name.c_str(), bm_elementwise, c)->UseRealTime();
}

}  // namespace

void register_elementwise(const Options& opts) {
    if (opts.quick) {
        add({Op::rmsnorm, 1, 2048}, "n2048");
        add({Op::rope, 1, 32 * 64, 64, 500000.0f}, "q32x64");
        add({Op::silu_mul, 1, 8192}, "n8192");
        add({Op::gelu_tanh_mul, 1, 6144}, "n6144");
        add({Op::softcap, 1, 262144}, "n262144");
        return;
    }
    for (int rows : {1, 512}) {
        add({Op::rmsnorm, rows, 2048}, "n2048");  // Llama hidden
        add({Op::rmsnorm, rows, 1536}, "n1536");  // Gemma hidden
        add({Op::rope, rows, 32 * 64, 64, 500000.0f}, "q32x64");  // Llama q heads
        add({Op::rope, rows, 8 * 256, 256, 10000.0f}, "q8x256");  // Gemma sliding
        add({Op::rope, rows, 8 * 512, 512, 1000000.0f}, "q8x512");  // Gemma global
        add({Op::silu_mul, rows, 8192}, "n8192");          // Llama FFN
        add({Op::gelu_tanh_mul, rows, 6144}, "n6144");     // Gemma FFN
        add({Op::gelu_tanh_mul, rows, 12288}, "n12288");   // Gemma double-wide FFN
    }
    add({Op::softcap, 1, 262144}, "n262144");  // Gemma final-logit softcap over the vocab
}

}  // namespace staticlm::bench
