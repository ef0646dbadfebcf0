// `staticlm batch`: JSONL prompts -> JSONL results (resumable, sharded) and
// `staticlm batch --merge`. A thin wrapper over include/staticlm/batch.hpp:
// flags and environment in, progress on stderr.
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/error.hpp"
#include "staticlm/model.hpp"
#include "commands.hpp"

namespace staticlm::cli {

namespace {

// A non-negative integer from the environment; nullopt-like -1 when unset.
long env_index(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return -1;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 0)
        throw UsageError(std::string("environment variable ") + name + "='" + v +
                         "' is not a non-negative integer");
    return n;
}

// --shard I/N, else Slurm array variables, else a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX with --shards N; one shard when none of these is set.
ShardSpec shard_from(const Args& a) {
    const int shards = a.has("shards") ? a.integer("shards", 0) : 0;
    if (a.has("shards") && shards < 1) throw UsageError("--shards must be >= 1");
    if (a.has("shard")) {
        if (a.has("shards")) throw UsageError("give --shard I/N or --shards N, not both");
        try {
            return parse_shard(a.str("shard"));
        } catch (const Error& e) {
            throw UsageError(std::string("--") + e.what());
        }
    }
    ShardSpec s;
    if (const long id = env_index("SLURM_ARRAY_TASK_ID"); id >= 0) {
        const long min = std::max(0L, env_index("SLURM_ARRAY_TASK_MIN"));
        const long count = shards ? shards : env_index("SLURM_ARRAY_TASK_COUNT");
        if (count < 1) throw UsageError("SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT: give --shards N");
        s = {int(id - min), int(count)};
        if (id < min || s.index >= s.count)
            throw UsageError("Slurm array task " + std::to_string(id) + " (min " + std::to_string(min) +
                             ") is not in 0.." + std::to_string(count - 1) +
                             ": use --array=0-" + std::to_string(count - 1));
        return s;
    }
    if (const long idx = env_index("JOB_COMPLETION_INDEX"); idx >= 0) {
        if (!shards) throw UsageError("JOB_COMPLETION_INDEX is set: give --shards N (the Job's completions)");
        if (idx >= shards)
            throw UsageError("JOB_COMPLETION_INDEX=" + std::to_string(idx) + " is not below --shards " +
                             std::to_string(shards));
        return {int(idx), shards};
    }
    if (shards > 1)
        throw UsageError("--shards N needs --shard I/N, SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX");
    return s;
}

SyncPolicy sync_from(const Args& a) {
    SyncPolicy p;
    const std::string s = a.str("sync", "1");
    if (s == "always") {
        p.mode = SyncPolicy::Mode::every_line;
    } else if (s == "end") {
        p.mode = SyncPolicy::Mode::end;
    } else {
        p.seconds = a.number("sync", 1.0);
        if (!(p.seconds >= 0)) throw UsageError("--sync must be always, end or seconds >= 0");
    }
    return p;
}

std::string duration(double s) {
    char buf[32];
    if (!std::isfinite(s) || s < 0) return "?";
    if (s < 60)
        std::snprintf(buf, sizeof(buf), "%.0fs", s);
    else if (s < 3600)
        std::snprintf(buf, sizeof(buf), "%dm%02ds", int(s) / 60, int(s) % 60);
    else
        std::snprintf(buf, sizeof(buf), "%dh%02dm", int(s) / 3600, int(s) / 60 % 60);
    return buf;
}

// A bar redrawn in place on a terminal; otherwise a line every 5% or 30 s.
struct Progress {
    bool tty = isatty(2);
    bool quiet = false;
    double last = -1;
    int last_step = -1;

    void operator()(const BatchProgress& p) {
        if (quiet) return;
        const int todo = p.total - p.skipped;
        const bool end = p.done >= todo;
        const double rate = p.seconds > 0 ? p.done / p.seconds : 0;
        const double eta = rate > 0 ? (todo - p.done) / rate : NAN;
        const double tok_s = p.seconds > 0 ? double(p.generated_tokens) / p.seconds : 0;
        if (tty) {
            if (!end && p.seconds - last < 0.1) return;
            last = p.seconds;
            const int width = 30;
            const int filled = todo ? int(double(p.done) / todo * width) : width;
            std::fprintf(stderr, "\r[%.*s%*s] %d/%d  %d err  %.1f tok/s  ETA %s\033[K", filled,
                         "##############################", width - filled, "", p.done, todo,
                         p.errors, tok_s, duration(eta).c_str());
            if (end) std::fputs("\n", stderr);
        } else {
            const int step = todo ? p.done * 20 / todo : 20;
            if (!end && step == last_step && p.seconds - last < 30) return;
            last_step = step;
            last = p.seconds;
            std::fprintf(stderr, "staticlm batch: %d/%d done, %d errors, %.1f tok/s, ETA %s\n",
                         p.done, todo, p.errors, tok_s, duration(eta).c_str());
        }
        std::fflush(stderr);
    }
};

// --memory: bytes with an optional K, M or G (powers of 1024).
uint64_t memory_from(const Args& a) {
    if (!a.has("memory")) return 0;
    const std::string v = a.str("memory");
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    double mult = 1;
    const std::string suffix(end ? end : "");
    if (suffix == "K" || suffix == "k") mult = 1024.0;
    else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024;
    else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024 * 1024;
    else if (!suffix.empty()) throw UsageError("--memory '" + v + "' is not a byte count (e.g. 512M, 8G)");
    if (!(x > 0) || x * mult > 1.8e19) throw UsageError("--memory '" + v + "' must be a positive byte count");
    return uint64_t(x * mult);
}

std::string mib(uint64_t bytes) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
    return buf;
}

// `staticlm batch --plan`: what the run would hold and do, and a projection
// from one measured prefill step and one measured decode step.
int print_plan(BatchJob& job, const Model& model, BatchEngine& engine, const BatchSessionOptions& bo,
               const BatchMemory& mem) {
    const BatchJob::Plan p = job.plan(model, engine);
    std::printf("staticlm batch --plan\n");
    std::printf("  requests          %d usable (%d scoring, %d generating) of %d in shard %d/%d (the output is not read)\n",
                p.requests, p.scoring, p.requests - p.scoring, job.shard_requests(), job.shard().index,
                job.shard().count);
    // A slot's cache over its max_seq positions (ring layers included, so
    // with --ring it is an average).
    std::printf("  sequences/batch   %d (--slots), max_seq %d, KV %s (%.1f KiB per position of a slot)\n",
                bo.slots, bo.session.max_seq, kv_type_name(bo.session.kv),
                double(mem.slot_caches) / double(std::max(1, bo.slots)) / double(bo.session.max_seq) / 1024.0);
    std::printf("  prefix pool       %d tokens (%s), longest prefix it can hold %d\n", mem.pool_tokens,
                mib(mem.pool).c_str(), engine.prefix_limit());
    std::printf("  shared prefixes   %d, used by %d requests, longest %d tokens\n", p.prefixes, p.sharing_requests,
                p.longest_prefix);
    std::printf("  prompt rows       %ld with sharing, %ld without (%.1f%%)\n", p.shared_prompt_positions,
                p.prompt_positions,
                p.prompt_positions ? 100.0 * double(p.shared_prompt_positions) / double(p.prompt_positions) : 0.0);
    std::printf("  memory            %s: slot caches %s + scoring session %s + prefix pool %s (budget %s) + weights %s\n",
                mib(mem.total()).c_str(), mib(mem.slot_caches).c_str(), mib(mem.scorer_cache).c_str(),
                mib(mem.pool).c_str(), mem.budget ? mib(mem.budget).c_str() : "unknown",
                mib(uint64_t(model_weight_bytes(model))).c_str());
    const StepTimes st = engine.measure_steps();
    const double row_s = st.prefill_rows ? st.prefill_seconds / st.prefill_rows : 0;
    const double step_s = st.decode_seconds;
    // Every generation is counted at its n_predict (an upper bound on its time), decoded with all slots busy.
    const double decode = double(p.max_new_tokens) / double(std::max(1, bo.slots)) * step_s;
    const double scoring = double(p.score_positions) * row_s;
    auto per_hour = [&](long prompt_rows) {
        const double t = double(prompt_rows) * row_s + scoring + decode;
        return t > 0 ? double(p.requests) * 3600.0 / t : 0.0;
    };
    std::printf("  measured          prefill %.1f rows/s (one step of %d rows), decode step of %d rows %.2f ms\n",
                row_s > 0 ? 1.0 / row_s : 0.0, st.prefill_rows, st.decode_rows, step_s * 1e3);
    std::printf("  projected         %.0f items/hour with sharing, %.0f without (model: measured steps x planned rows;\n"
                "                    generations at n_predict tokens, so an upper bound on time)\n",
                per_hour(p.shared_prompt_positions), per_hour(p.prompt_positions));
    return 0;
}

int cmd_merge(const Args& a) {
    if (!a.has("input") || !a.has("output"))
        throw UsageError("batch --merge needs --input FILE and --output FILE (and the shard files or --shards N)");
    std::vector<std::string> files = a.positional();
    if (files.empty()) {
        if (!a.has("shards")) throw UsageError("batch --merge needs the shard files or --shards N");
        const int n = a.integer("shards", 0);
        if (n < 1) throw UsageError("--shards must be >= 1");
        for (int i = 0; i < n; ++i) files.push_back(shard_output_path(a.str("output"), {i, n}));
    }
    RequestLimits limits;
    limits.max_line_bytes = size_t(a.integer("max-line-bytes", int(limits.max_line_bytes)));
    const MergeSummary m = merge_results(a.str("input"), files, a.str("output"), limits);
    std::fprintf(stderr, "staticlm batch: merged %d results (%d errors) from %zu files into %s\n",
                 m.requests, m.errors, files.size(), a.str("output").c_str());
    return 0;
}

// --verify-against OTHER: compares --output (or its shard files) with OTHER by
// digest; prints one line per id that differs or is missing, exit 1 if any.
int cmd_verify_against(const Args& a) {
    if (!a.has("input") || !a.has("output"))
        throw UsageError("batch --verify-against needs --input FILE and --output FILE (the run to check)");
    if (a.has("merge")) throw UsageError("give --merge or --verify-against, not both");
    std::vector<std::string> ours;
    const int n = a.has("shards") ? a.integer("shards", 0) : 1;
    if (n < 1) throw UsageError("--shards must be >= 1");
    for (int i = 0; i < n; ++i) ours.push_back(shard_output_path(a.str("output"), {i, n}));
    const std::string other = a.str("verify-against");
    RequestLimits limits;
    limits.max_line_bytes = size_t(a.integer("max-line-bytes", int(limits.max_line_bytes)));
    const VerifyReport r = verify_results(a.str("input"), ours, {other}, limits);
    auto name = [](const std::string& key) {
        return key[0] == '=' ? "id '" + key.substr(1) + "'" : "input line " + key.substr(1);
    };
    const std::string mine = n > 1 ? a.str("output") + " (" + std::to_string(n) + " shards)" : a.str("output");
    for (const std::string& k : r.differ) std::printf("differ: %s\n", name(k).c_str());
    for (const std::string& k : r.missing_ours) std::printf("missing: %s has no result in %s\n", name(k).c_str(), mine.c_str());
    for (const std::string& k : r.missing_theirs)
        std::printf("missing: %s has no result in %s\n", name(k).c_str(), other.c_str());
    for (const std::string& l : r.altered) std::printf("bad line: %s\n", l.c_str());
    std::fflush(stdout);
    std::fprintf(stderr,
                 "staticlm batch: verify %s against %s: %d requests, %d same, %zu differ, %zu missing, %zu bad lines%s\n",
                 mine.c_str(), other.c_str(), r.requests, r.same, r.differ.size(),
                 r.missing_ours.size() + r.missing_theirs.size(), r.altered.size(), r.ok() ? "" : " (FAILED)");
    return r.ok() ? 0 : 1;
}

}  // namespace

int cmd_batch(const Args& a) {
    if (a.has("verify-against")) return cmd_verify_against(a);
    if (a.has("merge")) return cmd_merge(a);
    if (!a.positional().empty()) throw UsageError("batch takes no positional arguments (did you mean --merge?)");
    if (!a.has("input") || !a.has("output"))
        throw UsageError("batch needs --input FILE and --output FILE ('-' for stdin / stdout)");

    BatchJobOptions o;
    o.input = a.str("input");
    o.shard = shard_from(a);
    o.output = shard_output_path(a.str("output"), o.shard);
    try {
        o.result.format = parse_result_format(a.str("format", "native"));
    } catch (const Error& e) {
        throw UsageError(std::string("--") + e.what());
    }
    {  // "model" of OpenAI response bodies: the model file or directory name
        std::filesystem::path m = a.str("model");
        if (!m.has_filename()) m = m.parent_path();
        if (!m.filename().empty()) o.result.model = m.filename().string();
    }
    // Sampling and session defaults come from the model (generation_config.json,
    // its trained context), so the model loads before the job reads its files.
    auto model = load_model_from_args(a);
    const ModelConfig& config = model_config(*model);
    o.defaults.generate = generate_options_from_args(a, config, 256);
    o.defaults.base_seed = o.defaults.generate.sampling.seed;
    const int max_line = a.integer("max-line-bytes", int(o.limits.max_line_bytes));
    if (max_line < 1) throw UsageError("--max-line-bytes must be >= 1");
    o.limits.max_line_bytes = size_t(max_line);
    o.limits.max_depth = a.integer("max-depth", o.limits.max_depth);
    if (o.limits.max_depth < 2) throw UsageError("--max-depth must be >= 2");
    o.sync = sync_from(a);
    o.chat.system = a.str("system");
    if (a.has("date")) o.chat.date = a.str("date");
    o.chat.thinking = thinking_from_args(a);
    if (a.has("model")) o.chat_format = detect_chat_format(a.str("model"));
    Progress progress;
    progress.quiet = a.has("quiet");
    o.progress = [&progress](const BatchProgress& p) { progress(p); };
    BatchSessionOptions bo;
    bo.session = session_options_from_args(a, config);
    bo.slots = a.integer("slots", 16);
    if (bo.slots < 1) throw UsageError("--slots must be >= 1");
    // --spec: every request drafts up to N tokens a step (their rows are sized here).
    bo.max_draft = o.defaults.generate.speculation.max_draft;
    PrefixOptions po;
    po.pool_tokens = -1;  // --max-seq tokens unless --prefix-pool says otherwise
    if (a.has("prefix-pool")) {
        po.pool_tokens = a.integer("prefix-pool", 0);
        if (po.pool_tokens < 0) throw UsageError("--prefix-pool must be >= 0 tokens (0: no sharing)");
    }
    po.memory_budget = memory_from(a);
    o.prefix_min = a.integer("prefix-min", 32);
    if (o.prefix_min < 1) throw UsageError("--prefix-min must be >= 1");
    // A pool or caches that cannot fit are refused before anything is read or written.
    const BatchMemory mem = batch_memory(*model, bo, po);
    check_batch_memory(mem);

    if (a.has("plan")) o.output = "-";  // the plan opens no output: every request of the shard counts
    BatchJob job(std::move(o));
    if (a.has("plan")) {
        auto engine = make_batched_engine(model, bo, po);
        return print_plan(job, *model, *engine, bo, mem);
    }
    if (!progress.quiet)
        std::fprintf(stderr, "staticlm batch: %d requests, shard %d/%d holds %d, %d already in %s, %d to run\n",
                     job.input_lines(), job.shard().index, job.shard().count,
                     job.shard_requests(), job.shard_requests() - job.pending(),
                     job.output_path().c_str(), job.pending());
    if (!progress.quiet && job.torn_bytes_dropped())
        std::fprintf(stderr, "staticlm batch: cut an incomplete last line (%zu bytes) from %s: it is redone\n",
                     job.torn_bytes_dropped(), job.output_path().c_str());
    if (job.pending() == 0) return 0;
    auto engine = make_batched_engine(model, bo, po);
    const BatchSummary s = job.run(*model, *engine);
    if (!progress.quiet) {
        const BatchProgress& p = s.progress;
        std::fprintf(stderr, "staticlm batch: wrote %d results (%d errors), %ld tokens in %.1f s (%.1f tok/s, %.0f items/hour)\n",
                     p.done, p.errors, p.generated_tokens, p.seconds,
                     p.seconds > 0 ? double(p.generated_tokens) / p.seconds : 0.0,
                     p.seconds > 0 ? double(p.done) * 3600.0 / p.seconds : 0.0);
        std::fprintf(stderr, "staticlm batch: prompt rows computed %ld, copied from %ld shared prefixes %ld\n",
                     p.prompt_positions, p.prefixes, p.shared_positions);
        if (bo.max_draft > 0)
            std::fprintf(stderr, "staticlm batch: speculation ngram:%d: %ld of %ld drafted tokens accepted (%.1f%%)\n",
                         bo.max_draft, p.accepted_tokens, p.drafted_tokens,
                         p.drafted_tokens > 0 ? 100.0 * double(p.accepted_tokens) / double(p.drafted_tokens) : 0.0);
    }
    return 0;
}

}  // namespace staticlm::cli
