// Rules the runtime's sources share (Session and BatchSession, generate() and
// the batched engine), so that the batched results are the solo ones.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace staticlm::detail {

// Sorted, deduplicated buckets with 1 added; Error(config) naming `what` when
// empty or when a size is outside 1..max_seq.
std::vector<int> normalize_buckets(const std::vector<int>& in, const char* what, int max_seq);

// Holds back text that might be the start of a stop string, so that a stop
// string is never streamed: how many bytes of `text` are safe to emit (the
// suffixes checked start at `from`).
size_t safe_prefix(const std::string& text, size_t from, const std::vector<std::string>& stops);

}  // namespace staticlm::detail
