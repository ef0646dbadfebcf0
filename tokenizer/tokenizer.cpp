// Streaming decode over any Tokenizer, and the choice of tokenizer file for a
// model directory. StreamDecoder decodes a short window of recent ids and emits
// the difference, so it follows the tokenizer's own decode rules exactly.
#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/file.hpp"
#include "staticlm/error.hpp"

namespace staticlm {
namespace {

// The window is trimmed to its last kKeepIds ids once it holds kTrimAt ids:
// enough context for a 4-byte UTF-8 character split into byte-fallback pieces.
constexpr size_t kKeepIds = 6;
constexpr size_t kTrimAt = 16;
constexpr size_t kReserveIds = 64;
constexpr size_t kReserveBytes = 1024;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of `text` without its trailing U+FFFD characters: an incomplete
// byte-fallback sequence decodes to U+FFFD until its last byte arrives.
size_t complete_length(const std::string& text, size_t from) {
    size_t end = text.size();
    while (end >= from + kReplacement.size() &&
           std::string_view(text).substr(end - kReplacement.size(), kReplacement.size()) ==
               kReplacement)
        end -= kReplacement.size();
    return end;
}

}  // namespace

void check_utf8(std::string_view text, const std::string& what) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        size_t len = 0;
        uint32_t cp = 0, min = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        }
        bool ok = len != 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) ok = false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (!ok || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            throw Error(ErrorKind::input, what + ": invalid UTF-8 at byte " + std::to_string(i) +
                                              " of the text (" + std::to_string(n) + " bytes)");
        i += len;
    }
}

std::vector<int> Tokenizer::encode_limited(std::string_view text, bool add_special,
                                           size_t max_tokens, size_t chunk_bytes) const {
    if (text.size() <= chunk_bytes || chunk_bytes == 0) return encode(text, add_special);
    return encode_in_chunks(text, add_special, max_tokens, chunk_bytes);
}

std::vector<int> Tokenizer::encode_in_chunks(std::string_view text, bool add_special, size_t,
                                             size_t) const {
    return encode(text, add_special);
}

size_t ChunkRule::find_cut(std::string_view text, size_t lo, size_t hi) const {
    hi = std::min(hi, text.size() - std::min<size_t>(text.size(), 1));
    for (size_t c = hi; c-- > std::max<size_t>(lo, 1);)
        if (text[c] == ' ' && ascii_letter(text[c + 1]) && ascii_letter(text[c - 1]) &&
            !bad_before[static_cast<unsigned char>(text[c - 1])])
            return c;
    return std::string_view::npos;
}

size_t ChunkRule::find_cut_after(std::string_view text, size_t lo) const {
    for (size_t c = std::max<size_t>(lo, 1); c + 1 < text.size(); ++c)
        if (text[c] == ' ' && ascii_letter(text[c + 1]) && ascii_letter(text[c - 1]) &&
            !bad_before[static_cast<unsigned char>(text[c - 1])])
            return c;
    return std::string_view::npos;
}

void ChunkRule::forbid_before(std::string_view token, std::string_view space) {
    if (space.empty()) return;
    for (size_t i = token.find(space, 1); i != std::string_view::npos; i = token.find(space, i + 1))
        bad_before[static_cast<unsigned char>(token[i - 1])] = true;
}

std::vector<int> encode_chunks(std::string_view text, size_t max_tokens, size_t chunk_bytes,
                               const ChunkRule& rule, const EncodeChunk& encode) {
    std::vector<int> out;
    size_t pos = 0;
    bool first = true;
    for (;;) {
        size_t end = text.size();
        if (rule.enabled && text.size() - pos > chunk_bytes) {
            size_t c = rule.find_cut(text, pos + chunk_bytes / 2, pos + chunk_bytes);
            if (c == std::string_view::npos) c = rule.find_cut_after(text, pos + chunk_bytes);
            if (c != std::string_view::npos) end = c;
        }
        const bool last = end == text.size();
        encode(text.substr(pos, end - pos), first, last, out);
        if (last || out.size() > max_tokens) return out;
        first = false;
        pos = rule.drop_space ? end + 1 : end;
    }
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer) : tok_(tokenizer) {
    ids_.reserve(kReserveIds);
    text_.reserve(kReserveBytes);
    out_.reserve(kReserveBytes);
}

void StreamDecoder::reset() {
    ids_.clear();
    text_.clear();
    emitted_ = 0;
    out_.clear();
}

std::string_view StreamDecoder::push(int id) {
    if (id < 0 || id >= tok_.vocab_size())
        throw Error(ErrorKind::input, "StreamDecoder: token id " + std::to_string(id) +
                                          " outside the vocabulary [0, " +
                                          std::to_string(tok_.vocab_size()) + ")");
    ids_.push_back(id);
    // The window starts at the last reset or at a trim point chosen so that its
    // decode is a suffix of the full decode; earlier text never changes here
    // (tokenizer decoders only look back within a byte sequence).
    text_ = tok_.decode(ids_);
    const size_t end = complete_length(text_, emitted_);
    out_.assign(text_, emitted_, end > emitted_ ? end - emitted_ : 0);
    if (end > emitted_) emitted_ = end;
    if (ids_.size() >= kTrimAt) trim();
    return out_;
}

std::string_view StreamDecoder::flush() {
    out_.assign(text_, emitted_, text_.size() - std::min(emitted_, text_.size()));
    emitted_ = text_.size();
    return out_;
}

// Drops all but the last kKeepIds ids when that leaves the decode of the rest
// unchanged: the kept ids must decode to a non-empty suffix of the window's text
// (non-empty, so the leading-space rule has already been applied inside the
// kept ids), and the dropped text must already be emitted.
void StreamDecoder::trim() {
    const size_t drop = ids_.size() - kKeepIds;
    std::vector<int> kept(ids_.begin() + static_cast<std::ptrdiff_t>(drop), ids_.end());
    std::string tail = tok_.decode(kept);
    if (tail.empty() || tail.size() > text_.size()) return;
    const size_t cut = text_.size() - tail.size();
    if (cut > emitted_ || std::string_view(text_).substr(cut) != tail) return;
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(drop));
    text_.erase(0, cut);
    emitted_ -= cut;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir,
                                          bool prefer_json) {
    if (!std::filesystem::is_directory(model_dir))
        throw Error(ErrorKind::io, "model directory not found: " + model_dir.string());
    // Each file must resolve inside the directory (model_file refuses links out of it).
    const auto sp_file = model_file(model_dir, "tokenizer.model");
    const auto json_file = model_file(model_dir, "tokenizer.json");
    const auto config =
        model_file(model_dir, "tokenizer_config.json").value_or(std::filesystem::path());
    if (json_file && (prefer_json || !sp_file)) return load_tokenizer_json(*json_file, config);
    if (sp_file) return load_sentencepiece(*sp_file, config);
    throw Error(ErrorKind::io, "no tokenizer in " + model_dir.string() +
                                   ": neither tokenizer.model nor tokenizer.json");
}

}  // namespace staticlm
