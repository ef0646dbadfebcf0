// Flags -> options for every subcommand (defaults derived from the model),
// the loading progress bar, and bounded reading of text files.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "staticlm/error.hpp"
#include "staticlm/tokenizer.hpp"
#include "commands.hpp"

namespace staticlm::cli {

KvType parse_kv(const std::string& kv, const std::string& flag) {
    if (const std::optional<KvType> t = parse_kv_type(kv)) return *t;
    throw UsageError(flag + " must be f16, f32 or q8, got '" + kv + "'");
}

namespace {

// --weights as given; else native for a GGUF file (its own formats, as
// llama.cpp runs it) and q8 for everything else.
std::string weights_flag(const Args& a) {
    if (a.has("weights")) return a.str("weights");
    if (a.has("synthetic") || !a.has("model")) return "q8";
    const std::filesystem::path model = a.str("model");
    std::error_code ec;
    return model.extension() == ".gguf" && !std::filesystem::is_directory(model, ec) ? "native" : "q8";
}

}  // namespace

bool native_weights_from_args(const Args& a) { return weights_flag(a) == "native"; }

WeightType weight_type_from_args(const Args& a) {
    const std::string w = weights_flag(a);
    if (w != "native") {
        if (const std::optional<WeightType> t = parse_weight_type(w)) return *t;
        std::string names;
        for (WeightType t : weight_types()) names += std::string(weight_type_name(t)) + ", ";
        throw UsageError(a.spelled("weights") + " must be " + names + "or native, got '" + w + "'");
    }
    if (a.has("synthetic") || !a.has("model"))
        throw UsageError(a.spelled("weights") + " native keeps a file's formats: it needs -m FILE, not --synthetic");
    return WeightType::q8;  // per matrix: LoadOptions::native_weights
}

int act_bits_from_args(const Args& a) {
    const int bits = a.integer("act-bits", 8);
    if (bits != 8 && bits != 16) throw UsageError(a.spelled("act-bits") + " must be 8 or 16, got " + std::to_string(bits));
    return bits;
}

bool thinking_from_args(const Args& a) {
    const std::string v = a.has("thinking") ? a.str("thinking") : "on";
    if (v != "on" && v != "off") throw UsageError(a.spelled("thinking") + " takes on or off, got '" + v + "'");
    return v == "on";
}

void check_threads_flag(int threads, const std::string& flag) {
    if (threads < 0) throw UsageError(flag + " must be >= 0 (0: all CPUs), got " + std::to_string(threads));
    if (threads > max_threads())
        throw UsageError(flag + " " + std::to_string(threads) + " is more than " + std::to_string(kMaxThreadsPerCpu) +
                         " x the " + std::to_string(available_cpus()) + " CPUs available to this process (at most " +
                         std::to_string(max_threads()) + ")");
}

int threads_from_args(const Args& a) {
    const int threads = a.integer("threads", 0);
    check_threads_flag(threads, a.spelled("threads"));
    return threads;
}

namespace {

void progress_bar(uint64_t done, uint64_t total) {
    const int width = 40;
    const int filled = total ? int(double(done) / double(total) * width) : width;
    std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%", filled, "########################################",
                 width - filled, "", total ? int(100.0 * double(done) / double(total)) : 100);
    if (done >= total) std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
}

std::vector<int> buckets_from_args(const Args& a, const std::string& name, int max_seq,
                                   const std::vector<int>& fallback) {
    if (!a.has(name)) return fallback;
    const std::vector<int> b = a.int_list(name, {});
    for (int q : b) {
        if (q < 1) throw UsageError(a.spelled(name) + ": block size " + std::to_string(q) + " must be >= 1");
        if (q > max_seq)
            throw UsageError(a.spelled(name) + ": block size " + std::to_string(q) + " is larger than the capacity " +
                             std::to_string(max_seq) + " (--max-seq/-c)");
    }
    return b;
}

float float_flag(const Args& a, const std::string& name, float fallback, double lo, double hi, bool lo_open,
                 const char* range) {
    if (!a.has(name)) return fallback;
    const double v = a.number(name, fallback);
    if (v < lo || v > hi || (lo_open && v == lo))
        throw UsageError(a.spelled(name) + " must be in " + range + ", got " + a.str(name));
    return float(v);
}

}  // namespace

void append_json_string(std::string& s, std::string_view text) {
    s += '"';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            s += '\\';
            s += ch;
        } else if (c == '\n') {
            s += "\\n";
        } else if (c < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof(esc), "\\u%04x", c);
            s += esc;
        } else {
            s += ch;
        }
    }
    s += '"';
}

std::string json_string(std::string_view text) {
    std::string s;
    append_json_string(s, text);
    return s;
}

void print_model_warnings(const Model& model) {
    for (const std::string& w : model_warnings(model)) std::fprintf(stderr, "staticlm: warning: %s\n", w.c_str());
}

std::shared_ptr<const Model> load_model_from_args(const Args& a) {
    const int threads = threads_from_args(a);
    if (a.has("synthetic")) {
        if (a.has("model")) throw UsageError("give -m/--model or --synthetic, not both");
        return synthetic_model(a.str("synthetic"), weight_type_from_args(a), 1, threads, act_bits_from_args(a));
    }
    if (!a.has("model")) throw UsageError("-m/--model DIR is required");
    LoadOptions lo;
    lo.weights = weight_type_from_args(a);
    lo.native_weights = native_weights_from_args(a);
    lo.act_bits = act_bits_from_args(a);
    lo.threads = threads;
    lo.prefer_tokenizer_json = a.has("prefer-json");
    if (isatty(2)) lo.progress = progress_bar;
    auto model = load_model(a.str("model"), lo);
    print_model_warnings(*model);
    return model;
}

SessionOptions session_options_from_args(const Args& a, const ModelConfig& config) {
    SessionOptions o;
    const int trained = config.max_position;
    o.max_seq = trained > 0 ? std::min(2048, trained) : 2048;
    if (a.has("max-seq")) {
        o.max_seq = a.integer("max-seq", o.max_seq);
        if (o.max_seq < 1) throw UsageError(a.spelled("max-seq") + " must be >= 1, got " + a.str("max-seq"));
        if (trained > 0 && o.max_seq > trained)
            std::fprintf(stderr,
                         "staticlm: warning: %s %d exceeds the model's trained context (max_position_embeddings "
                         "%d): text past it may degrade\n",
                         a.spelled("max-seq").c_str(), o.max_seq, trained);
    }
    o.prefill_buckets = buckets_from_args(a, "prefill-buckets", o.max_seq, default_prefill_buckets(o.max_seq));
    o.append_buckets = buckets_from_args(a, "append-buckets", o.max_seq, default_append_buckets(o.max_seq));
    o.kv = parse_kv(a.str("kv", "f16"), a.spelled("kv"));
    o.threads = threads_from_args(a);
    o.ring_sliding = a.has("ring");
    // Speculation verifies drafts on every row's logits.
    o.all_logits = speculation_from_args(a).max_draft > 0;
    return o;
}

SpeculationOptions speculation_from_args(const Args& a) {
    SpeculationOptions o;
    if (!a.has("spec")) return o;
    const std::string v = a.str("spec");
    const std::string bad = a.spelled("spec") + " takes ngram or ngram:N with N in 1.." + std::to_string(kMaxDraft) +
                            " (the most tokens drafted per step), got '" + v + "'";
    if (v == "ngram") {
        o.max_draft = kDefaultDraft;
        return o;
    }
    if (v.rfind("ngram:", 0) != 0) throw UsageError(bad);
    const std::string n = v.substr(6);
    if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos) throw UsageError(bad);
    const int draft = std::stoi(n);
    if (draft < 1 || draft > kMaxDraft) throw UsageError(bad);
    o.max_draft = draft;
    return o;
}

GenerateOptions generate_options_from_args(const Args& a, const ModelConfig& config, int default_max_tokens) {
    GenerateOptions g;
    g.max_tokens = a.integer("n-predict", default_max_tokens);
    if (g.max_tokens < -1)
        throw UsageError(a.spelled("n-predict") + " must be >= 0, or -1 for no limit, got " + a.str("n-predict"));
    SamplingOptions& s = g.sampling;
    s = suggested_sampling(config);
    const double fmax = std::numeric_limits<float>::max();
    s.temperature = float_flag(a, "temp", s.temperature, -fmax, fmax, false, "float range");
    s.top_k = a.integer("top-k", s.top_k);
    if (s.top_k < 0) throw UsageError(a.spelled("top-k") + " must be >= 0 (0: off), got " + a.str("top-k"));
    s.top_p = float_flag(a, "top-p", s.top_p, 0.0, 1.0, true, "(0, 1]");
    s.min_p = float_flag(a, "min-p", s.min_p, 0.0, 1.0, false, "[0, 1]");
    s.repetition_penalty =
        float_flag(a, "repeat-penalty", s.repetition_penalty, kMinRepetitionPenalty, kMaxRepetitionPenalty, false,
                   "[0.001, 1000]");
    s.repetition_window = a.integer("repeat-last-n", s.repetition_window);
    if (s.repetition_window < 0)
        throw UsageError(a.spelled("repeat-last-n") + " must be >= 0, got " + a.str("repeat-last-n"));
    if (a.has("seed")) {
        const std::string v = a.str("seed");
        char* end = nullptr;
        errno = 0;
        const unsigned long long seed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || v[0] == '-' || *end || errno)
            throw UsageError(a.spelled("seed") + " expects an integer in [0, 2^64), got '" + v + "'");
        s.seed = seed;
    }
    for (const std::string& stop : a.all("stop")) {
        if (stop.empty()) throw UsageError("--stop needs a non-empty text");
        g.stop_strings.push_back(stop);
    }
    // A stop id no tokenizer produces: generation then ends only by -n, a stop string or capacity.
    if (a.has("ignore-eos")) g.stop_ids = {-1};
    g.speculation = speculation_from_args(a);
    return g;
}

std::string read_text_input(const std::string& path, const std::string& flag, size_t max_bytes) {
    const bool is_stdin = path == "-";
    FILE* f = stdin;
    if (!is_stdin) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            throw Error(ErrorKind::io, flag + " " + path + ": " + std::strerror(errno));
        if (S_ISDIR(st.st_mode)) throw Error(ErrorKind::io, flag + " " + path + ": is a directory, not a text file");
        if (!S_ISREG(st.st_mode))
            throw Error(ErrorKind::io, flag + " " + path + ": not a regular file (devices and pipes are refused; " +
                                           "use " + flag + " - to read stdin)");
        if (uint64_t(st.st_size) > max_bytes)
            throw Error(ErrorKind::input, flag + " " + path + ": " + std::to_string(st.st_size) +
                                                 " bytes, more than the limit of " + std::to_string(max_bytes) +
                                                 " bytes (" + std::to_string(max_bytes >> 20) + " MiB)");
        f = std::fopen(path.c_str(), "rb");
        if (!f) throw Error(ErrorKind::io, flag + " " + path + ": " + std::strerror(errno));
    }
    std::string text;
    char buf[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
        if (text.size() + n > max_bytes) {
            if (!is_stdin) std::fclose(f);
            throw Error(ErrorKind::input, flag + " " + (is_stdin ? std::string("(stdin)") : path) +
                                                 ": more than the limit of " + std::to_string(max_bytes) +
                                                 " bytes (" + std::to_string(max_bytes >> 20) + " MiB)");
        }
        text.append(buf, n);
    }
    const bool failed = std::ferror(f) != 0;
    if (!is_stdin) std::fclose(f);
    if (failed) throw Error(ErrorKind::io, flag + " " + path + ": read error");
    return text;
}

size_t max_text_bytes(const Tokenizer& tok, int tokens) {
    size_t longest = 1;
    for (int id = 0; id < tok.vocab_size(); ++id) longest = std::max(longest, tok.piece(id).size());
    return size_t(std::max(tokens, 0)) * longest * 4;
}

}  // namespace staticlm::cli
