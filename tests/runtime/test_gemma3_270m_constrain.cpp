// Constrained decoding on the real Gemma 3 270M GGUF (tools/get_model.sh;
// skipped when absent): the token bytes of its 262k SentencePiece vocabulary,
// and extraction prompts whose constrained outputs all parse and hold the
// schema's required members with their types (tools/check_json_outputs.py
// validates a whole batch with Python's jsonschema).
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/model.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;

TEST_CASE("gemma3-270m constrained: token bytes and extraction outputs that parse") {
    if (!test::have_gemma3_gguf()) return;
    LoadOptions lo;
    lo.native_weights = true;
    lo.threads = 2;
    const auto model = Model::load(test::gemma3_gguf(), lo);
    const Tokenizer& tok = *model->tokenizer();
    const auto vocab = std::make_shared<const TokenVocabulary>(tok);
    REQUIRE(vocab->size() == 262144);
    // Mid-sequence bytes: the SentencePiece space is a space, byte pieces are bytes.
    CHECK(vocab->bytes(tok.token_id("\xE2\x96\x81the")) == " the");
    CHECK(vocab->bytes(tok.token_id("<0x0A>")) == "\n");
    CHECK(vocab->bytes(tok.token_id("{")) == "{");
    CHECK(vocab->bytes(tok.eos_id()).empty());  // special: never allowed

    const char* schemas[] = {
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer"},)"
        R"("city":{"type":"string","maxLength":40},"languages":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":4}},)"
        R"("required":["name","age","city"]})",
        R"({"type":"object","properties":{"product":{"type":"string","minLength":1,"maxLength":40},"price":{"type":"number"},)"
        R"("currency":{"enum":["USD","EUR","GBP"]},"in_stock":{"type":"boolean"}},"required":["product","price","currency","in_stock"]})",
    };
    const char* texts[] = {
        "Aiko Tanaka is 29 years old, lives in Osaka and speaks Japanese and English.",
        "The wireless mouse costs 24.99 EUR and is sold out.",
    };
    SessionOptions so;
    so.max_seq = 512;
    so.prefill_buckets = {64};
    so.append_buckets = {16};
    so.threads = 2;
    Session session(model, so);
    for (int k = 0; k < 2; ++k) {
        GenerateOptions o;
        o.constraint = Constraint::json_schema(schemas[k], vocab);
        o.max_tokens = 160;
        for (float temp : {0.0f, 0.8f}) {
            o.sampling.temperature = temp;
            o.sampling.seed = 7;
            session.reset();
            const std::string prompt = std::string("Extract the facts of the text as JSON.\nText: ") + texts[k] + "\nJSON: ";
            const GenerateResult r = generate(session, &tok, tok.encode(prompt, true), o);
            INFO("schema ", k, " temperature ", temp, ": ", r.text);
            REQUIRE(r.reason == StopReason::eos);
            CHECK(r.complete);
            const nlohmann::json j = nlohmann::json::parse(r.text);
            if (k == 0) {
                CHECK(j.at("name").is_string());
                CHECK(j.at("age").is_number_integer());
                CHECK(j.at("city").is_string());
            } else {
                CHECK(j.at("price").is_number());
                CHECK(j.at("in_stock").is_boolean());
                const std::string cur = j.at("currency").get<std::string>();
                CHECK((cur == "USD" || cur == "EUR" || cur == "GBP"));
            }
        }
    }
}
