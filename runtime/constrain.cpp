// The parts of constrained decoding that do not depend on the source language:
// token bytes and the vocabulary trie, the byte NFA and its subset
// construction, the per-state token masks (one trie walk per state that a
// token boundary reaches, deduplicated), and the per-sequence cursor.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "constrain_internal.hpp"
#include "staticlm/error.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD: a decoder's repair

// "<0xHH>" (SentencePiece byte fallback) -> HH, else -1.
int byte_piece(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; ++i) {
        const char c = piece[size_t(i)];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

}  // namespace

// Mid-sequence bytes of each token: decode(ref, id) minus decode(ref), so
// that a decoder's rule for the first piece (SentencePiece drops its leading
// space) does not apply; byte-fallback pieces are their byte.
TokenVocabulary::TokenVocabulary(const Tokenizer& tok) {
    const int n = tok.vocab_size();
    std::vector<std::string> bytes(static_cast<size_t>(n));
    int ref = -1;
    std::string ref_text;
    for (std::string_view cand : {"a", "x", "e", "1"}) {
        ref = tok.token_id(cand);
        if (ref >= 0) {
            ref_text = tok.decode({ref});
            if (!ref_text.empty()) break;
        }
        ref = -1;
    }
    for (int id = 0; id < n; ++id) {
        std::string s;
        try {
            const int b = byte_piece(tok.piece(id));
            if (b >= 0) {
                s.assign(1, char(b));
            } else if (ref >= 0) {
                const std::string full = tok.decode({ref, id});
                if (full.size() >= ref_text.size() && full.compare(0, ref_text.size(), ref_text) == 0)
                    s = full.substr(ref_text.size());
            } else {
                s = tok.decode({id});
            }
        } catch (const Error&) {
            s.clear();
        }
        if (s.size() > kMaxTokenBytes || s.find(kReplacementChar) != std::string::npos) s.clear();
        bytes[size_t(id)] = std::move(s);
    }
    build(bytes);
}

TokenVocabulary::TokenVocabulary(const std::vector<std::string>& bytes) {
    std::vector<std::string> b = bytes;
    for (std::string& s : b)
        if (s.size() > kMaxTokenBytes) s.clear();
    build(b);
}

void TokenVocabulary::build(const std::vector<std::string>& bytes) {
    offsets_.assign(1, 0);
    for (const std::string& s : bytes) {
        pool_ += s;
        offsets_.push_back(uint32_t(pool_.size()));
    }
    std::vector<int> order;
    for (int id = 0; id < size(); ++id)
        if (!bytes[size_t(id)].empty()) order.push_back(id);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bytes[size_t(a)] < bytes[size_t(b)]; });
    // Preorder nodes from the sorted strings: a string shares the path of the
    // previous one up to their common prefix.
    std::vector<int32_t> path;  // node at depth d + 1
    std::string_view prev;
    for (int id : order) {
        const std::string_view s = bytes[size_t(id)];
        size_t lcp = 0;
        while (lcp < path.size() && lcp < s.size() && prev[lcp] == s[lcp]) ++lcp;
        while (path.size() > lcp) {
            node_skip[size_t(path.back())] = int32_t(node_byte.size());
            path.pop_back();
        }
        for (size_t k = lcp; k < s.size(); ++k) {
            path.push_back(int32_t(node_byte.size()));
            node_byte.push_back(uint8_t(s[k]));
            node_depth.push_back(uint16_t(k + 1));
            node_skip.push_back(0);
            token_begin.push_back(int32_t(node_tokens.size()));
        }
        node_tokens.push_back(id);
        prev = s;
    }
    for (int32_t node : path) node_skip[size_t(node)] = int32_t(node_byte.size());
    token_begin.push_back(int32_t(node_tokens.size()));
}

// ---------------------------------------------------------------------------
// NFA
// ---------------------------------------------------------------------------

namespace detail {

int Nfa::add_state() {
    if (int(eps_.size()) >= max_states_)
        throw Error(ErrorKind::capacity, "more than " + std::to_string(max_states_) + " NFA states");
    eps_.emplace_back();
    edges_.emplace_back();
    return int(eps_.size()) - 1;
}

void Nfa::literal(int from, int to, std::string_view text) {
    if (text.empty()) {
        epsilon(from, to);
        return;
    }
    int at = from;
    for (size_t i = 0; i < text.size(); ++i) {
        const int next = i + 1 == text.size() ? to : add_state();
        range(at, next, uint8_t(text[i]), uint8_t(text[i]));
        at = next;
    }
}

void Nfa::byte_set(int from, int to, const uint64_t set[4]) {
    int b = 0;
    while (b < 256) {
        if (!(set[b / 64] >> (b % 64) & 1)) {
            ++b;
            continue;
        }
        int e = b;
        while (e + 1 < 256 && (set[(e + 1) / 64] >> ((e + 1) % 64) & 1)) ++e;
        range(from, to, uint8_t(b), uint8_t(e));
        b = e + 1;
    }
}

Constraint::Dfa Nfa::determinize(int start, int accept, int max_dfa, const std::string& what) const {
    const int n = states();
    std::vector<int> mark(size_t(n), -1);
    int stamp = 0;
    std::vector<int> stack;
    auto closure = [&](std::vector<int>& set) {
        ++stamp;
        stack.assign(set.begin(), set.end());
        set.clear();
        while (!stack.empty()) {
            const int s = stack.back();
            stack.pop_back();
            if (mark[size_t(s)] == stamp) continue;
            mark[size_t(s)] = stamp;
            set.push_back(s);
            for (int t : eps_[size_t(s)])
                if (mark[size_t(t)] != stamp) stack.push_back(t);
        }
        std::sort(set.begin(), set.end());
    };
    Constraint::Dfa dfa;
    std::map<std::vector<int>, int> ids;
    std::vector<std::vector<int>> sets;
    auto intern = [&](std::vector<int>&& set) {
        auto it = ids.find(set);
        if (it != ids.end()) return it->second;
        if (int(sets.size()) >= max_dfa)
            throw Error(ErrorKind::capacity, what + ": more than " + std::to_string(max_dfa) +
                                                 " automaton states (lower maxLength/maxItems or simplify it)");
        const int id = int(sets.size());
        ids.emplace(set, id);
        sets.push_back(std::move(set));
        return id;
    };
    std::vector<int> first{start};
    closure(first);
    dfa.start = intern(std::move(first));
    std::vector<std::vector<int>> bucket(256);
    for (size_t i = 0; i < sets.size(); ++i) {
        for (auto& b : bucket) b.clear();
        for (int s : sets[i])
            for (const Edge& e : edges_[size_t(s)])
                for (int b = e.lo; b <= e.hi; ++b) bucket[size_t(b)].push_back(e.to);
        dfa.next.resize((i + 1) * 256, -1);
        dfa.accept.push_back(std::binary_search(sets[i].begin(), sets[i].end(), accept));
        int prev_target = -1;
        for (int b = 0; b < 256; ++b) {
            std::vector<int>& t = bucket[size_t(b)];
            if (t.empty()) continue;
            std::sort(t.begin(), t.end());
            t.erase(std::unique(t.begin(), t.end()), t.end());
            // Byte ranges make neighbouring buckets equal: reuse the last target.
            if (b > 0 && prev_target >= 0 && t == bucket[size_t(b - 1)]) {
                dfa.next[i * 256 + size_t(b)] = prev_target;
                continue;
            }
            std::vector<int> set = t;
            closure(set);
            prev_target = intern(std::move(set));
            dfa.next[i * 256 + size_t(b)] = prev_target;
        }
    }
    return dfa;
}

void json_string_char(Nfa& nfa, int from, int to) {
    auto r = [&](int a, int b, int lo, int hi) { nfa.range(a, b, uint8_t(lo), uint8_t(hi)); };
    r(from, to, 0x20, 0x21);
    r(from, to, 0x23, 0x5B);
    r(from, to, 0x5D, 0x7F);
    // UTF-8 (RFC 3629 table: no overlongs, no surrogates, nothing past U+10FFFF).
    const int c1 = nfa.add_state(), c2 = nfa.add_state(), c3 = nfa.add_state();  // continuation bytes left
    r(c1, to, 0x80, 0xBF);
    r(c2, c1, 0x80, 0xBF);
    r(c3, c2, 0x80, 0xBF);
    r(from, c1, 0xC2, 0xDF);
    const int e0 = nfa.add_state(), ed = nfa.add_state(), f0 = nfa.add_state(), f4 = nfa.add_state();
    r(from, e0, 0xE0, 0xE0);
    r(e0, c1, 0xA0, 0xBF);
    r(from, c2, 0xE1, 0xEC);
    r(from, ed, 0xED, 0xED);
    r(ed, c1, 0x80, 0x9F);
    r(from, c2, 0xEE, 0xEF);
    r(from, f0, 0xF0, 0xF0);
    r(f0, c2, 0x90, 0xBF);
    r(from, c3, 0xF1, 0xF3);
    r(from, f4, 0xF4, 0xF4);
    r(f4, c2, 0x80, 0x8F);
    // Escapes; \u outside D800-DFFF so that every escape is one character.
    const int esc = nfa.add_state(), u = nfa.add_state(), d = nfa.add_state();
    const int h3 = nfa.add_state(), h2 = nfa.add_state(), h1 = nfa.add_state();
    r(from, esc, '\\', '\\');
    for (char c : std::string_view("\"\\/bfnrt")) r(esc, to, c, c);
    r(esc, u, 'u', 'u');
    auto hex = [&](int a, int b) {
        r(a, b, '0', '9');
        r(a, b, 'A', 'F');
        r(a, b, 'a', 'f');
    };
    r(u, h3, '0', '9');
    r(u, h3, 'A', 'C');
    r(u, h3, 'a', 'c');
    r(u, h3, 'E', 'F');
    r(u, h3, 'e', 'f');
    r(u, d, 'D', 'D');
    r(u, d, 'd', 'd');
    r(d, h2, '0', '7');
    hex(h3, h2);
    hex(h2, h1);
    hex(h1, to);
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Constraint: masks per token-boundary state
// ---------------------------------------------------------------------------

// The states a token boundary reaches are found breadth first from the start,
// one trie walk each, which also gives each state's mask and successors. Then
// the states from which tokens can complete the value ("live") are found, and
// the few live states with a successor that is not live get their mask again
// without the tokens that lead there: a sequence never enters a state the
// vocabulary cannot finish. Masks are deduplicated.
Constraint::Constraint(Dfa dfa, std::shared_ptr<const TokenVocabulary> vocab, const ConstraintLimits& limits,
                       const std::string& what)
    : vocab_(std::move(vocab)), next_(std::move(dfa.next)), accept_(std::move(dfa.accept)), start_(dfa.start) {
    const auto t0 = std::chrono::steady_clock::now();
    const TokenVocabulary& v = *vocab_;
    words_ = (size_t(v.size()) + 63) / 64;
    const size_t n_states = accept_.size();
    const int32_t n_nodes = int32_t(v.node_byte.size());
    int32_t st[TokenVocabulary::kMaxTokenBytes + 1];
    // Calls on_node(node, end_state) for every trie node that ends tokens and
    // whose bytes lead from `s` to a DFA state.
    auto walk = [&](int32_t s, auto&& on_node) {
        st[0] = s;
        for (int32_t i = 0; i < n_nodes;) {
            const int d = v.node_depth[size_t(i)];
            const int32_t ns = next_[size_t(st[d - 1]) * 256 + v.node_byte[size_t(i)]];
            if (ns < 0) {
                i = v.node_skip[size_t(i)];
                continue;
            }
            st[d] = ns;
            if (v.token_begin[size_t(i)] < v.token_begin[size_t(i) + 1]) on_node(i, ns);
            ++i;
        }
    };
    std::vector<uint64_t> cur(words_);
    auto set_tokens = [&](int32_t node) {
        for (int32_t k = v.token_begin[size_t(node)]; k < v.token_begin[size_t(node) + 1]; ++k) {
            const int t = v.node_tokens[size_t(k)];
            cur[size_t(t) / 64] |= uint64_t(1) << (t % 64);
        }
    };
    std::vector<uint64_t> pool;  // masks of pass 1 and 2, deduplicated
    std::unordered_multimap<uint64_t, int32_t> by_hash;
    auto intern = [&]() {
        uint64_t h = 0xcbf29ce484222325ull;
        for (uint64_t w : cur) h = (h ^ w) * 0x100000001b3ull;
        for (auto [it, end] = by_hash.equal_range(h); it != end; ++it)
            if (std::equal(cur.begin(), cur.end(), pool.begin() + ptrdiff_t(size_t(it->second) * words_)))
                return it->second;
        const int32_t id = int32_t(pool.size() / (words_ ? words_ : 1));
        if ((pool.size() + words_) * sizeof(uint64_t) > limits.max_mask_bytes)
            throw Error(ErrorKind::capacity, what + ": its token masks need more than " +
                                                 std::to_string(limits.max_mask_bytes >> 20) + " MiB");
        pool.insert(pool.end(), cur.begin(), cur.end());
        by_hash.emplace(h, id);
        return id;
    };
    // Reachable token-boundary states, their masks and successors.
    mask_of_.assign(n_states, -1);
    std::vector<int32_t> queue{start_};
    std::vector<uint8_t> queued(n_states, 0);
    queued[size_t(start_)] = 1;
    std::vector<std::vector<int32_t>> succ(n_states);
    std::vector<int32_t> seen_by(n_states, -1);
    for (size_t qi = 0; qi < queue.size(); ++qi) {
        const int32_t s = queue[qi];
        std::fill(cur.begin(), cur.end(), 0);
        walk(s, [&](int32_t node, int32_t ns) {
            set_tokens(node);
            if (seen_by[size_t(ns)] != s) {
                seen_by[size_t(ns)] = s;
                succ[size_t(s)].push_back(ns);
            }
            if (!queued[size_t(ns)]) {
                queued[size_t(ns)] = 1;
                queue.push_back(ns);
            }
        });
        mask_of_[size_t(s)] = intern();
    }
    // Live: complete, or a successor is live (fixpoint over the reversed edges).
    std::vector<std::vector<int32_t>> pred(n_states);
    for (int32_t s : queue)
        for (int32_t ns : succ[size_t(s)]) pred[size_t(ns)].push_back(s);
    std::vector<uint8_t> live(n_states, 0);
    std::vector<int32_t> work;
    for (int32_t s : queue)
        if (accept_[size_t(s)]) {
            live[size_t(s)] = 1;
            work.push_back(s);
        }
    while (!work.empty()) {
        const int32_t s = work.back();
        work.pop_back();
        for (int32_t p : pred[size_t(s)])
            if (!live[size_t(p)]) {
                live[size_t(p)] = 1;
                work.push_back(p);
            }
    }
    if (!live[size_t(start_)])
        throw Error(ErrorKind::unsupported, what + ": no sequence of the vocabulary's tokens spells a complete value");
    for (int32_t s : queue) {
        if (!live[size_t(s)]) {
            mask_of_[size_t(s)] = -1;
            continue;
        }
        ++token_states_;
        const auto& ss = succ[size_t(s)];
        if (std::all_of(ss.begin(), ss.end(), [&](int32_t ns) { return live[size_t(ns)] != 0; })) continue;
        std::fill(cur.begin(), cur.end(), 0);
        walk(s, [&](int32_t node, int32_t ns) {
            if (live[size_t(ns)]) set_tokens(node);
        });
        mask_of_[size_t(s)] = intern();
    }
    // Keep only the masks in use.
    std::vector<int32_t> renum(pool.size() / (words_ ? words_ : 1), -1);
    for (int32_t& m : mask_of_) {
        if (m < 0) continue;
        if (renum[size_t(m)] < 0) {
            renum[size_t(m)] = int32_t(masks_.size() / (words_ ? words_ : 1));
            masks_.insert(masks_.end(), pool.begin() + ptrdiff_t(size_t(m) * words_),
                          pool.begin() + ptrdiff_t(size_t(m + 1) * words_));
        }
        m = renum[size_t(m)];
    }
    compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int Constraint::next(int state, int token) const {
    if (state < 0 || token < 0 || token >= vocab_->size()) return -1;
    const std::string_view b = vocab_->bytes(token);
    if (b.empty() || mask_of_[size_t(state)] < 0) return -1;
    for (char c : b) {
        state = next_[size_t(state) * 256 + uint8_t(c)];
        if (state < 0) return -1;
    }
    return mask_of_[size_t(state)] >= 0 ? state : -1;
}

size_t Constraint::bytes() const {
    return next_.size() * sizeof(int32_t) + accept_.size() + mask_of_.size() * sizeof(int32_t) +
           masks_.size() * sizeof(uint64_t);
}

// ---------------------------------------------------------------------------
// Per sequence
// ---------------------------------------------------------------------------

ConstraintCursor::ConstraintCursor(int vocab) : vocab_(vocab), buf_((size_t(vocab) + 63) / 64) {}

void ConstraintCursor::start(const Constraint* c) {
    // A model may have more rows than its tokenizer has tokens (padded
    // embeddings): those tokens are never allowed.
    if (c && c->vocab() > vocab_)
        throw Error(ErrorKind::config, "constraint compiled for a vocabulary of " + std::to_string(c->vocab()) +
                                           " tokens, more than the model's " + std::to_string(vocab_) + " logits");
    c_ = c;
    state_ = c ? c->start() : -1;
}

std::span<const uint64_t> ConstraintCursor::mask(std::span<const int> stop_ids) {
    const std::span<const uint64_t> m = c_->allowed(state_);
    std::copy(m.begin(), m.end(), buf_.begin());
    std::fill(buf_.begin() + ptrdiff_t(m.size()), buf_.end(), 0);
    const bool done = c_->complete(state_);
    for (int id : stop_ids) {
        if (id < 0 || id >= vocab_) continue;
        const uint64_t bit = uint64_t(1) << (id % 64);
        if (done)
            buf_[size_t(id) / 64] |= bit;
        else
            buf_[size_t(id) / 64] &= ~bit;
    }
    return buf_;
}

void ConstraintCursor::advance(int token) {
    if (!c_) return;
    const int ns = c_->next(state_, token);
    if (ns >= 0) state_ = ns;
}

struct ConstraintCache::Impl {
    const Tokenizer& tok;
    ConstraintLimits limits;
    std::shared_ptr<const TokenVocabulary> vocab;
    struct Entry {
        std::shared_ptr<const Constraint> c;
        ErrorKind kind = ErrorKind::unsupported;
        std::string error;
    };
    std::map<std::string, Entry> done;  // "j" + schema / "g" + grammar

    std::shared_ptr<const Constraint> get(char what, const std::string& text) {
        const std::string key = what + text;
        auto it = done.find(key);
        if (it == done.end()) {
            Entry e;
            try {
                if (!vocab) vocab = std::make_shared<const TokenVocabulary>(tok);
                e.c = what == 'j' ? Constraint::json_schema(text, vocab, limits) : Constraint::grammar(text, vocab, limits);
            } catch (const Error& err) {
                e.kind = err.kind();
                e.error = err.what();
            }
            it = done.emplace(key, std::move(e)).first;
        }
        if (!it->second.c) throw Error(it->second.kind, it->second.error);
        return it->second.c;
    }
};

ConstraintCache::ConstraintCache(const Tokenizer& tokenizer, ConstraintLimits limits)
    : impl_(std::make_unique<Impl>(Impl{tokenizer, limits, nullptr, {}})) {}
ConstraintCache::~ConstraintCache() = default;
std::shared_ptr<const Constraint> ConstraintCache::json_schema(const std::string& text) { return impl_->get('j', text); }
std::shared_ptr<const Constraint> ConstraintCache::grammar(const std::string& text) { return impl_->get('g', text); }

void apply_token_mask(std::span<float> logits, std::span<const uint64_t> allowed) {
    const float ninf = -std::numeric_limits<float>::infinity();
    const size_t n = logits.size();
    for (size_t w = 0; w < allowed.size() && w * 64 < n; ++w) {
        const uint64_t bits = allowed[w];
        if (bits == ~uint64_t(0)) continue;
        const size_t end = std::min(n, w * 64 + 64);
        if (bits == 0) {
            std::fill(logits.begin() + ptrdiff_t(w * 64), logits.begin() + ptrdiff_t(end), ninf);
            continue;
        }
        // A select per element, no branch: vectorizes (a mixed word is the
        // common case inside strings, where most tokens are allowed).
        float* p = logits.data() + w * 64;
        const size_t n_here = end - w * 64;
        for (size_t j = 0; j < n_here; ++j) p[j] = (bits >> j & 1) ? p[j] : ninf;
    }
}

}  // namespace staticlm
