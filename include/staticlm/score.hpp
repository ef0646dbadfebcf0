// Scoring continuations (lm-eval-harness "loglikelihood"): the sum of the
// log-probabilities of a continuation's tokens given a prompt, its token
// count and whether greedy decoding would have produced it. The prompt is
// processed once; each continuation is appended after it and rewound.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

class Session;
class Tokenizer;

struct ContinuationScore {
    double logprob = 0;  // sum over the continuation's tokens (natural log)
    int tokens = 0;
    bool greedy = true;  // every token is the argmax of its logits (ties: the lowest id)
};

// The ids of a scoring request, by lm-eval-harness's boundary rule: white
// space at the end of the prompt is moved to the front of every continuation;
// the prompt's ids are encode(prompt, add_special=true) (BOS alone for an
// empty prompt); a continuation's ids are those of encode(prompt +
// continuation) after the prompt's id count. Throws Error(input) for an
// empty continuation or one that adds no ids after the prompt's.
struct ScoreIds {
    std::vector<int> prompt;
    std::vector<std::vector<int>> continuations;
};
ScoreIds score_ids(const Tokenizer& tokenizer, std::string_view prompt,
                   std::span<const std::string> continuations);

// Prefills `prompt` (the session is reset) and scores each continuation with
// the log-probabilities of token_logprob (generate.hpp). The session needs
// all_logits; prompt + continuation - 1 ids must fit in max_seq (Error
// capacity otherwise). The session is left holding the prompt.
std::vector<ContinuationScore> score_continuations(Session& session, std::span<const int> prompt,
                                                   std::span<const std::vector<int>> continuations);

// The same with the prompt put in place by `restore` instead of prefill():
// called first, and again after a continuation when a ring cache cannot
// rewind; it must leave the session holding exactly `prompt` and return the
// logits of its last token (a batch job loads a shared prefix and appends the
// rest). The scores equal score_continuations' when the restored cache does.
std::vector<ContinuationScore> score_continuations_with(
    Session& session, std::span<const int> prompt, std::span<const std::vector<int>> continuations,
    const std::function<std::span<const float>()>& restore);

}  // namespace staticlm
