// Any-value schemas ({}, true, a schema of annotations only): which texts the
// automaton takes as a complete value, written out by hand, over a vocabulary
// of one token per printable ASCII byte.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"

using namespace staticlm;

namespace {

// Token 0: EOS (no bytes); token c - 31: the byte c, for c in 32..126.
std::shared_ptr<const TokenVocabulary> ascii() {
    std::vector<std::string> bytes = {""};
    for (int c = 32; c < 127; ++c) bytes.emplace_back(1, char(c));
    return std::make_shared<const TokenVocabulary>(bytes);
}

// Whether `text`, byte by byte, is a complete value of the constraint.
bool accepts(const Constraint& c, std::string_view text) {
    int state = c.start();
    for (char ch : text) {
        state = c.next(state, int(ch) - 31);
        if (state < 0) return false;
    }
    return c.complete(state);
}

}  // namespace

TEST_CASE("constrain: any value ({} and true): compact JSON, containers nested at most 3 deep") {
    const auto vocab = ascii();
    for (const char* schema : {"{}", "true", R"({"description":"anything","title":"t"})"}) {
        INFO(schema);
        const auto c = Constraint::json_schema(schema, vocab);
        for (const char* good : {"null", "true", "false", "0", "-12.5e3", "7E-2", R"("")", R"("x\"y\u00e9")", "[]",
                                 "{}", R"([1,"a",null,[true,{"k":2}]])", R"({"a":1,"a":{"b":[]}})", "[[[]]]",
                                 R"({"":{"":{"":0}}})"}) {
            INFO(good);
            CHECK(accepts(*c, good));
        }
        for (const char* bad : {"", "nul", "[1}", R"({"a"})", "{1:2}", "[1,]", R"({"a":1,})", " 1", "[ 1]", "01",
                                "[[[[]]]]", R"({"a":{"b":{"c":[]}}})", "{'a':1}", "[1]]", "tru"}) {
            INFO(bad);
            CHECK(!accepts(*c, bad));
        }
    }
}

TEST_CASE("constrain: a property without type takes any value; a keyword without type is refused") {
    const auto c = Constraint::json_schema(
        R"({"type":"object","properties":{"id":{"type":"integer"},"data":{"description":"any"}},"required":["id","data"]})",
        ascii());
    CHECK(accepts(*c, R"({"id":3,"data":[1,{"x":"y"}]})"));
    CHECK(accepts(*c, R"({"id":-1,"data":null})"));
    CHECK(!accepts(*c, R"({"id":3})"));
    CHECK(!accepts(*c, R"({"id":3,"data":})"));
    CHECK(!accepts(*c, R"({"data":1,"id":3})"));  // members in the schema's order
    CHECK_THROWS_WITH_AS(Constraint::json_schema(R"({"properties":{"a":{"minItems":1}}})", ascii()),
                         doctest::Contains("keyword 'minItems' needs a type"), Error);
    CHECK_THROWS_WITH_AS(Constraint::json_schema("false", ascii()), doctest::Contains("schema false accepts nothing"),
                         Error);
}
