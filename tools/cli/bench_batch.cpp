// `staticlm bench --batch 1,4,16,32`: aggregate decode tok/s of B sequences
// decoded together (BatchSession, one M = B matmul per weight) for each B in
// one run, next to the prefill of one sequence through Session and through
// BatchSession (the batched runtime must not change prefill).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "staticlm/batch_session.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "commands.hpp"

namespace staticlm::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process (all threads): the machine is shared, so a rate
// per CPU-second says what the work costs when other processes take cores.
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Stat {
    double mean = 0, sd = 0;
};

Stat stat(const std::vector<double>& v) {
    Stat s;
    if (v.empty()) return s;
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.sd = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0.0;
    return s;
}

struct BatchRow {
    int batch = 0;
    Stat tok_s;          // aggregate decode tok/s (wall)
    double tok_cpu = 0;  // decoded tokens per CPU-second
    double gbps = 0;     // weight + K/V bytes read per second
};

}  // namespace

int cmd_bench_batch(const Args& a) {
    const bool json = a.has("json");
    const std::vector<int> batches = a.int_list("batch", {1, 4, 16, 32});
    for (int b : batches)
        if (b < 1) throw UsageError("--batch sizes must be >= 1, got " + std::to_string(b));
    const std::vector<int> thread_list = a.int_list("threads", {0});
    if (thread_list.size() != 1 || thread_list[0] < 0)
        throw UsageError("bench --batch takes one --threads N");
    const int pp = a.integer("pp", 512);
    const int tg = a.integer("tg", 32);
    const int ctx = a.integer("batch-ctx", 64);
    const int reps = a.integer("reps", 3);
    if (pp < 1 || tg < 1 || ctx < 1 || reps < 1)
        throw UsageError("--pp, --tg, --batch-ctx and --reps must be >= 1");

    std::shared_ptr<const Model> model;
    std::string name;
    if (a.has("model")) {
        model = load_model_from_args(a);
        name = a.str("model");
    } else {
        name = a.str("synthetic", "llama-3.2-1b");
        model = synthetic_model(name, weight_type_from_args(a), 1, thread_list[0], act_bits_from_args(a));
    }
    const ModelConfig& c = model_config(*model);
    auto ids = [&](int n, int offset) {
        std::vector<int> v{};
        v.resize(size_t(n));
        for (int i = 0; i < n; ++i) v[size_t(i)] = int((uint64_t(i + offset) * 2654435761u) % uint64_t(c.vocab));
        return v;
    };

    // Prefill of one sequence: Session and BatchSession run the same steps.
    SessionOptions so = session_options_from_args(a.with("threads", std::to_string(thread_list[0])), c);
    so.max_seq = std::max(pp, ctx + tg);
    so.prefill_buckets = {pp};
    so.append_buckets = {std::min(16, so.max_seq)};  // unused; must fit max_seq
    const std::vector<int> prompt = ids(pp, 0);
    std::vector<double> pp_session, pp_batch;
    double pp_cpu = 0;  // CPU seconds of the Session prefills
    int threads = 0;
    {
        Session session(model, so);
        threads = session.threads();
        session.prefill(std::span<const int>(prompt.data(), size_t(std::min(pp, 16))));  // warm-up
        for (int r = 0; r < reps; ++r) {
            const double c0 = cpu_seconds();
            const auto t0 = Clock::now();
            session.prefill(prompt);
            pp_session.push_back(pp / seconds_since(t0));
            pp_cpu += cpu_seconds() - c0;
        }
        BatchSession bs(model, {1, so});
        for (int r = 0; r < reps; ++r) {
            const auto t0 = Clock::now();
            bs.prefill(0, prompt);
            pp_batch.push_back(pp / seconds_since(t0));
        }
    }

    // Decode: B sequences of ctx prompt tokens each, then tg steps of B rows, reps times
    // (each rep rewinds the tg tokens, so every rep decodes the same positions).
    SessionOptions bo = so;
    bo.max_seq = ctx + tg;
    bo.prefill_buckets = {ctx};
    bo.append_buckets = {std::min(16, bo.max_seq)};
    std::vector<BatchRow> rows;
    const double weight_bytes = model_matmul_bytes(*model);
    for (int B : batches) {
        BatchSession bs(model, {B, bo});
        std::vector<int> slots(static_cast<size_t>(B)), next(static_cast<size_t>(B));
        // Greedy picks as batch jobs make them: one Sampler per sequence
        // (the kernels' argmax), here one sequence after another (batch jobs
        // run the slots' samplers on the thread team).
        std::vector<Sampler> samplers(size_t(B), Sampler(c.vocab, SamplingOptions{}));
        for (int s = 0; s < B; ++s) {
            slots[size_t(s)] = s;
            next[size_t(s)] = samplers[size_t(s)].sample(bs.prefill(s, ids(ctx, 7919 * s)), {});
        }
        std::vector<double> tps;
        double cpu = 0, wall = 0;
        for (int r = 0; r < reps; ++r) {
            const double c0 = cpu_seconds();
            const auto t0 = Clock::now();
            for (int i = 0; i < tg; ++i) {
                bs.decode(slots, next);
                for (int s = 0; s < B; ++s) next[size_t(s)] = samplers[size_t(s)].sample(bs.logits(s), {});
            }
            const double w = seconds_since(t0);
            cpu += cpu_seconds() - c0;
            wall += w;
            tps.push_back(double(B) * tg / w);
            for (int s = 0; s < B; ++s) bs.rewind(s, tg);
        }
        BatchRow row;
        row.batch = B;
        row.tok_s = stat(tps);
        row.tok_cpu = cpu > 0 ? double(B) * tg * reps / cpu : 0;
        const double kv = double(bs.cache_bytes()) / B / bo.max_seq * (ctx + tg / 2.0) * B;
        row.gbps = (weight_bytes + kv) * (double(tg) * reps / wall) / 1e9;
        rows.push_back(row);
    }
    const BatchRow& base = rows.front();
    const Stat pps = stat(pp_session), ppb = stat(pp_batch);
    if (json) {
        std::printf("{\"model\": %s, \"weights\": \"%s\", \"threads\": %d, \"target\": \"%s\", "
                    "\"context\": %d, \"tg\": %d, \"reps\": %d, "
                    "\"prefill\": {\"tokens\": %d, \"session_tok_per_s\": %.2f, \"session_sd\": %.2f, "
                    "\"session_tok_per_cpu_s\": %.2f, "
                    "\"batch_session_tok_per_s\": %.2f, \"batch_session_sd\": %.2f}, \"decode\": [",
                    json_string(name).c_str(), model_weights_label(*model).c_str(), threads,
                    kernel_target_name().c_str(), ctx, tg, reps, pp, pps.mean, pps.sd, pp * reps / pp_cpu,
                    ppb.mean, ppb.sd);
        for (size_t i = 0; i < rows.size(); ++i)
            std::printf("%s{\"batch\": %d, \"tok_per_s\": %.2f, \"tok_per_s_sd\": %.2f, \"speedup\": %.2f, "
                        "\"tok_per_cpu_s\": %.2f, \"speedup_cpu\": %.2f, \"gb_per_s\": %.2f}",
                        i ? ", " : "", rows[i].batch, rows[i].tok_s.mean, rows[i].tok_s.sd,
                        rows[i].tok_s.mean / base.tok_s.mean, rows[i].tok_cpu, rows[i].tok_cpu / base.tok_cpu,
                        rows[i].gbps);
        std::printf("]}\n");
        return 0;
    }
    std::printf("model %s, weights %s, target %s, %d threads; decode: context %d, %d steps x %d reps\n",
                name.c_str(), model_weights_label(*model).c_str(), kernel_target_name().c_str(),
                threads, ctx, tg, reps);
    std::printf("prefill pp%d: Session %.2f ± %.2f tok/s (%.2f tok/CPU-s), BatchSession %.2f ± %.2f tok/s (%.2fx)\n",
                pp, pps.mean, pps.sd, pp * reps / pp_cpu, ppb.mean, ppb.sd, ppb.mean / pps.mean);
    std::printf("%6s %22s %10s %14s %10s %9s\n", "batch", "decode tok/s (all)", "speedup", "tok/CPU-s",
                "speedup", "GB/s");
    for (const BatchRow& r : rows)
        std::printf("%6d %12.2f ± %7.2f %9.2fx %14.2f %9.2fx %9.1f\n", r.batch, r.tok_s.mean, r.tok_s.sd,
                    r.tok_s.mean / base.tok_s.mean, r.tok_cpu, r.tok_cpu / base.tok_cpu, r.gbps);
    return 0;
}

}  // namespace staticlm::cli
