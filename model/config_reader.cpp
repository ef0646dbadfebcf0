// ConfigReader (config_reader.hpp): typed reads of config.json keys with the
// file and key path in every error.
#include "model/config_reader.hpp"

#include <cmath>
#include <cstdio>

#include "base/json.hpp"

namespace staticlm::detail {

namespace {

std::string number_text(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

}  // namespace

std::string Range::text() const {
    return std::string(lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + (hi_open ? ")" : "]");
}

void ConfigReader::fail(ErrorKind kind, const std::string& key, const std::string& what) const {
    throw Error(kind, file + ": '" + prefix + key + "' " + what);
}

ConfigReader ConfigReader::object(const std::string& key) const {
    if (!j.contains(key) || !j[key].is_object()) fail(ErrorKind::format, key, "must be an object");
    return ConfigReader{j[key], file, prefix + key + "."};
}

int64_t ConfigReader::integer(const std::string& key, int64_t def, int64_t lo, int64_t hi,
                              bool required) const {
    if (!has(key)) {
        if (required) fail(ErrorKind::format, key, "is missing");
        return def;
    }
    const json& v = j[key];
    if (!v.is_number_integer()) fail(ErrorKind::format, key, "must be an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(ErrorKind::format, key, "is out of range");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
        fail(ErrorKind::format, key,
             "= " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
}

double ConfigReader::number(const std::string& key, double def) const {
    if (!has(key)) return def;
    if (!j[key].is_number()) fail(ErrorKind::format, key, "must be a number");
    const double x = j[key].get<double>();
    if (!std::isfinite(x)) fail(ErrorKind::format, key, "must be finite");
    return x;
}

double ConfigReader::number(const std::string& key, std::optional<double> def, Range range) const {
    if (!has(key) && !def) fail(ErrorKind::format, key, "is missing");
    const double x = number(key, def.value_or(0.0));
    if (!range.contains(x))
        fail(ErrorKind::format, key, "= " + number_text(x) + " is outside " + range.text());
    return x;
}

float ConfigReader::real(const std::string& key, std::optional<double> def, Range range) const {
    const double x = number(key, def, range);
    // Where the value is used it is a float: it must still be in range there.
    const float f = float(x);
    if (!std::isfinite(f) || !range.contains(double(f)))
        fail(ErrorKind::format, key,
             "= " + number_text(x) + " is " + number_text(double(f)) + " as a float, outside " + range.text());
    return f;
}

bool ConfigReader::boolean(const std::string& key, bool def) const {
    if (!has(key)) return def;
    if (!j[key].is_boolean()) fail(ErrorKind::format, key, "must be true or false");
    return j[key].get<bool>();
}

std::string ConfigReader::string(const std::string& key, const std::string& def) const {
    if (!has(key)) return def;
    if (!j[key].is_string()) fail(ErrorKind::format, key, "must be a string");
    return j[key].get<std::string>();
}

std::vector<int> ConfigReader::id_list(const std::string& key) const {
    std::vector<int> out;
    if (!has(key)) return out;
    auto one = [&](const json& v) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab)
            fail(ErrorKind::format, key, "must be a token id or a list of token ids");
        out.push_back(int(v.get<int64_t>()));
    };
    if (j[key].is_array()) {
        if (j[key].size() > kMaxIdList)
            fail(ErrorKind::format, key,
                 "lists " + std::to_string(j[key].size()) + " token ids, more than the limit of " +
                     std::to_string(kMaxIdList));
        for (const json& v : j[key]) one(v);
    } else {
        one(j[key]);
    }
    return out;
}

json parse_json_object(const std::string& text, const std::string& file) {
    json j = staticlm::parse_json(text, file);  // depth-limited; errors name the byte
    if (!j.is_object()) throw Error(ErrorKind::format, file + ": not a JSON object");
    return j;
}

}  // namespace staticlm::detail
