// Prompt-lookup drafting for speculative decoding: the tokens that followed
// the most recent earlier occurrence of the text's last n tokens. A scan of
// the history per call, no tables and no allocation.
#include <algorithm>

#include "staticlm/generate.hpp"

namespace staticlm {

int ngram_draft(std::span<const int> history, const SpeculationOptions& o, std::span<int> out) {
    const int len = int(history.size());
    const int max_n = std::min(o.max_ngram, len - 1);  // an earlier occurrence ends before the last token
    if (out.empty() || max_n < 1 || max_n < o.min_ngram) return 0;
    const int* h = history.data();
    // end: one past a candidate occurrence, most recent first; m: how many of
    // the last tokens it matches. Stops at the first full-length match.
    int best_len = 0, best_end = -1;
    for (int end = len - 1; end >= 1 && best_len < max_n; --end) {
        int m = 0;
        while (m < max_n && m < end && h[end - 1 - m] == h[len - 1 - m]) ++m;
        if (m > best_len) {
            best_len = m;
            best_end = end;
        }
    }
    if (best_len < std::max(o.min_ngram, 1)) return 0;
    // What followed; past the end of the history the copy continues through
    // the draft itself (source index best_end + i - len < i).
    const int n = int(out.size());
    for (int i = 0; i < n; ++i) {
        const int src = best_end + i;
        out[size_t(i)] = src < len ? h[src] : out[size_t(src - len)];
    }
    return n;
}

}  // namespace staticlm
