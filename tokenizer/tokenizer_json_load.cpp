// Loads tokenizer.json (+ tokenizer_config.json). The large model.vocab and
// model.merges values are read by a hand-written scanner straight into hash
// maps (a DOM parse of Gemma's 33 MB file takes over a second); the rest of
// the document, with those two values cut out, goes through nlohmann::json.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer_json.hpp"
#include "staticlm/error.hpp"

namespace staticlm {
namespace tokjson {
namespace {

using nlohmann::json;

std::string read_file(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorKind::io, "cannot open " + path.string());
    std::string s;
    f.seekg(0, std::ios::end);
    s.resize(static_cast<size_t>(f.tellg()));
    f.seekg(0);
    f.read(s.data(), static_cast<std::streamsize>(s.size()));
    if (!f) throw Error(ErrorKind::io, "cannot read " + path.string());
    return s;
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
    long long integer() {
        ws();
        size_t j = pos_;
        bool neg = j < doc_.size() && doc_[j] == '-';
        if (neg) ++j;
        long long v = 0;
        const size_t digits = j;
        while (j < doc_.size() && doc_[j] >= '0' && doc_[j] <= '9' && j - digits < 18)
            v = v * 10 + (doc_[j++] - '0');
        if (j == digits) fail("expected an integer");
        pos_ = j;
        return neg ? -v : v;
    }
    void skip_value() {
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

std::string type_of(const json& j, const std::string& file, const char* component) {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        throw Error(ErrorKind::format, file + ": " + component + " has no \"type\"");
    return j["type"].get<std::string>();
}

// {"String": s} -> s; a Regex pattern is reported (with `what`) unless allowed.
bool string_pattern(const json& p, std::string& out) {
    if (p.is_object() && p.contains("String") && p["String"].is_string()) {
        out = p["String"].get<std::string>();
        return true;
    }
    return false;
}

PrependScheme prepend_scheme(const json& j, const std::string& file) {
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
        const std::string s = j["prepend_scheme"].get<std::string>();
        if (s == "always") return PrependScheme::kAlways;
        if (s == "first") return PrependScheme::kFirst;
        if (s == "never") return PrependScheme::kNever;
        unsupported(file, "Metaspace prepend_scheme \"" + s + "\"");
    }
    return j.value("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

void parse_normalizer(const json& j, const std::string& file, std::vector<NormStep>& out) {
    if (j.is_null()) return;
    const std::string type = type_of(j, file, "normalizer");
    if (type == "Sequence") {
        for (const json& n : j.at("normalizers")) parse_normalizer(n, file, out);
    } else if (type == "Replace") {
        NormStep s{NormKind::kReplace, "", j.at("content").get<std::string>()};
        if (!string_pattern(j.at("pattern"), s.pattern))
            unsupported(file, "normalizer Replace with a Regex pattern");
        out.push_back(std::move(s));
    } else if (type == "Prepend") {
        out.push_back({NormKind::kPrepend, "", j.at("prepend").get<std::string>()});
    } else {
        unsupported(file, "normalizer " + type);
    }
}

void parse_pre_tokenizer(const json& j, const std::string& file, std::vector<PreStep>& out) {
    if (j.is_null()) return;
    const std::string type = type_of(j, file, "pre_tokenizer");
    PreStep s{};
    if (type == "Sequence") {
        for (const json& p : j.at("pretokenizers")) parse_pre_tokenizer(p, file, out);
        return;
    } else if (type == "Split") {
        if (!j.contains("pattern"))
            throw Error(ErrorKind::format, file + ": pre_tokenizer Split has no pattern");
        const json& p = j.at("pattern");
        if (string_pattern(p, s.pattern)) {
            s.kind = PreKind::kSplitString;
        } else if (p.is_object() && p.contains("Regex")) {
            s.kind = PreKind::kSplitRegex;
            const std::string re = p["Regex"].get<std::string>();
            if (!known_split_regex(re, s.regex))
                unsupported(file, "pre_tokenizer Split regex " + re +
                                      " (only the Llama 3 and GPT-2 patterns are implemented)");
        } else {
            throw Error(ErrorKind::format, file + ": pre_tokenizer Split has no pattern");
        }
        const std::string b = j.at("behavior").get<std::string>();
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
            unsupported(file, "pre_tokenizer Split behavior " + b);
        s.invert = j.value("invert", false);
    } else if (type == "ByteLevel") {
        s.kind = PreKind::kByteLevel;
        s.add_prefix_space = j.value("add_prefix_space", true);
        s.use_regex = j.value("use_regex", true);
    } else if (type == "Metaspace") {
        s.kind = PreKind::kMetaspace;
        s.replacement = j.at("replacement").get<std::string>();
        s.prepend = prepend_scheme(j, file);
        s.split = j.value("split", true);
    } else {
        unsupported(file, "pre_tokenizer " + type);
    }
    out.push_back(std::move(s));
}

void parse_decoder(const json& j, const std::string& file, std::vector<DecStep>& out) {
    if (j.is_null()) return;
    const std::string type = type_of(j, file, "decoder");
    DecStep d{};
    if (type == "Sequence") {
        for (const json& p : j.at("decoders")) parse_decoder(p, file, out);
        return;
    } else if (type == "ByteLevel") {
        d.kind = DecKind::kByteLevel;
    } else if (type == "Metaspace") {
        d.kind = DecKind::kMetaspace;
        d.pattern = j.at("replacement").get<std::string>();
        d.prepend = prepend_scheme(j, file);
    } else if (type == "ByteFallback") {
        d.kind = DecKind::kByteFallback;
    } else if (type == "Fuse") {
        d.kind = DecKind::kFuse;
    } else if (type == "Strip") {
        d.kind = DecKind::kStrip;
        d.content = j.at("content").get<std::string>();
        d.start = j.value("start", size_t{0});
        d.stop = j.value("stop", size_t{0});
    } else if (type == "Replace") {
        d.kind = DecKind::kReplace;
        d.content = j.at("content").get<std::string>();
        if (!string_pattern(j.at("pattern"), d.pattern))
            unsupported(file, "decoder Replace with a Regex pattern");
    } else {
        unsupported(file, "decoder " + type);
    }
    out.push_back(std::move(d));
}

// Template ids around the sequence (TemplateProcessing's "single").
void parse_post_processor(const json& j, const std::string& file, JsonTokenizer& t,
                          bool& has_template) {
    if (j.is_null()) return;
    const std::string type = type_of(j, file, "post_processor");
    if (type == "Sequence") {
        for (const json& p : j.at("processors")) parse_post_processor(p, file, t, has_template);
    } else if (type == "ByteLevel") {
        // Only adjusts offsets.
    } else if (type == "TemplateProcessing") {
        has_template = true;
        bool seen_sequence = false;
        const json& specials = j.at("special_tokens");
        for (const json& item : j.at("single")) {
            if (item.contains("Sequence")) {
                seen_sequence = true;
                continue;
            }
            const std::string name = item.at("SpecialToken").at("id").get<std::string>();
            if (!specials.contains(name))
                throw Error(ErrorKind::format, file + ": post_processor template names " + name +
                                                   " without an entry in special_tokens");
            for (const json& id : specials[name].at("ids"))
                (seen_sequence ? t.suffix_ids_ : t.prefix_ids_)
                    .push_back(id_value(id, file, "post_processor id of " + name));
        }
    } else {
        unsupported(file, "post_processor " + type);
    }
}

void parse_vocab(std::string_view doc, Range r, const std::string& file, JsonTokenizer& t) {
    Scanner s(doc, r.begin, file);
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
        const long long id = s.integer();
        if (id < 0 || id >= limit)
            s.fail("token id " + std::to_string(id) + " of \"" + key + "\" is outside [0, " +
                   std::to_string(limit) + ") for a vocab of " + std::to_string(r.end - r.begin) +
                   " bytes");
        const auto uid = static_cast<size_t>(id);
        if (uid >= t.id_to_piece_.size()) {
            t.id_to_piece_.resize(uid + 1);
            taken.resize(uid + 1);
        }
        if (taken[uid])
            s.fail("tokens \"" + t.id_to_piece_[uid] + "\" and \"" + key + "\" share id " +
                   std::to_string(id));
        taken[uid] = true;
        t.id_to_piece_[uid] = key;
        t.vocab_.put(key, static_cast<int>(id));
    } while (s.accept(','));
    s.expect('}');
}

void parse_merges(std::string_view doc, Range r, const std::string& file, JsonTokenizer& t) {
    Scanner s(doc, r.begin, file);
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
            if (s.peek() == '"') {  // "left right"
                s.string(joined);
                const size_t sp = joined.find(' ');
                if (sp == std::string::npos || joined.find(' ', sp + 1) != std::string::npos)
                    s.fail("merge #" + std::to_string(rank + static_cast<int>(n)) + " \"" + joined +
                           "\" is not two tokens");
                m.a.assign(joined, 0, sp);
                m.b.assign(joined, sp + 1);
            } else {  // ["left", "right"]
                s.expect('[');
                s.string(m.a);
                s.expect(',');
                s.string(m.b);
                s.expect(']');
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
                throw Error(ErrorKind::format,
                            file + ": merge #" + std::to_string(rank + static_cast<int>(k)) + " (" +
                                m.a + " + " + m.b + ") uses a token missing from the vocab");
            t.merges_.prefetch(m.ia, m.ib);
        }
        for (size_t k = 0; k < n; ++k, ++rank)
            t.merges_.put(batch[k].ia, batch[k].ib, rank, batch[k].im);
    }
    s.expect(']');
}

std::string token_content(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content")) return v["content"].get<std::string>();
    return "";
}

}  // namespace
}  // namespace tokjson

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& json_file,
                                               const std::filesystem::path& tokenizer_config) {
    using namespace tokjson;
    const std::string file = json_file.string();
    const std::string doc = read_file(json_file);
    auto t = std::make_unique<JsonTokenizer>();
    t->file_ = file;

    // Find model.vocab and model.merges without building a DOM for them.
    Range vocab, merges;
    {
        Scanner s(doc, 0, file);
        std::string key, mkey;
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
                            s.skip_value();
                            if (mkey == "vocab") vocab = {b, s.pos()};
                            if (mkey == "merges") merges = {b, s.pos()};
                        } while (s.accept(','));
                    s.expect('}');
                } else {
                    s.skip_value();
                }
            } while (s.accept(','));
        s.expect('}');
    }
    std::string rest;
    {
        std::vector<std::pair<Range, const char*>> cuts;
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
    json j;
    try {
        j = json::parse(rest);
    } catch (const json::exception& e) {
        throw Error(ErrorKind::format, file + ": malformed JSON: " + e.what());
    }

    try {
        if (!j.contains("model")) throw Error(ErrorKind::format, file + ": no \"model\"");
        const json& m = j["model"];
        const std::string mtype = m.value("type", std::string(merges.found() ? "BPE" : ""));
        if (mtype != "BPE") unsupported(file, "model type \"" + mtype + "\"");
        if (!vocab.found() || !merges.found())
            throw Error(ErrorKind::format, file + ": BPE model without vocab or merges");
        if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() != 0.0)
            unsupported(file, "BPE dropout");
        for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
            if (m.contains(k) && !m[k].is_null() && !m[k].get<std::string>().empty())
                unsupported(file, std::string("BPE ") + k);
        for (const char* k : {"truncation", "padding"})
            if (j.contains(k) && !j[k].is_null()) unsupported(file, k);
        t->byte_fallback_ = m.value("byte_fallback", false);
        t->fuse_unk_ = m.value("fuse_unk", false);
        t->ignore_merges_ = m.value("ignore_merges", false);

        parse_vocab(doc, vocab, file, *t);
        const size_t vocab_entries = t->id_to_piece_.size();  // highest vocab id + 1
        parse_merges(doc, merges, file, *t);
        if (m.contains("unk_token") && m["unk_token"].is_string()) {
            const std::string unk = m["unk_token"].get<std::string>();
            t->unk_id_ = t->vocab_.get(unk);
            if (t->unk_id_ < 0)
                throw Error(ErrorKind::format,
                            file + ": unk_token " + unk + " is not in the vocab");
        }
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            t->byte_ids_[b] = t->vocab_.get(name);
        }

        parse_normalizer(j.value("normalizer", json()), file, t->normalizer_);
        parse_pre_tokenizer(j.value("pre_tokenizer", json()), file, t->pre_);
        parse_decoder(j.value("decoder", json()), file, t->decoder_);

        if (j.contains("added_tokens")) {
            for (const json& a : j["added_tokens"]) {
                AddedToken at;
                at.id = id_value(a.at("id"), file, "added token id");
                at.content = a.at("content").get<std::string>();
                at.special = a.value("special", false);
                at.normalized = a.value("normalized", !at.special);
                for (const char* k : {"lstrip", "rstrip", "single_word"})
                    if (a.value(k, false))
                        unsupported(file, std::string("added token ") + at.content + " with " + k);
                // Added tokens extend the vocab (Llama 3's specials follow its
                // 128000 BPE tokens) or name some of its entries (Gemma).
                const size_t limit = vocab_entries + j["added_tokens"].size();
                if (at.id < 0 || static_cast<size_t>(at.id) >= limit)
                    throw Error(ErrorKind::format,
                                file + ": added token \"" + at.content + "\" has id " +
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
        parse_post_processor(j.value("post_processor", json()), file, *t, has_template);

        // tokenizer_config.json: BOS/EOS names, and add_bos/eos_token when the
        // tokenizer.json itself has no template.
        json cfg;
        if (!tokenizer_config.empty() && std::filesystem::exists(tokenizer_config)) {
            try {
                cfg = json::parse(read_file(tokenizer_config));
            } catch (const json::exception& e) {
                throw Error(ErrorKind::format,
                            tokenizer_config.string() + ": malformed JSON: " + e.what());
            }
        }
        if (cfg.is_object()) {
            if (cfg.contains("bos_token"))
                t->bos_id_ = t->token_id(token_content(cfg["bos_token"]));
            if (cfg.contains("eos_token"))
                t->eos_id_ = t->token_id(token_content(cfg["eos_token"]));
            if (!has_template) {
                if (cfg.value("add_bos_token", false) && t->bos_id_ >= 0)
                    t->prefix_ids_.push_back(t->bos_id_);
                if (cfg.value("add_eos_token", false) && t->eos_id_ >= 0)
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
    } catch (const json::exception& e) {
        throw Error(ErrorKind::format, file + ": unexpected JSON structure: " + e.what());
    }
    return t;
}

}  // namespace staticlm
