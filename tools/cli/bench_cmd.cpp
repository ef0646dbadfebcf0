// `staticlm bench`: prefill of --pp tokens and decode of --tg tokens, measured
// separately and repeated, with effective GB/s (decode) and GOPS (prefill) and
// their ratio to this machine's ceilings measured by the same binary.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"
#include "staticlm/probe.hpp"
#include "commands.hpp"

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

// One thread count's figures at one depth.
struct Run {
    int threads = 0;
    int depth = 0;  // tokens already in the cache before the pp and tg passes
    MeanSd prefill, decode;  // tok/s
    // r_bw: decode's GB/s over the best read pass (the ceiling); r_bw_median:
    // over the median pass, the rate a read of the same seconds typically gets
    // on a shared machine (the decode figure is a mean over seconds of steps).
    double gops = 0, gbps = 0, r_peak = 0, r_bw = 0, r_bw_median = 0;
    uint64_t pool_shrinks = 0;  // during the pp and tg passes
    MachineCeilings machine;
    bool ceilings_moved = false;  // the probes before and after the passes disagreed
    double mask_seconds = 0, decode_seconds = 0;  // --json-schema: in all tg steps
    long mask_steps = 0;
};

// The ceilings are probed before and after a run's passes and each figure is
// the higher of the two: on a shared VM both vCPUs sometimes land on one host
// core for seconds (every probe figure halves, measured: read 17.5 GB/s, int8
// 776 GOPS, where runs a few minutes earlier probed 34 GB/s and 1500 GOPS),
// and a ratio to that probe means nothing. Moved: either probe's read bandwidth or an arithmetic peak a
// ratio can use (int8, fp32, AMX int8, AMX bf16) is below 0.8 of the other's.
MachineCeilings higher_ceilings(const MachineCeilings& a, const MachineCeilings& b, bool& moved) {
    auto apart = [](double x, double y) { return std::min(x, y) < 0.8 * std::max(x, y); };
    moved = apart(a.read_gb_per_s, b.read_gb_per_s) || apart(a.int8_gops, b.int8_gops) ||
            apart(a.fp32_gflops, b.fp32_gflops) || apart(a.amx_int8_gops, b.amx_int8_gops) ||
            apart(a.amx_bf16_gflops, b.amx_bf16_gflops);
    MachineCeilings c = a;
    c.read_gb_per_s = std::max(a.read_gb_per_s, b.read_gb_per_s);
    c.read_gb_per_s_median = std::max(a.read_gb_per_s_median, b.read_gb_per_s_median);
    c.int8_gops = std::max(a.int8_gops, b.int8_gops);
    c.fp32_gflops = std::max(a.fp32_gflops, b.fp32_gflops);
    c.bf16_gflops = std::max(a.bf16_gflops, b.bf16_gflops);
    c.amx_int8_gops = std::max(a.amx_int8_gops, b.amx_int8_gops);
    c.amx_int8_k32_gops = std::max(a.amx_int8_k32_gops, b.amx_int8_k32_gops);
    c.amx_bf16_gflops = std::max(a.amx_bf16_gflops, b.amx_bf16_gflops);
    return c;
}

// --json-schema in --json: the mask's time per step and share of the decode step.
std::string mask_json(const Run& r) {
    if (r.mask_steps == 0) return "";
    char buf[160];
    std::snprintf(buf, sizeof(buf), ", \"json_schema_mask\": {\"us_per_step\": %.1f, \"share_of_decode_step\": %.4f}",
                  1e6 * r.mask_seconds / double(r.mask_steps), r.mask_seconds / r.decode_seconds);
    return buf;
}

}  // namespace

int cmd_bench(const Args& a) {
    if (a.has("batch")) return cmd_bench_batch(a);  // tools/cli/bench_batch.cpp
    const bool json = a.has("json");
    const int pp = a.integer("pp", 512);
    const int tg = a.integer("tg", 128);
    const int reps = a.integer("reps", 3);
    if (pp < 1 || tg < 1 || reps < 1) throw UsageError("--pp, --tg and --reps must be >= 1");
    // --depth 0,1024,4096: the passes run after that many tokens are in the cache (llama-bench -d).
    const std::vector<int> depths = a.int_list("depth", {0});
    for (int d : depths)
        if (d < 0 || d > (1 << 24)) throw UsageError(a.spelled("depth") + " must be in [0, 16777216], got " + std::to_string(d));
    if (a.has("model") && a.has("synthetic")) throw UsageError("give -m/--model or --synthetic, not both");
    // --threads 1,2 measures each count in this one process (thread scaling).
    const std::vector<int> thread_list = a.int_list("threads", {0});
    for (int t : thread_list) check_threads_flag(t, a.spelled("threads"));
    const bool all_cores = std::find(thread_list.begin(), thread_list.end(), 0) != thread_list.end();
    const int load_threads = all_cores ? 0 : *std::max_element(thread_list.begin(), thread_list.end());
    const Args la = a.with("threads", std::to_string(load_threads));

    std::shared_ptr<const Model> model;
    std::string name;
    if (a.has("model")) {
        model = load_model_from_args(la);
        name = a.str("model");
    } else {
        name = a.str("synthetic", "llama-3.2-1b");
        model = synthetic_model(name, weight_type_from_args(a), 1, load_threads, act_bits_from_args(a));
    }
    const ModelConfig& c = model_config(*model);
    // --json-schema: each decode step also takes the constraint's mask, applies
    // it to a copy of the logits, picks the argmax and advances (what a
    // constrained greedy step adds to an unconstrained one), timed apart.
    std::shared_ptr<const Constraint> constraint;
    if (a.has("json-schema")) {
        const Tokenizer* tok = model_tokenizer(*model);
        if (!tok) throw UsageError(a.spelled("json-schema") + " needs a model with a tokenizer (-m)");
        const std::string text = read_text_input(a.str("json-schema"), a.spelled("json-schema"), size_t{1} << 20);
        constraint = Constraint::json_schema(text, std::make_shared<const TokenVocabulary>(*tok));
    }
    ConstraintCursor cursor(c.vocab);
    std::vector<float> masked(size_t(c.vocab));
    // The ratio of prefill is to the peak of the arithmetic each format's
    // matmul uses: AMX tiles where the avx512-amx target runs it on them
    // (matmul_uses_amx), else int8 dot products (vpdpbusd) or fp32 FMA. A
    // native mix of formats is held to the peak its work would reach if each
    // part ran at its own: total ops / Σ (ops of a format / that format's peak).
    const int act_bits = model_act_bits(*model);
    enum Peak { kAmxInt8, kAmxBf16, kInt8, kFp32, kPeaks };
    static constexpr const char* kPeakNames[kPeaks] = {"AMX int8", "AMX bf16", "int8", "fp32"};
    auto peak_kind = [&](WeightType t) {
        const bool int8 = weight_type_info(t).math == WeightMath::int8;
        if (matmul_uses_amx(t, act_bits)) return int8 ? kAmxInt8 : kAmxBf16;
        return int8 ? kInt8 : kFp32;
    };
    auto peak_of = [](const MachineCeilings& m, Peak p) {
        const double v[kPeaks] = {m.amx_int8_gops, m.amx_bf16_gflops, m.int8_gops, m.fp32_gflops};
        return v[p];
    };
    // Multiply-adds of a prefill pass of pp positions by peak: every matmul
    // per position, the head per logits row (the last position's, unless the
    // session keeps all logits).
    const std::vector<WeightTypeUsage> usage = model_weight_usage(*model);
    auto pass_macs = [&](bool all_logits) {
        std::array<double, kPeaks> macs{};
        for (const WeightTypeUsage& u : usage)
            macs[peak_kind(u.type)] += pp * u.macs_per_position + (all_logits ? pp : 1) * u.macs_per_logits_row;
        return macs;
    };
    bool used[kPeaks] = {};
    for (const WeightTypeUsage& u : usage)
        if (u.macs_per_position > 0 || u.macs_per_logits_row > 0) used[peak_kind(u.type)] = true;
    std::string peak_name;  // "int8", or a mix's "AMX int8 + int8"
    for (int p = 0; p < kPeaks; ++p)
        if (used[p]) peak_name += (peak_name.empty() ? "" : " + ") + std::string(kPeakNames[p]);
    const bool int8 = weight_type_info(model_weight_type(*model)).math == WeightMath::int8;

    // Deterministic token ids spread over the vocabulary.
    const int depth_max = *std::max_element(depths.begin(), depths.end());
    std::vector<int> prompt(static_cast<size_t>(depth_max + pp));
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int((uint64_t(i) * 2654435761u) % uint64_t(c.vocab));
    const std::span<const int> filler(prompt.data(), size_t(depth_max));  // the depth's tokens
    const std::span<const int> pass(prompt.data() + depth_max, size_t(pp));

    // Bytes decode reads per token: all matmul weights + the K/V of the
    // average context (depth + pp + tg/2).
    std::vector<Run> runs;
    for (int requested : thread_list) {
        SessionOptions so = session_options_from_args(a.with("threads", std::to_string(requested)), c);
        so.max_seq = std::max(so.max_seq, depth_max + pp + tg);
        so.prefill_buckets = {pp};
        so.append_buckets = {pp};  // the pp pass after a depth is one append of pp tokens
        Session session(model, so);
        // A depth's probe after its passes is the next depth's probe before them.
        MachineCeilings last_probe;
        bool have_probe = false;
        for (int depth : depths) {
            Run run;
            run.threads = session.threads();
            run.depth = depth;
            const MachineCeilings before = have_probe ? last_probe : measure_ceilings(run.threads);

            std::vector<double> pp_tps, tg_tps;
            const uint64_t shrinks0 = thread_pool_shrinks();
            session.prefill(std::span<const int>(prompt.data(), size_t(std::min(pp, 16))));  // warm-up
            // The depth's tokens once (not timed); each repetition rewinds to them.
            session.reset();
            if (depth > 0) session.append(filler.first(size_t(depth)));
            for (int r = 0; r < reps; ++r) {
                auto t0 = Clock::now();
                session.append(pass);
                const double s = std::chrono::duration<double>(Clock::now() - t0).count();
                pp_tps.push_back(pp / s);
                t0 = Clock::now();
                int tok = 1;
                cursor.start(constraint.get());
                for (int i = 0; i < tg; ++i) {
                    const auto t_step = Clock::now();
                    auto logits = session.decode(tok);
                    if (!constraint) {
                        tok = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
                        continue;
                    }
                    // The sampler copies the logits and picks a token in any
                    // case: the copy and the argmax are not the mask's cost.
                    std::copy(logits.begin(), logits.end(), masked.begin());
                    const auto t_mask = Clock::now();
                    apply_token_mask(masked, cursor.mask(c.eos_ids));
                    double mask_s = std::chrono::duration<double>(Clock::now() - t_mask).count();
                    tok = int(std::max_element(masked.begin(), masked.end()) - masked.begin());
                    const auto t_advance = Clock::now();
                    if (cursor.complete() && std::find(c.eos_ids.begin(), c.eos_ids.end(), tok) != c.eos_ids.end())
                        cursor.start(constraint.get());  // a value is done: start the next one
                    else
                        cursor.advance(tok);
                    const auto t_end = Clock::now();
                    mask_s += std::chrono::duration<double>(t_end - t_advance).count();
                    run.mask_seconds += mask_s;
                    run.decode_seconds += std::chrono::duration<double>(t_end - t_step).count() - mask_s;
                    ++run.mask_steps;
                }
                const double d = std::chrono::duration<double>(Clock::now() - t0).count();
                tg_tps.push_back(tg / d);
                // Back to the depth (ring storage may not rewind that far: refill it).
                if (session.pos() - depth <= session.max_rewind()) {
                    session.rewind(session.pos() - depth);
                } else {
                    session.reset();
                    if (depth > 0) session.append(filler.first(size_t(depth)));
                }
            }
            run.pool_shrinks = thread_pool_shrinks() - shrinks0;
            run.prefill = mean_sd(pp_tps);
            run.decode = mean_sd(tg_tps);
            const double kv_bytes = double(session.cache_bytes_per_token()) * (depth + pp + tg / 2.0);
            const std::array<double, kPeaks> macs = pass_macs(session.options().all_logits);
            const double pass_ops = 2.0 * std::accumulate(macs.begin(), macs.end(), 0.0);
            run.gops = run.prefill.mean / pp * pass_ops / 1e9;
            run.gbps = run.decode.mean * (model_matmul_bytes(*model) + kv_bytes) / 1e9;
            last_probe = measure_ceilings(run.threads);
            have_probe = true;
            run.machine = higher_ceilings(before, last_probe, run.ceilings_moved);
            // Seconds per pass at the peaks, against the pass's measured seconds.
            double peak_s = 0;
            bool have_peaks = true;
            for (int p = 0; p < kPeaks; ++p) {
                if (macs[p] == 0) continue;
                const double peak = peak_of(run.machine, Peak(p));
                have_peaks = have_peaks && peak > 0;
                if (peak > 0) peak_s += 2.0 * macs[p] / (peak * 1e9);
            }
            run.r_peak = have_peaks && pass_ops > 0 ? peak_s * run.prefill.mean / pp : 0;
            run.r_bw = run.gbps / run.machine.read_gb_per_s;
            run.r_bw_median = run.machine.read_gb_per_s_median > 0 ? run.gbps / run.machine.read_gb_per_s_median : 0;
            runs.push_back(run);
        }
    }

    if (json) {  // one object per thread count
        for (const Run& r : runs)
            std::printf(
                "{\"model\": %s, \"weights\": \"%s\", \"threads\": %d, \"target\": \"%s\", \"act_bits\": %d, "
                "\"prefill\": {\"tokens\": %d, \"tok_per_s\": %.2f, \"tok_per_s_sd\": %.2f, "
                "\"gops\": %.4f, \"ratio_to_peak\": %.3f, \"peak\": \"%s\"}, "
                "\"decode\": {\"tokens\": %d, \"tok_per_s\": %.2f, \"tok_per_s_sd\": %.2f, "
                "\"gb_per_s\": %.2f, \"ratio_to_bandwidth\": %.3f, \"ratio_to_median_read\": %.3f}, "
                "\"pool_shrinks\": %llu, "
                "\"machine\": {\"read_gb_per_s\": %.2f, \"read_median_gb_per_s\": %.2f, \"int8_gops\": %.1f, "
                "\"fp32_gflops\": %.1f, "
                "\"amx_int8_gops\": %.1f, \"amx_int8_k32_gops\": %.1f, \"amx_bf16_gflops\": %.1f}, "
                "\"ceilings_moved\": %s, \"depth\": %d%s}\n",
                json_string(name).c_str(), model_weights_label(*model).c_str(), r.threads,
                kernel_target_name().c_str(), act_bits, pp, r.prefill.mean, r.prefill.sd, r.gops, r.r_peak,
                peak_name.c_str(), tg,
                r.decode.mean, r.decode.sd, r.gbps, r.r_bw, r.r_bw_median, (unsigned long long)r.pool_shrinks,
                r.machine.read_gb_per_s, r.machine.read_gb_per_s_median,
                r.machine.int8_gops, r.machine.fp32_gflops, r.machine.amx_int8_gops,
                r.machine.amx_int8_k32_gops, r.machine.amx_bf16_gflops, r.ceilings_moved ? "true" : "false", r.depth,
                mask_json(r).c_str());
        return 0;
    }
    std::printf("model %s, weights %s, %.1f MiB%s, target %s\n", name.c_str(),
                model_weights_label(*model).c_str(), double(model_weight_bytes(*model)) / 1048576.0,
                act_bits == 16 && int8 ? ", 16-bit activations" : "", kernel_target_name().c_str());
    for (const Run& r : runs) {
        std::printf("threads %d: machine read %.1f GB/s (median pass %.1f), int8 %.0f GOPS, fp32 %.0f GFLOPS",
                    r.threads, r.machine.read_gb_per_s, r.machine.read_gb_per_s_median, r.machine.int8_gops,
                    r.machine.fp32_gflops);
        if (r.machine.amx_int8_gops > 0)
            std::printf(", AMX int8 %.0f GOPS (%.0f at K=32), AMX bf16 %.0f GFLOPS",
                        r.machine.amx_int8_gops, r.machine.amx_int8_k32_gops, r.machine.amx_bf16_gflops);
        std::printf("\n");
        const std::string at = r.depth ? " @ d" + std::to_string(r.depth) : "";
        std::printf("  pp%-5d%s %8.2f ± %6.2f tok/s  %7.1f GOPS  %5.1f%% of %s peak%s\n", pp, at.c_str(),
                    r.prefill.mean, r.prefill.sd, r.gops, 100 * r.r_peak, peak_name.c_str(),
                    r.depth ? " (matmuls only)" : "");
        std::printf("  tg%-5d%s %8.2f ± %6.2f tok/s  %7.1f GB/s  %5.1f%% of read bandwidth (%.1f%% of the median "
                    "pass)\n",
                    tg, at.c_str(), r.decode.mean, r.decode.sd, r.gbps, 100 * r.r_bw, 100 * r.r_bw_median);
        if (r.mask_steps > 0)
            std::printf("  json_schema mask %8.1f us/step  %5.2f%% of the decode step (%.1f ms; %ld steps, %d token "
                        "states, %d masks, compiled in %.2f s)\n",
                        1e6 * r.mask_seconds / double(r.mask_steps), 100 * r.mask_seconds / r.decode_seconds,
                        1e3 * r.decode_seconds / double(r.mask_steps), r.mask_steps, constraint->token_states(),
                        constraint->distinct_masks(), constraint->compile_seconds());
        if (r.ceilings_moved)
            std::printf("  (the machine's ceilings moved during the run: the probes before and after it differ by "
                        "more than 1.25x; the ratios use the higher of each)\n");
        if (r.pool_shrinks > 0)
            std::printf("  (threads lost their cores to other processes: %llu times the pool ran on one thread "
                        "for a while)\n",
                        (unsigned long long)r.pool_shrinks);
    }
    for (size_t i = 1; i < runs.size(); ++i)
        if (runs[i].depth == runs[0].depth)
            std::printf("scaling %d -> %d threads: prefill %.2fx, decode %.2fx\n", runs[0].threads,
                    runs[i].threads, runs[i].prefill.mean / runs[0].prefill.mean,
                    runs[i].decode.mean / runs[0].decode.mean);
    return 0;
}

}  // namespace staticlm::cli
