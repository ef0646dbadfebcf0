// Bad JSON schemas and GBNF grammars (runtime/constrain_*.cpp): each is a
// clear Error naming the keyword or rule and where it is, never a crash.
#include <doctest/doctest.h>

#include <string>

#include "staticlm/batch.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"

using namespace staticlm;

namespace {

std::shared_ptr<const TokenVocabulary> ascii_vocab() {
    std::vector<std::string> bytes{""};
    for (int c = 0x20; c < 0x7F; ++c) bytes.emplace_back(1, char(c));
    return std::make_shared<const TokenVocabulary>(bytes);
}

struct Row {
    const char* text;
    ErrorKind kind;
    const char* message;  // a substring of the error
};

void check_schema(const Row& row, const ConstraintLimits& limits = {}) {
    INFO("schema: ", row.text);
    try {
        Constraint::json_schema(row.text, ascii_vocab(), limits);
        FAIL("compiled");
    } catch (const Error& e) {
        CHECK(e.kind() == row.kind);
        CHECK_MESSAGE(std::string(e.what()).find(row.message) != std::string::npos, e.what());
    }
}

void check_grammar(const Row& row) {
    INFO("grammar: ", row.text);
    try {
        Constraint::grammar(row.text, ascii_vocab());
        FAIL("compiled");
    } catch (const Error& e) {
        CHECK(e.kind() == row.kind);
        CHECK_MESSAGE(std::string(e.what()).find(row.message) != std::string::npos, e.what());
    }
}

}  // namespace

TEST_CASE("bad json_schema: unsupported keywords, $ref, types and limits") {
    const ErrorKind U = ErrorKind::unsupported;
    const Row rows[] = {
        {R"({"type":"object","properties":{"age":{"type":"integer","minimum":0}}})", U,
         "unsupported keyword 'minimum' at $.properties.age"},
        {R"({"oneOf":[{"type":"null"}]})", U, "unsupported keyword 'oneOf' at $"},
        {R"({"type":"string","pattern":"^a"})", U, "unsupported keyword 'pattern' at $"},
        {R"({"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"})",
         U, "recursive $ref '#/$defs/node'"},
        {R"({"$ref":"#"})", U, "recursive $ref '#'"},
        {R"({"$ref":"https://example.com/s.json"})", U, "only local references"},
        {R"({"$ref":"#/$defs/missing"})", U, "points to nothing"},
        {R"({"type":"date"})", U, "unknown type 'date' at $.type"},
        {R"({"type":["string",3]})", U, "type must be a string at $.type[1]"},
        {R"({"type":"object","properties":{"a":{"type":"null"}},"required":["b"]})", U,
         "required property 'b' is not in properties"},
        {R"({"type":"string","minLength":5,"maxLength":2})", U, "minLength 5 > maxLength 2"},
        {R"({"type":"string","maxLength":100000})", U, "maxLength 100000 is above the limit of 1024"},
        {R"({"type":"string","maxLength":-1})", U, "maxLength must be >= 0"},
        {R"({"type":"string","maxLength":1.5})", U, "must be a non-negative integer"},
        {R"({"type":"array"})", U, "an array needs items"},
        {R"({"type":"array","items":[{"type":"null"}]})", U, "tuples are not supported"},
        {R"({"type":"string","items":{"type":"null"}})", U, "keyword 'items' does not apply to type string"},
        {R"({"type":"object","additionalProperties":{"type":"string"}})", U, "additionalProperties must be a boolean"},
        {R"({"enum":[]})", U, "enum must be a non-empty array at $.enum"},
        {R"({"anyOf":[]})", U, "anyOf must be a non-empty array"},
        {R"({"minLength":3})", U, "keyword 'minLength' needs a type"},
        {R"({"type":"object","properties":{"a":{"maxItems":2,"title":"t"}}})", U,
         "keyword 'maxItems' needs a type (a schema of annotations only is any value) at $.properties.a"},
        {R"({"type":"object","properties":{"a":false}})", U, "schema false accepts nothing at $.properties.a"},
        {R"([1,2])", U, "a schema must be an object"},
        {R"({"type":)", ErrorKind::format, "json_schema: invalid JSON"},
        {R"({"type":"string"}   x)", ErrorKind::format, "invalid JSON"},
        // Found by fuzz_constrain: a number beyond double threw out of the parser.
        {R"({"enum":[666.77770008e0800]})", ErrorKind::format, "number overflow"},
    };
    for (const Row& r : rows) check_schema(r);
}

TEST_CASE("bad json_schema: nesting and automaton limits") {
    ConstraintLimits tight;
    tight.max_depth = 3;
    check_schema({R"({"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"null"}}}}})",
                  ErrorKind::unsupported, "schema nested deeper than 3 levels at $.items.items.items.items"},
                 tight);
    ConstraintLimits small;
    small.max_dfa_states = 50;
    check_schema({R"({"type":"string","maxLength":100})", ErrorKind::capacity, "more than 50 automaton states"}, small);
    // Deeper than the JSON parser's bound: refused before any recursion.
    std::string deep;
    for (int i = 0; i < 200; ++i) deep += "{\"type\":\"array\",\"items\":";
    deep += "{\"type\":\"null\"}";
    for (int i = 0; i < 200; ++i) deep += "}";
    check_schema({deep.c_str(), ErrorKind::format, "nested deeper than"});
}

TEST_CASE("bad json_schema: a vocabulary that cannot spell the value") {
    // No '"' token: no string can be written.
    std::vector<std::string> bytes{"", "a", "b", "{", "}"};
    try {
        Constraint::json_schema(R"({"type":"string"})", std::make_shared<const TokenVocabulary>(bytes));
        FAIL("compiled");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::unsupported);
        CHECK(std::string(e.what()).find("no sequence of the vocabulary's tokens") != std::string::npos);
    }
}

TEST_CASE("bad grammar: undefined rules, syntax and limits") {
    const ErrorKind U = ErrorKind::unsupported;
    const Row rows[] = {
        {"root ::= value\n", U, "rule 'root' refers to undefined rule 'value'"},
        {"root ::= \"a\"\nother ::= missing \"b\"\n", U, "rule 'other' refers to undefined rule 'missing'"},
        {"start ::= \"a\"\n", U, "no rule 'root'"},
        {"root ::= \"a\"\nroot ::= \"b\"\n", U, "rule 'root' is defined twice"},
        {"root ::= \"abc\n", U, "unterminated string literal"},
        {"root ::= [ab\n", U, "unterminated character class"},
        {"root ::= [z-a]\n", U, "end before its start"},
        {"root ::= \"\\q\"\n", U, "unknown escape \\q"},
        {"root ::= \"\\xZZ\"\n", U, "bad hex digit"},
        {"root ::= \"\\uD800\"\n", U, "outside the Unicode scalar values"},
        {"root ::= (\"a\" | \"b\"\n", U, "expected )"},
        {"root ::= \"a\"{3,1}\n", U, "n < m"},
        {"root ::= \"a\"{99999}\n", U, "above the limit"},
        {"root ::= \"a\"*****\n", U, "repetition operators in a row"},
        {"root := \"a\"\n", U, "expected ::="},
        {"::= \"a\"\n", U, "expected a rule name"},
        {"root ::= @\n", U, "unexpected '@'"},
    };
    for (const Row& r : rows) check_grammar(r);
    std::string deep = "root ::= ";
    for (int i = 0; i < 100; ++i) deep += "(";
    deep += "\"a\"";
    for (int i = 0; i < 100; ++i) deep += ")";
    check_grammar({deep.c_str(), U, "groups nested deeper than 32"});
}

TEST_CASE("bad batch line: a number beyond double is an error of its line") {
    // It used to escape parse_request and end the whole job.
    const BatchRequest r = parse_request(R"({"id":"a","prompt":"x","temperature":1e800})", 3, RequestDefaults{});
    CHECK(r.failed);
    CHECK(r.error_kind == ErrorKind::format);
    CHECK_MESSAGE(r.error.find("line 3") != std::string::npos, r.error);
    CHECK_MESSAGE(r.error.find("number overflow") != std::string::npos, r.error);
    CHECK(r.id.empty());
}
