// Golden fixtures: tiny random checkpoints made by transformers (fp32, eager)
// with their reference logits and greedy ids (tests/fixtures/README.md).
// f32 must match within PEIR 1e-4 at every position and reproduce the greedy
// ids; f16/bf16/q8 within the budgets below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "staticlm/metrics.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

struct Reference {
    std::vector<int> input_ids;
    std::vector<float> logits;  // [T][V]
    std::vector<int> greedy_ids;
    int vocab = 0;
};

Reference read_reference(const std::filesystem::path& file) {
    SafetensorsFile f(file);
    Reference r;
    for (int64_t id : read_i64(f.at("input_ids"))) r.input_ids.push_back(int(id));
    for (int64_t id : read_i64(f.at("greedy_ids"))) r.greedy_ids.push_back(int(id));
    const TensorView& l = f.at("logits");
    r.logits = read_f32(l);
    r.vocab = int(l.shape.at(1));
    return r;
}

struct Budget {
    WeightType weights;
    double max_peir;       // at every position
    double min_top1;       // fraction of positions whose argmax agrees
    bool exact_greedy;
};

// Budgets measured on these fixtures (worst position over all of them), with
// headroom. f32 is the contract of the issue. The fixtures' random weights
// (std 0.15) amplify rounding: bf16 weights, near-lossless on trained models,
// already reach 1.7% PEIR here, so q8 (int8 weights and activations) is held
// to 8% / 90% top-1 on them; on the trained stories260K model q8 stays under
// 1% PEIR (test_stories.cpp).
constexpr Budget kBudgets[] = {
    {WeightType::f32, 1e-4, 1.0, true},
    {WeightType::f16, 5e-3, 1.0, false},
    {WeightType::bf16, 3e-2, 0.95, false},
    {WeightType::q8, 8e-2, 0.9, false},
};
// The Gemma 4 fixtures add per-layer inputs, layer scalars and a softcap of 5
// to the random weights, which amplify rounding further (bf16 rounds the
// activations too when vdpbf16ps is used).
constexpr Budget kGemmaBudgets[] = {
    {WeightType::f32, 1e-4, 1.0, true},
    {WeightType::f16, 1e-2, 1.0, false},
    {WeightType::bf16, 0.2, 0.95, false},
    {WeightType::q8, 0.25, 0.85, false},
};

// `model` is a fixture directory or a GGUF twin of one; `reference` the
// fixture's reference.safetensors.
void check_model(const std::filesystem::path& model_path, const std::filesystem::path& reference, const Budget& b) {
    const Reference ref = read_reference(reference);
    LoadOptions lo;
    lo.weights = b.weights;
    lo.load_tokenizer = false;
    lo.threads = 2;
    auto model = Model::load(model_path, lo);
    const std::filesystem::path dir = model_path;
    REQUIRE(model->config().vocab == ref.vocab);
    const int T = int(ref.input_ids.size()), G = int(ref.greedy_ids.size());
    SessionOptions so;
    so.max_seq = T + G + 4;
    so.prefill_buckets = {16, 32};
    so.append_buckets = {4};
    so.all_logits = true;
    so.threads = 2;
    so.kv = KvType::f32;
    Session s(model, so);

    std::vector<float> got(size_t(T) * size_t(ref.vocab));
    test::Rows c{&got};
    s.prefill(ref.input_ids, {test::Rows::sink, &c});
    double worst = 0;
    int agree = 0;
    for (int p = 0; p < T; ++p) {
        const size_t off = size_t(p) * size_t(ref.vocab);
        const LogitDiff d = compare_logits({got.data() + off, size_t(ref.vocab)},
                                           {ref.logits.data() + off, size_t(ref.vocab)});
        worst = std::max(worst, d.peir);
        agree += d.top1();
        CHECK_MESSAGE(d.peir <= b.max_peir, dir.filename().string(), " ",
                      std::string(weight_type_name(b.weights)), " position ", p, " PEIR ", d.peir);
    }
    const double top1 = double(agree) / T;
    CHECK_MESSAGE(top1 >= b.min_top1, dir.filename().string(), " ",
                  std::string(weight_type_name(b.weights)), " top-1 agreement ", top1);

    // Greedy continuation through decode steps.
    std::span<const float> logits = s.prefill(ref.input_ids);
    int match = 0;
    for (int g = 0; g < G; ++g) {
        const int id = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
        match += id == ref.greedy_ids[size_t(g)];
        if (b.exact_greedy) CHECK_MESSAGE(id == ref.greedy_ids[size_t(g)], "greedy step ", g);
        logits = s.decode(ref.greedy_ids[size_t(g)]);  // teacher-forced so one miss stays one
    }
    std::printf("  %-29s %-4s worst PEIR %.2e  top-1 %5.1f%%  greedy %d/%d\n",
                dir.filename().string().c_str(), weight_type_name(b.weights), worst, 100 * top1,
                match, G);
}

void check_fixture(const std::filesystem::path& dir, const Budget& b) {
    check_model(dir, dir / "reference.safetensors", b);
}

std::vector<std::filesystem::path> fixtures(const std::string& prefix) {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(test::fixtures_dir()))
        if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0 &&
            std::filesystem::exists(e.path() / "reference.safetensors"))
            out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("golden Llama fixtures match transformers") {
    const auto dirs = fixtures("llama-");
    REQUIRE(dirs.size() >= 3);
    for (const Budget& b : kBudgets)
        for (const auto& dir : dirs) check_fixture(dir, b);
}

TEST_CASE("golden Gemma 4 fixtures match transformers") {
    const auto dirs = fixtures("gemma4-");
    REQUIRE(dirs.size() >= 2);
    for (const Budget& b : kGemmaBudgets)
        for (const auto& dir : dirs) check_fixture(dir, b);
}

TEST_CASE("golden Gemma 3 fixtures match transformers") {
    // gemma3-4b-like-causal/-cond (layer_types from sliding_window_pattern, linear
    // RoPE scaling on full layers, the multimodal layout) and gemma3-softcap-causal
    // (rope_parameters, layer_types, final softcap 3).
    const auto dirs = fixtures("gemma3-");
    REQUIRE(dirs.size() >= 3);
    for (const Budget& b : kGemmaBudgets)
        for (const auto& dir : dirs) check_fixture(dir, b);
}

TEST_CASE("golden Qwen2, Qwen3, Mistral, SmolLM3, Granite and Phi-3 fixtures match transformers") {
    // qwen3-*: per-head q/k norms, head_dim != hidden / heads, YaRN (attention
    // factor folded into the scale), tied and untied; qwen2-*: q/k/v biases,
    // sliding layers from max_window_layers on; mistral-*: a window on every
    // layer, head_dim != hidden / heads; smollm3-*: NoPE layers (no_rope_layers, or
    // the no_rope_layer_interval default), GQA and MQA, tied and untied; granite-*:
    // embedding, attention, residual and logits multipliers, tied and untied; phi3-*:
    // fused qkv/gate_up split at load, partial rotary (q/k rows permuted at
    // load), LongRoPE long (T > original) and short factors, a window on every layer.
    for (const char* prefix : {"qwen3-", "qwen2-", "mistral-", "smollm3-", "granite-", "phi3-"}) {
        const auto dirs = fixtures(prefix);
        REQUIRE_MESSAGE(dirs.size() >= 2u, prefix);
        for (const Budget& b : kBudgets)
            for (const auto& dir : dirs) check_fixture(dir, b);
    }
}

// GGUF twins (tests/fixtures/gguf/, made by llama.cpp's converter from the
// fixtures): the same reference as their safetensors twin, with the same
// budgets; q/k rows of the Llama twins are un-interleaved at load, Gemma 3
// norms are used as stored (1 + w); the Gemma 4 twins carry per-layer
// arrays, per-layer inputs, KV sharing (e2b) and K = V full layers (keqv);
// the qwen2/qwen3 twins biases, q/k norms and YaRN keys; the Mistral twin is
// llama.cpp's `llama` architecture (permuted q/k rows); the smollm3 twin has no
// NoPE key (llama.cpp: every 4th layer, so smollm3-interval-mqa has no twin), the
// granite twins the four scale keys (granite-tied-gqa: no output.weight),
// the phi3 twins fused attn_qkv/ffn_up, rope factor tensors and the window key.
TEST_CASE("golden GGUF twins match their safetensors twins' references") {
    const std::filesystem::path g = test::fixtures_dir() / "gguf";
    int n = 0;
    for (const char* name : {"llama-gqa-llama3", "llama-mqa-3layer", "llama-tied", "gemma3-4b-like-causal",
                             "gemma4-e2b-like-causal", "gemma4-keqv-causal", "qwen3-gqa-untied",
                             "qwen3-mqa-tied-yarn", "qwen2-tied", "mistral-nowindow-hd", "smollm3-norope",
                             "granite-multipliers", "granite-tied-gqa", "phi3-longrope-partial",
                             "phi3-short-window"}) {
        const bool gemma = std::string(name).rfind("gemma", 0) == 0;
        for (const Budget& b : gemma ? kGemmaBudgets : kBudgets)
            check_model(g / (std::string(name) + ".gguf"), test::fixtures_dir() / name / "reference.safetensors", b);
        ++n;
    }
    CHECK(n == 15);
}

// A Q8_0 twin: its weights were rounded to 8 bits by the converter, so even
// --weights f32 is held to the q8 budget (and exact f16/bf16 are not
// meaningful beyond it).
// The Qwen2 twin adds biases; the Phi-3 twin fused attn_qkv/ffn_up blocks read
// at row offsets and q/k rows permuted for partial rotary, through the path
// that keeps Q8_0 quants and scales as they are (--weights q8).
TEST_CASE("golden GGUF Q8_0 twins stay within the q8 budget") {
    const std::filesystem::path g = test::fixtures_dir() / "gguf";
    for (const char* name : {"llama-tied", "qwen2-tied", "phi3-longrope-partial"})
        for (WeightType w : {WeightType::f32, WeightType::q8})
            check_model(g / (std::string(name) + ".q8_0.gguf"), test::fixtures_dir() / name / "reference.safetensors",
                        Budget{w, 8e-2, 0.9, false});
}
