// Flags -> options for every subcommand, and the loading progress bar.
#include <unistd.h>

#include <cstdio>

#include "staticlm/error.hpp"
#include "commands.hpp"

namespace staticlm::cli {

const std::vector<std::string>& common_flags() {
    static const std::vector<std::string> f = {
        "model", "synthetic", "prompt", "prompt-file", "n-predict", "weights", "kv", "threads",
        "max-seq", "prefill-buckets", "append-buckets", "temp", "top-k", "top-p", "min-p",
        "repeat-penalty", "seed", "system", "date", "stop", "pp", "tg", "reps", "reference",
        "max-peir", "min-top1", "file", "ctx", "dump"};
    return f;
}

const std::vector<std::string>& common_switches() {
    static const std::vector<std::string> s = {"echo", "add-special", "json", "ring", "prefer-json"};
    return s;
}

WeightType weight_type_from_args(const Args& a) {
    const std::string w = a.str("weights", "q8");
    if (w == "q8") return WeightType::q8;
    if (w == "f16") return WeightType::f16;
    if (w == "bf16") return WeightType::bf16;
    if (w == "f32") return WeightType::f32;
    throw UsageError("--weights must be q8, f16, bf16 or f32, got '" + w + "'");
}

namespace {

void progress_bar(uint64_t done, uint64_t total) {
    const int width = 40;
    const int filled = total ? int(double(done) / double(total) * width) : width;
    std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%", filled,
                 "########################################", width - filled, "",
                 total ? int(100.0 * double(done) / double(total)) : 100);
    if (done >= total) std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
}

}  // namespace

void print_model_warnings(const Model& model) {
    for (const std::string& w : model_warnings(model)) std::fprintf(stderr, "staticlm: warning: %s\n", w.c_str());
}

std::shared_ptr<const Model> load_model_from_args(const Args& a) {
    const int threads = a.integer("threads", 0);
    if (threads < 0) throw UsageError("--threads must be >= 0");
    if (a.has("synthetic")) {
        if (a.has("model")) throw UsageError("give --model or --synthetic, not both");
        return synthetic_model(a.str("synthetic"), weight_type_from_args(a), 1, threads);
    }
    if (!a.has("model")) throw UsageError("--model DIR is required");
    LoadOptions lo;
    lo.weights = weight_type_from_args(a);
    lo.threads = threads;
    if (isatty(2)) lo.progress = progress_bar;
    auto model = load_model(a.str("model"), lo);
    print_model_warnings(*model);
    return model;
}

SessionOptions session_options_from_args(const Args& a) {
    SessionOptions o;
    o.max_seq = a.integer("max-seq", o.max_seq);
    o.prefill_buckets = a.int_list("prefill-buckets", o.prefill_buckets);
    o.append_buckets = a.int_list("append-buckets", o.append_buckets);
    const std::string kv = a.str("kv", "f16");
    if (kv == "f16")
        o.kv = KvType::f16;
    else if (kv == "f32")
        o.kv = KvType::f32;
    else
        throw UsageError("--kv must be f16 or f32, got '" + kv + "'");
    o.threads = a.integer("threads", 0);
    if (o.threads < 0) throw UsageError("--threads must be >= 0");
    o.ring_sliding = a.has("ring");
    return o;
}

GenerateOptions generate_options_from_args(const Args& a, int default_max_tokens) {
    GenerateOptions g;
    g.max_tokens = a.integer("n-predict", default_max_tokens);
    if (g.max_tokens < 0) throw UsageError("--n-predict must be >= 0");
    g.sampling.temperature = float(a.number("temp", 0.8));
    g.sampling.top_k = a.integer("top-k", 40);
    g.sampling.top_p = float(a.number("top-p", 0.95));
    g.sampling.min_p = float(a.number("min-p", 0.05));
    g.sampling.repetition_penalty = float(a.number("repeat-penalty", 1.0));
    g.sampling.seed = uint64_t(a.integer("seed", 42));
    if (a.has("stop")) g.stop_strings.push_back(a.str("stop"));
    return g;
}

}  // namespace staticlm::cli
