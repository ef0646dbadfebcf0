// `staticlm verify` and `staticlm perplexity`: flags in, tables out. The
// checks themselves are in runtime/verify.cpp (include/staticlm/verify.hpp);
// this file only parses, prints and turns budgets into the exit code.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "staticlm/error.hpp"
#include "staticlm/model.hpp"
#include "staticlm/verify.hpp"
#include "commands.hpp"

namespace staticlm::cli {

namespace {

// A percentage flag: "0.01" or "0.01%" both mean 0.01 % (returned as a fraction).
double percent_flag(const Args& a, const std::string& name, double fallback_fraction) {
    if (!a.has(name)) return fallback_fraction;
    std::string s = a.str(name);
    if (!s.empty() && s.back() == '%') s.pop_back();
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !(v >= 0))
        throw UsageError("--" + name + " expects a percentage >= 0, got '" + a.str(name) + "'");
    return v / 100.0;
}

VerifySettings settings_from_args(const Args& a) {
    VerifySettings v;
    v.threads = threads_from_args(a);
    // f32 KV unless asked otherwise: f16 KV alone would exceed the f32 budget.
    v.kv = a.has("kv") ? parse_kv(a.str("kv"), a.spelled("kv")) : KvType::f32;
    if (a.has("prefill-buckets")) v.prefill_buckets = a.int_list("prefill-buckets", {});
    if (a.has("append-buckets")) v.append_buckets = a.int_list("append-buckets", {});
    return v;
}

const char* yes_no(bool ok) { return ok ? "ok" : "EXCEEDED"; }

void print_diff_row(const char* phase, int pos, int next_id, const LogitDiff& d) {
    std::printf("%-8s %5d %7d %12.4e %12.4e %10.5f%% %7d %7d %s\n", phase, pos, next_id,
                d.mean_abs, d.max_abs, d.peir * 100.0, d.argmax_x, d.argmax_r,
                d.top1() ? "yes" : "NO");
}

void print_header() {
    std::printf("%-8s %5s %7s %12s %12s %11s %7s %7s %s\n", "phase", "pos", "next", "mean|diff|",
                "max|diff|", "PEIR", "argmax", "ref", "agree");
}

int verify_single(const Args& a, std::shared_ptr<const Model> model, const ReferenceData& ref,
                  double max_peir, double min_top1) {
    const VerifyReport r = verify_reference(model, ref, settings_from_args(a));
    const int T = ref.length();
    if (!a.has("summary")) {
        print_header();
        for (int t = 0; t < T; ++t)
            print_diff_row("prefill", t, t + 1 < T ? ref.input_ids[size_t(t + 1)]
                                                   : (ref.greedy_ids.empty() ? -1 : ref.greedy_ids[0]),
                           r.positions[size_t(t)]);
    }
    int agree = 0;
    for (const LogitDiff& d : r.positions) agree += d.top1();
    const int worst = r.worst_position();
    std::printf("positions %d: mean|diff| %.4e, max|diff| %.4e, worst PEIR %.5f%% (pos %d), "
                "top-1 %d/%d (%.2f%%)\n",
                T, r.mean_abs(), r.max_abs(), r.worst_peir() * 100.0, worst, agree, T,
                r.top1_fraction() * 100.0);
    const GreedyCheck& g = r.greedy;
    if (g.compared == 0) {
        std::printf("greedy: the reference has no greedy_ids\n");
    } else {
        std::printf("greedy: %d/%d generated tokens match (%.2f%%), first mismatch: ", g.matched,
                    g.compared, g.accuracy() * 100.0);
        if (g.first_mismatch < 0)
            std::printf("none\n");
        else
            std::printf("generated token %d (engine %d, reference %d)\n", g.first_mismatch,
                        g.engine_ids[size_t(g.first_mismatch)],
                        ref.greedy_ids[size_t(g.first_mismatch)]);
    }
    const bool peir_ok = r.worst_peir() <= max_peir;
    const bool top1_ok = r.top1_fraction() >= min_top1;
    const double min_greedy = a.number("min-greedy", 0.0);
    const bool greedy_ok = g.compared == 0 || g.accuracy() >= min_greedy;
    std::printf("budget: PEIR <= %.5f%% %s, top-1 >= %.4f %s", max_peir * 100.0, yes_no(peir_ok),
                min_top1, yes_no(top1_ok));
    if (a.has("min-greedy")) std::printf(", greedy >= %.4f %s", min_greedy, yes_no(greedy_ok));
    const bool pass = peir_ok && top1_ok && greedy_ok;
    std::printf(" -> %s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

int verify_multi(const Args& a, std::shared_ptr<const Model> model, const ReferenceData& ref,
                 double max_peir, double min_top1) {
    MultiTurnOptions mo;
    mo.turn1 = a.integer("turn1", -1);
    mo.decode = a.integer("decode", mo.decode);
    mo.turn2 = a.integer("turn2", -1);
    mo.append_bucket = a.integer("append-bucket", mo.append_bucket);
    const MultiTurnReport r = verify_multi_turn(model, ref, settings_from_args(a), mo);
    if (!a.has("summary")) {
        print_header();
        for (const MultiTurnRow& row : r.rows) {
            const int next = row.pos + 1 < ref.length() ? ref.input_ids[size_t(row.pos + 1)] : -1;
            print_diff_row(row.phase, row.pos, next, row.diff);
        }
    }
    std::printf("multi-turn: prefill %d, decode %d, append %d as", r.turn1, r.decode, r.turn2);
    for (const Step& s : r.append_plan) std::printf(" (Q=%d,t=%d)", s.q, s.t);
    std::printf(", decode %d\n", r.decode);
    int agree = 0;
    for (const MultiTurnRow& row : r.rows) agree += row.diff.top1();
    std::printf("vs reference: %zu positions, worst PEIR %.5f%%, top-1 %d/%zu (%.2f%%)\n",
                r.rows.size(), r.worst_peir() * 100.0, agree, r.rows.size(),
                r.top1_fraction() * 100.0);
    std::printf("append vs token-by-token decode: worst PEIR %.6f%% (pos %d)\n",
                r.append_vs_decode_peir * 100.0, r.append_vs_decode_worst_pos);
    // RUNTIME.md's invariant: any split gives the same logits within PEIR 1e-5.
    const double max_split = percent_flag(a, "max-split-peir", 1e-5);
    const bool peir_ok = r.worst_peir() <= max_peir;
    const bool top1_ok = r.top1_fraction() >= min_top1;
    const bool split_ok = r.append_vs_decode_peir <= max_split;
    std::printf("budget: PEIR <= %.5f%% %s, top-1 >= %.4f %s, split PEIR <= %.6f%% %s", max_peir * 100.0,
                yes_no(peir_ok), min_top1, yes_no(top1_ok), max_split * 100.0, yes_no(split_ok));
    const bool pass = peir_ok && top1_ok && split_ok;
    std::printf(" -> %s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

}  // namespace

int cmd_verify(const Args& a) {
    if (!a.has("reference")) throw UsageError("verify needs --reference FILE");
    if (!a.has("model")) throw UsageError("-m/--model DIR is required");
    LoadOptions lo;
    lo.weights = weight_type_from_args(a);
    lo.native_weights = native_weights_from_args(a);
    lo.act_bits = act_bits_from_args(a);
    lo.threads = threads_from_args(a);
    lo.load_tokenizer = false;  // verify feeds ids
    const ReferenceData ref = read_reference(a.str("reference"));
    auto model = load_model(a.str("model"), lo);
    print_model_warnings(*model);
    std::printf("verify %s (%s weights, %s KV) against %s: T=%d, vocab %d, %zu greedy ids\n",
                a.str("model").c_str(), lo.native_weights ? "native" : weight_type_name(lo.weights),
                kv_type_name(settings_from_args(a).kv), a.str("reference").c_str(), ref.length(),
                ref.vocab, ref.greedy_ids.size());
    // Formats that keep the f32 weights exactly get the tight default budget
    // (under native: when every matrix is in such a format).
    bool exact = true;
    for (const WeightTypeUsage& u : model_weight_usage(*model)) exact = exact && weight_type_info(u.type).exact;
    const double max_peir = percent_flag(a, "max-peir", exact ? 1e-4 : 1e-2);
    const double min_top1 = a.number("min-top1", 0.99);

    if (a.has("dump")) {
        const auto dumped = dump_intermediates(model, ref.input_ids, a.str("dump"), settings_from_args(a));
        std::printf("dump: %zu tensors of a %d-token prefill written to %s (index.json)\n",
                    dumped.size(), ref.length(), a.str("dump").c_str());
    }
    return a.has("multi-turn") ? verify_multi(a, model, ref, max_peir, min_top1)
                               : verify_single(a, model, ref, max_peir, min_top1);
}

int cmd_perplexity(const Args& a) {
    if (!a.has("file")) throw UsageError("perplexity needs -f/--file FILE");
    const std::string text = read_text_input(a.str("file"), a.spelled("file"), kMaxTextFileBytes);
    auto model = load_model_from_args(a);
    const Tokenizer* tok = model_tokenizer(*model);
    if (!tok) throw Error(ErrorKind::config, "perplexity needs a model with a tokenizer");
    int ctx = 0;
    if (a.has("ctx")) {
        ctx = a.integer("ctx", 0);
        if (ctx < 2) throw UsageError("--ctx must be >= 2, got " + a.str("ctx"));
    } else {
        // The default window: the trained context, at most 512 tokens.
        const int trained = model_config(*model).max_position;
        if (trained > 0 && trained < 2)
            throw Error(ErrorKind::config, "the model's config.json has max_position_embeddings " +
                                               std::to_string(trained) +
                                               ", too short for a perplexity window (2 tokens at least); "
                                               "give the window with --ctx N");
        ctx = trained > 0 ? std::min(trained, 512) : 512;
    }
    const std::vector<int> ids = tok->encode(text, /*add_special=*/true);
    const PerplexityResult r = perplexity(model, ids, ctx, settings_from_args(a));
    std::printf("tokens      %d (%d windows of up to %d, %d scored)\n", r.tokens, r.windows, ctx,
                r.scored);
    std::printf("weights     %s\n", model_weights_label(*model).c_str());
    std::printf("mean NLL    %.6f\n", r.mean_nll());
    std::printf("perplexity  %.6f\n", r.perplexity());
    if (!std::isfinite(r.perplexity()))
        throw Error(ErrorKind::model, "perplexity is not finite (NaN or Inf logits)");
    return 0;
}

}  // namespace staticlm::cli
