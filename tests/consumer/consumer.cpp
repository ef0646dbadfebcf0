// C++ consumer of the subproject: the C++ API, linked from the static archive.
#include <cstdio>

#include "model/model.hpp"  // the consumer's own, not staticlm's
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"

static_assert(CONSUMER_OWN_MODEL_HEADER == 1, "staticlm's model/ headers leaked into the include path");

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    staticlm::LoadOptions lo;
    lo.weights = staticlm::WeightType::f32;
    lo.threads = 1;
    lo.load_tokenizer = false;
    auto model = staticlm::load_model(argv[1], lo);
    staticlm::SessionOptions so;
    so.max_seq = 32;
    so.prefill_buckets = staticlm::default_prefill_buckets(so.max_seq);
    so.append_buckets = staticlm::default_append_buckets(so.max_seq);
    so.threads = 1;
    staticlm::Session s(model, so);
    const std::vector<int> prompt = {1, 5, 9};
    auto logits = s.prefill(prompt);
    const bool ok = s.pos() == 3 && logits.size() == 256;
    std::printf("consumer_cpp: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
