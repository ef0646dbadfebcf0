// The byte NFA the schema and grammar compilers emit into, and its subset
// construction into the DFA a Constraint is made of. Fragments are emitted
// between two given states (`from`, `to`) with fresh inner states only, so
// emitting two fragments between the same pair is their alternation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/constrain.hpp"

namespace staticlm {

struct Constraint::Dfa {
    std::vector<int32_t> next;    // [states][256], -1: dead
    std::vector<uint8_t> accept;  // [states]
    int start = 0;
};

namespace detail {

class Nfa {
public:
    explicit Nfa(int max_states) : max_states_(max_states) {}

    int add_state();  // Error(capacity) past max_states
    void epsilon(int from, int to) { eps_[size_t(from)].push_back(to); }
    void range(int from, int to, uint8_t lo, uint8_t hi) { edges_[size_t(from)].push_back({to, lo, hi}); }
    // Bytes `text` in sequence from -> to.
    void literal(int from, int to, std::string_view text);
    // One byte of the set (bit b of set[b / 64]) from -> to.
    void byte_set(int from, int to, const uint64_t set[4]);

    int states() const { return int(eps_.size()); }

    // Subset construction from `start`, `accept` the accepting NFA state.
    // Error(capacity) "<what>: more than N automaton states" past max_dfa.
    Constraint::Dfa determinize(int start, int accept, int max_dfa, const std::string& what) const;

private:
    struct Edge {
        int to;
        uint8_t lo, hi;
    };
    std::vector<std::vector<int>> eps_;
    std::vector<std::vector<Edge>> edges_;
    int max_states_;
};

// One JSON string character (UTF-8 other than '"', '\\' and controls, or an
// escape: \" \\ \/ \b \f \n \r \t, \uXXXX outside the surrogates) from -> to.
void json_string_char(Nfa& nfa, int from, int to);

}  // namespace detail
}  // namespace staticlm
