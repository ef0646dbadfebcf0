// UTF-8 handling, NFC, and the hand-written Llama 3 / Qwen2 / GPT-2 / o200k /
// Tekken pre-tokenizer splitters. The splitters reproduce the leftmost-first,
// greedy-with-backtracking result Oniguruma gives for each alternative;
// comments show the alternative.
#include "tokenizer/tokenizer_json_unicode.hpp"

#include <algorithm>

namespace staticlm::tokjson {
namespace {

bool in_ranges(const CodepointRange* ranges, size_t n, uint32_t cp) {
    const CodepointRange* end = ranges + n;
    const CodepointRange* it = std::upper_bound(
        ranges, end, cp, [](uint32_t v, const CodepointRange& r) { return v < r.first; });
    return it != ranges && cp <= (it - 1)->last;
}

// ASCII classes, the hot path for English text and code.
struct AsciiTable {
    CharClass cls[128];
    constexpr AsciiTable() : cls() {
        for (int c = 0; c < 128; ++c) {
            CharClass k = CharClass::kOther;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
                k = CharClass::kLetter;
            else if (c >= '0' && c <= '9')
                k = CharClass::kNumber;
            else if (c == '\r' || c == '\n')
                k = CharClass::kNewline;
            else if (c == ' ' || c == '\t' || c == '\v' || c == '\f')
                k = CharClass::kSpace;
            cls[c] = k;
        }
    }
};
constexpr AsciiTable kAscii;

}  // namespace

bool is_letter(uint32_t cp) { return in_ranges(kLetterRanges, kLetterRanges_count, cp); }

uint8_t case_class(uint32_t cp) {
    if (cp < 128)
        return (cp >= 'A' && cp <= 'Z') ? kCaseUpper : (cp >= 'a' && cp <= 'z') ? kCaseLower : 0;
    const CaseClassRange* end = kCaseClassRanges + kCaseClassRanges_count;
    const CaseClassRange* it = std::upper_bound(
        kCaseClassRanges, end, cp, [](uint32_t v, const CaseClassRange& r) { return v < r.first; });
    return (it != kCaseClassRanges && cp <= (it - 1)->last) ? (it - 1)->flags : 0;
}
bool is_number(uint32_t cp) { return in_ranges(kNumberRanges, kNumberRanges_count, cp); }

bool is_space(uint32_t cp) {
    if (cp < 128) {
        CharClass k = kAscii.cls[cp];
        return k == CharClass::kSpace || k == CharClass::kNewline;
    }
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

CharClass char_class(uint32_t cp) {
    if (cp < 128) return kAscii.cls[cp];
    if (is_space(cp)) return CharClass::kSpace;
    if (is_letter(cp)) return CharClass::kLetter;
    if (is_number(cp)) return CharClass::kNumber;
    return CharClass::kOther;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

namespace {

// For a lead byte: the sequence length (0 = never valid) and the allowed range
// of the second byte (the Unicode "well-formed byte sequences" table).
struct LeadInfo {
    int len;
    uint8_t lo, hi;
};
LeadInfo lead_info(uint8_t b) {
    if (b < 0x80) return {1, 0, 0};
    if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

// Length of the valid sequence at s[i], or -(bytes of the maximal invalid
// subpart) when it is invalid or cut short. `truncated` tells whether it only
// ran out of input.
int sequence_at(std::string_view s, size_t i, bool& truncated) {
    truncated = false;
    const auto b = static_cast<uint8_t>(s[i]);
    LeadInfo li = lead_info(b);
    if (li.len == 1) return 1;
    if (li.len == 0) return -1;
    for (int k = 1; k < li.len; ++k) {
        if (i + k >= s.size()) {
            truncated = true;
            return -k;
        }
        const auto c = static_cast<uint8_t>(s[i + k]);
        const uint8_t lo = k == 1 ? li.lo : 0x80, hi = k == 1 ? li.hi : 0xBF;
        if (c < lo || c > hi) return -k;
    }
    return li.len;
}

}  // namespace

bool sanitize_utf8(std::string_view text, std::string& out) {
    size_t i = 0;
    const size_t n = text.size();
    while (i < n && static_cast<uint8_t>(text[i]) < 0x80) ++i;
    bool truncated = false;
    size_t first_bad = i;
    while (first_bad < n) {
        int len = sequence_at(text, first_bad, truncated);
        if (len < 0) break;
        first_bad += static_cast<size_t>(len);
    }
    if (first_bad == n) return true;
    out.assign(text.data(), first_bad);
    i = first_bad;
    while (i < n) {
        int len = sequence_at(text, i, truncated);
        if (len > 0) {
            out.append(text.data() + i, static_cast<size_t>(len));
            i += static_cast<size_t>(len);
        } else {
            out.append("\xEF\xBF\xBD");
            i += static_cast<size_t>(-len);
        }
    }
    return false;
}

size_t complete_utf8_prefix(std::string_view bytes) {
    // Only the last three bytes can start an unfinished sequence.
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const size_t i = n - back;
        const auto b = static_cast<uint8_t>(bytes[i]);
        if (b < 0x80) return n;
        if (b >= 0xC0) {
            bool truncated = false;
            int len = sequence_at(bytes, i, truncated);
            return (len < 0 && truncated) ? i : n;
        }
    }
    return n;
}

void decode_utf8(std::string_view s, std::vector<uint32_t>& cps, std::vector<uint32_t>& offsets) {
    cps.clear();
    offsets.clear();
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const auto b = static_cast<uint8_t>(s[i]);
        offsets.push_back(static_cast<uint32_t>(i));
        uint32_t cp;
        if (b < 0x80) {
            cp = b;
            i += 1;
        } else if (b < 0xE0) {
            cp = ((b & 0x1Fu) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3Fu);
            i += 2;
        } else if (b < 0xF0) {
            cp = ((b & 0x0Fu) << 12) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 6) |
                 (static_cast<uint8_t>(s[i + 2]) & 0x3Fu);
            i += 3;
        } else {
            cp = ((b & 0x07u) << 18) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 12) |
                 ((static_cast<uint8_t>(s[i + 2]) & 0x3Fu) << 6) |
                 (static_cast<uint8_t>(s[i + 3]) & 0x3Fu);
            i += 4;
        }
        cps.push_back(cp);
    }
    offsets.push_back(static_cast<uint32_t>(n));
}

namespace {

// Hangul syllables decompose and compose by arithmetic (the Unicode Standard,
// section 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint32_t combining_class(uint32_t cp) {
    if (cp < 0x300) return 0;
    const CombiningClassRange* end = kCombiningClassRanges + kCombiningClassRanges_count;
    const CombiningClassRange* it =
        std::upper_bound(kCombiningClassRanges, end, cp,
                         [](uint32_t v, const CombiningClassRange& r) { return v < r.first; });
    return (it != kCombiningClassRanges && cp <= (it - 1)->last) ? (it - 1)->ccc : 0;
}

// Appends the full canonical decomposition of cp.
void decompose(uint32_t cp, std::vector<uint32_t>& out) {
    if (cp - kSBase < kSCount) {
        const uint32_t s = cp - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    const CanonicalPair* end = kDecompositions + kDecompositions_count;
    const CanonicalPair* it = std::lower_bound(
        kDecompositions, end, cp, [](const CanonicalPair& d, uint32_t v) { return d.cp < v; });
    if (it == end || it->cp != cp) {
        out.push_back(cp);
        return;
    }
    decompose(it->first, out);  // at most 3 levels deep (Unicode 14.0)
    if (it->second) decompose(it->second, out);
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
    if (a - kLBase < kLCount && b - kVBase < kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a - kSBase < kSCount && (a - kSBase) % kTCount == 0 && b - kTBase - 1 < kTCount - 1)
        return a + (b - kTBase);
    const CompositionPair* end = kCompositions + kCompositions_count;
    const CompositionPair* it =
        std::lower_bound(kCompositions, end, std::pair{a, b},
                         [](const CompositionPair& c, std::pair<uint32_t, uint32_t> v) {
                             return c.first != v.first ? c.first < v.first : c.second < v.second;
                         });
    return (it != end && it->first == a && it->second == b) ? it->composite : 0;
}

}  // namespace

void nfc(std::string& s) {
    // Code points below U+0300 (lead bytes below 0xCC) are all stable.
    size_t i = 0;
    while (i < s.size() && static_cast<uint8_t>(s[i]) < 0xCC) ++i;
    if (i == s.size()) return;
    thread_local std::vector<uint32_t> cps, offsets, d;
    decode_utf8(s, cps, offsets);
    bool stable = true;
    for (uint32_t cp : cps)
        stable = stable && !in_ranges(kNfcUnstableRanges, kNfcUnstableRanges_count, cp);
    if (stable) return;
    // Canonical decomposition, then canonical ordering: a stable sort of each
    // run of non-starters by combining class.
    d.clear();
    for (uint32_t cp : cps) decompose(cp, d);
    for (size_t k = 1; k < d.size(); ++k) {
        const uint32_t c = d[k], cc = combining_class(c);
        if (cc == 0) continue;
        size_t j = k;
        while (j > 0 && combining_class(d[j - 1]) > cc) {
            d[j] = d[j - 1];
            --j;
        }
        d[j] = c;
    }
    // Canonical composition (the algorithm of Unicode's sample code): a
    // character joins the last starter unless a character between them has
    // class 0 or a class not below its own (is "blocking").
    size_t starter = 0, n = 1;
    uint32_t last_class = combining_class(d[0]);
    if (last_class != 0) last_class = 256;  // a leading non-starter: nothing to join
    for (size_t k = 1; k < d.size(); ++k) {
        const uint32_t c = d[k], cc = combining_class(c);
        const uint32_t composite = compose(d[starter], c);
        if (composite && (last_class < cc || last_class == 0)) {
            d[starter] = composite;
            continue;
        }
        if (cc == 0) starter = n;
        last_class = cc;
        d[n++] = c;
    }
    d.resize(n);
    std::string out;
    out.reserve(s.size());
    for (uint32_t cp : d) append_utf8(out, cp);
    s = std::move(out);
}

namespace {

constexpr std::string_view kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen2's (Qwen1.5 to Qwen3, DeepSeek-R1-Distill-Qwen): Llama 3's with single
// digits.
constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// GPT-4o's o200k_base (tiktoken's openai_public.py; Phi-4-mini's tokenizer.json)
// and Mistral's Tekken (Mistral Nemo's tokenizer.json): words split at case
// changes, Tekken without the contraction suffixes and with single digits.
constexpr std::string_view kO200kRegex =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kTekkenRegex =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

bool is_ws(CharClass k) { return k == CharClass::kSpace || k == CharClass::kNewline; }

uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// Length in code points of a contraction at i ('s 't 're 've 'm 'll 'd), or 0.
// Case-insensitive matching follows Unicode case folding, where U+017F (long
// s) folds to 's'.
size_t contraction(const std::vector<uint32_t>& cp, size_t i, size_t n, bool ignore_case) {
    if (cp[i] != '\'' || i + 1 >= n) return 0;
    uint32_t a = cp[i + 1];
    if (ignore_case) {
        a = ascii_lower(a);
        if (a == 0x17F) a = 's';
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= n) return 0;
    uint32_t b = ignore_case ? ascii_lower(cp[i + 2]) : cp[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

// \s+(?!\S) then \s+ : the whitespace run, minus its last character when a
// non-space follows (that character goes with the next match).
size_t space_run(const std::vector<CharClass>& cls, size_t i, size_t n) {
    size_t j = i;
    while (j < n && is_ws(cls[j])) ++j;
    if (j == n || j - 1 == i) return j - i;
    return j - 1 - i;
}

// What follows the letter alternatives in the Llama 3, Qwen2, o200k and Tekken
// regexes: \p{N}{1,max_digits} | ' ?[^\s\p{L}\p{N}]+[\r\n]*' (o200k and
// Tekken also take '/' in that tail) | \s*[\r\n]+ | \s+(?!\S) | \s+.
size_t match_rest(const std::vector<uint32_t>& cp, const std::vector<CharClass>& cls, size_t i, size_t n,
                  size_t max_digits, bool slash_tail) {
    const CharClass k = cls[i];
    if (k == CharClass::kNumber) {
        size_t j = i + 1;
        while (j < n && j < i + max_digits && cls[j] == CharClass::kNumber) ++j;
        return j - i;
    }
    size_t start = n;
    if (cp[i] == ' ' && i + 1 < n && cls[i + 1] == CharClass::kOther)
        start = i + 1;
    else if (k == CharClass::kOther)
        start = i;
    if (start < n) {
        size_t j = start;
        while (j < n && cls[j] == CharClass::kOther) ++j;
        while (j < n && (cls[j] == CharClass::kNewline || (slash_tail && cp[j] == '/'))) ++j;
        return j - i;
    }
    // \s*[\r\n]+ : ends after the last newline of the whitespace run.
    size_t j = i, last_newline = n;
    while (j < n && is_ws(cls[j])) {
        if (cls[j] == CharClass::kNewline) last_newline = j;
        ++j;
    }
    if (last_newline < n) return last_newline + 1 - i;
    if (j > i) return space_run(cls, i, n);
    return 1;  // unreachable: every class is covered above
}

// Llama 3's regex, and Qwen2's when max_digits is 1 (\p{N} for \p{N}{1,3}).
size_t match_llama3(const std::vector<uint32_t>& cp, const std::vector<CharClass>& cls, size_t i,
                    size_t n, size_t max_digits) {
    if (size_t c = contraction(cp, i, n, true)) return c;
    const CharClass k = cls[i];
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (k == CharClass::kLetter || ((k == CharClass::kSpace || k == CharClass::kOther) &&
                                    i + 1 < n && cls[i + 1] == CharClass::kLetter)) {
        size_t j = i + 1;
        while (j < n && cls[j] == CharClass::kLetter) ++j;
        return j - i;
    }
    return match_rest(cp, cls, i, n, max_digits, /*slash_tail=*/false);
}

constexpr size_t kNoMatch = static_cast<size_t>(-1);

// [U]*[W]+ at s (U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]):
// the end of the match, or kNoMatch. U* takes the whole U run first; when no W
// follows it, backtracking gives back U characters until one that is also W
// (Lm, Lo, a mark) can be W+'s one character.
size_t upper_star_lower_plus(const std::vector<uint8_t>& cs, size_t s, size_t n) {
    size_t u = s;
    while (u < n && (cs[u] & kCaseUpper)) ++u;
    if (u < n && (cs[u] & kCaseLower)) {
        size_t j = u + 1;
        while (j < n && (cs[j] & kCaseLower)) ++j;
        return j;
    }
    for (size_t k = u; k > s; --k)
        if (cs[k - 1] & kCaseLower) return k;  // its W run ends here: k is not W
    return kNoMatch;
}

// [U]+[W]* at s: the end, or kNoMatch.
size_t upper_plus_lower_star(const std::vector<uint8_t>& cs, size_t s, size_t n) {
    if (s >= n || !(cs[s] & kCaseUpper)) return kNoMatch;
    size_t j = s + 1;
    while (j < n && (cs[j] & kCaseUpper)) ++j;
    while (j < n && (cs[j] & kCaseLower)) ++j;
    return j;
}

// o200k's regex, and Tekken's when max_digits is 1 and contractions false.
size_t match_o200k(const std::vector<uint32_t>& cp, const std::vector<CharClass>& cls,
                   const std::vector<uint8_t>& cs, size_t i, size_t n, size_t max_digits,
                   bool contractions) {
    const CharClass k = cls[i];
    // [^\r\n\p{L}\p{N}]? : taken first, given back when the rest fails (a mark
    // can be the prefix and also the first letter-class character).
    const bool prefix = k == CharClass::kSpace || k == CharClass::kOther;
    // [^\r\n\p{L}\p{N}]?[U]*[W]+(?i:'s|...)? then [^\r\n\p{L}\p{N}]?[U]+[W]*(?i:'s|...)?
    size_t end = prefix ? upper_star_lower_plus(cs, i + 1, n) : kNoMatch;
    if (end == kNoMatch) end = upper_star_lower_plus(cs, i, n);
    if (end == kNoMatch && prefix) end = upper_plus_lower_star(cs, i + 1, n);
    if (end == kNoMatch) end = upper_plus_lower_star(cs, i, n);
    if (end != kNoMatch) {
        if (contractions && end < n) end += contraction(cp, end, n, true);
        return end - i;
    }
    return match_rest(cp, cls, i, n, max_digits, /*slash_tail=*/true);
}

size_t match_gpt2(const std::vector<uint32_t>& cp, const std::vector<CharClass>& cls, size_t i,
                  size_t n) {
    if (size_t c = contraction(cp, i, n, false)) return c;
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
    size_t start = i;
    if (cp[i] == ' ' && i + 1 < n && !is_ws(cls[i + 1])) start = i + 1;
    const CharClass k = cls[start];
    if (!is_ws(k)) {
        size_t j = start + 1;
        while (j < n && cls[j] == k) ++j;
        return j - i;
    }
    return space_run(cls, i, n);
}

}  // namespace

bool known_split_regex(std::string_view pattern, SplitRegex& which) {
    if (pattern == kLlama3Regex) {
        which = SplitRegex::kLlama3;
        return true;
    }
    if (pattern == kQwen2Regex) {
        which = SplitRegex::kQwen2;
        return true;
    }
    if (pattern == kO200kRegex) {
        which = SplitRegex::kO200k;
        return true;
    }
    if (pattern == kTekkenRegex) {
        which = SplitRegex::kTekken;
        return true;
    }
    if (pattern == kGpt2Regex) {
        which = SplitRegex::kGpt2;
        return true;
    }
    return false;
}

void split_regex(SplitRegex which, std::string_view text, SplitScratch& sc,
                 std::vector<std::pair<uint32_t, uint32_t>>& matches) {
    matches.clear();
    decode_utf8(text, sc.cps, sc.offsets);
    const size_t n = sc.cps.size();
    sc.classes.resize(n);
    for (size_t i = 0; i < n; ++i) sc.classes[i] = char_class(sc.cps[i]);
    const bool cased = which == SplitRegex::kO200k || which == SplitRegex::kTekken;
    if (cased) {
        sc.cases.resize(n);
        for (size_t i = 0; i < n; ++i) sc.cases[i] = case_class(sc.cps[i]);
    }
    size_t i = 0;
    while (i < n) {
        size_t len;
        switch (which) {
            case SplitRegex::kLlama3:
                len = match_llama3(sc.cps, sc.classes, i, n, 3);
                break;
            case SplitRegex::kQwen2:
                len = match_llama3(sc.cps, sc.classes, i, n, 1);
                break;
            case SplitRegex::kO200k:
                len = match_o200k(sc.cps, sc.classes, sc.cases, i, n, 3, true);
                break;
            case SplitRegex::kTekken:
                len = match_o200k(sc.cps, sc.classes, sc.cases, i, n, 1, false);
                break;
            default:
                len = match_gpt2(sc.cps, sc.classes, i, n);
                break;
        }
        matches.emplace_back(sc.offsets[i], sc.offsets[i + len]);
        i += len;
    }
}

}  // namespace staticlm::tokjson
