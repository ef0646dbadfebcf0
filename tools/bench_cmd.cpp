// `staticlm bench`: prefill of --pp tokens and decode of --tg tokens, measured
// separately and repeated, with effective GB/s (decode) and GOPS (prefill) and
// their ratio to this machine's ceilings measured by the same binary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "staticlm/error.hpp"
#include "staticlm/probe.hpp"
#include "tools/commands.hpp"

namespace staticlm::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct MeanSd {
    double mean = 0, sd = 0;
};

MeanSd mean_sd(const std::vector<double>& v) {
    MeanSd r;
    if (v.empty()) return r;
    r.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - r.mean) * (x - r.mean);
    r.sd = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0.0;
    return r;
}

}  // namespace

int cmd_bench(const Args& a) {
    const bool json = a.has("json");
    const int pp = a.integer("pp", 512);
    const int tg = a.integer("tg", 128);
    const int reps = a.integer("reps", 3);
    if (pp < 1 || tg < 1 || reps < 1) throw UsageError("--pp, --tg and --reps must be >= 1");
    std::shared_ptr<const Model> model;
    std::string name;
    if (a.has("model")) {
        model = load_model_from_args(a);
        name = a.str("model");
    } else {
        name = a.str("synthetic", "llama-3.2-1b");
        model = synthetic_model(name, weight_type_from_args(a), 1, a.integer("threads", 0));
    }
    const ModelConfig& c = model_config(*model);

    SessionOptions so = session_options_from_args(a);
    so.max_seq = std::max(so.max_seq, pp + tg);
    so.prefill_buckets = {pp};
    Session session(model, so);
    const int threads = session.threads();

    // Deterministic token ids spread over the vocabulary.
    std::vector<int> prompt(static_cast<size_t>(pp));
    for (int i = 0; i < pp; ++i) prompt[size_t(i)] = int((uint64_t(i) * 2654435761u) % uint64_t(c.vocab));

    std::vector<double> pp_tps, tg_tps;
    session.prefill(std::span<const int>(prompt.data(), size_t(std::min(pp, 16))));  // warm-up
    for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        session.prefill(prompt);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        pp_tps.push_back(pp / s);
        t0 = Clock::now();
        int tok = 1;
        for (int i = 0; i < tg; ++i) {
            auto logits = session.decode(tok);
            tok = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
        }
        const double d = std::chrono::duration<double>(Clock::now() - t0).count();
        tg_tps.push_back(tg / d);
    }
    const MeanSd p = mean_sd(pp_tps), d = mean_sd(tg_tps);

    // Work per token: 2 ops per weight of every matmul (embedding lookups excluded),
    // and the bytes decode reads per token: all matmul weights + the K/V of the
    // average context (pp + tg/2).
    const double weight_bytes = double(model_weight_bytes(*model));
    const double params = model_matmul_params(*model);
    const double avg_ctx = pp + tg / 2.0;
    const double kv_bytes = double(session.cache_bytes_per_token()) * avg_ctx;
    const double bytes_per_token = model_matmul_bytes(*model) + kv_bytes;
    const double gops = p.mean * 2.0 * params / 1e9;
    const double gbps = d.mean * bytes_per_token / 1e9;

    const MachineCeilings m = measure_ceilings(threads);
    const double r_peak = gops / (model_weight_type(*model) == WeightType::q8 ? m.int8_gops : m.fp32_gflops);
    const double r_bw = gbps / m.read_gb_per_s;
    (void)weight_bytes;

    if (json) {
        std::printf(
            "{\"model\": \"%s\", \"weights\": \"%s\", \"threads\": %d, \"target\": \"%s\", "
            "\"prefill\": {\"tokens\": %d, \"tok_per_s\": %.2f, \"tok_per_s_sd\": %.2f, "
            "\"gops\": %.1f, \"ratio_to_peak\": %.3f}, "
            "\"decode\": {\"tokens\": %d, \"tok_per_s\": %.2f, \"tok_per_s_sd\": %.2f, "
            "\"gb_per_s\": %.2f, \"ratio_to_bandwidth\": %.3f}, "
            "\"machine\": {\"read_gb_per_s\": %.2f, \"int8_gops\": %.1f, \"fp32_gflops\": %.1f}}\n",
            name.c_str(), weight_type_name(model_weight_type(*model)), threads,
            kernel_target_name().c_str(), pp, p.mean, p.sd, gops, r_peak, tg, d.mean, d.sd, gbps,
            r_bw, m.read_gb_per_s, m.int8_gops, m.fp32_gflops);
    } else {
        std::printf("model %s, weights %s (%.1f MiB), threads %d, target %s\n", name.c_str(),
                    weight_type_name(model_weight_type(*model)), weight_bytes / 1048576.0,
                    threads, kernel_target_name().c_str());
        std::printf("machine: read %.1f GB/s, int8 %.0f GOPS, fp32 %.0f GFLOPS\n",
                    m.read_gb_per_s, m.int8_gops, m.fp32_gflops);
        std::printf("pp%-5d %8.2f ± %6.2f tok/s  %7.1f GOPS  %5.1f%% of %s peak\n", pp, p.mean,
                    p.sd, gops, 100 * r_peak,
                    model_weight_type(*model) == WeightType::q8 ? "int8" : "fp32");
        std::printf("tg%-5d %8.2f ± %6.2f tok/s  %7.1f GB/s  %5.1f%% of read bandwidth\n", tg,
                    d.mean, d.sd, gbps, 100 * r_bw);
    }
    return 0;
}

}  // namespace staticlm::cli
