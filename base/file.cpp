// File reading for every staticlm reader (see base/file.hpp): regular files
// only, opened without blocking, size limits stated, pread instead of mmap,
// and model-directory names that stay inside the directory.
#include "base/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "staticlm/error.hpp"

namespace staticlm {

namespace fs = std::filesystem;

namespace {

const char* file_type_name(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory, not a file";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe), not a regular file";
    if (S_ISCHR(mode)) return "a character device, not a regular file";
    if (S_ISBLK(mode)) return "a block device, not a regular file";
    if (S_ISSOCK(mode)) return "a socket, not a regular file";
    return "not a regular file";
}

std::string where(const fs::path& p) { return printable(p.native(), 4096); }

[[noreturn]] void fail_errno(const fs::path& p, int err, const char* doing) {
    if (err == ENOENT) throw Error(ErrorKind::io, where(p) + ": not found");
    throw Error(ErrorKind::io, where(p) + ": " + doing + ": " + std::strerror(err));
}

bool inside(const fs::path& target, const fs::path& root) {
    const fs::path rel = target.lexically_relative(root);
    return !rel.empty() && *rel.begin() != ".." && rel.is_relative();
}

}  // namespace

std::string byte_limit_string(size_t bytes) {
    if (bytes >= (size_t{1} << 30) && bytes % (size_t{1} << 30) == 0)
        return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0)
        return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

File::File(const fs::path& path) : path_(path) {
    if (path.native().find('\0') != std::string::npos)
        throw Error(ErrorKind::io, where(path) + ": the path contains a NUL byte");
    // stat first, so that a device or FIFO is refused without being opened;
    // fstat after the open, so that what is read is what was checked.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail_errno(path, errno, "cannot open");
    if (!S_ISREG(st.st_mode))
        throw Error(ErrorKind::io, where(path) + ": is " + file_type_name(st.st_mode));
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) fail_errno(path, errno, "cannot open");
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        const mode_t mode = st.st_mode;
        ::close(fd_);
        fd_ = -1;
        throw Error(ErrorKind::io, where(path) + ": is " + file_type_name(mode));
    }
    size_ = uint64_t(st.st_size);
}

File::~File() {
    if (fd_ >= 0) ::close(fd_);
}

File::File(File&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
    other.fd_ = -1;
}

File& File::operator=(File&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        path_ = std::move(other.path_);
        fd_ = other.fd_;
        size_ = other.size_;
        other.fd_ = -1;
    }
    return *this;
}

std::optional<File> File::open_if_exists(const fs::path& path) {
    struct stat st {};
    if (path.native().find('\0') == std::string::npos && ::lstat(path.c_str(), &st) != 0 &&
        errno == ENOENT)
        return std::nullopt;
    return File(path);
}

void File::read_at(uint64_t offset, void* dst, size_t n) const {
    auto* out = static_cast<char*>(dst);
    size_t done = 0;
    while (done < n) {
        const ssize_t got = ::pread(fd_, out + done, n - done, off_t(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            throw Error(ErrorKind::io, where(path_) + ": read failed at byte " +
                                           std::to_string(offset + done) + ": " +
                                           std::strerror(errno));
        }
        if (got == 0)
            throw Error(ErrorKind::io,
                        where(path_) + ": the file ends at byte " + std::to_string(offset + done) +
                            " while reading bytes [" + std::to_string(offset) + ", " +
                            std::to_string(offset + n) + "); it had " + std::to_string(size_) +
                            " bytes when opened (truncated while loading?)");
        done += size_t(got);
    }
}

std::string File::read_all(size_t max_bytes, std::string_view what) const {
    const std::string limit = byte_limit_string(max_bytes) + ", the limit for " + std::string(what);
    if (size_ > max_bytes)
        throw Error(ErrorKind::format,
                    where(path_) + ": " + std::to_string(size_) + " bytes, more than " + limit);
    // The size is a hint: the file may have grown, or be a /proc file of size 0.
    std::string s;
    s.resize(size_t(size_) + 1);
    size_t n = 0;
    for (;;) {
        if (n == s.size()) s.resize(std::min(max_bytes + 1, std::max<size_t>(2 * s.size(), 4096)));
        const ssize_t got = ::pread(fd_, s.data() + n, s.size() - n, off_t(n));
        if (got < 0) {
            if (errno == EINTR) continue;
            throw Error(ErrorKind::io, where(path_) + ": read failed: " + std::strerror(errno));
        }
        if (got == 0) break;
        n += size_t(got);
        if (n > max_bytes) throw Error(ErrorKind::format, where(path_) + ": more than " + limit);
    }
    s.resize(n);
    return s;
}

std::string read_text_file(const fs::path& path, size_t max_bytes, std::string_view what) {
    return File(path).read_all(max_bytes, what);
}

std::optional<fs::path> model_file(const fs::path& dir, std::string_view name) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
        name.find('\0') != std::string_view::npos)
        throw Error(ErrorKind::format,
                    where(dir) + ": '" + printable(name) + "' is not a file name in the directory");
    const fs::path p = dir / fs::path(std::string(name));
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(p, ec);
    if (ec || !fs::exists(link)) {
        if (ec && ec != std::errc::no_such_file_or_directory)
            throw Error(ErrorKind::io, where(p) + ": cannot access: " + ec.message());
        return std::nullopt;
    }
    if (!fs::is_symlink(link)) return p;  // an entry of dir itself
    const fs::path target = fs::canonical(p, ec);
    if (ec) {
        std::error_code ec2;
        throw Error(ErrorKind::io, where(p) + ": symbolic link to " +
                                       where(fs::read_symlink(p, ec2)) +
                                       ", which cannot be resolved: " + ec.message());
    }
    const fs::path root = fs::canonical(dir, ec);
    if (ec)
        throw Error(ErrorKind::io,
                    where(dir) + ": cannot resolve the model directory: " + ec.message());
    if (inside(target, root)) return p;
    // The Hugging Face hub cache: <repo>/snapshots/<rev>/<name> -> ../../blobs/<hash>.
    if (root.parent_path().filename() == "snapshots" &&
        inside(target, root.parent_path().parent_path() / "blobs"))
        return p;
    throw Error(ErrorKind::io,
                where(p) + ": symbolic link to " + where(target) +
                    ", outside the model directory " + where(root) +
                    " (only links inside it, or a Hugging Face cache snapshot's links "
                    "into its blobs/, are followed)");
}

std::string printable(std::string_view s, size_t max_bytes) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    const size_t n = std::min(s.size(), max_bytes);
    out.reserve(n + 16);
    size_t i = 0;
    while (i < n) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t len = 0;
        if (c >= 0x20 && c < 0x7f)
            len = 1;
        else if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF)
            len = 3;
        else if (c >= 0xF0 && c <= 0xF4)
            len = 4;
        bool ok = len != 0 && i + len <= s.size();
        for (size_t k = 1; ok && k < len; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        if (ok && len == 3) {  // no overlong forms or surrogates
            const auto c1 = static_cast<unsigned char>(s[i + 1]);
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
        } else if (ok && len == 4) {
            const auto c1 = static_cast<unsigned char>(s[i + 1]);
            ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
        }
        if (ok) {
            out.append(s.data() + i, len);
            i += len;
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
            ++i;
        }
    }
    if (s.size() > max_bytes) out += "...\" (" + std::to_string(s.size()) + " bytes)";
    return out;
}

}  // namespace staticlm
