// bench_kernels: measures the machine ceilings, then runs every kernel at real
// model shapes through the default dispatch table and prints each figure's
// ratio to the ceilings of this same run, ending with a headline summary.
// Own flags: --threads N, --quick, --mean, --ceilings-only, --ceiling-isa avx512|avx2;
// everything else goes to Google Benchmark (--benchmark_filter=..., ...).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "bench_common.hpp"
#include "staticlm/error.hpp"
#include "staticlm/types.hpp"

namespace staticlm::bench {
namespace {

Options g_options;
Ceilings g_ceilings;

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

float uniform(uint64_t seed, size_t i, float amplitude) {
    const uint64_t r = mix(seed * 0x632be59bd9b4e019ull + i);
    return amplitude * (float(r >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

template <class Store>
void fill(size_t n, Store store) {
    kernels::parallel(g_options.threads, [&](const kernels::Team& t) {
        const size_t b = n * size_t(t.tid()) / size_t(t.size()), e = n * size_t(t.tid() + 1) / size_t(t.size());
        for (size_t i = b; i < e; ++i) store(i);
    });
}

int parse_threads(const std::string& v) {
    size_t used = 0;
    int n = 0;
    try {
        n = std::stoi(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v.size() || n < 1 || n > max_threads())
        throw Error(ErrorKind::config, "--threads: expected an integer 1.." + std::to_string(max_threads()) +
                                           " (4 x the CPUs available), got '" + v + "'");
    return n;
}

// Takes our flags out of argv (the rest is for Google Benchmark).
Options parse_options(int& argc, char** argv) {
    Options o;
    o.threads = available_cpus();
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* flag) -> std::string {
            const std::string f = flag;
            if (a.rfind(f + "=", 0) == 0) return a.substr(f.size() + 1);
            if (i + 1 >= argc) throw Error(ErrorKind::config, f + ": missing value");
            return argv[++i];
        };
        if (a == "--threads" || a.rfind("--threads=", 0) == 0) {
            o.threads = parse_threads(value("--threads"));
        } else if (a == "--ceiling-isa" || a.rfind("--ceiling-isa=", 0) == 0) {
            o.ceiling_isa = value("--ceiling-isa");
            if (o.ceiling_isa != "avx512" && o.ceiling_isa != "avx2")
                throw Error(ErrorKind::config,
                            "--ceiling-isa: expected avx512 or avx2, got '" + o.ceiling_isa + "'");
        } else if (a == "--quick") {
            o.quick = true;
        } else if (a == "--mean") {
            o.mean = true;
        } else if (a == "--ceilings-only") {
            o.ceilings_only = true;
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    argv[argc] = nullptr;
    return o;
}

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

void print_ceilings(const Ceilings& c, bool quick) {
    std::printf("ceilings (%d thread%s, %s code%s):\n", c.threads, c.threads == 1 ? "" : "s",
                c.isa.c_str(), quick ? "; quick: rough, short passes" : "");
    std::printf("  read bandwidth  %8.1f GB/s   (best of passes; median %.1f)\n", c.read_gb_per_s,
                c.read_gb_per_s_median);
    std::printf("  int8 dot peak   %8.1f GOPS\n", c.int8_gops);
    std::printf("  fp32 FMA peak   %8.1f GFLOPS\n", c.fp32_gflops);
    if (c.bf16_gflops > 0) std::printf("  bf16 dot peak   %8.1f GFLOPS\n", c.bf16_gflops);
    else std::printf("  bf16 dot peak        n/a (no AVX512-BF16; bf16 ratios use fp32 peak)\n");
    if (c.amx_int8_gops > 0) std::printf("  AMX int8 peak   %8.1f GOPS\n", c.amx_int8_gops);
    if (c.amx_int8_k32_gops > 0)
        std::printf("  AMX int8, K=32  %8.1f GOPS   (32 bytes of K per product, as q8's groups)\n",
                    c.amx_int8_k32_gops);
    if (c.amx_bf16_gflops > 0) std::printf("  AMX bf16 peak   %8.1f GFLOPS\n", c.amx_bf16_gflops);
    std::fflush(stdout);
}

// Prints like the console reporter and keeps every run's counters for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
public:
    SummaryReporter()
        : ConsoleReporter(isatty(fileno(stdout)) ? OO_ColorTabular : OO_Tabular) {}

    void ReportRuns(const std::vector<Run>& reports) override {
        for (const Run& r : reports) {
            if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
            std::string name = r.benchmark_name();
            const std::string suffix = "/real_time";
            if (name.size() > suffix.size() &&
                name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
                name.resize(name.size() - suffix.size());
            auto& counters = runs_[name];
            for (const auto& [key, counter] : r.counters) counters[key] = counter.value;
        }
        ConsoleReporter::ReportRuns(reports);
    }

    // counter of a run, or -1 when it did not run
    double get(const std::string& name, const std::string& counter) const {
        auto it = runs_.find(name);
        if (it == runs_.end()) return -1;
        auto c = it->second.find(counter);
        return c == it->second.end() ? -1 : c->second;
    }

private:
    std::map<std::string, std::map<std::string, double>> runs_;
};

void print_summary(const SummaryReporter& rep, const Options& o) {
    // Headline shapes: Llama FFN up (K=2048 → N=8192) and context 2048; the
    // quick subset's nearest equivalents otherwise.
    const std::string shape = o.quick ? "K2048/N512" : "K2048/N8192";
    const std::string big_m = o.quick ? "M16" : "M512";
    const std::string ctx = o.quick ? "ctx512" : "ctx2048";
    const Ceilings& c = g_ceilings;
    std::printf("\nsummary: %s, %d thread%s, ratios to this run's ceilings\n",
                kernels::target_name(kernels::best_target()), o.threads,
                o.threads == 1 ? "" : "s");
    auto line = [&](const std::string& what, const std::string& name, const char* figure,
                    const char* ratio, const std::string& vs) {
        const double v = rep.get(name, figure), r = rep.get(name, ratio);
        if (v < 0) {
            std::printf("  %-44s (not run)\n", what.c_str());
            return;
        }
        std::printf("  %-44s %9.1f %-5s = %5.3f of %s\n", what.c_str(), v, figure, r,
                    vs.c_str());
    };
    line("q8 M=1 " + shape, "matmul/q8/" + shape + "/M1", "GB/s", "ratio_bw",
         "read bandwidth " + fmt("%.1f GB/s", c.read_gb_per_s));
    line("q8 " + big_m + " " + shape, "matmul/q8/" + shape + "/" + big_m, "GOPS", "ratio_peak",
         "int8 peak " + fmt("%.0f GOPS", c.int8_gops));
    // On AMX the q8 matmul's ceiling is the tile unit at K = 32 per product.
    const double q8_big = rep.get("matmul/q8/" + shape + "/" + big_m, "GOPS");
    if (c.amx_int8_k32_gops > 0 && q8_big > 0 && kernels::best_target() == kernels::Target::avx512_amx)
        std::printf("  %-44s %9.3f       of AMX int8 at K=32 (%.0f GOPS; %.3f of the full peak)\n",
                    ("q8 " + big_m + " " + shape + " on AMX").c_str(), q8_big / c.amx_int8_k32_gops,
                    c.amx_int8_k32_gops, q8_big / c.amx_int8_gops);
    line("f16 " + big_m + " " + shape, "matmul/f16/" + shape + "/" + big_m, "GOPS",
         "ratio_peak", "fp32 FMA peak " + fmt("%.0f GFLOPS", c.fp32_gflops));
    line("bf16 " + big_m + " " + shape, "matmul/bf16/" + shape + "/" + big_m, "GOPS",
         "ratio_peak",
         c.bf16_gflops > 0 ? "bf16 dot peak " + fmt("%.0f GFLOPS", c.bf16_gflops)
                           : "fp32 FMA peak " + fmt("%.0f GFLOPS", c.fp32_gflops));
    const double bf = rep.get("matmul/bf16/" + shape + "/" + big_m, "GOPS");
    const double f16 = rep.get("matmul/f16/" + shape + "/" + big_m, "GOPS");
    if (bf > 0 && f16 > 0)
        std::printf("  %-44s %9.3f       (bf16 GOPS / f16 GOPS)\n",
                    ("bf16 vs f16 " + big_m + " " + shape).c_str(), bf / f16);
    else
        std::printf("  %-44s (not run)\n", ("bf16 vs f16 " + big_m + " " + shape).c_str());
    for (const char* heads : {"hd64/q32kv8", "hd256/q8kv1", "hd512/q8kv1"}) {
        if (o.quick && std::strcmp(heads, "hd64/q32kv8") != 0) continue;
        line(std::string("attention decode ") + heads + " " + ctx,
             std::string("attn_decode/") + heads + "/" + ctx, "GB/s", "ratio_bw",
             "K/V bytes at read bandwidth");
    }
    if (!o.quick)
        for (const char* kv : {"", "/q8"})
            line(std::string("attention decode hd64/q32kv8 ctx16384") + (*kv ? " q8" : " f16"),
                 std::string("attn_decode/hd64/q32kv8/ctx16384") + kv, "GB/s", "ratio_bw",
                 "K/V bytes at read bandwidth");
}

}  // namespace

const Options& options() { return g_options; }
const Ceilings& ceilings() { return g_ceilings; }

size_t rotation_bytes() {
    static const size_t bytes = [] {
        const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);  // 0 or -1 where unknown
        const size_t want = llc > 0 ? 2 * size_t(llc) : 0;
        return std::clamp(want, size_t{256} << 20, size_t{4} << 30);
    }();
    return bytes;
}

int rotation_copies(size_t bytes) {
    const size_t total = rotation_bytes();
    if (g_options.quick || bytes == 0 || bytes >= total) return 1;
    return int((total + bytes - 1) / bytes) + 1;
}

void fill_f32(float* x, size_t n, uint64_t seed, float amplitude) {
    fill(n, [&](size_t i) { x[i] = uniform(seed, i, amplitude); });
}

void fill_bf16(uint16_t* x, size_t n, uint64_t seed, float amplitude) {
    fill(n, [&](size_t i) {  // round to nearest even (the data have no NaN)
        uint32_t bits;
        const float f = uniform(seed, i, amplitude);
        std::memcpy(&bits, &f, 4);
        x[i] = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    });
}

void fill_f16(uint16_t* x, size_t n, uint64_t seed, float amplitude) {
    fill(n, [&](size_t i) { x[i] = kernels::f32_to_f16(uniform(seed, i, amplitude)); });
}

void set_figure(benchmark::State& st, const char* name, double value, const char* ratio_name,
                double ceiling) {
    st.counters[name] = value;
    if (ratio_name && ceiling > 0) st.counters[ratio_name] = value / ceiling;
}

}  // namespace staticlm::bench

int main(int argc, char** argv) {
    using namespace staticlm;
    using namespace staticlm::bench;
    try {
        g_options = parse_options(argc, argv);
    } catch (const Error& e) {
        std::fprintf(stderr, "bench_kernels: %s\n", e.what());
        return 2;
    }
    const Options& o = g_options;
    const char* target = kernels::target_name(kernels::best_target());
    std::printf("bench_kernels: kernel target %s, %d thread%s%s; matmul/attention figures "
                "from the %s call; M = 1 weights and decode K/V ",
                target, o.threads, o.threads == 1 ? "" : "s", o.quick ? ", quick subset" : "",
                o.mean ? "mean" : "fastest");
    if (o.quick)
        std::printf("not rotated (one copy, from cache)\n");
    else
        std::printf("rotated through %zu MiB\n", rotation_bytes() >> 20);
    std::fflush(stdout);

    g_ceilings = measure_ceilings(o.threads, o.quick, o.ceiling_isa);
    print_ceilings(g_ceilings, o.quick);
    if (o.ceilings_only) return 0;

    benchmark::AddCustomContext("kernel_target", target);
    benchmark::AddCustomContext("threads", std::to_string(o.threads));
    benchmark::AddCustomContext("figures_from", o.mean ? "mean call" : "fastest call");
    benchmark::AddCustomContext("ceiling_read_gbs", fmt("%.2f", g_ceilings.read_gb_per_s));
    benchmark::AddCustomContext("ceiling_int8_gops", fmt("%.1f", g_ceilings.int8_gops));
    benchmark::AddCustomContext("ceiling_fp32_gflops", fmt("%.1f", g_ceilings.fp32_gflops));
    benchmark::AddCustomContext("ceiling_bf16_gflops", fmt("%.1f", g_ceilings.bf16_gflops));
    benchmark::AddCustomContext("ceiling_amx_int8_gops", fmt("%.1f", g_ceilings.amx_int8_gops));
    benchmark::AddCustomContext("ceiling_amx_int8_k32_gops",
                                fmt("%.1f", g_ceilings.amx_int8_k32_gops));
    benchmark::AddCustomContext("ceiling_amx_bf16_gflops", fmt("%.1f", g_ceilings.amx_bf16_gflops));

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    try {
        register_matmul(o);
        register_attention(o);
        register_elementwise(o);
        SummaryReporter reporter;
        benchmark::RunSpecifiedBenchmarks(&reporter);
        release_matmul_weights();
        release_kv_copies();
        print_summary(reporter, o);
    } catch (const Error& e) {
        std::fprintf(stderr, "bench_kernels: %s\n", e.what());
        return 1;
    }
    benchmark::Shutdown();
    return 0;
}
