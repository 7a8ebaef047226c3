// IDX reader: header checks, gzip through zlib.
#include "tower/io/idx.h"

#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "tower/core/error.h"

namespace tower::io {

namespace {

// The whole file, decompressed when it is gzip (zlib's gzread passes plain files through).
std::vector<unsigned char> read_all(const std::string& path) {
  std::error_code ec;  // gzopen opens a directory, and reading it fails with a misleading message
  if (std::filesystem::is_directory(path, ec))
    raise<ValueError>("read_idx(\"{}\"): this is a directory; give the path of an IDX file", path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) raise<NotFoundError>("read_idx(\"{}\"): cannot open the file", path);
  std::vector<unsigned char> bytes;
  unsigned char buffer[1 << 16];
  int got;
  while ((got = gzread(file, buffer, sizeof buffer)) > 0) bytes.insert(bytes.end(), buffer, buffer + got);
  int code = 0;
  const char* message = gzerror(file, &code);
  std::string error = got < 0 ? std::string(message) : "";
  gzclose(file);
  if (got < 0) raise<ValueError>("read_idx(\"{}\"): the file is corrupt ({})", path, error);
  return bytes;
}

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
  auto bytes = read_all(path);
  if (bytes.empty()) raise<ValueError>("read_idx(\"{}\"): the file is empty", path);
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    raise<ValueError>("read_idx(\"{}\"): not an IDX file (bad magic number)", path);
  if (bytes[2] != 0x08)
    raise<ValueError>("read_idx(\"{}\"): element type 0x{:02x} ({}) is not supported (only unsigned bytes, 0x08, as in "
                      "MNIST, Fashion-MNIST, KMNIST and EMNIST); convert the file to ubyte", path, bytes[2],
                      type_name(bytes[2]));
  const int rank = bytes[3];
  if (rank < 1 || rank > 4) raise<ValueError>("read_idx(\"{}\"): {} dimensions is not a valid IDX rank", path, rank);
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  if (bytes.size() < header) raise<ValueError>("read_idx(\"{}\"): truncated header", path);
  std::vector<std::int64_t> dims;
  std::size_t count = 1;
  bool overflow = false;  // 2^31 * 2^31 * 4 wraps to 0 and would pass the size check below
  for (int i = 0; i < rank; ++i) {
    dims.push_back(big_endian(&bytes[4 + 4 * static_cast<std::size_t>(i)]));
    overflow |= __builtin_mul_overflow(count, static_cast<std::size_t>(dims.back()), &count);
  }
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<std::size_t>(i)] == 0)
      raise<ValueError>("read_idx(\"{}\"): dimension {} of {} is 0; the file holds no data", path, i,
                        Shape(dims).to_string());
  if (overflow)
    raise<ValueError>("read_idx(\"{}\"): the header announces dimensions {} (more data than any file holds); the "
                      "file is corrupt", path, Shape(dims).to_string());
  if (bytes.size() - header != count)
    raise<ValueError>("read_idx(\"{}\"): the header announces {} bytes of data but the file holds {} ({}); the file is "
                      "damaged or not what its header says", path, count, bytes.size() - header,
                      bytes.size() - header < count ? "it is truncated" : "trailing bytes after the data");
  Tensor out = Tensor::zeros(Shape(dims), DType::uint8);
  std::memcpy(out.raw_data(), bytes.data() + header, count);
  return out;
}

IdxSplit read_idx_split(const std::string& dir, const std::string& prefix) {
  IdxSplit split;
  split.images = read_idx(existing(dir, prefix + "-images-idx3-ubyte"));
  split.labels = read_idx(existing(dir, prefix + "-labels-idx1-ubyte"));
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
