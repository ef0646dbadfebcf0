// Log-probabilities of tokens under a row of logits (generate()'s logprobs,
// the batch engine's and scoring): log-softmax with a double sum, and the top
// alternatives by a fixed-size insertion, so nothing is allocated.
#include <cmath>
#include <string>

#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"

namespace staticlm {

float token_logprob(std::span<const float> logits, int token, std::span<TokenLogprob> top) {
    const size_t vocab = logits.size();
    if (token < 0 || size_t(token) >= vocab)
        throw Error(ErrorKind::input, "token_logprob: token " + std::to_string(token) +
                                          " outside the vocabulary of " + std::to_string(vocab));
    if (top.size() > vocab)
        throw Error(ErrorKind::config, "token_logprob: " + std::to_string(top.size()) +
                                           " alternatives asked of a vocabulary of " +
                                           std::to_string(vocab));
    // Max-subtracted: every exp() is in (0, 1], the sum in [1, vocab]; the
    // double sum of up to 2^20 terms loses nothing a float result can show.
    float max = logits[0];
    for (size_t i = 1; i < vocab; ++i)
        if (logits[i] > max) max = logits[i];
    double sum = 0.0;
    for (size_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - double(max));
    const double lse = double(max) + std::log(sum);

    // The top.size() largest logits, best first; a later id never displaces an
    // equal earlier one (ids are scanned in increasing order).
    const size_t n = top.size();
    size_t have = 0;
    for (size_t i = 0; i < vocab && n > 0; ++i) {
        const float l = logits[i];
        if (have == n && !(l > top[n - 1].logprob)) continue;
        size_t at = have < n ? have++ : n - 1;
        while (at > 0 && l > top[at - 1].logprob) {
            top[at] = top[at - 1];
            --at;
        }
        top[at] = {int(i), l};
    }
    for (TokenLogprob& t : top) t.logprob = float(double(t.logprob) - lse);
    return float(double(logits[size_t(token)]) - lse);
}

}  // namespace staticlm
