// libFuzzer target: the JSON Schema and GBNF compilers of constrained decoding
// (runtime/constrain_*.cpp). Byte 0 picks the language (even: schema, odd:
// grammar), the rest is the text. The vocabulary is small and fixed (every
// ASCII byte, JSON pieces, a split UTF-8 character) and the limits tight, so
// an execution stays fast; bad input may only surface as staticlm::Error. A
// compiled constraint is then walked: each step takes the lowest allowed
// token at or after a value from the input, and must stay inside the mask.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"

namespace {

std::shared_ptr<const staticlm::TokenVocabulary> vocab() {
    static const auto v = [] {
        std::vector<std::string> b{""};  // 0: EOS
        for (int c = 0x20; c < 0x7F; ++c) b.emplace_back(1, char(c));
        for (const char* s : {"{\"", "\":", "\",\"", "\"}", "true", "false", "null", "12", "\xC3", "\xA9", "\xC3\xA9"})
            b.emplace_back(s);
        return std::make_shared<const staticlm::TokenVocabulary>(b);
    }();
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    staticlm::ConstraintLimits limits;
    limits.max_nfa_states = 1 << 16;
    limits.max_dfa_states = 1 << 11;
    limits.max_repeat = 64;
    try {
        const auto c = data[0] % 2 == 0 ? staticlm::Constraint::json_schema(text, vocab(), limits)
                                        : staticlm::Constraint::grammar(text, vocab(), limits);
        staticlm::ConstraintCursor cur(c->vocab());
        cur.start(c.get());
        const int eos[1] = {0};
        for (size_t i = 0; i < 64; ++i) {
            const auto mask = cur.mask(eos);
            const int from = data[i % size] % c->vocab();
            int pick = -1;
            for (int t = 0; t < c->vocab() && pick < 0; ++t) {
                const int id = (from + t) % c->vocab();
                if (mask[size_t(id) / 64] >> (id % 64) & 1) pick = id;
            }
            if (pick < 0) __builtin_trap();  // a live state always allows a token
            if (pick == 0) {
                if (!cur.complete()) __builtin_trap();  // EOS only when complete
                break;
            }
            if (c->next(cur.state(), pick) < 0) __builtin_trap();
            cur.advance(pick);
        }
    } catch (const staticlm::Error&) {
    }
    return 0;
}
