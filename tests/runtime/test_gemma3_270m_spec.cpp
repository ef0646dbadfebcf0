// Prompt-lookup speculation on the real Gemma 3 270M GGUF (tools/get_model.sh;
// skipped when absent): over 50 prompts, half asking to copy text from the
// prompt, greedy output with --spec ngram:8 is the output without it, token
// for token, and the copying prompts get drafts accepted; the same through a
// BatchGenerator of 4 slots (tokens and log-probabilities bit for bit).
// Outputs are short (16 and 20 tokens) to keep the test quick.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "model/model.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;

TEST_CASE("gemma3-270m speculation: greedy output identical with and without --spec over 50 prompts") {
    if (!test::have_gemma3_gguf()) return;
    LoadOptions lo;
    lo.native_weights = true;
    lo.threads = 2;
    const auto model = Model::load(test::gemma3_gguf(), lo);
    const Tokenizer& tok = *model->tokenizer();
    SessionOptions so;
    so.max_seq = 256;
    so.prefill_buckets = {64, 128};
    so.append_buckets = {16};
    so.threads = 2;
    Session plain(model, so);
    so.all_logits = true;
    Session spec(model, so);

    const char* subjects[] = {"Maria Lopez", "the red bicycle", "Dr. Okafor", "the train to Leeds", "a jar of honey",
                              "the quarterly report", "Tomasz", "the blue whale", "the museum", "Mount Fuji"};
    const char* facts[] = {"arrived at 9:45 on Monday", "costs 149 dollars", "was built in 1887",
                           "weighs about 3.2 kilograms", "is closed for repairs until June"};
    int accepted = 0;
    for (int i = 0; i < 50; ++i) {
        const std::string fact = std::string(subjects[i % 10]) + " " + facts[i % 5] + ".";
        const std::string ask = i % 2 == 0 ? "Repeat the following sentence exactly: " + fact
                                           : "Write one sentence about " + std::string(subjects[i % 10]) + ".";
        const std::string prompt = "<start_of_turn>user\n" + ask + "<end_of_turn>\n<start_of_turn>model\n";
        const std::vector<int> ids = tok.encode(prompt, true);
        GenerateOptions o;
        o.max_tokens = 16;
        plain.reset();
        const GenerateResult want = generate(plain, &tok, ids, o);
        o.speculation.max_draft = 8;
        spec.reset();
        const GenerateResult got = generate(spec, &tok, ids, o);
        CAPTURE(prompt);
        CHECK(got.tokens == want.tokens);
        CHECK(got.text == want.text);
        CHECK(spec.pos() == plain.pos());
        accepted += got.stats.accepted_tokens;
    }
    MESSAGE("drafted tokens accepted over 50 prompts: " << accepted);
    CHECK(accepted > 100);
}

TEST_CASE("gemma3-270m batch speculation: greedy results identical with and without over 50 prompts at 4 slots") {
    if (!test::have_gemma3_gguf()) return;
    LoadOptions lo;
    lo.native_weights = true;
    lo.threads = 2;
    const auto model = Model::load(test::gemma3_gguf(), lo);
    const Tokenizer& tok = *model->tokenizer();
    const char* subjects[] = {"Maria Lopez", "the red bicycle", "Dr. Okafor", "the train to Leeds", "a jar of honey",
                              "the quarterly report", "Tomasz", "the blue whale", "the museum", "Mount Fuji"};
    const char* facts[] = {"arrived at 9:45 on Monday", "costs 149 dollars", "was built in 1887",
                           "weighs about 3.2 kilograms", "is closed for repairs until June"};
    std::vector<std::vector<int>> prompts;
    for (int i = 0; i < 50; ++i) {
        const std::string fact = std::string(subjects[i % 10]) + " " + facts[i % 5] + ".";
        const std::string ask = i % 2 == 0 ? "Repeat the following sentence exactly: " + fact
                                           : "Write one sentence about " + std::string(subjects[i % 10]) + ".";
        prompts.push_back(tok.encode("<start_of_turn>user\n" + ask + "<end_of_turn>\n<start_of_turn>model\n", true));
    }
    // Every prompt through 4 slots; returns each one's tokens and log-probabilities.
    auto run = [&](int max_draft, int& accepted) {
        BatchSessionOptions bo;
        bo.slots = 4;
        bo.session.max_seq = 128;
        bo.session.prefill_buckets = {64, 128};
        bo.session.append_buckets = {16};
        bo.session.threads = 2;
        bo.max_draft = max_draft;
        BatchGenerator gen(model, bo);
        SpeculationOptions spec;
        spec.max_draft = max_draft;
        std::vector<std::vector<int>> tokens(prompts.size());
        std::vector<std::vector<float>> logprobs(prompts.size());
        size_t next = 0, done = 0;
        while (done < prompts.size()) {
            while (next < prompts.size() && gen.active() < gen.capacity())
                gen.submit(next, prompts[next], {}, 20, model->config().eos_ids, 0, nullptr, spec), ++next;
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s)
                if (gen.in_use(s) && gen.finished(s)) {
                    const auto g = gen.generated(s);
                    const auto l = gen.logprobs(s);
                    tokens[gen.tag(s)].assign(g.begin(), g.end());
                    logprobs[gen.tag(s)].assign(l.begin(), l.end());
                    accepted += gen.stats(s).accepted_tokens;
                    gen.release(s);
                    ++done;
                }
        }
        return std::make_pair(tokens, logprobs);
    };
    int none = 0, accepted = 0;
    const auto want = run(0, none);
    const auto got = run(8, accepted);
    for (size_t i = 0; i < prompts.size(); ++i) {
        CAPTURE(i);
        CHECK(got.first[i] == want.first[i]);
        CHECK(got.second[i] == want.second[i]);  // float ==: bit for bit (none is NaN)
    }
    MESSAGE("batch: drafted tokens accepted over 50 prompts: " << accepted);
    CHECK(none == 0);
    CHECK(accepted > 100);
}
