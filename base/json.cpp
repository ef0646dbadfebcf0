// Depth-limited JSON parsing and typed lookups that name the field (see
// base/json.hpp).
#include "base/json.hpp"

#include "base/file.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

using nlohmann::json;

size_t json_too_deep_at(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::string_view::npos;
}

std::string json_error_reason(const json::exception& e) {
    std::string what = e.what();
    if (const size_t p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
    return what;
}

bool try_parse_json(std::string_view text, json& out, std::string& error,
                    const json::parser_callback_t& callback, int max_depth) {
    const size_t deep = json_too_deep_at(text, max_depth);
    if (deep != std::string_view::npos) {
        error = "nested deeper than " + std::to_string(max_depth) + " levels at byte " +
                std::to_string(deep);
        return false;
    }
    try {
        out = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
        return true;
    } catch (const json::parse_error& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
        std::string what = json_error_reason(e);
        if (const size_t p = what.find(": ");
            p != std::string::npos && what.compare(0, 11, "parse error") == 0)
            what.erase(0, p + 2);
        error = "at byte " + std::to_string(e.byte) + ": " + printable(what, 300);
        return false;
    } catch (const json::exception& e) {  // out_of_range.406: a number beyond double ("1e800")
        error = printable(json_error_reason(e), 300);
        return false;
    }
}

json parse_json(std::string_view text, const std::string& file) {
    json j;
    std::string error;
    if (!try_parse_json(text, j, error))
        throw Error(ErrorKind::format, file + ": invalid JSON " + error);
    return j;
}

const char* json_type_name(const json& v) {
    if (v.is_number_integer()) return "integer";
    if (v.is_number_float()) return "number";
    return v.type_name();
}

std::string JsonAt::child(std::string_view key) const {
    const std::string k = printable(key, 80);
    return path.empty() ? k : path + "." + k;
}

std::string JsonAt::child(size_t index) const { return path + "[" + std::to_string(index) + "]"; }

void JsonAt::wrong_type(const std::string& where, const char* want, const json& got) const {
    fail(where, std::string("must be ") + want + ", not " + json_type_name(got));
}

void JsonAt::fail(const std::string& where, const std::string& what) const {
    throw Error(ErrorKind::format,
                file + ": " + (where.empty() ? "the document" : where) + " " + what);
}

const json* JsonAt::find(std::string_view key) const {
    if (!v.is_object()) return nullptr;
    const auto it = v.find(key);
    if (it == v.end() || it->is_null()) return nullptr;
    return &*it;
}

JsonAt JsonAt::at(std::string_view key) const {
    need("an object", v.is_object());
    const json* m = find(key);
    if (!m) fail(child(key), "is missing");
    return {*m, child(key), file};
}

JsonAt JsonAt::at(size_t index) const {
    need("an array", v.is_array());
    if (index >= v.size()) fail(child(index), "is missing");
    return {v[index], child(index), file};
}

JsonAt JsonAt::object(std::string_view key) const {
    JsonAt a = at(key);
    a.need("an object", a.v.is_object());
    return a;
}

JsonAt JsonAt::array(std::string_view key) const {
    JsonAt a = at(key);
    a.need("an array", a.v.is_array());
    return a;
}

std::string JsonAt::string(std::string_view key) const {
    const JsonAt a = at(key);
    a.need("a string", a.v.is_string());
    return a.v.get<std::string>();
}

std::string JsonAt::string_or(std::string_view key, const std::string& fallback) const {
    const json* m = find(key);
    if (!m) return fallback;
    if (!m->is_string()) wrong_type(child(key), "a string", *m);
    return m->get<std::string>();
}

bool JsonAt::boolean_or(std::string_view key, bool fallback) const {
    const json* m = find(key);
    if (!m) return fallback;
    if (!m->is_boolean()) wrong_type(child(key), "true or false", *m);
    return m->get<bool>();
}

uint64_t JsonAt::unsigned_or(std::string_view key, uint64_t fallback) const {
    const json* m = find(key);
    if (!m) return fallback;
    if (!m->is_number_unsigned()) wrong_type(child(key), "a non-negative integer", *m);
    return m->get<uint64_t>();
}

double JsonAt::number_or(std::string_view key, double fallback) const {
    const json* m = find(key);
    if (!m) return fallback;
    if (!m->is_number()) wrong_type(child(key), "a number", *m);
    return m->get<double>();
}

}  // namespace staticlm
