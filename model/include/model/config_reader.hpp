// Typed, range-checked reads of one JSON object of a config file, for the
// config parsers of model/families/. Every error names the file and the key
// with its path inside the file ('text_config.rope_parameters.factor').
// Internal to model/.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/error.hpp"

namespace staticlm::detail {

using json = nlohmann::json;

// Limits that keep every product we form (rows × cols, L × D) inside int and
// reject absurd values before any allocation.
constexpr int64_t kMaxDim = int64_t{1} << 20;  // hidden, ffn, head_dim
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 4096;
constexpr double kFloatMax = 3.4028234663852886e38;  // FLT_MAX
// A list of special token ids (eos_token_id) longer than this is not a config.
constexpr size_t kMaxIdList = 4096;

// The interval a float field must lie in: "(0, 1]" is {0, 1, true, false}.
struct Range {
    double lo = 0, hi = kFloatMax;
    bool lo_open = false, hi_open = false;
    bool contains(double x) const {
        return (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
    }
    std::string text() const;
};

struct ConfigReader {
    const json& j;
    const std::string& file;
    std::string prefix;  // "text_config." for nested configs

    [[noreturn]] void fail(ErrorKind kind, const std::string& key, const std::string& what) const;
    bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }
    // A reader of the object at `key` (Error(format) when it is not an object).
    ConfigReader object(const std::string& key) const;

    int64_t integer(const std::string& key, int64_t def, int64_t lo, int64_t hi,
                    bool required = false) const;
    // A finite number, for values used in double precision.
    double number(const std::string& key, double def) const;
    // A number used in double precision that must lie in `range`; no default
    // (nullopt): the key is required.
    double number(const std::string& key, std::optional<double> def, Range range) const;
    // A number used as a float: it must lie in `range` as written and again
    // after rounding to float (1e-50 is 0 as a float, 1e300 is inf).
    float real(const std::string& key, std::optional<double> def, Range range) const;
    bool boolean(const std::string& key, bool def) const;
    std::string string(const std::string& key, const std::string& def) const;
    // An int, a list of ints, or null.
    std::vector<int> id_list(const std::string& key) const;
};

// Parses a JSON object (Error(format) naming the file otherwise), with the
// nesting limit of base/json.hpp.
json parse_json_object(const std::string& text, const std::string& file);

}  // namespace staticlm::detail
