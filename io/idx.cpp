// IDX reader: header checks, gzip through zlib, streamed so that only what the header announces is read.
#include "tower/io/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>

#include "tower/core/caching_allocator.h"
#include "tower/core/error.h"
#include "tower/io/hdf5.h"

namespace tower::io {

namespace {

// deflate's best ratio: a gzip file of N bytes inflates to at most about 1032 N bytes.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

// An IDX file opened through zlib (gzread passes plain files through), read in pieces.
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path) {
    // gzopen opens a directory, and reading it fails with a misleading message
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      raise<ValueError>("read_idx(\"{}\"): this is a directory; give the path of an IDX file", path);
    if (const std::string why = unreadable_reason(path); !why.empty())
      raise<NotFoundError>("read_idx(\"{}\"): cannot open the file: {}", path, why);
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) raise<NotFoundError>("read_idx(\"{}\"): cannot open the file: {}", path, std::strerror(errno));
    if (std::filesystem::is_regular_file(path, ec)) size_ = std::filesystem::file_size(path, ec);
  }

  // Reads up to n bytes into dst; fewer only at the end of the data. Throws ValueError naming the
  // file when the gzip stream is corrupt or cut short.
  std::uint64_t read(void* dst, std::uint64_t n) {
    auto* to = static_cast<unsigned char*>(dst);
    std::uint64_t done = 0;
    while (done < n) {
      const auto piece = static_cast<unsigned>(std::min<std::uint64_t>(n - done, 1u << 30));
      const int got = gzread(file_.get(), to + done, piece);
      int code = Z_OK;
      const char* message = gzerror(file_.get(), &code);
      if (got < 0 || code != Z_OK) raise<ValueError>("read_idx(\"{}\"): the file is corrupt ({})", path_, message);
      if (got == 0) break;
      done += static_cast<std::uint64_t>(got);
    }
    return done;
  }

  bool compressed() { return gzdirect(file_.get()) == 0; }
  std::optional<std::uint64_t> size() const { return size_; }  // on disk; nullopt for a pipe or a device

 private:
  struct Close {
    void operator()(gzFile f) const { gzclose(f); }
  };
  std::string path_;
  std::unique_ptr<gzFile_s, Close> file_;
  std::optional<std::uint64_t> size_;
};

std::uint32_t big_endian(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// IDX's element type codes (the magic number's third byte).
const char* type_name(unsigned char code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0b: return "int16";
    case 0x0c: return "int32";
    case 0x0d: return "float32";
    case 0x0e: return "float64";
    default: return "not an IDX type";
  }
}

std::string existing(const std::string& dir, const std::string& name) {
  for (const auto& candidate : {name, name + ".gz"})
    if (std::filesystem::exists(std::filesystem::path(dir) / candidate)) return (std::filesystem::path(dir) / candidate).string();
  raise<NotFoundError>("read_idx_split: neither {0} nor {0}.gz is in \"{1}\"", name, dir);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  // The header first, then exactly the data it announces, then one byte more to detect trailing data:
  // a file is never read (or inflated) further than its header says.
  IdxFile file(path);
  unsigned char magic[4];
  const std::uint64_t got = file.read(magic, 4);
  if (got == 0) raise<ValueError>("read_idx(\"{}\"): the file is empty", path);
  if (got < 4 || magic[0] != 0 || magic[1] != 0)
    raise<ValueError>("read_idx(\"{}\"): not an IDX file (bad magic number)", path);
  if (magic[2] != 0x08)
    raise<ValueError>("read_idx(\"{}\"): element type 0x{:02x} ({}) is not supported (only unsigned bytes, 0x08, as in "
                      "MNIST, Fashion-MNIST, KMNIST and EMNIST); convert the file to ubyte", path, magic[2],
                      type_name(magic[2]));
  const int rank = magic[3];
  if (rank < 1 || rank > 4) raise<ValueError>("read_idx(\"{}\"): {} dimensions is not a valid IDX rank", path, rank);
  unsigned char sizes[16];
  const std::uint64_t header = 4 + 4 * static_cast<std::uint64_t>(rank);
  if (file.read(sizes, header - 4) < header - 4) raise<ValueError>("read_idx(\"{}\"): truncated header", path);
  std::vector<std::int64_t> dims;
  std::uint64_t count = 1;
  bool overflow = false;  // 2^31 * 2^31 * 4 wraps to 0 and would pass the size checks below
  for (int i = 0; i < rank; ++i) {
    dims.push_back(big_endian(&sizes[4 * i]));
    overflow |= __builtin_mul_overflow(count, static_cast<std::uint64_t>(dims.back()), &count);
  }
  const std::string shape = Shape(dims).to_string();
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<std::size_t>(i)] == 0)
      raise<ValueError>("read_idx(\"{}\"): dimension {} of {} is 0; the file holds no data", path, i, shape);
  if (overflow)
    raise<ValueError>("read_idx(\"{}\"): the header announces dimensions {} (more data than any file holds); the "
                      "file is corrupt", path, shape);
  if (count > kMaxIdxBytes)
    raise<ValueError>("read_idx(\"{}\"): the header announces dimensions {}, {} of data, more than read_idx reads from "
                      "one file ({}); the file is damaged or not an MNIST-style data set", path, shape,
                      format_bytes(count), format_bytes(kMaxIdxBytes));
  // Before anything is allocated: a plain file's size says it all; a gzip file's bounds what it can hold.
  const auto size = file.size();
  if (size && !file.compressed() && *size - header != count)
    raise<ValueError>("read_idx(\"{}\"): the header announces {} bytes of data but the file holds {} ({}); the file is "
                      "damaged or not what its header says", path, count, *size - header,
                      *size - header < count ? "it is truncated" : "trailing bytes after the data");
  if (size && file.compressed() && count / kMaxDeflateRatio > *size)
    raise<ValueError>("read_idx(\"{}\"): the header announces {} bytes of data, more than a gzip file of {} bytes can "
                      "hold (deflate inflates at most {} times); the file is damaged or not what its header says",
                      path, count, *size, kMaxDeflateRatio);

  auto out_of_memory = [&] {  // the allocator's advice (a smaller batch) does not apply here
    raise<OutOfMemoryError>("read_idx(\"{}\"): not enough memory for the {} of data its header announces ({}); free "
                            "some memory, or check that the file is what it claims to be", path, format_bytes(count),
                            shape);
  };
  Tensor out;
  try {
    out = Tensor(Shape(dims), DType::uint8);
  } catch (const OutOfMemoryError&) {
    out_of_memory();
  } catch (const std::bad_alloc&) {
    out_of_memory();
  }
  const std::uint64_t data = file.read(out.raw_data(), count);
  if (data < count)
    raise<ValueError>("read_idx(\"{}\"): the header announces {} bytes of data but the file holds {} (it is truncated); "
                      "the file is damaged or not what its header says", path, count, data);
  unsigned char extra;
  if (file.read(&extra, 1) != 0)
    raise<ValueError>("read_idx(\"{}\"): the header announces {} bytes of data but the file holds more (trailing bytes "
                      "after the data); the file is damaged or not what its header says", path, count);
  return out;
}
IdxSplit read_idx_split(const std::string& dir, const std::string& prefix) {
  IdxSplit split;
  split.images_path = existing(dir, prefix + "-images-idx3-ubyte");
  split.labels_path = existing(dir, prefix + "-labels-idx1-ubyte");
  split.images = read_idx(split.images_path);
  split.labels = read_idx(split.labels_path);
  if (split.images.shape().rank() != 3 || split.labels.shape().rank() != 1)
    raise<ValueError>("read_idx_split(\"{}\", \"{}\"): expected images (n, rows, cols) and labels (n,), got {} and {} "
                      "(magic numbers 0x{:08x} and 0x{:08x}; images have 0x00000803, labels 0x00000801)", dir, prefix,
                      split.images.shape().to_string(), split.labels.shape().to_string(),
                      0x800 + split.images.shape().rank(), 0x800 + split.labels.shape().rank());
  if (split.images.shape()[0] != split.labels.shape()[0])
    raise<ValueError>("read_idx_split(\"{}\", \"{}\"): {} images but {} labels", dir, prefix, split.images.shape()[0],
                      split.labels.shape()[0]);
  return split;
}

}  // namespace tower::io
