// JSON Schema subset -> byte NFA. The output is compact JSON (no whitespace
// anywhere), object members in the order "properties" declares them (each
// required one always, each optional one present or not), no members beyond
// "properties". docs/BATCH.md lists the keywords; anything else is an error
// naming the keyword and its path.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "base/json.hpp"
#include "constrain_internal.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {

using nlohmann::json;

// Integers: at most 16 digits (exact as a double). Numbers: the same integer
// part, up to 16 fraction digits, an exponent of at most 2 digits.
constexpr int kMaxIntDigits = 16;
constexpr int kMaxFracDigits = 16;
constexpr int kMaxExpDigits = 2;
// Any value (a schema of annotations only, {} or true): containers nest at most
// this deep inside it. Each level holds one copy of the value for arrays and
// one for objects, so the automaton grows as 2^depth.
constexpr int kMaxAnyDepth = 3;

const std::set<std::string, std::less<>>& annotations() {
    static const std::set<std::string, std::less<>> k = {"title",       "description", "$schema", "$id",
                                                         "$comment",    "default",     "examples", "$defs",
                                                         "definitions", "readOnly",    "writeOnly", "deprecated"};
    return k;
}

const std::set<std::string, std::less<>>& supported() {
    static const std::set<std::string, std::less<>> k = {"type",     "enum",     "const",     "properties",
                                                         "required", "items",    "minItems",  "maxItems",
                                                         "anyOf",    "minLength", "maxLength", "additionalProperties",
                                                         "$ref"};
    return k;
}

class SchemaCompiler {
public:
    SchemaCompiler(const json& root, const ConstraintLimits& limits)
        : root_(root), limits_(limits), nfa_(limits.max_nfa_states) {}

    Constraint::Dfa compile() {
        const int start = nfa_.add_state(), end = nfa_.add_state();
        emit(root_, start, end, "$", 0);
        return nfa_.determinize(start, end, limits_.max_dfa_states, "json_schema");
    }

private:
    [[noreturn]] static void fail(const std::string& path, const std::string& what) {
        throw Error(ErrorKind::unsupported, "json_schema: " + what + " at " + path);
    }

    int count(const json& s, const char* key, const std::string& path, int fallback) const {
        const auto it = s.find(key);
        if (it == s.end()) return fallback;
        if (!it->is_number() || it->get<double>() != std::floor(it->get<double>()))
            fail(path + "." + key, std::string(key) + " must be a non-negative integer");
        const double v = it->get<double>();
        if (v < 0) fail(path + "." + key, std::string(key) + " must be >= 0");
        if (v > limits_.max_repeat)
            fail(path + "." + key, std::string(key) + " " + std::to_string(int64_t(v)) + " is above the limit of " +
                                       std::to_string(limits_.max_repeat));
        return int(v);
    }

    // `unit` from -> to between min and max times (max < 0: unbounded), with
    // `sep` between units.
    template <class Unit>
    void repeat(int from, int to, int min, int max, std::string_view sep, const Unit& unit) {
        if (max == 0) {
            nfa_.epsilon(from, to);
            return;
        }
        if (min == 0) nfa_.epsilon(from, to);
        int at = nfa_.add_state();
        unit(from, at);  // the first unit
        int done = 1;
        while (true) {
            if (done >= min) nfa_.epsilon(at, to);
            if (max >= 0 && done >= max) break;
            if (max < 0 && done >= std::max(min, 1)) {  // unbounded: loop on the last state
                const int mid = nfa_.add_state();
                nfa_.literal(at, mid, sep);
                unit(mid, at);
                break;
            }
            const int mid = nfa_.add_state(), next = nfa_.add_state();
            nfa_.literal(at, mid, sep);
            unit(mid, next);
            at = next;
            ++done;
        }
    }

    void emit(const json& s, int from, int to, const std::string& path, int depth) {
        if (depth > limits_.max_depth)
            fail(path, "schema nested deeper than " + std::to_string(limits_.max_depth) + " levels");
        if (s.is_boolean()) {
            if (!s.get<bool>()) fail(path, "schema false accepts nothing");
            emit_any(from, to, 0);
            return;
        }
        if (!s.is_object()) fail(path, std::string("a schema must be an object, not ") + json_type_name(s));
        for (const auto& [key, value] : s.items()) {
            (void)value;
            if (!annotations().count(key) && !supported().count(key))
                fail(path, "unsupported keyword '" + key + "'");
        }
        if (const auto it = s.find("$ref"); it != s.end()) {
            emit_ref(*it, from, to, path, depth);
            return;
        }
        if (const auto it = s.find("const"); it != s.end()) {
            nfa_.literal(from, to, it->dump());
            return;
        }
        if (const auto it = s.find("enum"); it != s.end()) {
            if (!it->is_array() || it->empty()) fail(path + ".enum", "enum must be a non-empty array");
            for (const json& v : *it) nfa_.literal(from, to, v.dump());
            return;
        }
        if (const auto it = s.find("anyOf"); it != s.end()) {
            if (!it->is_array() || it->empty()) fail(path + ".anyOf", "anyOf must be a non-empty array");
            for (size_t i = 0; i < it->size(); ++i)
                emit((*it)[i], from, to, path + ".anyOf[" + std::to_string(i) + "]", depth + 1);
            return;
        }
        const auto type = s.find("type");
        if (type == s.end()) {
            // No type: what the structural keywords imply.
            if (s.contains("properties") || s.contains("required")) return emit_type("object", s, from, to, path, depth);
            if (s.contains("items")) return emit_type("array", s, from, to, path, depth);
            for (const auto& [key, value] : s.items()) {
                (void)value;
                if (!annotations().count(key))
                    fail(path, "keyword '" + key + "' needs a type (a schema of annotations only is any value)");
            }
            emit_any(from, to, 0);
            return;
        }
        if (type->is_string()) return emit_type(type->get<std::string>(), s, from, to, path, depth);
        if (!type->is_array() || type->empty())
            fail(path + ".type", "type must be a string or a non-empty array of strings");
        for (size_t i = 0; i < type->size(); ++i) {
            if (!(*type)[i].is_string()) fail(path + ".type[" + std::to_string(i) + "]", "type must be a string");
            emit_type((*type)[i].get<std::string>(), s, from, to, path, depth);
        }
    }

    void emit_ref(const json& ref, int from, int to, const std::string& path, int depth) {
        if (!ref.is_string()) fail(path + ".$ref", "$ref must be a string");
        const std::string r = ref.get<std::string>();
        if (r.empty() || r[0] != '#')
            fail(path + ".$ref", "unsupported $ref '" + r + "' (only local references \"#/...\")");
        if (std::find(active_refs_.begin(), active_refs_.end(), r) != active_refs_.end())
            fail(path + ".$ref", "recursive $ref '" + r + "' (recursive schemas cannot be compiled)");
        const json* target = nullptr;
        try {
            target = &root_.at(json::json_pointer(r.substr(1)));
        } catch (const json::exception&) {
            fail(path + ".$ref", "$ref '" + r + "' points to nothing");
        }
        active_refs_.push_back(r);
        emit(*target, from, to, path + ".$ref(" + r + ")", depth + 1);
        active_refs_.pop_back();
    }

    void emit_type(const std::string& type, const json& s, int from, int to, const std::string& path, int depth) {
        auto only = [&](std::initializer_list<const char*> keys) {
            for (auto it = s.begin(); it != s.end(); ++it) {
                const std::string& key = it.key();
                if (annotations().count(key) || key == "type") continue;
                bool known = false;
                for (const char* k : keys) known = known || key == k;
                if (!known) fail(path, "keyword '" + key + "' does not apply to type " + type);
            }
        };
        if (type == "null") {
            only({});
            nfa_.literal(from, to, "null");
        } else if (type == "boolean") {
            only({});
            nfa_.literal(from, to, "true");
            nfa_.literal(from, to, "false");
        } else if (type == "integer" || type == "number") {
            only({});
            emit_number(from, to, type == "number");
        } else if (type == "string") {
            only({"minLength", "maxLength"});
            const int min = count(s, "minLength", path, 0), max = count(s, "maxLength", path, -1);
            if (max >= 0 && min > max) fail(path, "minLength " + std::to_string(min) + " > maxLength " + std::to_string(max));
            emit_string(from, to, min, max);
        } else if (type == "array") {
            only({"items", "minItems", "maxItems"});
            const auto items = s.find("items");
            if (items == s.end()) fail(path, "an array needs items (arrays of any value are not supported)");
            if (!items->is_object()) fail(path + ".items", "items must be a schema object (tuples are not supported)");
            const int min = count(s, "minItems", path, 0), max = count(s, "maxItems", path, -1);
            if (max >= 0 && min > max) fail(path, "minItems " + std::to_string(min) + " > maxItems " + std::to_string(max));
            const int open = nfa_.add_state(), close = nfa_.add_state();
            nfa_.literal(from, open, "[");
            repeat(open, close, min, max, ",", [&](int a, int b) { emit(*items, a, b, path + ".items", depth + 1); });
            nfa_.literal(close, to, "]");
        } else if (type == "object") {
            only({"properties", "required", "additionalProperties"});
            emit_object(s, from, to, path, depth);
        } else {
            fail(path + ".type", "unknown type '" + type + "'");
        }
    }

    // A JSON string of min..max characters (max < 0: any number).
    void emit_string(int from, int to, int min, int max) {
        const int open = nfa_.add_state(), close = nfa_.add_state();
        nfa_.literal(from, open, "\"");
        repeat(open, close, min, max, "", [&](int a, int b) { detail::json_string_char(nfa_, a, b); });
        nfa_.literal(close, to, "\"");
    }

    // Any JSON value, compact: null, booleans, numbers, strings, and arrays and
    // objects (any member names, in any order) of any values, containers
    // nested at most kMaxAnyDepth deep; deeper, only scalars.
    void emit_any(int from, int to, int level) {
        nfa_.literal(from, to, "null");
        nfa_.literal(from, to, "true");
        nfa_.literal(from, to, "false");
        emit_number(from, to, /*fraction=*/true);
        emit_string(from, to, 0, -1);
        if (level >= kMaxAnyDepth) return;
        {  // [ (value (, value)*)? ]
            const int open = nfa_.add_state(), item = nfa_.add_state(), after = nfa_.add_state();
            nfa_.literal(from, open, "[");
            nfa_.literal(open, to, "]");
            nfa_.epsilon(open, item);
            emit_any(item, after, level + 1);
            nfa_.literal(after, item, ",");
            nfa_.literal(after, to, "]");
        }
        {  // { (name : value (, name : value)*)? }
            const int open = nfa_.add_state(), member = nfa_.add_state(), name = nfa_.add_state(),
                      value = nfa_.add_state(), after = nfa_.add_state();
            nfa_.literal(from, open, "{");
            nfa_.literal(open, to, "}");
            nfa_.epsilon(open, member);
            emit_string(member, name, 0, -1);
            nfa_.literal(name, value, ":");
            emit_any(value, after, level + 1);
            nfa_.literal(after, member, ",");
            nfa_.literal(after, to, "}");
        }
    }

    void emit_number(int from, int to, bool fraction) {
        const int sign = nfa_.add_state(), intpart = nfa_.add_state();
        nfa_.epsilon(from, sign);
        nfa_.literal(from, sign, "-");
        nfa_.literal(sign, intpart, "0");
        const int lead = nfa_.add_state();
        nfa_.range(sign, lead, '1', '9');
        repeat(lead, intpart, 0, kMaxIntDigits - 1, "", [&](int a, int b) { nfa_.range(a, b, '0', '9'); });
        if (!fraction) {
            nfa_.epsilon(intpart, to);
            return;
        }
        const int frac = nfa_.add_state(), dot = nfa_.add_state();
        nfa_.epsilon(intpart, frac);
        nfa_.literal(intpart, dot, ".");
        repeat(dot, frac, 1, kMaxFracDigits, "", [&](int a, int b) { nfa_.range(a, b, '0', '9'); });
        nfa_.epsilon(frac, to);
        const int e = nfa_.add_state(), esign = nfa_.add_state();
        nfa_.range(frac, e, 'e', 'e');
        nfa_.range(frac, e, 'E', 'E');
        nfa_.epsilon(e, esign);
        nfa_.range(e, esign, '+', '+');
        nfa_.range(e, esign, '-', '-');
        repeat(esign, to, 1, kMaxExpDigits, "", [&](int a, int b) { nfa_.range(a, b, '0', '9'); });
    }

    // States at[i][started]: before property i, with or without a member
    // written already; a required property moves to at[i+1][1] only.
    void emit_object(const json& s, int from, int to, const std::string& path, int depth) {
        static const json kEmpty = json::object();
        const auto props_it = s.find("properties");
        const json& props = props_it == s.end() ? kEmpty : *props_it;
        if (!props.is_object()) fail(path + ".properties", "properties must be an object");
        if (const auto ap = s.find("additionalProperties"); ap != s.end() && !ap->is_boolean())
            fail(path + ".additionalProperties", "additionalProperties must be a boolean (no members beyond properties are written)");
        std::set<std::string> required;
        if (const auto req = s.find("required"); req != s.end()) {
            if (!req->is_array()) fail(path + ".required", "required must be an array of strings");
            for (const json& r : *req) {
                if (!r.is_string()) fail(path + ".required", "required must be an array of strings");
                if (!props.contains(r.get<std::string>()))
                    fail(path + ".required", "required property '" + r.get<std::string>() + "' is not in properties");
                required.insert(r.get<std::string>());
            }
        }
        // nlohmann keeps object members sorted; "declared order" is the order
        // of the schema text, recorded by the parser callback (see parse()).
        std::vector<std::string> names = ordered_keys(props);
        const size_t n = names.size();
        std::vector<std::array<int, 2>> at(n + 1);
        for (auto& a : at) a = {nfa_.add_state(), nfa_.add_state()};
        nfa_.literal(from, at[0][0], "{");
        for (size_t i = 0; i < n; ++i) {
            // One copy of the member: "," only when one was written before.
            const int key_at = nfa_.add_state(), member = nfa_.add_state();
            nfa_.epsilon(at[i][0], key_at);
            nfa_.literal(at[i][1], key_at, ",");
            nfa_.literal(key_at, member, json(names[i]).dump() + ":");
            emit(props[names[i]], member, at[i + 1][1], path + ".properties." + names[i], depth + 1);
            if (!required.count(names[i]))
                for (int started = 0; started < 2; ++started) nfa_.epsilon(at[i][size_t(started)], at[i + 1][size_t(started)]);
        }
        nfa_.literal(at[n][0], to, "}");
        nfa_.literal(at[n][1], to, "}");
    }

    std::vector<std::string> ordered_keys(const json& obj) const {
        std::vector<std::string> keys;
        const auto it = order_.find(&obj);
        if (it != order_.end()) {
            for (const std::string& k : it->second)
                if (obj.contains(k) && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
        for (const auto& [k, v] : obj.items()) {
            (void)v;
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
        return keys;
    }

public:
    // Member order of each "properties" object as written in the text.
    std::map<const json*, std::vector<std::string>> order_;

private:
    const json& root_;
    ConstraintLimits limits_;
    detail::Nfa nfa_;
    std::vector<std::string> active_refs_;
};

// Records the member order of every object: nlohmann's json sorts members, so
// the parse is done with ordered_json and the order copied out by path.
void record_order(const nlohmann::ordered_json& o, const json& j, std::map<const json*, std::vector<std::string>>& out) {
    if (o.is_object()) {
        std::vector<std::string>& keys = out[&j];
        for (const auto& [k, v] : o.items()) {
            keys.push_back(k);
            record_order(v, j.at(k), out);
        }
    } else if (o.is_array()) {
        for (size_t i = 0; i < o.size(); ++i) record_order(o[i], j.at(i), out);
    }
}

}  // namespace

std::shared_ptr<const Constraint> Constraint::json_schema(std::string_view schema,
                                                          std::shared_ptr<const TokenVocabulary> vocab,
                                                          const ConstraintLimits& limits) {
    if (!vocab) throw Error(ErrorKind::config, "json_schema: no vocabulary");
    json root;
    std::string error;
    if (!try_parse_json(schema, root, error, nullptr, limits.max_depth * 2 + 2))
        throw Error(ErrorKind::format, "json_schema: invalid JSON " + error);
    nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(schema);
    SchemaCompiler compiler(root, limits);
    record_order(ordered, root, compiler.order_);
    return std::make_shared<const Constraint>(compiler.compile(), std::move(vocab), limits, "json_schema");
}

}  // namespace staticlm
