// The real Gemma 3 270M (Q4_K_M GGUF, ~/.cache/staticlm, fetched by
// tools/get_model.sh) against transformers fp32 on the same dequantized
// weights (tests/fixtures/gemma3-270m/FACTS.md says what the references hold).
// --weights f32: PEIR <= 1e-4 at every stored position (full rows at a few
// positions, stored as f16, so each entry may differ by half an f16 step on
// top; the top-32 logits, stored as f32, at the others), the same
// log-sum-exp, and the reference's 64 greedy ids. --weights q8: teacher-forced
// top-1 agreement >= 96% over the 1013-token text and perplexity within 1%
// of f32; --weights q4: the measured figures with a little headroom. Skips
// with a message when the file is absent. Continuation scores (scores.json,
// lm-eval-harness's boundary rule): --weights f32 with an f32 cache within
// 1e-3 nats of transformers per pair, with the same greedy flags. --kv q8
// against the f16 cache (q8 weights): top-1, perplexity and PEIR budgets.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/kernels.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "staticlm/score.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;

namespace {

fs::path ref_dir() { return test::fixtures_dir() / "gemma3-270m"; }

struct Reference {
    std::string name;
    std::vector<int> input_ids;
    std::vector<int> positions;   // full rows at these positions
    std::vector<float> logits;    // [positions][V] (from f16)
    std::vector<int> topk_pos;
    std::vector<int> topk_ids;    // [topk_pos][32]
    std::vector<float> topk_logits;
    std::vector<float> logsumexp; // [topk_pos]
    std::vector<int> greedy_ids;
    std::vector<float> greedy_margins;
    double ppl = 0;
    int vocab = 0, k = 0;
};

// The __metadata__ of a safetensors file (SafetensorsFile does not keep it).
nlohmann::json st_metadata(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    REQUIRE((in && n < (uint64_t{1} << 24)));
    std::string header(size_t(n), '\0');
    in.read(header.data(), std::streamsize(n));
    return nlohmann::json::parse(header).at("__metadata__");
}

std::vector<int> ints(const TensorView& t) {
    std::vector<int> out;
    for (int64_t v : read_i64(t)) out.push_back(int(v));
    return out;
}

Reference read_reference(const std::string& name) {
    const fs::path file = ref_dir() / ("reference_" + name + ".safetensors");
    SafetensorsFile f(file);
    Reference r;
    r.name = name;
    r.input_ids = ints(f.at("input_ids"));
    r.positions = ints(f.at("positions"));
    r.logits = read_f32(f.at("logits"));
    r.vocab = int(f.at("logits").shape.at(1));
    r.topk_pos = ints(f.at("topk_pos"));
    r.topk_ids = ints(f.at("topk_ids"));
    r.k = int(f.at("topk_ids").shape.at(1));
    r.topk_logits = read_f32(f.at("topk_logits"));
    r.logsumexp = read_f32(f.at("logsumexp"));
    r.greedy_ids = ints(f.at("greedy_ids"));
    r.greedy_margins = read_f32(f.at("greedy_margins"));
    r.ppl = std::stod(st_metadata(file).at("ppl").get<std::string>());
    return r;
}

// What one teacher-forced pass gives, position by position, without keeping
// 1013 rows of 262144 logits: argmax, log-sum-exp, the next token's logit,
// the row's range, and whole rows where the reference has them.
struct Pass {
    const Reference* ref;
    std::vector<int> argmax;
    std::vector<double> lse, next_logit, lo, hi;
    std::vector<std::vector<float>> rows;  // at ref->positions, then ref->topk_pos
    static void sink(void* ctx, int pos, const float* rows, int t, int vocab) {
        auto* p = static_cast<Pass*>(ctx);
        const Reference& r = *p->ref;
        for (int i = 0; i < t; ++i) {
            const float* x = rows + size_t(i) * size_t(vocab);
            const int at = pos + i;
            const float* mx = std::max_element(x, x + vocab);
            double s = 0;
            for (int v = 0; v < vocab; ++v) s += std::exp(double(x[v]) - double(*mx));
            p->argmax[size_t(at)] = int(mx - x);
            p->lse[size_t(at)] = double(*mx) + std::log(s);
            p->hi[size_t(at)] = *mx;
            p->lo[size_t(at)] = *std::min_element(x, x + vocab);
            if (at + 1 < int(r.input_ids.size())) p->next_logit[size_t(at)] = x[r.input_ids[size_t(at) + 1]];
            for (size_t j = 0; j < r.positions.size(); ++j)
                if (r.positions[j] == at) p->rows[j].assign(x, x + vocab);
            for (size_t j = 0; j < r.topk_pos.size(); ++j)
                if (r.topk_pos[j] == at) {
                    std::vector<float>& keep = p->rows[r.positions.size() + j];
                    for (int k = 0; k < r.k; ++k) keep.push_back(x[r.topk_ids[j * size_t(r.k) + size_t(k)]]);
                }
        }
    }
    double ppl() const {
        double nll = 0;
        const size_t n = ref->input_ids.size() - 1;
        for (size_t i = 0; i < n; ++i) nll += lse[i] - next_logit[i];
        return std::exp(nll / double(n));
    }
};

Pass run_pass(Session& s, const Reference& r) {
    const size_t T = r.input_ids.size();
    Pass p{&r, std::vector<int>(T), std::vector<double>(T), std::vector<double>(T), std::vector<double>(T),
           std::vector<double>(T), std::vector<std::vector<float>>(r.positions.size() + r.topk_pos.size())};
    s.prefill(r.input_ids, {Pass::sink, &p});
    return p;
}

// Half the spacing of f16 numbers around |r| (the reference rows' rounding).
double half_f16_step(float r) {
    const double a = std::fabs(double(r));
    if (a < 6.103515625e-05) return std::ldexp(1.0, -25);  // subnormal step 2^-24
    return std::ldexp(1.0, std::ilogb(a) - 11);
}

std::shared_ptr<const Model> load(WeightType w, bool native = false, int act_bits = 8) {
    LoadOptions lo;
    lo.weights = w;
    lo.native_weights = native;
    lo.act_bits = act_bits;
    lo.threads = 2;
    return Model::load(test::gemma3_gguf(), lo);
}

SessionOptions session_options(int max_seq) {
    SessionOptions so;
    so.max_seq = max_seq;
    so.prefill_buckets = {64};
    so.append_buckets = {4};
    so.all_logits = true;
    so.threads = 2;
    so.kv = KvType::f32;
    return so;
}

nlohmann::json llamacpp_greedy() {
    std::ifstream in(ref_dir() / "llamacpp_greedy.json");
    return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("Gemma 3 270M GGUF: the tokenizer gives the references' input ids") {
    if (!test::have_gemma3_gguf()) return;
    LoadOptions lo;
    lo.threads = 2;
    auto model = Model::load(test::gemma3_gguf(), lo);
    REQUIRE(model->tokenizer());
    for (const char* name : {"capital", "story", "long"}) {
        const Reference r = read_reference(name);
        std::string text;
        if (std::string(name) == "long") {
            std::ifstream in(ref_dir() / "long_prompt.txt");
            std::stringstream ss;
            ss << in.rdbuf();
            text = ss.str();
            const size_t b = text.find_first_not_of(" \t\n\r"), e = text.find_last_not_of(" \t\n\r");
            text = text.substr(b, e - b + 1);
        } else {
            text = st_metadata(ref_dir() / ("reference_" + std::string(name) + ".safetensors"))
                       .at("prompt")
                       .get<std::string>();
        }
        CHECK_MESSAGE(model->tokenizer()->encode(text, true) == r.input_ids, name);
    }
}

TEST_CASE("Gemma 3 270M GGUF --weights f32 matches transformers fp32") {
    if (!test::have_gemma3_gguf()) return;
    auto model = load(WeightType::f32);
    CHECK(model->config().n_layers == 18);
    CHECK(model->config().layers[5].attention == AttentionType::full);
    CHECK(model->config().layers[4].window == 512);
    const nlohmann::json llama = llamacpp_greedy();
    for (const char* name : {"capital", "story", "long"}) {
        const Reference r = read_reference(name);
        const int T = int(r.input_ids.size()), G = int(r.greedy_ids.size());
        Session s(model, session_options(T + G + 8));
        const Pass p = run_pass(s, r);
        double worst = 0, worst_lse = 0;
        for (size_t j = 0; j < r.positions.size(); ++j) {
            const int at = r.positions[j];
            const std::vector<float>& got = p.rows[j];
            REQUIRE(got.size() == size_t(r.vocab));
            const float* want = r.logits.data() + j * size_t(r.vocab);
            const auto [mn, mx] = std::minmax_element(want, want + r.vocab);
            double excess = 0;
            for (int v = 0; v < r.vocab; ++v)
                excess = std::max(excess, std::fabs(double(got[size_t(v)]) - double(want[v])) - half_f16_step(want[v]));
            const double peir = excess / (double(*mx) - double(*mn));
            worst = std::max(worst, peir);
            CHECK_MESSAGE(peir <= 1e-4, name, " position ", at, " PEIR beyond f16 rounding ", peir);
        }
        for (size_t j = 0; j < r.topk_pos.size(); ++j) {
            const int at = r.topk_pos[j];
            const std::vector<float>& got = p.rows[r.positions.size() + j];
            REQUIRE(got.size() == size_t(r.k));
            double err = 0;
            for (int k = 0; k < r.k; ++k)
                err = std::max(err, std::fabs(double(got[size_t(k)]) - double(r.topk_logits[j * size_t(r.k) + size_t(k)])));
            const double peir = err / (p.hi[size_t(at)] - p.lo[size_t(at)]);
            worst = std::max(worst, peir);
            CHECK_MESSAGE(peir <= 1e-4, name, " position ", at, " top-32 PEIR ", peir);
            CHECK_MESSAGE(p.argmax[size_t(at)] == r.topk_ids[j * size_t(r.k)], name, " position ", at);
            worst_lse = std::max(worst_lse, std::fabs(p.lse[size_t(at)] - double(r.logsumexp[j])));
        }
        CHECK_MESSAGE(worst_lse <= 1e-3, name, " log-sum-exp differs by ", worst_lse);
        const double ppl = p.ppl();
        CHECK_MESSAGE(std::fabs(ppl / r.ppl - 1) <= 1e-4, name, " perplexity ", ppl, " vs ", r.ppl);

        // Free-running greedy: the reference's 64 ids.
        std::span<const float> logits = s.prefill(r.input_ids);
        std::vector<int> ids;
        for (int g = 0; g < G; ++g) {
            const int id = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
            ids.push_back(id);
            logits = s.decode(id);
        }
        int same = 0;
        while (same < G && ids[size_t(same)] == r.greedy_ids[size_t(same)]) ++same;
        CHECK_MESSAGE(same == G, name, " greedy ids agree for ", same, " of ", G);
        const std::vector<int> lc = llama["prompts"][name]["llamacpp_ids"].get<std::vector<int>>();
        int with_llama = 0;
        while (with_llama < G && with_llama < int(lc.size()) && ids[size_t(with_llama)] == lc[size_t(with_llama)])
            ++with_llama;
        std::printf("  gemma3-270m f32 %-8s T %4d  worst PEIR %.2e  |lse| %.1e  ppl %.4f (ref %.4f)  greedy %d/%d"
                    "  llama.cpp prefix %d\n",
                    name, T, worst, worst_lse, ppl, r.ppl, same, G, with_llama);
    }
}

TEST_CASE("Gemma 3 270M GGUF --weights f32: continuation scores match transformers fp32") {
    if (!test::have_gemma3_gguf()) return;
    std::ifstream in(ref_dir() / "scores.json");
    REQUIRE(in);
    const nlohmann::json ref = nlohmann::json::parse(in);
    REQUIRE(ref["pairs"].size() == 20);
    auto model = load(WeightType::f32);
    REQUIRE(model->tokenizer());
    Session s(model, session_options(256));
    double worst = 0;
    int greedy = 0;
    for (const nlohmann::json& p : ref["pairs"]) {
        const std::string prompt = p["prompt"], cont = p["continuation"];
        INFO(prompt << " | " << cont);
        const ScoreIds ids = score_ids(*model->tokenizer(), prompt, std::vector<std::string>{cont});
        CHECK(ids.prompt == p["prompt_ids"].get<std::vector<int>>());
        REQUIRE(ids.continuations.size() == 1);
        REQUIRE(ids.continuations[0] == p["continuation_ids"].get<std::vector<int>>());
        const std::vector<ContinuationScore> got = score_continuations(s, ids.prompt, ids.continuations);
        REQUIRE(got.size() == 1);
        const double d = std::fabs(got[0].logprob - p["logprob"].get<double>());
        worst = std::max(worst, d);
        CHECK(d <= 1e-3);
        CHECK(got[0].tokens == p["tokens"].get<int>());
        CHECK(got[0].greedy == p["greedy"].get<bool>());
        greedy += got[0].greedy;
    }
    std::printf("  gemma3-270m f32 scores: %zu pairs, max |logprob - transformers| %.2e nats, %d greedy\n",
                ref["pairs"].size(), worst, greedy);
}

TEST_CASE("Gemma 3 270M GGUF --weights q8, q4 and native: top-1 and perplexity against f32") {
    if (!test::have_gemma3_gguf()) return;
    const Reference r = read_reference("long");
    const int T = int(r.input_ids.size());
    Pass f32 = [&] {
        Session s(load(WeightType::f32), session_options(T + 8));
        return run_pass(s, r);
    }();
    // q8: top-1 97.7% on AVX2 (Zen 3) and 96.9% on AVX-512 (Xeon): the
    // targets sum in different orders and the text has near-ties.
    // q4 (measured on AVX-512: top-1 70.4% vs f32, 44 of the 58 reference
    // positions, perplexity +38.0%): a 270M model loses much at 4 bits;
    // llama.cpp's Q4_0 rule on the same weights loses more (+59%,
    // docs/FORMATS.md).
    // native: the Q5_0, Q8_0, Q4_K and Q6_K tensors keep their blocks (q5,
    // q8, q4k, q6k): the file's own weights, where q8 rounds Q4_K and Q6_K
    // to 8 bits per 32; the same budget.
    struct Budget {
        WeightType w;
        bool native;
        double min_top1, max_ppl_ratio, min_ref_top1, max_peir;
        int act_bits = 8;
    };
    // PEIR vs f32 at the 3 full rows (measured on AVX-512): q8 1.61%, native
    // 1.52%, q4 15.9%: the int8 activations (one scale per 32) set the floor.
    // Native with 16-bit activations (the file's weights exactly, activations
    // 2^8 finer): top-1 100.00%, perplexity -0.001%, PEIR 0.01% (Xeon).
    for (const Budget& b : {Budget{WeightType::q8, false, 0.96, 1.01, 0.95, 0.02},
                            Budget{WeightType::q8, true, 0.96, 1.01, 0.95, 0.02},
                            Budget{WeightType::q8, true, 0.995, 1.002, 0.95, 0.002, 16},
                            Budget{WeightType::q4, false, 0.66, 1.42, 0.70, 0.2}}) {
        auto model = load(b.w, b.native, b.act_bits);
        Session s(model, session_options(T + 8));
        const Pass p = run_pass(s, r);
        int agree = 0, agree_ref = 0;
        for (int i = 0; i < T; ++i) agree += p.argmax[size_t(i)] == f32.argmax[size_t(i)];
        for (size_t j = 0; j < r.topk_pos.size(); ++j)
            agree_ref += p.argmax[size_t(r.topk_pos[j])] == r.topk_ids[j * size_t(r.k)];
        // PEIR against f32 over the positions where the reference keeps full rows.
        double peir = 0;
        for (size_t j = 0; j < r.positions.size(); ++j) {
            const std::vector<float>&got = p.rows[j], &want = f32.rows[j];
            const auto [mn, mx] = std::minmax_element(want.begin(), want.end());
            double err = 0;
            for (size_t v = 0; v < want.size(); ++v) err = std::max(err, std::fabs(double(got[v]) - double(want[v])));
            peir = std::max(peir, err / (double(*mx) - double(*mn)));
        }
        const double top1 = double(agree) / T, ppl = p.ppl(), ppl32 = f32.ppl();
        const char* name = b.act_bits == 16 ? "native --act-bits 16" : b.native ? "native" : weight_type_name(b.w);
        std::printf("  gemma3-270m %s  long     T %4d  top-1 vs f32 %.2f%% (vs reference at %zu positions %d)"
                    "  ppl %.4f (f32 %.4f, %+.2f%%)  PEIR vs f32 %.2f%% at %zu rows\n",
                    name, T, 100 * top1, r.topk_pos.size(), agree_ref, ppl, ppl32, 100 * (ppl / ppl32 - 1), 100 * peir,
                    r.positions.size());
        CAPTURE(name);
        CHECK(top1 >= b.min_top1);
        CHECK(ppl / ppl32 <= b.max_ppl_ratio);
        CHECK(ppl / ppl32 >= 1 / b.max_ppl_ratio);
        CHECK(double(agree_ref) / double(r.topk_pos.size()) >= b.min_ref_top1);
        CHECK(peir <= b.max_peir);
    }
}

TEST_CASE("Gemma 3 270M GGUF --kv q8 against the f16 cache: top-1, perplexity and PEIR") {
    // The same q8 weights with the two caches, so the figures are the cache's
    // alone. Measured on AVX-512 (Zen 5, 2 threads): top-1 95.85%, perplexity
    // -0.25%, PEIR 2.02% at the 3 full rows -- about what q8 weights cost
    // against f32 (the test above). The budgets leave room for other targets'
    // summation orders.
    if (!test::have_gemma3_gguf()) return;
    const Reference r = read_reference("long");
    const int T = int(r.input_ids.size());
    auto model = load(WeightType::q8);
    Pass with[2];
    for (KvType kv : {KvType::f16, KvType::q8}) {
        SessionOptions so = session_options(T + 8);
        so.kv = kv;
        Session s(model, so);
        with[kv == KvType::q8] = run_pass(s, r);
    }
    const Pass &f16 = with[0], &q8 = with[1];
    int agree = 0;
    for (int i = 0; i < T; ++i) agree += q8.argmax[size_t(i)] == f16.argmax[size_t(i)];
    double peir = 0;
    for (size_t j = 0; j < r.positions.size(); ++j) {
        const std::vector<float>&got = q8.rows[j], &want = f16.rows[j];
        const auto [mn, mx] = std::minmax_element(want.begin(), want.end());
        double err = 0;
        for (size_t v = 0; v < want.size(); ++v) err = std::max(err, std::fabs(double(got[v]) - double(want[v])));
        peir = std::max(peir, err / (double(*mx) - double(*mn)));
    }
    const double top1 = double(agree) / T, ratio = q8.ppl() / f16.ppl();
    std::printf("  gemma3-270m q8 weights, kv q8 vs kv f16  long  T %4d  top-1 %.2f%%  ppl %.4f (f16 cache %.4f, %+.3f%%)"
                "  PEIR %.3f%% at %zu rows\n",
                T, 100 * top1, q8.ppl(), f16.ppl(), 100 * (ratio - 1), 100 * peir, r.positions.size());
    CHECK(top1 >= 0.94);
    CHECK(ratio <= 1.01);
    CHECK(ratio >= 1 / 1.01);
    CHECK(peir <= 0.03);
}

TEST_CASE("Gemma 3 270M GGUF --weights native: the file's own size in memory") {
    if (!test::have_gemma3_gguf()) return;
    // Q5_0 (81 matrices), Q8_0 (10) and Q6_K (9) keep their bits per weight,
    // Q4_K (27) takes 4.625 instead of 4.5: measured 1.001 x the file's
    // tensor bytes (q8: 1.156 x).
    const GgufFile f(test::gemma3_gguf());
    size_t file_bytes = 0;
    for (const GgufTensor& t : f.tensors()) file_bytes += t.bytes;
    const auto native = load(WeightType::q8, true);
    const auto q8 = load(WeightType::q8);
    const double ratio = double(native->weight_bytes()) / double(file_bytes);
    std::printf("  gemma3-270m native: %zu weight bytes, %.4f x the file's %zu tensor bytes (q8: %.4f x)\n",
                native->weight_bytes(), ratio, file_bytes, double(q8->weight_bytes()) / double(file_bytes));
    CHECK(ratio <= 1.1);
    CHECK(native->weights().layers[0].gate.type == WeightType::q5);
    int q4k = 0, q6k = 0;
    for (const auto& l : native->weights().layers)
        for (const kernels::PackedMatrix* pm : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
            q4k += pm->type == WeightType::q4k, q6k += pm->type == WeightType::q6k;
    CHECK(q4k == 27);  // every Q4_K tensor of the file
    CHECK(q6k == 9);   // and every Q6_K one
    CHECK(q8->weights().layers[0].gate.type == WeightType::q8);
}
