// GBNF subset -> byte NFA: rules `name ::= ...`, alternation `|`, sequences,
// groups `( )`, `?` `*` `+` and `{m}` `{m,}` `{m,n}`, string literals with
// escapes, character classes `[a-z]` `[^"\\]` over code points (compiled to
// UTF-8 byte ranges), `.` (any character) and `#` comments. The root rule is
// "root". Rules are inlined; a rule that reaches itself is unrolled at most
// kMaxRecursion levels deep (deeper alternatives are dropped), so a recursive
// grammar is accepted with bounded nesting.
#include <algorithm>
#include <map>

#include "constrain_internal.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {

constexpr int kMaxRecursion = 4;

struct Node {
    enum class Kind { seq, alt, literal, cls, ref, repeat } kind = Kind::seq;
    std::vector<Node> kids;  // seq / alt: the parts; repeat: one
    std::string text;        // literal bytes; ref: the rule name
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // cls: code point ranges (already complemented)
    int min = 0, max = -1;   // repeat
    size_t at = 0;           // byte offset in the source
};

class Parser {
public:
    Parser(std::string_view src, int max_depth, int max_repeat) : s_(src), max_depth_(max_depth), max_repeat_(max_repeat) {}

    std::map<std::string, Node> parse() {
        std::map<std::string, Node> rules;
        skip(true);
        while (p_ < s_.size()) {
            const size_t at = p_;
            const std::string name = ident();
            if (name.empty()) fail("expected a rule name");
            skip(false);
            if (s_.substr(p_, 3) != "::=") fail("expected ::= after rule '" + name + "'");
            p_ += 3;
            skip(false);
            Node body = alternatives(0, at);
            if (rules.count(name)) fail("rule '" + name + "' is defined twice");
            rules.emplace(name, std::move(body));
            skip(true);
        }
        return rules;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorKind::unsupported, "grammar: " + what + " at byte " + std::to_string(p_));
    }

    // Spaces, tabs and comments; newlines too when `newlines`.
    void skip(bool newlines) {
        while (p_ < s_.size()) {
            const char c = s_[p_];
            if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++p_;
            } else if (c == '#') {
                while (p_ < s_.size() && s_[p_] != '\n') ++p_;
            } else {
                break;
            }
        }
    }

    static bool ident_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    }

    std::string ident() {
        const size_t b = p_;
        while (p_ < s_.size() && ident_char(s_[p_])) ++p_;
        return std::string(s_.substr(b, p_ - b));
    }

    // At the top level a newline ends the rule unless the next line goes on
    // with '|'; inside a group newlines are spaces.
    Node alternatives(int depth, size_t at) {
        if (depth > max_depth_) fail("groups nested deeper than " + std::to_string(max_depth_));
        Node alt;
        alt.kind = Node::Kind::alt;
        alt.at = at;
        while (true) {
            alt.kids.push_back(sequence(depth));
            const size_t save = p_;
            skip(true);
            if (p_ < s_.size() && s_[p_] == '|') {
                ++p_;
                skip(true);
                continue;
            }
            if (depth == 0) p_ = save;
            break;
        }
        return alt;
    }

    Node sequence(int depth) {
        Node seq;
        seq.kind = Node::Kind::seq;
        seq.at = p_;
        while (true) {
            skip(depth > 0);
            if (p_ >= s_.size()) break;
            const char c = s_[p_];
            if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
            // The next rule starts: "name ::=" (only reachable at depth 0 after a newline).
            Node item = primary(depth);
            postfix(item);
            seq.kids.push_back(std::move(item));
        }
        return seq;
    }

    Node primary(int depth) {
        Node n;
        n.at = p_;
        const char c = s_[p_];
        if (c == '"') {
            ++p_;
            n.kind = Node::Kind::literal;
            while (true) {
                if (p_ >= s_.size()) fail("unterminated string literal");
                if (s_[p_] == '"') break;
                append_utf8(n.text, char_or_escape());
            }
            ++p_;
        } else if (c == '[') {
            ++p_;
            n.kind = Node::Kind::cls;
            bool negate = false;
            if (p_ < s_.size() && s_[p_] == '^') {
                negate = true;
                ++p_;
            }
            std::vector<std::pair<uint32_t, uint32_t>> r;
            while (true) {
                if (p_ >= s_.size()) fail("unterminated character class");
                if (s_[p_] == ']') break;
                const uint32_t lo = char_or_escape();
                uint32_t hi = lo;
                if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
                    ++p_;
                    hi = char_or_escape();
                    if (hi < lo) fail("character range with its end before its start");
                }
                r.push_back({lo, hi});
            }
            ++p_;
            n.ranges = normalize(r, negate);
            if (n.ranges.empty()) fail("empty character class");
        } else if (c == '.') {
            ++p_;
            n.kind = Node::Kind::cls;
            n.ranges = normalize({}, true);
        } else if (c == '(') {
            ++p_;
            skip(true);
            n = alternatives(depth + 1, p_);
            skip(true);
            if (p_ >= s_.size() || s_[p_] != ')') fail("expected )");
            ++p_;
        } else if (ident_char(c)) {
            n.kind = Node::Kind::ref;
            n.text = ident();
            size_t q = p_;
            while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t')) ++q;
            if (s_.substr(q, 3) == "::=") fail("expected a newline before rule '" + n.text + "'");
        } else {
            fail(std::string("unexpected '") + c + "'");
        }
        return n;
    }

    void postfix(Node& item) {
        for (int wraps = 0; p_ < s_.size(); ++wraps) {
            const char c = s_[p_];
            int min = 0, max = -1;
            if (c == '*') {
                ++p_;
            } else if (c == '+') {
                min = 1;
                ++p_;
            } else if (c == '?') {
                max = 1;
                ++p_;
            } else if (c == '{') {
                ++p_;
                min = number();
                max = min;
                if (p_ < s_.size() && s_[p_] == ',') {
                    ++p_;
                    max = p_ < s_.size() && s_[p_] == '}' ? -1 : number();
                }
                if (p_ >= s_.size() || s_[p_] != '}') fail("expected } after a repetition count");
                ++p_;
                if (max >= 0 && max < min) fail("repetition {m,n} with n < m");
            } else {
                return;
            }
            if (wraps >= 4) fail("more than 4 repetition operators in a row");
            Node r;
            r.kind = Node::Kind::repeat;
            r.at = item.at;
            r.min = min;
            r.max = max;
            r.kids.push_back(std::move(item));
            item = std::move(r);
        }
    }

    int number() {
        long v = 0;
        const size_t b = p_;
        while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
            v = v * 10 + (s_[p_++] - '0');
            if (v > max_repeat_) fail("repetition count above the limit of " + std::to_string(max_repeat_));
        }
        if (p_ == b) fail("expected a number");
        return int(v);
    }

    // One code point of a literal or class: UTF-8 or an escape.
    uint32_t char_or_escape() {
        const unsigned char c = uint8_t(s_[p_]);
        if (c != '\\') {
            int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
            if (n == 0 || p_ + size_t(n) > s_.size()) fail("invalid UTF-8");
            uint32_t cp = n == 1 ? c : c & (0x7F >> n);
            for (int i = 1; i < n; ++i) {
                const unsigned char d = uint8_t(s_[p_ + size_t(i)]);
                if ((d & 0xC0) != 0x80) fail("invalid UTF-8");
                cp = cp << 6 | (d & 0x3F);
            }
            p_ += size_t(n);
            return cp;
        }
        if (++p_ >= s_.size()) fail("unterminated escape");
        const char e = s_[p_++];
        switch (e) {
            case 'n': return '\n';
            case 't': return '\t';
            case 'r': return '\r';
            case '\\': return '\\';
            case '"': return '"';
            case '[': return '[';
            case ']': return ']';
            case '-': return '-';
            case '^': return '^';
            case 'x': return hex(2);
            case 'u': return hex(4);
            case 'U': return hex(8);
        }
        fail(std::string("unknown escape \\") + e);
    }

    uint32_t hex(int n) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
            if (p_ >= s_.size()) fail("short hex escape");
            const char c = s_[p_++];
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) fail("bad hex digit");
            v = v * 16 + uint32_t(d);
        }
        if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) fail("escape outside the Unicode scalar values");
        return v;
    }

    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xC0 | cp >> 6);
            out += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += char(0xE0 | cp >> 12);
            out += char(0x80 | (cp >> 6 & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | cp >> 18);
            out += char(0x80 | (cp >> 12 & 0x3F));
            out += char(0x80 | (cp >> 6 & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        }
    }

    // Sorted, merged, complemented when negated, without the surrogates.
    static std::vector<std::pair<uint32_t, uint32_t>> normalize(std::vector<std::pair<uint32_t, uint32_t>> r, bool negate) {
        std::sort(r.begin(), r.end());
        std::vector<std::pair<uint32_t, uint32_t>> m;
        for (auto x : r)
            if (!m.empty() && x.first <= m.back().second + 1)
                m.back().second = std::max(m.back().second, x.second);
            else
                m.push_back(x);
        if (negate) {
            std::vector<std::pair<uint32_t, uint32_t>> c;
            uint32_t next = 0;
            for (auto x : m) {
                if (x.first > next) c.push_back({next, x.first - 1});
                next = x.second + 1;
            }
            if (next <= 0x10FFFF) c.push_back({next, 0x10FFFF});
            m = c;
        }
        std::vector<std::pair<uint32_t, uint32_t>> out;
        for (auto x : m) {
            if (x.first < 0xD800 && x.second >= 0xD800) {
                out.push_back({x.first, 0xD7FF});
                if (x.second > 0xDFFF) out.push_back({0xE000, x.second});
            } else if (x.first >= 0xD800 && x.first <= 0xDFFF) {
                if (x.second > 0xDFFF) out.push_back({0xE000, x.second});
            } else {
                out.push_back(x);
            }
        }
        return out;
    }

    std::string_view s_;
    size_t p_ = 0;
    int max_depth_, max_repeat_;
};

// UTF-8 byte sequences of code points lo..hi from -> to (the split of the
// utf8-ranges construction: same encoded length, then full continuation ranges).
void utf8_range(detail::Nfa& nfa, int from, int to, uint32_t lo, uint32_t hi) {
    if (lo > hi) return;
    for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu})
        if (lo <= max && hi > max) {
            utf8_range(nfa, from, to, lo, max);
            utf8_range(nfa, from, to, max + 1, hi);
            return;
        }
    if (hi <= 0x7F) {
        nfa.range(from, to, uint8_t(lo), uint8_t(hi));
        return;
    }
    const int n = lo <= 0x7FF ? 2 : lo <= 0xFFFF ? 3 : 4;
    for (int i = 1; i < n; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_range(nfa, from, to, lo, lo | m);
                utf8_range(nfa, from, to, (lo | m) + 1, hi);
                return;
            }
            if ((hi & m) != m) {
                utf8_range(nfa, from, to, lo, (hi & ~m) - 1);
                utf8_range(nfa, from, to, hi & ~m, hi);
                return;
            }
        }
    }
    auto bytes = [n](uint32_t cp, uint8_t out[4]) {
        static const uint8_t lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
        for (int k = n - 1; k > 0; --k) {
            out[k] = uint8_t(0x80 | (cp & 0x3F));
            cp >>= 6;
        }
        out[0] = uint8_t(lead[n] | cp);
    };
    uint8_t a[4], b[4];
    bytes(lo, a);
    bytes(hi, b);
    int at = from;
    for (int k = 0; k < n; ++k) {
        const int next = k + 1 == n ? to : nfa.add_state();
        nfa.range(at, next, a[k], b[k]);
        at = next;
    }
}

class GrammarCompiler {
public:
    GrammarCompiler(const std::map<std::string, Node>& rules, const ConstraintLimits& limits)
        : rules_(rules), limits_(limits), nfa_(limits.max_nfa_states) {}

    Constraint::Dfa compile() {
        if (!rules_.count("root")) throw Error(ErrorKind::unsupported, "grammar: no rule 'root'");
        // Every reference must name a rule, reachable or not.
        for (const auto& [name, body] : rules_) check_refs(body, name);
        const int start = nfa_.add_state(), end = nfa_.add_state();
        Node root;
        root.kind = Node::Kind::ref;
        root.text = "root";
        emit(root, start, end);
        return nfa_.determinize(start, end, limits_.max_dfa_states, "grammar");
    }

private:
    void check_refs(const Node& n, const std::string& rule) const {
        if (n.kind == Node::Kind::ref && !rules_.count(n.text))
            throw Error(ErrorKind::unsupported, "grammar: rule '" + rule + "' refers to undefined rule '" + n.text +
                                                    "' (byte " + std::to_string(n.at) + ")");
        for (const Node& k : n.kids) check_refs(k, rule);
    }

    void emit(const Node& n, int from, int to) {
        switch (n.kind) {
            case Node::Kind::literal:
                nfa_.literal(from, to, n.text);
                return;
            case Node::Kind::cls:
                for (auto [lo, hi] : n.ranges) utf8_range(nfa_, from, to, lo, hi);
                return;
            case Node::Kind::alt:
                for (const Node& k : n.kids) emit(k, from, to);
                return;
            case Node::Kind::seq: {
                int at = from;
                for (size_t i = 0; i < n.kids.size(); ++i) {
                    const int next = i + 1 == n.kids.size() ? to : nfa_.add_state();
                    emit(n.kids[i], at, next);
                    at = next;
                }
                if (n.kids.empty()) nfa_.epsilon(from, to);
                return;
            }
            case Node::Kind::ref: {
                int& active = active_[n.text];
                if (active > kMaxRecursion) return;  // too deep: this alternative is dropped
                if (++depth_ > limits_.max_depth * 4)
                    throw Error(ErrorKind::capacity, "grammar: rules nested deeper than " +
                                                         std::to_string(limits_.max_depth * 4) + " (at rule '" + n.text + "')");
                ++active;
                // Fresh inner states so the rule's own loops stay inside it.
                const int in = nfa_.add_state();
                nfa_.epsilon(from, in);
                emit(rules_.at(n.text), in, to);
                --active;
                --depth_;
                return;
            }
            case Node::Kind::repeat: {
                const Node& k = n.kids[0];
                if (n.max == 0) {
                    nfa_.epsilon(from, to);
                    return;
                }
                int at = from;
                int done = 0;
                for (; done < n.min; ++done) {
                    const int next = nfa_.add_state();
                    emit(k, at, next);
                    at = next;
                }
                if (n.max < 0) {
                    const int loop = nfa_.add_state();
                    nfa_.epsilon(at, loop);
                    emit(k, loop, loop);
                    nfa_.epsilon(loop, to);
                    return;
                }
                nfa_.epsilon(at, to);
                for (; done < n.max; ++done) {
                    const int next = nfa_.add_state();
                    emit(k, at, next);
                    nfa_.epsilon(next, to);
                    at = next;
                }
                return;
            }
        }
    }

    const std::map<std::string, Node>& rules_;
    ConstraintLimits limits_;
    detail::Nfa nfa_;
    std::map<std::string, int> active_;
    int depth_ = 0;
};

}  // namespace

std::shared_ptr<const Constraint> Constraint::grammar(std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocab,
                                                      const ConstraintLimits& limits) {
    if (!vocab) throw Error(ErrorKind::config, "grammar: no vocabulary");
    if (gbnf.size() > (size_t(1) << 20)) throw Error(ErrorKind::capacity, "grammar: longer than 1 MiB");
    const std::map<std::string, Node> rules = Parser(gbnf, limits.max_depth, limits.max_repeat).parse();
    return std::make_shared<const Constraint>(GrammarCompiler(rules, limits).compile(), std::move(vocab), limits,
                                              "grammar");
}

}  // namespace staticlm
