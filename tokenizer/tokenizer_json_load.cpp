// Loads tokenizer.json (+ tokenizer_config.json). The large model.vocab and
// model.merges values are read by a hand-written scanner straight into hash
// maps (a DOM parse of Gemma's 33 MB file takes over a second); the rest of
// the document, with those two values cut out, goes through nlohmann::json.
//
// Untrusted input: every file is read through base/file (regular files only,
// size limits), nesting is limited (the scanner counts levels; the rest is
// depth-checked before nlohmann parses it), subtrees are walked by reference
// (never copied: a deep copy recurses), and a value of the wrong type is an
// error naming its path ("normalizer.normalizers[2].content must be a string,
// not integer"), not a parse error.
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/file.hpp"
#include "base/json.hpp"
#include "staticlm/error.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace staticlm {
namespace tokjson {
namespace {

using nlohmann::json;

// The JSON type a value starting with `c` has, for messages.
const char* type_at(char c) {
    switch (c) {
        case '{':
            return "object";
        case '[':
            return "array";
        case '"':
            return "string";
        case 't':
        case 'f':
            return "boolean";
        case 'n':
            return "null";
        default:
            return "number";
    }
}

// A minimal JSON reader over a byte range: strings, integers, and skipping.
class Scanner {
public:
    Scanner(std::string_view doc, size_t pos, const std::string& file)
        : doc_(doc), pos_(pos), file_(file) {}
    size_t pos() const { return pos_; }
    char peek() {
        ws();
        if (pos_ >= doc_.size()) fail("unexpected end of file");
        return doc_[pos_];
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }
    bool accept(char c) {
        if (peek() != c) return false;
        ++pos_;
        return true;
    }
    void string(std::string& out) {
        expect('"');
        out.clear();
        for (;;) {
            size_t j = pos_;
            while (j < doc_.size() && doc_[j] != '"' && doc_[j] != '\\') ++j;
            if (j >= doc_.size()) fail("unterminated string");
            out.append(doc_.data() + pos_, j - pos_);
            pos_ = j + 1;
            if (doc_[j] == '"') return;
            if (pos_ >= doc_.size()) fail("unterminated string");
            const char e = doc_[pos_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && doc_.substr(pos_, 2) == "\\u") {
                        const size_t save = pos_;
                        pos_ += 2;
                        const uint32_t lo = hex4();
                        if (lo >= 0xDC00 && lo < 0xE000)
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else
                            pos_ = save;
                    }
                    if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;  // a lone surrogate
                    append_utf8(out, cp);
                    break;
                }
                default:
                    fail("bad escape in string");
            }
        }
    }
    // An integer; one of more than 18 digits saturates at 10^18 (callers
    // quote the digits from the document in their messages).
    long long integer() {
        ws();
        size_t j = pos_;
        bool neg = j < doc_.size() && doc_[j] == '-';
        if (neg) ++j;
        long long v = 0;
        const size_t digits = j;
        constexpr long long kSaturate = 1000000000000000000LL;
        while (j < doc_.size() && doc_[j] >= '0' && doc_[j] <= '9') {
            v = v >= kSaturate / 10 ? kSaturate : v * 10 + (doc_[j] - '0');
            ++j;
        }
        if (j == digits) fail("expected an integer");
        pos_ = j;
        return neg ? -v : v;
    }
    // Skips one value nested `level` levels deep; a value that nests deeper
    // than kMaxJsonDepth in all is an error at the bracket that does.
    void skip_value(int level = 0) {
        const char c = peek();
        if (c == '"') {
            skip_string();
        } else if (c == '{' || c == '[') {
            int depth = 0;
            while (pos_ < doc_.size()) {
                const char d = doc_[pos_];
                if (d == '"') {
                    skip_string();
                    continue;
                }
                if ((d == '{' || d == '[') && level + depth + 1 > kMaxJsonDepth)
                    throw Error(ErrorKind::format, file_ + ": JSON nested deeper than " +
                                                       std::to_string(kMaxJsonDepth) +
                                                       " levels at byte " + std::to_string(pos_));
                ++pos_;
                if (d == '{' || d == '[')
                    ++depth;
                else if ((d == '}' || d == ']') && --depth == 0)
                    return;
            }
            fail("unterminated object or array");
        } else {
            while (pos_ < doc_.size() && doc_[pos_] != ',' && doc_[pos_] != '}' &&
                   doc_[pos_] != ']' && !is_ws(doc_[pos_]))
                ++pos_;
        }
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorKind::format,
                    file_ + ": malformed JSON at byte " + std::to_string(pos_) + ": " + what);
    }
    // Well-formed JSON of the wrong shape: says which value has which type.
    [[noreturn]] void wrong_type(const std::string& where, const std::string& want) {
        const char* got = type_at(peek());
        throw Error(ErrorKind::format, file_ + ": " + where + " must be " + want + ", not " + got +
                                           " (at byte " + std::to_string(pos_) + ")");
    }

private:
    static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
    void ws() {
        while (pos_ < doc_.size() && is_ws(doc_[pos_])) ++pos_;
    }
    void skip_string() {
        ++pos_;
        while (pos_ < doc_.size() && doc_[pos_] != '"') pos_ += doc_[pos_] == '\\' ? 2 : 1;
        if (pos_ >= doc_.size()) fail("unterminated string");
        ++pos_;
    }
    uint32_t hex4() {
        if (pos_ + 4 > doc_.size()) fail("bad \\u escape");
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = doc_[pos_++];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<uint32_t>(c - 'A' + 10);
            else
                fail("bad \\u escape");
        }
        return v;
    }
    std::string_view doc_;
    size_t pos_;
    const std::string& file_;
};

struct Range {
    size_t begin = 0, end = 0;
    bool found() const { return end > begin; }
};

[[noreturn]] void unsupported(const std::string& file, const std::string& what) {
    throw Error(ErrorKind::unsupported, file + ": " + what + " is not supported by staticlm");
}

// A token id from the JSON: an integer in [0, 2^31). Anything else (a float
// such as 1e30 would overflow a cast) is an error naming the file and `what`.
int id_value(const json& v, const std::string& file, const std::string& what) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
        throw Error(ErrorKind::format, file + ": " + what + " is not a token id (" +
                                           (v.is_number() ? v.dump() : v.type_name()) + ")");
    return static_cast<int>(v.get<int64_t>());
}

// The "type" of a pipeline component (an object), or "" for null.
std::string type_of(const JsonAt& a) {
    if (a.v.is_null()) return "";
    a.need("an object", a.v.is_object());
    if (!a.find("type")) a.fail(a.path, "has no \"type\"");
    return a.string("type");
}

// {"String": s} -> s; false for anything else (a Regex is the caller's to report).
bool string_pattern(const JsonAt& p, std::string& out) {
    if (!p.v.is_object() || !p.find("String")) return false;
    out = p.string("String");
    return true;
}

PrependScheme prepend_scheme(const JsonAt& a) {
    if (a.find("prepend_scheme")) {
        const std::string s = a.string("prepend_scheme");
        if (s == "always") return PrependScheme::kAlways;
        if (s == "first") return PrependScheme::kFirst;
        if (s == "never") return PrependScheme::kNever;
        unsupported(a.file, "Metaspace prepend_scheme \"" + printable(s) + "\"");
    }
    return a.boolean_or("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

// The parse_* functions recurse into Sequences: at most kMaxJsonDepth / 2
// levels, since the nesting of the document was checked.
void parse_normalizer(const JsonAt& a, std::vector<NormStep>& out) {
    const std::string type = type_of(a);
    if (type.empty()) return;
    if (type == "Sequence") {
        const JsonAt list = a.array("normalizers");
        for (size_t i = 0; i < list.v.size(); ++i) parse_normalizer(list.at(i), out);
    } else if (type == "Replace") {
        NormStep s{NormKind::kReplace, "", a.string("content")};
        if (!string_pattern(a.at("pattern"), s.pattern))
            unsupported(a.file, "normalizer Replace with a Regex pattern");
        out.push_back(std::move(s));
    } else if (type == "Prepend") {
        out.push_back({NormKind::kPrepend, "", a.string("prepend")});
    } else if (type == "NFC") {
        out.push_back({NormKind::kNfc, "", ""});
    } else {
        unsupported(a.file, "normalizer " + printable(type));
    }
}

void parse_pre_tokenizer(const JsonAt& a, std::vector<PreStep>& out) {
    const std::string type = type_of(a);
    if (type.empty()) return;
    const std::string& file = a.file;
    PreStep s{};
    if (type == "Sequence") {
        const JsonAt list = a.array("pretokenizers");
        for (size_t i = 0; i < list.v.size(); ++i) parse_pre_tokenizer(list.at(i), out);
        return;
    } else if (type == "Split") {
        if (!a.find("pattern"))
            throw Error(ErrorKind::format, file + ": pre_tokenizer Split has no pattern");
        const JsonAt p = a.at("pattern");
        if (string_pattern(p, s.pattern)) {
            s.kind = PreKind::kSplitString;
        } else if (p.v.is_object() && p.find("Regex")) {
            s.kind = PreKind::kSplitRegex;
            const std::string re = p.string("Regex");
            if (!known_split_regex(re, s.regex))
                unsupported(file,
                            "pre_tokenizer Split regex " + printable(re) +
                                " (only the Llama 3, Qwen2, GPT-2, o200k and Tekken patterns are "
                                "implemented)");
        } else {
            throw Error(ErrorKind::format, file + ": pre_tokenizer Split has no pattern");
        }
        const std::string b = a.string("behavior");
        if (b == "Removed")
            s.behavior = SplitBehavior::kRemoved;
        else if (b == "Isolated")
            s.behavior = SplitBehavior::kIsolated;
        else if (b == "MergedWithPrevious")
            s.behavior = SplitBehavior::kMergedWithPrevious;
        else if (b == "MergedWithNext")
            s.behavior = SplitBehavior::kMergedWithNext;
        else if (b == "Contiguous")
            s.behavior = SplitBehavior::kContiguous;
        else
            unsupported(file, "pre_tokenizer Split behavior " + printable(b));
        s.invert = a.boolean_or("invert", false);
    } else if (type == "ByteLevel") {
        s.kind = PreKind::kByteLevel;
        s.add_prefix_space = a.boolean_or("add_prefix_space", true);
        s.use_regex = a.boolean_or("use_regex", true);
    } else if (type == "Digits") {
        s.kind = PreKind::kDigits;
        s.behavior = a.boolean_or("individual_digits", false) ? SplitBehavior::kIsolated
                                                              : SplitBehavior::kContiguous;
    } else if (type == "Metaspace") {
        s.kind = PreKind::kMetaspace;
        s.replacement = a.string("replacement");
        s.prepend = prepend_scheme(a);
        s.split = a.boolean_or("split", true);
    } else {
        unsupported(file, "pre_tokenizer " + printable(type));
    }
    out.push_back(std::move(s));
}

void parse_decoder(const JsonAt& a, std::vector<DecStep>& out) {
    const std::string type = type_of(a);
    if (type.empty()) return;
    DecStep d{};
    if (type == "Sequence") {
        const JsonAt list = a.array("decoders");
        for (size_t i = 0; i < list.v.size(); ++i) parse_decoder(list.at(i), out);
        return;
    } else if (type == "ByteLevel") {
        d.kind = DecKind::kByteLevel;
    } else if (type == "Metaspace") {
        d.kind = DecKind::kMetaspace;
        d.pattern = a.string("replacement");
        d.prepend = prepend_scheme(a);
    } else if (type == "ByteFallback") {
        d.kind = DecKind::kByteFallback;
    } else if (type == "Fuse") {
        d.kind = DecKind::kFuse;
    } else if (type == "Strip") {
        d.kind = DecKind::kStrip;
        d.content = a.string("content");
        d.start = static_cast<size_t>(std::min<uint64_t>(a.unsigned_or("start", 0), 1u << 20));
        d.stop = static_cast<size_t>(std::min<uint64_t>(a.unsigned_or("stop", 0), 1u << 20));
    } else if (type == "Replace") {
        d.kind = DecKind::kReplace;
        d.content = a.string("content");
        if (!string_pattern(a.at("pattern"), d.pattern))
            unsupported(a.file, "decoder Replace with a Regex pattern");
    } else {
        unsupported(a.file, "decoder " + printable(type));
    }
    out.push_back(std::move(d));
}

// Template ids around the sequence (TemplateProcessing's "single").
void parse_post_processor(const JsonAt& a, JsonTokenizer& t, bool& has_template) {
    const std::string type = type_of(a);
    if (type.empty()) return;
    const std::string& file = a.file;
    if (type == "Sequence") {
        const JsonAt list = a.array("processors");
        for (size_t i = 0; i < list.v.size(); ++i)
            parse_post_processor(list.at(i), t, has_template);
    } else if (type == "ByteLevel") {
        // Only adjusts offsets.
    } else if (type == "TemplateProcessing") {
        has_template = true;
        bool seen_sequence = false;
        const JsonAt specials = a.object("special_tokens");
        const JsonAt single = a.array("single");
        for (size_t i = 0; i < single.v.size(); ++i) {
            const JsonAt item = single.at(i);
            item.need("an object", item.v.is_object());
            if (item.find("Sequence")) {
                seen_sequence = true;
                continue;
            }
            const std::string name = item.object("SpecialToken").string("id");
            if (!specials.find(name))
                throw Error(ErrorKind::format, file + ": post_processor template names " +
                                                   printable(name) +
                                                   " without an entry in special_tokens");
            const JsonAt ids = specials.object(name).array("ids");
            for (const json& id : ids.v)
                (seen_sequence ? t.suffix_ids_ : t.prefix_ids_)
                    .push_back(id_value(id, file, "post_processor id of " + printable(name)));
        }
    } else {
        unsupported(file, "post_processor " + printable(type));
    }
}

void parse_vocab(std::string_view doc, Range r, const std::string& file, JsonTokenizer& t) {
    Scanner s(doc, r.begin, file);
    if (s.peek() != '{') s.wrong_type("model.vocab", "an object {token: id}");
    s.expect('{');
    std::string key;
    t.vocab_.reserve(static_cast<size_t>((r.end - r.begin) / 12 + 16));
    if (s.accept('}')) return;
    // Ids index a dense table, so they are bounded by what the file can hold:
    // every entry takes at least 5 bytes ("":0,), so a vocab of this many bytes
    // has fewer than bytes/4 entries. A larger id would only make the table huge.
    const long long limit = static_cast<long long>((r.end - r.begin) / 4 + 256);
    std::vector<bool> taken;
    do {
        s.string(key);
        s.expect(':');
        const char c = s.peek();
        if (c != '-' && (c < '0' || c > '9'))
            s.wrong_type("model.vocab[\"" + printable(key) + "\"]", "an integer token id");
        const size_t at = s.pos();
        const long long id = s.integer();
        const char after = s.peek();
        if (after == '.' || after == 'e' || after == 'E')
            s.wrong_type("model.vocab[\"" + printable(key) + "\"]", "an integer token id");
        if (id < 0 || id >= limit)
            s.fail("token id " + printable(doc.substr(at, s.pos() - at), 40) + " of \"" +
                   printable(key) + "\" is outside [0, " + std::to_string(limit) +
                   ") for a vocab of " + std::to_string(r.end - r.begin) + " bytes");
        const auto uid = static_cast<size_t>(id);
        if (uid >= t.id_to_piece_.size()) {
            t.id_to_piece_.resize(uid + 1);
            taken.resize(uid + 1);
        }
        if (taken[uid])
            s.fail("tokens \"" + printable(t.id_to_piece_[uid]) + "\" and \"" + printable(key) +
                   "\" share id " + std::to_string(id));
        taken[uid] = true;
        t.id_to_piece_[uid] = key;
        t.vocab_.put(key, static_cast<int>(id));
    } while (s.accept(','));
    s.expect('}');
}

void parse_merges(std::string_view doc, Range r, const std::string& file, JsonTokenizer& t) {
    Scanner s(doc, r.begin, file);
    if (s.peek() != '[') s.wrong_type("model.merges", "an array");
    s.expect('[');
    t.merges_.reserve(static_cast<size_t>((r.end - r.begin) / 24 + 16));  // ~bytes per merge
    if (s.accept(']')) return;
    // The three vocab lookups per merge are cache misses in a table of
    // ~10 MB; a batch's lookups are hashed and prefetched together so the
    // misses overlap.
    struct Pending {
        std::string a, b, ab;
        uint64_t ha, hb, hab;
        int ia, ib, im;
    };
    constexpr size_t kBatch = 32;
    std::vector<Pending> batch(kBatch);
    std::string joined;
    int rank = 0;
    bool more = true;
    while (more) {
        size_t n = 0;
        for (; n < kBatch && more; ++n) {
            Pending& m = batch[n];
            const std::string where =
                "model.merges[" + std::to_string(rank + static_cast<int>(n)) + "]";
            const char c = s.peek();
            if (c == '"') {  // "left right"
                s.string(joined);
                const size_t sp = joined.find(' ');
                if (sp == std::string::npos || joined.find(' ', sp + 1) != std::string::npos)
                    s.fail("merge #" + std::to_string(rank + static_cast<int>(n)) + " \"" +
                           printable(joined) + "\" is not two tokens");
                m.a.assign(joined, 0, sp);
                m.b.assign(joined, sp + 1);
            } else if (c == '[') {  // ["left", "right"]
                s.expect('[');
                if (s.peek() != '"') s.wrong_type(where + "[0]", "a string");
                s.string(m.a);
                if (s.peek() != ',') s.wrong_type(where, "a pair of strings");
                s.expect(',');
                if (s.peek() != '"') s.wrong_type(where + "[1]", "a string");
                s.string(m.b);
                if (s.peek() != ']') s.wrong_type(where, "a pair of strings");
                s.expect(']');
            } else {
                s.wrong_type(where, "a string \"a b\" or a pair of strings");
            }
            m.ab = m.a;
            m.ab += m.b;
            m.ha = StringIdMap::hash(m.a);
            m.hb = StringIdMap::hash(m.b);
            m.hab = StringIdMap::hash(m.ab);
            t.vocab_.prefetch(m.hab);
            more = s.accept(',');
        }
        for (size_t k = 0; k < n; ++k) {
            Pending& m = batch[k];
            m.ia = t.vocab_.get(m.a, m.ha);
            m.ib = t.vocab_.get(m.b, m.hb);
            m.im = t.vocab_.get(m.ab, m.hab);
            if (m.ia < 0 || m.ib < 0 || m.im < 0)
                throw Error(ErrorKind::format, file + ": merge #" +
                                                   std::to_string(rank + static_cast<int>(k)) +
                                                   " (" + printable(m.a) + " + " + printable(m.b) +
                                                   ") uses a token missing from the vocab");
            t.merges_.prefetch(m.ia, m.ib);
        }
        for (size_t k = 0; k < n; ++k, ++rank)
            t.merges_.put(batch[k].ia, batch[k].ib, rank, batch[k].im);
    }
    s.expect(']');
}

// "<s>" or an AddedToken object {"content": "<s>", ...}; "" when absent.
std::string token_content(const JsonAt& cfg, const char* key) {
    const json* v = cfg.find(key);
    if (!v || v->is_null()) return "";  // Qwen's "bos_token": null
    if (v->is_string()) return v->get<std::string>();
    const JsonAt a{*v, cfg.child(key), cfg.file};
    if (v->is_object()) return a.string("content");
    a.wrong_type(a.path, "a string or {\"content\": string}", *v);
}

}  // namespace
}  // namespace tokjson

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& json_file,
                                               const std::filesystem::path& tokenizer_config) {
    using namespace tokjson;
    const std::string file = json_file.string();
    const std::string doc = File(json_file).read_all(kMaxTokenizerFileBytes, "a tokenizer.json");
    auto t = std::make_unique<JsonTokenizer>();
    t->file_ = file;

    // Find model.vocab and model.merges without building a DOM for them.
    Range vocab, merges;
    {
        Scanner s(doc, 0, file);
        std::string key, mkey;
        if (s.peek() != '{') s.wrong_type("the document", "a JSON object");
        s.expect('{');
        if (!s.accept('}')) do {
                s.string(key);
                s.expect(':');
                if (key == "model" && s.peek() == '{') {
                    s.expect('{');
                    if (!s.accept('}')) do {
                            s.string(mkey);
                            s.expect(':');
                            s.peek();
                            const size_t b = s.pos();
                            s.skip_value(2);
                            if (mkey == "vocab") vocab = {b, s.pos()};
                            if (mkey == "merges") merges = {b, s.pos()};
                        } while (s.accept(','));
                    s.expect('}');
                } else {
                    s.skip_value(1);
                }
            } while (s.accept(','));
        s.expect('}');
    }
    std::string rest;
    std::vector<std::pair<Range, const char*>> cuts;
    {
        if (vocab.found()) cuts.push_back({vocab, "{}"});
        if (merges.found()) cuts.push_back({merges, "[]"});
        if (cuts.size() == 2 && cuts[1].first.begin < cuts[0].first.begin)
            std::swap(cuts[0], cuts[1]);
        size_t at = 0;
        for (const auto& [r, empty] : cuts) {
            rest.append(doc, at, r.begin - at);
            rest += empty;
            at = r.end;
        }
        rest.append(doc, at, std::string::npos);
    }
    // Offsets in `rest` as offsets in the file.
    auto doc_offset = [&](size_t pos) {
        size_t shift = 0;
        for (const auto& [r, empty] : cuts) {
            if (pos < r.begin - shift + 2) break;
            shift += (r.end - r.begin) - 2;
        }
        return pos + shift;
    };
    json j;
    if (const size_t deep = json_too_deep_at(rest); deep != std::string::npos)
        throw Error(ErrorKind::format, file + ": JSON nested deeper than " +
                                           std::to_string(kMaxJsonDepth) + " levels at byte " +
                                           std::to_string(doc_offset(deep)));
    try {
        j = json::parse(rest);
    } catch (const json::parse_error& e) {
        throw Error(ErrorKind::format, file + ": malformed JSON at byte " +
                                           std::to_string(doc_offset(e.byte ? e.byte - 1 : 0)) +
                                           ": " + printable(json_error_reason(e), 300));
    } catch (const json::exception& e) {  // out_of_range 406: a number beyond a double ("2e+308")
        throw Error(ErrorKind::format, file + ": unreadable JSON: " + printable(json_error_reason(e), 300));
    }
    rest = std::string();

    try {
        const JsonAt root{j, "", file};
        if (!root.find("model")) throw Error(ErrorKind::format, file + ": no \"model\"");
        const JsonAt m = root.object("model");
        const std::string mtype = m.string_or("type", merges.found() ? "BPE" : "");
        if (mtype != "BPE") unsupported(file, "model type \"" + printable(mtype) + "\"");
        if (!vocab.found() || !merges.found())
            throw Error(ErrorKind::format, file + ": BPE model without vocab or merges");
        if (m.number_or("dropout", 0.0) != 0.0) unsupported(file, "BPE dropout");
        for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
            if (!m.string_or(k, "").empty()) unsupported(file, std::string("BPE ") + k);
        for (const char* k : {"truncation", "padding"})
            if (root.find(k)) unsupported(file, k);
        t->byte_fallback_ = m.boolean_or("byte_fallback", false);
        t->fuse_unk_ = m.boolean_or("fuse_unk", false);
        t->ignore_merges_ = m.boolean_or("ignore_merges", false);

        parse_vocab(doc, vocab, file, *t);
        const size_t vocab_entries = t->id_to_piece_.size();  // highest vocab id + 1
        parse_merges(doc, merges, file, *t);
        if (m.find("unk_token")) {
            const std::string unk = m.string("unk_token");
            t->unk_id_ = t->vocab_.get(unk);
            if (t->unk_id_ < 0)
                throw Error(ErrorKind::format,
                            file + ": unk_token " + printable(unk) + " is not in the vocab");
        }
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            t->byte_ids_[b] = t->vocab_.get(name);
        }

        // Subtrees by reference: json::value() would deep-copy each (recursively).
        static const json kNull;
        auto member = [&](const char* key) {
            const json* v = root.find(key);
            return JsonAt{v ? *v : kNull, key, file};
        };
        parse_normalizer(member("normalizer"), t->normalizer_);
        parse_pre_tokenizer(member("pre_tokenizer"), t->pre_);
        parse_decoder(member("decoder"), t->decoder_);

        if (root.find("added_tokens")) {
            const JsonAt added = root.array("added_tokens");
            for (size_t i = 0; i < added.v.size(); ++i) {
                const JsonAt a = added.at(i);
                a.need("an object", a.v.is_object());
                AddedToken at;
                at.id = id_value(a.at("id").v, file, "added token id");
                at.content = a.string("content");
                at.special = a.boolean_or("special", false);
                at.normalized = a.boolean_or("normalized", !at.special);
                for (const char* k : {"lstrip", "rstrip", "single_word"})
                    if (a.boolean_or(k, false))
                        unsupported(file, "added token " + printable(at.content) + " with " + k);
                // Added tokens extend the vocab (Llama 3's specials follow its
                // 128000 BPE tokens) or name some of its entries (Gemma).
                const size_t limit = vocab_entries + added.v.size();
                if (at.id < 0 || static_cast<size_t>(at.id) >= limit)
                    throw Error(ErrorKind::format,
                                file + ": added token \"" + printable(at.content) + "\" has id " +
                                    std::to_string(at.id) + ", outside [0, " +
                                    std::to_string(limit) + ") (vocab plus added tokens)");
                const auto uid = static_cast<size_t>(at.id);
                if (uid >= t->id_to_piece_.size()) t->id_to_piece_.resize(uid + 1);
                t->id_to_piece_[uid] = at.content;
                t->added_ids_.put(at.content, at.id);
                t->added_.push_back(std::move(at));
            }
        }
        t->special_flag_.assign(t->id_to_piece_.size(), 0);
        for (size_t i = 0; i < t->added_.size(); ++i) {
            const AddedToken& at = t->added_[i];
            if (at.special) t->special_flag_[static_cast<size_t>(at.id)] = 1;
            if (at.normalized) {
                std::string s = at.content;
                t->normalize_for_matching(s);
                t->normalized_matcher_.add(s, static_cast<int>(i));
            } else {
                t->raw_matcher_.add(at.content, static_cast<int>(i));
            }
        }

        bool has_template = false;
        parse_post_processor(member("post_processor"), *t, has_template);

        // tokenizer_config.json: BOS/EOS names, and add_bos/eos_token when the
        // tokenizer.json itself has no template.
        json cfg;
        std::optional<File> cfg_file;
        if (!tokenizer_config.empty()) cfg_file = File::open_if_exists(tokenizer_config);
        if (cfg_file) {
            std::string error;
            if (!try_parse_json(cfg_file->read_all(kMaxConfigFileBytes, "a JSON config"), cfg,
                                error))
                throw Error(ErrorKind::format,
                            tokenizer_config.string() + ": malformed JSON (" + error + ")");
        }
        if (cfg.is_object()) {
            const std::string cfg_name = tokenizer_config.string();
            const JsonAt c{cfg, "", cfg_name};
            if (c.find("bos_token")) t->bos_id_ = t->token_id(token_content(c, "bos_token"));
            if (c.find("eos_token")) t->eos_id_ = t->token_id(token_content(c, "eos_token"));
            if (!has_template) {
                if (c.boolean_or("add_bos_token", false) && t->bos_id_ >= 0)
                    t->prefix_ids_.push_back(t->bos_id_);
                if (c.boolean_or("add_eos_token", false) && t->eos_id_ >= 0)
                    t->suffix_ids_.push_back(t->eos_id_);
            }
        } else if (!t->prefix_ids_.empty()) {
            t->bos_id_ = t->prefix_ids_.front();
        }
        for (const std::vector<int>* ids : {&t->prefix_ids_, &t->suffix_ids_})
            for (int id : *ids)
                if (id < 0 || id >= t->vocab_size())
                    throw Error(ErrorKind::format, file + ": post_processor id " +
                                                       std::to_string(id) + " is outside the vocab");
        t->init_chunking();
    } catch (const json::exception& e) {
        throw Error(ErrorKind::format,
                    file + ": unexpected JSON structure: " + printable(e.what(), 300));
    }
    return t;
}

}  // namespace staticlm
