// Buffer: anonymous mmap with a huge-page hint (see memory.hpp).
#include "kernels/memory.hpp"

#include <sys/mman.h>

#include <string>

#include "staticlm/error.hpp"

namespace staticlm {

Buffer::Buffer(size_t bytes) {
    if (bytes == 0) return;
    const size_t mapped = (bytes + 4095) & ~size_t{4095};
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw Error(ErrorKind::io, "cannot allocate " + std::to_string(bytes) + " bytes");
#ifdef MADV_HUGEPAGE
    if (mapped >= (size_t{2} << 20)) madvise(p, mapped, MADV_HUGEPAGE);
#endif
    data_ = static_cast<std::byte*>(p);
    size_ = bytes;
    mapped_ = mapped;
}

Buffer::~Buffer() {
    if (data_) munmap(data_, mapped_);
}

}  // namespace staticlm
