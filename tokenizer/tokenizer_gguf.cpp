// GGUF vocabularies (tokenizer.ggml.*) as JsonTokenizer tables: the same BPE
// engine as tokenizer.json, with the pipeline each GGUF tokenizer model
// implies (see tokenizer_gguf.hpp).
#include "tokenizer/tokenizer_gguf.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "staticlm/error.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace staticlm {
namespace {

using namespace tokjson;

constexpr const char* kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
// Pieces longer than this get no derived merges, so BPE never produces them
// (splitting a piece costs O(length²); real pieces stay under 300 bytes).
constexpr size_t kMaxMergedPiece = 1024;

[[noreturn]] void bad(const GgufVocab& v, const std::string& what) {
    throw Error(ErrorKind::format, v.source + ": " + what);
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

GgufTokenType type_of(const GgufVocab& v, size_t id) {
    return v.token_types.empty() ? GgufTokenType::normal : GgufTokenType(v.token_types[id]);
}

size_t code_points(std::string_view s) {
    size_t n = 0;
    for (char c : s) n += !is_continuation(c);
    return n;
}

// Hugging Face's SentencePiece converter (transformers' generate_merges): a
// merge (l, r) for every piece that splits into two pieces l + r, ordered by
// the merged piece's score (descending), then the lengths of l and r in code
// points (descending), then the merged piece's id. (The converter's last key,
// the ids of l and r, never decides: a piece and the length of l fix the split.)
// SentencePiece gives control and user-defined pieces score 0; llama.cpp's
// converter overwrote it with -1000, so 0 is used again for them here.
void derive_merges(const GgufVocab& v, const std::vector<std::string>& pieces, JsonTokenizer& t) {
    struct Split {
        uint32_t merged, at;            // piece id, byte offset of the split
        uint32_t len_left, len_right;   // code points
        uint64_t hl, hr;                // hashes of the two halves
    };
    struct Candidate {
        uint64_t key;           // score (descending) and left length (descending)
        uint32_t len_right;     // descending
        int merged, left, right;
    };
    std::vector<Candidate> c;
    c.reserve(pieces.size() * 2);
    std::vector<Split> splits;
    // The vocabulary is larger than the caches: the lookups of a batch of
    // pieces are hashed and prefetched together so that their misses overlap.
    constexpr size_t kBatch = 16;
    for (size_t b = 0; b < pieces.size(); b += kBatch) {
        splits.clear();
        for (size_t m = b; m < std::min(pieces.size(), b + kBatch); ++m) {
            const std::string_view piece = pieces[m];
            if (piece.size() > kMaxMergedPiece) continue;
            const uint32_t total = uint32_t(code_points(piece));
            uint32_t left = 0;
            for (size_t k = 1; k < piece.size(); ++k) {
                if (is_continuation(piece[k])) continue;  // splits at code points only
                ++left;
                const Split sp{uint32_t(m), uint32_t(k), left, total - left, StringIdMap::hash(piece.substr(0, k)),
                               StringIdMap::hash(piece.substr(k))};
                t.vocab_.prefetch(sp.hl);
                t.vocab_.prefetch(sp.hr);
                splits.push_back(sp);
            }
        }
        for (const Split& sp : splits) {
            const std::string_view piece = pieces[sp.merged];
            const int l = t.vocab_.get(piece.substr(0, sp.at), sp.hl);
            if (l < 0) continue;
            const int r = t.vocab_.get(piece.substr(sp.at), sp.hr);
            if (r < 0) continue;
            const GgufTokenType type = type_of(v, sp.merged);
            float score = (type == GgufTokenType::control || type == GgufTokenType::user_defined)
                              ? 0.0f : v.scores[sp.merged];
            if (score == 0.0f) score = 0.0f;  // -0 == +0, as Python compares them
            uint32_t u;
            std::memcpy(&u, &score, 4);
            u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending with the float
            c.push_back({(uint64_t(~u) << 32) | uint32_t(~sp.len_left), ~sp.len_right, int(sp.merged), l, r});
        }
    }
    // Candidates were made in merged-id order; a stable sort keeps it for ties.
    std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
        return a.key != b.key ? a.key < b.key : a.len_right < b.len_right;
    });
    t.merges_.reserve(c.size());
    for (size_t rank = 0; rank < c.size(); ++rank) t.merges_.put(c[rank].left, c[rank].right, int(rank), c[rank].merged);
}

void add_merges(const GgufVocab& v, JsonTokenizer& t) {
    t.merges_.reserve(v.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < v.merges.size(); ++rank) {
        const std::string_view m = v.merges[rank];
        const size_t sp = m.find(' ');
        if (sp == std::string_view::npos || sp == 0 || sp + 1 == m.size() ||
            m.find(' ', sp + 1) != std::string_view::npos)
            bad(v, "tokenizer.ggml.merges[" + std::to_string(rank) + "] \"" + std::string(m.substr(0, 100)) +
                       "\" is not two tokens separated by one space");
        const std::string_view a = m.substr(0, sp), b = m.substr(sp + 1);
        joined.assign(a);
        joined.append(b);
        const int ia = t.vocab_.get(a), ib = t.vocab_.get(b), im = t.vocab_.get(joined);
        if (ia < 0 || ib < 0 || im < 0)
            bad(v, "tokenizer.ggml.merges[" + std::to_string(rank) + "] (" + std::string(a.substr(0, 100)) + " + " +
                       std::string(b.substr(0, 100)) + ") uses a token missing from tokenizer.ggml.tokens");
        t.merges_.put(ia, ib, int(rank), im);
    }
}

// The split rules of gpt2 vocabularies by tokenizer.ggml.pre, as llama.cpp
// applies them (src/llama-vocab.cpp: llama_vocab::impl::load maps the value to
// a LLAMA_VOCAB_PRE_TYPE, llm_tokenizer_bpe's constructor gives its regexes).
// Each is the pipeline of the family's tokenizer.json, which the ids must equal.
enum class GgufPre {
    kLlama3,     // Split(Llama 3 regex), ByteLevel; ignore_merges
    kQwen2,      // NFC, Split(Qwen2 regex), ByteLevel
    kStarcoder,  // Digits(individual), ByteLevel with GPT-2's regex
    kGpt2,       // ByteLevel with GPT-2's regex
    kO200k,      // Split(o200k regex), ByteLevel
    kTekken,     // Split(Tekken regex), ByteLevel; ignore_merges
};
struct GgufPreName {
    const char* name;
    GgufPre rule;
};
// smollm: SmolLM and SmolLM2; refact: Granite 3.x; qwen2: Qwen1.5 to Qwen3;
// smaug-bpe: SmolLM3 (its Llama 3 vocabulary hashes as Smaug's); gpt-4o:
// Phi-4-mini (o200k); tekken: Mistral Nemo, Ministral.
constexpr GgufPreName kGgufPres[] = {
    {"llama-bpe", GgufPre::kLlama3},    {"llama3", GgufPre::kLlama3},
    {"llama-v3", GgufPre::kLlama3},     {"smaug-bpe", GgufPre::kLlama3},
    {"qwen2", GgufPre::kQwen2},         {"deepseek-r1-qwen", GgufPre::kQwen2},
    {"starcoder", GgufPre::kStarcoder}, {"refact", GgufPre::kStarcoder},
    {"smollm", GgufPre::kStarcoder},    {"gpt-4o", GgufPre::kO200k},
    {"tekken", GgufPre::kTekken},       {"gpt-2", GgufPre::kGpt2},
    {"gpt2", GgufPre::kGpt2},
};

void add_byte_level(JsonTokenizer& t, bool use_regex) {
    PreStep bytes{};
    bytes.kind = PreKind::kByteLevel;
    bytes.add_prefix_space = false;
    bytes.use_regex = use_regex;
    t.pre_.push_back(bytes);
}

void set_pre(const GgufVocab& v, JsonTokenizer& t) {
    const GgufPreName* found = nullptr;
    for (const GgufPreName& p : kGgufPres)
        if (v.pre == p.name) found = &p;
    if (!found) {
        std::string names;
        for (const GgufPreName& p : kGgufPres)
            names += std::string(names.empty() ? "" : ", ") + p.name;
        throw Error(ErrorKind::unsupported,
                    v.source + ": tokenizer.ggml.pre \"" + v.pre +
                        "\" is not supported for gpt2 vocabularies (supported: " + names + ")");
    }
    PreStep split{};
    split.kind = PreKind::kSplitRegex;
    split.behavior = SplitBehavior::kIsolated;
    switch (found->rule) {
        case GgufPre::kLlama3:
            split.regex = SplitRegex::kLlama3;
            t.pre_.push_back(split);
            add_byte_level(t, false);
            t.ignore_merges_ = true;
            break;
        case GgufPre::kQwen2:
            // llama.cpp normalizes nothing; Qwen's tokenizer.json (which the
            // model was trained with) composes the text to NFC first. The two
            // agree on NFC text and the tokenizer.json wins on the rest.
            t.normalizer_.push_back({NormKind::kNfc, "", ""});
            split.regex = SplitRegex::kQwen2;
            t.pre_.push_back(split);
            add_byte_level(t, false);
            break;
        case GgufPre::kStarcoder: {
            // llama.cpp: the regexes "\p{N}", then GPT-2's, each splitting
            // the pieces of the one before.
            PreStep digits{};
            digits.kind = PreKind::kDigits;
            digits.behavior = SplitBehavior::kIsolated;
            t.pre_.push_back(digits);
            add_byte_level(t, true);
            break;
        }
        case GgufPre::kGpt2:
            add_byte_level(t, true);
            break;
        case GgufPre::kO200k:
        case GgufPre::kTekken:
            // llama.cpp splits with an ASCII-only stand-in for the case
            // classes (letters not a-z / not A-Z, no \p{M}); this is the
            // tokenizer.json's regex (the two agree on ASCII letters).
            split.regex = found->rule == GgufPre::kO200k ? SplitRegex::kO200k : SplitRegex::kTekken;
            t.pre_.push_back(split);
            add_byte_level(t, false);
            t.ignore_merges_ = found->rule == GgufPre::kTekken;  // as llama.cpp's "tekken"
            break;
    }
}

void check_id(const GgufVocab& v, int id, const char* key) {
    if (id >= int(v.tokens.size()))
        bad(v, std::string(key) + " = " + std::to_string(id) + " is outside the vocabulary [0, " +
                   std::to_string(v.tokens.size()) + ")");
}

}  // namespace

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufVocab& v) {
    const bool spm = v.model == "llama";
    const bool gemma4 = v.model == "gemma4";
    const bool metaspace = spm || gemma4;  // pieces carry U+2581 for spaces, byte fallback
    if (!metaspace && v.model != "gpt2")
        throw Error(ErrorKind::unsupported, v.source + ": tokenizer.ggml.model \"" + v.model +
                                                "\" is not supported (\"llama\", \"gemma4\" and \"gpt2\" are)");
    const size_t n = v.tokens.size();
    if (n == 0) bad(v, "tokenizer.ggml.tokens is empty");
    if (n > size_t(INT32_MAX)) bad(v, "tokenizer.ggml.tokens has more than 2^31 - 1 entries");
    if (!v.scores.empty() && v.scores.size() != n)
        bad(v, "tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries, tokenizer.ggml.tokens " +
                   std::to_string(n));
    if (!v.token_types.empty() && v.token_types.size() != n)
        bad(v, "tokenizer.ggml.token_type has " + std::to_string(v.token_types.size()) +
                   " entries, tokenizer.ggml.tokens " + std::to_string(n));
    for (size_t i = 0; i < v.token_types.size(); ++i)
        if (v.token_types[i] < 0 || v.token_types[i] > int32_t(GgufTokenType::byte))
            bad(v, "tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(v.token_types[i]) +
                       " is not a token type (0..6)");
    for (size_t i = 0; i < v.scores.size(); ++i)
        if (!std::isfinite(v.scores[i]))
            bad(v, "tokenizer.ggml.scores[" + std::to_string(i) + "] is not finite");
    if (spm && v.scores.empty()) bad(v, "tokenizer.ggml.model \"llama\" needs tokenizer.ggml.scores");
    if (!spm && !v.has_merges) bad(v, "tokenizer.ggml.model \"" + v.model + "\" needs tokenizer.ggml.merges");
    check_id(v, v.bos_id, "tokenizer.ggml.bos_token_id");
    check_id(v, v.eos_id, "tokenizer.ggml.eos_token_id");
    check_id(v, v.unk_id, "tokenizer.ggml.unknown_token_id");
    check_id(v, v.pad_id, "tokenizer.ggml.padding_token_id");

    auto t = std::make_unique<JsonTokenizer>();
    t->file_ = v.source;
    // llama.cpp's converter writes SentencePiece's user-defined pieces with
    // their U+2581 turned into spaces (it matches them in raw text); the pieces
    // of the Hugging Face tokenizer keep U+2581, and so do these.
    std::vector<std::string>& pieces = t->id_to_piece_;
    pieces.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        pieces.emplace_back(v.tokens[i]);
        if (spm && type_of(v, i) == GgufTokenType::user_defined) {
            std::string& p = pieces.back();
            for (size_t at; (at = p.find(' ')) != std::string::npos;) p.replace(at, 1, kMetaspace);
        }
    }
    // A piece listed twice maps to its last id (as llama.cpp's and Python's
    // dictionaries do).
    t->vocab_.reserve(n);
    for (size_t i = 0; i < n; ++i) t->vocab_.put(pieces[i], int(i));
    std::fill(std::begin(t->byte_ids_), std::end(t->byte_ids_), -1);
    t->special_flag_.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const GgufTokenType type = type_of(v, i);
        if (type == GgufTokenType::byte || (v.token_types.empty() && metaspace)) {
            const int b = byte_token_value(pieces[i]);
            if (b >= 0 && t->byte_ids_[b] < 0) t->byte_ids_[b] = int(i);
            if (b < 0 && type == GgufTokenType::byte)
                bad(v, "token " + std::to_string(i) + " has type BYTE but is not <0xNN>");
        }
        if (type == GgufTokenType::control || type == GgufTokenType::user_defined ||
            type == GgufTokenType::unknown) {
            AddedToken a;
            a.id = int(i);
            a.content = pieces[i];
            a.special = type != GgufTokenType::user_defined;
            a.normalized = false;
            if (a.special) t->special_flag_[i] = 1;
            if (t->added_ids_.get(a.content) < 0) t->added_ids_.put(a.content, a.id);
            t->raw_matcher_.add(a.content, int(t->added_.size()));
            t->added_.push_back(std::move(a));
        }
        if (type == GgufTokenType::unknown && t->unk_id_ < 0) t->unk_id_ = int(i);
    }
    if (v.unk_id >= 0) t->unk_id_ = v.unk_id;
    t->bos_id_ = v.bos_id;
    t->eos_id_ = v.eos_id;

    if (metaspace) {
        // llama.cpp's default: a space prefix for llama vocabularies only.
        const bool space_prefix = v.add_space_prefix >= 0 ? v.add_space_prefix != 0 : spm;
        t->byte_fallback_ = std::any_of(std::begin(t->byte_ids_), std::end(t->byte_ids_), [](int id) { return id >= 0; });
        t->fuse_unk_ = true;
        if (space_prefix) t->normalizer_.push_back({NormKind::kPrepend, "", kMetaspace});
        t->normalizer_.push_back({NormKind::kReplace, " ", kMetaspace});
        t->decoder_.push_back({DecKind::kReplace, kMetaspace, " ", 0, 0, PrependScheme::kAlways});
        t->decoder_.push_back({DecKind::kByteFallback, "", "", 0, 0, PrependScheme::kAlways});
        t->decoder_.push_back({DecKind::kFuse, "", "", 0, 0, PrependScheme::kAlways});
        if (space_prefix) t->decoder_.push_back({DecKind::kStrip, "", " ", 1, 0, PrependScheme::kAlways});
        if (spm)
            derive_merges(v, pieces, *t);
        else
            add_merges(v, *t);
    } else {
        add_merges(v, *t);
        set_pre(v, *t);
        t->decoder_.push_back({DecKind::kByteLevel, "", "", 0, 0, PrependScheme::kAlways});
    }
    // llama.cpp's defaults when the keys are absent: BOS for SentencePiece-style
    // vocabularies, Llama 3 and Tekken (the gpt2 rules with ignore_merges),
    // nothing at the end.
    const bool llama3 = !metaspace && t->ignore_merges_;
    const bool add_bos = v.add_bos >= 0 ? v.add_bos != 0 : (metaspace || llama3);
    const bool add_eos = v.add_eos > 0;
    if (add_bos && t->bos_id_ >= 0) t->prefix_ids_.push_back(t->bos_id_);
    if (add_eos && t->eos_id_ >= 0) t->suffix_ids_.push_back(t->eos_id_);
    // The pipeline is a tokenizer.json one, so the same rule decides where
    // encode_limited may cut (before this, GGUF vocabularies never cut: a
    // 10 MB prompt was encoded whole before the budget was checked).
    t->init_chunking();
    return t;
}

}  // namespace staticlm
