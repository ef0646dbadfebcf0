// The checks behind `staticlm verify` / `perplexity` (include/staticlm/verify.hpp)
// against independent sources: the golden fixtures' transformers logits, the
// fixtures' own weights (embedding rows) and a perplexity computed by
// transformers (tools/fixtures/reference.py perplexity, committed as JSON).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "model/safetensors.hpp"
#include "staticlm/error.hpp"
#include "staticlm/model.hpp"
#include "staticlm/verify.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using staticlm::test::fixtures_dir;

namespace {

std::shared_ptr<const Model> load_f32(const std::filesystem::path& dir) {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 2;
    lo.load_tokenizer = false;
    return load_model(dir, lo);
}

// Null (with a message) when the loader rejects the fixture's features as
// unsupported (attention_k_eq_v until config.cpp accepts it); other errors fail.
std::shared_ptr<const Model> load_f32_or_skip(const std::filesystem::path& dir) {
    try {
        return load_f32(dir);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::unsupported) throw;
        MESSAGE("SKIPPED " << dir.filename().string() << ": " << std::string(e.what()));
        return nullptr;
    }
}

VerifySettings two_threads() {
    VerifySettings s;
    s.threads = 2;
    return s;
}

const char* kFixtures[] = {"llama-gqa-llama3",       "llama-tied",           "llama-mqa-3layer",
                           "gemma4-e2b-like-causal", "gemma4-e2b-like-cond", "gemma4-keqv-causal",
                           "gemma4-keqv-cond"};

}  // namespace

TEST_CASE("read_reference reads the fixture format and rejects other files") {
    const auto dir = fixtures_dir() / "llama-tied";
    const ReferenceData r = read_reference(dir / "reference.safetensors");
    CHECK(r.length() == 32);
    CHECK(r.vocab == 256);
    CHECK(r.logits.size() == size_t(32) * 256);
    CHECK(r.greedy_ids.size() == 16);
    // A weights file has no input_ids: a clear error naming the tensor.
    try {
        (void)read_reference(dir / "model.safetensors");
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("input_ids") != std::string::npos);
    }
    CHECK_THROWS_AS((void)read_reference(dir / "missing.safetensors"), Error);
}

TEST_CASE("verify_reference: f32 meets the 0.01% budget and the greedy ids on every fixture") {
    for (const std::string name : kFixtures) {
        CAPTURE(name);
        const auto dir = fixtures_dir() / name;
        const ReferenceData ref = read_reference(dir / "reference.safetensors");
        const auto model = load_f32_or_skip(dir);
        if (!model) continue;
        const VerifyReport r = verify_reference(model, ref, two_threads());
        REQUIRE(r.positions.size() == size_t(ref.length()));
        CHECK(r.worst_peir() <= 1e-4);
        CHECK(r.top1_fraction() == 1.0);
        CHECK(r.greedy.compared == int(ref.greedy_ids.size()));
        CHECK(r.greedy.matched == r.greedy.compared);
        CHECK(r.greedy.first_mismatch == -1);
        // The reference's last row predicts greedy_ids[0] (fixtures README).
        CHECK(r.positions.back().argmax_r == ref.greedy_ids[0]);
    }
}

TEST_CASE("verify_reference: another model's reference is far outside the budget") {
    // Same vocab (256), different weights: logits must disagree.
    const ReferenceData ref = read_reference(fixtures_dir() / "llama-tied" / "reference.safetensors");
    const VerifyReport r =
        verify_reference(load_f32(fixtures_dir() / "gemma4-e2b-like-causal"), ref, two_threads());
    CHECK(r.worst_peir() > 0.05);
    CHECK(r.top1_fraction() < 0.9);
    CHECK(r.greedy.first_mismatch >= 0);
    // A vocab mismatch is an input error, not a silent comparison of prefixes.
    const ReferenceData other =
        read_reference(fixtures_dir() / "llama-gqa-llama3" / "reference.safetensors");
    CHECK_THROWS_AS((void)verify_reference(load_f32(fixtures_dir() / "llama-tied"), other, two_threads()),
                    Error);
}

TEST_CASE("verify_multi_turn: chunked append, decode steps and the decode-loop comparison") {
    for (const std::string name : {"llama-gqa-llama3", "gemma4-e2b-like-causal", "gemma4-keqv-cond"}) {
        CAPTURE(name);
        const auto dir = fixtures_dir() / name;
        const ReferenceData ref = read_reference(dir / "reference.safetensors");
        MultiTurnOptions mo;
        mo.turn1 = 7;
        mo.decode = 3;
        mo.append_bucket = 4;  // turn 2 is longer than 4: chunked
        const auto model = load_f32_or_skip(dir);
        if (!model) continue;
        const MultiTurnReport r = verify_multi_turn(model, ref, two_threads(), mo);
        const int T = ref.length();
        CHECK(r.turn2 == T - 7 - 6);
        REQUIRE(r.rows.size() == size_t(T));
        for (int p = 0; p < T; ++p) CHECK(r.rows[size_t(p)].pos == p);
        CHECK(std::string(r.rows[6].phase) == "prefill");
        CHECK(std::string(r.rows[7].phase) == "decode1");
        CHECK(std::string(r.rows[10].phase) == "append");
        CHECK(std::string(r.rows[size_t(T - 1)].phase) == "decode2");
        const int buckets[] = {4};
        CHECK(r.append_plan == Session::plan(buckets, 10, r.turn2, T));
        CHECK(r.append_plan.size() >= 2);
        CHECK(r.worst_peir() <= 1e-4);
        CHECK(r.top1_fraction() == 1.0);
        CHECK(r.append_vs_decode_peir <= 1e-5);
        CHECK(r.append_vs_decode_worst_pos >= 10);
    }
    const ReferenceData ref = read_reference(fixtures_dir() / "llama-tied" / "reference.safetensors");
    MultiTurnOptions bad;
    bad.turn1 = 30;
    bad.decode = 4;
    CHECK_THROWS_AS((void)verify_multi_turn(load_f32(fixtures_dir() / "llama-tied"), ref,
                                            two_threads(), bad),
                    Error);
}

TEST_CASE("dump_intermediates writes every named tensor with its shape") {
    const auto dir = fixtures_dir() / "llama-tied";
    const ReferenceData ref = read_reference(dir / "reference.safetensors");
    const auto out = std::filesystem::temp_directory_path() / "staticlm_test_dump_llama_tied";
    std::filesystem::remove_all(out);
    const auto model = load_f32(dir);
    const auto dumped = dump_intermediates(model, ref.input_ids, out, two_threads());
    const ModelConfig& c = model_config(*model);
    const int T = ref.length();

    std::ifstream f(out / "index.json");
    const nlohmann::json index = nlohmann::json::parse(f);
    REQUIRE(index["tensors"].size() == dumped.size());
    std::set<std::string> names;
    for (const auto& t : index["tensors"]) {
        names.insert(t["name"].get<std::string>());
        const int rows = t["shape"][0], cols = t["shape"][1];
        CHECK(rows == T);
        CHECK(std::filesystem::file_size(out / t["file"].get<std::string>()) ==
              size_t(rows) * size_t(cols) * 4);
    }
    for (const char* n : {"embed", "attn_norm", "q", "k", "v", "attn", "attn_out", "ffn_norm",
                          "ffn_out", "h", "final_norm", "logits"})
        CHECK_MESSAGE(names.count(n) == 1, n);
    // 9 per layer + embed, final_norm, logits.
    CHECK(dumped.size() == size_t(9 * c.n_layers + 3));

    auto read = [&](const std::string& file, size_t n) {
        std::vector<float> v(n);
        std::ifstream in(out / file, std::ios::binary);
        in.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(float)));
        return v;
    };
    // embed = the embedding rows of the ids, straight from the checkpoint.
    const std::vector<float> embed = read("embed.f32", size_t(T) * size_t(c.hidden));
    SafetensorsFile weights(dir / "model.safetensors");
    const std::vector<float> table = read_f32(weights.at("model.embed_tokens.weight"));
    for (int t = 0; t < T; ++t)
        for (int j = 0; j < c.hidden; ++j)
            REQUIRE(embed[size_t(t) * size_t(c.hidden) + size_t(j)] ==
                    table[size_t(ref.input_ids[size_t(t)]) * size_t(c.hidden) + size_t(j)]);
    // logits = transformers' logits within the f32 budget.
    const std::vector<float> logits = read("logits.f32", size_t(T) * size_t(ref.vocab));
    for (int t = 0; t < T; ++t)
        CHECK(compare_logits({logits.data() + size_t(t) * size_t(ref.vocab), size_t(ref.vocab)},
                             ref.row(t))
                  .peir <= 1e-4);
    std::filesystem::remove_all(out);
}

TEST_CASE("perplexity of stories260K matches transformers") {
    if (!staticlm::test::have_shared_data("stories260K-hf perplexity")) return;
    std::ifstream ej(fixtures_dir() / "perplexity" / "expected_stories260K_ctx64.json");
    const nlohmann::json expected = nlohmann::json::parse(ej);
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 2;
    const auto model = load_model(staticlm::test::shared_data() / "stories260K-hf", lo);
    std::ifstream tf(fixtures_dir() / "perplexity" / "story.txt", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(tf)), std::istreambuf_iterator<char>());
    const std::vector<int> ids = model_tokenizer(*model)->encode(text, true);
    REQUIRE(int(ids.size()) == expected["tokens"].get<int>());
    const PerplexityResult r = perplexity(model, ids, expected["ctx"].get<int>(), two_threads());
    CHECK(r.windows == expected["windows"].get<int>());
    CHECK(r.scored == expected["scored"].get<int>());
    CHECK(std::isfinite(r.perplexity()));
    CHECK(r.mean_nll() == doctest::Approx(expected["mean_nll"].get<double>()).epsilon(1e-5));
    CHECK(r.perplexity() == doctest::Approx(expected["perplexity"].get<double>()).epsilon(1e-5));

    // A window shorter than 2 or a single token cannot be scored.
    CHECK_THROWS_AS((void)perplexity(model, ids, 1, two_threads()), Error);
    CHECK_THROWS_AS((void)perplexity(model, std::span<const int>(ids.data(), 1), 64, two_threads()),
                    Error);
}
