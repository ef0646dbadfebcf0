// Sampler: logits -> token. Order of the transforms follows transformers'
// logits processors: repetition penalty, temperature, top-k, top-p, min-p.
// All buffers are [vocab] and made in the constructor.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/kernels.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"

namespace staticlm {

namespace {

uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Throws Error(config) naming the first option out of range.
void check_options(const SamplingOptions& o) {
    if (o.top_k < 0) throw Error(ErrorKind::config, "top_k must be >= 0, got " + std::to_string(o.top_k));
    if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
        throw Error(ErrorKind::config, "top_p must be in (0, 1], got " + std::to_string(o.top_p));
    if (!(o.min_p >= 0.0f && o.min_p <= 1.0f))
        throw Error(ErrorKind::config, "min_p must be in [0, 1], got " + std::to_string(o.min_p));
    if (!(o.repetition_penalty >= kMinRepetitionPenalty && o.repetition_penalty <= kMaxRepetitionPenalty))
        throw Error(ErrorKind::config, "repetition_penalty must be in [" + std::to_string(kMinRepetitionPenalty) +
                                           ", " + std::to_string(kMaxRepetitionPenalty) + "], got " +
                                           std::to_string(o.repetition_penalty));
    if (o.repetition_window < 0)
        throw Error(ErrorKind::config, "repetition_window must be >= 0, got " + std::to_string(o.repetition_window));
    if (!std::isfinite(o.temperature))
        throw Error(ErrorKind::config, "temperature must be finite");
}

}  // namespace

Sampler::Sampler(int vocab, const SamplingOptions& o)
    : options_(o), state_(o.seed), work_(size_t(vocab)), order_(size_t(vocab)),
      probs_(size_t(vocab)), seen_(size_t(vocab), -1) {
    if (vocab < 1) throw Error(ErrorKind::config, "sampler needs a vocabulary");
    check_options(o);
}

void Sampler::reset(const SamplingOptions& o) {
    check_options(o);
    options_ = o;
    state_ = o.seed;
    step_ = 0;
    std::fill(seen_.begin(), seen_.end(), -1);
}

int Sampler::candidates(std::span<const float> logits, std::span<const int> recent,
                        std::span<const uint64_t> allowed, int& n_out) {
    const int vocab = int(work_.size());
    if (logits.size() < size_t(vocab))
        throw Error(ErrorKind::input, "sampler: " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                                          std::to_string(vocab));
    ++step_;
    const bool greedy = !(options_.temperature >= kGreedyTemperature);
    // Greedy with nothing to adjust: the argmax of the logits as they are,
    // without the copy.
    if (greedy && allowed.empty() && options_.repetition_penalty == 1.0f)
        return kernels::table().argmax(logits.data(), vocab);
    std::copy(logits.begin(), logits.begin() + vocab, work_.begin());
    if (!allowed.empty()) apply_token_mask(work_, allowed);
    if (options_.repetition_penalty != 1.0f) {
        const size_t from = recent.size() > size_t(options_.repetition_window)
                                ? recent.size() - size_t(options_.repetition_window)
                                : 0;
        for (size_t i = from; i < recent.size(); ++i) {
            const int id = recent[i];
            if (id < 0 || id >= vocab || seen_[size_t(id)] == step_) continue;
            seen_[size_t(id)] = step_;
            float& l = work_[size_t(id)];
            l = l > 0 ? l / options_.repetition_penalty : l * options_.repetition_penalty;
        }
    }
    // Tiny temperatures are greedy too: 1/T would overflow to inf, and 0 * inf
    // turns the best logit into NaN.
    if (greedy) return kernels::table().argmax(work_.data(), vocab);

    // Candidates: the top_k largest (or all), sorted descending.
    const int k = options_.top_k > 0 ? std::min(options_.top_k, vocab) : vocab;
    for (int i = 0; i < vocab; ++i) order_[size_t(i)] = i;
    auto greater = [&](int a, int b) {
        return work_[size_t(a)] > work_[size_t(b)] || (work_[size_t(a)] == work_[size_t(b)] && a < b);
    };
    if (k < vocab) std::nth_element(order_.begin(), order_.begin() + k, order_.end(), greater);
    std::sort(order_.begin(), order_.begin() + k, greater);

    // Softmax over the candidates at the temperature.
    const float inv_t = 1.0f / options_.temperature;
    const float top = work_[size_t(order_[0])];
    double sum = 0;
    for (int i = 0; i < k; ++i) {
        const float p = std::exp((work_[size_t(order_[size_t(i)])] - top) * inv_t);
        probs_[size_t(i)] = p;
        sum += p;
    }
    // top-p: the smallest prefix whose mass reaches top_p (at least one token).
    int n = k;
    if (options_.top_p < 1.0f) {
        double acc = 0;
        for (int i = 0; i < k; ++i) {
            acc += probs_[size_t(i)] / sum;
            if (acc >= options_.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    // min-p: drop tokens below min_p times the most likely one (probs_[0] is the max).
    if (options_.min_p > 0.0f) {
        const float cut = options_.min_p * probs_[0];
        while (n > 1 && probs_[size_t(n - 1)] < cut) --n;
    }
    n_out = n;
    return -1;
}

double Sampler::uniform() { return double(splitmix64(state_) >> 11) * (1.0 / 9007199254740992.0); }

int Sampler::sample(std::span<const float> logits, std::span<const int> recent, std::span<const uint64_t> allowed) {
    int n = 0;
    const int greedy = candidates(logits, recent, allowed, n);
    if (greedy >= 0) return greedy;
    double total = 0;
    for (int i = 0; i < n; ++i) total += probs_[size_t(i)];
    const double u = uniform() * total;
    double acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += probs_[size_t(i)];
        if (u < acc) return order_[size_t(i)];
    }
    return order_[size_t(n - 1)];
}

int Sampler::sample_draft(std::span<const float> logits, std::span<const int> recent,
                          std::span<const uint64_t> allowed, int draft) {
    int n = 0;
    const int greedy = candidates(logits, recent, allowed, n);
    if (greedy >= 0) return greedy;
    const double u_accept = uniform(), u_resample = uniform();
    return speculative_pick(std::span<const float>(probs_.data(), size_t(n)),
                            std::span<const int>(order_.data(), size_t(n)), draft, u_accept, u_resample);
}

int speculative_pick(std::span<const float> weights, std::span<const int> ids, int draft, double u_accept,
                     double u_resample) {
    const size_t n = std::min(weights.size(), ids.size());
    if (n == 0) throw Error(ErrorKind::input, "speculative_pick: no candidate tokens");
    size_t at = n;  // the draft's index among the candidates
    double total = 0, rest = 0;
    for (size_t i = 0; i < n; ++i) {
        total += weights[i];
        if (ids[i] == draft && at == n)
            at = i;
        else
            rest += weights[i];  // summed apart, not total - w: no cancellation
    }
    const double w_draft = at < n ? double(weights[at]) : 0.0;
    if (u_accept * total < w_draft || !(rest > 0)) return at < n ? draft : ids[0];
    const double u = u_resample * rest;
    double acc = 0;
    size_t last = n;
    for (size_t i = 0; i < n; ++i) {
        if (i == at) continue;
        acc += weights[i];
        last = i;
        if (u < acc) return ids[i];
    }
    return ids[last];
}

}  // namespace staticlm
