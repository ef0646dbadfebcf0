// Encoding and decoding for tokenizer.json BPE tokenizers, following the
// Hugging Face `tokenizers` pipeline: added tokens -> normalizer ->
// pre-tokenizer -> BPE (merge ranks, byte fallback, unk) and the decoder chain.
#include "tokenizer/tokenizer_json.hpp"

#include <algorithm>
#include <cstring>
#include <queue>

#include "staticlm/error.hpp"

namespace staticlm::tokjson {
namespace {

uint64_t hash_bytes(const char* p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    h ^= v;
    // splitmix64's finalizer: every input bit reaches the low (index) bits.
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

constexpr size_t kMaxCachedWord = 128;  // bytes; longer words are not cached
constexpr size_t kMaxCacheEntries = 1 << 18;

}  // namespace

// ---------------------------------------------------------------- StringIdMap

void StringIdMap::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    if (cap <= slots_.size()) return;
    std::vector<Slot> old(cap, Slot{0, 0, 0, 0});
    old.swap(slots_);
    const size_t mask = cap - 1;
    for (const Slot& s : old) {
        if (s.tag == 0) continue;
        size_t i = hash_bytes(arena_.data() + s.offset, s.length) & mask;
        while (slots_[i].tag != 0) i = (i + 1) & mask;
        slots_[i] = s;
    }
}

void StringIdMap::grow() { reserve(slots_.empty() ? 16 : slots_.size()); }

int StringIdMap::put(std::string_view key, int id) {
    if ((n_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    const uint64_t h = hash_bytes(key.data(), key.size());
    const auto tag = static_cast<uint32_t>(h >> 32) | 1u;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        Slot& s = slots_[i];
        if (s.tag == 0) {
            s = Slot{tag, id, static_cast<uint32_t>(arena_.size()),
                     static_cast<uint32_t>(key.size())};
            arena_.append(key);
            ++n_;
            return -1;
        }
        if (s.tag == tag && s.length == key.size() &&
            std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
            const int old = s.id;
            s.id = id;
            return old;
        }
    }
}

uint64_t StringIdMap::hash(std::string_view key) { return hash_bytes(key.data(), key.size()); }

int StringIdMap::get(std::string_view key, uint64_t h) const {
    if (slots_.empty()) return -1;
    const size_t mask = slots_.size() - 1;
    const auto tag = static_cast<uint32_t>(h >> 32) | 1u;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.tag == 0) return -1;
        if (s.tag == tag && s.length == key.size() &&
            std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
            return s.id;
    }
}

// ------------------------------------------------------------------- MergeMap

void MergeMap::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    if (cap <= slots_.size()) return;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{kEmpty, 0, 0});
    n_ = 0;
    for (const Slot& s : old)
        if (s.key != kEmpty)
            put(static_cast<int>(s.key >> 32), static_cast<int>(s.key & 0xFFFFFFFF), s.rank,
                s.merged);
}

void MergeMap::put(int left, int right, int rank, int merged) {
    if ((n_ + 1) * 2 > slots_.size()) reserve(n_ + 1 > 8 ? (n_ + 1) * 2 : 16);
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    const size_t mask = slots_.size() - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        Slot& s = slots_[i];
        if (s.key == kEmpty) {
            s = Slot{key, rank, merged};
            ++n_;
            return;
        }
        if (s.key == key) {  // a repeated merge: the later one wins, as in `tokenizers`
            s.rank = rank;
            s.merged = merged;
            return;
        }
    }
}

// --------------------------------------------------------------- AddedMatcher

void AddedMatcher::add(std::string_view text, int token_index) {
    if (text.empty()) return;
    int node = 0;
    for (char ch : text) {
        const auto b = static_cast<uint8_t>(ch);
        int next = -1;
        for (const auto& [c, child] : nodes_[node].children)
            if (c == b) next = child;
        if (next < 0) {
            next = static_cast<int>(nodes_.size());
            nodes_[node].children.emplace_back(b, next);
            nodes_.emplace_back();
        }
        node = next;
    }
    if (nodes_[node].token < 0) nodes_[node].token = token_index;
    first_byte_[static_cast<uint8_t>(text[0])] = true;
}

int AddedMatcher::match(std::string_view text, size_t pos, size_t& len) const {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) return -1;
    int node = 0, best = -1;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto b = static_cast<uint8_t>(text[i]);
        int next = -1;
        for (const auto& [c, child] : nodes_[node].children)
            if (c == b) {
                next = child;
                break;
            }
        if (next < 0) break;
        node = next;
        if (nodes_[node].token >= 0) {
            best = nodes_[node].token;
            len = i + 1 - pos;
        }
    }
    return best;
}

// --------------------------------------------------------------- the pipeline

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    if (from.empty() || s.find(from) == std::string::npos) return;
    std::string out;
    out.reserve(s.size() + s.size() / 4);
    size_t i = 0;
    for (size_t j; (j = s.find(from, i)) != std::string::npos; i = j + from.size()) {
        out.append(s, i, j - i);
        out.append(to);
    }
    out.append(s, i, std::string::npos);
    s.swap(out);
}

struct Span {
    size_t begin, end;
    bool match;
};

// The splitting rule of `tokenizers`' SplitDelimiterBehavior, applied to
// contiguous spans that cover the text; empty pieces are dropped.
void apply_behavior(const std::vector<Span>& spans, SplitBehavior behavior,
                    std::vector<std::pair<size_t, size_t>>& out) {
    out.clear();
    bool previous_match = false;
    switch (behavior) {
        case SplitBehavior::kRemoved:
            for (const Span& s : spans)
                if (!s.match) out.emplace_back(s.begin, s.end);
            break;
        case SplitBehavior::kIsolated:
            for (const Span& s : spans) out.emplace_back(s.begin, s.end);
            break;
        case SplitBehavior::kMergedWithPrevious:
            for (const Span& s : spans) {
                if (s.match && !previous_match && !out.empty())
                    out.back().second = s.end;
                else
                    out.emplace_back(s.begin, s.end);
                previous_match = s.match;
            }
            break;
        case SplitBehavior::kMergedWithNext:
            for (size_t k = spans.size(); k-- > 0;) {
                const Span& s = spans[k];
                if (s.match && !previous_match && !out.empty())
                    out.back().first = s.begin;
                else
                    out.emplace_back(s.begin, s.end);
                previous_match = s.match;
            }
            std::reverse(out.begin(), out.end());
            break;
        case SplitBehavior::kContiguous:
            for (const Span& s : spans) {
                if (s.match == previous_match && !out.empty())
                    out.back().second = s.end;
                else
                    out.emplace_back(s.begin, s.end);
                previous_match = s.match;
            }
            break;
    }
    std::erase_if(out, [](const auto& r) { return r.first == r.second; });
}

// Spans of `text` at the occurrences of `pattern` (non-overlapping, leftmost).
void string_spans(std::string_view text, std::string_view pattern, bool invert,
                  std::vector<Span>& spans) {
    spans.clear();
    size_t i = 0;
    if (!pattern.empty()) {
        for (size_t j; (j = text.find(pattern, i)) != std::string_view::npos;
             i = j + pattern.size()) {
            if (j > i) spans.push_back({i, j, invert});
            spans.push_back({j, j + pattern.size(), !invert});
        }
    }
    if (i < text.size()) spans.push_back({i, text.size(), invert});
}

// Spans of `text` for tokenizers' Digits: every number character (\p{N}) a
// match of its own.
void digit_spans(std::string_view text, SplitScratch& sc, std::vector<Span>& spans) {
    spans.clear();
    decode_utf8(text, sc.cps, sc.offsets);
    size_t rest = 0;  // start of the current run of non-numbers
    for (size_t i = 0; i < sc.cps.size(); ++i) {
        if (!is_number(sc.cps[i])) continue;
        if (sc.offsets[i] > rest) spans.push_back({rest, sc.offsets[i], false});
        spans.push_back({sc.offsets[i], sc.offsets[i + 1], true});
        rest = sc.offsets[i + 1];
    }
    if (rest < text.size()) spans.push_back({rest, text.size(), false});
}

// GPT-2's reversible map from bytes to printable code points.
struct ByteLevelTables {
    std::string byte_to_utf8[256];
    int16_t char_to_byte[512];  // code point -> byte, -1 when not a byte char
    ByteLevelTables() {
        int n = 0;
        for (int i = 0; i < 512; ++i) char_to_byte[i] = -1;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256u + n++;
            append_utf8(byte_to_utf8[b], cp);
            char_to_byte[cp] = static_cast<int16_t>(b);
        }
    }
};
const ByteLevelTables& byte_level() {
    static const ByteLevelTables t;
    return t;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

}  // namespace

int byte_token_value(std::string_view t) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
    return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

void JsonTokenizer::normalize(std::string& s) const {
    for (const NormStep& n : normalizer_) {
        if (n.kind == NormKind::kReplace)
            replace_all(s, n.pattern, n.content);
        else if (n.kind == NormKind::kNfc)
            nfc(s);
        else if (!s.empty())
            s.insert(0, n.content);
    }
}

void JsonTokenizer::pre_tokenize(std::vector<Piece>& pieces) const {
    thread_local std::vector<Piece> next;
    thread_local std::vector<Span> spans;
    thread_local std::vector<std::pair<size_t, size_t>> ranges;
    thread_local std::vector<std::pair<uint32_t, uint32_t>> matches;
    thread_local SplitScratch scratch;
    const auto& bl = byte_level();
    auto emit = [&](const Piece& p) {
        for (size_t k = 0; k < ranges.size(); ++k)
            next.push_back({p.text.substr(ranges[k].first, ranges[k].second - ranges[k].first),
                            p.first && k == 0 && ranges[k].first == 0});
    };
    for (const PreStep& step : pre_) {
        next.clear();
        for (Piece& p : pieces) {
            switch (step.kind) {
                case PreKind::kSplitString:
                    string_spans(p.text, step.pattern, step.invert, spans);
                    apply_behavior(spans, step.behavior, ranges);
                    emit(p);
                    break;
                case PreKind::kDigits:
                    digit_spans(p.text, scratch, spans);
                    apply_behavior(spans, step.behavior, ranges);
                    emit(p);
                    break;
                case PreKind::kSplitRegex: {
                    split_regex(step.regex, p.text, scratch, matches);
                    spans.clear();
                    for (const auto& [b, e] : matches) spans.push_back({b, e, !step.invert});
                    apply_behavior(spans, step.behavior, ranges);
                    emit(p);
                    break;
                }
                case PreKind::kByteLevel: {
                    if (step.add_prefix_space && (p.text.empty() || p.text[0] != ' '))
                        p.text.insert(0, 1, ' ');
                    ranges.clear();
                    if (step.use_regex) {
                        split_regex(SplitRegex::kGpt2, p.text, scratch, matches);
                        for (const auto& [b, e] : matches) ranges.emplace_back(b, e);
                    } else if (!p.text.empty()) {
                        ranges.emplace_back(0, p.text.size());
                    }
                    for (size_t k = 0; k < ranges.size(); ++k) {
                        Piece q{std::string(), p.first && k == 0};
                        for (size_t i = ranges[k].first; i < ranges[k].second; ++i)
                            q.text += bl.byte_to_utf8[static_cast<uint8_t>(p.text[i])];
                        next.push_back(std::move(q));
                    }
                    break;
                }
                case PreKind::kMetaspace: {
                    replace_all(p.text, " ", step.replacement);
                    const bool starts =
                        p.text.compare(0, step.replacement.size(), step.replacement) == 0;
                    if (!starts && (step.prepend == PrependScheme::kAlways ||
                                    (step.prepend == PrependScheme::kFirst && p.first)))
                        p.text.insert(0, step.replacement);
                    if (step.split) {
                        string_spans(p.text, step.replacement, false, spans);
                        apply_behavior(spans, SplitBehavior::kMergedWithNext, ranges);
                    } else {
                        ranges.assign(1, {0, p.text.size()});
                        if (p.text.empty()) ranges.clear();
                    }
                    emit(p);
                    break;
                }
            }
        }
        pieces.swap(next);
    }
}

void JsonTokenizer::merge_word(std::string_view w, std::vector<int>& out) const {
    struct Sym {
        int id, prev, next;
    };
    struct Merge {
        int rank, pos, merged;
        // std::priority_queue pops the largest: make that the lowest rank,
        // then the leftmost position.
        bool operator<(const Merge& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    thread_local std::vector<Sym> syms;
    thread_local std::vector<Merge> heap_storage;
    syms.clear();
    auto push = [&](int id) {
        const int n = static_cast<int>(syms.size());
        syms.push_back({id, n - 1, n + 1});
    };
    bool pending_unk = false;
    for (size_t i = 0; i < w.size();) {
        size_t len = 1;
        const auto b = static_cast<uint8_t>(w[i]);
        if (b >= 0xF0)
            len = 4;
        else if (b >= 0xE0)
            len = 3;
        else if (b >= 0xC0)
            len = 2;
        const std::string_view ch = w.substr(i, len);
        i += len;
        const int id = vocab_.get(ch);
        if (id >= 0) {
            if (pending_unk) push(unk_id_);
            pending_unk = false;
            push(id);
            continue;
        }
        if (byte_fallback_) {
            bool all = true;
            for (char c : ch) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
            if (all) {  // like `tokenizers`, a pending unk stays pending here
                for (char c : ch) push(byte_ids_[static_cast<uint8_t>(c)]);
                continue;
            }
        }
        if (unk_id_ >= 0) {
            if (pending_unk && !fuse_unk_) push(unk_id_);
            pending_unk = true;
        }
    }
    if (pending_unk) push(unk_id_);
    const int n = static_cast<int>(syms.size());
    if (n == 0) return;
    syms.back().next = -1;

    heap_storage.clear();
    std::priority_queue<Merge> queue(std::less<Merge>(), std::move(heap_storage));
    int rank, merged;
    for (int i = 0; i + 1 < n; ++i)
        if (merges_.get(syms[i].id, syms[i + 1].id, rank, merged)) queue.push({rank, i, merged});
    while (!queue.empty()) {
        const Merge top = queue.top();
        queue.pop();
        Sym& s = syms[top.pos];
        if (s.id < 0 || s.next < 0) continue;  // removed, or last
        Sym& right = syms[s.next];
        // A stale entry: the pair at pos changed since it was queued.
        if (!merges_.get(s.id, right.id, rank, merged) || merged != top.merged) continue;
        s.id = top.merged;
        right.id = -1;
        s.next = right.next;
        if (s.next >= 0) syms[s.next].prev = top.pos;
        if (s.prev >= 0 && merges_.get(syms[s.prev].id, s.id, rank, merged))
            queue.push({rank, s.prev, merged});
        if (s.next >= 0 && merges_.get(s.id, syms[s.next].id, rank, merged))
            queue.push({rank, top.pos, merged});
    }
    for (int i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

void JsonTokenizer::encode_word(std::string_view word, std::vector<int>& out) const {
    if (word.empty()) return;
    if (ignore_merges_) {
        const int id = vocab_.get(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    const bool cacheable = word.size() <= kMaxCachedWord;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        auto it = cache_.find(word);
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const size_t first = out.size();
    merge_word(word, out);
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kMaxCacheEntries) cache_.clear();
        cache_.emplace(std::string(word), std::vector<int>(out.begin() + first, out.end()));
    }
}

std::vector<int> JsonTokenizer::encode(std::string_view text, bool add_special) const {
    // Like the SentencePiece wrapper: a prompt must be valid UTF-8 (the
    // `tokenizers` library only ever sees valid strings, so there is no
    // reference behaviour to follow for broken bytes).
    check_utf8(text, file_);
    std::vector<int> out;
    if (add_special) out = prefix_ids_;
    encode_into(text, true, out);
    if (add_special) out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
    return out;
}

std::vector<int> JsonTokenizer::encode_in_chunks(std::string_view text, bool add_special,
                                                 size_t max_tokens, size_t chunk_bytes) const {
    check_utf8(text, file_);
    return encode_chunks(text, max_tokens, chunk_bytes, chunk_,
                         [&](std::string_view chunk, bool first, bool last, std::vector<int>& out) {
                             if (first && add_special)
                                 out.insert(out.end(), prefix_ids_.begin(), prefix_ids_.end());
                             encode_into(chunk, first, out);
                             if (last && add_special)
                                 out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
                         });
}

void JsonTokenizer::encode_into(std::string_view text, bool first_text,
                                std::vector<int>& out) const {
    std::vector<Piece> pieces;

    auto run_model = [&](std::string s, bool first) {
        pieces.clear();
        pieces.push_back({std::move(s), first});
        pre_tokenize(pieces);
        for (const Piece& p : pieces) encode_word(p.text, out);
    };
    // Text between raw-matched added tokens: normalize, then match the
    // normalized added tokens, then pre-tokenize and run the model.
    auto run_segment = [&](std::string_view seg, bool first) {
        if (seg.empty()) return;
        std::string s(seg);
        normalize(s);
        if (normalized_matcher_.empty()) return run_model(std::move(s), first);
        size_t start = 0, len = 0;
        for (size_t pos = 0; pos < s.size();) {
            const int t = normalized_matcher_.match(s, pos, len);
            if (t < 0) {
                ++pos;
                continue;
            }
            if (pos > start) run_model(s.substr(start, pos - start), first && start == 0);
            out.push_back(added_[static_cast<size_t>(t)].id);
            pos += len;
            start = pos;
        }
        if (start < s.size()) run_model(s.substr(start), first && start == 0);
    };

    size_t start = 0, len = 0;
    if (!raw_matcher_.empty()) {
        for (size_t pos = 0; pos < text.size();) {
            const int t = raw_matcher_.match(text, pos, len);
            if (t < 0) {
                ++pos;
                continue;
            }
            run_segment(text.substr(start, pos - start), first_text && start == 0);
            out.push_back(added_[static_cast<size_t>(t)].id);
            pos += len;
            start = pos;
        }
    }
    run_segment(text.substr(start), first_text && start == 0);
}

// Cuts at "letter space letter" are exact when the pipeline either puts a
// piece boundary there (a regex split, ByteLevel's regex, Metaspace or a Split
// on the space's image) or, for one-word pipelines (Gemma: the whole segment
// is one BPE word), when no token could span it: no vocab entry or normalized
// added token holds "<letter><space image>" for that letter, and the letter
// itself is a token. Only the normalizer shapes of real files are accepted:
// none, Replace(" " -> r), and Prepend(r) with it (the space at a cut is then
// dropped and re-created by Prepend). Raw added tokens must not contain a space.
void JsonTokenizer::init_chunking() {
    std::string space = " ";
    bool replaced = false, prepend = false;
    std::string prepended;
    for (const NormStep& n : normalizer_) {
        if (n.kind == NormKind::kReplace && n.pattern == " " && !replaced) {
            space = n.content;
            replaced = true;
        } else if (n.kind == NormKind::kPrepend && !prepend) {
            prepend = true;
            prepended = n.content;
        } else if (n.kind == NormKind::kNfc) {
            // NFC never changes or moves "letter space letter" (ASCII starters
            // that combine with nothing), so a cut there stays a cut.
        } else {
            return;
        }
    }
    if (prepend && (!replaced || prepended != space)) return;
    if (space.empty()) return;
    for (const AddedToken& a : added_) {
        if (a.normalized) continue;
        if (a.content.find(' ') != std::string::npos) return;
        // Prepend gives every segment between raw tokens its own space image:
        // a raw token ending at a cut ("Hel" [lo] " world") or starting right
        // after one would see that segment change when the cut drops the space.
        if (prepend && !a.content.empty() && (ascii_letter(a.content.front()) || ascii_letter(a.content.back())))
            return;
    }
    const std::string norm_space = space;  // what normalized added tokens are matched against
    bool boundary = false;
    auto is_letter_free = [](std::string_view s) { return std::none_of(s.begin(), s.end(), ascii_letter); };
    for (const PreStep& p : pre_) {
        if (boundary) break;  // later steps work piece by piece: the boundary stays
        switch (p.kind) {
            case PreKind::kSplitRegex:
                if (space != " " || p.invert || p.behavior != SplitBehavior::kIsolated) return;
                boundary = true;
                break;
            case PreKind::kByteLevel:
                if (space != " " || !p.use_regex) return;
                boundary = true;
                break;
            case PreKind::kSplitString:
                if (p.pattern == space && !p.invert &&
                    p.behavior != SplitBehavior::kMergedWithPrevious) {
                    boundary = true;
                } else if (p.pattern.empty() || !is_letter_free(p.pattern) ||
                           ("a" + space + "a").find(p.pattern) != std::string::npos) {
                    return;  // might split or merge at the cut
                }
                break;
            case PreKind::kDigits:
                break;  // never splits or merges letters and spaces
            case PreKind::kMetaspace:
                if (space != " " || p.replacement.empty()) return;
                space = p.replacement;
                if (p.split) boundary = true;
                break;
        }
    }
    if (!boundary) {
        // A space image that is no token is dropped from the word (no unk, no
        // byte fallback) or becomes a symbol no piece spells; either way the
        // letters around it could meet in one merge, so no cut is exact.
        if (vocab_.get(space) < 0) return;
        for (const std::string& piece : id_to_piece_) chunk_.forbid_before(piece, space);
        for (char c = 'A'; c <= 'z'; ++c)
            if (vocab_.get(std::string_view(&c, 1)) < 0)
                chunk_.bad_before[static_cast<unsigned char>(c)] = true;
    }
    for (const AddedToken& a : added_)
        if (a.normalized) {
            std::string s = a.content;
            normalize(s);
            chunk_.forbid_before(s, norm_space);
        }
    chunk_.drop_space = prepend;
    chunk_.enabled = true;
}

// -------------------------------------------------------------------- decode

std::string JsonTokenizer::decode_impl(const std::vector<int>& ids, bool stable) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int id : ids) {
        if (id < 0 || id >= vocab_size())
            throw Error(ErrorKind::input, "token id " + std::to_string(id) +
                                              " is out of range [0, " +
                                              std::to_string(vocab_size()) + ") of " + file_);
        if (special_flag_[static_cast<size_t>(id)]) continue;
        tokens.push_back(id_to_piece_[static_cast<size_t>(id)]);
    }
    const auto& bl = byte_level();
    std::vector<uint32_t> cps, offs;
    for (const DecStep& d : decoder_) {
        switch (d.kind) {
            case DecKind::kByteLevel: {
                // Raw bytes; the one UTF-8 repair happens at the end.
                std::string all;
                for (const std::string& t : tokens) {
                    decode_utf8(t, cps, offs);
                    const size_t mark = all.size();
                    bool ok = true;
                    for (uint32_t c : cps) {
                        if (c >= 512 || bl.char_to_byte[c] < 0) {
                            ok = false;
                            break;
                        }
                        all.push_back(static_cast<char>(bl.char_to_byte[c]));
                    }
                    if (!ok) {
                        all.resize(mark);
                        all += t;
                    }
                }
                tokens.assign(1, std::move(all));
                break;
            }
            case DecKind::kMetaspace:
                for (size_t i = 0; i < tokens.size(); ++i)
                    replace_all(tokens[i], d.pattern,
                                (i == 0 && d.prepend != PrependScheme::kNever) ? "" : " ");
                break;
            case DecKind::kByteFallback: {
                std::vector<std::string> out;
                std::string bytes;
                size_t n_bytes = 0;
                // A run of byte pieces stays raw; the UTF-8 repair at the end
                // turns each maximal invalid subpart into one U+FFFD. (`tokenizers`
                // turns every byte of a run that is not valid as a whole into
                // U+FFFD, so decoding a prefix that ends inside a character would
                // rewrite characters already complete; with this rule a prefix
                // decodes to a prefix of the full text plus at most one trailing
                // U+FFFD, which StreamDecoder holds back. Ids from encode() always
                // form valid runs and decode identically.)
                auto flush = [&] {
                    if (n_bytes == 0) return;
                    out.push_back(bytes);
                    bytes.clear();
                    n_bytes = 0;
                };
                for (std::string& t : tokens) {
                    const int byte = byte_token_value(t);
                    if (byte >= 0) {
                        bytes.push_back(static_cast<char>(byte));
                        ++n_bytes;
                    } else {
                        flush();
                        out.push_back(std::move(t));
                    }
                }
                flush();
                tokens.swap(out);
                break;
            }
            case DecKind::kFuse: {
                std::string all;
                for (const std::string& t : tokens) all += t;
                tokens.assign(1, std::move(all));
                break;
            }
            case DecKind::kStrip:
                for (std::string& t : tokens) {
                    size_t b = 0, e = t.size();
                    for (size_t k = 0;
                         k < d.start && t.compare(b, d.content.size(), d.content) == 0; ++k)
                        b += d.content.size();
                    for (size_t k = 0;
                         k < d.stop && e >= b + d.content.size() &&
                         t.compare(e - d.content.size(), d.content.size(), d.content) == 0;
                         ++k)
                        e -= d.content.size();
                    t = t.substr(b, e - b);
                }
                break;
            case DecKind::kReplace:
                for (std::string& t : tokens) replace_all(t, d.pattern, d.content);
                break;
        }
    }
    std::string text;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (decoder_.empty() && i > 0) text += ' ';  // `tokenizers` joins with spaces then
        text += tokens[i];
    }
    if (stable) text.resize(complete_utf8_prefix(text));
    std::string fixed;
    return sanitize_utf8(text, fixed) ? text : fixed;
}

std::string JsonTokenizer::decode(const std::vector<int>& ids) const {
    return decode_impl(ids, false);
}

std::string JsonTokenizer::decode_stable(const std::vector<int>& ids) const {
    return decode_impl(ids, true);
}

bool JsonTokenizer::is_special(int id) const {
    return id >= 0 && id < vocab_size() && special_flag_[static_cast<size_t>(id)];
}

int JsonTokenizer::token_id(std::string_view piece) const {
    const int id = added_ids_.get(piece);
    return id >= 0 ? id : vocab_.get(piece);
}

std::string JsonTokenizer::piece(int id) const {
    if (id < 0 || id >= vocab_size())
        throw Error(ErrorKind::input, "token id " + std::to_string(id) + " is out of range [0, " +
                                          std::to_string(vocab_size()) + ") of " + file_);
    return id_to_piece_[static_cast<size_t>(id)];
}

}  // namespace staticlm::tokjson
