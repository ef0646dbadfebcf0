// Parsing untrusted JSON: a nesting limit checked before nlohmann builds the
// document (deep nesting otherwise overflows the stack in any recursive walk
// or copy of the tree), errors that name the file and the byte, and typed
// lookups whose errors say which field has which wrong type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace staticlm {

// No file staticlm reads nests deeper than ~6; 64 leaves room and keeps any
// recursive walk of an accepted tree a few kilobytes of stack.
inline constexpr int kMaxJsonDepth = 64;

// Byte offset of the bracket that opens level max_depth + 1 (strings are
// skipped), or npos. Linear, no allocation; `text` need not be valid JSON.
size_t json_too_deep_at(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses `text` after the depth check. On failure returns false and sets
// `error` to "at byte N: <reason>" or "nested deeper than 64 levels at byte N".
// `callback` is nlohmann's parser callback (may be null).
bool try_parse_json(std::string_view text, nlohmann::json& out, std::string& error,
                    const nlohmann::json::parser_callback_t& callback = nullptr,
                    int max_depth = kMaxJsonDepth);

// An nlohmann exception's message without its "[json.exception.kind.N] " tag.
std::string json_error_reason(const nlohmann::json::exception& e);

// As try_parse_json; failure is Error(format) "<file>: invalid JSON <error>".
nlohmann::json parse_json(std::string_view text, const std::string& file);

// "object", "array", "string", "integer", "number" (not an integer), "boolean", "null".
const char* json_type_name(const nlohmann::json& v);

// Typed access to a member `key` of object `obj` whose path in the document is
// `path` ("" for the root). Errors are Error(format) "<file>: <path>.<key>
// must be <type>, not <actual type>" or "... is missing".
struct JsonAt {
    const nlohmann::json& v;
    std::string path;
    const std::string& file;

    std::string child(std::string_view key) const;  // "path.key" (or "key" at the root)
    std::string child(size_t index) const;          // "path[index]"
    [[noreturn]] void wrong_type(const std::string& where, const char* want,
                                 const nlohmann::json& got) const;
    [[noreturn]] void fail(const std::string& where, const std::string& what) const;

    // The member, or nullptr when absent or null.
    const nlohmann::json* find(std::string_view key) const;
    JsonAt at(std::string_view key) const;  // required member
    JsonAt at(size_t index) const;          // element of an array
    JsonAt object(std::string_view key) const;
    JsonAt array(std::string_view key) const;
    std::string string(std::string_view key) const;
    std::string string_or(std::string_view key, const std::string& fallback) const;
    bool boolean_or(std::string_view key, bool fallback) const;
    uint64_t unsigned_or(std::string_view key, uint64_t fallback) const;
    double number_or(std::string_view key, double fallback) const;
    // This value itself.
    void need(const char* want, bool ok) const {
        if (!ok) wrong_type(path, want, v);
    }
};

}  // namespace staticlm
