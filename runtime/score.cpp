// Continuation scoring on a Session: the prompt once, then each continuation
// appended with per-row logits and rewound (include/staticlm/score.hpp).
#include "staticlm/score.hpp"

#include <algorithm>

#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

namespace {

// Adds the log-probability of `target` and whether it is the argmax.
void add_row(const float* row, int vocab, int target, ContinuationScore& s) {
    const std::span<const float> logits(row, size_t(vocab));
    s.logprob += double(token_logprob(logits, target));
    int best = 0;
    for (int i = 1; i < vocab; ++i)
        if (row[i] > row[best]) best = i;
    s.greedy = s.greedy && best == target;
}

struct RowsCtx {
    const std::vector<int>* ids;  // the continuation
    int first_pos;                // position of its first id
    ContinuationScore* score;
};

// Row at position p holds the logits after the id at p, which predict the
// continuation's id number p - first_pos + 1.
void rows_sink(void* ctx, int pos, const float* rows, int t, int vocab) {
    RowsCtx& c = *static_cast<RowsCtx*>(ctx);
    for (int r = 0; r < t; ++r) {
        const size_t next = size_t(pos + r - c.first_pos + 1);
        add_row(rows + size_t(r) * size_t(vocab), vocab, (*c.ids)[next], *c.score);
    }
}

}  // namespace

ScoreIds score_ids(const Tokenizer& tok, std::string_view prompt,
                   std::span<const std::string> continuations) {
    size_t end = prompt.size();
    while (end > 0 &&
           std::string_view(" \t\n\r\f\v").find(prompt[end - 1]) != std::string_view::npos)
        --end;
    const std::string_view context = prompt.substr(0, end), moved = prompt.substr(end);
    // The tokenizer's leading special ids (BOS) start the prompt; a trailing EOS
    // that it appends would sit between prompt and continuation, so it is left out.
    std::vector<int> prefix = tok.encode("", /*add_special=*/true);
    if (!prefix.empty() && tok.eos_id() >= 0 && prefix.back() == tok.eos_id() &&
        (prefix.size() >= 2 || tok.eos_id() != tok.bos_id()))
        prefix.pop_back();
    const std::vector<int> context_ids = tok.encode(context, /*add_special=*/false);
    if (prefix.empty() && context_ids.empty()) {
        if (tok.bos_id() < 0) throw Error(ErrorKind::input, "empty prompt and no BOS token");
        prefix.push_back(tok.bos_id());  // something to predict the continuation from
    }
    ScoreIds out;
    out.prompt = prefix;
    out.prompt.insert(out.prompt.end(), context_ids.begin(), context_ids.end());
    for (size_t i = 0; i < continuations.size(); ++i) {
        if (continuations[i].empty())
            throw Error(ErrorKind::input,
                        "continuation " + std::to_string(i) + " is an empty string");
        std::string whole(context);
        whole += moved;
        whole += continuations[i];
        // The boundary rule: prompt + continuation tokenized together, the
        // continuation's ids being those after the context's count.
        std::vector<int> ids = tok.encode(whole, /*add_special=*/false);
        if (ids.size() <= context_ids.size())
            throw Error(ErrorKind::input, "continuation " + std::to_string(i) +
                                              " adds no tokens after the prompt's " +
                                              std::to_string(out.prompt.size()));
        ids.erase(ids.begin(), ids.begin() + std::ptrdiff_t(context_ids.size()));
        out.continuations.push_back(std::move(ids));
    }
    return out;
}

std::vector<ContinuationScore> score_continuations(
    Session& session, std::span<const int> prompt,
    std::span<const std::vector<int>> continuations) {
    return score_continuations_with(session, prompt, continuations,
                                    [&] { return session.prefill(prompt); });
}

std::vector<ContinuationScore> score_continuations_with(
    Session& session, std::span<const int> prompt, std::span<const std::vector<int>> continuations,
    const std::function<std::span<const float>()>& restore) {
    if (!session.options().all_logits)
        throw Error(ErrorKind::config, "scoring needs a session created with all_logits");
    const int P = int(prompt.size());
    for (size_t i = 0; i < continuations.size(); ++i) {
        if (continuations[i].empty())
            throw Error(ErrorKind::input, "continuation " + std::to_string(i) + " has no tokens");
        const long long need = (long long)P + (long long)continuations[i].size() - 1;
        if (need > session.max_seq())
            throw Error(ErrorKind::capacity,
                        "capacity exceeded: the prompt's " + std::to_string(P) +
                            " tokens and continuation " + std::to_string(i) + "'s " +
                            std::to_string(continuations[i].size()) + " need " +
                            std::to_string(need) +
                            " positions > K=" + std::to_string(session.max_seq()) + " (max_seq)");
    }
    const std::span<const float> last = restore();
    const std::vector<float> prompt_logits(last.begin(), last.end());  // append overwrites them
    const int vocab = session.vocab();
    std::vector<ContinuationScore> out(continuations.size());
    for (size_t i = 0; i < continuations.size(); ++i) {
        const std::vector<int>& ids = continuations[i];
        ContinuationScore& s = out[i];
        s.tokens = int(ids.size());
        add_row(prompt_logits.data(), vocab, ids[0], s);
        if (ids.size() == 1) continue;
        // The last id's own logits predict nothing of the continuation.
        RowsCtx ctx{&ids, P, &s};
        const std::span<const int> head(ids.data(), ids.size() - 1);
        session.append(head, LogitsSink{rows_sink, &ctx});
        // A ring cache may no longer hold what the rewind needs: prefill the
        // prompt again instead (the same steps give the same cache).
        if (int(head.size()) <= session.max_rewind())
            session.rewind(int(head.size()));
        else
            restore();
    }
    return out;
}

}  // namespace staticlm
