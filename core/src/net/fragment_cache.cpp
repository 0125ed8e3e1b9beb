// The content-addressed fragment cache on disk.

#include "fragment_cache.hpp"

#include <system_error>

#include "dpushard/regular_file.hpp"

namespace dpushard::net {

namespace {

[[noreturn]] void bad_fragment(const std::string& message) {
  throw ProtocolError(ErrorCode::kBadFragment, message);
}

std::string random_suffix() { return digest_hex(random_nonce()).substr(0, 16); }

}  // namespace

FragmentCache::FragmentCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (dir_.empty()) {
    dir_ = std::filesystem::temp_directory_path(ec) / ("dpushard-cache-" + random_suffix());
    owned_ = true;
  }
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_))
    throw Error("fragment cache '" + dir_.string() + "': cannot create the folder" +
                (ec ? ": " + ec.message() : std::string()));
}

FragmentCache::~FragmentCache() {
  if (!owned_) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::filesystem::path FragmentCache::path_of(const Digest& sha) const {
  return dir_ / (digest_hex(sha) + ".xmodel");
}

bool FragmentCache::has(const Digest& sha) const {
  std::error_code ec;
  return std::filesystem::is_regular_file(path_of(sha), ec);
}

std::string FragmentCache::read_verified(const Digest& sha) const {
  const auto path = path_of(sha);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    bad_fragment("fragment " + digest_hex(sha) + " is not in the cache");
  std::string bytes;
  try {
    bytes = read_regular_file(path, "cached fragment " + path.string());
  } catch (const Error& e) {
    bad_fragment(e.what());
  }
  const Digest actual =
      sha256_of(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  if (!digests_equal(actual, sha)) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    bad_fragment("cached fragment " + digest_hex(sha) + " is damaged (removed)");
  }
  return bytes;
}

void FragmentCache::remove(const Digest& sha) const {
  std::error_code ignored;
  std::filesystem::remove(path_of(sha), ignored);
}

FragmentCache::Upload::Upload(const FragmentCache& cache, const Digest& sha,
                              std::uint64_t total_bytes)
    : cache_(cache), sha_(sha), total_(total_bytes) {
  std::string name = ".";  // hidden: never mistaken for a cached fragment
  name += digest_hex(sha);
  name += '.';
  name += random_suffix();
  name += ".part";
  temp_path_ = cache_.dir() / name;
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr)
    bad_fragment("cannot write '" + temp_path_.string() + "' in the fragment cache");
}

FragmentCache::Upload::~Upload() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) {
    std::error_code ignored;
    std::filesystem::remove(temp_path_, ignored);
  }
}

bool FragmentCache::Upload::append(std::uint64_t offset, std::span<const std::int8_t> bytes) {
  if (committed_) bad_fragment("fragment " + digest_hex(sha_) + " is already complete");
  if (offset != received_)
    throw ProtocolError(ErrorCode::kMalformed, "upload of " + digest_hex(sha_) +
                                                   ": chunk at offset " + std::to_string(offset) +
                                                   ", expected " + std::to_string(received_));
  if (bytes.size() > total_ - received_)
    throw ProtocolError(ErrorCode::kMalformed,
                        "upload of " + digest_hex(sha_) + " overruns its announced size");
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    bad_fragment("cannot write '" + temp_path_.string() + "' (disk full?)");
  hash_.update(bytes.data(), bytes.size());
  received_ += bytes.size();
  if (received_ < total_) return false;
  commit();
  return true;
}

void FragmentCache::Upload::commit() {
  const bool flushed = std::fflush(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) bad_fragment("cannot write '" + temp_path_.string() + "'");
  const Digest actual = hash_.finish();
  if (!digests_equal(actual, sha_))
    bad_fragment("uploaded bytes hash to " + digest_hex(actual) + ", not " + digest_hex(sha_));
  std::error_code ec;
  std::filesystem::rename(temp_path_, cache_.path_of(sha_), ec);
  if (ec) bad_fragment("cannot store fragment " + digest_hex(sha_) + ": " + ec.message());
  committed_ = true;
}

}  // namespace dpushard::net
