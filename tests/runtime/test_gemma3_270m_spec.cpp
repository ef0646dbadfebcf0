// Prompt-lookup speculation on the real Gemma 3 270M GGUF (tools/get_model.sh;
// skipped when absent): over 50 prompts, half asking to copy text from the
// prompt, greedy output with --spec ngram:8 is the output without it, token
// for token, and the copying prompts get drafts accepted. Outputs are short
// (16 tokens) to keep the test quick.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "model/model.hpp"
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
